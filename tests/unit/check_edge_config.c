/* check_edge_config.c - CONFIG at the edge (server/edge/edge_config.h) in
 * this process (edge_fixture.h): GET by name (echoed as asked, once) and by
 * glob, from the live config; SET's refusals, all decided at the edge before
 * the master is asked (unknown names, restart-only and secret directives,
 * values that do not parse, a name given twice, an odd word count), in
 * Redis's words; REWRITE not supported. */
#include "tests/unit/edge_fixture.h"

static void owner(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    if (m->type == WIRE_STATS)
        wire_put_stats_reply(&b, m->id, NULL, 0);
    if (buf_unread(&b) > 0)
        fo_reply(fc, &b);
    buf_deinit(&b);
}

static void opts(struct cfg *cfg)
{
    struct cfg_error err;
    ck_assert_int_eq(cfg_set(cfg, "maxclients", "321", &err), HKV_OK);
}

static void setup(void)
{
    ef_setup(1, owner, opts);
}

static void teardown(void)
{
    ef_teardown();
}

/* Whatever arrives on fd until quiet for 50 ms. */
static void read_all(int fd, char *buf, size_t cap)
{
    size_t have = 0;
    int quiet = 0;
    int64_t end = h_now_ms() + 3000;
    while (h_now_ms() < end && have < cap - 1 && quiet < 50) {
        ef_turn();
        ssize_t n = read(fd, buf + have, cap - 1 - have);
        if (n > 0) {
            have += (size_t)n;
            quiet = 0;
        } else {
            quiet += have > 0;
            h_sleep_ms(1);
        }
    }
    buf[have] = '\0';
}

START_TEST(get_by_name_reads_the_live_config)
{
    int fd = ef_client();
    ef_call(fd, "*2\r\n$10\r\nmaxclients\r\n$3\r\n321\r\n", "CONFIG", "GET", "maxclients", NULL);
    /* the name as it was asked */
    ef_call(fd, "*2\r\n$10\r\nMaxClients\r\n$3\r\n321\r\n", "CONFIG", "GET", "MaxClients", NULL);
    /* twice asked, once answered; unknown names are left out */
    ef_call(fd, "*2\r\n$10\r\nmaxclients\r\n$3\r\n321\r\n", "CONFIG", "GET", "maxclients",
            "maxclients", "no-such-thing", NULL);
    ef_call(fd, "*0\r\n", "CONFIG", "GET", "no-such-thing", NULL);
}
END_TEST

START_TEST(get_by_glob_lists_every_match)
{
    int fd = ef_client();
    char buf[2048];
    ef_cmd(fd, "CONFIG", "GET", "multi-max-*", NULL);
    read_all(fd, buf, sizeof(buf));
    ck_assert_msg(strncmp(buf, "*4\r\n", 4) == 0, "got [%s]", buf);
    ck_assert_ptr_nonnull(strstr(buf, "$18\r\nmulti-max-commands\r\n"));
    ck_assert_ptr_nonnull(strstr(buf, "$15\r\nmulti-max-bytes\r\n"));
    /* a name matched by two globs comes once */
    ef_cmd(fd, "CONFIG", "GET", "maxclient?", "max*ients", NULL);
    read_all(fd, buf, sizeof(buf));
    ck_assert_str_eq(buf, "*2\r\n$10\r\nmaxclients\r\n$3\r\n321\r\n");
}
END_TEST

START_TEST(set_refuses_an_unknown_name)
{
    int fd = ef_client();
    ef_call(fd, "-ERR Unknown option or number of arguments for CONFIG SET - 'no-such-thing'\r\n",
            "CONFIG", "SET", "no-such-thing", "1", NULL);
    /* too few words: the pipeline's arity check of config|set */
    ef_call(fd, "-ERR wrong number of arguments for 'config|set' command\r\n", "CONFIG", "SET",
            "maxclients", NULL);
    ef_call(fd, "-ERR syntax error\r\n", "CONFIG", "SET", "maxclients", "5", "timeout", NULL);
}
END_TEST

static void expect_set_failed(int fd, const char *name, const char *value)
{
    char buf[512], want[160];
    ef_cmd(fd, "CONFIG", "SET", name, value, NULL);
    read_all(fd, buf, sizeof(buf));
    snprintf(want, sizeof(want), "-ERR CONFIG SET failed (possibly related to argument '%s') - ",
             name);
    ck_assert_msg(strncmp(buf, want, strlen(want)) == 0, "got [%s]", buf);
    ck_assert_msg(strlen(buf) > strlen(want) + 2, "no reason in [%s]", buf);
}

START_TEST(set_refuses_what_cannot_change_at_runtime)
{
    int fd = ef_client();
    expect_set_failed(fd, "port", "7000");        /* restart-only */
    expect_set_failed(fd, "dir", "/tmp");         /* a path */
    expect_set_failed(fd, "requirepass", "x");    /* a secret */
    expect_set_failed(fd, "maxclients", "many");  /* does not parse */
    expect_set_failed(fd, "maxclients", "0");     /* out of range */
    /* nothing changed */
    ef_call(fd, "*2\r\n$10\r\nmaxclients\r\n$3\r\n321\r\n", "CONFIG", "GET", "maxclients", NULL);
}
END_TEST

START_TEST(set_refuses_a_name_given_twice)
{
    int fd = ef_client();
    /* the second, as it was spelt */
    ef_call(fd, "-ERR CONFIG SET failed (possibly related to argument 'MAXCLIENTS') - duplicate "
                "parameter\r\n", "CONFIG", "SET", "maxclients", "5", "MAXCLIENTS", "6", NULL);
    ef_call(fd, "*2\r\n$10\r\nmaxclients\r\n$3\r\n321\r\n", "CONFIG", "GET", "maxclients", NULL);
}
END_TEST

START_TEST(rewrite_is_not_supported)
{
    int fd = ef_client();
    char buf[512];
    ef_cmd(fd, "CONFIG", "REWRITE", NULL);
    read_all(fd, buf, sizeof(buf));
    ck_assert_msg(strncmp(buf, "-ERR CONFIG REWRITE is not supported by hotkvd", 46) == 0,
                  "got [%s]", buf);
    ef_cmd(fd, "CONFIG", "HELP", NULL);
    read_all(fd, buf, sizeof(buf));
    ck_assert_msg(buf[0] == '*' && strstr(buf, "GET <pattern>") != NULL, "got [%s]", buf);
}
END_TEST

Suite *edge_config_suite(void)
{
    Suite *s = suite_create("edge_config");
    TCase *tc = tcase_create("config");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, get_by_name_reads_the_live_config);
    tcase_add_test(tc, get_by_glob_lists_every_match);
    tcase_add_test(tc, set_refuses_an_unknown_name);
    tcase_add_test(tc, set_refuses_what_cannot_change_at_runtime);
    tcase_add_test(tc, set_refuses_a_name_given_twice);
    tcase_add_test(tc, rewrite_is_not_supported);
    suite_add_tcase(s, tc);
    return s;
}
