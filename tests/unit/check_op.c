/* check_op.c - the edge's op engine (server/edge/edge_op.h) without a
 * daemon: a test family table (a multi-key GET, a SET), real owner links to
 * two scripted owners (fake_owner.h), a client on a socketpair, one event
 * loop.  Keys are split to their owners and the answers put back in key
 * order; replies leave in request order; an owner's error, silence, or a
 * client that leaves are handled; a write is resent with the same request id
 * and fails explicitly past its deadline. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/resp.h"
#include "server/core/board.h"
#include "server/core/topo.h"
#include "server/edge/edge_conn.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_scan.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_op_int.h"
#include "proto/place.h"
#include "tests/harness.h"
#include "tests/unit/fake_owner.h"

enum mode { ANSWER, HOLD, FAIL, SILENT, DROP_FIRST_SET, MOVE_FIRST_SCAN };

static struct {
    char dir[256];
    struct event_base *base;
    struct board *board;
    struct worker_ctx ctx;
    struct edge_ctx ectx;
    struct edge e;
    struct fake_owner fo[2];
    enum mode mode;
    uint64_t set_seqs[8];         /* rid.seq of each SET the owners saw */
    int nsets;
    int peer;
    int ends;                     /* ENDS ops released (the end hook) */
    int ends_with_client;         /* ... of them while their client was there */
    int ends_with_error;          /* ... of them with an error recorded */
    uint64_t scan_from[2][8];     /* SCAN_RANGE: the positions each owner was asked for */
    int nscan[2];
    int moved;                    /* MOVE_FIRST_SCAN: the MOVED went out */
} T;

/* ---- a test family: GETS k... (a multi-key read), SETS k v (a write) ---- */

static int t_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                    const struct wire_slice *keys, struct wire_rid rid)
{
    if (r->type == WIRE_GET)
        return wire_put_get(b, id, keys, r->nk);
    return wire_put_set(b, id, keys[0], r->op->value, rid, (struct wire_expiry){WIRE_EXP_NONE, 0},
                        0);
}

static void gets_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    ck_assert_int_eq(m->type, WIRE_VALUES);
    ck_assert_uint_eq(m->u.values.nitems, r->nk);
    for (uint32_t i = 0; i < r->nk; i++) {
        struct op_item *x = &op->items[op->kidx[r->k0 + i]];
        x->found = m->u.values.items[i].found;
        x->off = buf_unread(&op->res);
        x->len = m->u.values.items[i].value.len;
        buf_append(&op->res, m->u.values.items[i].value.p, x->len);
    }
}

static void gets_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL) {
        resp_add_array(out, op->nkeys);
        for (uint32_t k = 0; k < op->nkeys; k++)
            resp_add_bulk(out, buf_head(&op->res) + op->items[k].off, op->items[k].len);
    }
    op_finish(op);
}

static void sets_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (m->type != WIRE_OK)
        op_error(op, "ERR unexpected");
}

static void sets_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        resp_add_simple(out, "OK");
    op_finish(op);
}

static const struct op_family gets_ops = {0, t_encode, gets_answer, gets_done, NULL, NULL};
static const struct op_family sets_ops = {OP_F_WRITE, t_encode, sets_answer, sets_done, NULL, NULL};

/* ENDS k: a write like SETS whose family counts how its ops end. */
static void t_end(struct op *op)
{
    T.ends++;
    T.ends_with_client += op->c != NULL;
    T.ends_with_error += op->err != 0;
}

static const struct op_family ends_ops = {OP_F_WRITE, t_encode, sets_answer, sets_done, NULL,
                                          t_end};

static void t_dispatch(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (argc >= 2 && argv[0].len == 4 && memcmp(argv[0].p, "GETS", 4) == 0) {
        struct op *op = op_new(c, &gets_ops, "gets");
        ck_assert_ptr_nonnull(op);
        if (op_copy_keys(op, argc - 1, argv + 1, 1, NULL) != 0 ||
            op_split(op, WIRE_GET, WIRE_ROLE_READ, 0) != 0 ||
            op_items(op, (uint32_t)(argc - 1)) == NULL) {
            op_finish_error(op);
            return;
        }
        op_start(op);
    } else if (argc == 3 && argv[0].len == 4 &&
               (memcmp(argv[0].p, "SETS", 4) == 0 || memcmp(argv[0].p, "ENDS", 4) == 0)) {
        struct op *op = op_new(c, argv[0].p[0] == 'S' ? &sets_ops : &ends_ops, "sets");
        ck_assert_ptr_nonnull(op);
        if (op_copy_keys(op, 1, &argv[1], 1, &argv[2]) != 0 ||
            op_single(op, WIRE_SET, WIRE_ROLE_WRITE) == NULL) {
            op_finish_error(op);
            return;
        }
        op_start(op);
    } else if (argc >= 2 && argv[0].len == 4 && memcmp(argv[0].p, "SCAN", 4) == 0) {
        edge_cmd_scan(c, argc, argv);
    } else {
        resp_add_simple(&c->out, "PONG");
    }
}

static void t_accepted(struct conn *c, const struct sockaddr *peer)
{
    sess_of(c)->proto = 2;
}

static const struct conn_hooks hooks = {.accepted = t_accepted, .dispatch = t_dispatch,
                                       .closing = op_conn_gone,
                                       .sess_size = sizeof(struct sess)};

/* ---- the owners' script -------------------------------------------------- */

/* GET: each key's value is "<key>@<owner index>"; SET: OK. */
static void answer_now(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    if (m->type == WIRE_GET) {
        struct wire_item items[16];
        char vals[16][80];
        ck_assert_uint_le(m->u.get.nkeys, 16);
        for (uint32_t i = 0; i < m->u.get.nkeys; i++) {
            int n = snprintf(vals[i], sizeof(vals[i]), "%.*s@%d", (int)m->u.get.keys[i].len,
                             m->u.get.keys[i].p, fo->index);
            items[i] = (struct wire_item){true, wire_slice(vals[i], (size_t)n), 1, 0};
        }
        wire_put_values(&b, m->id, items, m->u.get.nkeys);
    } else if (m->type == WIRE_SET) {
        wire_put_ok(&b, m->id, 7, true, NULL);
    } else if (m->type == WIRE_STATS) {
        wire_put_stats_reply(&b, m->id, NULL, 0);
    } else if (m->type == WIRE_SCAN_RANGE) { /* one key a range: "p<from>@<owner>" */
        char k[64];
        int n = snprintf(k, sizeof(k), "p%llu@%d", (unsigned long long)m->u.scan_range.from,
                         fo->index);
        struct wire_slice key = wire_slice(k, (size_t)n);
        wire_put_scan_reply(&b, m->id, m->u.scan_range.to, &key, 1);
    }
    if (buf_unread(&b) > 0)
        fo_reply(fc, &b);
    buf_deinit(&b);
}

static void on_request(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m)
{
    if (m->type == WIRE_STATS) { /* the 1 s poll and the failed-write report */
        answer_now(fo, fc, m);
        return;
    }
    if (m->type == WIRE_SET && T.nsets < 8)
        T.set_seqs[T.nsets++] = m->u.set.rid.seq;
    switch (T.mode) {
    case ANSWER:
        answer_now(fo, fc, m);
        break;
    case HOLD:
        fo_hold(fo, fc, m);
        break;
    case FAIL: {
        struct hkv_buf b = HKV_BUF_INIT;
        wire_put_error(&b, m->id, 1, wire_cstr("ERR boom from the owner"));
        fo_reply(fc, &b);
        buf_deinit(&b);
        break;
    }
    case SILENT:
        break;
    case DROP_FIRST_SET:
        if (!(m->type == WIRE_SET && T.nsets == 1))
            answer_now(fo, fc, m);
        break;
    case MOVE_FIRST_SCAN:
        if (m->type == WIRE_SCAN_RANGE && T.nscan[fo->index] < 8)
            T.scan_from[fo->index][T.nscan[fo->index]++] = m->u.scan_range.from;
        if (m->type == WIRE_SCAN_RANGE && !T.moved) { /* "leaf 0 is owner 1's now" */
            struct hkv_buf b = HKV_BUF_INIT;
            wire_put_moved(&b, m->id, 0, 10, 2, 1);
            fo_reply(fc, &b);
            buf_deinit(&b);
            T.moved = 1;
            break;
        }
        answer_now(fo, fc, m);
        break;
    }
}

/* Answers held request i as answer_now would. */
static void release_held(struct fake_owner *fo, int i)
{
    struct fo_held *h = &fo->held[i];
    struct wire_slice k = wire_cstr(h->key);
    struct wire_msg m = {.type = h->type, .id = h->id};
    m.u.get.keys = &k;
    m.u.get.nkeys = 1;
    answer_now(fo, h->fc, &m);
}

/* ---- the loop ------------------------------------------------------------------------ */

static int run_until(int (*cond)(void), int ms)
{
    int64_t end = h_now_ms() + ms;
    for (int i = 0; i < 1000000 && !cond() && h_now_ms() < end; i++) {
        event_base_loop(T.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        if (!cond())
            h_sleep_ms(1);
    }
    return cond();
}

static int links_up(void) { return fo_links_up(&T.fo[0]) && fo_links_up(&T.fo[1]); }

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    memset(&T, 0, sizeof(T));
    T.peer = -1;
    h_tmpdir(T.dir, sizeof(T.dir));
    struct cfg *cfg = cfg_create();
    ck_assert_ptr_nonnull(cfg);
    free(cfg->dir);
    cfg->dir = strdup(T.dir);
    cfg->hot_owners = 0;
    cfg->cold_owners = 2;
    struct cfg_error err;
    ck_assert_int_eq(cfg_set(cfg, "write-timeout", "300ms", &err), HKV_OK);
    ck_assert_int_eq(cfg_set(cfg, "write-deadline", "1200ms", &err), HKV_OK);
    ck_assert_int_eq(cfg_set(cfg, "write-retry-backoff", "100ms", &err), HKV_OK);
    T.ctx.cfg = cfg;
    T.board = board_create(2);
    ck_assert_ptr_nonnull(T.board);
    atomic_store(&T.board->slots[0].role, BOARD_EDGE);
    T.ctx.board = T.board;
    snprintf(T.ectx.colo_name, sizeof(T.ectx.colo_name), "test");
    T.base = event_base_new();
    ck_assert_ptr_nonnull(T.base);
    T.e.ctx = &T.ctx;
    T.e.ectx = &T.ectx;
    T.e.base = T.base;
    T.e.stats = &T.board->slots[0];
    struct conns_opts co = {.hooks = &hooks};
    edge_conns_opts(cfg, &co);
    ck_assert_int_eq(conns_setup(&T.e, &co), 0);
    for (int i = 0; i < 2; i++) {
        char path[TOPO_PATH_MAX];
        topo_owner_socket(cfg, CFG_POOL_COLD, i, path, sizeof(path));
        fo_start(&T.fo[i], T.base, path, i, on_request);
    }
    struct op_opts oo;
    edge_op_opts(cfg, &oo);
    ck_assert_int_eq(op_setup(&T.e, &oo), 0);
    struct owner_hooks oh = {0};
    struct owners_opts ow;
    edge_owners_opts(cfg, &ow);
    ck_assert_int_eq(owners_setup(&T.e, &oh, &ow), 0);
    ck_assert(run_until(links_up, 3000));
    int sv[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    conn_accept(&T.e, sv[0], 0);
    T.peer = sv[1];
}

static void teardown(void)
{
    conns_close_all(&T.e);
    op_teardown(&T.e.ops);
    owners_teardown(&T.e);
    conns_teardown(&T.e.conns);
    fo_stop(&T.fo[0]);
    fo_stop(&T.fo[1]);
    if (T.peer >= 0)
        close(T.peer);
    event_base_free(T.base);
    board_destroy(&T.board);
    cfg_destroy(&T.ctx.cfg);
    h_rmtree(T.dir);
}

static void send_str(const char *s)
{
    ck_assert_int_eq(write(T.peer, s, strlen(s)), (ssize_t)strlen(s));
}

/* Reads exactly strlen(want) bytes (running the loop) and compares. */
static void expect_reply(const char *want, int ms)
{
    char buf[1024];
    size_t n = strlen(want), got = 0;
    ck_assert_uint_lt(n, sizeof(buf));
    int64_t end = h_now_ms() + ms;
    for (int i = 0; i < 1000000 && got < n && h_now_ms() < end; i++) {
        event_base_loop(T.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        ssize_t r = read(T.peer, buf + got, n - got);
        if (r > 0)
            got += (size_t)r;
        else
            h_sleep_ms(1);
    }
    buf[got] = '\0';
    ck_assert_str_eq(buf, want);
}

/* Nothing arrives for ms. */
static void expect_silence(int ms)
{
    int64_t end = h_now_ms() + ms;
    char c;
    for (int i = 0; i < 100000 && h_now_ms() < end; i++) {
        event_base_loop(T.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        ck_assert_int_eq(read(T.peer, &c, 1), -1);
        h_sleep_ms(1);
    }
}

static int owner_of(const char *key)
{
    struct route rt;
    struct owner_ref *o = edge_owner_of(&T.e, key, strlen(key), &rt);
    ck_assert_ptr_nonnull(o);
    return o->index;
}

/* ---- tests ------------------------------------------------------------------------------ */

START_TEST(keys_split_to_their_owners_and_answered_in_key_order)
{
    /* keys until both owners hold some (the hash is fixed: bounded) */
    char req[1024] = "GETS", want[2048], keys[16][16];
    int n = 0, on[2] = {0, 0};
    for (; n < 16 && (n < 6 || on[0] == 0 || on[1] == 0); n++) {
        snprintf(keys[n], sizeof(keys[n]), "k%d", n);
        on[owner_of(keys[n])]++;
    }
    ck_assert(on[0] > 0 && on[1] > 0);
    int w = snprintf(want, sizeof(want), "*%d\r\n", n);
    for (int i = 0; i < n; i++) {
        strcat(req, " ");
        strcat(req, keys[i]);
        char v[32];
        int vl = snprintf(v, sizeof(v), "%s@%d", keys[i], owner_of(keys[i]));
        w += snprintf(want + w, sizeof(want) - (size_t)w, "$%d\r\n%s\r\n", vl, v);
    }
    strcat(req, "\r\n");
    send_str(req);
    expect_reply(want, 3000);
    /* one request per owner, not one per key */
    ck_assert_int_eq(T.fo[0].requests[WIRE_GET], 1);
    ck_assert_int_eq(T.fo[1].requests[WIRE_GET], 1);
    ck_assert_ptr_nonnull(T.e.ops->free); /* back in the freelist */
}
END_TEST

static int two_held(void) { return T.fo[0].nheld + T.fo[1].nheld >= 2; }

/* SCAN routes by position, not by key: a MOVED for the leaf it asked
 * about makes it ask the new owner for the same position, in the same
 * call (OP_F_MOVED), and the page is that owner's answer.  A request asks
 * for the whole run of leaves the map gives one owner (leaves 0 and 1 are
 * owner 1's after the MOVED), so the page's cursor is the run's end. */
START_TEST(scan_moved_asks_the_new_owner_for_the_same_position)
{
    T.mode = MOVE_FIRST_SCAN;
    send_str("SCAN 0 COUNT 1\r\n");
    char want[128];
    uint64_t cold = 1ULL << 63; /* (the owners are cold ones: the hot pool has none) */
    uint64_t end = cold | place_leaf_end(10, 1);
    char cur[32];
    int cl = snprintf(cur, sizeof(cur), "%llu", (unsigned long long)end);
    snprintf(want, sizeof(want), "*2\r\n$%d\r\n%s\r\n*1\r\n$4\r\np0@1\r\n", cl, cur);
    expect_reply(want, 3000);
    ck_assert(T.moved);
    ck_assert_int_eq(T.nscan[0], 1); /* leaf 0 was owner 0's by the map... */
    ck_assert_uint_eq(T.scan_from[0][0], 0);
    ck_assert_int_eq(T.nscan[1], 1); /* ...and is asked of owner 1 after the MOVED */
    ck_assert_uint_eq(T.scan_from[1][0], 0);
    /* the cursor goes on from the run's end; leaf 2 is owner 0's, leaf 3 owner 1's */
    char req[96];
    snprintf(req, sizeof(req), "SCAN %s COUNT 1\r\n", cur);
    send_str(req);
    int kl = snprintf(want, sizeof(want), "p%llu@0", (unsigned long long)place_leaf_end(10, 1));
    char rest[320];
    int cl2 = snprintf(cur, sizeof(cur), "%llu", (unsigned long long)(cold | place_leaf_end(10, 2)));
    snprintf(rest, sizeof(rest), "*2\r\n$%d\r\n%s\r\n*1\r\n$%d\r\n%s\r\n", cl2, cur, kl,
             want);
    expect_reply(rest, 3000);
    ck_assert_int_eq(T.nscan[0], 2);
    ck_assert_uint_eq(T.scan_from[0][1], place_leaf_end(10, 1));
}
END_TEST

START_TEST(replies_leave_in_request_order_whatever_order_owners_answer)
{
    T.mode = HOLD;
    send_str("GETS a\r\nGETS b\r\nPING\r\n");
    ck_assert(run_until(two_held, 3000));
    expect_silence(50); /* PING is answered, but waits behind a and b */
    struct fake_owner *fa = &T.fo[owner_of("a")], *fb = &T.fo[owner_of("b")];
    int ia = strcmp(fa->held[0].key, "a") == 0 ? 0 : 1;
    int ib = strcmp(fb->held[0].key, "b") == 0 ? 0 : 1;
    release_held(fb, ib); /* b first */
    expect_silence(50);
    release_held(fa, ia);
    expect_reply("*1\r\n$3\r\na@", 3000);
    char rest[64];
    snprintf(rest, sizeof(rest), "%d\r\n*1\r\n$3\r\nb@%d\r\n+PONG\r\n", owner_of("a"), owner_of("b"));
    expect_reply(rest, 3000);
}
END_TEST

START_TEST(owner_error_is_the_clients_error)
{
    T.mode = FAIL;
    send_str("GETS a\r\n");
    expect_reply("-ERR boom from the owner\r\n", 3000);
    send_str("SETS a 1\r\n");
    expect_reply("-ERR boom from the owner\r\n", 3000);
    ck_assert_uint_eq(T.e.ops->nwriting, 0);
    ck_assert_uint_eq(sess_of(T.e.conns->list)->writes_inflight, 0);
}
END_TEST

START_TEST(silent_owner_read_times_out_with_tryagain)
{
    T.mode = SILENT;
    send_str("GETS a\r\n");
    int64_t t0 = h_now_ms();
    char want[128];
    snprintf(want, sizeof(want), "-TRYAGAIN owner cold/%d did not answer\r\n", owner_of("a"));
    expect_reply(want, 5000);
    ck_assert_int_ge(h_now_ms() - t0, 250); /* write-timeout 300 ms, generous margin below */
    ck_assert_int_eq(T.fo[0].requests[WIRE_GET] + T.fo[1].requests[WIRE_GET], 1); /* not retried */
}
END_TEST

START_TEST(unanswered_write_is_resent_with_the_same_request_id)
{
    T.mode = DROP_FIRST_SET;
    send_str("SETS a 1\r\n");
    expect_reply("+OK\r\n", 5000);
    ck_assert_int_eq(T.nsets, 2);
    ck_assert_uint_ne(T.set_seqs[0], 0);
    ck_assert_uint_eq(T.set_seqs[0], T.set_seqs[1]);
    ck_assert_uint_eq(board_load(&T.e.stats->write_retries), 1);
    ck_assert_uint_eq(T.e.ops->nwriting, 0);
}
END_TEST

START_TEST(write_unacknowledged_past_its_deadline_fails_explicitly)
{
    T.mode = SILENT;
    send_str("SETS a 1\r\n");
    char want[160];
    snprintf(want, sizeof(want),
             "-UNAVAILABLE outcome unknown: owner cold/%d did not acknowledge the write within "
             "1200 ms\r\n", owner_of("a"));
    expect_reply(want, 6000);
    ck_assert_int_ge(T.nsets, 2); /* resent within the deadline */
    ck_assert_uint_eq(board_load(&T.e.stats->write_failures), 1);
    ck_assert_uint_eq(T.e.ops->nwriting, 0);
    /* the failed-write report asks the owner for STATS: let it answer (its
     * record is freed then) */
    int64_t end = h_now_ms() + 300;
    while (h_now_ms() < end) {
        event_base_loop(T.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        h_sleep_ms(1);
    }
}
END_TEST

static int no_writes(void) { return T.e.ops->nwriting == 0; }
static int one_held(void) { return T.fo[0].nheld + T.fo[1].nheld >= 1; }

START_TEST(client_gone_drops_the_answer_and_the_write_still_ends)
{
    T.mode = HOLD;
    send_str("SETS a 1\r\nGETS b\r\n");
    ck_assert(run_until(two_held, 3000));
    ck_assert_uint_eq(T.e.ops->nwriting, 1);
    /* the edge closes the client (a stop deadline, an output limit) */
    conn_close(T.e.conns->list);
    ck_assert_uint_eq(T.e.conns->n, 0);
    ck_assert_uint_eq(T.e.ops->nwriting, 1); /* the owner may apply it: it runs to its end */
    for (int o = 0; o < 2; o++)
        for (int i = 0; i < T.fo[o].nheld; i++)
            release_held(&T.fo[o], i);
    ck_assert(run_until(no_writes, 3000));
    int free_ops = 0;
    for (struct op *op = T.e.ops->free; op != NULL && free_ops < 10; op = op->next) {
        ck_assert_ptr_null(op->c);
        free_ops++;
    }
    ck_assert_int_eq(free_ops, 2); /* both answers dropped, both ops recycled */
}
END_TEST

/* The end hook runs once per op, whatever the outcome: the answer, the
 * owner's error, or a client gone (then without it). */
START_TEST(end_hook_runs_once_whatever_the_outcome)
{
    send_str("ENDS a 1\r\n");
    expect_reply("+OK\r\n", 3000);
    ck_assert_int_eq(T.ends, 1);
    ck_assert_int_eq(T.ends_with_client, 1);
    ck_assert_int_eq(T.ends_with_error, 0);
    T.mode = FAIL;
    send_str("ENDS a 1\r\n");
    expect_reply("-ERR boom from the owner\r\n", 3000);
    ck_assert_int_eq(T.ends, 2);
    ck_assert_int_eq(T.ends_with_client, 2);
    ck_assert_int_eq(T.ends_with_error, 1);
    T.mode = HOLD;
    send_str("ENDS a 1\r\n");
    ck_assert(run_until(one_held, 3000));
    conn_close(T.e.conns->list);
    ck_assert_int_eq(T.ends, 2); /* a write runs to its end */
    for (int o = 0; o < 2; o++)
        for (int i = 0; i < T.fo[o].nheld; i++)
            release_held(&T.fo[o], i);
    ck_assert(run_until(no_writes, 3000));
    ck_assert_int_eq(T.ends, 3);
    ck_assert_int_eq(T.ends_with_client, 2);
}
END_TEST

/* An op that carried a large argument does not keep its memory in the
 * freelist (a 32mb MULTI/EXEC must not pin 32mb per recycled op). */
START_TEST(recycled_op_keeps_no_large_buffer)
{
    size_t n = 100 * 1024;
    char *req = malloc(n + 64);
    ck_assert_ptr_nonnull(req);
    int h = snprintf(req, 64, "*3\r\n$4\r\nSETS\r\n$3\r\nbig\r\n$%zu\r\n", n);
    memset(req + h, 'v', n);
    memcpy(req + h + n, "\r\n", 3);
    send_str(req);
    free(req);
    expect_reply("+OK\r\n", 3000);
    ck_assert_ptr_nonnull(T.e.ops->free);
    ck_assert_uint_le(T.e.ops->free->store.cap, 4096);
    ck_assert_uint_le(T.e.ops->free->res.cap, 4096);
}
END_TEST

Suite *op_suite(void)
{
    Suite *s = suite_create("op");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"split", keys_split_to_their_owners_and_answered_in_key_order},
        {"order", replies_leave_in_request_order_whatever_order_owners_answer},
        {"error", owner_error_is_the_clients_error},
        {"timeout", silent_owner_read_times_out_with_tryagain},
        {"retry", unanswered_write_is_resent_with_the_same_request_id},
        {"deadline", write_unacknowledged_past_its_deadline_fails_explicitly},
        {"cancel", client_gone_drops_the_answer_and_the_write_still_ends},
        {"end", end_hook_runs_once_whatever_the_outcome},
        {"memory", recycled_op_keeps_no_large_buffer},
        {"scan_moved", scan_moved_asks_the_new_owner_for_the_same_position},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
