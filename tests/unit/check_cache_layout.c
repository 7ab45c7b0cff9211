/*
 * check_cache_layout.c - the colo segment's entry layout (server/colo/
 * cache_int.h, "entries"): which slot class an entry takes at the boundary
 * sizes, entries that move between classes as their value grows and
 * shrinks (with and without an expiry), the narrowed fields (key length,
 * 32-bit time offsets) and what they do at their limits, and what a small
 * entry costs per key.  The slot class of an entry is observed with the
 * test hooks (cache_test_where), the rest through cache_get only.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/colo/cache.h"
#include "server/colo/cache_test.h"
#include "server/core/router.h"

#define HDR 40u /* an entry's header (cache_int.h SLOT_HDR) */

static struct cache *mk(size_t bytes, size_t max_value)
{
    struct cache_opts o = {.bytes = bytes, .max_value = max_value, .hot_sample = 16};
    struct cache *c = NULL;
    ck_assert_int_eq(cache_create(&o, &c), HKV_OK);
    ck_assert_int_eq(cache_attach(c), HKV_OK);
    return c;
}

static int put(struct cache *c, const char *k, size_t vlen, char fill, uint64_t stamp,
               int64_t expire_at)
{
    char *v = malloc(vlen + 1);
    ck_assert_ptr_nonnull(v);
    memset(v, fill, vlen);
    int rc = cache_put(c,
                       &(struct cache_entry){.key = k, .klen = strlen(k),
                                             .khash = router_hash(k, strlen(k)), .val = v,
                                             .vlen = vlen, .stamp = stamp, .fresh_until = 1000,
                                             .keep_until = 100000, .expire_at = expire_at},
                       10);
    free(v);
    return rc;
}

/* The slot class of k's entry (128 << cls bytes), or -1 if absent. */
static int cls_of(struct cache *c, const char *k)
{
    struct cache_test_where w;
    if (cache_test_where(c, k, strlen(k), router_hash(k, strlen(k)), &w) != HKV_OK)
        return -1;
    return (int)w.cls;
}

/* k's value must be vlen bytes of fill, with that expiry. */
static void assert_holds(struct cache *c, const char *k, size_t vlen, char fill,
                         int64_t expire_at)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct cache_hit h;
    ck_assert_int_eq(cache_get(c, k, strlen(k), router_hash(k, strlen(k)), 20, &b, &h), HKV_OK);
    ck_assert_uint_eq(b.len, vlen);
    for (size_t i = 0; i < vlen; i++)
        ck_assert_int_eq(b.data[i], fill);
    ck_assert_int_eq(h.expire_at, expire_at);
    buf_deinit(&b);
}

/* 40 bytes of header + key + value: an entry that fills a 128-byte slot to
 * its last byte is class 0, one byte more is class 1; an expiry takes 8. */
START_TEST(entry_at_a_slot_boundary_takes_the_smallest_class_that_holds_it)
{
    struct cache *c = mk(2u << 20, 4096);
    const char *k = "bench:mem:123456"; /* 16 bytes, as the memory benchmark's */
    size_t fit = 128 - HDR - strlen(k);  /* 72 */
    ck_assert_int_eq(put(c, k, fit, 'a', 5, 0), HKV_OK);
    ck_assert_int_eq(cls_of(c, k), 0);
    assert_holds(c, k, fit, 'a', 0);
    ck_assert_int_eq(put(c, k, fit + 1, 'b', 6, 0), HKV_OK);
    ck_assert_int_eq(cls_of(c, k), 1);
    assert_holds(c, k, fit + 1, 'b', 0);
    ck_assert_int_eq(put(c, k, fit - 8, 'c', 7, 1700000000000LL), HKV_OK);
    ck_assert_int_eq(cls_of(c, k), 0);
    assert_holds(c, k, fit - 8, 'c', 1700000000000LL);
    ck_assert_int_eq(put(c, k, fit - 7, 'd', 8, 1700000000001LL), HKV_OK);
    ck_assert_int_eq(cls_of(c, k), 1);
    assert_holds(c, k, fit - 7, 'd', 1700000000001LL);
    /* the 64-byte value of the memory benchmark takes a 128-byte slot */
    ck_assert_int_eq(put(c, k, 64, 'e', 9, 0), HKV_OK);
    ck_assert_int_eq(cls_of(c, k), 0);
    cache_destroy(&c);
}
END_TEST

/* A value that grows through every class up to a page and shrinks back,
 * alternating with and without an expiry: each version is read back whole,
 * with its own expiry, and the old slots are freed (entries stays 1). */
START_TEST(value_growing_and_shrinking_across_classes_reads_back_whole)
{
    struct cache *c = mk(4u << 20, 64u << 10);
    struct cache_test_geometry g;
    cache_test_geometry(c, &g);
    const char *k = "grow";
    size_t sizes[64];
    int n = 0;
    for (size_t cap = 128; cap <= g.page_size && n < 30; cap *= 2) {
        sizes[n++] = cap - HDR - 4 - 8; /* fills cap with an expiry */
        sizes[n++] = cap - HDR - 4 - 7; /* one over, with an expiry */
    }
    uint64_t stamp = 1;
    int seen_cls_max = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            int j = pass == 0 ? i : n - 1 - i;
            int64_t exp = (j % 2 == 0) ? 1700000000000LL + j : 0;
            char fill = (char)('a' + (j % 26));
            int rc = put(c, k, sizes[j], fill, ++stamp, exp);
            if (sizes[j] + HDR + 8 + 4 > g.page_size) {
                ck_assert_int_eq(rc, HKV_ETOOBIG);
                continue;
            }
            ck_assert_int_eq(rc, HKV_OK);
            assert_holds(c, k, sizes[j], fill, exp);
            if (cls_of(c, k) > seen_cls_max)
                seen_cls_max = cls_of(c, k);
            struct cache_stats st;
            cache_stats(c, &st);
            ck_assert_uint_eq(st.entries, 1);
        }
    ck_assert_int_ge(seen_cls_max, 3);
    cache_destroy(&c);
}
END_TEST

/* Keys are cached up to 4095 bytes; a longer key is never cached, neither
 * as a value nor as a tombstone, so no older value of it can be served. */
START_TEST(key_longer_than_the_length_field_is_not_cached)
{
    struct cache *c = mk(2u << 20, 64u << 10);
    static char k[4097];
    memset(k, 'k', 4095);
    k[4095] = 0;
    ck_assert_int_eq(put(c, k, 10, 'x', 1, 0), HKV_OK);
    assert_holds(c, k, 10, 'x', 0);
    ck_assert_int_eq(cache_invalidate(c, k, 4095, router_hash(k, 4095), 2, 1000, 10), HKV_OK);
    struct hkv_buf b = HKV_BUF_INIT;
    ck_assert_int_eq(cache_get(c, k, 4095, router_hash(k, 4095), 20, &b, NULL), HKV_ENOENT);
    k[4095] = 'k';
    ck_assert_int_eq(put(c, k, 10, 'x', 3, 0), HKV_ETOOBIG);
    ck_assert_int_eq(cache_invalidate(c, k, 4096, router_hash(k, 4096), 4, 1000, 10),
                     HKV_ETOOBIG);
    ck_assert_int_eq(cache_get(c, k, 4096, router_hash(k, 4096), 20, &b, NULL), HKV_ENOENT);
    buf_deinit(&b);
    cache_destroy(&c);
}
END_TEST

/* Times are 32-bit offsets from stored_at.  A value's lifetime past 24.8
 * days is cut short (a miss sooner, never a value kept longer than asked);
 * a tombstone's guard past it never ends: an older fill is refused however
 * late it comes, and a newer stamp still replaces the tombstone. */
START_TEST(long_lifetimes_clamp_safely)
{
    struct cache *c = mk(2u << 20, 4096);
    const int64_t day = 86400000LL, now = 1000;
    struct hkv_buf b = HKV_BUF_INIT;
    struct cache_hit h;
    const char *k = "long";
    uint64_t kh = router_hash(k, 4);
    ck_assert_int_eq(cache_put(c,
                               &(struct cache_entry){.key = k, .klen = 4, .khash = kh, .val = "v",
                                                     .vlen = 1, .stamp = 5,
                                                     .fresh_until = now + 30 * day,
                                                     .keep_until = now + 40 * day},
                               now),
                     HKV_OK);
    ck_assert_int_eq(cache_get(c, k, 4, kh, now + 24 * day, &b, &h), HKV_OK);
    ck_assert_int_le(h.fresh_until, now + 30 * day);
    ck_assert_int_le(h.keep_until, now + 40 * day);
    ck_assert_int_ge(h.keep_until, now + 24 * day);
    ck_assert_int_eq(cache_get(c, k, 4, kh, now + 40 * day, &b, &h), HKV_ENOENT);
    /* exact when it fits, including times before stored_at */
    ck_assert_int_eq(cache_put(c,
                               &(struct cache_entry){.key = k, .klen = 4, .khash = kh, .val = "w",
                                                     .vlen = 1, .stamp = 6, .fresh_until = now - 5,
                                                     .keep_until = now + 7},
                               now),
                     HKV_OK);
    ck_assert_int_eq(cache_get(c, k, 4, kh, now, &b, &h), HKV_OK);
    ck_assert_int_eq(h.fresh_until, now - 5);
    ck_assert_int_eq(h.keep_until, now + 7);
    ck_assert_int_eq(h.stored_at, now);

    const char *t = "tomb";
    uint64_t th = router_hash(t, 4);
    ck_assert_int_eq(cache_invalidate(c, t, 4, th, 50, now + 60 * day, now), HKV_OK);
    ck_assert_int_eq(cache_put(c,
                               &(struct cache_entry){.key = t, .klen = 4, .khash = th, .val = "old",
                                                     .vlen = 3, .stamp = 49,
                                                     .fresh_until = now + 61 * day,
                                                     .keep_until = now + 61 * day},
                               now + 59 * day),
                     HKV_ESTALE);
    ck_assert_int_eq(cache_get(c, t, 4, th, now + 59 * day, &b, &h), HKV_ENOENT);
    ck_assert_int_eq(cache_put(c,
                               &(struct cache_entry){.key = t, .klen = 4, .khash = th, .val = "new",
                                                     .vlen = 3, .stamp = 51,
                                                     .fresh_until = now + 61 * day,
                                                     .keep_until = now + 61 * day},
                               now + 59 * day),
                     HKV_OK);
    ck_assert_int_eq(cache_get(c, t, 4, th, now + 59 * day, &b, &h), HKV_OK);
    ck_assert_uint_eq(h.stamp, 51);
    buf_deinit(&b);
    cache_destroy(&c);
}
END_TEST

/* The memory figure behind issue 17: 64-byte values under 16-byte keys take
 * a 128-byte slot each (they took 256 with the 80-byte header). */
START_TEST(small_entries_cost_one_128_byte_slot)
{
    struct cache *c = mk(16u << 20, 1u << 20);
    char key[32], val[64];
    memset(val, 'v', sizeof(val));
    const int n = 20000;
    for (int i = 0; i < n; i++) {
        int kl = snprintf(key, sizeof(key), "bench:mem:%06d", i);
        ck_assert_int_eq(cache_put(c,
                                   &(struct cache_entry){.key = key, .klen = (size_t)kl,
                                                         .khash = router_hash(key, (size_t)kl),
                                                         .val = val, .vlen = sizeof(val),
                                                         .stamp = 1, .fresh_until = 1000,
                                                         .keep_until = 100000},
                                   10),
                         HKV_OK);
    }
    struct cache_stats st;
    cache_stats(c, &st);
    ck_assert_uint_eq(st.entries, n);
    ck_assert_uint_eq(st.used_memory, (uint64_t)n * 128);
    cache_destroy(&c);
}
END_TEST

Suite *cache_layout_suite(void)
{
    Suite *s = suite_create("cache_layout");
    TCase *tc = tcase_create("classes");
    tcase_add_test(tc, entry_at_a_slot_boundary_takes_the_smallest_class_that_holds_it);
    tcase_add_test(tc, value_growing_and_shrinking_across_classes_reads_back_whole);
    tcase_add_test(tc, small_entries_cost_one_128_byte_slot);
    suite_add_tcase(s, tc);
    tc = tcase_create("fields");
    tcase_add_test(tc, key_longer_than_the_length_field_is_not_cached);
    tcase_add_test(tc, long_lifetimes_clamp_safely);
    suite_add_tcase(s, tc);
    return s;
}
