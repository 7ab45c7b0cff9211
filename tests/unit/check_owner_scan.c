/*
 * check_owner_scan.c - SCAN_RANGE on an owner (server/owner/owner_scan.c):
 * pages of a range's live keys in position order, cut to the leaf the owner
 * serves; MOVED for a range another owner serves; and, with a ledger that
 * evicted keys (owner-maxmemory), the keys that live only on disk, read by
 * the position index on the reader thread and merged with the ledger: every
 * key once, deleted ones never.
 *
 * Built like check_owner_cluster.c: a real single-host owner (owner_init +
 * owner_open on a temp dir, two hot owners: this one is hot/0 and serves
 * the even leaves) and a fake edge link (a bufferevent pair).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "config/cfg.h"
#include "proto/place.h"
#include "proto/wire.h"
#include "server/core/log.h"
#include "server/core/router.h"
#include "server/owner/owner_int.h"
#include "tests/harness.h"
#include "tests/unit/fake_edge.h"
#include "tests/unit/owner_fixture.h"

#define WAIT_MS 10000

static char dir[256];
static struct worker_ctx ctx;
static struct owner own;
static int have_owner;

static struct fake_edge F;

static void start_owner(const char *extra)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "dir %s\nhot-owners 2\ncold-owners 0\npersist-interval 20ms\n%s"
             "class default pool hot fresh 1s keep 60s durability ledger\n",
             dir, extra);
    of_start(&own, &ctx, text, "own.conf", NULL);
    have_owner = 1;
    fe_open(&own, &F, 1);
}

static void stop_owner(void)
{
    if (!have_owner)
        return;
    fe_close(&F);
    of_stop(&own, &ctx);
    have_owner = 0;
}

static void setup(void)
{
    log_setup(CFG_LOG_WARNING, NULL);
    h_tmpdir(dir, sizeof(dir));
}

static void teardown(void)
{
    stop_owner();
    h_rmtree(dir);
}

static void call(struct hkv_buf *b, struct wire_msg *m)
{
    fe_send(&F, b);
    fe_wait_reply(&own, &F, m, WAIT_MS);
    ck_assert_uint_eq(m->id, F.id);
}

static void run_ms(int ms)
{
    of_run_ms(&own, ms);
}

static void hello(void)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    ck_assert_int_eq(wire_put_hello(&b, ++F.id, WIRE_VERSION, 9, wire_cstr("c"), WIRE_ROLE_WRITE,
                                    77),
                     HKV_OK);
    call(&b, &m);
    ck_assert_uint_eq(m.type, WIRE_HELLO_OK);
    buf_deinit(&b);
}

/* The hash tag of class c (0..4): the first {t<c + 5j>} on an even leaf. */
static int tag_for(int c)
{
    char k[32];
    for (int t = c;; t += 5) {
        int n = snprintf(k, sizeof(k), "t%d", t);
        if ((router_place(k, (size_t)n) >> 54) % 2 == 0)
            return t;
    }
}

/* Key i of this owner (hot/0 of two: the even 10-bit leaves); a quarter
 * of them under five hash tags. */
static size_t key_of(int i, char *k, size_t len)
{
    if (i % 4 == 0)
        return (size_t)snprintf(k, len, "{t%d}:%d:0", tag_for(i % 5), i);
    for (int j = 0;; j++) {
        int n = snprintf(k, len, "key:0:%d:%d", i, j);
        if ((router_place(k, (size_t)n) >> 54) % 2 == 0)
            return (size_t)n;
    }
}

static void write_key(int i, int del, const char *val)
{
    char k[64];
    size_t n = key_of(i, k, sizeof(k));
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    struct wire_rid rid = {++F.seq, F.seq, 0};
    struct wire_slice key = wire_slice(k, n);
    if (del)
        ck_assert_int_eq(wire_put_del(&b, ++F.id, &key, 1, rid), HKV_OK);
    else
        ck_assert_int_eq(wire_put_set(&b, ++F.id, key, wire_cstr(val), rid,
                                      (struct wire_expiry){0, 0}, 0),
                         HKV_OK);
    call(&b, &m);
    ck_assert_msg(m.type == (del ? WIRE_INT : WIRE_OK), "write answered %s",
                  wire_type_name(m.type));
    buf_deinit(&b);
}

static int index_of(const struct wire_slice *s)
{
    char k[64];
    ck_assert_uint_lt(s->len, sizeof(k));
    memcpy(k, s->p, s->len);
    k[s->len] = '\0';
    int a, b, j;
    if (k[0] == '{')
        ck_assert_int_eq(sscanf(k, "{t%d}:%d:%d", &a, &b, &j), 3);
    else
        ck_assert_int_eq(sscanf(k, "key:%d:%d:%d", &a, &b, &j), 3);
    return b;
}

/* Pages [from, to) through with count; seen[i] counts key i.  Returns pages. */
static int walk(uint64_t from, uint64_t to, uint32_t count, const char *match, int *seen, int max)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    int pages = 0;
    struct wire_slice pat = match ? wire_cstr(match) : wire_cstr("");
    while (from < to) {
        ck_assert_int_eq(wire_put_scan_range(&b, ++F.id, from, to, count, match ? &pat : NULL),
                         HKV_OK);
        call(&b, &m);
        ck_assert_msg(m.type == WIRE_SCAN_REPLY, "SCAN_RANGE answered %s", wire_type_name(m.type));
        uint64_t next = m.u.scan_reply.cursor;
        ck_assert_uint_ge(next, from);
        ck_assert_uint_le(next, to);
        for (uint32_t i = 0; i < m.u.scan_reply.nkeys; i++) {
            const struct wire_slice *k = &m.u.scan_reply.keys[i];
            uint64_t pos = place_pos(k->p, k->len);
            ck_assert(pos >= from && pos < next);
            int x = index_of(k);
            ck_assert(x >= 0 && x < max);
            seen[x]++;
        }
        if (next == from) /* an empty page that ends where it began: ask again */
            run_ms(5);
        from = next;
        ck_assert_int_lt(++pages, 100000);
    }
    buf_deinit(&b);
    return pages;
}

START_TEST(pages_of_a_complete_ledger_hold_each_live_key_once_and_stop_at_the_leaf)
{
    enum { N = 3000 };
    start_owner("");
    hello();
    for (int i = 0; i < N; i++)
        write_key(i, 0, "v");
    for (int i = 0; i < N; i += 7)
        write_key(i, 1, NULL);
    int *seen = calloc(N, sizeof(int));
    /* the whole space, through this owner's leaves only: each even leaf is
     * asked from its start; an odd one is MOVED */
    int pages = 0;
    for (uint32_t leaf = 0; leaf < 1024; leaf++) {
        uint64_t from = place_leaf_start(10, leaf), to = place_leaf_end(10, leaf);
        if (leaf % 2 == 1) {
            struct hkv_buf b = HKV_BUF_INIT;
            struct wire_msg m;
            ck_assert_int_eq(wire_put_scan_range(&b, ++F.id, from, to, 10, NULL), HKV_OK);
            call(&b, &m);
            ck_assert_uint_eq(m.type, WIRE_MOVED);
            ck_assert_uint_eq(m.u.moved.leaf, leaf);
            ck_assert_uint_eq(m.u.moved.leaf_bits, 10);
            ck_assert_uint_eq(m.u.moved.owner, 1);
            buf_deinit(&b);
            continue;
        }
        /* asked past the leaf's end: the page stops at it at the latest */
        struct hkv_buf b = HKV_BUF_INIT;
        struct wire_msg m;
        ck_assert_int_eq(wire_put_scan_range(&b, ++F.id, from, PLACE_POS_END, 1000, NULL), HKV_OK);
        call(&b, &m);
        ck_assert_uint_eq(m.type, WIRE_SCAN_REPLY);
        ck_assert_uint_eq(m.u.scan_reply.cursor, to);
        buf_deinit(&b);
        pages += walk(from, to, 3, NULL, seen, N);
    }
    for (int i = 0; i < N; i++)
        ck_assert_msg(seen[i] == (i % 7 != 0), "key %d seen %d times", i, seen[i]);
    ck_assert_int_ge(pages, N / 3);
    /* MATCH filters on the owner */
    memset(seen, 0, N * sizeof(int));
    char pat[32];
    snprintf(pat, sizeof(pat), "{t%d}*", tag_for(1));
    for (uint32_t leaf = 0; leaf < 1024; leaf += 2)
        walk(place_leaf_start(10, leaf), place_leaf_end(10, leaf), 10, pat, seen, N);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(seen[i], i % 4 == 0 && i % 5 == 1 && i % 7 != 0);
    free(seen);
}
END_TEST

/* owner-maxmemory evicts persisted keys: they are read from disk by their
 * positions, and merged with what the ledger holds (a key written or deleted
 * since is what the ledger says). */
START_TEST(keys_only_on_disk_are_read_by_position_and_merged)
{
    enum { N = 4000 };
    start_owner("owner-maxmemory 200kb\n");
    hello();
    char val[200];
    memset(val, 'x', sizeof(val) - 1);
    val[sizeof(val) - 1] = '\0';
    for (int i = 0; i < N; i++) {
        write_key(i, 0, val);
        if (i % 500 == 499)
            run_ms(60); /* persisted, so evictable */
    }
    run_ms(100);
    write_key(0, 0, val); /* a write after the persist: evictions happen at writes */
    struct ledger_stats ls;
    ledger_stats(own.ledger, &ls);
    ck_assert_msg(!ls.complete && ls.evictions > 0, "no eviction (keys %llu)",
                  (unsigned long long)ls.keys);
    ck_assert_uint_lt(ls.keys, N / 2);
    for (int i = 1; i < N; i += 11) /* deletes: tombstones in memory, rows still live on disk */
        write_key(i, 1, NULL);
    int *seen = calloc(N, sizeof(int));
    for (uint32_t leaf = 0; leaf < 1024; leaf += 2)
        walk(place_leaf_start(10, leaf), place_leaf_end(10, leaf), 25, NULL, seen, N);
    for (int i = 0; i < N; i++)
        ck_assert_msg(seen[i] == (i % 11 != 1), "key %d seen %d times", i, seen[i]);
    ledger_stats(own.ledger, &ls);
    ck_assert_uint_gt(ls.evictions, 0);
    free(seen);
}
END_TEST

/* An owner that serves a run of leaves answers a range over all of them in
 * one page (the edge asks it so: a pool of one owner is one request), the
 * empty key included, wherever it falls in the page. */
START_TEST(a_range_over_leaves_the_owner_all_serves_is_one_page)
{
    start_owner("hot-owners 1\n");
    hello();
    const char *keys[] = {"", "a", "b", "{t}x", "zz", "key:1"};
    enum { NK = sizeof(keys) / sizeof(keys[0]) };
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    for (int i = 0; i < NK; i++) {
        struct wire_rid rid = {++F.seq, F.seq, 0};
        ck_assert_int_eq(wire_put_set(&b, ++F.id, wire_cstr(keys[i]), wire_cstr("v"), rid,
                                      (struct wire_expiry){0, 0}, 0),
                         HKV_OK);
        call(&b, &m);
        ck_assert_uint_eq(m.type, WIRE_OK);
    }
    ck_assert_int_eq(wire_put_scan_range(&b, ++F.id, 0, PLACE_POS_END, 100, NULL), HKV_OK);
    call(&b, &m);
    ck_assert_uint_eq(m.type, WIRE_SCAN_REPLY);
    ck_assert_uint_eq(m.u.scan_reply.cursor, PLACE_POS_END);
    ck_assert_uint_eq(m.u.scan_reply.nkeys, NK);
    int seen[NK] = {0};
    for (uint32_t i = 0; i < m.u.scan_reply.nkeys; i++)
        for (int j = 0; j < NK; j++)
            if (m.u.scan_reply.keys[i].len == strlen(keys[j]) &&
                memcmp(m.u.scan_reply.keys[i].p, keys[j], strlen(keys[j])) == 0)
                seen[j]++;
    for (int j = 0; j < NK; j++)
        ck_assert_msg(seen[j] == 1, "key '%s' seen %d times", keys[j], seen[j]);
    /* a page whose first key is the empty one (no arena for its bytes yet) */
    uint64_t at = place_pos("", 0);
    ck_assert_int_eq(wire_put_scan_range(&b, ++F.id, at, at + 1, 10, NULL), HKV_OK);
    call(&b, &m);
    ck_assert_uint_eq(m.type, WIRE_SCAN_REPLY);
    ck_assert_uint_eq(m.u.scan_reply.nkeys, 1);
    ck_assert_uint_eq(m.u.scan_reply.keys[0].len, 0);
    buf_deinit(&b);
}
END_TEST

START_TEST(empty_and_reversed_ranges_answer_at_once)
{
    start_owner("");
    hello();
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    ck_assert_int_eq(wire_put_scan_range(&b, ++F.id, 50, 50, 10, NULL), HKV_OK);
    call(&b, &m);
    ck_assert_uint_eq(m.type, WIRE_SCAN_REPLY);
    ck_assert_uint_eq(m.u.scan_reply.cursor, 50);
    ck_assert_int_eq(wire_put_scan_range(&b, ++F.id, UINT64_MAX, 3, 10, NULL), HKV_OK);
    call(&b, &m);
    ck_assert_uint_eq(m.type, WIRE_SCAN_REPLY);
    ck_assert_uint_eq(m.u.scan_reply.nkeys, 0);
    buf_deinit(&b);
}
END_TEST

Suite *owner_scan_suite(void)
{
    Suite *s = suite_create("owner_scan");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"complete", pages_of_a_complete_ledger_hold_each_live_key_once_and_stop_at_the_leaf},
        {"disk", keys_only_on_disk_are_read_by_position_and_merged},
        {"empty", empty_and_reversed_ranges_answer_at_once},
        {"run", a_range_over_leaves_the_owner_all_serves_is_one_page},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
