/*
 * check_edge_pure.c - the edge's stateless pieces, each as Redis has it:
 * argument words and integers (edge_arg.h, Redis's strcasecmp and
 * string2ll), the container commands' subcommands and the one index space
 * of command stat ids (edge_subcmd.h), and the one-key reads' replies
 * (edge_render.h's read_render: GET, STRLEN, TYPE, TTL/PTTL, EXISTS).
 * Everything else in the edge calls these; a change in one shows up here
 * before it shows up as a client's wrong reply.
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "proto/buf.h"
#include "proto/cmd.h"
#include "proto/resp.h"
#include "server/core/clock.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_render.h"
#include "server/edge/edge_subcmd.h"

static struct resp_slice word(const char *s)
{
    return (struct resp_slice){.p = s, .len = strlen(s)};
}

/* ---- edge_arg ------------------------------------------------------------------- */

START_TEST(a_word_is_compared_without_case_and_whole)
{
    struct resp_slice w = word("NoDe");
    ck_assert_int_eq(edge_arg_is(&w, "node"), 1);
    ck_assert_int_eq(edge_arg_is(&w, "NODE"), 1);
    ck_assert_int_eq(edge_arg_is(&w, "nod"), 0);   /* a prefix is not the word */
    ck_assert_int_eq(edge_arg_is(&w, "nodes"), 0); /* nor a longer one */
    struct resp_slice empty = {.p = "", .len = 0};
    ck_assert_int_eq(edge_arg_is(&empty, ""), 1);
    ck_assert_int_eq(edge_arg_is(&empty, "x"), 0);
    /* a word with a NUL inside is its whole length, not a C string */
    struct resp_slice nul = {.p = "ex\0x", .len = 4};
    ck_assert_int_eq(edge_arg_is(&nul, "ex"), 0);
}
END_TEST

START_TEST(an_integer_is_read_as_redis_string2ll)
{
    static const struct {
        const char *s;
        int ok;
        long long v;
    } cases[] = {
        {"0", 1, 0},
        {"-0", 0, 0}, /* string2ll refuses "-0" */
        {"42", 1, 42},
        {"-42", 1, -42},
        {"9223372036854775807", 1, LLONG_MAX},
        {"-9223372036854775808", 1, LLONG_MIN},
        {"9223372036854775808", 0, 0}, /* one past the top */
        {"-9223372036854775809", 0, 0},
        {"007", 0, 0}, /* no leading zeros */
        {"+1", 0, 0},  /* no plus sign */
        {" 1", 0, 0},  /* no spaces */
        {"1 ", 0, 0},
        {"1.5", 0, 0},
        {"", 0, 0},
        {"-", 0, 0},
        {"12a", 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct resp_slice w = word(cases[i].s);
        long long v = 12345;
        int rc = edge_arg_ll(&w, &v);
        ck_assert_msg((rc == 0) == cases[i].ok, "'%s': rc %d", cases[i].s, rc);
        if (cases[i].ok)
            ck_assert_msg(v == cases[i].v, "'%s' read as %lld", cases[i].s, v);
        else
            ck_assert_msg(v == 12345, "'%s' refused but *out changed to %lld", cases[i].s, v);
    }
}
END_TEST

/* ---- edge_subcmd ------------------------------------------------------------------ */

START_TEST(only_the_three_containers_take_subcommands)
{
    ck_assert_int_eq(subcmd_is_container(CMD_CLIENT), 1);
    ck_assert_int_eq(subcmd_is_container(CMD_CONFIG), 1);
    ck_assert_int_eq(subcmd_is_container(CMD_COMMAND), 1);
    ck_assert_int_eq(subcmd_is_container(CMD_GET), 0);
    ck_assert_int_eq(subcmd_is_container(CMD_SET), 0);
}
END_TEST

START_TEST(a_subcommand_is_found_in_its_container_only_and_without_case)
{
    struct resp_slice w = word("SetName");
    const struct edge_subcmd *s = subcmd_lookup(CMD_CLIENT, &w);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s->fullname, "client|setname");
    ck_assert_int_eq(s->arity, 3); /* Redis 7.0: CLIENT SETNAME name */
    ck_assert_int_eq(s->parent, CMD_CLIENT);
    ck_assert_ptr_null(subcmd_lookup(CMD_CONFIG, &w)); /* not CONFIG's */
    struct resp_slice get = word("get");
    const struct edge_subcmd *g = subcmd_lookup(CMD_CONFIG, &get);
    ck_assert_ptr_nonnull(g);
    ck_assert_str_eq(g->fullname, "config|get");
    ck_assert_int_eq(g->arity, -3);
    struct resp_slice nope = word("frobnicate");
    ck_assert_ptr_null(subcmd_lookup(CMD_CLIENT, &nope));
    struct resp_slice prefix = word("setnam");
    ck_assert_ptr_null(subcmd_lookup(CMD_CLIENT, &prefix));
}
END_TEST

START_TEST(every_stat_id_names_one_command_or_subcommand)
{
    /* commands first, by cmd_id: the id's name is the command's */
    for (unsigned i = 0; i < CMD_COUNT; i++) {
        const char *n = subcmd_stat_name(i);
        ck_assert_ptr_nonnull(n);
        ck_assert_str_eq(n, cmd_get((enum cmd_id)i)->name);
    }
    /* then each subcommand at CMD_COUNT + its index, "parent|name" */
    ck_assert_uint_le(CMD_COUNT + edge_nsubcmds, EDGE_STAT_IDS);
    for (size_t i = 0; i < edge_nsubcmds; i++) {
        const struct edge_subcmd *s = &edge_subcmds[i];
        ck_assert_uint_eq(subcmd_stat_id(s), CMD_COUNT + i);
        ck_assert_str_eq(subcmd_stat_name(subcmd_stat_id(s)), s->fullname);
        char want[64];
        snprintf(want, sizeof(want), "%s|%s", cmd_get(s->parent)->name, s->name);
        ck_assert_str_eq(s->fullname, want);
        ck_assert_int_eq(subcmd_is_container(s->parent), 1);
        /* the lookup by its own name finds this row */
        struct resp_slice w = word(s->name);
        ck_assert_ptr_eq(subcmd_lookup(s->parent, &w), s);
    }
    ck_assert_ptr_null(subcmd_stat_name(CMD_COUNT + (unsigned)edge_nsubcmds + 1000));
}
END_TEST

/* ---- edge_render ------------------------------------------------------------------- */

static char rendered[256];

static const char *render(enum cmd_id cmd, int proto, int found, const char *v,
                          int64_t expire_at)
{
    struct hkv_buf b = HKV_BUF_INIT;
    read_render(cmd, proto, &b, found, v, v != NULL ? strlen(v) : 0, expire_at);
    size_t n = b.len - b.off < sizeof(rendered) - 1 ? b.len - b.off : sizeof(rendered) - 1;
    memcpy(rendered, b.data + b.off, n);
    rendered[n] = '\0';
    buf_deinit(&b);
    return rendered;
}

START_TEST(get_answers_the_value_or_the_protocols_null)
{
    ck_assert_str_eq(render(CMD_GET, 2, 1, "hello", 0), "$5\r\nhello\r\n");
    ck_assert_str_eq(render(CMD_GET, 2, 0, NULL, 0), "$-1\r\n");
    ck_assert_str_eq(render(CMD_GET, 3, 0, NULL, 0), "_\r\n");
    ck_assert_str_eq(render(CMD_GET, 2, 1, "", 0), "$0\r\n\r\n");
    /* GETEX without options reads like GET */
    ck_assert_str_eq(render(CMD_GETEX, 3, 1, "v", 0), "$1\r\nv\r\n");
}
END_TEST

START_TEST(strlen_type_and_exists_from_what_was_found)
{
    ck_assert_str_eq(render(CMD_STRLEN, 2, 1, "hello", 0), ":5\r\n");
    ck_assert_str_eq(render(CMD_STRLEN, 2, 0, NULL, 0), ":0\r\n");
    ck_assert_str_eq(render(CMD_TYPE, 2, 1, "x", 0), "+string\r\n");
    ck_assert_str_eq(render(CMD_TYPE, 3, 0, NULL, 0), "+none\r\n");
    ck_assert_str_eq(render(CMD_EXISTS, 2, 1, "x", 0), ":1\r\n");
    ck_assert_str_eq(render(CMD_EXISTS, 2, 0, NULL, 0), ":0\r\n");
}
END_TEST

START_TEST(ttl_and_pttl_as_redis_counts_them)
{
    /* no key: -2; a key without expiry: -1 */
    ck_assert_str_eq(render(CMD_TTL, 2, 0, NULL, 0), ":-2\r\n");
    ck_assert_str_eq(render(CMD_PTTL, 2, 0, NULL, 0), ":-2\r\n");
    ck_assert_str_eq(render(CMD_TTL, 2, 1, "v", 0), ":-1\r\n");
    ck_assert_str_eq(render(CMD_PTTL, 2, 1, "v", 0), ":-1\r\n");
    /* an expiry already passed (the owner has not reaped it yet): 0, not
     * negative, which a client would read as "no expiry" */
    int64_t now = clock_unix_ms();
    ck_assert_str_eq(render(CMD_PTTL, 2, 1, "v", now - 5000), ":0\r\n");
    ck_assert_str_eq(render(CMD_TTL, 2, 1, "v", now - 5000), ":0\r\n");
    /* 100 s ahead: TTL rounds to the second (Redis: (ms + 500) / 1000),
     * PTTL is the milliseconds left, within what this test's own steps take */
    long long ttl = 0, pttl = 0;
    ck_assert_int_eq(sscanf(render(CMD_TTL, 2, 1, "v", now + 100000), ":%lld", &ttl), 1);
    ck_assert_int_eq(ttl, 100);
    ck_assert_int_eq(sscanf(render(CMD_PTTL, 2, 1, "v", now + 100000), ":%lld", &pttl), 1);
    ck_assert_int_le(pttl, 100000);
    ck_assert_int_gt(pttl, 100000 - 5000);
    /* 1.4 s left reads as 1, 1.6 s as 2 */
    ck_assert_int_eq(sscanf(render(CMD_TTL, 2, 1, "v", clock_unix_ms() + 1400), ":%lld", &ttl),
                     1);
    ck_assert_int_eq(ttl, 1);
    ck_assert_int_eq(sscanf(render(CMD_TTL, 2, 1, "v", clock_unix_ms() + 1800), ":%lld", &ttl),
                     1);
    ck_assert_int_eq(ttl, 2);
}
END_TEST

Suite *edge_pure_suite(void)
{
    Suite *s = suite_create("edge_pure");
    TCase *a = tcase_create("arguments");
    tcase_add_test(a, a_word_is_compared_without_case_and_whole);
    tcase_add_test(a, an_integer_is_read_as_redis_string2ll);
    suite_add_tcase(s, a);
    TCase *sc = tcase_create("subcommands");
    tcase_add_test(sc, only_the_three_containers_take_subcommands);
    tcase_add_test(sc, a_subcommand_is_found_in_its_container_only_and_without_case);
    tcase_add_test(sc, every_stat_id_names_one_command_or_subcommand);
    suite_add_tcase(s, sc);
    TCase *r = tcase_create("one-key replies");
    tcase_add_test(r, get_answers_the_value_or_the_protocols_null);
    tcase_add_test(r, strlen_type_and_exists_from_what_was_found);
    tcase_add_test(r, ttl_and_pttl_as_redis_counts_them);
    suite_add_tcase(s, r);
    return s;
}
