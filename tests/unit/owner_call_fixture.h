/*
 * owner_call_fixture.h - what the suites of the owner's Redis commands share
 * (check_owner_call.c, check_owner_call_disk.c): a real owner on a temp dir
 * (ledger, persister, link hooks) and two fake edge links; CALL and EXEC
 * frames sent and their replies checked byte for byte; the change lists
 * checked against the versions the keys hold (a wire GET's stamp).
 */
#ifndef HKV_TESTS_OWNER_CALL_FIXTURE_H
#define HKV_TESTS_OWNER_CALL_FIXTURE_H

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
static inline void start_owner(int hot_owners, const char *extra)
{
    char text[2048];
    snprintf(text, sizeof(text), CONF, dir, hot_owners, extra);
    of_start(&own, &ctx, text, "call.conf", NULL);
    have_owner = 1;
    fe_open(&own, &A, 1);
    fe_open(&own, &B, 2);
}

static inline void stop_owner(void)
{
    if (!have_owner)
        return;
    fe_close(&A);
    fe_close(&B);
    of_stop(&own, &ctx);
    have_owner = 0;
}

static inline void setup(void)
{
    log_setup(CFG_LOG_WARNING, NULL);
    h_tmpdir(dir, sizeof(dir));
    start_owner(1, "");
}

static inline void setup_two_owners(void)
{
    log_setup(CFG_LOG_WARNING, NULL);
    h_tmpdir(dir, sizeof(dir));
    start_owner(2, "");
}

static inline void teardown(void)
{
    stop_owner();
    h_rmtree(dir);
}

/* Runs the loop until both links took in what was written (bounded). */
static inline void pump(void)
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

static inline void hello(struct fake_edge *f)
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

static inline struct wire_rid next_rid(struct fake_edge *f)
{
    return (struct wire_rid){.seq = ++f->seq, .ack = 1, .prev = 0};
}

/* Splits a command line on spaces into args (pointing into line, which it
 * changes).  Returns the count. */
static inline uint32_t split(char *line, struct wire_slice *args)
{
    uint32_t n = 0;
    for (char *save = NULL, *w = strtok_r(line, " ", &save); w != NULL && n < MAXARGS;
         w = strtok_r(NULL, " ", &save))
        args[n++] = wire_cstr(w);
    return n;
}

/* Sends "CALL <line>" (words split on spaces) with rid; does not wait. */
static inline void send_call(struct fake_edge *f, int proto, struct wire_rid rid, const char *line)
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
static inline void call_rid(struct fake_edge *f, int proto, struct wire_rid rid, const char *line,
                     struct wire_msg *m)
{
    send_call(f, proto, rid, line);
    pump();
    ck_assert_msg(fe_take_reply(f, m), "CALL %s not answered at once", line);
    ck_assert_uint_eq(m->id, f->id);
}

static inline void call(struct fake_edge *f, const char *line, struct wire_msg *m)
{
    call_rid(f, 2, next_rid(f), line, m);
}

/* Asserts m is RESP with exactly `bytes`. */
static inline void assert_resp(const struct wire_msg *m, const char *bytes)
{
    ck_assert_msg(m->type == WIRE_RESP, "expected RESP, got %s", wire_type_name(m->type));
    ck_assert_msg(m->u.resp.reply.len == strlen(bytes) &&
                      memcmp(m->u.resp.reply.p, bytes, strlen(bytes)) == 0,
                  "reply '%.*s', expected '%s'", (int)m->u.resp.reply.len, m->u.resp.reply.p,
                  bytes);
}

/* CALL line on A, asserting the reply bytes; returns the number of changes. */
static inline uint32_t expect(const char *line, const char *bytes)
{
    struct wire_msg m;
    call(&A, line, &m);
    assert_resp(&m, bytes);
    return m.u.resp.nchanges;
}

/* The version m's change list gives key, 0 if it is not there. */
static inline hkv_stamp change_of(const struct wire_msg *m, const char *key)
{
    for (uint32_t i = 0; i < m->u.resp.nchanges; i++)
        if (m->u.resp.changes[i].key.len == strlen(key) &&
            memcmp(m->u.resp.changes[i].key.p, key, strlen(key)) == 0)
            return m->u.resp.changes[i].version;
    return 0;
}

/* The version key holds (wire GET: VALUE's or NOTFOUND's stamp); *found. */
static inline hkv_stamp version_of(const char *key, int *found)
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
static inline void assert_changed_to_current(const struct wire_msg *m, const char *key, int live)
{
    int found;
    hkv_stamp v = change_of(m, key);
    ck_assert_msg(v != 0, "%s is not in the change list", key);
    ck_assert_uint_eq(version_of(key, &found), v);
    ck_assert_int_eq(found, live);
}

/* An EXEC of `lines` (each split on spaces) watching watch[0..nwatch). */
static inline void send_exec(struct fake_edge *f, int proto, struct wire_rid rid,
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

#endif
