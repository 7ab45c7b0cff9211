/*
 * check_strops.c - proto/strops: Redis 7.0's string commands as functions.
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

#define MB (1024 * 1024)

static struct hkv_buf work;
static struct strops_env env;
static struct strops_result res;

/* The one key: absent until a command stores into it. */
static char *kdata;
static size_t klen;
static int kpresent;
static struct resp_slice kslice;

static void setup(void)
{
    work = (struct hkv_buf)HKV_BUF_INIT;
    env.work = &work;
    env.max_len = STROPS_MAX_LEN_DEFAULT;
    memset(&res, 0, sizeof(res));
    kdata = NULL;
    klen = 0;
    kpresent = 0;
}

static void teardown(void)
{
    buf_deinit(&work);
    free(kdata);
    kdata = NULL;
}

static void key_set(const char *p, size_t n)
{
    free(kdata);
    kdata = malloc(n > 0 ? n : 1);
    ck_assert_ptr_nonnull(kdata);
    if (n > 0)
        memcpy(kdata, p, n);
    klen = n;
    kpresent = 1;
}

/* The key's value for the next command: NULL while absent. */
static const struct resp_slice *key(void)
{
    if (!kpresent)
        return NULL;
    kslice = (struct resp_slice){ kdata, klen };
    return &kslice;
}

/* Applies the last result to the key, as the owner would. */
static void keep(void)
{
    if (res.store)
        key_set(res.value, res.value_len);
}

#define SL(lit) ((struct resp_slice){ (lit), sizeof(lit) - 1 })
#define A(lit) (&(struct resp_slice){ (lit), sizeof(lit) - 1 })
#define KEY_SET(lit) key_set((lit), sizeof(lit) - 1)

/* Splits a space-separated argument line into slices (no binary needed). */
static char linebuf[256];
static int split(const char *line, struct resp_slice *out, int max)
{
    ck_assert_uint_lt(strlen(line), sizeof(linebuf));
    strcpy(linebuf, line);
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(linebuf, " ", &save); t != NULL; t = strtok_r(NULL, " ", &save)) {
        ck_assert_int_lt(n, max);
        out[n++] = (struct resp_slice){ t, strlen(t) };
    }
    return n;
}

#define CK_INT(call, want)                                              \
    do {                                                                \
        hkv_status st_ = (call);                                        \
        ck_assert_msg(res.reply.type == STROPS_R_INT, "%s: not an integer reply (%s)", \
                      #call, res.reply.type == STROPS_R_ERROR ? res.reply.str : "?"); \
        ck_assert_int_eq(st_, HKV_OK);                                  \
        ck_assert_int_eq(res.reply.integer, (want));                    \
    } while (0)

#define CK_BULK(call, lit)                                              \
    do {                                                                \
        hkv_status st_ = (call);                                        \
        ck_assert_msg(res.reply.type == STROPS_R_BULK, "%s: not a bulk reply (%s)", \
                      #call, res.reply.type == STROPS_R_ERROR ? res.reply.str : "?"); \
        ck_assert_int_eq(st_, HKV_OK);                                  \
        ck_assert_uint_eq(res.reply.len, sizeof(lit) - 1);              \
        ck_assert_mem_eq(res.reply.str, (lit), sizeof(lit) - 1);        \
    } while (0)

#define CK_ERR(call, want_st, text)                                     \
    do {                                                                \
        hkv_status st_ = (call);                                        \
        ck_assert_int_eq(st_, (want_st));                               \
        ck_assert_int_eq(res.reply.type, STROPS_R_ERROR);               \
        ck_assert_str_eq(res.reply.str, (text));                        \
        ck_assert_uint_eq(res.reply.len, strlen(text));                 \
        ck_assert_int_eq(res.store, 0);                                 \
    } while (0)

#define CK_STORED(lit)                                                  \
    do {                                                                \
        ck_assert_int_eq(res.store, 1);                                 \
        ck_assert_uint_eq(res.value_len, sizeof(lit) - 1);              \
        ck_assert_mem_eq(res.value, (lit), sizeof(lit) - 1);            \
    } while (0)

#define CK_KEY(lit)                                                     \
    do {                                                                \
        ck_assert_int_eq(kpresent, 1);                                  \
        ck_assert_uint_eq(klen, sizeof(lit) - 1);                       \
        ck_assert_mem_eq(kdata, (lit), sizeof(lit) - 1);                \
    } while (0)

#define E_INT     "ERR value is not an integer or out of range"
#define E_SYNTAX  "ERR syntax error"
#define E_TOOLONG "ERR string exceeds maximum allowed size (proto-max-bulk-len)"

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

/* ---- SETBIT / GETBIT ----------------------------------------------------- */

START_TEST(setbit_replies_old_bit_and_grows)
{
    CK_INT(strops_setbit(&env, key(), A("7"), A("1"), &res), 0);
    CK_STORED("\x01");
    keep();
    CK_INT(strops_setbit(&env, key(), A("7"), A("1"), &res), 1);
    ck_assert_int_eq(res.store, 0);       /* nothing changed */
    CK_INT(strops_setbit(&env, key(), A("7"), A("0"), &res), 1);
    CK_STORED("\x00");
    keep();
    CK_INT(strops_setbit(&env, key(), A("100"), A("0"), &res), 0);
    ck_assert_int_eq(res.store, 1);       /* grown to 13 bytes: STRLEN b -> 13 */
    ck_assert_uint_eq(res.value_len, 13);
    /* a zero bit on an absent key still creates it: GET nb -> "\x00" */
    CK_INT(strops_setbit(&env, NULL, A("3"), A("0"), &res), 0);
    CK_STORED("\x00");
    KEY_SET("12345");
    CK_INT(strops_setbit(&env, key(), A("0"), A("1"), &res), 0);
    CK_STORED("\xb1" "2345");
}
END_TEST

START_TEST(setbit_errors)
{
    const char *ebit = "ERR bit is not an integer or out of range";
    const char *eoff = "ERR bit offset is not an integer or out of range";
    static const char *badbit[] = { "2", "-1", "x", " 1", "01", "9223372036854775808" };
    for (size_t i = 0; i < sizeof(badbit) / sizeof(badbit[0]); i++) {
        struct resp_slice a = { badbit[i], strlen(badbit[i]) };
        CK_ERR(strops_setbit(&env, NULL, A("0"), &a, &res), HKV_EINVAL, ebit);
    }
    CK_ERR(strops_setbit(&env, NULL, A("-1"), A("1"), &res), HKV_EINVAL, eoff);
    CK_ERR(strops_setbit(&env, NULL, A("x"), A("1"), &res), HKV_EINVAL, eoff);
    CK_ERR(strops_setbit(&env, NULL, A("+1"), A("1"), &res), HKV_EINVAL, eoff);
    /* the offset is checked first */
    CK_ERR(strops_setbit(&env, NULL, A("x"), A("2"), &res), HKV_EINVAL, eoff);
    /* 512 MB: bit 4294967295 is the last one */
    CK_ERR(strops_setbit(&env, NULL, A("4294967296"), A("0"), &res), HKV_ETOOBIG, eoff);
    CK_ERR(strops_setbit(&env, NULL, A("4294967296"), A("2"), &res), HKV_ETOOBIG, eoff);
    CK_ERR(strops_getbit(&env, NULL, A("4294967296"), &res), HKV_ETOOBIG, eoff);
    CK_INT(strops_getbit(&env, NULL, A("4294967295"), &res), 0);
    CK_ERR(strops_getbit(&env, NULL, A("x"), &res), HKV_EINVAL, eoff);
    CK_ERR(strops_getbit(&env, NULL, A("-1"), &res), HKV_EINVAL, eoff);
}
END_TEST

START_TEST(setbit_limit_is_the_parameter)
{
    env.max_len = MB;
    CK_INT(strops_setbit(&env, NULL, A("8388607"), A("1"), &res), 0);
    ck_assert_int_eq(res.store, 1);
    ck_assert_uint_eq(res.value_len, MB);
    ck_assert_int_eq((unsigned char)res.value[MB - 1], 0x01);
    CK_ERR(strops_setbit(&env, NULL, A("8388608"), A("1"), &res), HKV_ETOOBIG,
           "ERR bit offset is not an integer or out of range");
    CK_ERR(strops_getbit(&env, NULL, A("8388608"), &res), HKV_ETOOBIG,
           "ERR bit offset is not an integer or out of range");
    CK_INT(strops_getbit(&env, NULL, A("8388607"), &res), 0);
}
END_TEST

START_TEST(getbit_reads_bits_msb_first)
{
    KEY_SET("\xff\xf0\x00");
    CK_INT(strops_getbit(&env, key(), A("0"), &res), 1);
    CK_INT(strops_getbit(&env, key(), A("11"), &res), 1);
    CK_INT(strops_getbit(&env, key(), A("12"), &res), 0);
    CK_INT(strops_getbit(&env, key(), A("23"), &res), 0);
    CK_INT(strops_getbit(&env, key(), A("24"), &res), 0);
    CK_INT(strops_getbit(&env, key(), A("1000000"), &res), 0);
    CK_INT(strops_getbit(&env, NULL, A("3"), &res), 0);
    ck_assert_int_eq(res.store, 0);
}
END_TEST

/* ---- BITCOUNT ------------------------------------------------------------ */

static hkv_status bitcount(const struct resp_slice *cur, const char *line)
{
    struct resp_slice a[8];
    int n = split(line, a, 8);
    return strops_bitcount(&env, cur, a, n, &res);
}

START_TEST(bitcount_ranges_in_bytes_and_bits)
{
    KEY_SET("\xff\xf0\x00");
    struct { const char *args; int64_t want; } c[] = {
        { "", 12 }, { "0 0", 8 }, { "1 1", 4 }, { "1 -1", 4 }, { "0 -1 bit", 12 },
        { "5 12 bit", 7 }, { "5 12 BIT", 7 }, { "5 12 byte", 0 },
        { "-1 -2 foo", 0 },           /* empty negative range answered before BIT|BYTE */
        { "-100 100", 12 }, { "-100 -100", 8 }, { "2 1", 0 }, { "3 5", 0 },
        { "0 -100", 8 }, { "0 -100 bit", 1 },
        { "-9223372036854775808 9223372036854775807", 12 },
        { "-9223372036854775808 9223372036854775807 bit", 12 },
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        hkv_status st = bitcount(key(), c[i].args);
        ck_assert_msg(st == HKV_OK && res.reply.type == STROPS_R_INT &&
                      res.reply.integer == c[i].want,
                      "BITCOUNT s %s: st %d, got %lld, want %lld", c[i].args, st,
                      (long long)res.reply.integer, (long long)c[i].want);
    }
    KEY_SET("\xff\xff\xff");
    CK_INT(bitcount(key(), "-100 -200"), 0);
    KEY_SET("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00");
    CK_INT(bitcount(key(), "3 165 bit"), 157);
}
END_TEST

START_TEST(bitcount_absent_empty_and_errors)
{
    /* an absent key answers 0 before its arguments are read */
    CK_INT(bitcount(NULL, ""), 0);
    CK_INT(bitcount(NULL, "x"), 0);
    CK_INT(bitcount(NULL, "1 2 3 4 5"), 0);
    KEY_SET("");
    CK_INT(bitcount(key(), ""), 0);
    CK_INT(bitcount(key(), "0 -1"), 0);
    CK_INT(bitcount(key(), "0 -1 bit"), 0);
    KEY_SET("\xff\xf0\x00");
    CK_ERR(bitcount(key(), "5 12 foo"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(bitcount(key(), "-5 -2 foo"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(bitcount(key(), "1"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(bitcount(key(), "1 2 bit x"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(bitcount(key(), "x 2"), HKV_EINVAL, E_INT);
    CK_ERR(bitcount(key(), "1 x"), HKV_EINVAL, E_INT);
    CK_ERR(bitcount(key(), "x y foo"), HKV_EINVAL, E_INT);
}
END_TEST

/* ---- BITPOS -------------------------------------------------------------- */

static hkv_status bitpos(const struct resp_slice *cur, const char *line)
{
    struct resp_slice a[8];
    int n = split(line, a, 8);
    return strops_bitpos(&env, cur, a, n, &res);
}

struct bitpos_case {
    const char *args;
    int64_t want;
};

static void bitpos_table(const struct bitpos_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        hkv_status st = bitpos(key(), c[i].args);
        ck_assert_msg(st == HKV_OK && res.reply.type == STROPS_R_INT &&
                      res.reply.integer == c[i].want,
                      "BITPOS %s: st %d, got %lld, want %lld", c[i].args, st,
                      (long long)res.reply.integer, (long long)c[i].want);
    }
}

START_TEST(bitpos_zero_without_end_finds_the_bit_after_the_string)
{
    KEY_SET("\xff\xff\xff");
    static const struct bitpos_case c[] = {
        { "0", 24 }, { "1", 0 }, { "0 0", 24 }, { "0 1", 24 }, { "0 -1", 24 },
        { "0 0 -1", -1 },             /* an explicit end: no padding */
        { "0 5", -1 },                /* start past the end: empty range */
        { "0 0 -1 bit", -1 }, { "0 3 10 bit", -1 },
        { "1 -100 -200", 0 },         /* both clamp to byte 0 (BITCOUNT says 0 here) */
        { "0 -100 -200", -1 },
        { "0 -9223372036854775808 9223372036854775807", -1 },
        { "0 -9223372036854775808", 24 },
    };
    bitpos_table(c, sizeof(c) / sizeof(c[0]));
    KEY_SET("\xff");
    static const struct bitpos_case one[] = {
        { "0 0 0", -1 }, { "0 0", 8 }, { "0 3 -1 bit", -1 }, { "0 3 7 bit", -1 },
        { "1 3 7 bit", 3 },
    };
    bitpos_table(one, sizeof(one) / sizeof(one[0]));
}
END_TEST

START_TEST(bitpos_searches_ranges)
{
    KEY_SET("\x00\x00\x00");
    static const struct bitpos_case z[] = {
        { "1", -1 }, { "0", 0 }, { "1 0 -1", -1 }, { "1 0 -1 bit", -1 }, { "0 5 -1 bit", 5 },
    };
    bitpos_table(z, sizeof(z) / sizeof(z[0]));
    KEY_SET("\x00\xff\xf0");
    static const struct bitpos_case s[] = {
        { "1", 8 }, { "0", 0 }, { "1 2", 16 }, { "0 1", 20 }, { "0 1 -1", 20 },
        { "0 1 1", -1 }, { "1 7 15 bit", 8 }, { "0 8 19 bit", -1 }, { "0 8 20 bit", 20 },
        { "0 8 -1 bit", 20 }, { "1 -1 -1", 16 }, { "1 -1 -2", -1 }, { "1 2 1", -1 },
        { "1 -9223372036854775808 9223372036854775807 bit", 8 },
    };
    bitpos_table(s, sizeof(s) / sizeof(s[0]));
    /* long runs: the word-at-a-time skip and the edge bytes */
    KEY_SET("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00");
    static const struct bitpos_case w[] = {
        { "0", 160 }, { "0 0 -2", -1 }, { "0 0 -2 byte", -1 }, { "1 19 20", 152 },
        { "0 3 165 bit", 160 }, { "0 3 159 bit", -1 },
    };
    bitpos_table(w, sizeof(w) / sizeof(w[0]));
    KEY_SET("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10");
    static const struct bitpos_case t[] = {
        { "1", 155 }, { "1 1 -1 bit", 155 }, { "1 0 150 bit", -1 }, { "0 8 -1 bit", 8 },
    };
    bitpos_table(t, sizeof(t) / sizeof(t[0]));
}
END_TEST

START_TEST(bitpos_absent_empty_and_errors)
{
    CK_INT(bitpos(NULL, "0"), 0);
    CK_INT(bitpos(NULL, "1"), -1);
    CK_INT(bitpos(NULL, "0 x y z w"), 0);    /* range not read for an absent key */
    CK_ERR(bitpos(NULL, "2"), HKV_EINVAL, "ERR The bit argument must be 1 or 0.");
    CK_ERR(bitpos(NULL, "x"), HKV_EINVAL, E_INT);
    KEY_SET("");
    CK_INT(bitpos(key(), "0"), -1);          /* an empty string is not an absent key */
    CK_INT(bitpos(key(), "1"), -1);
    CK_INT(bitpos(key(), "0 0"), -1);
    KEY_SET("\x00\xff\xf0");
    CK_ERR(bitpos(key(), "2"), HKV_EINVAL, "ERR The bit argument must be 1 or 0.");
    CK_ERR(bitpos(key(), "-1"), HKV_EINVAL, "ERR The bit argument must be 1 or 0.");
    CK_ERR(bitpos(key(), "x"), HKV_EINVAL, E_INT);
    CK_ERR(bitpos(key(), "01"), HKV_EINVAL, E_INT);
    CK_ERR(bitpos(key(), "1 x"), HKV_EINVAL, E_INT);
    CK_ERR(bitpos(key(), "1 0 x"), HKV_EINVAL, E_INT);
    CK_ERR(bitpos(key(), "1 0 1 foo"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(bitpos(key(), "1 0 1 bit extra"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(bitpos(key(), "1 x 1 foo"), HKV_EINVAL, E_INT);
    CK_ERR(bitpos(key(), "1 0 x foo"), HKV_EINVAL, E_SYNTAX);   /* BIT|BYTE before end */
    KEY_SET("\xff\xff\xff");
    CK_ERR(bitpos(key(), "0 3 bit"), HKV_EINVAL, E_INT);        /* "bit" read as the end */
    CK_ERR(strops_bitpos(&env, key(), NULL, 0, &res), HKV_EINVAL,
           "ERR wrong number of arguments for 'bitpos' command");
}
END_TEST

/* ---- LCS ----------------------------------------------------------------- */

static hkv_status lcs(const struct resp_slice *a, const struct resp_slice *b, const char *line)
{
    struct resp_slice args[8];
    int n = split(line, args, 8);
    return strops_lcs(&env, a, b, args, n, &res);
}

static void ck_match(size_t i, uint32_t as, uint32_t ae, uint32_t bs, uint32_t be)
{
    ck_assert_uint_lt(i, res.reply.nmatches);
    const struct strops_match *m = &res.reply.matches[i];
    ck_assert_msg(m->a_start == as && m->a_end == ae && m->b_start == bs && m->b_end == be &&
                  m->len == ae - as + 1,
                  "match %zu: [[%u,%u],[%u,%u],%u]", i, m->a_start, m->a_end, m->b_start,
                  m->b_end, m->len);
}

START_TEST(lcs_string_len_and_idx)
{
    const struct resp_slice *a = A("ohmytext"), *b = A("mynewtext");
    CK_BULK(lcs(a, b, ""), "mytext");
    CK_INT(lcs(a, b, "len"), 6);
    CK_INT(lcs(a, b, "LEN"), 6);
    CK_INT(lcs(a, b, "len len"), 6);
    CK_BULK(lcs(a, b, "withmatchlen"), "mytext");     /* ignored without IDX */
    CK_BULK(lcs(a, b, "minmatchlen 3"), "mytext");

    ck_assert_int_eq(lcs(a, b, "idx"), HKV_OK);
    ck_assert_int_eq(res.reply.type, STROPS_R_LCS_IDX);
    ck_assert_int_eq(res.reply.integer, 6);
    ck_assert_int_eq(res.reply.withmatchlen, 0);
    ck_assert_uint_eq(res.reply.nmatches, 2);
    ck_match(0, 4, 7, 5, 8);
    ck_match(1, 2, 3, 0, 1);

    ck_assert_int_eq(lcs(a, b, "idx minmatchlen 4 withmatchlen"), HKV_OK);
    ck_assert_int_eq(res.reply.withmatchlen, 1);
    ck_assert_uint_eq(res.reply.nmatches, 1);
    ck_match(0, 4, 7, 5, 8);
    ck_assert_int_eq(res.reply.integer, 6);            /* len is the whole LCS's */

    ck_assert_int_eq(lcs(a, b, "minmatchlen -5 idx"), HKV_OK);   /* negative = 0 */
    ck_assert_uint_eq(res.reply.nmatches, 2);
    ck_assert_int_eq(lcs(a, b, "IdX MinMatchLen 2 WithMatchLen"), HKV_OK);
    ck_assert_uint_eq(res.reply.nmatches, 2);
    ck_assert_int_eq(res.reply.withmatchlen, 1);

    ck_assert_int_eq(lcs(a, a, "idx withmatchlen"), HKV_OK);
    ck_assert_uint_eq(res.reply.nmatches, 1);
    ck_match(0, 0, 7, 0, 7);
    ck_assert_int_eq(res.reply.integer, 8);
    ck_assert_int_eq(res.store, 0);
}
END_TEST

START_TEST(lcs_absent_keys_are_empty_strings)
{
    CK_BULK(lcs(A("ohmytext"), NULL, ""), "");
    CK_INT(lcs(NULL, NULL, "len"), 0);
    ck_assert_int_eq(lcs(NULL, NULL, "idx"), HKV_OK);
    ck_assert_int_eq(res.reply.type, STROPS_R_LCS_IDX);
    ck_assert_uint_eq(res.reply.nmatches, 0);
    ck_assert_int_eq(res.reply.integer, 0);
}
END_TEST

START_TEST(lcs_option_errors_in_redis_order)
{
    const struct resp_slice *a = A("ohmytext"), *b = A("mynewtext");
    const char *both = "ERR If you want both the length and indexes, please just use IDX.";
    CK_ERR(lcs(a, b, "len idx"), HKV_EINVAL, both);
    CK_ERR(lcs(a, b, "idx len"), HKV_EINVAL, both);
    CK_ERR(lcs(a, b, "foo"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(lcs(a, b, "minmatchlen"), HKV_EINVAL, E_SYNTAX);   /* no value: not an option */
    CK_ERR(lcs(a, b, "minmatchlen x"), HKV_EINVAL, E_INT);
    CK_ERR(lcs(a, b, "len minmatchlen x"), HKV_EINVAL, E_INT);
    CK_ERR(lcs(a, b, "foo minmatchlen x"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(lcs(a, b, "minmatchlen x foo"), HKV_EINVAL, E_INT);
    CK_ERR(lcs(a, b, "len idx foo"), HKV_EINVAL, E_SYNTAX);   /* options before the clash */
    CK_ERR(lcs(a, b, "minmatchlen 9223372036854775808"), HKV_EINVAL, E_INT);
}
END_TEST

START_TEST(lcs_table_bounded_by_proto_max_bulk_len)
{
    env.max_len = MB;
    char sa[512], sb[511];
    memset(sa, 'a', sizeof(sa));
    memset(sb, 'b', sizeof(sb));
    struct resp_slice a511 = { sa, 511 }, a512 = { sa, 512 }, b511 = { sb, 511 };
    const char *toobig =
        "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";
    CK_INT(lcs(&a511, &b511, "len"), 0);             /* 512 * 512 * 4 = 1 MB: fits */
    CK_BULK(lcs(&a511, &b511, ""), "");
    CK_ERR(lcs(&a512, &b511, "len"), HKV_ETOOBIG, toobig);
    CK_ERR(lcs(&a512, &b511, ""), HKV_ETOOBIG, toobig);
    CK_BULK(lcs(&a512, NULL, ""), "");
    /* LEN needs two rows, not the table */
    buf_deinit(&work);
    CK_INT(lcs(&a511, &a511, "len"), 511);
    ck_assert_uint_lt(work.cap, 64 * 1024);
}
END_TEST

/* The walk back follows Redis's tie rule; these answers came from 7.0.15. */
START_TEST(lcs_ties_resolved_as_redis)
{
    CK_BULK(lcs(A("abcbdab"), A("bdcaba"), ""), "bdab");
    ck_assert_int_eq(lcs(A("abcbdab"), A("bdcaba"), "idx withmatchlen"), HKV_OK);
    ck_assert_uint_eq(res.reply.nmatches, 2);
    ck_match(0, 5, 6, 3, 4);
    ck_match(1, 3, 4, 0, 1);
    ck_assert_int_eq(res.reply.integer, 4);
    CK_BULK(lcs(A("abab"), A("baba"), ""), "bab");
    ck_assert_int_eq(lcs(A("abab"), A("baba"), "idx withmatchlen"), HKV_OK);
    ck_assert_uint_eq(res.reply.nmatches, 1);
    ck_match(0, 1, 3, 0, 2);
}
END_TEST

/* ---- reply encoding ------------------------------------------------------ */

static void ck_encoded(int proto, const char *want)
{
    struct hkv_buf out = HKV_BUF_INIT;
    ck_assert_int_eq(strops_reply_encode(&out, proto, &res.reply), HKV_OK);
    ck_assert_msg(out.len == strlen(want) && memcmp(out.data, want, out.len) == 0,
                  "encoded '%.*s', want '%s'", (int)out.len, out.data, want);
    buf_deinit(&out);
}

START_TEST(replies_encode_as_redis_writes_them)
{
    const struct resp_slice *a = A("ohmytext"), *b = A("mynewtext");
    lcs(a, b, "idx withmatchlen");
    const char *body =
        "$7\r\nmatches\r\n*2\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n"
        "*3\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n:2\r\n$3\r\nlen\r\n:6\r\n";
    char want[256];
    snprintf(want, sizeof(want), "*4\r\n%s", body);
    ck_encoded(2, want);
    snprintf(want, sizeof(want), "%%2\r\n%s", body);
    ck_encoded(3, want);
    lcs(a, b, "idx minmatchlen 3");
    ck_encoded(2, "*4\r\n$7\r\nmatches\r\n*1\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n"
                  "$3\r\nlen\r\n:6\r\n");
    ck_encoded(3, "%2\r\n$7\r\nmatches\r\n*1\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n"
                  "$3\r\nlen\r\n:6\r\n");
    lcs(a, b, "");
    ck_encoded(3, "$6\r\nmytext\r\n");
    strops_getrange(&env, NULL, A("0"), A("-1"), &res);
    ck_encoded(2, "$0\r\n\r\n");
    strops_incrbyfloat(&env, NULL, A("nan"), &res);
    ck_encoded(3, "-ERR value is not a valid float\r\n");
    lcs(a, b, "len");
    ck_encoded(2, ":6\r\n");
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
        { "setbit_getbit", { setbit_replies_old_bit_and_grows, setbit_errors,
                             setbit_limit_is_the_parameter, getbit_reads_bits_msb_first } },
        { "bitcount", { bitcount_ranges_in_bytes_and_bits, bitcount_absent_empty_and_errors } },
        { "bitpos", { bitpos_zero_without_end_finds_the_bit_after_the_string,
                      bitpos_searches_ranges, bitpos_absent_empty_and_errors } },
        { "lcs", { lcs_string_len_and_idx, lcs_absent_keys_are_empty_strings,
                   lcs_option_errors_in_redis_order, lcs_table_bounded_by_proto_max_bulk_len,
                   lcs_ties_resolved_as_redis } },
        { "encode", { replies_encode_as_redis_writes_them } },
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
