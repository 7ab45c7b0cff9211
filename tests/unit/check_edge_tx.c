/* check_edge_tx.c - MULTI/EXEC at the edge (server/edge/edge_tx.h,
 * edge_exec.h) through the real dispatch pipeline, no daemon: an edge in
 * this process (edge_fixture.h), one scripted owner that keeps a version per
 * key and answers EXEC the way the real one does (nil when a watched
 * version changed).  Queueing and its replies, the errors that abort the
 * transaction (EXECABORT), DISCARD, nesting, the bounds
 * (multi-max-commands, multi-max-bytes), the commands a transaction cannot
 * hold, and WATCH: the versions it reads go to the owner with the EXEC, a
 * write in between makes the EXEC nil, UNWATCH and EXEC forget them. */
#include "tests/unit/edge_fixture.h"

#define NKEYS 16

static struct {
    char key[NKEYS][32];
    uint64_t version[NKEYS];
    int nkeys;
    uint64_t next_version;
    /* what the last EXEC carried */
    int execs;
    uint32_t ncmds, nwatch;
    char first_cmd[32];
    uint64_t watched_version[8];
} O;

static uint64_t *version_of(const char *p, size_t n, int make)
{
    for (int i = 0; i < O.nkeys; i++)
        if (strlen(O.key[i]) == n && memcmp(O.key[i], p, n) == 0)
            return &O.version[i];
    if (!make || O.nkeys == NKEYS)
        return NULL;
    snprintf(O.key[O.nkeys], sizeof(O.key[0]), "%.*s", (int)n, p);
    O.version[O.nkeys] = 0;
    return &O.version[O.nkeys++];
}

static void owner(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    if (m->type == WIRE_STATS) {
        wire_put_stats_reply(&b, m->id, NULL, 0);
    } else if (m->type == WIRE_GET) {
        uint64_t *v = version_of(m->u.get.keys[0].p, m->u.get.keys[0].len, 0);
        if (v != NULL && *v != 0)
            wire_put_value(&b, m->id, wire_cstr("val"), *v, 0);
        else
            wire_put_notfound(&b, m->id, 0);
    } else if (m->type == WIRE_SET) {
        uint64_t *v = version_of(m->u.set.key.p, m->u.set.key.len, 1);
        *v = ++O.next_version;
        wire_put_ok(&b, m->id, *v, true, NULL);
    } else if (m->type == WIRE_EXEC) {
        O.execs++;
        O.ncmds = m->u.exec.ncmds;
        O.nwatch = m->u.exec.nwatch;
        snprintf(O.first_cmd, sizeof(O.first_cmd), "%.*s", (int)m->u.exec.cmds[0].args[0].len,
                 m->u.exec.cmds[0].args[0].p);
        int changed = 0;
        for (uint32_t i = 0; i < m->u.exec.nwatch && i < 8; i++) {
            const struct wire_watch *w = &m->u.exec.watch[i];
            O.watched_version[i] = w->version;
            uint64_t *v = version_of(w->key.p, w->key.len, 0);
            changed |= (v != NULL ? *v : 0) != w->version;
        }
        if (changed) {
            wire_put_resp(&b, m->id, wire_cstr("*-1\r\n"), NULL, 0);
        } else {
            /* every command "runs": +OK each, and a write bumps its key */
            char reply[512];
            int n = snprintf(reply, sizeof(reply), "*%u\r\n", m->u.exec.ncmds);
            for (uint32_t i = 0; i < m->u.exec.ncmds; i++) {
                const struct wire_cmd *c = &m->u.exec.cmds[i];
                if (c->nargs >= 2 && c->args[0].len == 3 &&
                    strncasecmp(c->args[0].p, "set", 3) == 0)
                    *version_of(c->args[1].p, c->args[1].len, 1) = ++O.next_version;
                n += snprintf(reply + n, sizeof(reply) - (size_t)n, "+OK\r\n");
            }
            wire_put_resp(&b, m->id, wire_slice(reply, (size_t)n), NULL, 0);
        }
    }
    if (buf_unread(&b) > 0)
        fo_reply(fc, &b);
    buf_deinit(&b);
}

static void small_bounds(struct cfg *cfg)
{
    struct cfg_error err;
    ck_assert_int_eq(cfg_set(cfg, "multi-max-commands", "3", &err), HKV_OK);
    ck_assert_int_eq(cfg_set(cfg, "multi-max-bytes", "64", &err), HKV_OK);
}

static void setup(void)
{
    memset(&O, 0, sizeof(O));
    ef_setup(1, owner, NULL);
}

static void setup_small(void)
{
    memset(&O, 0, sizeof(O));
    ef_setup(1, owner, small_bounds);
}

static void teardown(void)
{
    ef_teardown();
}

static int one_exec(void) { return O.execs >= 1; }

START_TEST(queued_commands_run_at_exec_in_order)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "a", "1", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "b", "2", NULL);
    ck_assert_int_eq(O.execs, 0); /* nothing reached the owner yet */
    ef_call(fd, "*2\r\n+OK\r\n+OK\r\n", "EXEC", NULL);
    ck_assert_int_eq(O.execs, 1);
    ck_assert_uint_eq(O.ncmds, 2);
    ck_assert_str_eq(O.first_cmd, "SET");
    ck_assert_uint_eq(O.nwatch, 0);
    /* the transaction is over: a command runs at once again */
    ef_call(fd, "+PONG\r\n", "PING", NULL);
}
END_TEST

START_TEST(key_less_commands_are_answered_by_the_edge_in_place)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "PING", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "a", "1", NULL);
    ef_call(fd, "+QUEUED\r\n", "ECHO", "hi", NULL);
    ef_call(fd, "*3\r\n+PONG\r\n+OK\r\n$2\r\nhi\r\n", "EXEC", NULL);
    ck_assert_uint_eq(O.ncmds, 1); /* only the SET went to the owner */
}
END_TEST

START_TEST(an_exec_of_only_key_less_commands_asks_no_owner)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "PING", NULL);
    ef_call(fd, "+QUEUED\r\n", "ECHO", "x", NULL);
    ef_call(fd, "*2\r\n+PONG\r\n$1\r\nx\r\n", "EXEC", NULL);
    ck_assert_int_eq(O.execs, 0);
}
END_TEST

START_TEST(an_empty_transaction_answers_an_empty_array)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "*0\r\n", "EXEC", NULL);
    ck_assert_int_eq(O.execs, 0);
}
END_TEST

START_TEST(an_unknown_command_in_the_queue_aborts_the_exec)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "a", "1", NULL);
    ef_call(fd, "-ERR unknown command 'NOPE', with args beginning with: 'x' \r\n", "NOPE", "x",
            NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "b", "2", NULL); /* still queued after the error */
    ef_call(fd, "-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC", NULL);
    ck_assert_int_eq(O.execs, 0);
    /* and the connection is out of MULTI */
    ef_call(fd, "-ERR EXEC without MULTI\r\n", "EXEC", NULL);
}
END_TEST

START_TEST(a_wrong_arity_in_the_queue_aborts_the_exec)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "-ERR wrong number of arguments for 'set' command\r\n", "SET", "a", NULL);
    ef_call(fd, "-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC", NULL);
    ck_assert_int_eq(O.execs, 0);
}
END_TEST

START_TEST(exec_with_arguments_ends_the_transaction_and_says_why)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "a", "1", NULL);
    ef_call(fd, "-EXECABORT Transaction discarded because of: wrong number of arguments for "
                "'exec' command\r\n", "EXEC", "now", NULL);
    ef_call(fd, "-ERR EXEC without MULTI\r\n", "EXEC", NULL);
    ck_assert_int_eq(O.execs, 0);
}
END_TEST

START_TEST(a_command_a_transaction_cannot_hold_is_refused_and_aborts)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "-ERR Command not allowed inside a transaction: 'info' (hotkvd runs a transaction "
                "on its keys' owner: commands with keys, and PING, ECHO, TIME, UNWATCH)\r\n",
            "INFO", NULL);
    ef_call(fd, "-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC", NULL);
}
END_TEST

START_TEST(multi_does_not_nest_and_watch_inside_multi_is_refused)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "-ERR MULTI calls can not be nested\r\n", "MULTI", NULL);
    ef_call(fd, "-ERR WATCH inside MULTI is not allowed\r\n", "WATCH", "a", NULL);
    /* neither flags the transaction (Redis: they are not queued commands) */
    ef_call(fd, "+QUEUED\r\n", "SET", "a", "1", NULL);
    ef_call(fd, "*1\r\n+OK\r\n", "EXEC", NULL);
}
END_TEST

START_TEST(discard_forgets_the_queue)
{
    int fd = ef_client();
    ef_call(fd, "-ERR DISCARD without MULTI\r\n", "DISCARD", NULL);
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "a", "1", NULL);
    ef_call(fd, "+OK\r\n", "DISCARD", NULL);
    ef_call(fd, "-ERR EXEC without MULTI\r\n", "EXEC", NULL);
    ck_assert_int_eq(O.execs, 0);
    ck_assert_ptr_null(version_of("a", 1, 0)); /* never written */
    /* a new transaction after it starts clean */
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "*0\r\n", "EXEC", NULL);
}
END_TEST

START_TEST(discard_clears_an_aborted_transaction_too)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "-ERR wrong number of arguments for 'get' command\r\n", "GET", NULL);
    ef_call(fd, "+OK\r\n", "DISCARD", NULL);
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "a", "1", NULL);
    ef_call(fd, "*1\r\n+OK\r\n", "EXEC", NULL); /* not aborted: the flag went with DISCARD */
}
END_TEST

START_TEST(past_multi_max_commands_the_queue_is_dropped)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    for (int i = 0; i < 3; i++)
        ef_call(fd, "+QUEUED\r\n", "SET", "a", "1", NULL);
    ef_call(fd, "-ERR Transaction discarded: more than 3 commands queued (multi-max-commands)\r\n",
            "SET", "a", "1", NULL);
    /* later commands are answered QUEUED and not kept */
    ef_call(fd, "+QUEUED\r\n", "SET", "b", "2", NULL);
    ef_call(fd, "-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC", NULL);
    ck_assert_int_eq(O.execs, 0);
}
END_TEST

START_TEST(past_multi_max_bytes_the_queue_is_dropped)
{
    int fd = ef_client();
    char big[80];
    memset(big, 'v', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "-ERR Transaction discarded: more than 64 bytes queued (multi-max-bytes)\r\n",
            "SET", "a", big, NULL);
    ef_call(fd, "-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC", NULL);
}
END_TEST

START_TEST(multi_is_reported_by_client_list_as_the_queue_length)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "a", "1", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "b", "1", NULL);
    struct conn *c = F.e.conns->list;
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(edge_tx_queued(c), 2);
    ef_call(fd, "*2\r\n+OK\r\n+OK\r\n", "EXEC", NULL);
    ck_assert_int_eq(edge_tx_queued(c), -1);
}
END_TEST

START_TEST(watch_sends_the_versions_it_read_with_the_exec)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "SET", "w", "1", NULL);
    uint64_t v = *version_of("w", 1, 0);
    ck_assert_uint_ne(v, 0);
    ef_call(fd, "+OK\r\n", "WATCH", "w", NULL);
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "w", "2", NULL);
    ef_call(fd, "*1\r\n+OK\r\n", "EXEC", NULL);
    ck_assert_uint_eq(O.nwatch, 1);
    ck_assert_uint_eq(O.watched_version[0], v);
}
END_TEST

START_TEST(a_write_after_watch_makes_the_exec_nil)
{
    int fd = ef_client(), other = ef_client();
    ef_call(fd, "+OK\r\n", "SET", "w", "1", NULL);
    ef_call(fd, "+OK\r\n", "WATCH", "w", NULL);
    ef_call(other, "+OK\r\n", "SET", "w", "changed", NULL); /* another client writes it */
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "w", "2", NULL);
    ef_call(fd, "*-1\r\n", "EXEC", NULL);
    ck_assert_int_eq(O.execs, 1);
    /* EXEC forgot the watch: the next transaction commits */
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "w", "3", NULL);
    ef_call(fd, "*1\r\n+OK\r\n", "EXEC", NULL);
    ck_assert_uint_eq(O.nwatch, 0);
}
END_TEST

START_TEST(watching_an_absent_key_sends_its_version_0)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "WATCH", "nokey", NULL);
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "nokey", "1", NULL);
    ef_call(fd, "*1\r\n+OK\r\n", "EXEC", NULL);
    ck_assert_uint_eq(O.nwatch, 1);
    ck_assert_uint_eq(O.watched_version[0], 0);
}
END_TEST

START_TEST(unwatch_forgets_the_watched_keys)
{
    int fd = ef_client(), other = ef_client();
    ef_call(fd, "+OK\r\n", "SET", "w", "1", NULL);
    ef_call(fd, "+OK\r\n", "WATCH", "w", NULL);
    ef_call(fd, "+OK\r\n", "UNWATCH", NULL);
    ef_call(other, "+OK\r\n", "SET", "w", "changed", NULL);
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "w", "2", NULL);
    ef_call(fd, "*1\r\n+OK\r\n", "EXEC", NULL); /* not nil: nothing watched */
    ck_assert_uint_eq(O.nwatch, 0);
}
END_TEST

START_TEST(discard_forgets_the_watched_keys_too)
{
    int fd = ef_client(), other = ef_client();
    ef_call(fd, "+OK\r\n", "SET", "w", "1", NULL);
    ef_call(fd, "+OK\r\n", "WATCH", "w", NULL);
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+OK\r\n", "DISCARD", NULL);
    ef_call(other, "+OK\r\n", "SET", "w", "changed", NULL);
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "w", "2", NULL);
    ef_call(fd, "*1\r\n+OK\r\n", "EXEC", NULL);
}
END_TEST

START_TEST(a_pipelined_watch_multi_exec_sees_the_versions)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "SET", "w", "1", NULL);
    uint64_t v = *version_of("w", 1, 0);
    /* all at once: the edge holds the connection until WATCH's versions come */
    ef_cmd(fd, "WATCH", "w", NULL);
    ef_cmd(fd, "MULTI", NULL);
    ef_cmd(fd, "SET", "w", "2", NULL);
    ef_cmd(fd, "EXEC", NULL);
    ef_expect(fd, "+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n");
    ck_assert(ef_until(one_exec, 1000));
    ck_assert_uint_eq(O.watched_version[0], v);
}
END_TEST

START_TEST(watch_past_the_bounds_is_refused)
{
    int fd = ef_client();
    ef_call(fd, "-ERR more than 3 keys or 64 bytes of keys watched (multi-max-commands, "
                "multi-max-bytes)\r\n", "WATCH", "a", "b", "c", "d", NULL);
    ef_call(fd, "+OK\r\n", "WATCH", "a", "b", NULL);
    ef_call(fd, "-ERR more than 3 keys or 64 bytes of keys watched (multi-max-commands, "
                "multi-max-bytes)\r\n", "WATCH", "c", "d", NULL);
}
END_TEST

START_TEST(reset_ends_the_transaction)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "MULTI", NULL);
    ef_call(fd, "+QUEUED\r\n", "SET", "a", "1", NULL);
    ef_call(fd, "+RESET\r\n", "RESET", NULL);
    ef_call(fd, "-ERR EXEC without MULTI\r\n", "EXEC", NULL);
    ck_assert_int_eq(O.execs, 0);
}
END_TEST

Suite *edge_tx_suite(void)
{
    Suite *s = suite_create("edge_tx");
    TCase *tc = tcase_create("queue");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, queued_commands_run_at_exec_in_order);
    tcase_add_test(tc, key_less_commands_are_answered_by_the_edge_in_place);
    tcase_add_test(tc, an_exec_of_only_key_less_commands_asks_no_owner);
    tcase_add_test(tc, an_empty_transaction_answers_an_empty_array);
    tcase_add_test(tc, multi_is_reported_by_client_list_as_the_queue_length);
    tcase_add_test(tc, reset_ends_the_transaction);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, an_unknown_command_in_the_queue_aborts_the_exec);
    tcase_add_test(tc, a_wrong_arity_in_the_queue_aborts_the_exec);
    tcase_add_test(tc, exec_with_arguments_ends_the_transaction_and_says_why);
    tcase_add_test(tc, a_command_a_transaction_cannot_hold_is_refused_and_aborts);
    tcase_add_test(tc, multi_does_not_nest_and_watch_inside_multi_is_refused);
    tcase_add_test(tc, discard_forgets_the_queue);
    tcase_add_test(tc, discard_clears_an_aborted_transaction_too);
    suite_add_tcase(s, tc);
    tc = tcase_create("limits");
    tcase_add_checked_fixture(tc, setup_small, teardown);
    tcase_add_test(tc, past_multi_max_commands_the_queue_is_dropped);
    tcase_add_test(tc, past_multi_max_bytes_the_queue_is_dropped);
    tcase_add_test(tc, watch_past_the_bounds_is_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("watch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, watch_sends_the_versions_it_read_with_the_exec);
    tcase_add_test(tc, a_write_after_watch_makes_the_exec_nil);
    tcase_add_test(tc, watching_an_absent_key_sends_its_version_0);
    tcase_add_test(tc, unwatch_forgets_the_watched_keys);
    tcase_add_test(tc, discard_forgets_the_watched_keys_too);
    tcase_add_test(tc, a_pipelined_watch_multi_exec_sees_the_versions);
    suite_add_tcase(s, tc);
    return s;
}
