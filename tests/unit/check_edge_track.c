/* check_edge_track.c - CLIENT TRACKING on a whole edge in this process
 * (edge_fixture.h), where its table meets the cache and the single-flight:
 * a tracking client that was told of a version must never be handed an
 * older one without being told again (README "CLIENT TRACKING"), even when
 * it reads the key again while an older fetch of it, asked for by another
 * client before the write, is still on its way. */
#include "server/core/clock.h"
#include "server/core/router.h"
#include "tests/unit/edge_fixture.h"

static struct {
    uint64_t version;             /* the owner's version of k */
    int hold;                     /* GETs are held, not answered */
    int gets;
} O;

static void answer(struct fo_conn *fc, uint64_t id, uint64_t version)
{
    struct hkv_buf b = HKV_BUF_INIT;
    char v[32];
    int n = snprintf(v, sizeof(v), "v%llu", (unsigned long long)version);
    wire_put_value(&b, id, wire_slice(v, (size_t)n), version, 0);
    fo_reply(fc, &b);
    buf_deinit(&b);
}

static void owner(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    if (m->type == WIRE_STATS) {
        wire_put_stats_reply(&b, m->id, NULL, 0);
        fo_reply(fc, &b);
    } else if (m->type == WIRE_GET) {
        O.gets++;
        if (O.hold)
            fo_hold(fo, fc, m);
        else
            answer(fc, m->id, O.version);
    }
    buf_deinit(&b);
}

static const char *fresh_ms;

static void classes(struct cfg *cfg)
{
    struct cfg_error err;
    char line[96];
    snprintf(line, sizeof(line), "default fresh %s keep 60s", fresh_ms);
    ck_assert_msg(cfg_set(cfg, "class", line, &err) == HKV_OK, "%s", err.msg);
}

static void start(const char *fresh)
{
    memset(&O, 0, sizeof(O));
    O.version = 1;
    fresh_ms = fresh;
    ef_setup(1, owner, classes);
}

/* Another edge of the colo stored k at version v (the owner's push),
 * fresh for fresh ms. */
static void pushed(const char *val, uint64_t v, int64_t fresh)
{
    uint64_t h = router_hash("k", 1);
    int64_t now = clock_mono_ms();
    ck_assert_int_eq(cache_put(F.cache,
                               &(struct cache_entry){.key = "k", .klen = 1, .khash = h,
                                                     .val = val, .vlen = strlen(val), .stamp = v,
                                                     .fresh_until = now + fresh,
                                                     .keep_until = now + 120000},
                               now),
                     HKV_OK);
    changes_note_key(F.changes, "k", 1, h, v, 0);
}

#define INVAL_K ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"

static int tracker(void)
{
    int fd = ef_client();
    ef_cmd(fd, "HELLO", "3", NULL);
    char junk[4096];
    ef_read(fd, junk, 1, 3000); /* the map's first byte, then the rest */
    for (int i = 0; i < 100; i++) {
        ef_turn();
        if (read(fd, junk, sizeof(junk)) <= 0)
            break;
    }
    ef_call(fd, "+OK\r\n", "CLIENT", "TRACKING", "on", NULL);
    return fd;
}

/* What the tracker gets after it was told of v2 and read k again while a
 * fetch of k at v1 is on its way: either v2, or v1 followed by another
 * invalidation of k. */
static void older_fetch_case(const char *fresh)
{
    start(fresh);
    int t = tracker(), c = ef_client();
    ef_call(t, "$2\r\nv1\r\n", "GET", "k", NULL); /* tracked, and in the colo's cache */
    /* the colo's copy goes stale (fresh 0: at once); another client's read
     * fetches k and the owner's answer (v1) is held */
    O.hold = 1;
    h_sleep_ms(fresh[0] == '0' ? 5 : 120);
    ef_cmd(c, "GET", "k", NULL);
    for (int i = 0; i < 200 && F.fo[0].nheld == 0; i++) {
        ef_turn();
        h_sleep_ms(1);
    }
    ck_assert_int_eq(F.fo[0].nheld, 1);
    /* the write of v2 reaches the colo first; the tracker is told */
    O.version = 2;
    pushed("v2", 2, fresh[0] == '0' ? 0 : 100);
    ef_expect(t, INVAL_K);
    ef_cmd(t, "GET", "k", NULL);
    for (int i = 0; i < 20; i++) {
        ef_turn();
        h_sleep_ms(1);
    }
    answer(F.fo[0].held[0].fc, F.fo[0].held[0].id, 1); /* the old fetch lands */
    char got[64];
    ef_read(t, got, 8, 3000);
    if (strcmp(got, "$2\r\nv1\r\n") == 0)
        ef_expect_within(t, INVAL_K, 1000); /* v1 handed over: it must be told again */
    else
        ck_assert_str_eq(got, "$2\r\nv2\r\n");
    ef_teardown();
}

START_TEST(a_told_tracker_is_never_left_with_an_older_fetch_fresh_0)
{
    older_fetch_case("0");
}
END_TEST

START_TEST(a_told_tracker_is_never_left_with_an_older_fetch_fresh_100ms)
{
    older_fetch_case("100ms");
}
END_TEST

/* The edge's connection of the tracking client fd (the only one tracking). */
static struct conn *tracking_conn(void)
{
    for (struct conn *x = F.e.conns->list; x != NULL; x = x->next)
        if (sess_of(x)->track != NULL)
            return x;
    return NULL;
}

/* Invalidations are written to their clients during the ring's read and
 * flushed once per loop turn; a client closed in between (its output
 * limit, a hang-up) is dropped from the flush, and the others get theirs. */
START_TEST(a_tracker_closed_before_the_flush_is_skipped)
{
    start("60s");
    int t = tracker();
    ef_call(t, "$2\r\nv1\r\n", "GET", "k", NULL);
    struct conn *tc = tracking_conn();
    ck_assert_ptr_nonnull(tc);
    int t2 = tracker(); /* a second tracker of k, which stays */
    ef_call(t2, "$2\r\nv1\r\n", "GET", "k", NULL);
    pushed("v2", 2, 60000);
    edge_feed_drain(&F.e, FEED_TRACK); /* written to both, flushed at the turn's end */
    ck_assert(sess_of(tc)->track_dirty);
    conn_close(tc);
    ef_expect(t2, INVAL_K);
    char b;
    ck_assert_int_le(read(t, &b, 1), 0); /* closed, and sent nothing */
    ef_call(t2, "$2\r\nv2\r\n", "GET", "k", NULL);
    ck_assert_uint_eq(atomic_load(&ef_stats()->tracking_invalidations), 2);
    ef_teardown();
}
END_TEST

Suite *edge_track_suite(void)
{
    Suite *s = suite_create("edge_track");
    TCase *tc = tcase_create("flight");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, a_told_tracker_is_never_left_with_an_older_fetch_fresh_0);
    tcase_add_test(tc, a_told_tracker_is_never_left_with_an_older_fetch_fresh_100ms);
    tcase_add_test(tc, a_tracker_closed_before_the_flush_is_skipped);
    suite_add_tcase(s, tc);
    return s;
}
