/* check_flight.c - single-flight fetches (server/edge/edge_flight.h) without
 * a daemon: plain waiters, a recording answer callback, a real owner link to
 * a scripted owner (fake_owner.h), and a real colo cache segment.  One fetch
 * serves every waiter, in arrival order; a waiter that leaves is not
 * answered; miss-wait gives the stale entry or the class's timeout answer
 * while the fetch goes on; another edge's refresh lock makes waiters poll
 * the segment instead of fetching. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/colo/cache.h"
#include "server/core/board.h"
#include "server/core/clock.h"
#include "server/core/topo.h"
#include "server/colo/cache_health.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_flight.h"
#include "server/edge/edge_health.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_owners.h"
#include "tests/harness.h"
#include "tests/unit/fake_owner.h"

enum mode { ANSWER, HOLD, FAIL };

struct rec {
    struct flight_waiter *w;
    struct flight_answer a;
    char v[64];
    char err[160];
};

static struct {
    char dir[256];
    struct event_base *base;
    struct board *board;
    struct worker_ctx ctx;
    struct edge_ctx ectx;
    struct edge e;
    struct cache *cache;
    struct fake_owner fo;
    enum mode mode;
    struct rec recs[16];
    int nrecs;
} T;

static void t_answer(struct flight_waiter *w, const struct flight_answer *a)
{
    ck_assert_ptr_null(w->f); /* no longer waiting when answered */
    ck_assert_int_lt(T.nrecs, 16);
    struct rec *r = &T.recs[T.nrecs++];
    r->w = w;
    r->a = *a;
    if (a->v != NULL)
        snprintf(r->v, sizeof(r->v), "%.*s", (int)a->n, a->v);
    if (a->err != NULL)
        snprintf(r->err, sizeof(r->err), "%.*s", (int)a->errlen, a->err);
    r->a.v = NULL;
    r->a.err = NULL;
}

static void answer_get(struct fo_conn *fc, uint64_t id, const char *key)
{
    struct hkv_buf b = HKV_BUF_INIT;
    char v[80];
    int n = snprintf(v, sizeof(v), "%s@%d", key, fc->fo->index);
    wire_put_value(&b, id, wire_slice(v, (size_t)n), 5, 0);
    fo_reply(fc, &b);
    buf_deinit(&b);
}

static void on_request(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    if (m->type == WIRE_STATS) {
        wire_put_stats_reply(&b, m->id, NULL, 0);
        fo_reply(fc, &b);
    } else if (m->type == WIRE_PING && T.mode != HOLD) {
        wire_put_pong(&b, m->id);
        fo_reply(fc, &b);
    } else if (T.mode == HOLD) {
        fo_hold(fo, fc, m);
    } else if (T.mode == FAIL) {
        wire_put_error(&b, m->id, 1, wire_cstr("ERR the owner says no"));
        fo_reply(fc, &b);
    } else {
        char key[64];
        snprintf(key, sizeof(key), "%.*s", (int)m->u.get.keys[0].len, m->u.get.keys[0].p);
        answer_get(fc, m->id, key);
    }
    buf_deinit(&b);
}

static void release_held(int i)
{
    answer_get(T.fo.held[i].fc, T.fo.held[i].id, T.fo.held[i].key);
}

static int run_until(int (*cond)(void), int ms)
{
    int64_t end = h_now_ms() + ms;
    for (int i = 0; i < 1000000 && !cond() && h_now_ms() < end; i++) {
        event_base_loop(T.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        if (!cond())
            h_sleep_ms(1);
    }
    return cond();
}

static void run_for(int ms)
{
    int64_t end = h_now_ms() + ms;
    for (int i = 0; i < 100000 && h_now_ms() < end; i++) {
        event_base_loop(T.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        h_sleep_ms(1);
    }
}

static int links_up(void) { return fo_links_up(&T.fo); }

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    memset(&T, 0, sizeof(T));
    h_tmpdir(T.dir, sizeof(T.dir));
    struct cfg *cfg = cfg_create();
    ck_assert_ptr_nonnull(cfg);
    free(cfg->dir);
    cfg->dir = strdup(T.dir);
    cfg->hot_owners = 0;
    cfg->cold_owners = 1;
    struct cfg_error err;
    ck_assert_int_eq(cfg_set(cfg, "miss-wait", "200ms", &err), HKV_OK);
    T.ctx.cfg = cfg;
    T.board = board_create(2);
    ck_assert_ptr_nonnull(T.board);
    T.ctx.board = T.board;
    snprintf(T.ectx.colo_name, sizeof(T.ectx.colo_name), "test");
    T.base = event_base_new();
    ck_assert_ptr_nonnull(T.base);
    T.e.ctx = &T.ctx;
    T.e.ectx = &T.ectx;
    T.e.base = T.base;
    T.e.stats = &T.board->slots[0];
    struct cache_opts co = {.bytes = 4 << 20, .max_value = 4096, .hot_sample = 1};
    ck_assert_int_eq(cache_create(&co, &T.cache), HKV_OK);
    ck_assert_int_eq(cache_attach(T.cache), HKV_OK);
    T.ectx.cache = T.cache;
    struct edge_cache_opts ko;
    edge_cache_opts(cfg, &ko);
    ck_assert_int_eq(edge_cache_setup(&T.e, &ko), 0);
    char path[TOPO_PATH_MAX];
    topo_owner_socket(cfg, CFG_POOL_COLD, 0, path, sizeof(path));
    fo_start(&T.fo, T.base, path, 0, on_request);
    struct owner_hooks oh = {0};
    struct owners_opts ow;
    edge_owners_opts(cfg, &ow);
    ck_assert_int_eq(owners_setup(&T.e, &oh, &ow), 0);
    struct flights_opts fo = {.miss_wait_ms = cfg->miss_wait_ms, .routed = cfg};
    ck_assert_int_eq(flights_setup(&T.e, t_answer, &fo), 0);
    ck_assert_int_eq(edge_health_setup(&T.e, cfg->owner_probe_interval_ms), 0);
    ck_assert(run_until(links_up, 3000));
}

static void teardown(void)
{
    flights_teardown(&T.e);
    owners_teardown(&T.e);
    edge_health_teardown(&T.e);
    fo_stop(&T.fo);
    edge_cache_teardown(&T.e.cache);
    cache_destroy(&T.cache);
    event_base_free(T.base);
    board_destroy(&T.board);
    cfg_destroy(&T.ctx.cfg);
    h_rmtree(T.dir);
}

/* The flight of key (started if none), as a reader that missed would. */
static struct flight *flight_of(const char *key)
{
    struct route rt;
    struct owner_ref *o = edge_owner_of(&T.e, key, strlen(key), &rt);
    ck_assert_ptr_nonnull(o);
    struct flight *f = flight_find(&T.e, rt.hash, key, strlen(key));
    if (f == NULL)
        f = flight_start(&T.e, key, strlen(key), &rt, o, 0);
    ck_assert_ptr_nonnull(f);
    return f;
}

static int in_flight(const char *key)
{
    return flight_find(&T.e, router_hash(key, strlen(key)), key, strlen(key)) != NULL;
}

static int one_held(void) { return T.fo.nheld >= 1; }
static int three_answers(void) { return T.nrecs >= 3; }
static int two_answers(void) { return T.nrecs >= 2; }
static int one_answer(void) { return T.nrecs >= 1; }

START_TEST(one_fetch_for_many_waiters_answered_in_arrival_order)
{
    T.mode = HOLD;
    struct flight_waiter w[3] = {{0}};
    for (int i = 0; i < 3; i++)
        flight_wait(flight_of("k"), &w[i]);
    ck_assert(run_until(one_held, 3000));
    run_for(50);
    ck_assert_int_eq(T.fo.requests[WIRE_GET], 1); /* one fetch for three readers */
    ck_assert_int_eq(T.nrecs, 0);
    release_held(0);
    ck_assert(run_until(three_answers, 3000));
    for (int i = 0; i < 3; i++) {
        ck_assert_ptr_eq(T.recs[i].w, &w[i]);
        ck_assert_int_eq(T.recs[i].a.kind, FLIGHT_DATA);
        ck_assert(T.recs[i].a.found && !T.recs[i].a.stale && !T.recs[i].a.degraded);
        ck_assert_str_eq(T.recs[i].v, "k@0");
        ck_assert_uint_eq(T.recs[i].a.stamp, 5);
    }
    ck_assert(!in_flight("k"));
    /* the answer filled the colo segment */
    struct cache_hit hit;
    ck_assert_int_eq(
        cache_get(T.cache, "k", 1, router_hash("k", 1), clock_mono_ms(), &T.e.cache->cval, &hit),
        HKV_OK);
    ck_assert_mem_eq(buf_head(&T.e.cache->cval), "k@0", 3);
}
END_TEST

START_TEST(a_waiter_that_leaves_is_not_answered)
{
    T.mode = HOLD;
    struct flight_waiter w[3] = {{0}};
    for (int i = 0; i < 3; i++)
        flight_wait(flight_of("k"), &w[i]);
    flight_leave(&w[1]); /* its client went away */
    ck_assert_ptr_null(w[1].f);
    flight_leave(&w[1]); /* twice is harmless */
    ck_assert(run_until(one_held, 3000));
    release_held(0);
    ck_assert(run_until(two_answers, 3000));
    run_for(30);
    ck_assert_int_eq(T.nrecs, 2);
    ck_assert_ptr_eq(T.recs[0].w, &w[0]);
    ck_assert_ptr_eq(T.recs[1].w, &w[2]);
}
END_TEST

START_TEST(past_miss_wait_the_class_answer_comes_and_the_fetch_goes_on)
{
    T.mode = HOLD;
    struct flight_waiter w1 = {0}, w2 = {0};
    int64_t t0 = h_now_ms();
    flight_wait(flight_of("k"), &w1);
    ck_assert(run_until(one_answer, 3000));
    ck_assert_int_ge(h_now_ms() - t0, 150); /* miss-wait 200 ms, a margin below */
    ck_assert_int_eq(T.recs[0].a.kind, FLIGHT_DATA);
    ck_assert(T.recs[0].a.degraded && !T.recs[0].a.found); /* the default class degrades */
    ck_assert(in_flight("k"));                               /* the fetch goes on */
    /* a class that errors on timeout answers -TRYAGAIN instead */
    T.ctx.cfg->classes[0].on_timeout = CFG_ONTO_ERROR;
    flight_wait(flight_of("k"), &w2);
    ck_assert(run_until(two_answers, 3000));
    ck_assert_int_eq(T.recs[1].a.kind, FLIGHT_ERROR);
    ck_assert_str_eq(T.recs[1].err, "TRYAGAIN owner cold/0 did not answer within miss-wait");
    ck_assert_int_eq(T.fo.requests[WIRE_GET], 1);
    /* the late answer still fills the segment */
    release_held(0);
    for (int i = 0; i < 3000 && in_flight("k"); i++)
        run_for(1);
    ck_assert(!in_flight("k"));
    struct cache_hit hit;
    ck_assert_int_eq(
        cache_get(T.cache, "k", 1, router_hash("k", 1), clock_mono_ms(), &T.e.cache->cval, &hit),
        HKV_OK);
}
END_TEST

START_TEST(past_miss_wait_a_stale_entry_is_served_flagged)
{
    T.mode = HOLD;
    int64_t now = clock_mono_ms();
    /* fresh until 10 s ago, kept for a minute more */
    ck_assert_int_eq(cache_put(T.cache,
                               &(struct cache_entry){.key = "k", .klen = 1,
                                                     .khash = router_hash("k", 1), .val = "old",
                                                     .vlen = 3, .stamp = 3,
                                                     .fresh_until = now - 10000,
                                                     .keep_until = now + 60000},
                               now),
                     HKV_OK);
    struct flight_waiter w = {0};
    flight_wait(flight_of("k"), &w);
    ck_assert(run_until(one_answer, 3000));
    ck_assert_int_eq(T.recs[0].a.kind, FLIGHT_DATA);
    ck_assert(T.recs[0].a.found && T.recs[0].a.stale && !T.recs[0].a.degraded);
    ck_assert_str_eq(T.recs[0].v, "old");
    ck_assert_uint_eq(T.recs[0].a.stamp, 3);
}
END_TEST

START_TEST(owner_error_reaches_every_waiter_verbatim)
{
    T.mode = FAIL;
    struct flight_waiter w[2] = {{0}};
    flight_wait(flight_of("k"), &w[0]);
    flight_wait(flight_of("k"), &w[1]);
    ck_assert(run_until(two_answers, 3000));
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(T.recs[i].a.kind, FLIGHT_OWNER_ERROR);
        ck_assert_str_eq(T.recs[i].err, "ERR the owner says no");
    }
    ck_assert(!in_flight("k"));
    ck_assert_int_eq(T.fo.requests[WIRE_GET], 1);
}
END_TEST

START_TEST(broken_link_answers_waiters_at_once)
{
    T.mode = HOLD;
    struct flight_waiter w = {0};
    flight_wait(flight_of("k"), &w);
    ck_assert(run_until(one_held, 3000));
    int64_t t0 = h_now_ms();
    fo_drop_links(&T.fo);
    ck_assert(run_until(one_answer, 3000));
    ck_assert_int_lt(h_now_ms() - t0, 150); /* before miss-wait: nothing left to wait for */
    ck_assert(T.recs[0].a.degraded);
    ck_assert(!in_flight("k"));
}
END_TEST

START_TEST(refresh_lock_held_by_another_edge_waiters_read_its_fill)
{
    T.mode = HOLD;
    uint64_t h = router_hash("k", 1);
    ck_assert(cache_lock(T.cache, h, 424242, clock_mono_ms(), 10000)); /* the other edge */
    struct flight_waiter w[2] = {{0}};
    flight_wait(flight_of("k"), &w[0]);
    flight_wait(flight_of("k"), &w[1]);
    run_for(40); /* well under half the miss-wait: no fetch of our own */
    ck_assert_int_eq(T.fo.requests[WIRE_GET], 0);
    ck_assert_int_eq(T.nrecs, 0);
    int64_t now = clock_mono_ms();
    ck_assert_int_eq(cache_put(T.cache,
                               &(struct cache_entry){.key = "k", .klen = 1, .khash = h,
                                                     .val = "theirs", .vlen = 6, .stamp = 9,
                                                     .fresh_until = now + 5000,
                                                     .keep_until = now + 60000},
                               now),
                     HKV_OK);
    ck_assert(run_until(two_answers, 3000));
    for (int i = 0; i < 2; i++) {
        ck_assert_ptr_eq(T.recs[i].w, &w[i]);
        ck_assert(T.recs[i].a.found && !T.recs[i].a.stale);
        ck_assert_str_eq(T.recs[i].v, "theirs");
    }
    ck_assert_int_eq(T.fo.requests[WIRE_GET], 0);
    ck_assert(!in_flight("k"));
}
END_TEST

static int two_held(void) { return T.fo.nheld >= 2; }

/* A polling flight whose waiter left sends the fetch itself once the other
 * edge's lock goes: that flight must live until the answer, which names it.
 * Freed at once (a history run found it), the struct went to the next key's
 * flight and the first key's answer reached that key's reader: GET hl:7
 * answered with hl:3's value. */
START_TEST(a_poll_that_turns_into_a_fetch_keeps_its_flight_until_the_answer)
{
    T.mode = HOLD;
    uint64_t h = router_hash("k", 1);
    ck_assert(cache_lock(T.cache, h, 424242, clock_mono_ms(), 10000)); /* the other edge */
    struct flight_waiter w[2] = {{0}};
    flight_wait(flight_of("k"), &w[0]);
    run_for(20);
    ck_assert_int_eq(T.fo.requests[WIRE_GET], 0);
    flight_leave(&w[0]);         /* its client went away */
    cache_unlock(T.cache, h, 424242);
    ck_assert(run_until(one_held, 3000)); /* the poll took the lock and fetched */
    run_for(20);
    ck_assert(in_flight("k"));  /* until its answer */
    flight_wait(flight_of("j"), &w[1]);
    ck_assert(run_until(two_held, 3000));
    ck_assert_str_eq(T.fo.held[0].key, "k");
    ck_assert_str_eq(T.fo.held[1].key, "j");
    release_held(0);
    run_for(20);
    ck_assert_int_eq(T.nrecs, 0); /* k's answer is not j's */
    ck_assert(!in_flight("k"));
    release_held(1);
    ck_assert(run_until(one_answer, 3000));
    ck_assert_ptr_eq(T.recs[0].w, &w[1]);
    ck_assert_str_eq(T.recs[0].v, "j@0");
    struct cache_hit hit;
    ck_assert_int_eq(
        cache_get(T.cache, "k", 1, h, clock_mono_ms(), &T.e.cache->cval, &hit), HKV_OK);
    ck_assert_int_eq((int)buf_unread(&T.e.cache->cval), 3); /* "k@0": its fill */
}
END_TEST

/* A fetch answered by the owner before its FLUSHALL, whose forget reached
 * the colo while the answer was on its way: a reader that came after the
 * FLUSHALL's OK may wait on it, so the flight fetches again and nobody gets
 * the flushed value. */
START_TEST(answer_older_than_a_flush_is_fetched_again)
{
    T.mode = HOLD;
    struct flight_waiter w = {0};
    flight_wait(flight_of("k"), &w);
    ck_assert(run_until(one_held, 3000));
    cache_forget_below(T.cache, stamp_make(1, 0, 5)); /* the flush of writer 5 */
    release_held(0);                                   /* "k@0", stamp 5: from before it */
    ck_assert(run_until(two_held, 3000));
    ck_assert_int_eq(T.nrecs, 0);
    struct hkv_buf b = HKV_BUF_INIT;
    wire_put_value(&b, T.fo.held[1].id, wire_cstr("after"), stamp_make(2, 0, 5), 0);
    fo_reply(T.fo.held[1].fc, &b);
    buf_deinit(&b);
    ck_assert(run_until(one_answer, 3000));
    ck_assert_int_eq(T.fo.requests[WIRE_GET], 2);
    ck_assert(T.recs[0].a.found);
    ck_assert_str_eq(T.recs[0].v, "after");
    struct cache_hit hit;
    ck_assert_int_eq(
        cache_get(T.cache, "k", 1, router_hash("k", 1), clock_mono_ms(), &T.e.cache->cval, &hit),
        HKV_OK);
    ck_assert_mem_eq(buf_head(&T.e.cache->cval), "after", 5);
}
END_TEST

static int marked(void)
{
    struct cache_health_view v;
    cache_health_get(T.cache, 0, clock_mono_ms(), &v);
    return v.marked;
}
static int not_marked(void) { return !marked(); }

/* A fetch that times out on its link before the allowance (write-timeout
 * under miss-wait, as the cluster tests run) is unanswered just as surely:
 * its owner is marked silent (so trackers are flushed: its pushes do not
 * come either), where the allowance check would never have fired. */
START_TEST(a_fetch_timed_out_by_its_link_marks_the_owner_silent)
{
    T.mode = HOLD;
    struct route rt;
    struct owner_ref *o = edge_owner_of(&T.e, "k", 1, &rt);
    ck_assert_ptr_nonnull(o);
    elink_set_timeout(edge_owner_link(o, WIRE_ROLE_READ), 60); /* miss-wait: 200 ms */
    struct flight_waiter w = {0};
    flight_wait(flight_of("k"), &w);
    ck_assert(run_until(one_answer, 3000));
    /* at the link's timeout, not at miss-wait: the flight is over (past
     * miss-wait alone its fetch would go on) */
    ck_assert(T.recs[0].a.degraded);
    ck_assert(!in_flight("k"));
    ck_assert(marked());
    ck_assert(edge_owner_silent(&T.e, o, clock_mono_ms()));
}
END_TEST

/* A refresh nobody waits for, unanswered for the allowance (miss-wait),
 * marks its owner silent in the colo, and the reader of another key the
 * colo holds, waiting since after that refresh went out, gets the stale
 * value then, not at its own miss-wait; the edge probes; the owner's
 * answer clears the mark. */
START_TEST(unanswered_refresh_marks_the_owner_silent_and_an_answer_clears_it)
{
    T.mode = HOLD;
    int64_t now = clock_mono_ms();
    ck_assert_int_eq(cache_put(T.cache,
                               &(struct cache_entry){.key = "j", .klen = 1,
                                                     .khash = router_hash("j", 1), .val = "old",
                                                     .vlen = 3, .stamp = 3,
                                                     .fresh_until = now - 10000,
                                                     .keep_until = now + 60000},
                               now),
                     HKV_OK);
    struct route rt;
    struct owner_ref *o = edge_owner_of(&T.e, "k", 1, &rt);
    ck_assert_ptr_nonnull(flight_start(&T.e, "k", 1, &rt, o, 1)); /* a background refresh */
    run_for(100);
    ck_assert(!marked());
    struct flight_waiter w = {0};
    int64_t t = h_now_ms();
    flight_wait(flight_of("j"), &w);
    ck_assert(run_until(marked, 3000));
    ck_assert_int_ge(h_now_ms() - now, 150); /* miss-wait 200 ms, a margin below */
    ck_assert(edge_owner_silent(&T.e, o, clock_mono_ms()));
    ck_assert(run_until(one_answer, 3000));
    ck_assert_int_lt(h_now_ms() - t, 180); /* its own miss-wait would end at 200 */
    ck_assert(T.recs[0].a.found && T.recs[0].a.stale);
    ck_assert_str_eq(T.recs[0].v, "old");
    /* probing: a PING goes out (held too) */
    for (int i = 0; i < 2000 && T.fo.requests[WIRE_PING] == 0; i++)
        run_for(1);
    ck_assert_int_ge(T.fo.requests[WIRE_PING], 1);
    release_held(0); /* the owner answers k's fetch */
    ck_assert(run_until(not_marked, 3000));
    ck_assert(!edge_owner_silent(&T.e, o, clock_mono_ms()));
}
END_TEST

Suite *flight_suite(void)
{
    Suite *s = suite_create("flight");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"single", one_fetch_for_many_waiters_answered_in_arrival_order},
        {"leave", a_waiter_that_leaves_is_not_answered},
        {"misswait", past_miss_wait_the_class_answer_comes_and_the_fetch_goes_on},
        {"stale", past_miss_wait_a_stale_entry_is_served_flagged},
        {"error", owner_error_reaches_every_waiter_verbatim},
        {"broken", broken_link_answers_waiters_at_once},
        {"colo", refresh_lock_held_by_another_edge_waiters_read_its_fill},
        {"poll_fetch", a_poll_that_turns_into_a_fetch_keeps_its_flight_until_the_answer},
        {"flushed", answer_older_than_a_flush_is_fetched_again},
        {"silent", unanswered_refresh_marks_the_owner_silent_and_an_answer_clears_it},
        {"timed_out", a_fetch_timed_out_by_its_link_marks_the_owner_silent},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
