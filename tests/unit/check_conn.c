/* check_conn.c - the edge's connection layer (server/edge/edge_conn.h)
 * without a daemon: a connection on a socketpair, a test dispatch hook that
 * records each request, one event loop driven by the test.  Pipelined input
 * is parsed and dispatched in order, replies leave in request order and are
 * flushed, the closing hook runs, and the limits (pending bound, query
 * buffer, output buffer, maxclients) hold; a writing connection is in the
 * write lane and served before ready readers, even mid-turn. */
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
#include "server/edge/edge_conn.h"
#include "server/edge/edge_conn_int.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_reply.h"
#include "tests/harness.h"

#define MAXLOG 160
#define NREADERS 100           /* the lane tests' readers: more than an epoll batch (32) */

static struct {
    struct event_base *base;
    struct board *board;
    struct worker_ctx ctx;
    struct edge e;
    int peer;                     /* the client's end of the socketpair */
    char log[MAXLOG][64];         /* every dispatched request, words joined by ' ' */
    int nlog;
    struct conn *conn[MAXLOG];    /* the connection of each */
    struct rslot *deferred[MAXLOG];
    int ndeferred;
    int accepted, closing;
    int refuse;                   /* the accepted hook refuses (as protected mode does) */
    size_t query_cap;             /* the accepted hook sets c->query_cap */
    int hold_token;
    int trigger_fd;               /* the first R sends "W a 2" on it (once), mid-turn */
    int polls;                    /* e->conns->opts.poll calls */
    int readers[NREADERS];        /* the lane tests' reader clients */
} F;

static void t_accepted(struct conn *c, const struct sockaddr *peer)
{
    F.accepted++;
    c->query_cap = F.query_cap;
    if (F.refuse) {
        resp_add_error(&c->out, "DENIED go away");
        c->close_after_write = 1;
    }
}

/* PING: +PONG; ECHO x: x; DEFER: the reply waits (F.deferred); HOLD: the
 * connection is held (F.hold_token); BIG n: an n-byte bulk; W: a write, R: a
 * read (conn_note_request), +OK; else +OK. */
static void t_dispatch(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (F.nlog < MAXLOG) {
        char *l = F.log[F.nlog];
        size_t n = 0;
        for (int i = 0; i < argc && n + 1 < sizeof(F.log[0]); i++)
            n += (size_t)snprintf(l + n, sizeof(F.log[0]) - n, "%s%.*s", i ? " " : "",
                                  (int)argv[i].len, argv[i].p);
        F.conn[F.nlog++] = c;
    }
    if (argv[0].len == 1 && (argv[0].p[0] == 'W' || argv[0].p[0] == 'R'))
        conn_note_request(c, argv[0].p[0] == 'W');
    if (argv[0].len == 2 && memcmp(argv[0].p, "WD", 2) == 0) { /* a write answered later */
        conn_note_request(c, 1);
        struct rslot *s = slot_defer(c);
        ck_assert_ptr_nonnull(s);
        F.deferred[F.ndeferred++] = s;
        return;
    }
    if (argv[0].len == 1 && argv[0].p[0] == 'R' && F.trigger_fd >= 0) {
        int fd = F.trigger_fd;
        F.trigger_fd = -1;
        ck_assert_int_eq(write(fd, "W a 2\r\n", 7), 7);
    }
    if (argv[0].len == 4 && memcmp(argv[0].p, "TAIL", 4) == 0) { /* an invalidation, then +OK */
        struct rslot *s;
        struct hkv_buf *o = slot_tail_out(c, &s);
        ck_assert_ptr_nonnull(o);
        buf_append(o, ">1\r\n$3\r\ninv\r\n", 13);
        if (s != NULL)
            slot_note(c, s);
    }
    if (argv[0].len == 4 && memcmp(argv[0].p, "PING", 4) == 0) {
        resp_add_simple(&c->out, "PONG");
    } else if (argv[0].len == 4 && memcmp(argv[0].p, "ECHO", 4) == 0 && argc == 2) {
        resp_add_bulk(&c->out, argv[1].p, argv[1].len);
    } else if (argv[0].len == 5 && memcmp(argv[0].p, "DEFER", 5) == 0) {
        struct rslot *s = slot_defer(c);
        ck_assert_ptr_nonnull(s);
        F.deferred[F.ndeferred++] = s;
    } else if (argv[0].len == 4 && memcmp(argv[0].p, "HOLD", 4) == 0) {
        conn_hold(c, &F.hold_token);
        resp_add_simple(&c->out, "HELD");
    } else if (argv[0].len == 3 && memcmp(argv[0].p, "BIG", 3) == 0 && argc == 2) {
        size_t n = (size_t)atol(argv[1].p);
        char *big = malloc(n);
        ck_assert_ptr_nonnull(big);
        memset(big, 'x', n);
        resp_add_bulk(&c->out, big, n);
        free(big);
    } else {
        resp_add_simple(&c->out, "OK");
    }
}

static void t_closing(struct conn *c)
{
    F.closing++;
}

static const struct conn_hooks hooks = {.accepted = t_accepted, .dispatch = t_dispatch,
                                       .closing = t_closing};

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN); /* a client that went away is an EPIPE, as in the edge */
    memset(&F, 0, sizeof(F));
    F.ctx.cfg = cfg_create();
    ck_assert_ptr_nonnull(F.ctx.cfg);
    F.board = board_create(2);
    ck_assert_ptr_nonnull(F.board);
    atomic_store(&F.board->slots[0].role, BOARD_EDGE);
    F.ctx.board = F.board;
    F.base = event_base_new();
    ck_assert_ptr_nonnull(F.base);
    ck_assert_int_eq(event_base_priority_init(F.base, 2), 0); /* as the edge: links, clients */
    F.e.ctx = &F.ctx;
    F.e.base = F.base;
    F.e.stats = &F.board->slots[0];
    struct conns_opts co = {.hooks = &hooks};
    edge_conns_opts(F.ctx.cfg, &co);
    ck_assert_int_eq(conns_setup(&F.e, &co), 0);
    F.peer = -1;
    F.trigger_fd = -1;
    for (int i = 0; i < NREADERS; i++)
        F.readers[i] = -1;
}

static void teardown(void)
{
    conns_close_all(&F.e);
    conns_teardown(&F.e.conns);
    if (F.peer >= 0)
        close(F.peer);
    for (int i = 0; i < NREADERS; i++)
        if (F.readers[i] >= 0)
            close(F.readers[i]);
    event_base_free(F.base);
    board_destroy(&F.board);
    cfg_destroy(&F.ctx.cfg);
}

/* A new connection on a socketpair; returns the client's end (non-blocking). */
static int connect_client(void)
{
    int sv[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    conn_accept(&F.e, sv[0], 0);
    return sv[1];
}

static void send_str(int fd, const char *s)
{
    size_t n = strlen(s), off = 0;
    for (int i = 0; i < 1000 && off < n; i++) {
        ssize_t w = write(fd, s + off, n - off);
        if (w > 0)
            off += (size_t)w;
        else
            h_sleep_ms(1);
    }
    ck_assert_uint_eq(off, n);
}

/* Runs the loop until cond() or ms pass; returns cond(). */
static int run_until(int (*cond)(void), int ms)
{
    int64_t end = h_now_ms() + ms;
    for (int i = 0; i < 1000000 && !cond() && h_now_ms() < end; i++) {
        event_base_loop(F.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        if (!cond())
            h_sleep_ms(1);
    }
    return cond();
}

static void run_for(int ms)
{
    int64_t end = h_now_ms() + ms;
    for (int i = 0; i < 100000 && h_now_ms() < end; i++) {
        event_base_loop(F.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        h_sleep_ms(1);
    }
}

/* Reads what the client got, running the loop, until `want` bytes came or
 * EOF or ms pass (buf holds want + 1).  Returns the bytes read, NUL
 * terminated; *eof set on EOF. */
static size_t read_reply(int fd, char *buf, size_t want, int ms, int *eof)
{
    size_t got = 0;
    int64_t end = h_now_ms() + ms;
    *eof = 0;
    for (int i = 0; i < 1000000 && got < want && h_now_ms() < end; i++) {
        event_base_loop(F.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        ssize_t n = read(fd, buf + got, want - got);
        if (n > 0) {
            got += (size_t)n;
        } else if (n == 0) {
            *eof = 1;
            break;
        } else if (errno == EAGAIN) {
            h_sleep_ms(1);
        } else {
            *eof = 1;
            break;
        }
    }
    buf[got] = '\0';
    return got;
}

static int nlog_is_3(void) { return F.nlog >= 3; }
static int nlog_is_1(void) { return F.nlog >= 1; }
static int closed_once(void) { return F.closing >= 1; }

START_TEST(pipelined_requests_dispatched_in_order_and_answered_in_order)
{
    F.peer = connect_client();
    ck_assert_int_eq(F.accepted, 1);
    ck_assert_uint_eq(F.e.conns->n, 1);
    /* three requests in one write: multibulk, multibulk, inline */
    send_str(F.peer, "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nSET a b\r\n");
    ck_assert(run_until(nlog_is_3, 2000));
    ck_assert_int_eq(F.nlog, 3);
    ck_assert_str_eq(F.log[0], "PING");
    ck_assert_str_eq(F.log[1], "ECHO hi");
    ck_assert_str_eq(F.log[2], "SET a b");
    const char *want = "+PONG\r\n$2\r\nhi\r\n+OK\r\n";
    char buf[256];
    int eof;
    ck_assert_uint_eq(read_reply(F.peer, buf, strlen(want), 2000, &eof), strlen(want));
    ck_assert_str_eq(buf, want);
    ck_assert_uint_eq(board_load(&F.e.stats->total_connections_received), 1);
    ck_assert_uint_eq(board_load(&F.e.stats->connected_clients), 1);
}
END_TEST

START_TEST(request_split_across_reads_is_dispatched_once_whole)
{
    F.peer = connect_client();
    send_str(F.peer, "*2\r\n$4\r\nECHO\r\n$5\r\nhel");
    run_for(50);
    ck_assert_int_eq(F.nlog, 0); /* not whole yet */
    send_str(F.peer, "lo\r\n");
    ck_assert(run_until(nlog_is_1, 2000));
    run_for(20);
    ck_assert_int_eq(F.nlog, 1);
    ck_assert_str_eq(F.log[0], "ECHO hello");
    char buf[64];
    int eof;
    ck_assert_uint_eq(read_reply(F.peer, buf, 11, 2000, &eof), 11);
    ck_assert_str_eq(buf, "$5\r\nhello\r\n");
}
END_TEST

START_TEST(deferred_reply_keeps_request_order)
{
    F.peer = connect_client();
    send_str(F.peer, "DEFER\r\nECHO second\r\n");
    ck_assert(run_until(nlog_is_3, 300) == 0 && F.nlog == 2);
    char buf[128];
    int eof;
    /* the second is answered already, but must wait behind the first */
    ck_assert_uint_eq(read_reply(F.peer, buf, 1, 100, &eof), 0);
    ck_assert_uint_eq(F.conn[0]->nslots, 2);
    struct conn *c = F.conn[0];
    struct rslot *s = F.deferred[0];
    resp_add_simple(slot_out(c, s), "first");
    conn_slot_done(c, s);
    const char *want = "+first\r\n$6\r\nsecond\r\n";
    ck_assert_uint_eq(read_reply(F.peer, buf, strlen(want), 2000, &eof), strlen(want));
    ck_assert_str_eq(buf, want);
    ck_assert_uint_eq(c->nslots, 0);
}
END_TEST

/* Bytes that must follow what is owed (slot_tail_out) written by the
 * request being dispatched go after the replies owed before it and before
 * its own (CLIENT TRACKING: an invalidation due before a command ran). */
START_TEST(tail_bytes_written_during_a_dispatch_precede_its_own_reply)
{
    F.peer = connect_client();
    send_str(F.peer, "DEFER\r\nTAIL\r\n");
    ck_assert(run_until(nlog_is_3, 300) == 0 && F.nlog == 2);
    struct conn *c = F.conn[0];
    struct rslot *s = F.deferred[0];
    resp_add_simple(slot_out(c, s), "first");
    conn_slot_done(c, s);
    char buf[128];
    int eof;
    const char *want = "+first\r\n>1\r\n$3\r\ninv\r\n+OK\r\n";
    ck_assert_uint_eq(read_reply(F.peer, buf, strlen(want), 2000, &eof), strlen(want));
    ck_assert_str_eq(buf, want);
    ck_assert_uint_eq(c->nslots, 0);
    send_str(F.peer, "TAIL\r\n"); /* nothing owed: straight into the output, then +OK */
    const char *want2 = ">1\r\n$3\r\ninv\r\n+OK\r\n";
    ck_assert_uint_eq(read_reply(F.peer, buf, strlen(want2), 2000, &eof), strlen(want2));
    ck_assert_str_eq(buf, want2);
}
END_TEST

START_TEST(closing_hook_runs_once_when_the_client_hangs_up)
{
    F.peer = connect_client();
    send_str(F.peer, "PING\r\n");
    ck_assert(run_until(nlog_is_1, 2000));
    close(F.peer);
    F.peer = -1;
    ck_assert(run_until(closed_once, 2000));
    run_for(20);
    ck_assert_int_eq(F.closing, 1);
    ck_assert_uint_eq(F.e.conns->n, 0);
    ck_assert_ptr_null(F.e.conns->list);
    ck_assert_uint_eq(board_load(&F.e.stats->connected_clients), 0);
}
END_TEST

static int nlog_is_4(void) { return F.nlog >= 4; }
static int nlog_is_7(void) { return F.nlog >= 7; }

START_TEST(pending_bound_pauses_input_until_half_is_answered)
{
    F.e.conns->opts.max_pending = 4;
    F.peer = connect_client();
    char req[256] = "";
    for (int i = 0; i < 10; i++)
        strcat(req, "DEFER\r\n");
    send_str(F.peer, req);
    ck_assert(run_until(nlog_is_4, 2000));
    run_for(50);
    ck_assert_int_eq(F.nlog, 4); /* paused at the bound: nothing more is read */
    struct conn *c = F.conn[0];
    ck_assert(c->paused);
    /* answering 2 leaves 2 owed: not under half yet */
    for (int i = 0; i < 2; i++) {
        resp_add_int(slot_out(c, F.deferred[i]), i);
        conn_slot_done(c, F.deferred[i]);
    }
    run_for(30);
    ck_assert_int_eq(F.nlog, 4);
    /* the third leaves 1 owed (< 4/2): input resumes until the bound again */
    resp_add_int(slot_out(c, F.deferred[2]), 2);
    conn_slot_done(c, F.deferred[2]);
    ck_assert(run_until(nlog_is_7, 2000));
    run_for(30);
    ck_assert_int_eq(F.nlog, 7);
    char buf[64];
    int eof;
    const char *want = ":0\r\n:1\r\n:2\r\n";
    ck_assert_uint_eq(read_reply(F.peer, buf, strlen(want), 2000, &eof), strlen(want));
    ck_assert_str_eq(buf, want);
}
END_TEST

START_TEST(protocol_error_is_answered_then_the_connection_closes)
{
    F.peer = connect_client();
    send_str(F.peer, "PING\r\n*1\r\n$x\r\nPING\r\n");
    char buf[256];
    int eof = 0;
    size_t n = read_reply(F.peer, buf, sizeof(buf) - 1, 2000, &eof);
    ck_assert(eof);
    ck_assert_msg(n > 7 && strncmp(buf, "+PONG\r\n-ERR Protocol error", 26) == 0, "got %s", buf);
    ck_assert_int_eq(F.nlog, 1); /* nothing after the bad request runs */
    ck_assert_int_eq(F.closing, 1);
    ck_assert_uint_eq(board_load(&F.e.stats->protocol_errors), 1);
}
END_TEST

START_TEST(query_buffer_limit_closes_the_client)
{
    F.query_cap = 4096; /* tighter than client-query-buffer-limit, as before AUTH */
    F.peer = connect_client();
    char big[8192];
    memset(big, 'v', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    send_str(F.peer, "*2\r\n$3\r\nSET\r\n$100000\r\n"); /* a bulk that never completes */
    send_str(F.peer, big);
    char buf[256];
    int eof = 0;
    read_reply(F.peer, buf, sizeof(buf) - 1, 2000, &eof);
    ck_assert(eof);
    ck_assert_str_eq(buf, "-ERR Protocol error: query buffer limit reached\r\n");
    ck_assert_int_eq(F.nlog, 0);
    ck_assert_int_eq(F.closing, 1);
}
END_TEST

START_TEST(output_over_the_hard_limit_closes_a_client_that_does_not_read)
{
    F.e.conns->opts.output_hard = 64 * 1024;
    F.peer = connect_client();
    send_str(F.peer, "BIG 4000000\r\n"); /* far more than the socket buffers hold */
    ck_assert(run_until(closed_once, 2000));
    ck_assert_uint_eq(F.e.conns->n, 0);
}
END_TEST

START_TEST(replies_waiting_behind_a_deferred_one_count_against_the_hard_limit)
{
    F.e.conns->opts.output_hard = 64 * 1024;
    F.peer = connect_client();
    /* nothing reaches out (the first reply is owed): 200 KB wait in slots */
    send_str(F.peer, "DEFER\r\n");
    for (int i = 0; i < 20; i++)
        send_str(F.peer, "BIG 10000\r\n");
    ck_assert(run_until(closed_once, 2000));
    ck_assert_uint_eq(F.e.conns->n, 0);
    ck_assert_int_lt(F.nlog, 21); /* the batch stopped at the limit */
    ck_assert_uint_eq(board_load(&F.e.stats->client_output_buffer_limit_disconnections), 1);
}
END_TEST

static int nlog_is_10(void) { return F.nlog >= 10; }

START_TEST(a_batch_stopped_at_the_hard_limit_runs_on_once_the_socket_takes_it)
{
    F.e.conns->opts.output_hard = 64 * 1024;
    F.peer = connect_client();
    char cmds[200] = "";
    for (int i = 0; i < 10; i++)
        strcat(cmds, "BIG 10000\r\n");
    send_str(F.peer, cmds); /* 100 KB of replies: over the limit mid-batch, not in the socket */
    static char buf[10 * 10010 + 1];
    int eof;
    size_t got = read_reply(F.peer, buf, sizeof(buf) - 1, 3000, &eof);
    ck_assert(!eof);
    ck_assert_uint_eq(got, 10 * (size_t)(8 + 10000 + 2));
    ck_assert(run_until(nlog_is_10, 100));
    ck_assert_uint_eq(F.e.conns->n, 1);
}
END_TEST

START_TEST(maxclients_refuses_past_the_bound)
{
    F.e.conns->opts.maxclients = 1;
    F.peer = connect_client();
    int second = connect_client();
    char buf[128];
    int eof = 0;
    read_reply(second, buf, sizeof(buf) - 1, 2000, &eof);
    close(second);
    ck_assert(eof);
    ck_assert_str_eq(buf, "-ERR max number of clients reached\r\n");
    ck_assert_int_eq(F.accepted, 1); /* the refused one never reached the hooks */
    ck_assert_uint_eq(F.e.conns->n, 1);
    ck_assert_uint_eq(board_load(&F.e.stats->rejected_connections), 1);
}
END_TEST

START_TEST(refusal_written_by_the_accepted_hook_is_sent_before_closing)
{
    F.refuse = 1;
    F.peer = connect_client(); /* refused and closed at once: it cannot even send */
    ck_assert_int_eq(F.closing, 1);
    char buf[128];
    int eof = 0;
    read_reply(F.peer, buf, sizeof(buf) - 1, 2000, &eof);
    ck_assert(eof);
    ck_assert_str_eq(buf, "-DENIED go away\r\n");
    ck_assert_int_eq(F.nlog, 0);
    ck_assert_uint_eq(F.e.conns->n, 0);
}
END_TEST

static int nlog_is_2(void) { return F.nlog >= 2; }

START_TEST(held_connection_reads_again_once_released)
{
    F.peer = connect_client();
    send_str(F.peer, "HOLD\r\nPING\r\n");
    ck_assert(run_until(nlog_is_1, 2000));
    run_for(50);
    ck_assert_int_eq(F.nlog, 1); /* PING waits behind the hold */
    conn_release(&F.e, &F.hold_token);
    ck_assert(run_until(nlog_is_2, 2000));
    char buf[64];
    int eof;
    const char *want = "+HELD\r\n+PONG\r\n";
    ck_assert_uint_eq(read_reply(F.peer, buf, strlen(want), 2000, &eof), strlen(want));
    ck_assert_str_eq(buf, want);
}
END_TEST

static int nlog_is_lane_done(void) { return F.nlog >= NREADERS + 2; }

START_TEST(writing_connection_joins_the_write_lane_and_a_read_takes_it_out)
{
    F.peer = connect_client();
    send_str(F.peer, "W a 1\r\n");
    ck_assert(run_until(nlog_is_1, 2000));
    struct conn *c = F.conn[0];
    ck_assert_int_eq(c->lane, 1);
    ck_assert_int_eq(conns_st(&F.e)->nlane, 1);
    send_str(F.peer, "PING\r\n"); /* neither a read nor a write: no change */
    ck_assert(run_until(nlog_is_2, 2000));
    ck_assert_int_eq(c->lane, 1);
    send_str(F.peer, "W a 2\r\nR a\r\n"); /* a batch with a read */
    ck_assert(run_until(nlog_is_4, 2000));
    ck_assert_int_eq(c->lane, 0);
    ck_assert_int_eq(conns_st(&F.e)->nlane, 0);
    char big[CONN_LANE_BATCH * 8 + 16];
    size_t n = 0;
    for (int i = 0; i <= CONN_LANE_BATCH; i++) /* a bulk load of writes is no lane */
        n += (size_t)snprintf(big + n, sizeof(big) - n, "W b %d\r\n", i % 10);
    send_str(F.peer, big);
    run_for(50);
    ck_assert_int_eq(F.nlog, 4 + CONN_LANE_BATCH + 1);
    ck_assert_int_eq(c->lane, 0);
    send_str(F.peer, "W a 3\r\n");
    run_for(50);
    ck_assert_int_eq(c->lane, 1);
    /* a writer that keeps sending while its writes are not answered: in the
     * lane while at most CONN_LANE_BATCH are owed, then out of it */
    for (int i = 0; i <= CONN_LANE_BATCH; i++) {
        send_str(F.peer, "WD\r\n");
        run_for(5);
        ck_assert_int_eq(c->lane, 1);
    }
    ck_assert_uint_eq(c->nslots, CONN_LANE_BATCH + 1);
    send_str(F.peer, "W a 4\r\n");
    run_for(50);
    ck_assert_int_eq(c->lane, 0);
    close(F.peer); /* closing leaves the lane */
    F.peer = -1;
    ck_assert(run_until(closed_once, 2000));
    ck_assert_int_eq(conns_st(&F.e)->nlane, 0);
}
END_TEST

/* A writer in the lane (its first write answered), then NREADERS readers
 * with a read each ready; returns the writer's client end. */
static int lane_and_readers(void)
{
    int w = connect_client();
    send_str(w, "W a 1\r\n");
    char buf[16];
    int eof;
    ck_assert_uint_eq(read_reply(w, buf, 5, 2000, &eof), 5);
    ck_assert_int_eq(F.conn[0]->lane, 1);
    for (int i = 0; i < NREADERS; i++)
        F.readers[i] = connect_client();
    for (int i = 0; i < NREADERS; i++) {
        char r[32];
        snprintf(r, sizeof(r), "R %d\r\n", i);
        send_str(F.readers[i], r);
    }
    return w;
}

/* The reads dispatched before the writer's second write. */
static int reads_before_second_write(void)
{
    for (int i = 1; i < F.nlog; i++)
        if (strcmp(F.log[i], "W a 2") == 0)
            return i - 1;
    ck_abort_msg("the second write was not dispatched");
    return -1;
}

START_TEST(write_lane_request_is_served_before_ready_readers)
{
    F.peer = lane_and_readers();
    send_str(F.peer, "W a 2\r\n");
    ck_assert(run_until(nlog_is_lane_done, 5000));
    ck_assert_int_eq(reads_before_second_write(), 0);
    char buf[16];
    int eof;
    ck_assert_uint_eq(read_reply(F.peer, buf, 5, 2000, &eof), 5);
    ck_assert_str_eq(buf, "+OK\r\n");
    for (int i = 0; i < NREADERS; i++) /* and every reader is answered */
        ck_assert_uint_eq(read_reply(F.readers[i], buf, 5, 2000, &eof), 5);
}
END_TEST

static void t_poll(struct edge *e)
{
    F.polls++;
}

START_TEST(write_lane_request_arriving_mid_turn_is_served_within_the_poll_period)
{
    F.peer = lane_and_readers();
    F.e.conns->opts.poll = t_poll;
    F.trigger_fd = F.peer; /* sent while the turn serves the readers */
    ck_assert(run_until(nlog_is_lane_done, 5000));
    int before = reads_before_second_write();
    /* without the look at the lane every CONN_POLL_EVERY reads it would wait
     * for the readers of the turn and of the next epoll batch (> 32) */
    ck_assert_msg(before <= CONN_POLL_EVERY + 1, "%d reads served before the write", before);
    ck_assert_int_ge(F.polls, NREADERS / CONN_POLL_EVERY - 1);
    char buf[16];
    int eof;
    ck_assert_uint_eq(read_reply(F.peer, buf, 5, 2000, &eof), 5);
    ck_assert_str_eq(buf, "+OK\r\n");
}
END_TEST

static int nlog_is_hog_done(void) { return F.nlog >= 2 * CONN_TURN_MAX + 1; }

START_TEST(pipelining_client_takes_a_bounded_share_and_keeps_its_order)
{
    F.peer = connect_client();
    int other = connect_client();
    F.readers[0] = other;
    /* one client pipelines twice the per-callback bound, then another sends
     * one request: it is run before the first one's last slice */
    char big[2 * CONN_TURN_MAX * 16 + 1];
    size_t n = 0;
    for (int i = 0; i < 2 * CONN_TURN_MAX; i++)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "ECHO %d\r\n", i % 10);
    send_str(F.peer, big);
    send_str(other, "ECHO other\r\n");
    ck_assert(run_until(nlog_is_hog_done, 5000));
    int at = -1;
    for (int i = 0; i < F.nlog; i++)
        if (strcmp(F.log[i], "ECHO other") == 0)
            at = i;
    ck_assert_int_ge(at, 0);
    ck_assert_msg(at <= CONN_TURN_MAX, "the other client ran after %d requests of the first", at);
    /* the first client's requests ran, and are answered, in its order */
    int k = 0;
    for (int i = 0; i < F.nlog; i++) {
        if (i == at)
            continue;
        char want[16];
        snprintf(want, sizeof(want), "ECHO %d", k++ % 10);
        ck_assert_str_eq(F.log[i], want);
    }
    char want[2 * CONN_TURN_MAX * 8 + 1], got[sizeof(want)];
    n = 0;
    for (int i = 0; i < 2 * CONN_TURN_MAX; i++)
        n += (size_t)snprintf(want + n, sizeof(want) - n, "$1\r\n%d\r\n", i % 10);
    int eof;
    ck_assert_uint_eq(read_reply(F.peer, got, n, 3000, &eof), n);
    ck_assert_str_eq(got, want);
    ck_assert_int_eq(F.conn[0]->more_input, 0);
}
END_TEST

Suite *conn_suite(void)
{
    Suite *s = suite_create("conn");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"order", pipelined_requests_dispatched_in_order_and_answered_in_order},
        {"partial", request_split_across_reads_is_dispatched_once_whole},
        {"slots", deferred_reply_keeps_request_order},
        {"slots", tail_bytes_written_during_a_dispatch_precede_its_own_reply},
        {"closing", closing_hook_runs_once_when_the_client_hangs_up},
        {"pending", pending_bound_pauses_input_until_half_is_answered},
        {"protocol", protocol_error_is_answered_then_the_connection_closes},
        {"querybuf", query_buffer_limit_closes_the_client},
        {"output", output_over_the_hard_limit_closes_a_client_that_does_not_read},
        {"output_slots", replies_waiting_behind_a_deferred_one_count_against_the_hard_limit},
        {"output_resume", a_batch_stopped_at_the_hard_limit_runs_on_once_the_socket_takes_it},
        {"maxclients", maxclients_refuses_past_the_bound},
        {"refusal", refusal_written_by_the_accepted_hook_is_sent_before_closing},
        {"hold", held_connection_reads_again_once_released},
        {"lane", writing_connection_joins_the_write_lane_and_a_read_takes_it_out},
        {"lane_first", write_lane_request_is_served_before_ready_readers},
        {"lane_midturn", write_lane_request_arriving_mid_turn_is_served_within_the_poll_period},
        {"share", pipelining_client_takes_a_bounded_share_and_keeps_its_order},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 20);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
