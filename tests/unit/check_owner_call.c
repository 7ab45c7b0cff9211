/* check_owner_call.c - Redis commands run by the owner (server/owner:
 * owner_call.c over the command table owner_cmds.c and its handlers), sent
 * as CALL and EXEC frames, without a daemon.
 *
 * Built like check_owner_exec.c: a real owner (owner_init + owner_open: a
 * ledger, a persister on a SQLite file in a temp dir, the link hooks) and
 * fake edge links (one end of a bufferevent pair attached with
 * olink_attach).  Replies are checked byte for byte against what
 * redis-server 7.0.15 answers to the same command (observed with redis-cli
 * on a private port), and every change list against the versions the keys
 * hold (a wire GET's stamp). */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "config/cfg.h"
#include "proto/wire.h"
#include "server/core/log.h"
#include "server/core/router.h"
#include "server/owner/owner_int.h"
#include "tests/harness.h"
#include "tests/unit/fake_edge.h"
#include "tests/unit/owner_fixture.h"

#define WAIT_MS 10000 /* a durable commit or a disk read on a loaded machine */
#define MAXARGS 16

/* "d:*" is durable; persist-interval 1h keeps ledger-class keys dirty
 * unless a test flushes them.  %s: extra lines. */
static const char CONF[] = "dir %s\n"
                           "hot-owners %d\n"
                           "cold-owners 1\n"
                           "persist-interval 1h\n"
                           "durable-timeout 60s\n"
                           "%s"
                           "class money pattern \"d:*\" pool hot fresh 0 keep 0 durability durable "
                           "on-timeout error\n"
                           "class default pool hot fresh 1s keep 60s durability ledger\n";

static char dir[256];
static struct worker_ctx ctx;
static struct owner own;
static int have_owner;

static struct fake_edge A, B;

/* Starts an owner on dir (made by the caller) with `extra` config lines. */
static void start_owner(int hot_owners, const char *extra)
{
    char text[2048];
    snprintf(text, sizeof(text), CONF, dir, hot_owners, extra);
    of_start(&own, &ctx, text, "call.conf", NULL);
    have_owner = 1;
    fe_open(&own, &A, 1);
    fe_open(&own, &B, 2);
}

static void stop_owner(void)
{
    if (!have_owner)
        return;
    fe_close(&A);
    fe_close(&B);
    of_stop(&own, &ctx);
    have_owner = 0;
}

static void setup(void)
{
    log_setup(CFG_LOG_WARNING, NULL);
    h_tmpdir(dir, sizeof(dir));
    start_owner(1, "");
}

static void setup_two_owners(void)
{
    log_setup(CFG_LOG_WARNING, NULL);
    h_tmpdir(dir, sizeof(dir));
    start_owner(2, "");
}

static void teardown(void)
{
    stop_owner();
    h_rmtree(dir);
}

/* Runs the loop until both links took in what was written (bounded). */
static void pump(void)
{
    struct fake_edge *all[] = {&A, &B};
    for (int pass = 0; pass < 100; pass++) {
        int pending = 0;
        for (size_t i = 0; i < 2; i++)
            if (evbuffer_get_length(bufferevent_get_input(all[i]->l->bev)) > 0)
                pending = 1;
        if (!pending && pass > 0)
            return;
        event_base_loop(own.base, EVLOOP_NONBLOCK);
    }
}

static void hello(struct fake_edge *f)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    ck_assert_int_eq(wire_put_hello(&b, ++f->id, WIRE_VERSION, f->edge_id, wire_cstr("c"),
                                    WIRE_ROLE_WRITE, f->inc),
                     HKV_OK);
    fe_send(f, &b);
    pump();
    ck_assert(fe_take_reply(f, &m));
    ck_assert_uint_eq(m.type, WIRE_HELLO_OK);
    buf_deinit(&b);
}

static struct wire_rid next_rid(struct fake_edge *f)
{
    return (struct wire_rid){.seq = ++f->seq, .ack = 1, .prev = 0};
}

/* Splits a command line on spaces into args (pointing into line, which it
 * changes).  Returns the count. */
static uint32_t split(char *line, struct wire_slice *args)
{
    uint32_t n = 0;
    for (char *save = NULL, *w = strtok_r(line, " ", &save); w != NULL && n < MAXARGS;
         w = strtok_r(NULL, " ", &save))
        args[n++] = wire_cstr(w);
    return n;
}

/* Sends "CALL <line>" (words split on spaces) with rid; does not wait. */
static void send_call(struct fake_edge *f, int proto, struct wire_rid rid, const char *line)
{
    char copy[512];
    struct wire_slice args[MAXARGS];
    snprintf(copy, sizeof(copy), "%s", line);
    uint32_t n = split(copy, args);
    struct hkv_buf b = HKV_BUF_INIT;
    ck_assert_int_eq(wire_put_call(&b, ++f->id, rid, (uint8_t)proto, args, n), HKV_OK);
    fe_send(f, &b);
    buf_deinit(&b);
}

/* CALL answered at once: its reply into *m (asserted to be for this id). */
static void call_rid(struct fake_edge *f, int proto, struct wire_rid rid, const char *line,
                     struct wire_msg *m)
{
    send_call(f, proto, rid, line);
    pump();
    ck_assert_msg(fe_take_reply(f, m), "CALL %s not answered at once", line);
    ck_assert_uint_eq(m->id, f->id);
}

static void call(struct fake_edge *f, const char *line, struct wire_msg *m)
{
    call_rid(f, 2, next_rid(f), line, m);
}

/* Asserts m is RESP with exactly `bytes`. */
static void assert_resp(const struct wire_msg *m, const char *bytes)
{
    ck_assert_msg(m->type == WIRE_RESP, "expected RESP, got %s", wire_type_name(m->type));
    ck_assert_msg(m->u.resp.reply.len == strlen(bytes) &&
                      memcmp(m->u.resp.reply.p, bytes, strlen(bytes)) == 0,
                  "reply '%.*s', expected '%s'", (int)m->u.resp.reply.len, m->u.resp.reply.p,
                  bytes);
}

/* CALL line on A, asserting the reply bytes; returns the number of changes. */
static uint32_t expect(const char *line, const char *bytes)
{
    struct wire_msg m;
    call(&A, line, &m);
    assert_resp(&m, bytes);
    return m.u.resp.nchanges;
}

/* The version m's change list gives key, 0 if it is not there. */
static hkv_stamp change_of(const struct wire_msg *m, const char *key)
{
    for (uint32_t i = 0; i < m->u.resp.nchanges; i++)
        if (m->u.resp.changes[i].key.len == strlen(key) &&
            memcmp(m->u.resp.changes[i].key.p, key, strlen(key)) == 0)
            return m->u.resp.changes[i].version;
    return 0;
}

/* The version key holds (wire GET: VALUE's or NOTFOUND's stamp); *found. */
static hkv_stamp version_of(const char *key, int *found)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    struct wire_slice k = wire_cstr(key);
    ck_assert_int_eq(wire_put_get(&b, ++B.id, &k, 1), HKV_OK);
    fe_send(&B, &b);
    fe_wait_reply(&own, &B, &m, WAIT_MS);
    buf_deinit(&b);
    ck_assert_msg(m.type == WIRE_VALUE || m.type == WIRE_NOTFOUND, "GET %s: %s", key,
                  wire_type_name(m.type));
    *found = m.type == WIRE_VALUE;
    return m.type == WIRE_VALUE ? m.u.value.stamp : m.u.notfound.stamp;
}

/* Asserts m changed exactly key (among others) to the version it holds now. */
static void assert_changed_to_current(const struct wire_msg *m, const char *key, int live)
{
    int found;
    hkv_stamp v = change_of(m, key);
    ck_assert_msg(v != 0, "%s is not in the change list", key);
    ck_assert_uint_eq(version_of(key, &found), v);
    ck_assert_int_eq(found, live);
}

/* An EXEC of `lines` (each split on spaces) watching watch[0..nwatch). */
static void send_exec(struct fake_edge *f, int proto, struct wire_rid rid,
                      const struct wire_watch *watch, uint32_t nwatch, const char *const *lines,
                      uint32_t n)
{
    char copy[8][256];
    struct wire_slice args[8][MAXARGS];
    struct wire_cmd cmds[8];
    ck_assert_uint_le(n, 8);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(copy[i], sizeof(copy[i]), "%s", lines[i]);
        cmds[i] = (struct wire_cmd){args[i], split(copy[i], args[i])};
    }
    struct hkv_buf b = HKV_BUF_INIT;
    ck_assert_int_eq(wire_put_exec(&b, ++f->id, rid, (uint8_t)proto, watch, nwatch, cmds, n),
                     HKV_OK);
    fe_send(f, &b);
    buf_deinit(&b);
}

/* ---- single commands: replies and versions ---- */

START_TEST(strops_commands_answer_redis_bytes_and_list_new_versions)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    call(&A, "APPEND s hello", &m);
    assert_resp(&m, ":5\r\n");
    ck_assert_uint_eq(m.u.resp.nchanges, 1);
    hkv_stamp v1 = change_of(&m, "s");
    assert_changed_to_current(&m, "s", 1);
    call(&A, "APPEND s _world", &m);
    assert_resp(&m, ":11\r\n");
    ck_assert_uint_gt(change_of(&m, "s"), v1);
    assert_changed_to_current(&m, "s", 1);
    call(&A, "SETRANGE s 6 W", &m);
    assert_resp(&m, ":11\r\n");
    assert_changed_to_current(&m, "s", 1);
    ck_assert_uint_eq(expect("GETRANGE s 0 -1", "$11\r\nhello_World\r\n"), 0);
    ck_assert_uint_eq(expect("GETRANGE s -5 -1", "$5\r\nWorld\r\n"), 0);
    ck_assert_uint_eq(expect("SUBSTR s 0 4", "$5\r\nhello\r\n"), 0);
    ck_assert_uint_eq(expect("SETRANGE s -1 x", "-ERR offset is out of range\r\n"), 0);

    call(&A, "INCRBYFLOAT f 10.5", &m);
    assert_resp(&m, "$4\r\n10.5\r\n");
    assert_changed_to_current(&m, "f", 1);
    ck_assert_uint_eq(expect("INCRBYFLOAT f 0.1", "$4\r\n10.6\r\n"), 1);
    ck_assert_uint_eq(expect("INCRBYFLOAT s 1", "-ERR value is not a valid float\r\n"), 0);
    ck_assert_uint_eq(expect("GET f", "$4\r\n10.6\r\n"), 0);

    call(&A, "SETBIT b 7 1", &m);
    assert_resp(&m, ":0\r\n");
    assert_changed_to_current(&m, "b", 1);
    ck_assert_uint_eq(expect("SETBIT b 7 1", ":1\r\n"), 0); /* unchanged: no new version */
    ck_assert_uint_eq(expect("GETBIT b 7", ":1\r\n"), 0);
    ck_assert_uint_eq(expect("BITCOUNT b", ":1\r\n"), 0);
    ck_assert_uint_eq(expect("SETBIT b 7 2",
                             "-ERR bit is not an integer or out of range\r\n"), 0);
}
END_TEST

START_TEST(rename_copy_and_msetnx_answer_redis_bytes_and_list_every_key)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    ck_assert_uint_eq(expect("SET a 1 EX 100", "+OK\r\n"), 1);
    call(&A, "RENAME a b", &m);
    assert_resp(&m, "+OK\r\n");
    ck_assert_uint_eq(m.u.resp.nchanges, 2);
    assert_changed_to_current(&m, "a", 0); /* the tombstone's version */
    assert_changed_to_current(&m, "b", 1);
    call(&A, "PTTL b", &m); /* the deadline moved with the value */
    ck_assert_uint_eq(m.type, WIRE_RESP);
    ck_assert(m.u.resp.reply.p[0] == ':' && m.u.resp.reply.p[1] != '-');
    ck_assert_uint_eq(expect("RENAME a c", "-ERR no such key\r\n"), 0);
    ck_assert_uint_eq(expect("RENAME b b", "+OK\r\n"), 0);
    ck_assert_uint_eq(expect("RENAMENX b b", ":0\r\n"), 0);
    ck_assert_uint_eq(expect("SET c 3", "+OK\r\n"), 1);
    ck_assert_uint_eq(expect("RENAMENX b c", ":0\r\n"), 0);
    call(&A, "RENAMENX c a", &m);
    assert_resp(&m, ":1\r\n");
    assert_changed_to_current(&m, "c", 0);
    assert_changed_to_current(&m, "a", 1);

    call(&A, "COPY b d", &m);
    assert_resp(&m, ":1\r\n");
    ck_assert_uint_eq(m.u.resp.nchanges, 1); /* the source is untouched */
    assert_changed_to_current(&m, "d", 1);
    ck_assert_uint_eq(expect("COPY b d", ":0\r\n"), 0);
    ck_assert_uint_eq(expect("COPY a d REPLACE", ":1\r\n"), 1);
    ck_assert_uint_eq(expect("GET d", "$1\r\n3\r\n"), 0);
    ck_assert_uint_eq(expect("COPY nothere d", ":0\r\n"), 0);
    ck_assert_uint_eq(expect("COPY b b", "-ERR source and destination objects are the same\r\n"),
                      0);
    ck_assert_uint_eq(expect("COPY b e DB 0", ":1\r\n"), 1);
    ck_assert_uint_eq(expect("COPY b f DB 1", "-ERR DB index is out of range\r\n"), 0);
    ck_assert_uint_eq(expect("COPY b f DB x", "-ERR value is not an integer or out of range\r\n"),
                      0);
    ck_assert_uint_eq(expect("COPY b f DB", "-ERR syntax error\r\n"), 0);

    call(&A, "MSETNX x 1 y 2", &m);
    assert_resp(&m, ":1\r\n");
    ck_assert_uint_eq(m.u.resp.nchanges, 2);
    assert_changed_to_current(&m, "x", 1);
    assert_changed_to_current(&m, "y", 1);
    ck_assert_uint_eq(expect("MSETNX x 3 z 4", ":0\r\n"), 0);
    ck_assert_uint_eq(expect("MGET x y z", "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n"), 0);
    ck_assert_uint_eq(expect("MSETNX x 1 y",
                             "-ERR wrong number of arguments for 'msetnx' command\r\n"), 0);
}
END_TEST

START_TEST(set_options_follow_redis_7_rules_and_errors)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    ck_assert_uint_eq(expect("SET s v NX GET", "$-1\r\n"), 1);
    ck_assert_uint_eq(expect("SET s w NX GET", "$1\r\nv\r\n"), 0); /* refused, old value */
    call(&A, "SET s w XX GET PX 100000", &m);
    assert_resp(&m, "$1\r\nv\r\n");
    assert_changed_to_current(&m, "s", 1);
    ck_assert_uint_eq(expect("SET s x KEEPTTL", "+OK\r\n"), 1);
    call(&A, "TTL s", &m);
    assert_resp(&m, ":100\r\n");
    ck_assert_uint_eq(expect("SET s y EX 5 EX 50", "+OK\r\n"), 1); /* the last one wins */
    ck_assert_uint_eq(expect("TTL s", ":50\r\n"), 0);
    ck_assert_uint_eq(expect("SET s y EX 10 PX 5", "-ERR syntax error\r\n"), 0);
    ck_assert_uint_eq(expect("SET s y NX XX", "-ERR syntax error\r\n"), 0);
    ck_assert_uint_eq(expect("SET s y KEEPTTL EX 1", "-ERR syntax error\r\n"), 0);
    ck_assert_uint_eq(expect("SET s y EX", "-ERR syntax error\r\n"), 0);
    ck_assert_uint_eq(expect("SET s y EX 0", "-ERR invalid expire time in 'set' command\r\n"), 0);
    ck_assert_uint_eq(expect("SET s y PX 9223372036854775807",
                             "-ERR invalid expire time in 'set' command\r\n"), 0);
    ck_assert_uint_eq(expect("SET s y EX abc", "-ERR value is not an integer or out of range\r\n"),
                      0);
    ck_assert_uint_eq(expect("SETEX s 0 y", "-ERR invalid expire time in 'setex' command\r\n"), 0);
    /* GETEX reads the key before it judges the expire value */
    ck_assert_uint_eq(expect("GETEX nothere EX abc", "$-1\r\n"), 0);
    ck_assert_uint_eq(expect("GETEX s EX abc", "-ERR value is not an integer or out of range\r\n"),
                      0);
    ck_assert_uint_eq(expect("GET s", "$1\r\ny\r\n"), 0);
    call(&A, "SET s z PXAT 1", &m); /* a deadline in the past deletes, as Redis */
    assert_resp(&m, "+OK\r\n");
    assert_changed_to_current(&m, "s", 0);
    ck_assert_uint_eq(expect("EXISTS s", ":0\r\n"), 0);
    call_rid(&A, 3, next_rid(&A), "SET nothere v XX", &m);
    assert_resp(&m, "_\r\n");
    ck_assert_uint_eq(expect("GET", "-ERR wrong number of arguments for 'get' command\r\n"), 0);
    ck_assert_uint_eq(expect("NOSUCH a b", "-ERR unknown command 'NOSUCH', with args beginning "
                                           "with: 'a' 'b' \r\n"),
                      0);
    ck_assert_uint_eq(expect("EXPIRE x 10 NX GT", "-ERR NX and XX, GT or LT options at the same "
                                                  "time are not compatible\r\n"),
                      0);
    ck_assert_uint_eq(expect("EXPIRE x 10 FOO", "-ERR Unsupported option FOO\r\n"), 0);
}
END_TEST

/* ---- retries ---- */

START_TEST(retried_call_gets_the_original_reply_and_applies_once)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    struct wire_rid rid = next_rid(&A);
    call_rid(&A, 2, rid, "INCRBYFLOAT r 1.5", &m);
    assert_resp(&m, "$3\r\n1.5\r\n");
    hkv_stamp v = change_of(&m, "r");
    ck_assert_uint_ne(v, 0);
    for (int i = 0; i < 3; i++) {
        call_rid(&A, 2, rid, "INCRBYFLOAT r 1.5", &m);
        assert_resp(&m, "$3\r\n1.5\r\n");
        ck_assert_uint_eq(m.u.resp.nchanges, 1);
        ck_assert_uint_eq(change_of(&m, "r"), v);
    }
    ck_assert_uint_eq(own.st.owner_idempotent_retries, 3);
    ck_assert_uint_eq(expect("GET r", "$3\r\n1.5\r\n"), 0);
    int found;
    ck_assert_uint_eq(version_of("r", &found), v);

    /* an EXEC too */
    const char *tx[] = {"INCR n", "APPEND n x"};
    struct wire_rid xr = next_rid(&A);
    for (int i = 0; i < 2; i++) {
        send_exec(&A, 2, xr, NULL, 0, tx, 2);
        pump();
        ck_assert(fe_take_reply(&A, &m));
        assert_resp(&m, "*2\r\n:1\r\n:2\r\n");
    }
    ck_assert_uint_eq(expect("GET n", "$2\r\n1x\r\n"), 0);
}
END_TEST

/* ---- transactions ---- */

START_TEST(exec_runs_every_command_and_answers_one_array)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    const char *tx[] = {"SET a 1", "INCR a", "APPEND a x", "GET a", "INCR a", "DEL a z",
                        "SET b 2 GET"};
    send_exec(&A, 2, next_rid(&A), NULL, 0, tx, 7);
    pump();
    ck_assert(fe_take_reply(&A, &m));
    /* a command's runtime error is its element; the others still run */
    assert_resp(&m, "*7\r\n+OK\r\n:2\r\n:2\r\n$2\r\n2x\r\n"
                    "-ERR value is not an integer or out of range\r\n:1\r\n$-1\r\n");
    ck_assert_uint_eq(m.u.resp.nchanges, 2); /* one entry per key, its final version */
    assert_changed_to_current(&m, "a", 0);
    assert_changed_to_current(&m, "b", 1);

    /* RESP3, and an unknown command in the batch is an error element */
    const char *tx3[] = {"SET c 1", "NOPE", "GET nothere"};
    send_exec(&A, 3, next_rid(&A), NULL, 0, tx3, 3);
    pump();
    ck_assert(fe_take_reply(&A, &m));
    assert_resp(&m, "*3\r\n+OK\r\n-ERR unknown command 'NOPE', with args beginning with: \r\n"
                    "_\r\n");
}
END_TEST

START_TEST(exec_with_a_stale_watch_answers_nil_and_changes_nothing)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    call(&A, "SET w 1", &m);
    hkv_stamp seen = change_of(&m, "w");
    int found;
    hkv_stamp absent = version_of("other", &found);
    ck_assert(!found);
    struct wire_watch watch[2] = {{wire_cstr("w"), seen}, {wire_cstr("other"), absent}};
    const char *tx[] = {"SET w 2", "SET other 1"};
    send_exec(&A, 2, next_rid(&A), watch, 2, tx, 2);
    pump();
    ck_assert(fe_take_reply(&A, &m));
    assert_resp(&m, "*2\r\n+OK\r\n+OK\r\n");

    /* the versions seen are stale now: nil, in both protocols, and no change */
    uint64_t writes = own.st.owner_writes;
    const char *tx2[] = {"SET w 3", "SET fresh 1"};
    send_exec(&A, 2, next_rid(&A), watch, 2, tx2, 2);
    pump();
    ck_assert(fe_take_reply(&A, &m));
    assert_resp(&m, "*-1\r\n");
    ck_assert_uint_eq(m.u.resp.nchanges, 0);
    send_exec(&A, 3, next_rid(&A), watch + 1, 1, tx2, 2);
    pump();
    ck_assert(fe_take_reply(&A, &m));
    assert_resp(&m, "_\r\n");
    ck_assert_uint_eq(own.st.owner_writes, writes);
    ck_assert_uint_eq(expect("MGET w fresh", "*2\r\n$1\r\n2\r\n$-1\r\n"), 0);
}
END_TEST

START_TEST(exec_with_durable_keys_answers_after_one_commit)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    const char *tx[] = {"SET d:1 a", "MSET d:2 b plain c", "INCR d:3"};
    send_exec(&A, 2, next_rid(&A), NULL, 0, tx, 3);
    pump();
    ck_assert_msg(!fe_take_reply(&A, &m), "answered before the commit");
    ck_assert_uint_eq(owner_tickets_waiting(&own), 1);
    struct ledger_view v;
    ck_assert_int_eq(ledger_get(own.ledger, "d:2", 3, owner_clock(), &v), HKV_OK);
    ck_assert(v.dirty); /* applied in memory, not yet on disk */
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    assert_resp(&m, "*3\r\n+OK\r\n+OK\r\n:1\r\n");
    ck_assert_uint_eq(m.u.resp.nchanges, 4);
    const char *dk[] = {"d:1", "d:2", "d:3"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(ledger_get(own.ledger, dk[i], 3, owner_clock(), &v), HKV_OK);
        ck_assert_msg(!v.dirty, "%s answered before its commit", dk[i]);
        ck_assert_uint_eq(v.stamp, change_of(&m, dk[i]));
    }
    assert_changed_to_current(&m, "plain", 1);
    ck_assert_uint_eq(owner_tickets_waiting(&own), 0);
}
END_TEST

/* ---- routing ---- */

/* A key owner index 0 (this one) does not hold, written into key. */
static void foreign_key(char *key, size_t n)
{
    for (int i = 0; i < 1000; i++) {
        snprintf(key, n, "m%d", i);
        if (router_owner(own.router, CFG_POOL_HOT, router_place(key, strlen(key))) != own.index)
            return;
    }
    ck_abort_msg("no foreign key among 1000");
}

START_TEST(foreign_key_is_moved_and_nothing_runs)
{
    hello(&A);
    hello(&B);
    char key[32], line[96];
    struct wire_msg m;
    foreign_key(key, sizeof(key));
    snprintf(line, sizeof(line), "APPEND %s x", key);
    call(&A, line, &m);
    ck_assert_uint_eq(m.type, WIRE_MOVED);
    /* a mine and a foreign key (a hash tag would put them together) */
    char mine[32] = "";
    for (int i = 0; i < 1000 && mine[0] == '\0'; i++) {
        snprintf(mine, sizeof(mine), "k%d", i);
        if (router_owner(own.router, CFG_POOL_HOT, router_place(mine, strlen(mine))) != own.index)
            mine[0] = '\0';
    }
    ck_assert(mine[0] != '\0');
    snprintf(line, sizeof(line), "SET %s 1", mine);
    call(&A, line, &m);
    assert_resp(&m, "+OK\r\n");
    snprintf(line, sizeof(line), "RENAME %s %s", mine, key);
    call(&A, line, &m);
    ck_assert_uint_eq(m.type, WIRE_MOVED);
    char set2[64], get[64];
    snprintf(set2, sizeof(set2), "SET %s 2", mine);
    snprintf(get, sizeof(get), "GET %s", key);
    const char *tx[] = {set2, get};
    send_exec(&A, 2, next_rid(&A), NULL, 0, tx, 2);
    pump();
    ck_assert(fe_take_reply(&A, &m));
    ck_assert_uint_eq(m.type, WIRE_MOVED);
    snprintf(line, sizeof(line), "GET %s", mine);
    ck_assert_uint_eq(expect(line, "$1\r\n1\r\n"), 0); /* neither RENAME nor EXEC ran */
    ck_assert_uint_eq(own.st.owner_moved, 3);
}
END_TEST

/* ---- bounds ---- */

static void setup_small_frames(void)
{
    log_setup(CFG_LOG_WARNING, NULL);
    h_tmpdir(dir, sizeof(dir));
    start_owner(1, "proto-max-bulk-len 1mb\nwire-max-frame 3mb\n");
}

#define BIGV (600 * 1000)

START_TEST(reply_over_half_a_frame_is_an_error_and_writes_still_apply)
{
    hello(&A);
    hello(&B);
    char *val = malloc(BIGV + 1);
    ck_assert_ptr_nonnull(val);
    memset(val, 'b', BIGV);
    val[BIGV] = '\0';
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    const char *keys[] = {"b1", "b2", "b3"};
    for (int i = 0; i < 3; i++) {
        struct wire_expiry none = {WIRE_EXP_NONE, 0};
        ck_assert_int_eq(wire_put_set(&b, ++A.id, wire_cstr(keys[i]), wire_cstr(val),
                                      next_rid(&A), none, 0),
                         HKV_OK);
        fe_send(&A, &b);
        pump();
        ck_assert(fe_take_reply(&A, &m));
        ck_assert_uint_eq(m.type, WIRE_OK);
    }
    /* 1.8 MB of values: over half of the 3 MB frame, refused before it is
     * built; two of them fit */
    ck_assert_uint_eq(expect("MGET b1 b2 b3",
                             "-ERR the reply is larger than wire-max-frame allows\r\n"), 0);
    call(&A, "MGET b1 b2", &m);
    ck_assert_uint_eq(m.type, WIRE_RESP);
    ck_assert_uint_eq(m.u.resp.reply.len, 4 + 2 * (9 + BIGV + 2)); /* *2, $600000 */
    const char *tx[] = {"MGET b1 b2 b3", "GETSET b1 small", "SET after 1"};
    send_exec(&A, 2, next_rid(&A), NULL, 0, tx, 3);
    pump();
    ck_assert(fe_take_reply(&A, &m));
    char want[256];
    snprintf(want, sizeof(want), "*3\r\n-ERR the reply is larger than wire-max-frame allows\r\n"
                                 "$%d\r\n", BIGV);
    ck_assert_uint_eq(m.type, WIRE_RESP);
    ck_assert_msg(m.u.resp.reply.len > strlen(want) &&
                      memcmp(m.u.resp.reply.p, want, strlen(want)) == 0,
                  "reply starts '%.60s'", m.u.resp.reply.p);
    ck_assert_uint_eq(m.u.resp.nchanges, 2);
    ck_assert_uint_eq(expect("MGET b1 after", "*2\r\n$5\r\nsmall\r\n$1\r\n1\r\n"), 0);
    buf_deinit(&b);
    free(val);
}
END_TEST

/* ---- keys on disk only ---- */

#define NKEYS 200
#define VLEN 2000

/* A first owner writes NKEYS keys of VLEN bytes and flushes them; the
 * second run has owner-maxmemory far below that, so recovery leaves the
 * ledger incomplete and most keys on disk only. */
static void setup_incomplete(void)
{
    log_setup(CFG_LOG_WARNING, NULL);
    h_tmpdir(dir, sizeof(dir));
    start_owner(1, "");
    hello(&A);
    char *val = malloc(VLEN + 1);
    ck_assert_ptr_nonnull(val);
    memset(val, 'v', VLEN);
    val[VLEN] = '\0';
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    for (int i = 0; i < NKEYS; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        struct wire_expiry none = {WIRE_EXP_NONE, 0};
        ck_assert_int_eq(wire_put_set(&b, ++A.id, wire_cstr(key), wire_cstr(val), next_rid(&A),
                                      none, 0),
                         HKV_OK);
        fe_send(&A, &b);
        pump();
        ck_assert(fe_take_reply(&A, &m));
        ck_assert_uint_eq(m.type, WIRE_OK);
    }
    buf_deinit(&b);
    free(val);
    fe_close(&A);
    fe_close(&B);
    owner_persist_flush_all(&own);
    owner_deinit(&own);
    cfg_destroy(&ctx.cfg);
    have_owner = 0;
    start_owner(1, "owner-maxmemory 64kb\n");
    ck_assert_msg(!ledger_is_complete(own.ledger), "every key fits: the test needs evictions");
}

/* The first of k0.. that is not resident. */
static void on_disk_key(char *key, size_t n, const char *not)
{
    struct ledger_view v;
    for (int i = 0; i < NKEYS; i++) {
        snprintf(key, n, "k%d", i);
        if (strcmp(key, not) != 0 &&
            ledger_get(own.ledger, key, strlen(key), owner_clock(), &v) == HKV_EAGAIN)
            return;
    }
    ck_abort_msg("every key is resident");
}

START_TEST(key_on_disk_only_is_loaded_then_the_command_runs)
{
    hello(&A);
    hello(&B);
    char key[16], line[64];
    struct wire_msg m;
    on_disk_key(key, sizeof(key), "");
    snprintf(line, sizeof(line), "APPEND %s xyz", key);
    send_call(&A, 2, next_rid(&A), line);
    pump();
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    char want[32];
    snprintf(want, sizeof(want), ":%d\r\n", VLEN + 3);
    assert_resp(&m, want);
    ck_assert_uint_eq(m.u.resp.nchanges, 1);
    snprintf(line, sizeof(line), "GETRANGE %s -4 -1", key);
    ck_assert_uint_eq(expect(line, "$4\r\nvxyz\r\n"), 0);
}
END_TEST

START_TEST(exec_parks_whole_until_every_key_is_loaded)
{
    hello(&A);
    hello(&B);
    char k1[16], k2[16];
    struct wire_msg m;
    on_disk_key(k1, sizeof(k1), "");
    on_disk_key(k2, sizeof(k2), k1);
    char c1[64], c2[64], c3[64];
    snprintf(c1, sizeof(c1), "SET fresh 1");
    snprintf(c2, sizeof(c2), "RENAME %s moved", k1);
    snprintf(c3, sizeof(c3), "STRLEN %s", k2);
    const char *tx[] = {c1, c2, c3};
    send_exec(&A, 2, next_rid(&A), NULL, 0, tx, 3);
    pump();
    if (!fe_take_reply(&A, &m)) {
        /* parked (three disk reads to go): nothing ran, not even its first
         * command, whose key needs no disk read once known absent */
        struct ledger_view v;
        int rc = ledger_get(own.ledger, "fresh", 5, owner_clock(), &v);
        ck_assert_msg(rc == HKV_EAGAIN || rc == HKV_ENOENT, "a parked EXEC ran in part");
        fe_wait_reply(&own, &A, &m, WAIT_MS);
    }
    char want[64];
    snprintf(want, sizeof(want), "*3\r\n+OK\r\n+OK\r\n:%d\r\n", VLEN);
    assert_resp(&m, want);
    ck_assert_uint_eq(m.u.resp.nchanges, 3); /* fresh, k1 (gone), moved */
    ck_assert_uint_eq(expect("STRLEN moved", ":2000\r\n"), 0);
    ck_assert_uint_eq(expect("GET fresh", "$1\r\n1\r\n"), 0);
}
END_TEST

/* ---- FLUSHALL ---- */

/* Stops the owner in order and starts it again on the same file. */
static void restart_owner(void)
{
    fe_close(&A);
    fe_close(&B);
    owner_persist_flush_all(&own);
    owner_deinit(&own);
    cfg_destroy(&ctx.cfg);
    have_owner = 0;
    start_owner(1, "");
    hello(&A);
    hello(&B);
}

START_TEST(flushall_answers_after_its_commit_with_its_version)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    int found;
    ck_assert_uint_eq(expect("SET a 1", "+OK\r\n"), 1);
    send_call(&A, 2, next_rid(&A), "SET d:1 x");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    hkv_stamp va = version_of("a", &found);
    ck_assert_uint_eq(expect("FLUSHALL now", "-ERR syntax error\r\n"), 0);
    ck_assert_uint_eq(expect("FLUSHDB async sync", "-ERR syntax error\r\n"), 0);
    ck_assert_uint_eq(expect("EXISTS a d:1", ":2\r\n"), 0);

    send_call(&A, 2, next_rid(&A), "FLUSHALL ASYNC");
    pump();
    ck_assert_msg(!fe_take_reply(&A, &m), "answered before the flush committed");
    ck_assert(own.flush_pending != 0);
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    /* one change: the empty key at the flush's version, newer than any before */
    ck_assert_uint_eq(m.u.resp.nchanges, 1);
    ck_assert_uint_eq(m.u.resp.changes[0].key.len, 0);
    hkv_stamp v = m.u.resp.changes[0].version;
    ck_assert_uint_gt(v, va);
    ck_assert_uint_eq(own.flush_pending, 0);
    ck_assert_uint_eq(expect("EXISTS a d:1", ":0\r\n"), 0);
    ck_assert_uint_ge(version_of("a", &found), v); /* a missing key orders after the flush */
    ck_assert(!found);

    /* on disk: the rows are gone and the floor is recorded */
    restart_owner();
    ck_assert_uint_eq(expect("EXISTS a d:1", ":0\r\n"), 0);
    ck_assert_uint_ge(version_of("d:1", &found), v);
    call(&A, "SET a 2", &m);
    ck_assert_uint_gt(change_of(&m, "a"), v);
}
END_TEST

/* A durable write not yet committed when a FLUSHALL drops its key from the
 * ledger is answered when the flush commits (it is ordered before it), not
 * left to time out. */
START_TEST(flushall_completes_the_durable_writes_it_supersedes)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    send_call(&A, 2, next_rid(&A), "SET d:1 x");
    send_call(&B, 2, next_rid(&B), "FLUSHDB");
    pump();
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    fe_wait_reply(&own, &B, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    ck_assert_uint_eq(owner_tickets_waiting(&own), 0);
    ck_assert_uint_eq(expect("EXISTS d:1", ":0\r\n"), 0);
    ck_assert_uint_eq(own.st.owner_durable_timeouts, 0);
}
END_TEST

START_TEST(flushall_runs_once_per_request_and_never_inside_exec)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    const char *tx[] = {"SET a 1", "FLUSHALL", "SET b 2"};
    send_exec(&A, 2, next_rid(&A), NULL, 0, tx, 3);
    pump();
    ck_assert(fe_take_reply(&A, &m));
    assert_resp(&m, "*3\r\n+OK\r\n-ERR flushall is not allowed in a transaction: it runs on "
                    "every owner, a transaction on one\r\n+OK\r\n");
    ck_assert_uint_eq(expect("EXISTS a b", ":2\r\n"), 0);

    struct wire_rid rid = next_rid(&A);
    send_call(&A, 2, rid, "FLUSHALL");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    hkv_stamp v = m.u.resp.changes[0].version;
    ck_assert_uint_eq(expect("SET c 3", "+OK\r\n"), 1);
    send_call(&A, 2, rid, "FLUSHALL"); /* a retry: answered from its record */
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    ck_assert_uint_eq(m.u.resp.nchanges, 1);
    ck_assert_uint_eq(m.u.resp.changes[0].version, v);
    ck_assert_uint_eq(expect("GET c", "$1\r\n3\r\n"), 0);
}
END_TEST

/* Keys evicted to disk only go too, and the owner needs no disk read to
 * know it: its ledger is complete again. */
START_TEST(flushall_removes_keys_on_disk_only)
{
    hello(&A);
    hello(&B);
    char key[16], line[64];
    struct wire_msg m;
    on_disk_key(key, sizeof(key), "");
    send_call(&A, 2, next_rid(&A), "FLUSHALL");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    ck_assert(ledger_is_complete(own.ledger));
    snprintf(line, sizeof(line), "EXISTS %s k0 k1", key);
    ck_assert_uint_eq(expect(line, ":0\r\n"), 0); /* answered at once: no disk read */
    restart_owner();
    ck_assert_uint_eq(expect(line, ":0\r\n"), 0);
    struct ledger_stats ls;
    ledger_stats(own.ledger, &ls);
    ck_assert_uint_eq(ls.keys, 0);
}
END_TEST

/* Only durable batches settle commit tickets, and a key's ledger tag says
 * which batches take it: so every key a ticket waits for must be tagged
 * durable, or an interval batch can take it and the ticket never completes.
 * A DEL of a durable-class key the owner does not hold (after a FLUSHALL
 * every key is such a key) makes a tombstone tagged ledger. */
static void assert_tickets_wait_for_durable_keys(const char *when)
{
    for (struct ticket *t = own.tickets; t != NULL; t = t->next)
        for (size_t k = 0; k < t->nkeys; k++) {
            struct ledger_view v;
            ledger_get(own.ledger, t->keys[k].key, t->keys[k].klen, owner_clock(), &v);
            ck_assert_msg(t->keys[k].done || v.class_id == OWNER_TAG_DURABLE,
                          "%s: a ticket waits for %.*s, tagged %u: only an interval batch "
                          "takes it", when, (int)t->keys[k].klen, t->keys[k].key, v.class_id);
        }
}

START_TEST(del_of_a_missing_durable_key_leaves_no_ticket_an_interval_batch_can_strand)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    send_call(&A, 2, next_rid(&A), "FLUSHALL");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_slice keys[2] = {wire_cstr("d:gone"), wire_cstr("plain")};
    ck_assert_int_eq(wire_put_del(&b, ++A.id, keys, 2, next_rid(&A)), HKV_OK);
    fe_send(&A, &b);
    pump();
    assert_tickets_wait_for_durable_keys("DEL of keys never written");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    ck_assert_uint_eq(m.type, WIRE_INT);
    ck_assert_int_eq(m.u.integer.value, 0);
    /* a durable key that exists: its tombstone is durable, and waited for */
    send_call(&A, 2, next_rid(&A), "SET d:1 x");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    keys[0] = wire_cstr("d:1");
    ck_assert_int_eq(wire_put_del(&b, ++A.id, keys, 1, next_rid(&A)), HKV_OK);
    fe_send(&A, &b);
    pump();
    ck_assert_msg(!fe_take_reply(&A, &m), "the DEL of a durable key answered before its commit");
    assert_tickets_wait_for_durable_keys("DEL of a durable key");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    ck_assert_int_eq(m.u.integer.value, 1);
    buf_deinit(&b);
}
END_TEST

/* ---- OBJECT ---- */

/* Encodings and refcounts as redis-server 7.0.15 answered the same
 * sequence: they depend on the command that made the value. */
START_TEST(object_reports_how_redis_would_hold_the_value)
{
    hello(&A);
    hello(&B);
    static const char *const steps[][2] = {
        {"SET a 1", "+OK\r\n"},
        {"OBJECT ENCODING a", "$3\r\nint\r\n"},
        {"OBJECT REFCOUNT a", ":2147483647\r\n"},
        {"SET a 12345", "+OK\r\n"},
        {"OBJECT REFCOUNT a", ":1\r\n"},
        {"SET a -5", "+OK\r\n"},
        {"OBJECT REFCOUNT a", ":1\r\n"},
        {"SET a 0123", "+OK\r\n"},
        {"OBJECT ENCODING a", "$6\r\nembstr\r\n"},
        {"SET a 9223372036854775807", "+OK\r\n"},
        {"OBJECT ENCODING a", "$3\r\nint\r\n"},
        {"SET a 9223372036854775808", "+OK\r\n"},
        {"OBJECT ENCODING a", "$6\r\nembstr\r\n"},
        {"SET a aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "+OK\r\n"},
        {"OBJECT ENCODING a", "$6\r\nembstr\r\n"},
        {"SET a aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "+OK\r\n"},
        {"OBJECT ENCODING a", "$3\r\nraw\r\n"},
        {"APPEND b x", ":1\r\n"},
        {"OBJECT ENCODING b", "$6\r\nembstr\r\n"},
        {"SET c 5", "+OK\r\n"},
        {"APPEND c 1", ":2\r\n"},
        {"OBJECT ENCODING c", "$3\r\nraw\r\n"},
        {"INCRBYFLOAT d 1", "$1\r\n1\r\n"},
        {"OBJECT ENCODING d", "$6\r\nembstr\r\n"},
        {"INCR e", ":1\r\n"},
        {"OBJECT REFCOUNT e", ":2147483647\r\n"},
        {"COPY e f", ":1\r\n"},
        {"OBJECT ENCODING f", "$3\r\nint\r\n"},
        {"OBJECT REFCOUNT f", ":1\r\n"},
        {"SETRANGE g 0 x", ":1\r\n"},
        {"OBJECT ENCODING g", "$3\r\nraw\r\n"},
        {"SETBIT h 0 1", ":0\r\n"},
        {"OBJECT ENCODING h", "$3\r\nraw\r\n"},
        {"INCRBYFLOAT c 1", "$2\r\n52\r\n"},
        {"OBJECT ENCODING c", "$6\r\nembstr\r\n"},
        {"SET s a", "+OK\r\n"},
        {"SETBIT s 0 0", ":0\r\n"},
        {"OBJECT ENCODING s", "$3\r\nraw\r\n"},
        {"COPY s s2", ":1\r\n"},
        {"OBJECT ENCODING s2", "$3\r\nraw\r\n"},
        {"SET c 5", "+OK\r\n"},
        {"RENAME c c2", "+OK\r\n"},
        {"OBJECT REFCOUNT c2", ":2147483647\r\n"},
        {"GETEX c2 EX 100", "$1\r\n5\r\n"},
        {"OBJECT REFCOUNT c2", ":2147483647\r\n"},
        {"OBJECT Encoding nokey", "$-1\r\n"},
        {"OBJECT FREQ nokey", "$-1\r\n"},
        {"OBJECT FREQ a", "-ERR An LFU maxmemory policy is not selected, access frequency not "
                          "tracked. Please note that when switching between policies at runtime "
                          "LRU and LFU data will take some time to adjust.\r\n"},
        {"OBJECT HELP x", "-ERR wrong number of arguments for 'object|help' command\r\n"},
        {"OBJECT ENCODING a b", "-ERR wrong number of arguments for 'object|encoding' command\r\n"},
        {"OBJECT foo a", "-ERR unknown subcommand 'foo'. Try OBJECT HELP.\r\n"},
        {"OBJECT foo", "-ERR unknown subcommand 'foo'. Try OBJECT HELP.\r\n"},
        {"OBJECT", "-ERR wrong number of arguments for 'object' command\r\n"},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        struct wire_msg m;
        call(&A, steps[i][0], &m);
        ck_assert_msg(m.type == WIRE_RESP && m.u.resp.reply.len == strlen(steps[i][1]) &&
                          memcmp(m.u.resp.reply.p, steps[i][1], m.u.resp.reply.len) == 0,
                      "%s: '%.*s', redis-server: '%s'", steps[i][0],
                      m.type == WIRE_RESP ? (int)m.u.resp.reply.len : 0,
                      m.type == WIRE_RESP ? m.u.resp.reply.p : "", steps[i][1]);
    }
    struct wire_msg m;
    call(&A, "OBJECT HELP", &m);
    ck_assert_msg(m.u.resp.reply.len > 5 && memcmp(m.u.resp.reply.p, "*15\r\n+OBJECT ", 13) == 0,
                  "HELP: %.*s", (int)m.u.resp.reply.len, m.u.resp.reply.p);
    call_rid(&A, 3, next_rid(&A), "OBJECT ENCODING nokey", &m);
    assert_resp(&m, "_\r\n");
}
END_TEST

Suite *owner_call_suite(void)
{
    Suite *s = suite_create("owner_call");
    struct {
        const char *name;
        void (*setup)(void);
        const TTest *tests[4];
    } cases[] = {
        {"commands",
         setup,
         {strops_commands_answer_redis_bytes_and_list_new_versions,
          rename_copy_and_msetnx_answer_redis_bytes_and_list_every_key,
          set_options_follow_redis_7_rules_and_errors}},
        {"retry", setup, {retried_call_gets_the_original_reply_and_applies_once}},
        {"exec",
         setup,
         {exec_runs_every_command_and_answers_one_array,
          exec_with_a_stale_watch_answers_nil_and_changes_nothing,
          exec_with_durable_keys_answers_after_one_commit}},
        {"moved", setup_two_owners, {foreign_key_is_moved_and_nothing_runs}},
        {"flushall",
         setup,
         {flushall_answers_after_its_commit_with_its_version,
          flushall_completes_the_durable_writes_it_supersedes,
          flushall_runs_once_per_request_and_never_inside_exec,
          del_of_a_missing_durable_key_leaves_no_ticket_an_interval_batch_can_strand}},
        {"object", setup, {object_reports_how_redis_would_hold_the_value}},
        {"bounds",
         setup_small_frames,
         {reply_over_half_a_frame_is_an_error_and_writes_still_apply}},
        {"disk",
         setup_incomplete,
         {key_on_disk_only_is_loaded_then_the_command_runs,
          exec_parks_whole_until_every_key_is_loaded, flushall_removes_keys_on_disk_only}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, cases[i].setup, teardown);
        tcase_set_timeout(tc, 60);
        for (size_t j = 0; j < 4 && cases[i].tests[j] != NULL; j++)
            tcase_add_test(tc, cases[i].tests[j]);
        suite_add_tcase(s, tc);
    }
    return s;
}
