/*
 * check_etag.c - the versioned commands' reply shapes (proto/etag.h): the
 * pairs and nils of RESP2 and RESP3, and what is not one of them.
 */
#include <check.h>
#include <string.h>

#include "proto/etag.h"

static enum etag_reply parse(const char *s, int64_t *etag, int *has)
{
    return etag_reply_parse(s, strlen(s), etag, has);
}

START_TEST(pairs_and_nils)
{
    int64_t e = 0;
    int has = -1;
    ck_assert_int_eq(parse("*2\r\n:386511311493662721\r\n$-1\r\n", &e, &has), ETAG_REPLY_PAIR);
    ck_assert_int_eq(e, 386511311493662721LL);
    ck_assert_int_eq(has, 0);
    ck_assert_int_eq(parse("*2\r\n:7\r\n_\r\n", &e, &has), ETAG_REPLY_PAIR); /* RESP3 */
    ck_assert_int_eq(e, 7);
    ck_assert_int_eq(parse("*2\r\n:9\r\n$3\r\na\r\n\r\n", &e, &has), ETAG_REPLY_PAIR);
    ck_assert_int_eq(e, 9);
    ck_assert_int_eq(has, 1); /* a value holding CRLF */
    ck_assert_int_eq(parse("*2\r\n:9\r\n$0\r\n\r\n", &e, &has), ETAG_REPLY_PAIR);
    ck_assert_int_eq(has, 1);
    ck_assert_int_eq(parse("$-1\r\n", &e, &has), ETAG_REPLY_NIL);
    ck_assert_int_eq(parse("_\r\n", &e, &has), ETAG_REPLY_NIL);
    ck_assert_int_eq(parse("*-1\r\n", &e, &has), ETAG_REPLY_NIL);
}
END_TEST

START_TEST(anything_else_is_bad)
{
    int64_t e;
    int has;
    const char *bad[] = {
        "",
        "-ERR syntax error\r\n",
        "+OK\r\n",
        "*2\r\n:x\r\n$-1\r\n",
        "*2\r\n:1\r\n$5\r\nab\r\n",      /* short bulk */
        "*2\r\n:1\r\n$1\r\nab\r\n",      /* long bulk */
        "*2\r\n:1\r\n$-1\r\nextra",      /* trailing bytes */
        "$-1\r\n$-1\r\n",
        "*3\r\n:1\r\n$-1\r\n$-1\r\n",
        "*2\r\n:1\r\n",                  /* incomplete */
        "*2\r\n:1\r\n$-2\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(parse(bad[i], &e, &has) == ETAG_REPLY_BAD, "accepted %s", bad[i]);
}
END_TEST

Suite *etag_suite(void)
{
    Suite *s = suite_create("etag");
    TCase *tc = tcase_create("etag");
    tcase_add_test(tc, pairs_and_nils);
    tcase_add_test(tc, anything_else_is_bad);
    suite_add_tcase(s, tc);
    return s;
}
