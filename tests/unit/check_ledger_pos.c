/*
 * check_ledger_pos.c - the ledger's position order and the walk SCAN pages
 * through (ledger.h ledger_scan_pos): every live key of a range once, in
 * position order, in bounded pages; keys present for the whole walk are
 * seen whatever is written and deleted between pages; and what the order
 * costs a key.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/place.h"
#include "storage/ledger.h"

#define WALL0 1750000000000LL

static struct ledger *L;
static struct ledger_clock NOW;
static const struct ledger_expiry NOEXP = {LEDGER_EXP_NONE, 0};

static void setup(void)
{
    struct ledger_options o = {.tombstone_ttl_ms = 1000, .writer = 7, .has_hash_key = 1};
    ck_assert_int_eq(ledger_create(&o, &L), HKV_OK);
    ledger_mark_complete(L);
    NOW.mono_ms = 1000;
    NOW.wall_ms = WALL0;
}

static void teardown(void) { ledger_destroy(&L); }

static size_t key_of(int i, char *k, size_t len)
{
    if (i % 3 == 0) /* a third under a dozen hash tags */
        return (size_t)snprintf(k, len, "{g%d}:%d", i % 12, i);
    return (size_t)snprintf(k, len, "key:%d", i);
}

static void put(int i)
{
    char k[32];
    size_t n = key_of(i, k, sizeof(k));
    ck_assert_int_eq(ledger_set(L, k, n, "v", 1, 0, 0, NOEXP, NOW, NULL, NULL), HKV_OK);
}

static void del(int i)
{
    char k[32];
    size_t n = key_of(i, k, sizeof(k));
    ck_assert_int_eq(ledger_del(L, k, n, 0, NOW, NULL, NULL, NULL), HKV_OK);
}

static int index_of(const char *key, size_t klen)
{
    char k[32];
    ck_assert_uint_lt(klen, sizeof(k));
    memcpy(k, key, klen);
    k[klen] = '\0';
    const char *c = strchr(k, ':');
    ck_assert_ptr_nonnull(c);
    return atoi(c + 1);
}

struct walk {
    int *seen;            /* times each key index was reported */
    int n;                /* keys this page */
    uint64_t last;        /* position of the last key reported */
    int ordered;          /* positions never went down */
    uint64_t lo, hi;      /* every key reported is in [lo, hi) */
    int outside;
};

static void on_key(const char *key, size_t klen, void *arg)
{
    struct walk *w = arg;
    uint64_t pos = place_pos(key, klen);
    if (pos < w->last)
        w->ordered = 0;
    w->last = pos;
    if (pos < w->lo || pos >= w->hi)
        w->outside++;
    w->seen[index_of(key, klen)]++;
    w->n++;
}

START_TEST(walk_reports_each_live_key_of_the_range_once_in_order)
{
    enum { N = 6000 };
    for (int i = 0; i < N; i++)
        put(i);
    for (int i = 0; i < N; i += 5)
        del(i); /* tombstones stay in the order until swept */
    char k[32];
    size_t kn = key_of(1, k, sizeof(k)); /* key 1 expires */
    ck_assert_int_eq(ledger_set(L, k, kn, "v", 1, 0, 0, (struct ledger_expiry){LEDGER_EXP_REL, 5},
                                NOW, NULL, NULL),
                     HKV_OK);
    NOW.mono_ms += 10;
    for (uint8_t bits = 0; bits <= 3; bits++) {
        for (uint32_t prefix = 0; prefix < (1u << bits); prefix++) {
            uint64_t lo = place_leaf_start(bits, prefix), hi = place_leaf_end(bits, prefix);
            struct walk w = {calloc(N, sizeof(int)), 0, 0, 1, lo, hi, 0};
            uint64_t at = lo;
            int calls = 0;
            while (at < hi) {
                w.n = 0;
                uint64_t next = ledger_scan_pos(L, at, hi, 10, 100, NULL, 0, NOW, on_key, &w);
                ck_assert_uint_gt(next, at);
                ck_assert_uint_le(next, hi);
                ck_assert_int_le(w.n, 10); /* count is reached, never passed (no ties here) */
                at = next;
                ck_assert_int_lt(++calls, N);
            }
            ck_assert(w.ordered);
            ck_assert_int_eq(w.outside, 0);
            for (int i = 0; i < N; i++) {
                uint64_t p = place_pos(k, key_of(i, k, sizeof(k)));
                int want = p >= lo && p < hi && i % 5 != 0 && i != 1;
                ck_assert_msg(w.seen[i] == want, "key %d seen %d times, want %d", i, w.seen[i],
                              want);
            }
            free(w.seen);
        }
    }
    /* MATCH: the visits bound the page, the keys are filtered */
    struct walk w = {calloc(N, sizeof(int)), 0, 0, 1, 0, PLACE_POS_END, 0};
    uint64_t at = 0;
    int calls = 0;
    while (at < PLACE_POS_END) {
        at = ledger_scan_pos(L, at, PLACE_POS_END, 10, 50, "{g3}*", 5, NOW, on_key, &w);
        calls++;
    }
    int tagged = 0;
    for (int i = 0; i < N; i++) {
        tagged += w.seen[i];
        ck_assert_int_eq(w.seen[i], i % 12 == 3 && i % 3 == 0 && i % 5 != 0);
    }
    ck_assert_int_gt(tagged, 100);
    ck_assert_int_ge(calls, N / 50);
    free(w.seen);
}
END_TEST

/* Keys present from the first page to the last are all reported, while
 * other keys are written and deleted between pages (the table grows and
 * shrinks under the walk; the order never loses its place). */
START_TEST(keys_present_throughout_are_reported_across_writes_and_deletes)
{
    enum { STABLE = 3000, CHURN = 20000 };
    for (int i = 0; i < STABLE; i++)
        put(i);
    struct walk w = {calloc(STABLE + CHURN, sizeof(int)), 0, 0, 1, 0, PLACE_POS_END, 0};
    uint64_t at = 0;
    int calls = 0, next_new = STABLE;
    while (at < PLACE_POS_END) {
        w.last = 0; /* churn may add keys behind: order holds within a page only */
        at = ledger_scan_pos(L, at, PLACE_POS_END, 25, 250, NULL, 0, NOW, on_key, &w);
        for (int j = 0; j < 40 && next_new < STABLE + CHURN; j++)
            put(next_new++);
        for (int j = 0; j < 20; j++)
            del(STABLE + (int)((unsigned)(calls * 31 + j * 7) % (unsigned)(next_new - STABLE)));
        ck_assert_int_lt(++calls, 100000);
    }
    for (int i = 0; i < STABLE; i++)
        ck_assert_msg(w.seen[i] == 1, "stable key %d seen %d times", i, w.seen[i]);
    for (int i = STABLE; i < STABLE + CHURN; i++)
        ck_assert_int_le(w.seen[i], 1);
    ck_assert_int_gt(calls, STABLE / 25);
    free(w.seen);
}
END_TEST

START_TEST(residency_and_disk_rows)
{
    put(4);
    del(5);
    char k[32];
    size_t n = key_of(4, k, sizeof(k));
    ck_assert_int_eq(ledger_resident(L, k, n), 1);
    n = key_of(5, k, sizeof(k));
    ck_assert_int_eq(ledger_resident(L, k, n), 1); /* a tombstone decides too */
    n = key_of(6, k, sizeof(k));
    ck_assert_int_eq(ledger_resident(L, k, n), 0);
    struct persist_row r = {.key = k, .klen = n, .val = "v", .vlen = 1,
                            .stamp = stamp_make(WALL0 - STAMP_EPOCH_MS, 0, 1)};
    ck_assert_int_eq(ledger_row_live(L, &r, WALL0), 1);
    r.expire_at_ms = WALL0 - 1;
    ck_assert_int_eq(ledger_row_live(L, &r, WALL0), 0);
    r.expire_at_ms = 0;
    r.tombstone = 1;
    ck_assert_int_eq(ledger_row_live(L, &r, WALL0), 0);
    r.tombstone = 0;
    hkv_stamp f;
    ck_assert_int_eq(ledger_flush(L, NOW, &f), HKV_OK);
    ck_assert_int_eq(ledger_row_live(L, &r, WALL0), 0); /* older than the flush */
    ck_assert_uint_eq(ledger_scan_pos(L, 0, PLACE_POS_END, 10, 100, NULL, 0, NOW, NULL, NULL),
                      PLACE_POS_END); /* the flush took every entry out of the order too */
    ck_assert_uint_eq(ledger_scan_pos(L, 9, 9, 10, 100, NULL, 0, NOW, NULL, NULL), 9);
}
END_TEST

/* The figure for the report: what the order adds to a key. */
START_TEST(position_order_memory_per_key)
{
    enum { N = 1000000 };
    struct ledger_stats s0;
    ledger_stats(L, &s0);
    for (int i = 0; i < N; i++)
        put(i);
    struct ledger_stats s;
    ledger_stats(L, &s);
    double per_key = (double)s.order_bytes / N;
    double total = (double)(s.memory_bytes - s0.memory_bytes) / N;
    fprintf(stderr, "ledger position order: %.1f bytes/key (of %.1f bytes/key counted in "
                    "all, keys of ~10 bytes, values of 1)\n", per_key, total);
    ck_assert(per_key > 16 && per_key < 32);
}
END_TEST

Suite *ledger_pos_suite(void)
{
    Suite *s = suite_create("ledger_pos");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"walk", walk_reports_each_live_key_of_the_range_once_in_order},
        {"churn", keys_present_throughout_are_reported_across_writes_and_deletes},
        {"resident", residency_and_disk_rows},
        {"memory", position_order_memory_per_key},
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
