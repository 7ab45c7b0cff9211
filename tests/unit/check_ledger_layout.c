/*
 * check_ledger_layout.c - the ledger's entry layout (storage/ledger_int.h):
 * a key's value lives in the entry's own allocation when it fits, and in a
 * block of its own when it does not or when the key has a deadline (kept in
 * the block, not in every entry).  What must hold whichever place a value
 * is in: every version reads back whole; a value handed out for a SET GET
 * or GETDEL reply stays intact until the next mutating call even when the
 * write replaced it in place; a write whose new value is a slice of the old
 * one copies it right; tombstones and expiries (which share a word) keep
 * their meaning; and what a small key costs in malloc'd bytes.
 */
#include <check.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "storage/ledger.h"

static struct ledger *L;
static struct ledger_clock NOW = {1000, 1700000000000LL};
static const struct ledger_expiry NOEXP = {LEDGER_EXP_NONE, 0};

static void setup(void)
{
    struct ledger_options o = {.tombstone_ttl_ms = 1000, .writer = 3, .has_hash_key = 1};
    for (int i = 0; i < SIPHASH_KEY_LEN; i++)
        o.hash_key[i] = (uint8_t)(0x20 + i);
    ck_assert_int_eq(ledger_create(&o, &L), HKV_OK);
    ck_assert_int_eq(ledger_mark_complete(L), HKV_OK);
}

static void teardown(void) { ledger_destroy(&L); }

static void set_fill(const char *k, size_t n, char fill)
{
    char *v = malloc(n + 1);
    ck_assert_ptr_nonnull(v);
    memset(v, fill, n);
    ck_assert_int_eq(ledger_set(L, k, strlen(k), v, n, 0, 0, NOEXP, NOW, NULL, NULL), HKV_OK);
    free(v);
}

static void assert_fill(const char *k, size_t n, char fill)
{
    struct ledger_view v;
    ck_assert_int_eq(ledger_get(L, k, strlen(k), NOW, &v), HKV_OK);
    ck_assert_uint_eq(v.vlen, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(v.val[i], fill);
    ck_assert_int_eq(v.val[n], '\0');
}

/* Sizes that stay in place, grow out of it and come back, each read back
 * whole (NUL-terminated), and the memory figure returns to where it was. */
START_TEST(value_growing_out_of_the_entry_and_back_reads_back_whole)
{
    static const size_t sizes[] = {64, 65, 80, 200, 4000, 63, 0, 1, 100000, 64, 70, 64};
    struct ledger_stats st0, st;
    set_fill("k", 64, 'a');
    ledger_stats(L, &st0);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        char fill = (char)('b' + i);
        set_fill("k", sizes[i], fill);
        assert_fill("k", sizes[i], fill);
    }
    ledger_stats(L, &st);
    ck_assert_uint_eq(st.memory_bytes, st0.memory_bytes);
    ck_assert_uint_eq(st.keys, 1);
}
END_TEST

/* SET GET and GETDEL: the old value's view stays intact until the next
 * mutating call, whether the write's new value fits in place or not. */
START_TEST(old_value_of_set_get_and_getdel_survives_the_write)
{
    static const size_t news[] = {64, 10, 3000};
    for (size_t i = 0; i < 3; i++) {
        set_fill("g", 64, 'o');
        char nv[3001];
        memset(nv, 'n', news[i]);
        struct ledger_view old;
        ck_assert_int_eq(ledger_set(L, "g", 1, nv, news[i], 0, LEDGER_GET, NOEXP, NOW, &old, NULL),
                         HKV_OK);
        ck_assert_int_eq(old.found, 1);
        ck_assert_uint_eq(old.vlen, 64);
        for (size_t j = 0; j < 64; j++)
            ck_assert_int_eq(old.val[j], 'o');
        assert_fill("g", news[i], 'n');
    }
    set_fill("d", 64, 'x');
    struct ledger_view old;
    int existed = 0;
    ck_assert_int_eq(ledger_del(L, "d", 1, 0, NOW, &existed, &old, NULL), HKV_OK);
    ck_assert_int_eq(existed, 1);
    ck_assert_uint_eq(old.vlen, 64);
    for (size_t j = 0; j < 64; j++)
        ck_assert_int_eq(old.val[j], 'x');
    struct ledger_view v;
    ck_assert_int_eq(ledger_get(L, "d", 1, NOW, &v), HKV_ENOENT);
    /* and the next write releases it: no leak (valgrind), the key revives */
    set_fill("d", 20, 'y');
    assert_fill("d", 20, 'y');
}
END_TEST

/* A new value that is a slice of the key's current value (the caller read
 * it from the ledger): copied as it was, in place or out of it. */
START_TEST(new_value_taken_from_the_old_one_is_copied_right)
{
    char pat[64]; /* recognisable bytes */
    for (int i = 0; i < 64; i++)
        pat[i] = (char)('0' + i % 40);
    ck_assert_int_eq(ledger_set(L, "s", 1, pat, 64, 0, 0, NOEXP, NOW, NULL, NULL), HKV_OK);
    struct ledger_view v;
    ck_assert_int_eq(ledger_get(L, "s", 1, NOW, &v), HKV_OK);
    ck_assert_int_eq(ledger_set(L, "s", 1, v.val + 10, 40, 0, 0, NOEXP, NOW, NULL, NULL), HKV_OK);
    ck_assert_int_eq(ledger_get(L, "s", 1, NOW, &v), HKV_OK);
    ck_assert_uint_eq(v.vlen, 40);
    for (int i = 0; i < 40; i++)
        ck_assert_int_eq(v.val[i], (char)('0' + (i + 10) % 40));
    /* out of place, then a slice of it back in place */
    set_fill("s", 5000, 'q');
    ck_assert_int_eq(ledger_get(L, "s", 1, NOW, &v), HKV_OK);
    ck_assert_int_eq(ledger_set(L, "s", 1, v.val + 100, 30, 0, 0, NOEXP, NOW, NULL, NULL), HKV_OK);
    assert_fill("s", 30, 'q');
}
END_TEST

/* A tombstone's time and a live key's deadline share a word: a key with a
 * TTL, deleted, revived without one, has no TTL; a tombstone is swept by
 * its own horizon, not by the deadline the key had. */
START_TEST(tombstone_time_and_deadline_keep_their_meaning)
{
    struct ledger_expiry ex = {LEDGER_EXP_REL, 500000};
    ck_assert_int_eq(ledger_set(L, "t", 1, "v", 1, 0, 0, ex, NOW, NULL, NULL), HKV_OK);
    int64_t ttl = 0;
    ck_assert_int_eq(ledger_ttl(L, "t", 1, NOW, &ttl), HKV_OK);
    ck_assert_int_eq(ttl, 500000);
    ck_assert_int_eq(ledger_del(L, "t", 1, 0, NOW, NULL, NULL, NULL), HKV_OK);
    ck_assert_int_eq(ledger_ttl(L, "t", 1, NOW, &ttl), HKV_OK);
    ck_assert_int_eq(ttl, -2);
    struct ledger_stats st;
    ledger_stats(L, &st);
    ck_assert_uint_eq(st.expires, 0);
    ck_assert_uint_eq(st.tombstones, 1);
    ck_assert_int_eq(ledger_set(L, "t", 1, "w", 1, 0, 0, NOEXP, NOW, NULL, NULL), HKV_OK);
    ck_assert_int_eq(ledger_ttl(L, "t", 1, NOW, &ttl), HKV_OK);
    ck_assert_int_eq(ttl, -1);
}
END_TEST

/* What 100k keys of 16 bytes with 64-byte values cost in malloc'd bytes
 * (entry, bucket array, position order, dirty order), printed for
 * BENCHMARKS.md.  The entry is one 128-byte chunk (36 + 16 + 65 bytes
 * asked); with list pointers, a value pointer and a deadline in every
 * header (68 bytes) it was one 160-byte chunk, and before that (a 96-byte
 * header with the key in one chunk, the value in another) 192.5 here. */
START_TEST(small_keys_cost_measured)
{
    const int n = 100000;
    char key[32], val[64];
    memset(val, 'v', sizeof(val));
    struct mallinfo2 m0 = mallinfo2();
    for (int i = 0; i < n; i++) {
        int kl = snprintf(key, sizeof(key), "bench:mem:%06d", i);
        ck_assert_int_eq(ledger_set(L, key, (size_t)kl, val, sizeof(val), 0, 0, NOEXP, NOW, NULL,
                                    NULL),
                         HKV_OK);
    }
    struct mallinfo2 m1 = mallinfo2();
    struct ledger_stats st;
    ledger_stats(L, &st);
    double per = (double)(m1.uordblks + m1.hblkhd - m0.uordblks - m0.hblkhd) / n;
    double order = (double)st.order_bytes / n, buckets = (double)st.buckets * 8 / n;
    double dirty = (double)st.dirty_order_bytes / n; /* all dirty here: no persister */
    printf("ledger layout: %.1f malloc'd bytes/key (16-byte keys, 64-byte values; position order "
           "%.1f, buckets %.1f, dirty order %.1f, the entry the rest)\n",
           per, order, buckets, dirty);
    ck_assert_double_lt(per - order - buckets - dirty, 136);
}
END_TEST

/* A deadline puts the value in a block beside the entry, PERSIST brings it
 * back in place; through both, and a rewrite that keeps the TTL with a
 * slice of the value, the value and the TTL read back right, and the
 * memory figure returns to what the key cost without a deadline. */
START_TEST(deadline_moves_the_value_out_and_back_in_place)
{
    struct ledger_stats st0, st;
    set_fill("x", 64, 'a');
    ledger_stats(L, &st0);
    struct ledger_expiry ex = {LEDGER_EXP_REL, 500000};
    int deleted = -1, changed = 0;
    ck_assert_int_eq(ledger_expire(L, "x", 1, ex, NOW, &deleted, NULL), HKV_OK);
    ck_assert_int_eq(deleted, 0);
    assert_fill("x", 64, 'a');
    int64_t ttl = 0;
    ck_assert_int_eq(ledger_ttl(L, "x", 1, NOW, &ttl), HKV_OK);
    ck_assert_int_eq(ttl, 500000);
    ledger_stats(L, &st);
    ck_assert_uint_gt(st.memory_bytes, st0.memory_bytes);
    ck_assert_uint_eq(st.expires, 1);
    ex.ms = 300000; /* a new deadline for a key that has one */
    ck_assert_int_eq(ledger_expire(L, "x", 1, ex, NOW, &deleted, NULL), HKV_OK);
    ck_assert_int_eq(ledger_ttl(L, "x", 1, NOW, &ttl), HKV_OK);
    ck_assert_int_eq(ttl, 300000);
    /* SET KEEPTTL with a slice of the value it replaces */
    struct ledger_view v;
    ck_assert_int_eq(ledger_get(L, "x", 1, NOW, &v), HKV_OK);
    ck_assert_int_eq(v.expire_at_ms, NOW.wall_ms + 300000);
    const struct ledger_expiry keep = {LEDGER_EXP_KEEP, 0};
    ck_assert_int_eq(ledger_set(L, "x", 1, v.val + 4, 60, 0, 0, keep, NOW, NULL, NULL), HKV_OK);
    assert_fill("x", 60, 'a');
    ck_assert_int_eq(ledger_ttl(L, "x", 1, NOW, &ttl), HKV_OK);
    ck_assert_int_eq(ttl, 300000);
    set_fill("x", 64, 'a'); /* a plain SET drops the deadline (back in place) */
    ck_assert_int_eq(ledger_ttl(L, "x", 1, NOW, &ttl), HKV_OK);
    ck_assert_int_eq(ttl, -1);
    ledger_stats(L, &st);
    ck_assert_uint_eq(st.memory_bytes, st0.memory_bytes);
    ck_assert_int_eq(ledger_expire(L, "x", 1, ex, NOW, &deleted, NULL), HKV_OK);
    ck_assert_int_eq(ledger_persist(L, "x", 1, NOW, &changed, NULL), HKV_OK);
    ck_assert_int_eq(changed, 1);
    ck_assert_int_eq(ledger_ttl(L, "x", 1, NOW, &ttl), HKV_OK);
    ck_assert_int_eq(ttl, -1);
    assert_fill("x", 64, 'a');
    ledger_stats(L, &st);
    ck_assert_uint_eq(st.memory_bytes, st0.memory_bytes);
    ck_assert_uint_eq(st.expires, 0);
    /* GETDEL of a key whose value is in a block: the view outlives the delete */
    ck_assert_int_eq(ledger_set(L, "y", 1, "blockvalue", 10, 0, 0, ex, NOW, NULL, NULL), HKV_OK);
    struct ledger_view old;
    int existed = 0;
    ck_assert_int_eq(ledger_del(L, "y", 1, 0, NOW, &existed, &old, NULL), HKV_OK);
    ck_assert_int_eq(existed, 1);
    ck_assert_int_eq(memcmp(old.val, "blockvalue", 11), 0);
    /* and a key whose deadline passes is swept with its block (ASan: no leak) */
    ck_assert_int_eq(ledger_set(L, "z", 1, "v", 1, 0, 0, ex, NOW, NULL, NULL), HKV_OK);
    struct ledger_clock later = {NOW.mono_ms + 400000, NOW.wall_ms + 400000};
    ck_assert_uint_ge(ledger_sweep(L, later, 16), 1);
    ck_assert_int_eq(ledger_get(L, "z", 1, later, &v), HKV_ENOENT);
}
END_TEST

Suite *ledger_layout_suite(void)
{
    Suite *s = suite_create("ledger_layout");
    TCase *tc = tcase_create("values");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, value_growing_out_of_the_entry_and_back_reads_back_whole);
    tcase_add_test(tc, old_value_of_set_get_and_getdel_survives_the_write);
    tcase_add_test(tc, new_value_taken_from_the_old_one_is_copied_right);
    tcase_add_test(tc, tombstone_time_and_deadline_keep_their_meaning);
    tcase_add_test(tc, deadline_moves_the_value_out_and_back_in_place);
    suite_add_tcase(s, tc);
    tc = tcase_create("cost");
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, small_keys_cost_measured);
    suite_add_tcase(s, tc);
    return s;
}
