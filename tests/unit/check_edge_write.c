/* check_edge_write.c - the write commands at the edge (server/edge/
 * edge_write.h) in this process (edge_fixture.h): what each sends the owner
 * (the wire message, its flags and its expiry: a relative or absolute one,
 * in ms, or KEEPTTL), what the edge refuses itself before any owner hears of
 * it (syntax, bad numbers, bad expire times, in Redis's words), and how the
 * owner's answer becomes the reply (NX not applied: nil; GET: the old
 * value; INCR's new value; DEL's count).  One scripted owner records the
 * last request of each kind. */
#include "server/core/clock.h"
#include "tests/unit/edge_fixture.h"

static struct {
    int requests;                 /* writes seen */
    uint32_t set_flags;
    struct wire_expiry set_exp, expire_exp;
    char set_key[32], set_val[64];
    int64_t delta;
    uint32_t del_keys;
    int exists;                   /* the owner's answer: the key exists (NX, XX, EXPIRE) */
    int64_t counter;
} O;

static void owner(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    switch (m->type) {
    case WIRE_STATS:
        wire_put_stats_reply(&b, m->id, NULL, 0);
        break;
    case WIRE_GET:
        wire_put_notfound(&b, m->id, 0);
        break;
    case WIRE_SET: {
        O.requests++;
        O.set_flags = m->u.set.flags;
        O.set_exp = m->u.set.exp;
        snprintf(O.set_key, sizeof(O.set_key), "%.*s", (int)m->u.set.key.len, m->u.set.key.p);
        snprintf(O.set_val, sizeof(O.set_val), "%.*s", (int)m->u.set.value.len,
                 m->u.set.value.p);
        int applied = !((m->u.set.flags & WIRE_SET_NX) && O.exists) &&
                      !((m->u.set.flags & WIRE_SET_XX) && !O.exists);
        struct wire_slice old = wire_cstr("before");
        wire_put_ok(&b, m->id, 7, applied,
                    (m->u.set.flags & WIRE_SET_GET) && O.exists ? &old : NULL);
        break;
    }
    case WIRE_INCRBY:
        O.requests++;
        O.delta = m->u.incrby.delta;
        O.counter += m->u.incrby.delta;
        wire_put_int(&b, m->id, O.counter, 8);
        break;
    case WIRE_EXPIRE:
        O.requests++;
        O.expire_exp = m->u.expire.exp;
        wire_put_int(&b, m->id, O.exists, 9);
        break;
    case WIRE_DEL:
        O.requests++;
        O.del_keys = m->u.del.nkeys;
        wire_put_int(&b, m->id, O.exists ? m->u.del.nkeys : 0, 10);
        break;
    default:
        break;
    }
    if (buf_unread(&b) > 0)
        fo_reply(fc, &b);
    buf_deinit(&b);
}

static void setup(void)
{
    memset(&O, 0, sizeof(O));
    ef_setup(1, owner, NULL);
}

static void teardown(void)
{
    ef_teardown();
}

/* ---- SET ------------------------------------------------------------------------- */

START_TEST(a_plain_set_sends_the_value_without_expiry)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "SET", "k", "hello", NULL);
    ck_assert_int_eq(O.requests, 1);
    ck_assert_str_eq(O.set_key, "k");
    ck_assert_str_eq(O.set_val, "hello");
    ck_assert_uint_eq(O.set_flags, 0);
    ck_assert_uint_eq(O.set_exp.kind, WIRE_EXP_NONE);
    ck_assert_int_eq(O.set_exp.ms, 0);
}
END_TEST

START_TEST(set_ex_and_px_are_relative_in_ms)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "SET", "k", "v", "EX", "10", NULL);
    ck_assert_uint_eq(O.set_exp.kind, WIRE_EXP_REL);
    ck_assert_int_eq(O.set_exp.ms, 10000);
    ef_call(fd, "+OK\r\n", "SET", "k", "v", "px", "1500", NULL);
    ck_assert_uint_eq(O.set_exp.kind, WIRE_EXP_REL);
    ck_assert_int_eq(O.set_exp.ms, 1500);
    /* a repeated expiry takes the last, as Redis */
    ef_call(fd, "+OK\r\n", "SET", "k", "v", "EX", "1", "EX", "2", NULL);
    ck_assert_int_eq(O.set_exp.ms, 2000);
}
END_TEST

START_TEST(set_exat_and_pxat_are_absolute_unix_ms)
{
    int fd = ef_client();
    char at[32];
    long long s = clock_unix_ms() / 1000 + 3600;
    snprintf(at, sizeof(at), "%lld", s);
    ef_call(fd, "+OK\r\n", "SET", "k", "v", "EXAT", at, NULL);
    ck_assert_uint_eq(O.set_exp.kind, WIRE_EXP_ABS);
    ck_assert_int_eq(O.set_exp.ms, s * 1000);
    snprintf(at, sizeof(at), "%lld", s * 1000 + 5);
    ef_call(fd, "+OK\r\n", "SET", "k", "v", "PXAT", at, NULL);
    ck_assert_uint_eq(O.set_exp.kind, WIRE_EXP_ABS);
    ck_assert_int_eq(O.set_exp.ms, s * 1000 + 5);
}
END_TEST

START_TEST(set_keepttl_keeps_the_expiry)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "SET", "k", "v", "KEEPTTL", NULL);
    ck_assert_uint_eq(O.set_exp.kind, WIRE_EXP_KEEP);
    ck_assert_int_eq(O.set_exp.ms, 0);
}
END_TEST

START_TEST(set_nx_not_applied_is_nil)
{
    int fd = ef_client();
    O.exists = 1;
    ef_call(fd, "$-1\r\n", "SET", "k", "v", "NX", NULL);
    ck_assert_uint_eq(O.set_flags, WIRE_SET_NX);
    O.exists = 0;
    ef_call(fd, "+OK\r\n", "SET", "k", "v", "NX", NULL);
    ef_call(fd, "$-1\r\n", "SET", "k", "v", "XX", NULL);
    ck_assert_uint_eq(O.set_flags, WIRE_SET_XX);
}
END_TEST

START_TEST(set_get_answers_the_old_value)
{
    int fd = ef_client();
    O.exists = 1;
    ef_call(fd, "$6\r\nbefore\r\n", "SET", "k", "v", "GET", NULL);
    ck_assert_uint_eq(O.set_flags, WIRE_SET_GET);
    O.exists = 0;
    ef_call(fd, "$-1\r\n", "SET", "k", "v", "GET", NULL);
    ef_call(fd, "$-1\r\n", "GETSET", "k", "v", NULL); /* GETSET is SET ... GET */
    ck_assert_uint_eq(O.set_flags, WIRE_SET_GET);
}
END_TEST

START_TEST(set_refuses_bad_options_without_asking_the_owner)
{
    int fd = ef_client();
    ef_call(fd, "-ERR syntax error\r\n", "SET", "k", "v", "NX", "XX", NULL);
    ef_call(fd, "-ERR syntax error\r\n", "SET", "k", "v", "EX", "1", "PX", "5", NULL);
    ef_call(fd, "-ERR syntax error\r\n", "SET", "k", "v", "KEEPTTL", "EX", "1", NULL);
    ef_call(fd, "-ERR syntax error\r\n", "SET", "k", "v", "EX", NULL);
    ef_call(fd, "-ERR syntax error\r\n", "SET", "k", "v", "PERSIST", NULL);
    ef_call(fd, "-ERR syntax error\r\n", "SET", "k", "v", "FOO", NULL);
    ef_call(fd, "-ERR value is not an integer or out of range\r\n", "SET", "k", "v", "EX", "x",
            NULL);
    ef_call(fd, "-ERR invalid expire time in 'set' command\r\n", "SET", "k", "v", "EX", "0",
            NULL);
    ef_call(fd, "-ERR invalid expire time in 'set' command\r\n", "SET", "k", "v", "PX", "-5",
            NULL);
    ck_assert_int_eq(O.requests, 0);
}
END_TEST

START_TEST(setex_and_psetex_check_their_time)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "SETEX", "k", "3", "v", NULL);
    ck_assert_uint_eq(O.set_exp.kind, WIRE_EXP_REL);
    ck_assert_int_eq(O.set_exp.ms, 3000);
    ck_assert_str_eq(O.set_val, "v");
    ef_call(fd, "+OK\r\n", "PSETEX", "k", "250", "w", NULL);
    ck_assert_int_eq(O.set_exp.ms, 250);
    ef_call(fd, "-ERR invalid expire time in 'setex' command\r\n", "SETEX", "k", "0", "v", NULL);
    ef_call(fd, "-ERR value is not an integer or out of range\r\n", "SETEX", "k", "1.5", "v",
            NULL);
    ck_assert_int_eq(O.requests, 2);
}
END_TEST

START_TEST(setnx_answers_whether_it_set)
{
    int fd = ef_client();
    ef_call(fd, ":1\r\n", "SETNX", "k", "v", NULL);
    ck_assert_uint_eq(O.set_flags, WIRE_SET_NX);
    O.exists = 1;
    ef_call(fd, ":0\r\n", "SETNX", "k", "v", NULL);
}
END_TEST

/* ---- INCR and friends ---------------------------------------------------------- */

START_TEST(incr_decr_incrby_decrby_send_their_delta)
{
    int fd = ef_client();
    ef_call(fd, ":1\r\n", "INCR", "n", NULL);
    ck_assert_int_eq(O.delta, 1);
    ef_call(fd, ":0\r\n", "DECR", "n", NULL);
    ck_assert_int_eq(O.delta, -1);
    ef_call(fd, ":10\r\n", "INCRBY", "n", "10", NULL);
    ck_assert_int_eq(O.delta, 10);
    ef_call(fd, ":7\r\n", "DECRBY", "n", "3", NULL);
    ck_assert_int_eq(O.delta, -3);
    ck_assert_int_eq(O.requests, 4);
}
END_TEST

START_TEST(incrby_refuses_what_is_not_an_integer)
{
    int fd = ef_client();
    ef_call(fd, "-ERR value is not an integer or out of range\r\n", "INCRBY", "n", "x", NULL);
    ef_call(fd, "-ERR value is not an integer or out of range\r\n", "INCRBY", "n", "1.0", NULL);
    ef_call(fd, "-ERR value is not an integer or out of range\r\n", "INCRBY", "n",
            "99999999999999999999", NULL);
    ef_call(fd, "-ERR value is not an integer or out of range\r\n", "DECRBY", "n", "", NULL);
    ck_assert_int_eq(O.requests, 0);
}
END_TEST

/* ---- EXPIRE, DEL ------------------------------------------------------------------- */

START_TEST(expire_sends_its_time_in_ms)
{
    int fd = ef_client();
    O.exists = 1;
    ef_call(fd, ":1\r\n", "EXPIRE", "k", "5", NULL);
    ck_assert_uint_eq(O.expire_exp.kind, WIRE_EXP_REL);
    ck_assert_int_eq(O.expire_exp.ms, 5000);
    ef_call(fd, ":1\r\n", "PEXPIRE", "k", "42", NULL);
    ck_assert_int_eq(O.expire_exp.ms, 42);
    long long at = clock_unix_ms() / 1000 + 100;
    char s[32];
    snprintf(s, sizeof(s), "%lld", at);
    ef_call(fd, ":1\r\n", "EXPIREAT", "k", s, NULL);
    ck_assert_uint_eq(O.expire_exp.kind, WIRE_EXP_ABS);
    ck_assert_int_eq(O.expire_exp.ms, at * 1000);
    O.exists = 0;
    ef_call(fd, ":0\r\n", "EXPIRE", "nokey", "5", NULL);
    ef_call(fd, "-ERR value is not an integer or out of range\r\n", "EXPIRE", "k", "soon", NULL);
    ck_assert_int_eq(O.requests, 4);
}
END_TEST

START_TEST(del_and_unlink_send_every_key_and_answer_the_count)
{
    int fd = ef_client();
    O.exists = 1;
    ef_call(fd, ":3\r\n", "DEL", "a", "b", "c", NULL);
    ck_assert_uint_eq(O.del_keys, 3);
    ef_call(fd, ":1\r\n", "UNLINK", "a", NULL);
    ck_assert_uint_eq(O.del_keys, 1);
    O.exists = 0;
    ef_call(fd, ":0\r\n", "DEL", "a", NULL);
}
END_TEST

START_TEST(a_write_command_counts_as_a_write_in_commandstats)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "SET", "k", "v", NULL);
    ef_call(fd, "-ERR syntax error\r\n", "SET", "k", "v", "NOPE", NULL);
    ck_assert_uint_eq(atomic_load(&ef_stats()->cmdstats[CMD_SET].calls), 2);
    ck_assert_uint_eq(atomic_load(&ef_stats()->cmdstats[CMD_SET].rejected), 0);
    ck_assert_uint_eq(atomic_load(&ef_stats()->total_error_replies), 1);
}
END_TEST

Suite *edge_write_suite(void)
{
    Suite *s = suite_create("edge_write");
    TCase *tc = tcase_create("set");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_plain_set_sends_the_value_without_expiry);
    tcase_add_test(tc, set_ex_and_px_are_relative_in_ms);
    tcase_add_test(tc, set_exat_and_pxat_are_absolute_unix_ms);
    tcase_add_test(tc, set_keepttl_keeps_the_expiry);
    tcase_add_test(tc, set_nx_not_applied_is_nil);
    tcase_add_test(tc, set_get_answers_the_old_value);
    tcase_add_test(tc, set_refuses_bad_options_without_asking_the_owner);
    tcase_add_test(tc, setex_and_psetex_check_their_time);
    tcase_add_test(tc, setnx_answers_whether_it_set);
    tcase_add_test(tc, a_write_command_counts_as_a_write_in_commandstats);
    suite_add_tcase(s, tc);
    tc = tcase_create("others");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, incr_decr_incrby_decrby_send_their_delta);
    tcase_add_test(tc, incrby_refuses_what_is_not_an_integer);
    tcase_add_test(tc, expire_sends_its_time_in_ms);
    tcase_add_test(tc, del_and_unlink_send_every_key_and_answer_the_count);
    suite_add_tcase(s, tc);
    return s;
}
