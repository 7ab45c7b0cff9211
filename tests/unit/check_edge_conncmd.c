/* check_edge_conncmd.c - the connection's own commands at the edge
 * (server/edge/edge_cmd.h: PING ECHO SELECT HELLO QUIT RESET TIME, and
 * CLIENT's ID GETNAME SETNAME) in this process (edge_fixture.h): their
 * replies and errors in Redis's words, HELLO's switch to RESP3 (and what a
 * nil looks like after it), HELLO's AUTH and SETNAME, QUIT's close, and
 * RESET's return to a fresh session. */
#include "server/core/clock.h"
#include "tests/unit/edge_fixture.h"

static void owner(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    if (m->type == WIRE_STATS)
        wire_put_stats_reply(&b, m->id, NULL, 0);
    else if (m->type == WIRE_GET)
        wire_put_notfound(&b, m->id, 0);
    if (buf_unread(&b) > 0)
        fo_reply(fc, &b);
    buf_deinit(&b);
}

static void setup(void)
{
    ef_setup(1, owner, NULL);
}

static void users(struct cfg *cfg)
{
    static const char text[] = "user default on nopass ~* +@all\nuser u on >pw ~* +@all\n";
    struct cfg_error err;
    ck_assert_msg(cfg_load_text(cfg, text, sizeof(text) - 1, "test", &err) == HKV_OK, "%s",
                  err.msg);
}

static void setup_users(void)
{
    ef_setup(1, owner, users);
}

static void teardown(void)
{
    ef_teardown();
}

/* Whatever arrives on fd until it has been quiet for 50 ms (at most ms). */
static size_t read_all(int fd, char *buf, size_t cap, int ms)
{
    size_t have = 0;
    int64_t end = h_now_ms() + ms, quiet = 0;
    while (h_now_ms() < end && have < cap - 1) {
        ef_turn();
        ssize_t n = read(fd, buf + have, cap - 1 - have);
        if (n > 0) {
            have += (size_t)n;
            quiet = 0;
        } else {
            if (have > 0 && ++quiet >= 50)
                break;
            h_sleep_ms(1);
        }
    }
    buf[have] = '\0';
    return have;
}

START_TEST(ping_and_echo)
{
    int fd = ef_client();
    ef_call(fd, "+PONG\r\n", "PING", NULL);
    ef_call(fd, "$5\r\nhello\r\n", "PING", "hello", NULL);
    ef_call(fd, "-ERR wrong number of arguments for 'ping' command\r\n", "PING", "a", "b", NULL);
    ef_call(fd, "$3\r\nabc\r\n", "ECHO", "abc", NULL);
    ef_call(fd, "$0\r\n\r\n", "ECHO", "", NULL);
    ef_call(fd, "-ERR wrong number of arguments for 'echo' command\r\n", "ECHO", NULL);
}
END_TEST

START_TEST(select_takes_only_database_0)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "SELECT", "0", NULL);
    ef_call(fd, "-ERR DB index is out of range\r\n", "SELECT", "1", NULL);
    ef_call(fd, "-ERR value is not an integer or out of range\r\n", "SELECT", "zero", NULL);
}
END_TEST

START_TEST(time_is_seconds_and_microseconds_of_now)
{
    int fd = ef_client();
    ef_cmd(fd, "TIME", NULL);
    char buf[128];
    read_all(fd, buf, sizeof(buf), 2000);
    long long s = 0, us = -1;
    int l1 = 0, l2 = 0;
    ck_assert_int_eq(sscanf(buf, "*2\r\n$%d\r\n%lld\r\n$%d\r\n%lld\r\n", &l1, &s, &l2, &us), 4);
    long long now = clock_unix_ms() / 1000;
    ck_assert_int_le(s, now);
    ck_assert_int_ge(s, now - 5);
    ck_assert_int_ge(us, 0);
    ck_assert_int_lt(us, 1000000);
}
END_TEST

START_TEST(hello_3_switches_the_connection_to_resp3)
{
    int fd = ef_client();
    ef_call(fd, "$-1\r\n", "GET", "nokey", NULL); /* RESP2's nil */
    ef_cmd(fd, "HELLO", "3", NULL);
    char buf[1024];
    read_all(fd, buf, sizeof(buf), 2000);
    ck_assert_msg(strncmp(buf, "%7\r\n$6\r\nserver\r\n$6\r\nhotkvd\r\n", 28) == 0, "got [%s]",
                  buf);
    ck_assert_ptr_nonnull(strstr(buf, "$5\r\nproto\r\n:3\r\n"));
    ck_assert_ptr_nonnull(strstr(buf, "$4\r\nmode\r\n$10\r\nstandalone\r\n"));
    ef_call(fd, "_\r\n", "GET", "nokey", NULL); /* RESP3's null */
    ef_cmd(fd, "HELLO", "2", NULL);
    read_all(fd, buf, sizeof(buf), 2000);
    ck_assert_msg(strncmp(buf, "*14\r\n", 5) == 0, "got [%s]", buf); /* a map as a flat array */
    ck_assert_ptr_nonnull(strstr(buf, "$5\r\nproto\r\n:2\r\n"));
    ef_call(fd, "$-1\r\n", "GET", "nokey", NULL);
}
END_TEST

START_TEST(hello_refuses_versions_it_does_not_speak)
{
    int fd = ef_client();
    ef_call(fd, "-NOPROTO unsupported protocol version\r\n", "HELLO", "4", NULL);
    ef_call(fd, "-NOPROTO unsupported protocol version\r\n", "HELLO", "1", NULL);
    ef_call(fd, "-ERR Protocol version is not an integer or out of range\r\n", "HELLO", "x",
            NULL);
    ef_call(fd, "$-1\r\n", "GET", "nokey", NULL); /* still RESP2 */
}
END_TEST

START_TEST(hello_setname_names_the_client)
{
    int fd = ef_client();
    char buf[1024];
    ef_cmd(fd, "HELLO", "2", "SETNAME", "worker-7", NULL);
    read_all(fd, buf, sizeof(buf), 2000);
    ck_assert_msg(strncmp(buf, "*14\r\n", 5) == 0, "got [%s]", buf);
    ef_call(fd, "$8\r\nworker-7\r\n", "CLIENT", "GETNAME", NULL);
    ef_call(fd, "-ERR Syntax error in HELLO option 'bogus'\r\n", "HELLO", "2", "bogus", NULL);
}
END_TEST

START_TEST(hello_auth_logs_in_or_refuses)
{
    int fd = ef_client();
    char buf[1024];
    ef_call(fd, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "HELLO",
            "3", "AUTH", "u", "wrong", NULL);
    ef_call(fd, "$-1\r\n", "GET", "nokey", NULL); /* refused: RESP2 still */
    ef_cmd(fd, "HELLO", "3", "AUTH", "u", "pw", NULL);
    read_all(fd, buf, sizeof(buf), 2000);
    ck_assert_msg(strncmp(buf, "%7\r\n", 4) == 0, "got [%s]", buf);
    ef_call(fd, "_\r\n", "GET", "nokey", NULL);
}
END_TEST

START_TEST(client_id_getname_setname)
{
    int a = ef_client(), b = ef_client();
    char ida[64], idb[64];
    ef_cmd(a, "CLIENT", "ID", NULL);
    read_all(a, ida, sizeof(ida), 2000);
    ef_cmd(b, "CLIENT", "ID", NULL);
    read_all(b, idb, sizeof(idb), 2000);
    long long x = 0, y = 0;
    ck_assert_int_eq(sscanf(ida, ":%lld", &x), 1);
    ck_assert_int_eq(sscanf(idb, ":%lld", &y), 1);
    ck_assert_int_gt(x, 0);
    ck_assert_int_ne(x, y); /* every client its own id */
    ef_call(a, "$-1\r\n", "CLIENT", "GETNAME", NULL);
    ef_call(a, "+OK\r\n", "CLIENT", "SETNAME", "alpha", NULL);
    ef_call(a, "$5\r\nalpha\r\n", "CLIENT", "GETNAME", NULL);
    ef_call(b, "$-1\r\n", "CLIENT", "GETNAME", NULL); /* not b's */
    ef_call(a, "-ERR Client names cannot contain spaces, newlines or special characters.\r\n",
            "CLIENT", "SETNAME", "has space", NULL);
    ef_call(a, "$5\r\nalpha\r\n", "CLIENT", "GETNAME", NULL);
    ef_call(a, "+OK\r\n", "CLIENT", "SETNAME", "", NULL); /* empty clears it */
    ef_call(a, "$-1\r\n", "CLIENT", "GETNAME", NULL);
}
END_TEST

START_TEST(quit_answers_ok_and_closes)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "QUIT", NULL);
    char c;
    ssize_t n = -1;
    for (int i = 0; i < 2000 && n != 0; i++) {
        ef_turn();
        n = read(fd, &c, 1);
        if (n != 0)
            h_sleep_ms(1);
    }
    ck_assert_int_eq(n, 0); /* EOF: the edge closed it */
    ck_assert_ptr_null(F.e.conns->list);
}
END_TEST

START_TEST(reset_returns_to_a_fresh_session)
{
    int fd = ef_client();
    char buf[1024];
    ef_cmd(fd, "HELLO", "3", "SETNAME", "n1", NULL);
    read_all(fd, buf, sizeof(buf), 2000);
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+RESET\r\n", "RESET", NULL);
    ef_call(fd, "$-1\r\n", "GET", "nokey", NULL);       /* RESP2 again */
    ef_call(fd, "$-1\r\n", "CLIENT", "GETNAME", NULL);  /* no name */
    ef_call(fd, "-ERR EXEC without MULTI\r\n", "EXEC", NULL);
}
END_TEST

Suite *edge_conncmd_suite(void)
{
    Suite *s = suite_create("edge_conncmd");
    TCase *tc = tcase_create("commands");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, ping_and_echo);
    tcase_add_test(tc, select_takes_only_database_0);
    tcase_add_test(tc, time_is_seconds_and_microseconds_of_now);
    tcase_add_test(tc, hello_3_switches_the_connection_to_resp3);
    tcase_add_test(tc, hello_refuses_versions_it_does_not_speak);
    tcase_add_test(tc, hello_setname_names_the_client);
    tcase_add_test(tc, client_id_getname_setname);
    tcase_add_test(tc, quit_answers_ok_and_closes);
    tcase_add_test(tc, reset_returns_to_a_fresh_session);
    suite_add_tcase(s, tc);
    tc = tcase_create("users");
    tcase_add_checked_fixture(tc, setup_users, teardown);
    tcase_add_test(tc, hello_auth_logs_in_or_refuses);
    suite_add_tcase(s, tc);
    return s;
}
