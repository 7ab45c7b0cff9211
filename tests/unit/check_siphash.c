/* check_siphash.c - SipHash-2-4 against the paper's vectors. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "proto/siphash.h"

static uint8_t seq_key[SIPHASH_KEY_LEN];
static uint8_t seq_msg[64];

static void setup(void)
{
    for (int i = 0; i < SIPHASH_KEY_LEN; i++)
        seq_key[i] = (uint8_t)i;
    for (int i = 0; i < 64; i++)
        seq_msg[i] = (uint8_t)i;
}

/* SipHash paper, appendix A: key 00..0f, message 00..0e. */
START_TEST(paper_appendix_vector)
{
    ck_assert_uint_eq(siphash24(seq_key, seq_msg, 15), 0xa129ca6149be45e5ULL);
}
END_TEST

/* Entries of the reference implementation's 64-vector table (key 00..0f,
 * message 00..len-1), read as little-endian uint64: they cover the empty
 * message, a partial last word, exactly one word and two words. */
START_TEST(reference_table_vectors)
{
    ck_assert_uint_eq(siphash24(seq_key, NULL, 0), 0x726fdb47dd0e0e31ULL);
    ck_assert_uint_eq(siphash24(seq_key, seq_msg, 1), 0x74f839c593dc67fdULL);
    ck_assert_uint_eq(siphash24(seq_key, seq_msg, 7), 0xab0200f58b01d137ULL);
    ck_assert_uint_eq(siphash24(seq_key, seq_msg, 8), 0x93f5f5799a932462ULL);
    ck_assert_uint_eq(siphash24(seq_key, seq_msg, 16), 0x3f2acc7f57c29bdbULL);
}
END_TEST

START_TEST(different_keys_give_different_outputs)
{
    uint8_t k2[SIPHASH_KEY_LEN];
    const char *msg = "user:1000";
    uint64_t base = siphash24(seq_key, msg, strlen(msg));
    for (int byte = 0; byte < SIPHASH_KEY_LEN; byte++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(k2, seq_key, sizeof(k2));
            k2[byte] ^= (uint8_t)(1u << bit);
            uint64_t h = siphash24(k2, msg, strlen(msg));
            ck_assert_uint_ne(h, base);
            /* avalanche: a one-bit key change flips many output bits */
            ck_assert_int_gt(__builtin_popcountll(h ^ base), 10);
        }
    }
    /* and the same key is deterministic */
    ck_assert_uint_eq(siphash24(seq_key, msg, strlen(msg)), base);
}
END_TEST

START_TEST(length_is_part_of_the_hash)
{
    uint8_t zeros[16] = {0};
    for (size_t n = 0; n < 16; n++)
        ck_assert_uint_ne(siphash24(seq_key, zeros, n), siphash24(seq_key, zeros, n + 1));
}
END_TEST

Suite *siphash_suite(void)
{
    Suite *s = suite_create("siphash");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"paper_appendix_vector", paper_appendix_vector},
        {"reference_table_vectors", reference_table_vectors},
        {"different_keys_give_different_outputs", different_keys_give_different_outputs},
        {"length_is_part_of_the_hash", length_is_part_of_the_hash},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, NULL);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
