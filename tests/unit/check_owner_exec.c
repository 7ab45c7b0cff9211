/* check_owner_exec.c - the owner's request execution without a daemon
 * (server/owner: owner_ops.c over owner_link.c, owner_ticket.c,
 * owner_persist.c, owner_pushq.c).
 *
 * Each test builds a real owner context (owner_init + owner_open: a ledger,
 * a persister on a SQLite file in a temp directory, the link hooks) and
 * talks to it over fake edge links: one end of a libevent bufferevent pair
 * is attached as the owner's link (olink_attach), the test writes request
 * frames into the other end and reads the reply frames back.  pump() runs
 * the owner's loop just until the requests are taken in: a reply sent at
 * once is then there, and a reply that waits for a durable commit is not
 * (the commit is reported on a later pass); wait_reply() runs the loop
 * until it comes, bounded in time. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <sqlite3.h>

#include "config/cfg.h"
#include "proto/wire.h"
#include "server/core/log.h"
#include "server/core/router.h"
#include "server/owner/owner_int.h"
#include "tests/harness.h"
#include "tests/unit/fake_edge.h"
#include "tests/unit/owner_fixture.h"

#define WAIT_MS 10000     /* a durable commit on a loaded machine */
#define BIG (1200 * 1024) /* over persist-max-dirty 1mb */

/* Owner hot/0 of hot-owners %d: every key is hot ("default" is hot here),
 * keys "d:*" are durable; the interval batches run once an hour, so nothing
 * leaves the dirty backlog unless a test runs the loop for a durable
 * commit.  With one hot owner every key is ours; with two, half are not. */
static const char CONF[] = "dir %s\n"
                           "hot-owners %d\n"
                           "cold-owners 1\n"
                           "persist-interval 1h\n"
                           "persist-max-dirty 1mb\n"
                           "durable-timeout 60s\n"
                           "class money pattern \"d:*\" pool hot fresh 0 keep 0 durability durable "
                           "on-timeout error\n"
                           "class default pool hot fresh 1s keep 60s durability ledger\n";

static char dir[256];
static struct worker_ctx ctx;
static struct owner own;

/* An edge's end of one link. */
static struct fake_edge A, B;

static void setup_owners(int hot_owners)
{
    log_setup(CFG_LOG_WARNING, NULL);
    h_tmpdir(dir, sizeof(dir));
    char text[1024];
    snprintf(text, sizeof(text), CONF, dir, hot_owners);
    of_start(&own, &ctx, text, "exec.conf", NULL);
    fe_open(&own, &A, 1);
    fe_open(&own, &B, 2);
}

static void setup(void)
{
    setup_owners(1);
}

static void setup_two_owners(void)
{
    setup_owners(2);
}

static void teardown(void)
{
    fe_close(&A);
    fe_close(&B);
    of_stop(&own, &ctx);
    h_rmtree(dir);
}

/* 1 while the owner still has f's link. */
static int link_open(const struct fake_edge *f)
{
    for (const struct olink *l = own.links; l != NULL; l = l->next)
        if (l == f->l)
            return 1;
    return 0;
}

/* Runs the owner's loop without blocking until every open link has taken in
 * what was written to it (a pair hands the bytes over at once but runs the
 * owner's read callback from the loop), bounded in passes.  Replies the
 * owner sends at once are then in the edges' input; a durable commit is
 * not: it is reported through the persister's notify fd, which the loop
 * polls only on a later pass. */
static void pump(void)
{
    struct fake_edge *all[] = {&A, &B};
    for (int pass = 0; pass < 100; pass++) {
        int pending = 0;
        for (size_t i = 0; i < 2; i++)
            if (all[i]->l != NULL && link_open(all[i]) && !all[i]->l->closing &&
                evbuffer_get_length(bufferevent_get_input(all[i]->l->bev)) > 0)
                pending = 1;
        if (!pending && pass > 0)
            return;
        event_base_loop(own.base, EVLOOP_NONBLOCK);
    }
}

/* Sends req and takes the reply the owner sent at once. */
static void call(struct fake_edge *f, struct hkv_buf *req, struct wire_msg *m)
{
    fe_send(f, req);
    pump();
    ck_assert_msg(fe_take_reply(f, m), "request %llu not answered at once",
                  (unsigned long long)f->id);
    ck_assert_uint_eq(m->id, f->id);
}

static void hello(struct fake_edge *f)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    ck_assert_int_eq(wire_put_hello(&b, ++f->id, WIRE_VERSION, f->edge_id, wire_cstr("c"),
                                    WIRE_ROLE_WRITE, f->inc),
                     HKV_OK);
    call(f, &b, &m);
    ck_assert_uint_eq(m.type, WIRE_HELLO_OK);
    ck_assert_uint_eq(m.u.hello_ok.incarnation, own.incarnation);
    buf_deinit(&b);
}

static struct wire_rid next_rid(struct fake_edge *f)
{
    return (struct wire_rid){.seq = ++f->seq, .ack = 1, .prev = 0};
}

static const struct wire_expiry NOEXP = {WIRE_EXP_NONE, 0};

static void put_set(struct fake_edge *f, struct hkv_buf *b, const char *k, const char *v,
                    struct wire_rid rid)
{
    ck_assert_int_eq(wire_put_set(b, ++f->id, wire_cstr(k), wire_cstr(v), rid, NOEXP, 0),
                     HKV_OK);
}

static void put_get(struct fake_edge *f, struct hkv_buf *b, const char *k)
{
    struct wire_slice key = wire_cstr(k);
    ck_assert_int_eq(wire_put_get(b, ++f->id, &key, 1), HKV_OK);
}

/* SET k v on f: asserts OK applied, returns its version. */
static hkv_stamp set_ok(struct fake_edge *f, const char *k, const char *v)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    put_set(f, &b, k, v, next_rid(f));
    call(f, &b, &m);
    ck_assert_msg(m.type == WIRE_OK, "SET %s: %s", k, wire_type_name(m.type));
    ck_assert(m.u.ok.applied);
    ck_assert_uint_ne(m.u.ok.stamp, 0);
    buf_deinit(&b);
    return m.u.ok.stamp;
}

/* GET k on f: asserts VALUE v at version `stamp`. */
static void get_is(struct fake_edge *f, const char *k, const char *v, hkv_stamp stamp)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    put_get(f, &b, k);
    call(f, &b, &m);
    ck_assert_msg(m.type == WIRE_VALUE, "GET %s: %s", k, wire_type_name(m.type));
    ck_assert_uint_eq(m.u.value.value.len, strlen(v));
    ck_assert(memcmp(m.u.value.value.p, v, strlen(v)) == 0);
    ck_assert_uint_eq(m.u.value.stamp, stamp);
    buf_deinit(&b);
}

/* GET k on f: asserts NOTFOUND, returns its version (a tombstone's, or 0). */
static hkv_stamp get_absent(struct fake_edge *f, const char *k)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    put_get(f, &b, k);
    call(f, &b, &m);
    ck_assert_msg(m.type == WIRE_NOTFOUND, "GET %s: %s", k, wire_type_name(m.type));
    buf_deinit(&b);
    return m.u.notfound.stamp;
}

static void assert_error(const struct wire_msg *m, int code, const char *text)
{
    ck_assert_msg(m->type == WIRE_ERROR, "expected ERROR, got %s", wire_type_name(m->type));
    ck_assert_int_eq(m->u.error.code, code);
    ck_assert_msg(memmem(m->u.error.text.p, m->u.error.text.len, text, strlen(text)) != NULL,
                  "error text '%.*s' lacks '%s'", (int)m->u.error.text.len, m->u.error.text.p,
                  text);
}

static size_t dirty_keys(void)
{
    size_t keys, bytes;
    ledger_dirty(own.ledger, &keys, &bytes);
    return keys;
}

/* ---- data: SET GET DEL INCRBY ---- */

START_TEST(set_get_del_replies_carry_growing_versions)
{
    hello(&A);
    hkv_stamp v1 = set_ok(&A, "a", "one");
    get_is(&A, "a", "one", v1);
    hkv_stamp v2 = set_ok(&A, "a", "two");
    ck_assert_uint_gt(v2, v1);
    get_is(&A, "a", "two", v2);

    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    struct wire_slice keys[2] = {wire_cstr("a"), wire_cstr("never-set")};
    ck_assert_int_eq(wire_put_del(&b, ++A.id, keys, 2, next_rid(&A)), HKV_OK);
    call(&A, &b, &m);
    ck_assert_uint_eq(m.type, WIRE_INT);
    ck_assert_int_eq(m.u.integer.value, 1); /* one of the two existed */
    hkv_stamp v3 = m.u.integer.stamp; /* the newest of the DEL's versions */
    ck_assert_uint_gt(v3, v2);
    hkv_stamp tomb = get_absent(&A, "a");
    ck_assert_uint_gt(tomb, v2);
    ck_assert_uint_le(tomb, v3);
    buf_deinit(&b);
}
END_TEST

START_TEST(incrby_counts_and_refuses_a_non_integer)
{
    hello(&A);
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    ck_assert_int_eq(wire_put_incrby(&b, ++A.id, wire_cstr("n"), 1, next_rid(&A)), HKV_OK);
    call(&A, &b, &m);
    ck_assert_uint_eq(m.type, WIRE_INT);
    ck_assert_int_eq(m.u.integer.value, 1);
    hkv_stamp w1 = m.u.integer.stamp;
    ck_assert_int_eq(wire_put_incrby(&b, ++A.id, wire_cstr("n"), 5, next_rid(&A)), HKV_OK);
    call(&A, &b, &m);
    ck_assert_uint_eq(m.type, WIRE_INT);
    ck_assert_int_eq(m.u.integer.value, 6);
    ck_assert_uint_gt(m.u.integer.stamp, w1);
    get_is(&A, "n", "6", m.u.integer.stamp);

    hkv_stamp vs = set_ok(&A, "s", "abc");
    ck_assert_int_eq(wire_put_incrby(&b, ++A.id, wire_cstr("s"), 1, next_rid(&A)), HKV_OK);
    call(&A, &b, &m);
    assert_error(&m, HKV_EINVAL, "not an integer");
    get_is(&A, "s", "abc", vs);
    buf_deinit(&b);
}
END_TEST

START_TEST(request_before_hello_closes_the_link)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    put_get(&A, &b, "a");
    fe_send(&A, &b);
    pump();
    ck_assert(fe_take_reply(&A, &m));
    assert_error(&m, HKV_EPROTO, "HELLO");
    ck_assert_uint_eq(own.st.owner_protocol_errors, 1);
    for (int i = 0; i < 100 && link_open(&A); i++)
        event_base_loop(own.base, EVLOOP_NONBLOCK);
    ck_assert_msg(!link_open(&A), "the link stays open after a framing error");
    /* the other link is not affected */
    hello(&B);
    get_absent(&B, "a");
    buf_deinit(&b);
}
END_TEST

/* ---- retries: exactly once ---- */

START_TEST(retry_with_the_same_request_id_gets_the_original_reply)
{
    hello(&A);
    hello(&B);
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    struct wire_rid rid = next_rid(&A);
    put_set(&A, &b, "r", "first", rid);
    call(&A, &b, &m);
    ck_assert_uint_eq(m.type, WIRE_OK);
    hkv_stamp v1 = m.u.ok.stamp;
    /* the same request again (its seq), even with another value: not applied */
    put_set(&A, &b, "r", "second", rid);
    call(&A, &b, &m);
    ck_assert_uint_eq(m.type, WIRE_OK);
    ck_assert(m.u.ok.applied);
    ck_assert_uint_eq(m.u.ok.stamp, v1);
    get_is(&A, "r", "first", v1);

    struct wire_rid inc = next_rid(&A);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(wire_put_incrby(&b, ++A.id, wire_cstr("c"), 1, inc), HKV_OK);
        call(&A, &b, &m);
        ck_assert_uint_eq(m.type, WIRE_INT);
        ck_assert_int_eq(m.u.integer.value, 1);
    }
    get_is(&A, "c", "1", m.u.integer.stamp);
    ck_assert_uint_eq(own.st.owner_idempotent_retries, 3);
    ck_assert_uint_eq(own.st.owner_writes, 2);

    /* the same seq from another edge is another request */
    ck_assert_int_eq(wire_put_incrby(&b, ++B.id, wire_cstr("c"), 1, inc), HKV_OK);
    call(&B, &b, &m);
    ck_assert_uint_eq(m.type, WIRE_INT);
    ck_assert_int_eq(m.u.integer.value, 2);
    buf_deinit(&b);
}
END_TEST

START_TEST(retry_whose_first_attempt_reached_an_earlier_run_is_outcome_unknown)
{
    hello(&A);
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    struct wire_rid rid = next_rid(&A);
    rid.prev = own.incarnation == 7 ? 8 : 7; /* an incarnation that is not this one */
    put_set(&A, &b, "u", "x", rid);
    call(&A, &b, &m);
    assert_error(&m, HKV_EIO, "outcome unknown");
    get_absent(&A, "u");
    ck_assert_uint_eq(own.st.owner_unknown_outcomes, 1);
    ck_assert_uint_eq(own.st.owner_writes, 0);
    buf_deinit(&b);
}
END_TEST

/* ---- durable writes: answered after their commit ---- */

START_TEST(durable_write_is_answered_after_its_commit)
{
    hello(&A);
    hello(&B);
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    put_set(&A, &b, "d:1", "100", next_rid(&A));
    fe_send(&A, &b);
    uint64_t set_id = A.id;
    /* a read of the key meanwhile waits for the same commit */
    put_get(&B, &b, "d:1");
    fe_send(&B, &b);
    pump();
    ck_assert_msg(!fe_take_reply(&A, &m), "a durable write was answered before its commit (%s)",
                  wire_type_name(m.type));
    ck_assert_msg(!fe_take_reply(&B, &m), "a read of an uncommitted durable write was answered");
    ck_assert_uint_eq(owner_tickets_waiting(&own), 1);
    ck_assert_uint_eq(dirty_keys(), 1);

    fe_wait_reply(&own, &A, &m, WAIT_MS);
    ck_assert_uint_eq(m.id, set_id);
    ck_assert_uint_eq(m.type, WIRE_OK);
    ck_assert(m.u.ok.applied);
    hkv_stamp v = m.u.ok.stamp;
    ck_assert_uint_eq(dirty_keys(), 0); /* it is in SQLite */
    ck_assert_uint_eq(owner_tickets_waiting(&own), 0);
    fe_wait_reply(&own, &B, &m, WAIT_MS);
    ck_assert_uint_eq(m.id, B.id);
    ck_assert_uint_eq(m.type, WIRE_VALUE);
    ck_assert_uint_eq(m.u.value.stamp, v);
    /* committed: answered at once now */
    get_is(&A, "d:1", "100", v);
    buf_deinit(&b);
}
END_TEST

/* Requests parked on an uncommitted durable key are applied in the order
 * they arrived once it commits (the owner orders writes by arrival). */
START_TEST(writes_parked_on_a_durable_commit_apply_in_arrival_order)
{
    hello(&A);
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    put_set(&A, &b, "d:2", "1", next_rid(&A));
    fe_send(&A, &b);
    uint64_t first = A.id;
    /* while it is uncommitted: INCRBY then SET, both wait for the commit */
    ck_assert_int_eq(wire_put_incrby(&b, ++A.id, wire_cstr("d:2"), 10, next_rid(&A)), HKV_OK);
    fe_send(&A, &b);
    put_set(&A, &b, "d:2", "500", next_rid(&A));
    fe_send(&A, &b);
    uint64_t last = A.id;
    int seen = 0;
    for (int i = 0; i < 3; i++) {
        fe_wait_reply(&own, &A, &m, WAIT_MS);
        seen += m.id == first || m.id == last || m.id == last - 1;
    }
    ck_assert_int_eq(seen, 3);
    /* arrival order: 1, +10 = 11, then 500; the other order leaves 510 */
    put_get(&A, &b, "d:2");
    call(&A, &b, &m);
    ck_assert_uint_eq(m.type, WIRE_VALUE);
    ck_assert_msg(m.u.value.value.len == 3 && memcmp(m.u.value.value.p, "500", 3) == 0,
                  "parked writes applied out of order: d:2 = %.*s", (int)m.u.value.value.len,
                  m.u.value.value.p);
    buf_deinit(&b);
}
END_TEST

START_TEST(durable_retry_waits_for_the_first_attempts_commit)
{
    hello(&A);
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    struct wire_rid rid = next_rid(&A);
    put_set(&A, &b, "d:2", "x", rid);
    fe_send(&A, &b);
    uint64_t first = A.id;
    put_set(&A, &b, "d:2", "x", rid);
    fe_send(&A, &b);
    uint64_t retry = A.id;
    pump();
    ck_assert(!fe_take_reply(&A, &m));
    ck_assert_uint_eq(owner_tickets_waiting(&own), 2);
    ck_assert_uint_eq(own.st.owner_idempotent_retries, 1);

    uint64_t got[2];
    hkv_stamp v[2];
    for (int i = 0; i < 2; i++) {
        fe_wait_reply(&own, &A, &m, WAIT_MS);
        ck_assert_uint_eq(m.type, WIRE_OK);
        got[i] = m.id;
        v[i] = m.u.ok.stamp;
    }
    ck_assert((got[0] == first && got[1] == retry) || (got[0] == retry && got[1] == first));
    ck_assert_uint_eq(v[0], v[1]);
    ck_assert_uint_eq(own.st.owner_writes, 1);
    buf_deinit(&b);
}
END_TEST

START_TEST(durable_reply_is_dropped_when_its_link_closes_first)
{
    hello(&A);
    hello(&B);
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    /* The file's write lock held here keeps the persister from committing
     * until the link is gone (a fast disk committed within pump(), and the
     * ticket was settled before the close this test is about) */
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(own.opts.db_path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    put_set(&A, &b, "d:3", "y", next_rid(&A));
    fe_send(&A, &b);
    pump();
    ck_assert_uint_eq(owner_tickets_waiting(&own), 1);
    olink_close(A.l); /* the link goes: on_close makes the ticket forget it */
    A.l = NULL;
    ck_assert_int_eq(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
    /* the commit still happens, and nothing is sent to a freed link */
    int64_t end = h_now_ms() + WAIT_MS;
    for (int i = 0; i < 100000 && dirty_keys() > 0; i++) {
        ck_assert_msg(h_now_ms() < end, "no commit within %d ms", WAIT_MS);
        event_base_loop(own.base, EVLOOP_NONBLOCK);
        usleep(1000);
    }
    ck_assert_uint_eq(owner_tickets_waiting(&own), 0);
    put_get(&B, &b, "d:3");
    call(&B, &b, &m);
    ck_assert_uint_eq(m.type, WIRE_VALUE);
    buf_deinit(&b);
}
END_TEST

/* ---- gates: MOVED (two owners), BUSY ---- */

START_TEST(key_of_another_owner_is_moved_and_not_applied)
{
    hello(&A);
    char key[32] = "";
    int other = -1;
    for (int i = 0; i < 1000 && other < 0; i++) {
        snprintf(key, sizeof(key), "m%d", i);
        int o = router_owner(own.router, CFG_POOL_HOT, router_hash(key, strlen(key)));
        if (o != own.index)
            other = o;
    }
    ck_assert_int_ge(other, 0);
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    put_set(&A, &b, key, "v", next_rid(&A));
    call(&A, &b, &m);
    ck_assert_uint_eq(m.type, WIRE_MOVED);
    ck_assert_uint_eq(m.u.moved.owner, (uint32_t)other);
    ck_assert_uint_eq(m.u.moved.map_gen, router_generation(own.router, CFG_POOL_HOT));
    put_get(&A, &b, key);
    call(&A, &b, &m);
    ck_assert_uint_eq(m.type, WIRE_MOVED);
    ck_assert_uint_eq(own.st.owner_moved, 2);
    ck_assert_uint_eq(own.st.owner_writes, 0);
    ck_assert_uint_eq(dirty_keys(), 0);
    buf_deinit(&b);
}
END_TEST

START_TEST(writes_refused_busy_over_persist_max_dirty_reads_still_served)
{
    hello(&A);
    char *big = malloc(BIG + 1);
    ck_assert_ptr_nonnull(big);
    memset(big, 'b', BIG);
    big[BIG] = '\0';
    hkv_stamp v = set_ok(&A, "big", big);
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    put_set(&A, &b, "small", "s", next_rid(&A));
    call(&A, &b, &m);
    assert_error(&m, HKV_EFULL, "BUSY");
    ck_assert_int_eq(wire_put_incrby(&b, ++A.id, wire_cstr("n"), 1, next_rid(&A)), HKV_OK);
    call(&A, &b, &m);
    assert_error(&m, HKV_EFULL, "BUSY");
    ck_assert_uint_eq(own.st.owner_busy_rejects, 2);
    get_absent(&A, "small");
    get_is(&A, "big", big, v);
    buf_deinit(&b);
    free(big);
}
END_TEST

/* f says HELLO as a push link of colo `colo`: the owner's pushes go to it. */
static void hello_push(struct fake_edge *f, const char *colo)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    ck_assert_int_eq(wire_put_hello(&b, ++f->id, WIRE_VERSION, f->edge_id, wire_cstr(colo),
                                    WIRE_ROLE_PUSH, f->inc),
                     HKV_OK);
    call(f, &b, &m);
    ck_assert_uint_eq(m.type, WIRE_HELLO_OK);
    buf_deinit(&b);
}

/* The next PUSH or INVALIDATE on f into *m: 1, or 0 if none is there. */
static int take_push(struct fake_edge *f, struct wire_msg *m)
{
    struct evbuffer *in = bufferevent_get_input(f->edge);
    size_t have = evbuffer_get_length(in);
    const char *payload;
    size_t plen, used;
    if (have < WIRE_HEADER_LEN ||
        wire_next_frame((const char *)evbuffer_pullup(in, (ssize_t)have), have, 0, &payload,
                        &plen, &used) != HKV_OK)
        return 0;
    free(f->payload);
    f->payload = malloc(plen ? plen : 1);
    ck_assert_ptr_nonnull(f->payload);
    memcpy(f->payload, payload, plen);
    evbuffer_drain(in, used);
    const char *why = NULL;
    ck_assert_msg(wire_decode(&f->dec, f->payload, plen, m, &why) == HKV_OK, "bad push: %s",
                  why ? why : "?");
    ck_assert_msg(wire_is_push(m->type), "not a push: %s", wire_type_name(m->type));
    return 1;
}

#define NKEYS 300 /* more keys than the push queue starts with: it grows mid-turn */

/* One read batch of writes (owner_pushq.c): each key is pushed once, with the
 * value and the version of its last write; five writes of "k" make one push
 * of the fifth, 300 other keys one push each. */
START_TEST(writes_of_a_batch_push_each_key_once_with_its_latest_value)
{
    hello(&A);
    hello_push(&B, "p");
    struct hkv_buf b = HKV_BUF_INIT;
    char k[32];
    for (int i = 0; i < 5; i++) {
        snprintf(k, sizeof(k), "v%d", i);
        put_set(&A, &b, "k", k, next_rid(&A));
    }
    for (int i = 0; i < NKEYS; i++) {
        snprintf(k, sizeof(k), "m%d", i);
        put_set(&A, &b, k, k, next_rid(&A));
    }
    fe_send(&A, &b); /* one write: the owner reads it as one batch */
    pump();
    hkv_stamp last_k = 0, m_stamp[NKEYS];
    struct wire_msg m;
    for (int i = 0; i < 5 + NKEYS; i++) {
        ck_assert_msg(fe_take_reply(&A, &m), "reply %d of the batch missing", i);
        ck_assert_msg(m.type == WIRE_OK && m.u.ok.applied, "reply %d: %s", i,
                      wire_type_name(m.type));
        if (i < 5)
            last_k = m.u.ok.stamp;
        else
            m_stamp[i - 5] = m.u.ok.stamp;
    }
    int k_pushes = 0, m_pushes[NKEYS] = {0};
    for (int n = 0; n < 10 * NKEYS && take_push(&B, &m); n++) {
        ck_assert_msg(m.type == WIRE_PUSH, "%s, not PUSH", wire_type_name(m.type));
        struct wire_slice key = m.u.push.key, val = m.u.push.value;
        if (key.len == 1 && key.p[0] == 'k') {
            k_pushes++;
            ck_assert_msg(val.len == 2 && memcmp(val.p, "v4", 2) == 0, "k pushed as '%.*s'",
                          (int)val.len, val.p);
            ck_assert_uint_eq(m.u.push.stamp, last_k);
            continue;
        }
        ck_assert_msg(key.len > 1 && key.p[0] == 'm', "push of '%.*s'", (int)key.len, key.p);
        int i = atoi(key.p + 1);
        ck_assert_msg(i >= 0 && i < NKEYS, "push of '%.*s'", (int)key.len, key.p);
        m_pushes[i]++;
        ck_assert_uint_eq(m.u.push.stamp, m_stamp[i]);
        ck_assert(val.len == key.len && memcmp(val.p, key.p, key.len) == 0);
    }
    ck_assert_msg(k_pushes == 1, "k pushed %d times for 5 writes in one batch", k_pushes);
    for (int i = 0; i < NKEYS; i++)
        ck_assert_msg(m_pushes[i] == 1, "m%d pushed %d times", i, m_pushes[i]);
    /* The next batch's write of k is pushed again, newer. */
    hkv_stamp v5 = set_ok(&A, "k", "v5");
    ck_assert_uint_gt(v5, last_k);
    pump();
    ck_assert_msg(take_push(&B, &m), "no push for the next batch's write");
    ck_assert(m.type == WIRE_PUSH && m.u.push.stamp == v5);
    ck_assert_msg(!take_push(&B, &m), "a second push for one write");
    buf_deinit(&b);
}
END_TEST

/* The owner reads the frames lying whole in its input's first chunk in place
 * (owner_link.c): a batch arriving in pieces of every size, frames cut
 * anywhere (header, body, between), is answered whole and in order. */
START_TEST(frames_cut_anywhere_are_all_answered_in_order)
{
    hello(&A);
    struct hkv_buf b = HKV_BUF_INIT;
    char k[32], v[48];
    uint64_t first = A.id + 1;
    for (int i = 0; i < 120; i++) {
        snprintf(k, sizeof(k), "cut%d", i);
        snprintf(v, sizeof(v), "value-%d-%.*s", i, i % 30, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        put_set(&A, &b, k, v, next_rid(&A));
    }
    static const size_t pieces[] = {1, 2, 3, 5, 40, 7, 300, 1, 64, 11, 999, 2};
    size_t off = 0, n = buf_unread(&b);
    for (size_t i = 0; off < n; i++) {
        size_t len = pieces[i % (sizeof(pieces) / sizeof(pieces[0]))];
        if (len > n - off)
            len = n - off;
        ck_assert_int_eq(bufferevent_write(A.edge, buf_head(&b) + off, len), 0);
        off += len;
        if (i % 3 == 0)
            event_base_loop(A.l->o->base, EVLOOP_NONBLOCK); /* some pieces read alone */
    }
    buf_reset(&b);
    pump();
    struct wire_msg m;
    hkv_stamp stamp[120];
    for (int i = 0; i < 120; i++) {
        ck_assert_msg(fe_take_reply(&A, &m), "reply %d missing", i);
        ck_assert_msg(m.type == WIRE_OK && m.u.ok.applied, "reply %d: %s", i,
                      wire_type_name(m.type));
        ck_assert_uint_eq(m.id, first + (uint64_t)i);
        stamp[i] = m.u.ok.stamp;
    }
    ck_assert(!fe_take_reply(&A, &m));
    for (int i = 0; i < 120; i += 17) {
        snprintf(k, sizeof(k), "cut%d", i);
        snprintf(v, sizeof(v), "value-%d-%.*s", i, i % 30, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        get_is(&A, k, v, stamp[i]);
    }
    buf_deinit(&b);
}
END_TEST

Suite *owner_exec_suite(void)
{
    Suite *s = suite_create("owner_exec");
    struct {
        const char *name;
        void (*setup)(void);
        const TTest *tests[4];
    } cases[] = {
        {"data",
         setup,
         {set_get_del_replies_carry_growing_versions, incrby_counts_and_refuses_a_non_integer,
          request_before_hello_closes_the_link}},
        {"retry",
         setup,
         {retry_with_the_same_request_id_gets_the_original_reply,
          retry_whose_first_attempt_reached_an_earlier_run_is_outcome_unknown}},
        {"durable",
         setup,
         {durable_write_is_answered_after_its_commit,
          durable_retry_waits_for_the_first_attempts_commit,
          durable_reply_is_dropped_when_its_link_closes_first,
          writes_parked_on_a_durable_commit_apply_in_arrival_order}},
        {"moved", setup_two_owners, {key_of_another_owner_is_moved_and_not_applied}},
        {"backlog", setup, {writes_refused_busy_over_persist_max_dirty_reads_still_served}},
        {"push", setup, {writes_of_a_batch_push_each_key_once_with_its_latest_value}},
        {"framing", setup, {frames_cut_anywhere_are_all_answered_in_order}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, cases[i].setup, teardown);
        tcase_set_timeout(tc, 30);
        for (size_t j = 0; j < 4 && cases[i].tests[j] != NULL; j++)
            tcase_add_test(tc, cases[i].tests[j]);
        suite_add_tcase(s, tc);
    }
    return s;
}
