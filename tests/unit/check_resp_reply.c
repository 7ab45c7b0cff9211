/*
 * check_resp_reply.c - proto/resp's other direction: the reply encoders
 * (the forms common to RESP2 and RESP3, and each one's own) byte for byte,
 * and the reply parser the tests and hotkvd-admin read replies with: every
 * type, nested aggregates and attributes, bounded depth and declared
 * counts, malformed replies refused (the request parser: check_resp.c).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/resp.h"

/* ---- encoders ------------------------------------------------------------- */

#define EXPECT_BUF(b, lit)                                          \
    do {                                                            \
        ck_assert_uint_eq(buf_unread(b), sizeof(lit) - 1);          \
        ck_assert_mem_eq(buf_head(b), lit, sizeof(lit) - 1);        \
        buf_reset(b);                                               \
    } while (0)

START_TEST(encoders_common_forms)
{
    struct hkv_buf b = HKV_BUF_INIT;
    resp_add_simple(&b, "OK");
    EXPECT_BUF(&b, "+OK\r\n");
    resp_add_error(&b, "ERR bad\r\nthing\n");
    EXPECT_BUF(&b, "-ERR bad  thing \r\n");
    resp_add_errorf(&b, "ERR %s %d", "x\ry", 7);
    EXPECT_BUF(&b, "-ERR x y 7\r\n");
    char longmsg[600];
    memset(longmsg, 'z', sizeof(longmsg) - 1);
    longmsg[sizeof(longmsg) - 1] = '\0';
    longmsg[300] = '\n';
    resp_add_errorf(&b, "E %s", longmsg);
    ck_assert_uint_eq(buf_unread(&b), 1 + 2 + 599 + 2);
    ck_assert(memchr(buf_head(&b), '\n', buf_unread(&b) - 1) == NULL);
    buf_reset(&b);

    int64_t ints[] = { 0, 7, 10, 99, 100, 12345, -1, -100, INT64_MAX, INT64_MIN };
    const char *texts[] = { ":0\r\n", ":7\r\n", ":10\r\n", ":99\r\n", ":100\r\n", ":12345\r\n",
                            ":-1\r\n", ":-100\r\n", ":9223372036854775807\r\n",
                            ":-9223372036854775808\r\n" };
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        ck_assert_int_eq(resp_add_int(&b, ints[i]), HKV_OK);
        ck_assert_uint_eq(buf_unread(&b), strlen(texts[i]));
        ck_assert_mem_eq(buf_head(&b), texts[i], strlen(texts[i]));
        buf_reset(&b);
    }
    resp_add_bulk(&b, "a\0b", 3);
    EXPECT_BUF(&b, "$3\r\na\0b\r\n");
    resp_add_bulk(&b, "", 0);
    EXPECT_BUF(&b, "$0\r\n\r\n");
    resp_add_bulk_str(&b, "hello");
    EXPECT_BUF(&b, "$5\r\nhello\r\n");
    resp_add_array(&b, 3);
    EXPECT_BUF(&b, "*3\r\n");
    resp_add_attr(&b, 1);
    EXPECT_BUF(&b, "|1\r\n");

    /* An error appended after a partly consumed buffer (reserve compacts). */
    buf_append(&b, "0123456789", 10);
    buf_consume(&b, 8);
    for (int i = 0; i < 30; i++)
        resp_add_error(&b, "ERR a\nb");
    ck_assert_mem_eq(buf_head(&b), "89-ERR a b\r\n-ERR a b\r\n", 22);
    buf_deinit(&b);
}
END_TEST

START_TEST(encoders_resp2_forms)
{
    struct hkv_buf b = HKV_BUF_INIT;
    resp_add_null(&b, 2);
    EXPECT_BUF(&b, "$-1\r\n");
    resp_add_null_array(&b, 2);
    EXPECT_BUF(&b, "*-1\r\n");
    resp_add_map(&b, 2, 3);
    EXPECT_BUF(&b, "*6\r\n");
    resp_add_set(&b, 2, 4);
    EXPECT_BUF(&b, "*4\r\n");
    resp_add_double(&b, 2, 1.5);
    EXPECT_BUF(&b, "$3\r\n1.5\r\n");
    resp_add_double(&b, 2, 0.1);
    EXPECT_BUF(&b, "$19\r\n0.10000000000000001\r\n");
    resp_add_double(&b, 2, INFINITY);
    EXPECT_BUF(&b, "$3\r\ninf\r\n");
    resp_add_double(&b, 2, -INFINITY);
    EXPECT_BUF(&b, "$4\r\n-inf\r\n");
    resp_add_bool(&b, 2, 1);
    EXPECT_BUF(&b, ":1\r\n");
    resp_add_bool(&b, 2, 0);
    EXPECT_BUF(&b, ":0\r\n");
    resp_add_verbatim(&b, 2, "hello", 5);
    EXPECT_BUF(&b, "$5\r\nhello\r\n");
    buf_deinit(&b);
}
END_TEST

START_TEST(encoders_resp3_forms)
{
    struct hkv_buf b = HKV_BUF_INIT;
    resp_add_null(&b, 3);
    EXPECT_BUF(&b, "_\r\n");
    resp_add_null_array(&b, 3);
    EXPECT_BUF(&b, "_\r\n");
    resp_add_map(&b, 3, 3);
    EXPECT_BUF(&b, "%3\r\n");
    resp_add_set(&b, 3, 4);
    EXPECT_BUF(&b, "~4\r\n");
    resp_add_double(&b, 3, 1.5);
    EXPECT_BUF(&b, ",1.5\r\n");
    resp_add_double(&b, 3, -2);
    EXPECT_BUF(&b, ",-2\r\n");
    resp_add_double(&b, 3, INFINITY);
    EXPECT_BUF(&b, ",inf\r\n");
    resp_add_double(&b, 3, -INFINITY);
    EXPECT_BUF(&b, ",-inf\r\n");
    resp_add_double(&b, 3, NAN);
    EXPECT_BUF(&b, ",nan\r\n");
    resp_add_bool(&b, 3, 1);
    EXPECT_BUF(&b, "#t\r\n");
    resp_add_bool(&b, 3, 0);
    EXPECT_BUF(&b, "#f\r\n");
    resp_add_verbatim(&b, 3, "hello", 5);
    EXPECT_BUF(&b, "=9\r\ntxt:hello\r\n");
    buf_deinit(&b);
}
END_TEST

/* ---- reply parser ----------------------------------------------------------- */

static struct resp_value *reply_ok(const char *buf, size_t len)
{
    struct resp_value *v = NULL;
    size_t consumed = 0;
    int rc = resp_parse_reply(buf, len, &consumed, &v);
    ck_assert_msg(rc == HKV_OK, "reply rc %d", rc);
    ck_assert_uint_eq(consumed, len);
    /* Every shorter prefix is incomplete. */
    for (size_t i = 0; i < len; i++) {
        struct resp_value *w = NULL;
        size_t c = 0;
        ck_assert_int_eq(resp_parse_reply(buf, i, &c, &w), HKV_EAGAIN);
        ck_assert_ptr_null(w);
    }
    return v;
}

static int str_is(const struct resp_value *v, const char *s)
{
    return v->len == strlen(s) && memcmp(v->str, s, v->len) == 0;
}

START_TEST(reply_parser_reads_every_type)
{
    struct hkv_buf b = HKV_BUF_INIT;
    resp_add_array(&b, 14);
    resp_add_simple(&b, "OK");
    resp_add_error(&b, "ERR x");
    resp_add_int(&b, -42);
    resp_add_bulk(&b, "a\r\nb", 4);
    resp_add_null(&b, 3);
    resp_add_null(&b, 2);
    resp_add_double(&b, 3, 1.5);
    resp_add_double(&b, 3, -INFINITY);
    resp_add_bool(&b, 3, 1);
    resp_add_verbatim(&b, 3, "some text", 9);
    buf_append_str(&b, "(3492890328409238509324850943850943825024385\r\n");
    buf_append_str(&b, "!21\r\nSYNTAX invalid syntax\r\n");
    resp_add_null_array(&b, 2);
    buf_append_str(&b, ">2\r\n+message\r\n:1\r\n");

    struct resp_value *v = reply_ok(buf_head(&b), buf_unread(&b));
    ck_assert_int_eq(v->type, RESP_ARRAY);
    ck_assert_uint_eq(v->n, 14);
    struct resp_value *e = v->elems;
    ck_assert(e[0].type == RESP_SIMPLE && str_is(&e[0], "OK"));
    ck_assert(e[1].type == RESP_ERROR && str_is(&e[1], "ERR x"));
    ck_assert(e[2].type == RESP_INT && e[2].integer == -42);
    ck_assert(e[3].type == RESP_BULK && e[3].len == 4 && memcmp(e[3].str, "a\r\nb", 4) == 0);
    ck_assert(e[4].type == RESP_NULL && e[5].type == RESP_NULL);
    ck_assert(e[6].type == RESP_DOUBLE && e[6].dbl == 1.5);
    ck_assert(e[7].type == RESP_DOUBLE && isinf(e[7].dbl) && e[7].dbl < 0);
    ck_assert(e[8].type == RESP_BOOL && e[8].integer == 1);
    ck_assert(e[9].type == RESP_VERBATIM && str_is(&e[9], "some text"));
    ck_assert_mem_eq(e[9].str - 4, "txt:", 4);
    ck_assert(e[10].type == RESP_BIGNUM && str_is(&e[10], "3492890328409238509324850943850943825024385"));
    ck_assert(e[11].type == RESP_ERROR && str_is(&e[11], "SYNTAX invalid syntax"));
    ck_assert(e[12].type == RESP_NULL);
    ck_assert(e[13].type == RESP_PUSH && e[13].n == 2 && str_is(&e[13].elems[0], "message"));
    resp_value_free(&v);
    ck_assert_ptr_null(v);
    buf_deinit(&b);
}
END_TEST

START_TEST(reply_parser_nested_aggregates_and_attributes)
{
    struct hkv_buf b = HKV_BUF_INIT;
    /* The RESP3 spec's attribute example, then a map of a set. */
    resp_add_array(&b, 2);
    resp_add_attr(&b, 1);
    resp_add_simple(&b, "key-popularity");
    resp_add_map(&b, 3, 2);
    resp_add_bulk_str(&b, "a");
    resp_add_double(&b, 3, 0.1923);
    resp_add_bulk_str(&b, "b");
    resp_add_double(&b, 3, 0.0012);
    resp_add_array(&b, 2);
    resp_add_int(&b, 2039123);
    resp_add_int(&b, 9543892);
    resp_add_map(&b, 3, 1);
    resp_add_bulk_str(&b, "s");
    resp_add_set(&b, 3, 2);
    resp_add_attr(&b, 1);
    resp_add_simple(&b, "ttl");
    resp_add_int(&b, 3600);
    resp_add_int(&b, 1);
    resp_add_int(&b, 2);

    struct resp_value *v = reply_ok(buf_head(&b), buf_unread(&b));
    ck_assert_int_eq(v->type, RESP_ARRAY);
    ck_assert_ptr_null(v->attr);
    struct resp_value *first = &v->elems[0];
    ck_assert_int_eq(first->type, RESP_ARRAY);
    ck_assert_ptr_nonnull(first->attr);
    ck_assert_int_eq(first->attr->type, RESP_ATTR);
    ck_assert_uint_eq(first->attr->n, 2);
    ck_assert(str_is(&first->attr->elems[0], "key-popularity"));
    struct resp_value *pop = &first->attr->elems[1];
    ck_assert(pop->type == RESP_MAP && pop->n == 4 && pop->elems[3].dbl == 0.0012);
    ck_assert_int_eq(first->elems[1].integer, 9543892);
    struct resp_value *map = &v->elems[1];
    ck_assert(map->type == RESP_MAP && map->n == 2);
    struct resp_value *set = &map->elems[1];
    ck_assert(set->type == RESP_SET && set->n == 2);
    ck_assert(set->elems[0].attr != NULL && set->elems[0].attr->elems[1].integer == 3600);
    ck_assert_int_eq(set->elems[0].integer, 1);
    resp_value_free(&v);

    /* Consecutive attributes chain, nearest first. */
    const char two[] = "|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n+v\r\n";
    v = reply_ok(two, sizeof(two) - 1);
    ck_assert(v->type == RESP_SIMPLE && str_is(v, "v"));
    ck_assert(str_is(&v->attr->elems[0], "b"));
    ck_assert(str_is(&v->attr->attr->elems[0], "a"));
    ck_assert_ptr_null(v->attr->attr->attr);
    resp_value_free(&v);

    /* Pipelined replies: consumed stops after the first. */
    size_t consumed;
    ck_assert_int_eq(resp_parse_reply("+a\r\n:1\r\n", 8, &consumed, &v), HKV_OK);
    ck_assert_uint_eq(consumed, 4);
    resp_value_free(&v);
    buf_deinit(&b);
}
END_TEST

START_TEST(reply_parser_bounds_depth_and_declared_counts)
{
    struct hkv_buf b = HKV_BUF_INIT;
    for (int i = 0; i < RESP_REPLY_MAX_DEPTH; i++)
        resp_add_array(&b, 1);
    resp_add_int(&b, 1);
    struct resp_value *v = NULL;
    size_t consumed;
    ck_assert_int_eq(resp_parse_reply(buf_head(&b), buf_unread(&b), &consumed, &v), HKV_OK);
    resp_value_free(&v);
    buf_reset(&b);
    for (int i = 0; i < RESP_REPLY_MAX_DEPTH + 1; i++)
        resp_add_array(&b, 1);
    resp_add_int(&b, 1);
    ck_assert_int_eq(resp_parse_reply(buf_head(&b), buf_unread(&b), &consumed, &v), HKV_EPROTO);
    ck_assert_ptr_null(v);
    buf_reset(&b);
    /* Attributes nest too. */
    for (int i = 0; i < RESP_REPLY_MAX_DEPTH + 1; i++)
        buf_append_str(&b, "|1\r\n");
    ck_assert_int_eq(resp_parse_reply(buf_head(&b), buf_unread(&b), &consumed, &v), HKV_EAGAIN);
    buf_append_str(&b, "+k\r\n");
    ck_assert_int_eq(resp_parse_reply(buf_head(&b), buf_unread(&b), &consumed, &v), HKV_EPROTO);
    buf_reset(&b);
    /* A long run of empty attributes is iterative, not recursive. */
    for (int i = 0; i < 100000; i++)
        buf_append_str(&b, "|0\r\n");
    buf_append_str(&b, ":5\r\n");
    ck_assert_int_eq(resp_parse_reply(buf_head(&b), buf_unread(&b), &consumed, &v), HKV_OK);
    ck_assert_int_eq(v->integer, 5);
    resp_value_free(&v);
    buf_deinit(&b);

    /* Counts the bytes cannot hold wait instead of allocating. */
    ck_assert_int_eq(resp_parse_reply("*1000000000\r\n:1\r\n", 17, &consumed, &v), HKV_EAGAIN);
    ck_assert_int_eq(resp_parse_reply("%4611686018427387904\r\n", 22, &consumed, &v), HKV_EAGAIN);
    ck_assert_int_eq(resp_parse_reply("$1000000000\r\nab\r\n", 17, &consumed, &v), HKV_EAGAIN);
}
END_TEST

START_TEST(reply_parser_rejects_malformed_replies)
{
    static const char *bad[] = {
        "?1\r\n", "*-2\r\n", "$-2\r\n", "%-1\r\n", ":abc\r\n", ":\r\n", "#x\r\n", "_x\r\n",
        ",\r\n", ",1.5x\r\n", "$3\r\nabcde", "=3\r\nabc\r\n", "+a\rb", "*1\r\n?\r\n",
        ":99999999999999999999\r\n", "*2\r\n:1\r\n*1\r\n$1\r\nab\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct resp_value *v = NULL;
        size_t consumed = 7;
        ck_assert_msg(resp_parse_reply(bad[i], strlen(bad[i]), &consumed, &v) == HKV_EPROTO,
                      "accepted %s", bad[i]);
        ck_assert_ptr_null(v);
        ck_assert_uint_eq(consumed, 0);
    }
}
END_TEST

Suite *resp_reply_suite(void)
{
    Suite *s = suite_create("resp_reply");
    struct {
        const char *name;
        const TTest *tests[4];
    } groups[] = {
        { "encoders", { encoders_common_forms, encoders_resp2_forms, encoders_resp3_forms } },
        { "reply_parser", { reply_parser_reads_every_type,
                            reply_parser_nested_aggregates_and_attributes,
                            reply_parser_bounds_depth_and_declared_counts,
                            reply_parser_rejects_malformed_replies } },
    };
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
        TCase *tc = tcase_create(groups[g].name);
        tcase_set_timeout(tc, 60);
        for (size_t t = 0; t < 4 && groups[g].tests[t] != NULL; t++)
            tcase_add_test(tc, groups[g].tests[t]);
        suite_add_tcase(s, tc);
    }
    return s;
}
