/*
 * check_calls.c - issue 13's commands on the edge, against the real daemon,
 * outside transactions: the commands the owner runs (CALL: APPEND SETRANGE
 * SETBIT INCRBYFLOAT MSETNX RENAME RENAMENX COPY TOUCH EXPIRETIME
 * PEXPIRETIME), the reads the edge computes over the value read (GETRANGE
 * SUBSTR GETBIT BITCOUNT BITPOS LCS, BITFIELD_RO), CROSSSLOT against hash
 * tags; where redis-server is installed a few replies are compared with it
 * byte for byte.  MULTI/EXEC and WATCH: check_tx.c.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/tx_fixture.h"

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

/* A read the owner runs (EXPIRETIME, TOUCH) changes nothing and leaves the
 * key's colo entry alone: only a write that changed nothing is doubted (a
 * client polling EXPIRETIME of a hot key would empty its entry each time). */
START_TEST(owner_reads_leave_the_colo_cache_alone)
{
    up();
    EXPECT("+OK", "SET", "h:t", "v");
    EXPECT("\"v\"", "GET", "h:t"); /* in the colo (fresh 1s) */
    EXPECT(":-1", "EXPIRETIME", "h:t");
    EXPECT(":1", "TOUCH", "h:t");
    int64_t hits = h_info_int(d.port, "cache_hits"), misses = h_info_int(d.port, "cache_misses");
    EXPECT("\"v\"", "GET", "h:t");
    ck_assert_int_eq(h_info_int(d.port, "cache_hits"), hits + 1);
    ck_assert_int_eq(h_info_int(d.port, "cache_misses"), misses);
    /* a write run by the owner that changed nothing is doubted: the next
     * read asks the owner */
    EXPECT(":0", "MSETNX", "h:t", "w");
    misses = h_info_int(d.port, "cache_misses");
    EXPECT("\"v\"", "GET", "h:t");
    ck_assert_int_eq(h_info_int(d.port, "cache_misses"), misses + 1);
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

/* BITFIELD's writes (owner_cmd_bitfield.c, one ledger read-modify-write):
 * Redis's documented counters under each OVERFLOW, a string grown with
 * zeros to the highest bit written (and stored even when FAIL wrote
 * nothing), the key's TTL kept, a GET-only line a read, parse errors before
 * anything is applied; and the colo cache serves the new bytes at once. */
START_TEST(bitfield_writes_as_redis)
{
    up();
    EXPECT("[:1, :0]", "BITFIELD", "bw", "INCRBY", "i5", "100", "1", "GET", "u4", "0");
    EXPECT(":14", "STRLEN", "bw"); /* bits 100..104: byte 13 is the last */
    EXPECT("[:1, :1]", "BITFIELD", "c2", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY",
           "u2", "102", "1");
    EXPECT("[:2, :2]", "BITFIELD", "c2", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY",
           "u2", "102", "1");
    EXPECT("[:3, :3]", "BITFIELD", "c2", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY",
           "u2", "102", "1");
    EXPECT("[:0, :3]", "BITFIELD", "c2", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY",
           "u2", "102", "1");
    EXPECT("[(nil)]", "BITFIELD", "c2", "OVERFLOW", "FAIL", "INCRBY", "u2", "102", "1");
    EXPECT("[:0, :-128, :127]", "BITFIELD", "s", "SET", "i8", "0", "-128", "GET", "i8", "0",
           "INCRBY", "i8", "0", "-1");
    EXPECT("\"\x7f\"", "GET", "s"); /* the cache serves the owner's new bytes */
    EXPECT("\"raw\"", "OBJECT", "ENCODING", "s");
    EXPECT("+OK", "SET", "t", "a", "EX", "100");
    EXPECT("[:97]", "BITFIELD", "t", "SET", "u8", "#0", "98");
    EXPECT("\"b\"", "GET", "t");
    EXPECT(":1", "PERSIST", "t"); /* the TTL was kept */
    EXPECT("[(nil)]", "BITFIELD", "f", "OVERFLOW", "FAIL", "SET", "u1", "#16", "2");
    EXPECT(":3", "STRLEN", "f"); /* created, zeros, though no field was written */
    EXPECT("[:0]", "BITFIELD", "g", "GET", "u8", "0");
    EXPECT(":0", "EXISTS", "g"); /* GETs only: a read */
    EXPECT("-ERR value is not an integer or out of range", "BITFIELD", "g", "SET", "u8", "0",
           "1", "INCRBY", "u8", "0", "x");
    EXPECT(":0", "EXISTS", "g"); /* the first SET was not applied either */
    EXPECT("-ERR syntax error", "BITFIELD", "g", "SET", "u8", "0");
    EXPECT("-ERR Invalid OVERFLOW type specified", "BITFIELD", "g", "OVERFLOW", "up");
    EXPECT("-ERR wrong number of arguments for 'bitfield' command", "BITFIELD");
    EXPECT("+OK", "MULTI");
    EXPECT("+QUEUED", "BITFIELD", "m", "INCRBY", "u8", "0", "7");
    EXPECT("+QUEUED", "BITFIELD", "m", "INCRBY", "u8", "0", "7");
    EXPECT("[[:7], [:14]]", "EXEC");
    down();
}
END_TEST

Suite *calls_suite(void)
{
    Suite *s = suite_create("calls");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"owner_commands", owner_commands_answer_as_redis},
        {"crossslot", crossslot_unless_keys_share_an_owner},
        {"call_cache", owner_command_updates_the_colo_cache},
        {"call_reads_cache", owner_reads_leave_the_colo_cache_alone},
        {"computed_reads", computed_reads_answer_as_redis},
        {"computed_ryw", computed_reads_see_the_clients_own_writes},
        {"lcs_crossslot", lcs_needs_both_keys_on_one_owner},
        {"vs_redis", replies_match_redis_server},
        {"bitfield_ro", bitfield_ro_reads_fields_as_redis},
        {"bitfield", bitfield_writes_as_redis},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
