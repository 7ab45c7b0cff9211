/*
 * check_cmd_opts.c - SET's, GETEX's and EXPIRE's option grammar
 * (proto/cmd_opts.h), the one both the edge and the owner read: Redis 7.0's
 * exclusions, its "last expiry wins", its order of checks and its numbers.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "proto/cmd_opts.h"

/* Feeds words (NULL-ended) as options; returns -1 on a syntax error, else 0
 * with *o and the index of the expiry's value word in *expv (-1: none). */
static int feed(const char *const *w, int is_set, struct cmd_xopts *o, int *expv)
{
    int n = 0;
    while (w[n] != NULL)
        n++;
    *o = (struct cmd_xopts){0, 0};
    *expv = -1;
    for (int j = 0; j < n; j++) {
        int rc = cmd_xopts_word(o, w[j], strlen(w[j]), j + 1 < n, is_set);
        if (rc < 0)
            return -1;
        if (rc == 1)
            *expv = ++j;
        else if (rc == 2)
            j++; /* IFEQ's value */
    }
    return 0;
}

#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})

START_TEST(set_options_and_their_exclusions)
{
    struct cmd_xopts o;
    int e;
    ck_assert_int_eq(feed(WORDS("nx", "GET", "ex", "10"), 1, &o, &e), 0);
    ck_assert_uint_eq(o.flags, CMD_OPT_NX | CMD_OPT_GET | CMD_OPT_EX);
    ck_assert_uint_eq(o.unit, CMD_OPT_EX);
    ck_assert_int_eq(e, 3);
    /* a repeated option is fine, the last expiry counts */
    ck_assert_int_eq(feed(WORDS("nx", "nx", "px", "1", "px", "2"), 1, &o, &e), 0);
    ck_assert_int_eq(e, 5);
    ck_assert_uint_eq(o.unit, CMD_OPT_PX);
    ck_assert_int_eq(feed(WORDS("nx", "xx"), 1, &o, &e), -1);
    ck_assert_int_eq(feed(WORDS("ex", "1", "px", "2"), 1, &o, &e), -1);
    ck_assert_int_eq(feed(WORDS("keepttl", "exat", "5"), 1, &o, &e), -1);
    ck_assert_int_eq(feed(WORDS("pxat", "5", "keepttl"), 1, &o, &e), -1);
    ck_assert_int_eq(feed(WORDS("ex"), 1, &o, &e), -1);        /* no value */
    ck_assert_int_eq(feed(WORDS("persist"), 1, &o, &e), -1);   /* GETEX's only */
    ck_assert_int_eq(feed(WORDS("bogus"), 1, &o, &e), -1);
    ck_assert_int_eq(feed(WORDS("KeepTTL", "xx"), 1, &o, &e), 0);
    ck_assert_uint_eq(o.flags, CMD_OPT_KEEPTTL | CMD_OPT_XX);
}
END_TEST

START_TEST(set_ifeq_as_valkey_8_1)
{
    struct cmd_xopts o;
    int e;
    /* IFEQ takes a value (not an expiry) and goes with GET and an expiry */
    ck_assert_int_eq(cmd_xopts_word(&(struct cmd_xopts){0, 0}, "IFEQ", 4, 1, 1), 2);
    ck_assert_int_eq(feed(WORDS("ifeq", "old", "get", "ex", "10"), 1, &o, &e), 0);
    ck_assert_uint_eq(o.flags, CMD_OPT_IFEQ | CMD_OPT_GET | CMD_OPT_EX);
    ck_assert_uint_eq(o.unit, CMD_OPT_EX);
    ck_assert_int_eq(e, 4);
    ck_assert_int_eq(feed(WORDS("ifeq", "ex"), 1, &o, &e), 0); /* "ex" is the value */
    ck_assert_uint_eq(o.unit, 0);
    /* not with NX, XX or a second IFEQ; not without its value; SET's only */
    ck_assert_int_eq(feed(WORDS("ifeq", "a", "nx"), 1, &o, &e), -1);
    ck_assert_int_eq(feed(WORDS("xx", "ifeq", "a"), 1, &o, &e), -1);
    ck_assert_int_eq(feed(WORDS("ifeq", "a", "ifeq", "b"), 1, &o, &e), -1);
    ck_assert_int_eq(feed(WORDS("ifeq"), 1, &o, &e), -1);
    ck_assert_int_eq(feed(WORDS("ifeq", "a"), 0, &o, &e), -1);
}
END_TEST

START_TEST(getex_options)
{
    struct cmd_xopts o;
    int e;
    ck_assert_int_eq(feed(WORDS("persist"), 0, &o, &e), 0);
    ck_assert_uint_eq(o.flags, CMD_OPT_PERSIST);
    ck_assert_int_eq(feed(WORDS("exat", "99"), 0, &o, &e), 0);
    ck_assert_uint_eq(o.unit, CMD_OPT_EXAT);
    ck_assert_int_eq(feed(WORDS("persist", "ex", "1"), 0, &o, &e), -1);
    ck_assert_int_eq(feed(WORDS("nx"), 0, &o, &e), -1);        /* SET's only */
    ck_assert_int_eq(feed(WORDS("get"), 0, &o, &e), -1);
    ck_assert_int_eq(feed(WORDS("keepttl"), 0, &o, &e), -1);
}
END_TEST

/* Redis compares an option as a C string: "nx\0junk" is NX. */
START_TEST(words_compare_as_c_strings)
{
    ck_assert(cmd_opts_is("nx\0junk", 7, "nx"));
    ck_assert(cmd_opts_is("NX", 2, "nx"));
    ck_assert(!cmd_opts_is("nxx", 3, "nx"));
    ck_assert(!cmd_opts_is("", 0, "nx"));
    ck_assert_uint_eq(cmd_expire_word("Gt", 2), CMD_EXPIRE_GT);
    ck_assert_uint_eq(cmd_expire_word("lt\0", 3), CMD_EXPIRE_LT);
    ck_assert_uint_eq(cmd_expire_word("le", 2), 0);
}
END_TEST

START_TEST(expiry_values)
{
    struct cmd_xopts ex = {CMD_OPT_EX, CMD_OPT_EX}, pxat = {CMD_OPT_PXAT, CMD_OPT_PXAT};
    int64_t ms;
    int abs;
    int64_t now = 1700000000000;
    ck_assert_int_eq(cmd_xopts_expiry(&ex, "10", 2, now, &ms, &abs), CMD_OPTS_OK);
    ck_assert_int_eq(ms, 10000);
    ck_assert_int_eq(abs, 0);
    ck_assert_int_eq(cmd_xopts_expiry(&pxat, "5", 1, now, &ms, &abs), CMD_OPTS_OK);
    ck_assert_int_eq(ms, 5);
    ck_assert_int_eq(abs, 1);
    ck_assert_int_eq(cmd_xopts_expiry(&ex, "0", 1, now, &ms, &abs), CMD_OPTS_BAD_TIME);
    ck_assert_int_eq(cmd_xopts_expiry(&ex, "-1", 2, now, &ms, &abs), CMD_OPTS_BAD_TIME);
    ck_assert_int_eq(cmd_xopts_expiry(&ex, "1x", 2, now, &ms, &abs), CMD_OPTS_NOT_INT);
    ck_assert_int_eq(cmd_xopts_expiry(&ex, "+1", 2, now, &ms, &abs), CMD_OPTS_NOT_INT);
    /* seconds that overflow when scaled, ms that overflow when added to now */
    ck_assert_int_eq(cmd_xopts_expiry(&ex, "9223372036854776", 16, now, &ms, &abs),
                     CMD_OPTS_BAD_TIME);
    struct cmd_xopts px = {CMD_OPT_PX, CMD_OPT_PX};
    ck_assert_int_eq(cmd_xopts_expiry(&px, "9223372036854775807", 19, now, &ms, &abs),
                     CMD_OPTS_BAD_TIME);
    /* absolute ones are not added to now: the largest is fine */
    ck_assert_int_eq(cmd_xopts_expiry(&pxat, "9223372036854775807", 19, now, &ms, &abs),
                     CMD_OPTS_OK);
}
END_TEST

START_TEST(expire_flags_and_times)
{
    ck_assert_ptr_null(cmd_expire_conflict(CMD_EXPIRE_XX | CMD_EXPIRE_GT));
    ck_assert_ptr_null(cmd_expire_conflict(CMD_EXPIRE_NX));
    ck_assert_str_eq(cmd_expire_conflict(CMD_EXPIRE_NX | CMD_EXPIRE_LT),
                     "ERR NX and XX, GT or LT options at the same time are not compatible");
    ck_assert_str_eq(cmd_expire_conflict(CMD_EXPIRE_GT | CMD_EXPIRE_LT),
                     "ERR GT and LT options at the same time are not compatible");
    int64_t ms, now = 1700000000000;
    ck_assert_int_eq(cmd_expire_time("-5", 2, 1, 1, now, &ms), CMD_OPTS_OK); /* deletes */
    ck_assert_int_eq(ms, -5000);
    ck_assert_int_eq(cmd_expire_time("x", 1, 1, 1, now, &ms), CMD_OPTS_NOT_INT);
    ck_assert_int_eq(cmd_expire_time("-9223372036854776", 17, 1, 0, now, &ms),
                     CMD_OPTS_BAD_TIME);
    ck_assert_int_eq(cmd_expire_time("9223372036854775807", 19, 0, 1, now, &ms),
                     CMD_OPTS_BAD_TIME);
    ck_assert_int_eq(cmd_expire_time("9223372036854775807", 19, 0, 0, now, &ms), CMD_OPTS_OK);
    /* NX XX GT LT against the current deadline (-1: none, infinite for GT/LT) */
    ck_assert(cmd_expire_applies(0, -1, 5));
    ck_assert(cmd_expire_applies(CMD_EXPIRE_NX, -1, 5));
    ck_assert(!cmd_expire_applies(CMD_EXPIRE_NX, 10, 5));
    ck_assert(!cmd_expire_applies(CMD_EXPIRE_XX, -1, 5));
    ck_assert(cmd_expire_applies(CMD_EXPIRE_XX, 10, 5));
    ck_assert(!cmd_expire_applies(CMD_EXPIRE_GT, -1, 5));
    ck_assert(!cmd_expire_applies(CMD_EXPIRE_GT, 10, 10));
    ck_assert(cmd_expire_applies(CMD_EXPIRE_GT, 10, 11));
    ck_assert(cmd_expire_applies(CMD_EXPIRE_LT, -1, 5));
    ck_assert(!cmd_expire_applies(CMD_EXPIRE_LT, 10, 10));
    ck_assert(cmd_expire_applies(CMD_EXPIRE_XX | CMD_EXPIRE_LT, 10, 9));
}
END_TEST

Suite *cmd_opts_suite(void)
{
    Suite *s = suite_create("cmd_opts");
    TCase *tc = tcase_create("grammar");
    tcase_add_test(tc, set_options_and_their_exclusions);
    tcase_add_test(tc, set_ifeq_as_valkey_8_1);
    tcase_add_test(tc, getex_options);
    tcase_add_test(tc, words_compare_as_c_strings);
    tcase_add_test(tc, expiry_values);
    tcase_add_test(tc, expire_flags_and_times);
    suite_add_tcase(s, tc);
    return s;
}
