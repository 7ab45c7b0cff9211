/*
 * check_strops.c - proto/strops: Redis 7.0's string commands as functions:
 * integers, APPEND, SETRANGE, GETRANGE, INCRBYFLOAT (bits, LCS and the
 * replies' encoding: check_strops_bits.c).
 *
 * Every expected reply below was observed from Debian's redis-server 7.0.15
 * (redis-cli / a raw RESP socket) with the same value and arguments; the
 * limit cases ran with `CONFIG SET proto-max-bulk-len 1048576` where the test
 * sets env.max_len to 1 MB.  A test that writes keeps the stored value in a
 * one-key model (key_*) so a sequence of commands reads what the previous
 * one stored, as the owner's ledger would.
 */
#include <check.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/strops.h"
#include "tests/unit/strops_fixture.h"

/* ---- integer parsing ---------------------------------------------------- */

START_TEST(integers_parse_as_redis_string2ll)
{
    int64_t v = 7;
    ck_assert_int_eq(strops_parse_ll("0", 1, &v), 1);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(strops_parse_ll("-42", 3, &v), 1);
    ck_assert_int_eq(v, -42);
    ck_assert_int_eq(strops_parse_ll("9223372036854775807", 19, &v), 1);
    ck_assert_int_eq(v, INT64_MAX);
    ck_assert_int_eq(strops_parse_ll("-9223372036854775808", 20, &v), 1);
    ck_assert_int_eq(v, INT64_MIN);
    static const char *bad[] = { "", "-", "-0", "01", "00", "+1", " 1", "1 ", "1.5", "x",
                                 "9223372036854775808", "-9223372036854775809",
                                 "18446744073709551616", "000000000000000000001" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(strops_parse_ll(bad[i], strlen(bad[i]), &v) == 0, "accepted '%s'", bad[i]);
    ck_assert_int_eq(strops_parse_ll("1\0", 2, &v), 0);   /* a NUL is not a digit */
}
END_TEST

/* ---- APPEND -------------------------------------------------------------- */

START_TEST(append_creates_and_extends)
{
    CK_INT(strops_append(&env, key(), A("hello"), &res), 5);
    CK_STORED("hello");
    keep();
    CK_INT(strops_append(&env, key(), A(" world"), &res), 11);
    CK_STORED("hello world");
    keep();
    CK_KEY("hello world");
    /* an integer-looking value appends as text */
    KEY_SET("12345");
    CK_INT(strops_append(&env, key(), A("6"), &res), 6);
    CK_STORED("123456");
}
END_TEST

START_TEST(append_empty_to_absent_key_creates_empty_string)
{
    /* APPEND a "" -> 0, then EXISTS a -> 1, STRLEN a -> 0 */
    CK_INT(strops_append(&env, NULL, A(""), &res), 0);
    CK_STORED("");
    keep();
    CK_KEY("");
    CK_INT(strops_append(&env, key(), A(""), &res), 0);
    ck_assert_int_eq(res.store, 1);   /* Redis signals the key modified */
}
END_TEST

START_TEST(append_refused_past_proto_max_bulk_len)
{
    env.max_len = MB;
    char *big = calloc(1, MB);
    ck_assert_ptr_nonnull(big);
    key_set(big, MB);
    free(big);
    CK_INT(strops_append(&env, key(), A(""), &res), MB);
    CK_ERR(strops_append(&env, key(), A("b"), &res), HKV_ETOOBIG, E_TOOLONG);
    /* an absent key takes the argument as it is */
    CK_INT(strops_append(&env, NULL, A("bbbbbbbbbb"), &res), 10);
}
END_TEST

/* ---- SETRANGE ------------------------------------------------------------ */

START_TEST(setrange_overwrites_and_pads_with_zeros)
{
    KEY_SET("hello world");
    CK_INT(strops_setrange(&env, key(), A("6"), A("Redis"), &res), 11);
    CK_STORED("hello Redis");
    KEY_SET("abc");
    CK_INT(strops_setrange(&env, key(), A("1"), A("XYZW"), &res), 5);
    CK_STORED("aXYZW");
    CK_INT(strops_setrange(&env, NULL, A("3"), A("x"), &res), 4);
    CK_STORED("\0\0\0x");
    KEY_SET("ab");
    CK_INT(strops_setrange(&env, key(), A("4"), A("z"), &res), 5);
    CK_STORED("ab\0\0z");
}
END_TEST

START_TEST(setrange_empty_value_changes_nothing)
{
    CK_INT(strops_setrange(&env, NULL, A("5"), A(""), &res), 0);
    ck_assert_int_eq(res.store, 0);   /* EXISTS c -> 0 afterwards */
    /* even past the size limit, with an absent key */
    CK_INT(strops_setrange(&env, NULL, A("536870912"), A(""), &res), 0);
    KEY_SET("hello world");
    CK_INT(strops_setrange(&env, key(), A("100"), A(""), &res), 11);
    ck_assert_int_eq(res.store, 0);
    CK_INT(strops_setrange(&env, key(), A("0"), A(""), &res), 11);
    ck_assert_int_eq(res.store, 0);
}
END_TEST

START_TEST(setrange_offset_errors)
{
    CK_ERR(strops_setrange(&env, NULL, A("-1"), A("x"), &res), HKV_EINVAL,
           "ERR offset is out of range");
    CK_ERR(strops_setrange(&env, NULL, A("-1"), A(""), &res), HKV_EINVAL,
           "ERR offset is out of range");
    CK_ERR(strops_setrange(&env, NULL, A("abc"), A("x"), &res), HKV_EINVAL, E_INT);
    CK_ERR(strops_setrange(&env, NULL, A("01"), A("x"), &res), HKV_EINVAL, E_INT);
    CK_ERR(strops_setrange(&env, NULL, A(" 1"), A("x"), &res), HKV_EINVAL, E_INT);
    CK_ERR(strops_setrange(&env, NULL, A("9223372036854775808"), A("x"), &res), HKV_EINVAL, E_INT);
    /* default 512 MB: offset 536870911 + 1 byte fits, 536870912 does not */
    CK_ERR(strops_setrange(&env, NULL, A("536870912"), A("x"), &res), HKV_ETOOBIG, E_TOOLONG);
    CK_ERR(strops_setrange(&env, NULL, A("9223372036854775807"), A("x"), &res), HKV_ETOOBIG,
           E_TOOLONG);
}
END_TEST

START_TEST(setrange_limit_is_the_parameter)
{
    env.max_len = MB;
    CK_INT(strops_setrange(&env, NULL, A("1048575"), A("a"), &res), MB);
    ck_assert_int_eq(res.store, 1);
    ck_assert_uint_eq(res.value_len, MB);
    ck_assert_int_eq(res.value[MB - 1], 'a');
    ck_assert_int_eq(res.value[0], 0);
    CK_ERR(strops_setrange(&env, NULL, A("1048576"), A("a"), &res), HKV_ETOOBIG, E_TOOLONG);
    CK_ERR(strops_setrange(&env, NULL, A("1048575"), A("ab"), &res), HKV_ETOOBIG, E_TOOLONG);
}
END_TEST

/* ---- GETRANGE / SUBSTR --------------------------------------------------- */

START_TEST(getrange_indexes_as_redis)
{
    KEY_SET("hello world");
    struct { const char *s, *e, *want; } c[] = {
        { "0", "-1", "hello world" }, { "-3", "-1", "rld" },
        { "0", "-100", "h" },          /* end clamps to 0: one byte */
        { "-1", "-2", "" },            /* both negative, start > end */
        { "5", "3", "" }, { "100", "200", "" },
        { "-100", "-50", "h" },        /* both clamp to 0 */
        { "-100", "2", "hel" }, { "3", "100", "lo world" }, { "0", "0", "h" },
        { "0", "3", "hell" },          /* SUBSTR b 0 3 */
        { "-9223372036854775808", "9223372036854775807", "hello world" },
        { "-9223372036854775808", "-9223372036854775808", "h" },
        { "9223372036854775807", "-9223372036854775808", "" },
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        struct resp_slice s = { c[i].s, strlen(c[i].s) }, e = { c[i].e, strlen(c[i].e) };
        ck_assert_int_eq(strops_getrange(&env, key(), &s, &e, &res), HKV_OK);
        ck_assert_int_eq(res.reply.type, STROPS_R_BULK);
        ck_assert_msg(res.reply.len == strlen(c[i].want) &&
                      memcmp(res.reply.str, c[i].want, res.reply.len) == 0,
                      "GETRANGE %s %s: got '%.*s', want '%s'", c[i].s, c[i].e,
                      (int)res.reply.len, res.reply.str, c[i].want);
        ck_assert_int_eq(res.store, 0);
    }
    KEY_SET("This is a string");
    CK_BULK(strops_getrange(&env, key(), A("0"), A("3"), &res), "This");
    CK_BULK(strops_getrange(&env, key(), A("-3"), A("-1"), &res), "ing");
    CK_BULK(strops_getrange(&env, key(), A("10"), A("100"), &res), "string");
    KEY_SET("12345");
    CK_BULK(strops_getrange(&env, key(), A("1"), A("2"), &res), "23");
}
END_TEST

START_TEST(getrange_empty_and_absent_and_errors)
{
    CK_BULK(strops_getrange(&env, NULL, A("0"), A("-1"), &res), "");
    KEY_SET("");
    CK_BULK(strops_getrange(&env, key(), A("0"), A("-1"), &res), "");
    CK_BULK(strops_getrange(&env, key(), A("0"), A("0"), &res), "");
    CK_BULK(strops_getrange(&env, key(), A("-1"), A("-1"), &res), "");
    /* arguments are checked before the key is looked at */
    CK_ERR(strops_getrange(&env, NULL, A("x"), A("1"), &res), HKV_EINVAL, E_INT);
    KEY_SET("hello");
    CK_ERR(strops_getrange(&env, key(), A("x"), A("1"), &res), HKV_EINVAL, E_INT);
    CK_ERR(strops_getrange(&env, key(), A("1"), A("y"), &res), HKV_EINVAL, E_INT);
}
END_TEST

/* ---- INCRBYFLOAT --------------------------------------------------------- */

/* Redis's INCRBYFLOAT answers are those of x87's 80-bit long double.
 * Valgrind runs x87 arithmetic at double precision (a documented limitation:
 * even strtold("inf") gives LDBL_MAX under it), so there these tests still
 * make every call, for the memory checks, but check only the reply's shape:
 * a bulk reply that is also the stored value, or an error that stores
 * nothing.  Natively (make unit) every answer is checked. */
static int ld_exact;

static int long_double_is_x87(void)
{
    volatile long double one = 1.0L, tiny = 0x1p-63L;
    return LDBL_MANT_DIG == 64 && one + tiny != one;
}

static void float_setup(void)
{
    setup();
    ld_exact = long_double_is_x87();
}

static void ck_float_shape(hkv_status st)
{
    if (res.reply.type == STROPS_R_BULK) {
        ck_assert_int_eq(st, HKV_OK);
        ck_assert_int_eq(res.store, 1);
        ck_assert_ptr_eq(res.value, res.reply.str);
        ck_assert_uint_eq(res.value_len, res.reply.len);
    } else {
        ck_assert_int_eq(res.reply.type, STROPS_R_ERROR);
        ck_assert_int_eq(res.store, 0);
    }
}

/* INCRBYFLOAT with the key model: the reply is the stored value. */
#define CK_FLOAT(incr, lit)                                             \
    do {                                                                \
        if (ld_exact) {                                                 \
            CK_BULK(strops_incrbyfloat(&env, key(), A(incr), &res), lit); \
            CK_STORED(lit);                                             \
        } else {                                                        \
            ck_float_shape(strops_incrbyfloat(&env, key(), A(incr), &res)); \
        }                                                               \
        keep();                                                         \
    } while (0)

/* An INCRBYFLOAT refusal that depends on the range of long double. */
#define CK_FLOAT_ERR(call, text)                                        \
    do {                                                                \
        if (ld_exact)                                                   \
            CK_ERR(call, HKV_EINVAL, text);                             \
        else                                                            \
            ck_float_shape(call);                                       \
    } while (0)

START_TEST(incrbyfloat_formats_as_redis)
{
    CK_FLOAT("10.5", "10.5");
    CK_FLOAT("0.1", "10.6");
    CK_FLOAT("-5", "5.6");
    CK_FLOAT("5.0e3", "5005.60000000000000009");
    kpresent = 0;
    CK_FLOAT("3.0e-3", "0.003");
    kpresent = 0;
    CK_FLOAT("1.5", "1.5");
    CK_FLOAT("-1.5", "0");
    CK_FLOAT("-0.0", "0");
    CK_FLOAT("0x10", "16");
    CK_FLOAT("1e-4940", "16");            /* a subnormal, not an underflow to 0 */
    KEY_SET("3");
    CK_FLOAT("1.1", "4.1");
    CK_FLOAT(".1", "4.2");
    CK_FLOAT("1.", "5.2");
    CK_FLOAT("+1", "6.2");
    CK_FLOAT("1.23456789012345678901", "7.43456789012345679");
    kpresent = 0;
    CK_FLOAT("0.1", "0.1");
    CK_FLOAT("0.2", "0.3");
    kpresent = 0;
    CK_FLOAT("1.1e-17", "0.00000000000000001");
    CK_FLOAT("1", "1.00000000000000001");
    CK_FLOAT("-1", "0.00000000000000001");
    kpresent = 0;
    CK_FLOAT("-1e-20", "0");              /* "-0" printed as "0" */
    kpresent = 0;
    CK_FLOAT("123456789012345678901234567890", "123456789012345678899921813504");
    KEY_SET("1e3");
    CK_FLOAT("1", "1001");
}
END_TEST

/* A long INCRBYFLOAT answer, checked by length and both ends. */
static void ck_float_long(const char *incr, size_t len, const char *head, const char *tail)
{
    struct resp_slice a = { incr, strlen(incr) };
    hkv_status st = strops_incrbyfloat(&env, key(), &a, &res);
    if (!ld_exact) {
        ck_float_shape(st);
        keep();
        return;
    }
    ck_assert_int_eq(st, HKV_OK);
    ck_assert_int_eq(res.reply.type, STROPS_R_BULK);
    ck_assert_uint_eq(res.reply.len, len);
    ck_assert_mem_eq(res.reply.str, head, strlen(head));
    ck_assert_mem_eq(res.reply.str + len - strlen(tail), tail, strlen(tail));
    ck_assert_int_eq(res.store, 1);
    ck_assert_ptr_eq(res.value, res.reply.str);
    keep();
}

START_TEST(incrbyfloat_prints_large_values_in_full)
{
    KEY_SET("0.003");
    CK_FLOAT("1e200",
             "10000000000000000000245858653416102566150806804005000288732750048732578543"
             "23839262083728907361291987398136581473596522385665929606178545877878453260"
             "97835852628442219969983473365844529789269081145212928");
    /* near LDBL_MAX the text has thousands of digits and still fits */
    kpresent = 0;
    ck_float_long("1e4930", 4931, "100000000000000000002617378488703793057208195075512250134639",
                  "178697605508134703139717609317797565772915470041149975035904");
    ck_float_long("1e4932", 4933, "100999999999999999997705617576317691371960453783622972925696",
                  "666662176047687791790311387696500224362191438453193717055488");
    kpresent = 0;
    ck_float_long("-1e4932", 4934, "-10000000000000000000060189493879638913238377742545331147737",
                  "754741783354728589350876379371163141086538418113791886622720");
    /* twice that is past LDBL_MAX */
    CK_FLOAT_ERR(strops_incrbyfloat(&env, key(), A("-1e4932"), &res),
                 "ERR increment would produce NaN or Infinity");
}
END_TEST

START_TEST(incrbyfloat_refuses_bad_numbers)
{
    static const char *bad[] = { "nan", "NaN", "abc", "", " 1", "1 ", "1_0", "1e" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct resp_slice a = { bad[i], strlen(bad[i]) };
        CK_ERR(strops_incrbyfloat(&env, NULL, &a, &res), HKV_EINVAL,
               "ERR value is not a valid float");
    }
    CK_ERR(strops_incrbyfloat(&env, NULL, A("5\0"), &res), HKV_EINVAL,
           "ERR value is not a valid float");
    /* overflow, and underflow to zero, are not numbers */
    CK_FLOAT_ERR(strops_incrbyfloat(&env, NULL, A("1e5000"), &res),
                 "ERR value is not a valid float");
    CK_FLOAT_ERR(strops_incrbyfloat(&env, NULL, A("1e-5000"), &res),
                 "ERR value is not a valid float");
    /* infinities parse, and the sum is refused */
    static const char *inf[] = { "inf", "-inf", "infinity" };
    for (size_t i = 0; i < sizeof(inf) / sizeof(inf[0]); i++) {
        struct resp_slice a = { inf[i], strlen(inf[i]) };
        CK_FLOAT_ERR(strops_incrbyfloat(&env, NULL, &a, &res),
                     "ERR increment would produce NaN or Infinity");
    }
    /* the stored value is parsed the same way */
    KEY_SET("hello");
    CK_ERR(strops_incrbyfloat(&env, key(), A("1"), &res), HKV_EINVAL,
           "ERR value is not a valid float");
    KEY_SET(" 1");
    CK_ERR(strops_incrbyfloat(&env, key(), A("1"), &res), HKV_EINVAL,
           "ERR value is not a valid float");
    KEY_SET("inf");
    CK_FLOAT_ERR(strops_incrbyfloat(&env, key(), A("1"), &res),
                 "ERR increment would produce NaN or Infinity");
}
END_TEST

Suite *strops_suite(void)
{
    Suite *s = suite_create("strops");
    struct {
        const char *name;
        const TTest *tests[8];
    } groups[] = {
        { "integers", { integers_parse_as_redis_string2ll } },
        { "append", { append_creates_and_extends, append_empty_to_absent_key_creates_empty_string,
                      append_refused_past_proto_max_bulk_len } },
        { "setrange", { setrange_overwrites_and_pads_with_zeros,
                        setrange_empty_value_changes_nothing, setrange_offset_errors,
                        setrange_limit_is_the_parameter } },
        { "getrange", { getrange_indexes_as_redis, getrange_empty_and_absent_and_errors } },
        { "incrbyfloat", { incrbyfloat_formats_as_redis, incrbyfloat_prints_large_values_in_full,
                           incrbyfloat_refuses_bad_numbers } },
    };
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
        TCase *tc = tcase_create(groups[g].name);
        int floats = strcmp(groups[g].name, "incrbyfloat") == 0;
        tcase_add_checked_fixture(tc, floats ? float_setup : setup, teardown);
        for (size_t i = 0; i < 8 && groups[g].tests[i] != NULL; i++)
            tcase_add_test(tc, groups[g].tests[i]);
        suite_add_tcase(s, tc);
    }
    return s;
}
