/*
 * check_tx.c - MULTI/EXEC/DISCARD/WATCH/UNWATCH on the edge, against the
 * real daemon: replies, atomicity seen from a second client, WATCH aborts
 * (also by a key's expiry, and reads after WATCH never older than it),
 * EXECABORT, the queue's bounds, durable writes of a transaction committed
 * together, and redis-py's pipeline() and transaction()
 * (tests/integration/py/redis_py_tx.py).  The commands outside a
 * transaction: check_calls.c; the fixture: tx_fixture.h.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/tx_fixture.h"

/* ---- MULTI/EXEC ----------------------------------------------------------------- */

START_TEST(multi_exec_replies_as_redis)
{
    up();
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "{t}a", "1");
    EXPECT("+QUEUED", "INCR", "{t}a");
    EXPECT("+QUEUED", "GET", "{t}a");
    EXPECT("+QUEUED", "APPEND", "{t}b", "x");
    EXPECT("+QUEUED", "INCR", "{t}b"); /* an error at run time, not at queue time */
    EXPECT("+QUEUED", "PING");
    EXPECT("+QUEUED", "ECHO", "e");
    EXPECT("[+OK, :2, \"2\", :1, -ERR value is not an integer or out of range, +PONG, \"e\"]",
           "EXEC");
    EXPECT("\"2\"", "GET", "{t}a");
    /* errors outside and inside MULTI */
    EXPECT("-ERR EXEC without MULTI", "EXEC");
    EXPECT("-ERR DISCARD without MULTI", "DISCARD");
    EXPECT("+OK", "MULTI");
    EXPECT("-ERR MULTI calls can not be nested", "MULTI");
    EXPECT("-ERR WATCH inside MULTI is not allowed", "WATCH", "{t}a");
    EXPECT("[]", "EXEC"); /* neither error aborts the transaction */
    /* only key-less commands: answered at the edge */
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "PING", "hi");
    EXPECT("+QUEUED", "UNWATCH");
    EXPECT("[\"hi\", +OK]", "EXEC");
    /* a command hotkvd cannot run in a transaction: refused, and EXECABORT */
    EXPECT("+OK", "MULTI");
    const char *got = on(fd, "DBSIZE", NULL);
    ck_assert_msg(strncmp(got, "-ERR Command not allowed inside a transaction", 45) == 0, "%s",
                  got);
    EXPECT("-EXECABORT Transaction discarded because of previous errors.", "EXEC");
    /* RESP3: the same replies in RESP3's forms */
    ck_assert_ptr_nonnull(on(fd, "HELLO", "3", NULL));
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "GET", "{t}a");
    EXPECT("+QUEUED", "GET", "{t}none");
    EXPECT("[\"2\", (nil)]", "EXEC");
    down();
}
END_TEST

START_TEST(execabort_applies_nothing)
{
    up();
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "{t}x", "1");
    EXPECT("-ERR unknown command 'NOSUCH', with args beginning with: 'a' ", "NOSUCH", "a");
    EXPECT("+QUEUED", "SET", "{t}y", "1");
    EXPECT("-ERR wrong number of arguments for 'get' command", "GET");
    EXPECT("-EXECABORT Transaction discarded because of previous errors.", "EXEC");
    EXPECT("[(nil), (nil)]", "MGET", "{t}x", "{t}y");
    EXPECT("-ERR EXEC without MULTI", "EXEC");
    /* a multi-key command across owners is refused when queued */
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "{t}x", "1");
    EXPECT(CROSSSLOT, "MSET", "h:x", "1", "x", "2");
    EXPECT("-EXECABORT Transaction discarded because of previous errors.", "EXEC");
    /* commands on two owners, each fine alone: EXEC is refused, nothing runs */
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "{t}x", "1");
    EXPECT("+QUEUED", "SET", "h:x", "1");
    EXPECT(CROSSSLOT, "EXEC");
    EXPECT("[(nil), (nil)]", "MGET", "{t}x", "h:x");
    EXPECT("-ERR EXEC without MULTI", "EXEC");
    down();
}
END_TEST

START_TEST(discard_and_reset_forget_the_transaction)
{
    up();
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "{t}d", "1");
    EXPECT("+OK", "DISCARD");
    EXPECT("(nil)", "GET", "{t}d");
    EXPECT("-ERR EXEC without MULTI", "EXEC");
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "{t}d", "1");
    EXPECT("+RESET", "RESET");
    EXPECT("-ERR EXEC without MULTI", "EXEC");
    EXPECT("(nil)", "GET", "{t}d");
    /* WATCH, then RESET: the watch is gone (a write by another client does
     * not abort the next transaction) */
    int b = h_connect(d.port);
    ck_assert_int_ge(b, 0);
    EXPECT("+OK", "WATCH", "{t}d");
    EXPECT("+RESET", "RESET");
    EXPECT_ON(b, "+OK", "SET", "{t}d", "other");
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "{t}d", "mine");
    EXPECT("[+OK]", "EXEC");
    /* and UNWATCH */
    EXPECT("+OK", "WATCH", "{t}d");
    EXPECT("+OK", "UNWATCH");
    EXPECT_ON(b, "+OK", "SET", "{t}d", "other");
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "GET", "{t}d");
    EXPECT("[\"other\"]", "EXEC");
    close(b);
    down();
}
END_TEST

START_TEST(watch_aborts_when_another_client_writes)
{
    up();
    int b = h_connect(d.port);
    ck_assert_int_ge(b, 0);
    EXPECT("+OK", "SET", "{w}k", "0");
    EXPECT("+OK", "WATCH", "{w}k", "{w}other");
    EXPECT("\"0\"", "GET", "{w}k");
    EXPECT_ON(b, "+OK", "SET", "{w}k", "theirs");
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "{w}k", "mine");
    EXPECT("+QUEUED", "SET", "{w}side", "1");
    EXPECT("(nil)", "EXEC");
    EXPECT("\"theirs\"", "GET", "{w}k");
    EXPECT("(nil)", "GET", "{w}side");
    /* the watch is gone after EXEC: the next transaction commits */
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "{w}k", "mine");
    EXPECT("[+OK]", "EXEC");
    /* a key created after WATCH (absent when watched) aborts too */
    EXPECT("+OK", "WATCH", "{w}new");
    EXPECT_ON(b, "+OK", "SET", "{w}new", "x");
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "DEL", "{w}new");
    EXPECT("(nil)", "EXEC");
    /* a delete of a watched key too */
    EXPECT("+OK", "WATCH", "{w}new");
    EXPECT_ON(b, ":1", "DEL", "{w}new");
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "{w}new", "y");
    EXPECT("(nil)", "EXEC");
    EXPECT("(nil)", "GET", "{w}new");
    /* no write in between: it commits, also for a key-less transaction */
    EXPECT("+OK", "WATCH", "{w}k");
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "PING");
    EXPECT("[+PONG]", "EXEC");
    EXPECT("+OK", "WATCH", "{w}k");
    EXPECT_ON(b, "+OK", "SET", "{w}k", "again");
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "PING");
    EXPECT("(nil)", "EXEC");
    EXPECT("+OK", "WATCH", "{w}k");
    EXPECT("+OK", "MULTI");
    EXPECT("[]", "EXEC");
    /* watched keys on two owners with the transaction: CROSSSLOT */
    EXPECT(CROSSSLOT, "WATCH", "h:w", "w");
    EXPECT("+OK", "WATCH", "h:w");
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "{w}k", "z");
    EXPECT(CROSSSLOT, "EXEC");
    EXPECT("\"again\"", "GET", "{w}k");
    close(b);
    down();
}
END_TEST

/* Reads after WATCH must not be older than the versions WATCH read: the
 * colo cache may still hold a value another colo (or another edge, for a
 * moment) has overwritten, and a read-modify-write over that value would
 * commit over a write it never saw (a lost update). */
START_TEST(reads_after_watch_are_not_older_than_the_watch)
{
    /* two colos of one edge each, no pushes: colo A's cache keeps the old
     * value after colo B's write */
    up_with("colos 2\nedge-workers 1\nowner-push no\n");
    int a, b;
    ck_assert_int_eq(h_edge_pair(&d, &a, &b), 0);
    EXPECT_ON(a, "+OK", "SET", "{rw}n", "10");
    EXPECT_ON(a, "\"10\"", "GET", "{rw}n"); /* cached in colo A (fresh 10s) */
    EXPECT_ON(b, ":11", "INCR", "{rw}n");
    EXPECT_ON(a, "+OK", "WATCH", "{rw}n");
    EXPECT_ON(a, "\"11\"", "GET", "{rw}n");
    EXPECT_ON(a, "\"1\"", "GETRANGE", "{rw}n", "1", "1");
    EXPECT_ON(a, "[\"11\"]", "MGET", "{rw}n");
    EXPECT_ON(a, "+OK", "MULTI");
    EXPECT_ON(a, "+QUEUED", "SET", "{rw}n", "12");
    EXPECT_ON(a, "[+OK]", "EXEC");
    EXPECT_ON(b, "\"12\"", "GET", "{rw}n");
    close(a);
    close(b);
    down();
}
END_TEST

/* Redis 7.0: a watched key that expires before EXEC fails the EXEC, as a
 * write would. */
START_TEST(watched_key_that_expires_fails_the_exec)
{
    up();
    EXPECT("+OK", "SET", "{x}k", "v", "PX", "200");
    EXPECT("+OK", "WATCH", "{x}k");
    h_sleep_ms(500);
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "{x}side", "1");
    EXPECT("(nil)", "EXEC");
    EXPECT("(nil)", "GET", "{x}side");
    /* a key with a deadline still ahead does not */
    EXPECT("+OK", "SET", "{x}k", "v", "PX", "60000");
    EXPECT("+OK", "WATCH", "{x}k");
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "{x}side", "1");
    EXPECT("[+OK]", "EXEC");
    /* nor one absent when watched (it stays absent) */
    EXPECT("+OK", "WATCH", "{x}none");
    h_sleep_ms(50);
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "GET", "{x}none");
    EXPECT("[(nil)]", "EXEC");
    down();
}
END_TEST

START_TEST(pipelined_watch_multi_exec)
{
    up();
    /* WATCH's versions are read before the rest is run: one round trip */
    const char req[] = "*2\r\n$5\r\nWATCH\r\n$4\r\n{p}k\r\n*1\r\n$5\r\nMULTI\r\n"
                       "*3\r\n$3\r\nSET\r\n$4\r\n{p}k\r\n$1\r\n1\r\n"
                       "*2\r\n$4\r\nINCR\r\n$4\r\n{p}k\r\n"
                       "*1\r\n$4\r\nEXEC\r\n";
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(h_send(fd, req, sizeof(req) - 1), 0);
        const char *want[] = {"+OK", "+OK", "+QUEUED", "+QUEUED", "[+OK, :2]"};
        for (int k = 0; k < 5; k++) {
            struct h_reply *r = h_read(fd);
            ck_assert_ptr_nonnull(r);
            char got[256] = "";
            show(r->v, got, sizeof(got));
            h_free(r);
            ck_assert_msg(strcmp(got, want[k]) == 0, "round %d reply %d: %s", i, k, got);
        }
    }
    down();
}
END_TEST

/* Client b runs MULTI INCR a INCR b EXEC over and over while client a reads
 * both keys in transactions: every read sees them equal. */
START_TEST(transaction_is_atomic_for_other_clients)
{
    up();
    int a, b;
    ck_assert_int_eq(h_edge_pair(&d, &a, &b), 0);
    EXPECT_ON(a, "+OK", "MSET", "{at}a", "0", "{at}b", "0");
    const char inc[] = "*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$5\r\n{at}a\r\n"
                       "*2\r\n$4\r\nINCR\r\n$5\r\n{at}b\r\n*1\r\n$4\r\nEXEC\r\n";
    const char rd[] = "*1\r\n$5\r\nMULTI\r\n*2\r\n$3\r\nGET\r\n$5\r\n{at}a\r\n"
                      "*2\r\n$3\r\nGET\r\n$5\r\n{at}b\r\n*1\r\n$4\r\nEXEC\r\n";
    int reads = 0;
    int64_t end = h_now_ms() + 3000;
    for (int i = 0; i < 300 && h_now_ms() < end; i++) {
        ck_assert_int_eq(h_send(b, inc, sizeof(inc) - 1), 0); /* not waited for yet */
        ck_assert_int_eq(h_send(a, rd, sizeof(rd) - 1), 0);
        for (int k = 0; k < 4; k++) {
            struct h_reply *r = h_read(a);
            ck_assert_ptr_nonnull(r);
            if (k == 3) {
                ck_assert_msg(r->v->type == RESP_ARRAY && r->v->n == 2, "%s", r->raw);
                ck_assert_msg(r->v->elems[0].len == r->v->elems[1].len &&
                                  memcmp(r->v->elems[0].str, r->v->elems[1].str,
                                         r->v->elems[0].len) == 0,
                              "a transaction was seen half done: %s", r->raw);
                reads++;
            }
            h_free(r);
        }
        for (int k = 0; k < 4; k++) {
            struct h_reply *r = h_read(b);
            ck_assert_ptr_nonnull(r);
            h_free(r);
        }
    }
    ck_assert_int_gt(reads, 20);
    EXPECT_ON(a, "+PONG", "PING");
    close(a);
    close(b);
    down();
}
END_TEST

START_TEST(queue_bounds_discard_the_transaction)
{
    up_with("multi-max-commands 5\nmulti-max-bytes 1kb\n");
    EXPECT("+OK", "MULTI");
    for (int i = 0; i < 5; i++)
        EXPECT("+QUEUED", "INCR", "{q}n");
    const char *got = on(fd, "INCR", "{q}n", NULL);
    ck_assert_msg(strstr(got, "-ERR Transaction discarded: more than 5 commands queued") == got,
                  "%s", got);
    EXPECT("+QUEUED", "INCR", "{q}n"); /* still in MULTI, nothing kept */
    EXPECT("-EXECABORT Transaction discarded because of previous errors.", "EXEC");
    EXPECT("(nil)", "GET", "{q}n");
    char big[2000];
    memset(big, 'v', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    EXPECT("+OK", "MULTI");
    got = on(fd, "SET", "{q}n", big, NULL);
    ck_assert_msg(strstr(got, "-ERR Transaction discarded: more than 1024 bytes queued") == got,
                  "%s", got);
    EXPECT("-EXECABORT Transaction discarded because of previous errors.", "EXEC");
    EXPECT("(nil)", "GET", "{q}n");
    /* the bound is per transaction: the next one is fine */
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "INCR", "{q}n");
    EXPECT("[:1]", "EXEC");
    down();
}
END_TEST

START_TEST(durable_writes_of_a_transaction_commit_together)
{
    up();
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "SET", "d:{acct}a", "100");
    EXPECT("+QUEUED", "SET", "d:{acct}b", "200");
    EXPECT("+QUEUED", "INCRBY", "d:{acct}a", "-50");
    EXPECT("+QUEUED", "INCRBY", "d:{acct}b", "50");
    EXPECT("[+OK, +OK, :50, :250]", "EXEC");
    /* acknowledged means committed: they survive a restart */
    close(fd);
    fd = -1;
    ck_assert_int_eq(WEXITSTATUS(h_halt(&d)), 0);
    ck_assert_int_eq(h_restart(&d), 0);
    fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    EXPECT("[\"50\", \"250\"]", "MGET", "d:{acct}a", "d:{acct}b");
    down();
}
END_TEST

/* ---- redis-py ------------------------------------------------------------------- */

START_TEST(redis_py_pipeline_and_transaction_helper)
{
    if (access("/usr/bin/python3", X_OK) != 0 ||
        system("/usr/bin/python3 -c 'import redis' >/dev/null 2>&1") != 0) {
        fprintf(stderr, "SKIP redis-py: /usr/bin/python3 with redis not installed\n");
        return;
    }
    up();
    char port[16], script[4096], out[1 << 14];
    snprintf(port, sizeof(port), "%d", d.port);
    ck_assert_ptr_nonnull(realpath("tests/integration/py/redis_py_tx.py", script));
    char *argv[] = {"/usr/bin/python3", script, port, NULL};
    int rc = h_run(argv, NULL, out, sizeof(out), 60000);
    for (char *p = out; *p != '\0'; p++)
        if (*p == '\n')
            *p = '|'; /* Check prints one line */
    ck_assert_msg(rc == 0, "redis-py transactions failed (%d): %s", rc, out);
    ck_assert_ptr_nonnull(strstr(out, "redis-py transactions passed"));
    down();
}
END_TEST

Suite *tx_suite(void)
{
    Suite *s = suite_create("tx");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"multi_exec", multi_exec_replies_as_redis},
        {"execabort", execabort_applies_nothing},
        {"discard_reset", discard_and_reset_forget_the_transaction},
        {"watch", watch_aborts_when_another_client_writes},
        {"watch_reads", reads_after_watch_are_not_older_than_the_watch},
        {"watch_expiry", watched_key_that_expires_fails_the_exec},
        {"pipelined_watch", pipelined_watch_multi_exec},
        {"atomic", transaction_is_atomic_for_other_clients},
        {"bounds", queue_bounds_discard_the_transaction},
        {"durable", durable_writes_of_a_transaction_commit_together},
        {"redis_py", redis_py_pipeline_and_transaction_helper},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
