/* check_master_supervise.c - the master's supervision without forking the
 * daemon.  Its decisions (server/master/master_policy.h): the restart
 * backoff's sequence and reset, what a child's exit leads to while running
 * or stopping, which roles each stop phase signals, when a child stalls the
 * watchdog.  And the fan-outs themselves (master_reload.c, master_stats.c)
 * run on a master built here whose children are the far ends of bufferevent
 * pairs: a new config generation (SIGHUP from a file, CONFIG SET) reaches
 * every child with a control channel and no other, a refused one reaches
 * none; CONFIG RESETSTAT tells the owners, then the edges, then answers the
 * asker, without waiting for a child that died or did not confirm;
 * FLUSHALL's cache forget raises the flushed owners' floors in every colo
 * segment before it answers. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "config/cfg.h"
#include "proto/stamp.h"
#include "server/colo/cache.h"
#include "server/core/router.h"
#include "server/core/board.h"
#include "server/core/clock.h"
#include "server/core/ctl.h"
#include "server/master/master_int.h"
#include "server/master/master_policy.h"
#include "tests/harness.h"

/* ---- the decisions ------------------------------------------------------- */

START_TEST(the_backoff_doubles_from_100_ms_up_to_5_s)
{
    int64_t b = MASTER_BACKOFF_MIN_MS;
    const int64_t want[] = {100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        ck_assert_int_eq(master_restart_delay(&b, 50), want[i]);
    ck_assert_int_eq(b, MASTER_BACKOFF_MAX_MS);
}
END_TEST

START_TEST(a_process_that_stayed_up_10_s_starts_the_backoff_over)
{
    int64_t b = MASTER_BACKOFF_MIN_MS;
    for (int i = 0; i < 5; i++)
        master_restart_delay(&b, 10);
    ck_assert_int_eq(b, 3200);
    ck_assert_int_eq(master_restart_delay(&b, MASTER_STABLE_MS - 1), 3200); /* not quite */
    ck_assert_int_eq(master_restart_delay(&b, MASTER_STABLE_MS), 100);     /* stable */
    ck_assert_int_eq(master_restart_delay(&b, 0), 200);                   /* and on again */
    ck_assert_int_eq(master_restart_delay(&b, 60000), 100);
}
END_TEST

START_TEST(a_running_master_restarts_whatever_is_left)
{
    ck_assert_int_eq(master_after_exit(0, 0, 0), MASTER_RESTART);
    ck_assert_int_eq(master_after_exit(0, 3, 5), MASTER_RESTART);
}
END_TEST

START_TEST(stopping_goes_edges_then_owners_then_stopped)
{
    /* phase 1: edges stopping */
    ck_assert_int_eq(master_after_exit(1, 2, 5), MASTER_WAIT);
    ck_assert_int_eq(master_after_exit(1, 0, 3), MASTER_STOP_OWNERS); /* the last edge */
    /* phase 2: owners and the agent */
    ck_assert_int_eq(master_after_exit(2, 0, 2), MASTER_WAIT);
    ck_assert_int_eq(master_after_exit(2, 0, 0), MASTER_STOPPED);
    /* a stopping master never restarts */
    for (int s = 1; s <= 2; s++)
        for (int n = 0; n < 3; n++)
            ck_assert_int_ne(master_after_exit(s, n, n), MASTER_RESTART);
}
END_TEST

START_TEST(each_stop_phase_signals_its_roles)
{
    ck_assert(master_stop_signals(1, BOARD_EDGE));
    ck_assert(!master_stop_signals(1, BOARD_OWNER));
    ck_assert(!master_stop_signals(1, BOARD_AGENT));
    ck_assert(!master_stop_signals(2, BOARD_EDGE));
    ck_assert(master_stop_signals(2, BOARD_OWNER));
    ck_assert(master_stop_signals(2, BOARD_AGENT)); /* the agent stops with the owners */
    ck_assert(!master_stop_signals(0, BOARD_EDGE));
    ck_assert(!master_stop_signals(0, BOARD_OWNER));
}
END_TEST

START_TEST(only_a_ready_child_with_an_old_heartbeat_stalls_the_watchdog)
{
    ck_assert(master_child_stuck(1, 1, 1000, 5001, 4000));
    ck_assert(!master_child_stuck(1, 1, 1000, 5000, 4000)); /* at the limit: not yet */
    ck_assert(!master_child_stuck(1, 0, 1000, 9000, 4000)); /* starting up */
    ck_assert(!master_child_stuck(0, 1, 1000, 9000, 4000)); /* restarting */
}
END_TEST

START_TEST(a_reload_goes_to_every_child_with_a_channel)
{
    ck_assert(master_reload_sends(1));
    ck_assert(!master_reload_sends(0));
}
END_TEST

/* ---- a master in-process -------------------------------------------------- */

#define NKIDS 5 /* owners 0 and 1, edges 2 and 3 running; edge 4 not running */

static struct {
    char dir[256], conf[320];
    struct master m;
    struct master_opts o;
    struct child kids[NKIDS];
    struct bufferevent *far[NKIDS];
    struct cache *caches[2];
    struct rl *limiters[2];
} T;

static void write_conf(const char *extra)
{
    FILE *f = fopen(T.conf, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "dir %s\nloglevel warning\n%s", T.dir, extra);
    ck_assert_int_eq(fclose(f), 0);
}

static void setup(void)
{
    memset(&T, 0, sizeof(T));
    h_tmpdir(T.dir, sizeof(T.dir));
    snprintf(T.conf, sizeof(T.conf), "%s/hotkvd.conf", T.dir);
    write_conf("maxclients 500\n");
    T.o.config_path = T.conf;
    struct cfg_error err;
    struct master *m = &T.m;
    m->opts = &T.o;
    m->cfg = master_load_config(&T.o, &err);
    ck_assert_msg(m->cfg != NULL, "%s", err.msg);
    m->cfg->colos = 1;
    m->ncolos = m->cfg->colos; /* as master_boot sets it */
    m->generation = 1;
    m->base = event_base_new();
    ck_assert_ptr_nonnull(m->base);
    m->board = board_create(NKIDS);
    ck_assert_ptr_nonnull(m->board);
    m->caches = T.caches;
    m->limiters = T.limiters;
    m->rs_timer = evtimer_new(m->base, master_resetstat_timeout, m);
    ck_assert_ptr_nonnull(m->rs_timer);
    m->children = T.kids;
    m->nchildren = NKIDS;
    for (int i = 0; i < NKIDS; i++) {
        struct child *c = &T.kids[i];
        c->m = m;
        c->role = i < 2 ? BOARD_OWNER : BOARD_EDGE;
        c->pool = i == 0 ? CFG_POOL_HOT : CFG_POOL_COLD;
        c->index = i < 2 ? 0 : i - 2;
        c->slot = i;
        c->link_fd = c->tcp_fd = -1;
        c->backoff_ms = MASTER_BACKOFF_MIN_MS;
        if (i == 4)
            continue; /* not running: no process, no channel */
        struct bufferevent *pair[2];
        ck_assert_int_eq(bufferevent_pair_new(m->base, 0, pair), 0);
        c->ctl = pair[0];
        T.far[i] = pair[1];
        bufferevent_enable(c->ctl, EV_READ | EV_WRITE);
        bufferevent_enable(T.far[i], EV_READ | EV_WRITE);
        c->pid = 100000 + i; /* never signalled by the paths tested here */
        c->ready = 1;
    }
}

static void teardown(void)
{
    struct master *m = &T.m;
    for (int i = 0; i < NKIDS; i++) {
        if (T.kids[i].ctl != NULL)
            bufferevent_free(T.kids[i].ctl);
        if (T.far[i] != NULL)
            bufferevent_free(T.far[i]);
    }
    event_free(m->rs_timer);
    board_destroy(&m->board);
    event_base_free(m->base);
    cfg_destroy(&m->cfg);
    h_rmtree(T.dir);
}

/* The next message child i received: 1 with its type (and payload, freed
 * by the caller, if p is not NULL), 0 if none. */
static int got(int i, uint8_t *type, char **p, size_t *len)
{
    event_base_loop(T.m.base, EVLOOP_NONBLOCK);
    char *payload = NULL;
    size_t n = 0;
    if (ctl_take(bufferevent_get_input(T.far[i]), type, &payload, &n) != HKV_OK)
        return 0;
    if (p != NULL) {
        *p = payload;
        *len = n;
    } else {
        free(payload);
    }
    return 1;
}

static int nothing_for(int i)
{
    uint8_t t;
    return !got(i, &t, NULL, NULL);
}

/* Child i's next message is a CTL_CONFIG of generation gen; the directive
 * name's value in it is put in val. */
static void config_for(int i, uint64_t gen, const char *name, char *val, size_t vlen)
{
    uint8_t t = 0;
    char *p = NULL;
    size_t n = 0;
    ck_assert_msg(got(i, &t, &p, &n), "child %d got no config", i);
    ck_assert_int_eq(t, CTL_CONFIG);
    ck_assert_uint_ge(n, 8);
    ck_assert_uint_eq(ctl_get_u64((const unsigned char *)p), gen);
    struct cfg *c = cfg_create();
    struct cfg_error err;
    ck_assert_msg(cfg_load_text(c, p + 8, n - 8, "master", &err) == HKV_OK, "%s", err.msg);
    ck_assert_int_eq(cfg_get(c, name, val, vlen), HKV_OK);
    cfg_destroy(&c);
    free(p);
}

static uint64_t board_generation(void)
{
    return atomic_load(&T.m.board->config_generation);
}

static uint64_t reload_failures(void)
{
    return atomic_load(&T.m.board->config_reload_failures);
}

START_TEST(config_set_reaches_every_running_child_with_the_next_generation)
{
    const char req[] = "maxclients\0" "777\0";
    master_config_set(&T.m, req, sizeof(req) - 1);
    ck_assert_uint_eq(T.m.generation, 2);
    ck_assert_uint_eq(board_generation(), 2);
    char v[64];
    for (int i = 0; i < 4; i++) {
        config_for(i, 2, "maxclients", v, sizeof(v));
        ck_assert_str_eq(v, "777");
        ck_assert(nothing_for(i)); /* one message each */
    }
    ck_assert_ptr_null(T.kids[4].ctl); /* it gets the live config when forked */
    ck_assert_int_eq(T.m.cfg->maxclients, 777);
}
END_TEST

START_TEST(config_set_of_two_directives_is_one_generation)
{
    const char req[] = "maxclients\0" "321\0" "timeout\0" "7s\0";
    master_config_set(&T.m, req, sizeof(req) - 1);
    ck_assert_uint_eq(T.m.generation, 2);
    char v[64];
    config_for(2, 2, "timeout", v, sizeof(v));
    ck_assert_int_eq(T.m.cfg->maxclients, 321);
    ck_assert_int_eq(T.m.cfg->timeout_ms, 7000);
    ck_assert(nothing_for(2));
}
END_TEST

START_TEST(a_refused_config_set_sends_nothing_and_keeps_the_generation)
{
    const char bad[] = "maxclients\0" "many\0";
    master_config_set(&T.m, bad, sizeof(bad) - 1);
    const char restart_only[] = "port\0" "7000\0";
    master_config_set(&T.m, restart_only, sizeof(restart_only) - 1);
    const char malformed[] = "maxclients"; /* no value */
    master_config_set(&T.m, malformed, sizeof(malformed) - 1);
    ck_assert_uint_eq(T.m.generation, 1);
    for (int i = 0; i < 4; i++)
        ck_assert(nothing_for(i));
    ck_assert_int_eq(T.m.cfg->maxclients, 500);
    /* CONFIG SET is not a reload from the file: not counted as one */
    ck_assert_uint_eq(reload_failures(), 0);
}
END_TEST

START_TEST(a_reload_from_the_file_reaches_every_running_child)
{
    write_conf("maxclients 900\n");
    master_reload(&T.m);
    ck_assert_uint_eq(T.m.generation, 2);
    ck_assert_uint_eq(board_generation(), 2);
    char v[64];
    for (int i = 0; i < 4; i++) {
        config_for(i, 2, "maxclients", v, sizeof(v));
        ck_assert_str_eq(v, "900");
    }
    ck_assert_uint_eq(reload_failures(), 0);
    /* the next one numbers on */
    write_conf("maxclients 901\n");
    master_reload(&T.m);
    config_for(3, 3, "maxclients", v, sizeof(v));
    ck_assert_str_eq(v, "901");
}
END_TEST

START_TEST(a_bad_file_changes_nothing_and_is_counted)
{
    write_conf("maxclients lots\n");
    master_reload(&T.m);
    ck_assert_uint_eq(T.m.generation, 1);
    ck_assert_uint_eq(reload_failures(), 1);
    for (int i = 0; i < 4; i++)
        ck_assert(nothing_for(i));
    ck_assert_int_eq(T.m.cfg->maxclients, 500);
}
END_TEST

START_TEST(a_reload_keeps_restart_only_directives)
{
    int port = T.m.cfg->port;
    char line[64];
    snprintf(line, sizeof(line), "maxclients 600\nport %d\n", port + 1);
    write_conf(line);
    master_reload(&T.m);
    ck_assert_uint_eq(T.m.generation, 2);
    char v[64];
    config_for(0, 2, "port", v, sizeof(v));
    ck_assert_int_eq(atoi(v), port); /* the running value */
    ck_assert_int_eq(T.m.cfg->maxclients, 600);
}
END_TEST

/* RESETSTAT: expect message type t at child i (or nothing: t 0). */
static void expect(int i, uint8_t t)
{
    uint8_t got_t = 0;
    if (t == 0) {
        ck_assert_msg(nothing_for(i), "child %d got a message", i);
        return;
    }
    ck_assert_msg(got(i, &got_t, NULL, NULL), "child %d got nothing, wanted %d", i, t);
    ck_assert_int_eq(got_t, t);
}

START_TEST(resetstat_tells_owners_then_edges_then_answers_the_asker)
{
    atomic_store(&T.m.board->slots[4].total_commands_processed, 7); /* not running */
    atomic_store(&T.m.board->slots[2].total_commands_processed, 9); /* running: its own */
    master_resetstat_asked(&T.kids[2]);
    expect(0, CTL_RESETSTAT);
    expect(1, CTL_RESETSTAT);
    expect(2, 0);
    expect(3, 0);
    ck_assert_int_eq(T.m.rs_phase, 1);
    master_resetstat_confirmed(&T.kids[0]);
    expect(2, 0); /* one owner still to confirm */
    master_resetstat_confirmed(&T.kids[1]);
    ck_assert_int_eq(T.m.rs_phase, 2);
    expect(2, CTL_RESETSTAT);
    expect(3, CTL_RESETSTAT);
    expect(0, 0);
    /* the edge not running has its slot zeroed by the master */
    ck_assert_uint_eq(atomic_load(&T.m.board->slots[4].total_commands_processed), 0);
    ck_assert_uint_eq(atomic_load(&T.m.board->slots[2].total_commands_processed), 9);
    master_resetstat_confirmed(&T.kids[3]);
    expect(2, 0);
    master_resetstat_confirmed(&T.kids[2]);
    expect(2, CTL_RESETSTAT_DONE); /* only the asker is answered */
    expect(3, 0);
    expect(0, 0);
    ck_assert_int_eq(T.m.rs_phase, 0);
}
END_TEST

static void confirm_all(int from, int to)
{
    for (int i = from; i <= to; i++) {
        expect(i, CTL_RESETSTAT);
        master_resetstat_confirmed(&T.kids[i]);
    }
}

START_TEST(a_request_during_a_round_is_served_by_the_next)
{
    master_resetstat_asked(&T.kids[2]);
    master_resetstat_asked(&T.kids[3]); /* in phase 1 of the first round */
    confirm_all(0, 1);
    confirm_all(2, 3);
    expect(2, CTL_RESETSTAT_DONE);
    expect(3, 0);
    ck_assert_int_eq(T.m.rs_phase, 1); /* the second round began */
    confirm_all(0, 1);
    confirm_all(2, 3);
    expect(3, CTL_RESETSTAT_DONE);
    expect(2, 0);
    ck_assert_int_eq(T.m.rs_phase, 0);
}
END_TEST

START_TEST(two_requests_from_one_edge_get_two_answers)
{
    master_resetstat_asked(&T.kids[2]);
    master_resetstat_asked(&T.kids[2]);
    confirm_all(0, 1);
    confirm_all(2, 3);
    expect(2, CTL_RESETSTAT_DONE);
    confirm_all(0, 1);
    confirm_all(2, 3);
    expect(2, CTL_RESETSTAT_DONE);
    expect(2, 0);
}
END_TEST

START_TEST(a_child_that_dies_is_not_waited_for)
{
    master_resetstat_asked(&T.kids[3]);
    expect(0, CTL_RESETSTAT);
    expect(1, CTL_RESETSTAT);
    master_resetstat_confirmed(&T.kids[0]);
    master_resetstat_gone(&T.kids[1]); /* owner 1 died mid-phase */
    ck_assert_int_eq(T.m.rs_phase, 2);
    confirm_all(2, 3);
    expect(3, CTL_RESETSTAT_DONE);
}
END_TEST

START_TEST(an_asker_that_dies_is_owed_nothing)
{
    master_resetstat_asked(&T.kids[2]);
    confirm_all(0, 1);
    expect(2, CTL_RESETSTAT);
    expect(3, CTL_RESETSTAT);
    master_resetstat_gone(&T.kids[2]);
    master_resetstat_confirmed(&T.kids[3]);
    ck_assert_int_eq(T.m.rs_phase, 0);
    expect(2, 0);
    expect(3, 0);
}
END_TEST

START_TEST(a_child_that_does_not_confirm_is_passed_over_at_the_timeout)
{
    master_resetstat_asked(&T.kids[2]);
    expect(0, CTL_RESETSTAT);
    expect(1, CTL_RESETSTAT);
    master_resetstat_confirmed(&T.kids[1]);
    master_resetstat_timeout(-1, 0, &T.m); /* owner 0 is wedged */
    ck_assert_int_eq(T.m.rs_phase, 2);
    master_resetstat_confirmed(&T.kids[0]); /* late: ignored */
    confirm_all(2, 3);
    expect(2, CTL_RESETSTAT_DONE);
    ck_assert_int_eq(T.m.rs_phase, 0);
}
END_TEST

/* ---- FLUSHALL's cache forget ---------------------------------------------- */

static void setup_colos(void)
{
    setup();
    T.m.cfg->colos = 2;
    T.m.ncolos = T.m.cfg->colos; /* as master_boot sets it */
    struct cache_opts co = {.bytes = 1 << 20, .max_value = 1024, .hot_sample = 1};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(cache_create(&co, &T.caches[k]), HKV_OK);
        ck_assert_int_eq(cache_attach(T.caches[k]), HKV_OK);
    }
}

static void teardown_colos(void)
{
    for (int k = 0; k < 2; k++)
        cache_destroy(&T.caches[k]);
    teardown();
}

static int put_at(int colo, const char *key, hkv_stamp st)
{
    int64_t now = clock_mono_ms();
    return cache_put(T.caches[colo],
                     &(struct cache_entry){.key = key, .klen = strlen(key),
                                           .khash = router_hash(key, strlen(key)), .val = "v",
                                           .vlen = 1, .stamp = st, .fresh_until = now + 60000,
                                           .keep_until = now + 60000},
                     now);
}

static int cached(int colo, const char *key)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct cache_hit hit;
    int rc = cache_get(T.caches[colo], key, strlen(key), router_hash(key, strlen(key)),
                       clock_mono_ms(), &b, &hit);
    buf_deinit(&b);
    return rc == HKV_OK;
}

START_TEST(forget_raises_the_flushed_owners_floor_in_every_colo)
{
    hkv_stamp by3 = stamp_make(1000, 1, 3), by4 = stamp_make(1000, 1, 4);
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(put_at(k, "a", by3), HKV_OK);
        ck_assert_int_eq(put_at(k, "b", by4), HKV_OK);
    }
    unsigned char msg[8];
    ctl_put_u64(msg, stamp_make(2000, 0, 3)); /* owner writer 3 flushed at 2000 */
    master_cache_forget(&T.kids[2], (const char *)msg, sizeof(msg));
    expect(2, CTL_CACHE_FORGOTTEN); /* the asker, at once */
    expect(3, 0);
    for (int k = 0; k < 2; k++) {
        ck_assert(!cached(k, "a")); /* writer 3's older versions: gone, in both colos */
        ck_assert(cached(k, "b"));  /* another owner's stay */
        /* and a late fill of one of them is refused */
        ck_assert_int_eq(put_at(k, "a", stamp_make(1500, 0, 3)), HKV_ESTALE);
        ck_assert_int_eq(put_at(k, "a", stamp_make(2500, 0, 3)), HKV_OK); /* newer: stored */
    }
}
END_TEST

START_TEST(forget_of_several_owners_and_a_ragged_payload)
{
    hkv_stamp by3 = stamp_make(1000, 1, 3), by4 = stamp_make(1000, 1, 4);
    ck_assert_int_eq(put_at(0, "a", by3), HKV_OK);
    ck_assert_int_eq(put_at(1, "b", by4), HKV_OK);
    unsigned char msg[20] = {0}; /* two versions and 4 stray bytes */
    ctl_put_u64(msg, stamp_make(2000, 0, 3));
    ctl_put_u64(msg + 8, stamp_make(2000, 0, 4));
    master_cache_forget(&T.kids[3], (const char *)msg, sizeof(msg));
    expect(3, CTL_CACHE_FORGOTTEN); /* answered all the same, once */
    expect(3, 0);
    ck_assert(!cached(0, "a"));
    ck_assert(!cached(1, "b"));
}
END_TEST

Suite *master_supervise_suite(void)
{
    Suite *s = suite_create("master_supervise");
    TCase *tc = tcase_create("decisions");
    tcase_add_test(tc, the_backoff_doubles_from_100_ms_up_to_5_s);
    tcase_add_test(tc, a_process_that_stayed_up_10_s_starts_the_backoff_over);
    tcase_add_test(tc, a_running_master_restarts_whatever_is_left);
    tcase_add_test(tc, stopping_goes_edges_then_owners_then_stopped);
    tcase_add_test(tc, each_stop_phase_signals_its_roles);
    tcase_add_test(tc, only_a_ready_child_with_an_old_heartbeat_stalls_the_watchdog);
    tcase_add_test(tc, a_reload_goes_to_every_child_with_a_channel);
    suite_add_tcase(s, tc);
    tc = tcase_create("reload fan-out");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, config_set_reaches_every_running_child_with_the_next_generation);
    tcase_add_test(tc, config_set_of_two_directives_is_one_generation);
    tcase_add_test(tc, a_refused_config_set_sends_nothing_and_keeps_the_generation);
    tcase_add_test(tc, a_reload_from_the_file_reaches_every_running_child);
    tcase_add_test(tc, a_bad_file_changes_nothing_and_is_counted);
    tcase_add_test(tc, a_reload_keeps_restart_only_directives);
    suite_add_tcase(s, tc);
    tc = tcase_create("resetstat fan-out");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, resetstat_tells_owners_then_edges_then_answers_the_asker);
    tcase_add_test(tc, a_request_during_a_round_is_served_by_the_next);
    tcase_add_test(tc, two_requests_from_one_edge_get_two_answers);
    tcase_add_test(tc, a_child_that_dies_is_not_waited_for);
    tcase_add_test(tc, an_asker_that_dies_is_owed_nothing);
    tcase_add_test(tc, a_child_that_does_not_confirm_is_passed_over_at_the_timeout);
    suite_add_tcase(s, tc);
    tc = tcase_create("cache forget");
    tcase_add_checked_fixture(tc, setup_colos, teardown_colos);
    tcase_add_test(tc, forget_raises_the_flushed_owners_floor_in_every_colo);
    tcase_add_test(tc, forget_of_several_owners_and_a_ragged_payload);
    suite_add_tcase(s, tc);
    return s;
}
