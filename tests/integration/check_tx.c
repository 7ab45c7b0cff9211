/*
 * check_tx.c - issue 13's commands on the edge, against the real daemon:
 * the commands the owner runs (CALL: APPEND SETRANGE SETBIT INCRBYFLOAT
 * MSETNX RENAME RENAMENX COPY TOUCH EXPIRETIME PEXPIRETIME), the reads the
 * edge computes over the value read (GETRANGE SUBSTR GETBIT BITCOUNT
 * BITPOS LCS), CROSSSLOT against hash tags, and MULTI/EXEC/DISCARD/WATCH/
 * UNWATCH: replies, atomicity seen from a second client, WATCH aborts,
 * EXECABORT, the queue's bounds, and redis-py's pipeline() and transaction()
 * (tests/integration/py/redis_py_tx.py).  Where redis-server is installed a
 * few replies are compared with it byte for byte.
 *
 * The fixture has a hot class (h:*) beside the cold default, so "h:x" and
 * "x" always live on different owners (different pools), and "{u}a" and
 * "{u}b" always on one (one hash tag, one class).
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

#define FIXTURE                                                                          \
    "edge-workers 2\nhot-owners 2\ncold-owners 2\n"                                       \
    "class live pattern h:* pool hot fresh 1s keep 1m\n"                                  \
    "class money pattern d:* pool cold durability durable\n"                              \
    "class default pool cold fresh 10s keep 1m\n"

#define CROSSSLOT "-CROSSSLOT Keys in request don't hash to the same slot"

static struct daemon d;
static int fd = -1;

static void up_with(const char *extra)
{
    char conf[1024];
    snprintf(conf, sizeof(conf), "%s%s", FIXTURE, extra);
    ck_assert_int_eq(h_start(&d, conf), 0);
    fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
}

static void up(void)
{
    up_with("");
}

static void down(void)
{
    if (fd >= 0)
        close(fd);
    fd = -1;
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}

/* A reply as one line: +OK -ERR.. :1 "bulk" (nil) [a, b] {k: v}. */
static void show(const struct resp_value *v, char *out, size_t len)
{
    size_t n = strlen(out);
    if (n + 64 >= len)
        return;
    switch (v->type) {
    case RESP_SIMPLE:
        snprintf(out + n, len - n, "+%.*s", (int)v->len, v->str);
        break;
    case RESP_ERROR:
        snprintf(out + n, len - n, "-%.*s", (int)v->len, v->str);
        break;
    case RESP_INT:
        snprintf(out + n, len - n, ":%lld", (long long)v->integer);
        break;
    case RESP_BULK:
        snprintf(out + n, len - n, "\"%.*s\"", (int)v->len, v->str);
        break;
    case RESP_NULL:
        snprintf(out + n, len - n, "(nil)");
        break;
    case RESP_ARRAY:
    case RESP_SET:
    case RESP_MAP:
        snprintf(out + n, len - n, v->type == RESP_MAP ? "{" : "[");
        for (size_t i = 0; i < v->n; i++) {
            if (i > 0)
                strncat(out, v->type == RESP_MAP && i % 2 ? ": " : ", ", len - strlen(out) - 1);
            show(&v->elems[i], out, len);
        }
        strncat(out, v->type == RESP_MAP ? "}" : "]", len - strlen(out) - 1);
        break;
    default:
        snprintf(out + n, len - n, "<type %d>", (int)v->type);
    }
}

/* The reply r shown (r freed); a static buffer. */
static const char *shown(struct h_reply *r)
{
    static char buf[8192];
    buf[0] = '\0';
    show(r->v, buf, sizeof(buf));
    h_free(r);
    return buf;
}

/* Runs one command on f (NULL-terminated words) and returns its reply shown. */
#define on(f, ...) shown(h_call((f), __VA_ARGS__))

#define EXPECT_ON(f, want, ...)                                                   \
    do {                                                                          \
        const char *got_ = on(f, __VA_ARGS__, NULL);                              \
        ck_assert_msg(strcmp(got_, want) == 0, "%s: got %s, want %s", #__VA_ARGS__, got_, \
                      want);                                                      \
    } while (0)
#define EXPECT(want, ...) EXPECT_ON(fd, want, __VA_ARGS__)

/* ---- commands the owner runs ------------------------------------------------ */

START_TEST(owner_commands_answer_as_redis)
{
    up();
    EXPECT(":5", "APPEND", "ap", "hello");
    EXPECT(":11", "APPEND", "ap", " world");
    EXPECT("\"hello world\"", "GET", "ap");
    EXPECT(":11", "SETRANGE", "ap", "6", "WORLD");
    EXPECT("\"hello WORLD\"", "GET", "ap");
    EXPECT(":0", "SETRANGE", "sr-none", "0", "");
    EXPECT("-ERR offset is out of range", "SETRANGE", "ap", "-1", "x");
    EXPECT(":0", "SETBIT", "bits", "7", "1");
    EXPECT(":1", "SETBIT", "bits", "7", "0");
    EXPECT("-ERR bit is not an integer or out of range", "SETBIT", "bits", "7", "2");
    EXPECT("\"10.5\"", "INCRBYFLOAT", "fl", "10.5");
    EXPECT("\"5.25\"", "INCRBYFLOAT", "fl", "-5.25");
    EXPECT("-ERR value is not a valid float", "INCRBYFLOAT", "fl", "abc");
    EXPECT(":1", "MSETNX", "{m}1", "a", "{m}2", "b");
    EXPECT(":0", "MSETNX", "{m}2", "x", "{m}3", "c");
    EXPECT("[\"a\", \"b\", (nil)]", "MGET", "{m}1", "{m}2", "{m}3");
    EXPECT("-ERR wrong number of arguments for 'msetnx' command", "MSETNX", "{m}1", "a", "{m}2");
    EXPECT("+OK", "RENAME", "{m}1", "{m}9");
    EXPECT("(nil)", "GET", "{m}1");
    EXPECT("\"a\"", "GET", "{m}9");
    EXPECT("-ERR no such key", "RENAME", "{m}1", "{m}8");
    EXPECT(":0", "RENAMENX", "{m}9", "{m}2");
    EXPECT(":1", "RENAMENX", "{m}9", "{m}7");
    EXPECT(":1", "COPY", "{m}7", "{m}6");
    EXPECT(":0", "COPY", "{m}7", "{m}6");
    EXPECT(":1", "COPY", "{m}2", "{m}6", "REPLACE");
    EXPECT("\"b\"", "GET", "{m}6");
    EXPECT(":2", "TOUCH", "{m}6", "{m}7", "{m}none");
    EXPECT("+OK", "SET", "ex", "v", "EXAT", "4000000000");
    EXPECT(":4000000000", "EXPIRETIME", "ex");
    EXPECT(":4000000000000", "PEXPIRETIME", "ex");
    EXPECT(":-1", "EXPIRETIME", "ap");
    EXPECT(":-2", "PEXPIRETIME", "nothing");
    EXPECT("-ERR wrong number of arguments for 'append' command", "APPEND", "ap");
    down();
}
END_TEST

START_TEST(crossslot_unless_keys_share_an_owner)
{
    up();
    /* different pools, so different owners, whatever the hash */
    EXPECT(CROSSSLOT, "MSETNX", "h:x", "1", "x", "2");
    EXPECT(CROSSSLOT, "RENAME", "h:x", "x");
    EXPECT(CROSSSLOT, "COPY", "h:x", "x");
    EXPECT(CROSSSLOT, "TOUCH", "h:x", "x");
    EXPECT(CROSSSLOT, "LCS", "h:x", "x");
    EXPECT("(nil)", "GET", "h:x"); /* nothing was sent */
    EXPECT("(nil)", "GET", "x");
    /* a hash tag puts keys of one class on one owner: every pair works */
    char a[32], b[32];
    for (int i = 0; i < 20; i++) {
        snprintf(a, sizeof(a), "{user:%d}:name", i);
        snprintf(b, sizeof(b), "{user:%d}:mail", i);
        EXPECT(":1", "MSETNX", a, "n", b, "m");
        EXPECT("+OK", "RENAME", a, b);
        EXPECT("\"n\"", "GET", b);
        EXPECT("\"\"", "LCS", a, b);
    }
    /* DEL and MGET across owners are not atomic but allowed, as before */
    EXPECT(":0", "DEL", "h:x", "x");
    down();
}
END_TEST

START_TEST(owner_command_updates_the_colo_cache)
{
    /* without the owners' pushes: only the writing edge's own update of
     * the colo cache makes the other edge see the write */
    up_with("owner-push no\n");
    int a, b;
    ck_assert_int_eq(h_edge_pair(&d, &a, &b), 0);
    EXPECT_ON(a, "+OK", "SET", "{cc}k", "abc");
    EXPECT_ON(b, "\"abc\"", "GET", "{cc}k"); /* cached in the colo (fresh 10s) */
    EXPECT_ON(a, ":6", "APPEND", "{cc}k", "def");
    EXPECT_ON(b, "\"abcdef\"", "GET", "{cc}k");
    EXPECT_ON(b, "\"cdef\"", "GETRANGE", "{cc}k", "2", "-1");
    EXPECT_ON(a, "+OK", "RENAME", "{cc}k", "{cc}n");
    EXPECT_ON(b, "(nil)", "GET", "{cc}k");
    EXPECT_ON(b, "\"abcdef\"", "GET", "{cc}n");
    close(a);
    close(b);
    down();
}
END_TEST

/* ---- reads computed at the edge ---------------------------------------------- */

START_TEST(computed_reads_answer_as_redis)
{
    up();
    EXPECT("+OK", "SET", "s", "hello world");
    for (int round = 0; round < 2; round++) { /* the owner's answer, then the colo cache */
        EXPECT("\"hello\"", "GETRANGE", "s", "0", "4");
        EXPECT("\"world\"", "GETRANGE", "s", "-5", "-1");
        EXPECT("\"\"", "GETRANGE", "s", "5", "3");
        EXPECT("\"hello world\"", "SUBSTR", "s", "-100", "100");
        EXPECT("-ERR value is not an integer or out of range", "GETRANGE", "s", "a", "1");
        EXPECT(":1", "GETBIT", "s", "1");
        EXPECT(":0", "GETBIT", "s", "100000");
        EXPECT("-ERR bit offset is not an integer or out of range", "GETBIT", "s", "-1");
        EXPECT(":45", "BITCOUNT", "s");
        EXPECT(":7", "BITCOUNT", "s", "0", "1");
        EXPECT(":3", "BITCOUNT", "s", "0", "7", "BIT");
        EXPECT("-ERR syntax error", "BITCOUNT", "s", "0", "1", "WORD");
        EXPECT(":1", "BITPOS", "s", "1");
        EXPECT(":0", "BITPOS", "s", "0");
        EXPECT(":-1", "BITPOS", "s", "1", "-1", "-1", "BIT");
        EXPECT("-ERR The bit argument must be 1 or 0.", "BITPOS", "s", "2");
    }
    /* absent keys: Redis's answers for a missing key */
    EXPECT("\"\"", "GETRANGE", "none", "0", "-1");
    EXPECT(":0", "GETBIT", "none", "3");
    EXPECT(":0", "BITCOUNT", "none", "0", "1", "WORD"); /* Redis 7.0 looks the key up first */
    EXPECT(":-1", "BITPOS", "none", "1");
    EXPECT(":0", "BITPOS", "none", "0");
    EXPECT("+OK", "MSET", "{l}a", "ohmytext", "{l}b", "mynewtext");
    EXPECT("\"mytext\"", "LCS", "{l}a", "{l}b");
    EXPECT(":6", "LCS", "{l}a", "{l}b", "LEN");
    EXPECT("[\"matches\", [[[:4, :7], [:5, :8]], [[:2, :3], [:0, :1]]], \"len\", :6]",
           "LCS", "{l}a", "{l}b", "IDX");
    EXPECT("\"\"", "LCS", "{l}a", "{l}none");
    down();
}
END_TEST

START_TEST(computed_reads_see_the_clients_own_writes)
{
    up();
    /* pipelined: the read travels behind the write */
    struct hkv_buf b = HKV_BUF_INIT;
    for (int i = 0; i < 50; i++) {
        char v[32];
        snprintf(v, sizeof(v), "value-%02d", i);
        resp_add_array(&b, 3);
        resp_add_bulk_str(&b, "SET");
        resp_add_bulk_str(&b, "rw");
        resp_add_bulk_str(&b, v);
        resp_add_array(&b, 4);
        resp_add_bulk_str(&b, "GETRANGE");
        resp_add_bulk_str(&b, "rw");
        resp_add_bulk_str(&b, "-2");
        resp_add_bulk_str(&b, "-1");
        resp_add_array(&b, 3);
        resp_add_bulk_str(&b, "APPEND");
        resp_add_bulk_str(&b, "rw");
        resp_add_bulk_str(&b, "!");
        resp_add_array(&b, 4);
        resp_add_bulk_str(&b, "GETRANGE");
        resp_add_bulk_str(&b, "rw");
        resp_add_bulk_str(&b, "-3");
        resp_add_bulk_str(&b, "-1");
    }
    ck_assert_int_eq(h_send(fd, buf_head(&b), buf_unread(&b)), 0);
    buf_deinit(&b);
    for (int i = 0; i < 50; i++) {
        char want[32], got[256];
        struct h_reply *r[4];
        for (int k = 0; k < 4; k++) {
            r[k] = h_read(fd);
            ck_assert_ptr_nonnull(r[k]);
        }
        snprintf(want, sizeof(want), "\"%02d\"", i);
        got[0] = '\0';
        show(r[1]->v, got, sizeof(got));
        ck_assert_msg(strcmp(got, want) == 0, "round %d: GETRANGE after SET: %s", i, got);
        snprintf(want, sizeof(want), "\"%02d!\"", i);
        got[0] = '\0';
        show(r[3]->v, got, sizeof(got));
        ck_assert_msg(strcmp(got, want) == 0, "round %d: GETRANGE after APPEND: %s", i, got);
        for (int k = 0; k < 4; k++)
            h_free(r[k]);
    }
    down();
}
END_TEST

START_TEST(lcs_needs_both_keys_on_one_owner)
{
    up();
    /* different pools, so different owners, whatever the hash */
    EXPECT(CROSSSLOT, "LCS", "h:x", "x");
    EXPECT("+OK", "MSET", "{u}a", "abcde", "{u}b", "xbdy");
    EXPECT("\"bd\"", "LCS", "{u}a", "{u}b");
    down();
}
END_TEST

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

/* ---- against redis-server --------------------------------------------------------- */

static pid_t redis_start(int port)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char p[16];
        snprintf(p, sizeof(p), "%d", port);
        int null = open("/dev/null", 1);
        dup2(null, 1);
        dup2(null, 2);
        execl("/usr/bin/redis-server", "redis-server", "--port", p, "--bind", "127.0.0.1",
              "--save", "", "--appendonly", "no", "--dir", "/tmp", NULL);
        _exit(127);
    }
    for (int i = 0; i < 200 && !h_ping(port); i++)
        h_sleep_ms(25);
    return pid;
}

START_TEST(replies_match_redis_server)
{
    if (access("/usr/bin/redis-server", X_OK) != 0) {
        fprintf(stderr, "SKIP redis comparison: redis-server not installed\n");
        return;
    }
    up();
    int rport = h_free_port();
    pid_t rpid = redis_start(rport);
    int r = h_connect(rport);
    ck_assert_int_ge(r, 0);
    static const char *const script[][8] = {
        {"SET", "{c}s", "The quick brown fox"},
        {"APPEND", "{c}s", " jumps"}, {"APPEND", "{c}new", ""},
        {"SETRANGE", "{c}s", "4", "QUICK"}, {"SETRANGE", "{c}s", "30", "x"},
        {"SETRANGE", "{c}s", "-1", "x"}, {"SETRANGE", "{c}s", "abc", "x"},
        {"GETRANGE", "{c}s", "-10", "-3"}, {"GETRANGE", "{c}s", "20", "5"},
        {"SUBSTR", "{c}s", "0", "-40"}, {"GETRANGE", "{c}s", "x", "1"},
        {"SETBIT", "{c}b", "100", "1"}, {"SETBIT", "{c}b", "100", "x"},
        {"SETBIT", "{c}b", "-1", "1"}, {"GETBIT", "{c}b", "100"}, {"GETBIT", "{c}b", "abc"},
        {"BITCOUNT", "{c}s"}, {"BITCOUNT", "{c}s", "1", "-2"},
        {"BITCOUNT", "{c}s", "5", "30", "BIT"},
        {"BITCOUNT", "{c}s", "1"}, {"BITPOS", "{c}b", "1"}, {"BITPOS", "{c}b", "0", "2"},
        {"BITPOS", "{c}s", "0", "1", "3", "BIT"}, {"BITPOS", "{c}s", "3"},
        {"INCRBYFLOAT", "{c}f", "1.1"}, {"INCRBYFLOAT", "{c}f", "1e3"},
        {"INCRBYFLOAT", "{c}f", "-0.1"}, {"INCRBYFLOAT", "{c}s", "1"},
        {"INCRBYFLOAT", "{c}f", "inf"},
        {"MSETNX", "{c}m1", "1", "{c}m2", "2"}, {"MSETNX", "{c}m1", "1", "{c}m3", "3"},
        {"RENAME", "{c}m1", "{c}m4"}, {"RENAME", "{c}none", "{c}m5"}, {"RENAME", "{c}m4", "{c}m4"},
        {"RENAMENX", "{c}m4", "{c}m2"}, {"RENAMENX", "{c}m4", "{c}m6"},
        {"COPY", "{c}m6", "{c}m7"}, {"COPY", "{c}m6", "{c}m7"},
        {"COPY", "{c}m6", "{c}m7", "REPLACE"},
        {"COPY", "{c}m6", "{c}m6"},
        {"COPY", "{c}m6", "{c}m8", "BOGUS"},
        {"TOUCH", "{c}m6", "{c}m7", "{c}none"}, {"EXPIRETIME", "{c}m6"}, {"PEXPIRETIME", "{c}none"},
        {"LCS", "{c}s", "{c}m6"}, {"LCS", "{c}s", "{c}s", "LEN"},
        {"LCS", "{c}s", "{c}s", "IDX", "MINMATCHLEN", "3", "WITHMATCHLEN"},
        {"LCS", "{c}s", "{c}s", "BOGUS"},
        {"MULTI"}, {"GET", "{c}s"}, {"INCR", "{c}s"}, {"SETRANGE", "{c}s", "0", "ab"}, {"EXEC"},
        {"MULTI"}, {"EXEC"}, {"EXEC"}, {"DISCARD"}, {"MULTI"}, {"MULTI"}, {"NOSUCH"}, {"EXEC"},
        {"WATCH", "{c}s"}, {"MULTI"}, {"WATCH", "{c}s"}, {"PING"}, {"EXEC"},
        {"UNWATCH"}, {"MULTI"}, {"SET", "{c}z", "1"}, {"EXEC", "x"}, {"EXEC"}, {"GET", "{c}z"},
    };
    for (size_t i = 0; i < sizeof(script) / sizeof(script[0]); i++) {
        int n = 0;
        while (n < 8 && script[i][n] != NULL)
            n++;
        struct h_reply *want = h_cmd(r, n, (const char **)script[i]);
        struct h_reply *got = h_cmd(fd, n, (const char **)script[i]);
        ck_assert_ptr_nonnull(want);
        ck_assert_ptr_nonnull(got);
        ck_assert_msg(strcmp(want->raw, got->raw) == 0, "%s %s: redis %s, hotkvd %s",
                      script[i][0], n > 1 ? script[i][1] : "", want->raw, got->raw);
        h_free(want);
        h_free(got);
    }
    close(r);
    kill(rpid, SIGTERM);
    ck_assert_int_ge(h_wait(rpid, 5000), 0);
    down();
}
END_TEST

/* BITFIELD_RO, added as a command the owner runs (proto/cmd.h, a CALL row in
 * edge_registry.c, owner_cmd_bits.c): the GET fields of a value, bits past
 * its end as zeros, Redis's errors in Redis's order, inside MULTI too; and,
 * where redis-server is installed, the same bytes as Redis 7.0. */
START_TEST(bitfield_ro_reads_fields_as_redis)
{
    up();
    EXPECT("+OK", "SET", "bf", "\xff\x01");
    EXPECT("[:255, :-1, :1, :0]", "BITFIELD_RO", "bf", "GET", "u8", "0", "GET", "i8", "0",
           "GET", "u8", "#1", "GET", "u4", "16");
    EXPECT("[:510, :1]", "BITFIELD_RO", "bf", "GET", "u9", "#0", "GET", "i4", "#3");
    EXPECT("[:0]", "BITFIELD_RO", "bf-none", "GET", "i64", "0");
    EXPECT("[]", "BITFIELD_RO", "bf");
    EXPECT("[:255]", "BITFIELD_RO", "bf", "OVERFLOW", "SAT", "GET", "u8", "0");
    EXPECT("-ERR BITFIELD_RO only supports the GET subcommand", "BITFIELD_RO", "bf", "SET", "u8",
           "0", "1");
    EXPECT("-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not "
           "supported but i64 is.", "BITFIELD_RO", "bf", "GET", "u64", "0");
    EXPECT("-ERR bit offset is not an integer or out of range", "BITFIELD_RO", "bf", "GET", "u8",
           "-1");
    EXPECT("-ERR syntax error", "BITFIELD_RO", "bf", "GET", "u8");
    EXPECT("-ERR Invalid OVERFLOW type specified", "BITFIELD_RO", "bf", "OVERFLOW", "x");
    EXPECT("-ERR wrong number of arguments for 'bitfield_ro' command", "BITFIELD_RO");
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "BITFIELD_RO", "bf", "GET", "u1", "0");
    EXPECT("[[:1]]", "EXEC");
    if (access("/usr/bin/redis-server", X_OK) == 0) {
        int rport = h_free_port();
        pid_t rpid = redis_start(rport);
        int r = h_connect(rport);
        ck_assert_int_ge(r, 0);
        static const char *const script[][12] = {
            {"SET", "{c}bf", "hotkvd"},
            {"BITFIELD_RO", "{c}bf", "GET", "i5", "3", "GET", "u63", "1", "GET", "i64", "#0"},
            {"BITFIELD_RO", "{c}bf", "GET", "i16", "#2", "GET", "u1", "47", "GET", "u7", "45"},
            {"BITFIELD_RO", "{c}bf", "GET", "I8", "0"}, {"BITFIELD_RO", "{c}bf", "GET", "i0", "0"},
            {"BITFIELD_RO", "{c}bf", "GET", "u8", "#x"}, {"BITFIELD_RO", "{c}bf", "INCRBY"},
            {"BITFIELD_RO", "{c}bf", "INCRBY", "u8", "0", "x"},
            {"BITFIELD_RO", "{c}bf", "GET", "u8", "4294967296"},
            {"BITFIELD_RO", "{c}none", "GET", "u8", "8", "OVERFLOW", "FAIL", "GET", "i3", "1"},
        };
        for (size_t i = 0; i < sizeof(script) / sizeof(script[0]); i++) {
            int n = 0;
            while (n < 12 && script[i][n] != NULL)
                n++;
            struct h_reply *want = h_cmd(r, n, (const char **)script[i]);
            struct h_reply *got = h_cmd(fd, n, (const char **)script[i]);
            ck_assert_ptr_nonnull(want);
            ck_assert_ptr_nonnull(got);
            ck_assert_msg(strcmp(want->raw, got->raw) == 0, "script %zu: redis %s, hotkvd %s", i,
                          want->raw, got->raw);
            h_free(want);
            h_free(got);
        }
        close(r);
        kill(rpid, SIGTERM);
        ck_assert_int_ge(h_wait(rpid, 5000), 0);
    }
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
        {"owner_commands", owner_commands_answer_as_redis},
        {"crossslot", crossslot_unless_keys_share_an_owner},
        {"call_cache", owner_command_updates_the_colo_cache},
        {"computed_reads", computed_reads_answer_as_redis},
        {"computed_ryw", computed_reads_see_the_clients_own_writes},
        {"lcs_crossslot", lcs_needs_both_keys_on_one_owner},
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
        {"vs_redis", replies_match_redis_server},
        {"bitfield_ro", bitfield_ro_reads_fields_as_redis},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
