/*
 * check_bitfield.c - proto/bitfield's arithmetic: types, reads and writes
 * at unaligned offsets, and the three overflow rules at every width's
 * edges.  The expected values are Redis 7.0.15's (its BITFIELD
 * documentation's examples, and replies observed from redis-server with
 * the same fields); the command around them is differential-tested
 * (tests/diff, g_bitfield).
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "proto/bitfield.h"

static struct bf_type T(const char *w)
{
    struct bf_type t = {0, 0};
    ck_assert_int_eq(bf_parse_type(w, strlen(w), &t), 0);
    return t;
}

START_TEST(types_as_redis_reads_them)
{
    struct bf_type t;
    static const char *good[] = {"i1", "i8", "i64", "u1", "u63"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        ck_assert_int_eq(bf_parse_type(good[i], strlen(good[i]), &t), 0);
    ck_assert_int_eq(T("i64").bits, 64);
    ck_assert_int_eq(T("i64").sign, 1);
    ck_assert_int_eq(T("u7").sign, 0);
    static const char *bad[] = {"u64", "i65", "i0", "u0", "i08", "U8", "x8", "i", "", "i-1",
                                "i+8", "u 8", "i100"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(bf_parse_type(bad[i], strlen(bad[i]), &t) == -1, "%s", bad[i]);
    /* read as a C string, as Redis does: what follows a NUL is not seen */
    ck_assert_int_eq(bf_parse_type("u8\0zz", 5, &t), 0);
    ck_assert_int_eq(t.bits, 8);
}
END_TEST

START_TEST(reads_and_writes_msb_first_at_any_offset)
{
    unsigned char p[4] = {0};
    bf_write(p, 3, T("u5"), 31); /* bits 3..7 */
    ck_assert_uint_eq(p[0], 0x1f);
    bf_write(p, 6, T("i4"), -1); /* crosses the byte */
    ck_assert_uint_eq(p[0], 0x1f);
    ck_assert_uint_eq(p[1], 0xc0);
    ck_assert_int_eq(bf_read(p, 4, 6, T("i4")), -1);
    ck_assert_int_eq(bf_read(p, 4, 6, T("u4")), 15);
    ck_assert_int_eq(bf_read(p, 4, 0, T("u8")), 0x1f);
    bf_write(p, 6, T("i4"), 0); /* clears only its own bits */
    ck_assert_uint_eq(p[0], 0x1c);
    ck_assert_uint_eq(p[1], 0x00);
    /* bits past the end read as zeros: a u16 over the last byte */
    unsigned char q[1] = {0xff};
    ck_assert_int_eq(bf_read(q, 1, 0, T("u16")), 0xff00);
    ck_assert_int_eq(bf_read(q, 1, 0, T("i16")), (int16_t)0xff00);
    unsigned char w[8];
    memset(w, 0, sizeof(w));
    bf_write(w, 0, T("i64"), INT64_MIN);
    ck_assert_uint_eq(w[0], 0x80);
    ck_assert_int_eq(bf_read(w, 8, 0, T("i64")), INT64_MIN);
    ck_assert_int_eq(bf_read(w, 8, 0, T("u63")), INT64_C(1) << 62);
}
END_TEST

START_TEST(overflow_wrap_sat_fail)
{
    int64_t v = 42;
    /* the documentation's u2 counter: 3 + 1 */
    ck_assert_int_eq(bf_add(T("u2"), 3, 1, BF_WRAP, &v), 1);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(bf_add(T("u2"), 3, 1, BF_SAT, &v), 1);
    ck_assert_int_eq(v, 3);
    v = 42;
    ck_assert_int_eq(bf_add(T("u2"), 3, 1, BF_FAIL, &v), 1);
    ck_assert_int_eq(v, 42); /* untouched: nothing is written */
    ck_assert_int_eq(bf_add(T("u2"), 2, 1, BF_FAIL, &v), 0);
    ck_assert_int_eq(v, 3);
    /* INCRBY i5 100 1 on zeros: 1 */
    ck_assert_int_eq(bf_add(T("i5"), 0, 1, BF_WRAP, &v), 0);
    ck_assert_int_eq(v, 1);
    /* signed edges both ways */
    ck_assert_int_eq(bf_add(T("i8"), 127, 1, BF_WRAP, &v), 1);
    ck_assert_int_eq(v, -128);
    ck_assert_int_eq(bf_add(T("i8"), 127, 1, BF_SAT, &v), 1);
    ck_assert_int_eq(v, 127);
    ck_assert_int_eq(bf_add(T("i8"), -128, -1, BF_WRAP, &v), 1);
    ck_assert_int_eq(v, 127);
    ck_assert_int_eq(bf_add(T("i8"), -128, -1, BF_SAT, &v), 1);
    ck_assert_int_eq(v, -128);
    ck_assert_int_eq(bf_add(T("i8"), 100, 300, BF_WRAP, &v), 1);
    ck_assert_int_eq(v, (int8_t)(100 + 300));
    ck_assert_int_eq(bf_add(T("i64"), INT64_MAX, 1, BF_WRAP, &v), 1);
    ck_assert_int_eq(v, INT64_MIN);
    ck_assert_int_eq(bf_add(T("i64"), INT64_MIN, -1, BF_SAT, &v), 1);
    ck_assert_int_eq(v, INT64_MIN);
    ck_assert_int_eq(bf_add(T("i64"), INT64_MIN, INT64_MAX, BF_FAIL, &v), 0);
    ck_assert_int_eq(v, -1);
    /* SET is value + 0: an argument outside the field overflows */
    ck_assert_int_eq(bf_add(T("i8"), 200, 0, BF_WRAP, &v), 1);
    ck_assert_int_eq(v, -56);
    ck_assert_int_eq(bf_add(T("u8"), -1, 0, BF_SAT, &v), 1);  /* -1 is above u8's 255 */
    ck_assert_int_eq(v, 255);
    ck_assert_int_eq(bf_add(T("u8"), -1, 0, BF_WRAP, &v), 1);
    ck_assert_int_eq(v, 255);
    ck_assert_int_eq(bf_add(T("u8"), 256, 0, BF_WRAP, &v), 1);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(bf_add(T("u63"), -1, 0, BF_SAT, &v), 1);
    ck_assert_int_eq(v, INT64_MAX);
    ck_assert_int_eq(bf_add(T("u8"), 5, -6, BF_SAT, &v), 1);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(bf_add(T("u8"), 5, -6, BF_WRAP, &v), 1);
    ck_assert_int_eq(v, 255);
    ck_assert_int_eq(bf_add(T("u1"), 0, 1, BF_FAIL, &v), 0);
    ck_assert_int_eq(v, 1);
}
END_TEST

Suite *bitfield_suite(void)
{
    Suite *s = suite_create("bitfield");
    TCase *tc = tcase_create("arith");
    tcase_add_test(tc, types_as_redis_reads_them);
    tcase_add_test(tc, reads_and_writes_msb_first_at_any_offset);
    tcase_add_test(tc, overflow_wrap_sat_fail);
    suite_add_tcase(s, tc);
    return s;
}
