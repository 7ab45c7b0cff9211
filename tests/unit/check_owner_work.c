/*
 * check_owner_work.c - an owner's work measure (server/owner/owner_work.h):
 * a leaf's work is the sum of its buckets and each half is its own run of
 * them; writes, pushes, misses and bytes are told apart; the hottest key of
 * a leaf is found with a count that never overstates it, even when many
 * other keys pass through the sketch; a deeper leaf than the buckets has no
 * halves; a reset starts the window over.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "server/core/router.h"
#include "server/owner/owner_work.h"

static struct owork *w;

static void setup(void) { w = owork_create(); ck_assert_ptr_nonnull(w); }
static void teardown(void) { owork_destroy(&w); ck_assert_ptr_null(w); }

/* A placement hash inside leaf (start, bits): its top bits, then `low`. */
static uint64_t place_in(uint32_t start, int bits, uint32_t off)
{
    uint64_t size = bits == 0 ? 1ULL << 32 : 1ULL << (32 - bits);
    return ((uint64_t)start + off % size) << 32 | 0x1234;
}

static void req(uint64_t place, const char *key, int n)
{
    for (int i = 0; i < n; i++)
        owork_request(w, place, key, strlen(key));
}

START_TEST(a_leafs_work_is_its_buckets_and_each_half_its_own)
{
    uint32_t start = 0x40000000u; /* leaf 2-1 */
    uint32_t half = 1u << 29;
    req(place_in(start, 3, 5), "a", 30);          /* first half */
    req(place_in(start + half, 3, 7), "b", 10);   /* second half */
    req(place_in(0x80000000u, 2, 0), "c", 50);    /* another leaf */
    struct hand_load x = {.leaf = {.pool = 1}};
    owork_leaf(w, start, 2, &x);
    ck_assert_uint_eq(x.leaf.pool, 1);
    ck_assert_uint_eq(x.leaf.start, start);
    ck_assert_uint_eq(x.leaf.bits, 2);
    ck_assert_uint_eq(x.work, 40);
    ck_assert_uint_eq(x.half[0], 30);
    ck_assert_uint_eq(x.half[1], 10);
    ck_assert_uint_eq(x.misses, 40);
    ck_assert_uint_eq(owork_total(w), 90);
    /* the half as a leaf of its own */
    owork_leaf(w, start, 3, &x);
    ck_assert_uint_eq(x.work, 30);
}
END_TEST

START_TEST(writes_pushes_and_bytes_are_counted_apart)
{
    uint64_t p = place_in(0, 1, 99);
    req(p, "k", 10);                       /* 10 requests ... */
    for (int i = 0; i < 4; i++)
        owork_write(w, p);                 /* ... 4 of them writes */
    owork_push(w, p, "k", 1, 3, 3 * 8192); /* one write pushed to 3 colos, 24 KiB */
    struct hand_load x = {0};
    owork_leaf(w, 0, 1, &x);
    ck_assert_uint_eq(x.writes, 4);
    ck_assert_uint_eq(x.misses, 6);
    ck_assert_uint_eq(x.pushes, 3);
    ck_assert_uint_eq(x.bytes, 3 * 8192);
    /* requests + pushes + bytes / OWORK_BYTES_PER_UNIT */
    ck_assert_uint_eq(x.work, 10 + 3 + 3 * 8192 / OWORK_BYTES_PER_UNIT);
    ck_assert(x.has_key);
    ck_assert_uint_eq(x.key.len, 1);
    ck_assert_uint_eq(x.topwork, x.work); /* the only key */
}
END_TEST

START_TEST(the_hot_key_is_found_and_never_overstated_among_many)
{
    uint32_t start = 0xc0000000u; /* leaf 2-3 */
    char key[32];
    /* 2000 requests of the hot key, interleaved with 4000 keys seen once */
    for (int i = 0; i < 4000; i++) {
        snprintf(key, sizeof(key), "cold:%d", i);
        owork_request(w, place_in(start, 2, (uint32_t)i * 7919u), key, strlen(key));
        if (i % 2 == 0)
            owork_request(w, place_in(start, 2, 42), "hot:key", 7);
    }
    struct hand_load x = {0};
    owork_leaf(w, start, 2, &x);
    ck_assert_uint_eq(x.work, 6000);
    ck_assert(x.has_key);
    ck_assert_msg(x.key.len == 7 && memcmp(x.key.p, "hot:key", 7) == 0, "top key %.*s",
                  (int)x.key.len, x.key.p);
    ck_assert_uint_le(x.topwork, 2000);   /* a lower bound ... */
    ck_assert_uint_ge(x.topwork, 1500);   /* ... and a close one */
    /* no key of another leaf is reported for this one */
    struct hand_load y = {0};
    owork_leaf(w, 0, 2, &y);
    ck_assert(!y.has_key);
    ck_assert_uint_eq(y.work, 0);
}
END_TEST

START_TEST(a_leaf_deeper_than_the_buckets_has_no_halves)
{
    int bits = OWORK_BITS + 2;
    uint32_t start = 0x12340000u & ~((1u << (32 - bits)) - 1);
    req(place_in(start, bits, 3), "d", 12);
    struct hand_load x = {0};
    owork_leaf(w, start, (uint8_t)bits, &x);
    ck_assert_uint_eq(x.work, 12);
    ck_assert_uint_eq(x.half[0], 0);
    ck_assert_uint_eq(x.half[1], 0);
}
END_TEST

START_TEST(a_reset_starts_the_window_over)
{
    req(place_in(0, 0, 1), "z", 5);
    ck_assert_uint_eq(owork_total(w), 5);
    owork_reset(w);
    ck_assert_uint_eq(owork_total(w), 0);
    struct hand_load x = {0};
    owork_leaf(w, 0, 0, &x);
    ck_assert_uint_eq(x.work, 0);
    ck_assert(!x.has_key);
}
END_TEST

START_TEST(a_long_key_is_kept_cut)
{
    char key[200];
    memset(key, 'x', sizeof(key));
    owork_request(w, router_place(key, sizeof(key)), key, sizeof(key));
    struct hand_load x = {0};
    owork_leaf(w, 0, 0, &x);
    ck_assert(x.has_key);
    ck_assert_uint_eq(x.key.len, OWORK_KEY_MAX);
}
END_TEST

Suite *owner_work_suite(void)
{
    Suite *s = suite_create("owner_work");
    TCase *tc = tcase_create("counts");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_leafs_work_is_its_buckets_and_each_half_its_own);
    tcase_add_test(tc, writes_pushes_and_bytes_are_counted_apart);
    tcase_add_test(tc, a_leaf_deeper_than_the_buckets_has_no_halves);
    tcase_add_test(tc, a_reset_starts_the_window_over);
    suite_add_tcase(s, tc);
    tc = tcase_create("hot keys");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, the_hot_key_is_found_and_never_overstated_among_many);
    tcase_add_test(tc, a_long_key_is_kept_cut);
    suite_add_tcase(s, tc);
    return s;
}
