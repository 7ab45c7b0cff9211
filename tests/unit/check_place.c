/*
 * check_place.c - a key's place in the hash space (proto/place.h): the
 * routing hashes agree with the router's, and positions order keys by
 * placement first, identity second, inside their leaf's range.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "proto/place.h"
#include "proto/syskey.h"
#include "server/core/router.h"

START_TEST(hashes_are_the_routers)
{
    const char *keys[] = {"", "plain", "{user:1}:a", "x{user:1}y", "{}x", "{a}{b}", "ab{cd"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        size_t n = strlen(keys[i]);
        ck_assert_uint_eq(place_ident(keys[i], n), router_hash(keys[i], n));
        ck_assert_uint_eq(place_hash(keys[i], n), router_place(keys[i], n));
    }
    /* the hash key is the format: a fixed vector */
    ck_assert_uint_eq(place_hash("{user:1}:a", 10), place_ident("user:1", 6));
    ck_assert_uint_ne(place_ident("a", 1), place_ident("b", 1));
}
END_TEST

START_TEST(position_is_placement_then_identity)
{
    char k[32];
    for (int i = 0; i < 20000; i++) {
        int n = i % 3 ? snprintf(k, sizeof(k), "k%d", i)
                      : snprintf(k, sizeof(k), "{t%d}x%d", i % 50, i); /* 50 tags */
        uint64_t pos = place_pos(k, (size_t)n);
        ck_assert_uint_lt(pos, PLACE_POS_END - 1);
        ck_assert_uint_eq(place_pos_place32(pos), (uint32_t)(place_hash(k, (size_t)n) >> 32));
        uint64_t tie = place_ident(k, (size_t)n) >> (64 - PLACE_TIE_BITS);
        ck_assert_uint_eq(pos & ((1ULL << PLACE_TIE_BITS) - 1),
                          tie > (1ULL << PLACE_TIE_BITS) - 2 ? (1ULL << PLACE_TIE_BITS) - 2 : tie);
        /* inside the range of its leaf, at every depth */
        for (uint8_t bits = 0; bits <= 32; bits += 4) {
            uint32_t prefix = bits == 0 ? 0 : place_pos_place32(pos) >> (32 - bits);
            ck_assert(pos >= place_leaf_start(bits, prefix));
            ck_assert(pos < place_leaf_end(bits, prefix));
        }
        ck_assert_uint_eq(place_pos_hash(pos) >> 32, place_pos_place32(pos));
    }
}
END_TEST

START_TEST(leaf_ranges_tile_the_space)
{
    ck_assert_uint_eq(place_leaf_start(0, 0), 0);
    ck_assert_uint_eq(place_leaf_end(0, 0), PLACE_POS_END);
    for (uint8_t bits = 1; bits <= 12; bits++)
        for (uint32_t p = 0; p + 1 < (1u << bits); p++)
            ck_assert_uint_eq(place_leaf_end(bits, p), place_leaf_start(bits, p + 1));
    ck_assert_uint_eq(place_leaf_end(10, 1023), PLACE_POS_END);
    ck_assert_uint_eq(place_leaf_end(32, 0xffffffffu), PLACE_POS_END);
    ck_assert_uint_eq(place_leaf_start(32, 7), 7ULL << PLACE_TIE_BITS);
    ck_assert_uint_eq(place_leaf_start(1, 1), PLACE_POS_END / 2);
}
END_TEST

/* An Idempotency-Key record sits where its target sits, at every depth:
 * its writes persist, move and replicate with the target's leaf. */
static char *k_dummy(void)
{
    static char one[1];
    return one;
}

START_TEST(a_system_key_is_placed_as_its_target)
{
    const char *targets[] = {"plain", "{user:1}:a", "", "x{}y", "{a}", ("\xff" "hkv")};
    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
        char k[600];
        size_t tn = strlen(targets[i]), off, n;
        size_t kn = syskey_idem(k, sizeof(k), targets[i], tn, "alice", 5, "idem-1", 6);
        ck_assert_uint_gt(kn, 0);
        ck_assert(syskey_is(k, kn));
        ck_assert(syskey_target(k, kn, &off, &n));
        ck_assert_uint_eq(n, tn);
        ck_assert(memcmp(k + off, targets[i], tn) == 0);
        ck_assert_uint_eq(place_hash(k, kn), place_hash(targets[i], tn));
        ck_assert_uint_eq(router_place(k, kn), router_place(targets[i], tn));
        ck_assert_uint_eq(place_pos_place32(place_pos(k, kn)),
                          place_pos_place32(place_pos(targets[i], tn)));
    }
    /* distinct users and Idempotency-Keys are distinct records */
    char a[64], b[64];
    size_t an = syskey_idem(a, sizeof(a), "k", 1, "u", 1, "ab", 2);
    size_t bn = syskey_idem(b, sizeof(b), "k", 1, "ua", 2, "b", 1);
    ck_assert(an != bn || memcmp(a, b, an) != 0);
    /* bounds: nothing written past cap, long users and keys refused */
    char big[300];
    memset(big, 'x', sizeof(big));
    ck_assert_uint_eq(syskey_idem(a, sizeof(a), big, 60, "u", 1, "i", 1), 0);
    ck_assert_uint_eq(syskey_idem(k_dummy(), 0, "k", 1, "u", 1, "i", 1), 0);
    ck_assert_uint_eq(syskey_idem(big, sizeof(big), "k", 1, big, 256, "i", 1), 0);
    ck_assert_uint_eq(syskey_idem(big, sizeof(big), "k", 1, "u", 1, big, 256), 0);
    /* malformed or client keys are not system keys' targets */
    ck_assert(!syskey_is("\xff" "hk", 3));
    ck_assert(!syskey_target("\xff" "hkv\0i\0\0\0\x09" "ab", 12, &an, &bn)); /* length past the end */
    ck_assert(!syskey_target("plain", 5, &an, &bn));
    ck_assert_uint_eq(place_hash("\xff" "hkv\0i\0\0\0\x09" "ab", 12),
                      place_ident("\xff" "hkv\0i\0\0\0\x09" "ab", 12));
}
END_TEST

Suite *place_suite(void)
{
    Suite *s = suite_create("place");
    TCase *c = tcase_create("hashes");
    tcase_add_test(c, hashes_are_the_routers);
    tcase_add_test(c, a_system_key_is_placed_as_its_target);
    suite_add_tcase(s, c);
    c = tcase_create("position");
    tcase_add_test(c, position_is_placement_then_identity);
    suite_add_tcase(s, c);
    c = tcase_create("leaves");
    tcase_add_test(c, leaf_ranges_tile_the_space);
    suite_add_tcase(s, c);
    return s;
}
