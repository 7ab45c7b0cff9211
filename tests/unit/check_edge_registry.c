/* check_edge_registry.c - the edge's command registry and its dispatch
 * pipeline (server/edge/edge_registry.h) in this process (edge_fixture.h):
 * lookup -> arity -> auth gate -> rate gate -> handler, each failed step an
 * error reply that never reaches the handler (the scripted owner counts what
 * reaches it), in Redis's order (an unknown command or a wrong arity is
 * answered before the auth gate); the unknown-command and unknown-
 * subcommand texts; the counters each outcome leaves (commands processed,
 * commandstats calls and rejected, errorstats); the ACL's command and key
 * checks; a MONITOR client kept off the keyspace; and COMMAND, which
 * describes what the table serves. */
#include <strings.h>

#include "server/edge/edge_stats.h"
#include "tests/unit/edge_fixture.h"

static struct {
    int gets, sets;
} O;

static void owner(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    if (m->type == WIRE_STATS) {
        wire_put_stats_reply(&b, m->id, NULL, 0);
    } else if (m->type == WIRE_GET) {
        O.gets++;
        char v[80];
        int n = snprintf(v, sizeof(v), "v:%.*s", (int)m->u.get.keys[0].len, m->u.get.keys[0].p);
        wire_put_value(&b, m->id, wire_slice(v, (size_t)n), 1, 0);
    } else if (m->type == WIRE_SET) {
        O.sets++;
        wire_put_ok(&b, m->id, (hkv_stamp)(10 + O.sets), true, NULL);
    }
    if (buf_unread(&b) > 0)
        fo_reply(fc, &b);
    buf_deinit(&b);
}

static void users(struct cfg *cfg)
{
    static const char text[] = "user default on >secret ~* +@all\n"
                               "user reader on >rpw ~app:* +@read\n"
                               "user nobody off >npw ~* +@all\n";
    struct cfg_error err;
    ck_assert_msg(cfg_load_text(cfg, text, sizeof(text) - 1, "test", &err) == HKV_OK, "%s",
                  err.msg);
}

static void setup(void)
{
    memset(&O, 0, sizeof(O));
    ef_setup(1, owner, NULL);
}

static void setup_users(void)
{
    memset(&O, 0, sizeof(O));
    ef_setup(1, owner, users);
}

static void teardown(void)
{
    ef_teardown();
}

static uint64_t processed(void)
{
    return atomic_load(&ef_stats()->total_commands_processed);
}

static uint64_t calls(enum cmd_id id)
{
    return atomic_load(&ef_stats()->cmdstats[id].calls);
}

static uint64_t rejected(enum cmd_id id)
{
    return atomic_load(&ef_stats()->cmdstats[id].rejected);
}

/* The errorstats count of prefix (0 if not tracked). */
static uint64_t errors_of(const char *prefix)
{
    struct board_slot *s = ef_stats();
    uint32_t n = atomic_load(&s->errstats_n);
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(s->errstats[i].prefix, prefix) == 0)
            return atomic_load(&s->errstats[i].count);
    return 0;
}

/* ---- the table ---------------------------------------------------------------- */

START_TEST(every_row_is_the_command_of_its_id)
{
    int served = 0;
    for (int i = 0; i < CMD_COUNT; i++) {
        const struct cmd_def *d = cmd_get((enum cmd_id)i);
        ck_assert_ptr_nonnull(d);
        ck_assert_int_eq(d->id, i);
        if (edge_commands[i].handler == NULL)
            continue;
        served++;
        /* the row's name is the id's; the lookup by name finds the same row */
        const struct cmd_def *byname = cmd_lookup(d->name, strlen(d->name));
        ck_assert_ptr_eq(byname, d);
        ck_assert_int_ge(edge_commands[i].family, EDGE_FAM_CONN);
        ck_assert_int_le(edge_commands[i].family, EDGE_FAM_THROTTLE);
    }
    ck_assert_int_gt(served, 40);
}
END_TEST

START_TEST(lookup_ignores_case)
{
    int fd = ef_client();
    ef_call(fd, "+PONG\r\n", "ping", NULL);
    ef_call(fd, "+PONG\r\n", "PiNg", NULL);
    ef_call(fd, "$3\r\nabc\r\n", "eChO", "abc", NULL);
    ck_assert_uint_eq(processed(), 3);
}
END_TEST

/* ---- what never reaches a handler -------------------------------------------------- */

START_TEST(an_unknown_command_is_named_with_its_first_arguments)
{
    int fd = ef_client();
    ef_call(fd, "-ERR unknown command 'FROB', with args beginning with: \r\n", "FROB", NULL);
    ef_call(fd, "-ERR unknown command 'frob', with args beginning with: 'a' 'b c' \r\n", "frob",
            "a", "b c", NULL);
    ck_assert_uint_eq(processed(), 2);
    ck_assert_uint_eq(atomic_load(&ef_stats()->total_error_replies), 2);
    ck_assert_uint_eq(errors_of("ERR"), 2);
}
END_TEST

START_TEST(an_unknown_commands_text_is_cut_at_128_bytes)
{
    int fd = ef_client();
    char name[201], arg[201];
    memset(name, 'n', 200);
    name[200] = '\0';
    memset(arg, 'a', 200);
    arg[200] = '\0';
    char want[512];
    snprintf(want, sizeof(want),
             "-ERR unknown command '%.128s', with args beginning with: '%.128s' \r\n", name, arg);
    ef_call(fd, want, name, arg, "more", NULL); /* the list is full after the first */
}
END_TEST

START_TEST(an_unknown_subcommand_names_its_container)
{
    int fd = ef_client();
    ef_call(fd, "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n", "CLIENT", "FOO", NULL);
    ef_call(fd, "-ERR unknown subcommand 'bar'. Try CONFIG HELP.\r\n", "config", "bar", NULL);
    ck_assert_uint_eq(errors_of("ERR"), 2);
}
END_TEST

START_TEST(a_wrong_arity_is_refused_and_counted_as_rejected)
{
    int fd = ef_client();
    ef_call(fd, "-ERR wrong number of arguments for 'get' command\r\n", "GET", NULL);
    ef_call(fd, "-ERR wrong number of arguments for 'get' command\r\n", "GET", "a", "b", NULL);
    ef_call(fd, "-ERR wrong number of arguments for 'set' command\r\n", "SET", "a", NULL);
    ck_assert_int_eq(O.gets + O.sets, 0); /* no owner was asked */
    ck_assert_uint_eq(rejected(CMD_GET), 2);
    ck_assert_uint_eq(rejected(CMD_SET), 1);
    ck_assert_uint_eq(calls(CMD_GET), 0);
    ck_assert_uint_eq(processed(), 3);
}
END_TEST

START_TEST(a_subcommands_arity_is_its_own)
{
    int fd = ef_client();
    ef_call(fd, "-ERR wrong number of arguments for 'client|setname' command\r\n", "CLIENT",
            "SETNAME", NULL);
    ef_call(fd, "+OK\r\n", "CLIENT", "SETNAME", "me", NULL);
    ef_call(fd, "$2\r\nme\r\n", "CLIENT", "GETNAME", NULL);
}
END_TEST

/* ---- the handler runs ---------------------------------------------------------------- */

START_TEST(a_command_that_runs_is_counted_in_its_commandstats)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "SET", "k", "v", NULL);
    ef_call(fd, "$3\r\nv:x\r\n", "GET", "x", NULL);
    ef_call(fd, "+PONG\r\n", "PING", NULL);
    ck_assert_int_eq(O.sets, 1);
    ck_assert_int_eq(O.gets, 1);
    ck_assert_uint_eq(calls(CMD_SET), 1);
    ck_assert_uint_eq(calls(CMD_GET), 1);
    ck_assert_uint_eq(calls(CMD_PING), 1);
    ck_assert_uint_eq(rejected(CMD_GET), 0);
    ck_assert_uint_eq(processed(), 3);
    ck_assert_uint_eq(atomic_load(&ef_stats()->total_error_replies), 0);
}
END_TEST

START_TEST(a_pipeline_is_answered_in_order)
{
    int fd = ef_client();
    ef_cmd(fd, "GET", "a", NULL);
    ef_cmd(fd, "NOPE", NULL);
    ef_cmd(fd, "PING", NULL);
    ef_cmd(fd, "GET", NULL);
    ef_cmd(fd, "GET", "b", NULL);
    ef_expect(fd, "$3\r\nv:a\r\n"
                  "-ERR unknown command 'NOPE', with args beginning with: \r\n"
                  "+PONG\r\n"
                  "-ERR wrong number of arguments for 'get' command\r\n"
                  "$3\r\nv:b\r\n");
}
END_TEST

/* ---- the auth gate ----------------------------------------------------------------- */

START_TEST(without_auth_only_noauth_commands_run)
{
    int fd = ef_client();
    ef_call(fd, "-NOAUTH Authentication required.\r\n", "GET", "a", NULL);
    ef_call(fd, "-NOAUTH Authentication required.\r\n", "SET", "a", "1", NULL);
    ef_call(fd, "+PONG\r\n", "PING", NULL);
    ck_assert_int_eq(O.gets + O.sets, 0);
    ck_assert_uint_eq(rejected(CMD_GET), 1);
    ck_assert_uint_eq(errors_of("NOAUTH"), 2);
}
END_TEST

START_TEST(unknown_commands_and_arity_are_answered_before_the_auth_gate)
{
    int fd = ef_client();
    ef_call(fd, "-ERR unknown command 'NOPE', with args beginning with: \r\n", "NOPE", NULL);
    ef_call(fd, "-ERR wrong number of arguments for 'get' command\r\n", "GET", NULL);
}
END_TEST

START_TEST(auth_opens_the_gate)
{
    int fd = ef_client();
    ef_call(fd, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH",
            "nope", NULL);
    ck_assert_uint_eq(atomic_load(&ef_stats()->auth_failures), 1);
    ef_call(fd, "-NOAUTH Authentication required.\r\n", "GET", "a", NULL);
    ef_call(fd, "+OK\r\n", "AUTH", "secret", NULL);
    ef_call(fd, "$3\r\nv:a\r\n", "GET", "a", NULL);
    ck_assert_int_eq(O.gets, 1);
}
END_TEST

START_TEST(a_disabled_user_cannot_log_in)
{
    int fd = ef_client();
    ef_call(fd, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH",
            "nobody", "npw", NULL);
    ef_call(fd, "-NOAUTH Authentication required.\r\n", "GET", "a", NULL);
}
END_TEST

START_TEST(the_acl_checks_the_command_and_its_keys)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "AUTH", "reader", "rpw", NULL);
    ef_call(fd, "$7\r\nv:app:1\r\n", "GET", "app:1", NULL);
    ef_call(fd, "-NOPERM User reader has no permissions to run the 'set' command\r\n", "SET",
            "app:1", "x", NULL);
    ef_call(fd, "-NOPERM No permissions to access a key\r\n", "GET", "other", NULL);
    ck_assert_int_eq(O.gets, 1);
    ck_assert_int_eq(O.sets, 0);
    ck_assert_uint_eq(rejected(CMD_SET), 1);
    ck_assert_uint_eq(rejected(CMD_GET), 1);
    ck_assert_uint_eq(calls(CMD_GET), 1);
    ck_assert_uint_eq(errors_of("NOPERM"), 2);
}
END_TEST

/* ---- MONITOR and COMMAND ---------------------------------------------------------------- */

START_TEST(a_monitor_client_is_kept_off_the_keyspace)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MONITOR", NULL);
    ef_call(fd, "-ERR Replica can't interact with the keyspace\r\n", "GET", "a", NULL);
    ck_assert_int_eq(O.gets, 0);
}
END_TEST

START_TEST(command_count_is_the_rows_served)
{
    int served = 0;
    for (int i = 0; i < CMD_COUNT; i++)
        served += edge_commands[i].handler != NULL;
    char want[32];
    snprintf(want, sizeof(want), ":%d\r\n", served);
    int fd = ef_client();
    ef_call(fd, want, "COMMAND", "COUNT", NULL);
}
END_TEST

START_TEST(command_getkeys_follows_the_commands_key_positions)
{
    int fd = ef_client();
    ef_call(fd, "*1\r\n$1\r\nk\r\n", "COMMAND", "GETKEYS", "SET", "k", "v", NULL);
    ef_call(fd, "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", "COMMAND", "GETKEYS", "MGET", "a", "b",
            "c", NULL);
    ef_call(fd, "*2\r\n$1\r\na\r\n$1\r\nc\r\n", "COMMAND", "GETKEYS", "MSET", "a", "1", "c", "2",
            NULL);
    ef_call(fd, "-ERR The command has no key arguments\r\n", "COMMAND", "GETKEYS", "PING", "x",
            NULL);
    ef_call(fd, "-ERR Invalid command specified\r\n", "COMMAND", "GETKEYS", "NOPE", "x", NULL);
    ef_call(fd, "-ERR Invalid number of arguments specified for command\r\n", "COMMAND",
            "GETKEYS", "SET", "k", NULL);
}
END_TEST

START_TEST(command_info_of_an_unknown_name_is_nil)
{
    int fd = ef_client();
    ef_call(fd, "*1\r\n$-1\r\n", "COMMAND", "INFO", "nope", NULL); /* RESP2's null */
    ef_call(fd, "-ERR unknown subcommand 'FROB'. Try COMMAND HELP.\r\n", "COMMAND", "FROB", NULL);
}
END_TEST

START_TEST(command_list_filters_by_pattern)
{
    int fd = ef_client();
    ef_call(fd, "*1\r\n$4\r\nping\r\n", "COMMAND", "LIST", "FILTERBY", "PATTERN", "pin?", NULL);
    ef_call(fd, "-ERR syntax error\r\n", "COMMAND", "LIST", "FILTERBY", "NOPE", "x", NULL);
}
END_TEST

Suite *edge_registry_suite(void)
{
    Suite *s = suite_create("edge_registry");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, every_row_is_the_command_of_its_id);
    suite_add_tcase(s, tc);
    tc = tcase_create("pipeline");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, lookup_ignores_case);
    tcase_add_test(tc, an_unknown_command_is_named_with_its_first_arguments);
    tcase_add_test(tc, an_unknown_commands_text_is_cut_at_128_bytes);
    tcase_add_test(tc, an_unknown_subcommand_names_its_container);
    tcase_add_test(tc, a_wrong_arity_is_refused_and_counted_as_rejected);
    tcase_add_test(tc, a_subcommands_arity_is_its_own);
    tcase_add_test(tc, a_command_that_runs_is_counted_in_its_commandstats);
    tcase_add_test(tc, a_pipeline_is_answered_in_order);
    tcase_add_test(tc, a_monitor_client_is_kept_off_the_keyspace);
    suite_add_tcase(s, tc);
    tc = tcase_create("auth");
    tcase_add_checked_fixture(tc, setup_users, teardown);
    tcase_add_test(tc, without_auth_only_noauth_commands_run);
    tcase_add_test(tc, unknown_commands_and_arity_are_answered_before_the_auth_gate);
    tcase_add_test(tc, auth_opens_the_gate);
    tcase_add_test(tc, a_disabled_user_cannot_log_in);
    tcase_add_test(tc, the_acl_checks_the_command_and_its_keys);
    suite_add_tcase(s, tc);
    tc = tcase_create("COMMAND");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, command_count_is_the_rows_served);
    tcase_add_test(tc, command_getkeys_follows_the_commands_key_positions);
    tcase_add_test(tc, command_info_of_an_unknown_name_is_nil);
    tcase_add_test(tc, command_list_filters_by_pattern);
    suite_add_tcase(s, tc);
    return s;
}
