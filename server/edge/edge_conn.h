/*
 * edge_conn.h - a client connection: bytes in, RESP requests out to a
 * dispatch hook, replies back in request order.  The connection layer knows
 * no command, user, limit or op: the edge hands it three hooks at setup
 * (conns_opts.hooks) and the layers above keep their per-client session in
 * the bytes the hooks reserve after struct conn (hooks->sess_size, the same
 * allocation: struct sess, edge_sess.h), which this layer never reads.
 *
 * Replies.  A hook that answers at once appends to c->out (dispatch has
 * pointed c->out at a reply slot when earlier replies are still owed: see
 * edge_reply.h).  One that waits for an owner takes its slot with
 * slot_defer() and writes nothing more; when the answer comes it writes into
 * slot_out() and calls conn_slot_done(), which has every reply that is now
 * in order written once this loop turn's owner answers are in (one write(2)
 * for a pipeline's worth of answers; it may close the connection).
 *
 * The write lane.  A loop turn serves every ready client, one read each;
 * under a read storm that is hundreds of reads, and a write would wait
 * behind them twice (its request, then its owner's answer).  So: a
 * connection whose last batch of requests held writes and no reads (the
 * layer above says which with conn_note_request) is in the write lane: its
 * read event has the owner links' priority (0, before clients), and every
 * CONN_POLL_EVERY client reads the layer looks whether a lane connection
 * has bytes (one epoll_wait on the lane's own small set) and, if so, has
 * the loop serve it before the rest of the turn; at the same point it calls
 * opts.poll (the edge: owners' answers to pending writes).  A batch with
 * a read, of more than CONN_LANE_BATCH requests, or sent while more than
 * CONN_LANE_BATCH replies were still owed, leaves the lane: a bulk loader
 * or a mixed client waits its turn like a reader, and a lane connection
 * gets at most CONN_LANE_BATCH requests ahead of the readers per owner
 * round trip, so writers cannot starve readers; at most CONN_LANE_MAX
 * connections are in it per edge.  Replies keep their order per
 * connection: the lane only changes which connection is served first.
 *
 * One connection's share of a turn.  A callback runs at most
 * CONN_TURN_MAX requests of a connection's input; the rest waits for the
 * connection's next callback, behind the other clients already ready (and
 * nothing more is read from it until what it sent is run, so its input
 * buffer does not grow): a client pipelining thousands of reads takes one
 * slice at a time, not the loop.
 *
 * Flow control.  A client with client-max-pending replies owed is not read
 * until half of them are sent, nor one whose requests waiting for owners
 * keep client-max-pending-bytes of arguments (c->req_held: a write keeps
 * its value for retries) until half of that is answered; nor is one held
 * by a layer above (conn_hold: an owner link over its high mark) until
 * conn_release.
 *
 * Output limits.  client-output-buffer-limit counts every byte the edge
 * holds for a client's answers, not only `out`: the replies waiting in
 * slots behind an earlier one (a slow owner read, a held long poll, a
 * stream), and the held HTTP requests themselves (conn_held).  Whoever
 * writes into a slot's own buffer outside a dispatch tells the layer
 * (slot_note, edge_reply.h); a batch of requests stops at the hard limit,
 * so one read cannot run CONN_TURN_MAX large answers past it, and the
 * flush that follows closes the client (counted in INFO as
 * client_output_buffer_limit_disconnections).
 *
 * Another protocol (HTTP, edge_http.c) plugs in the same way with its own
 * hooks: an input hook replaces the RESP parser and runs each request
 * through conn_run, so reply slots, flow control, output limits and TLS are
 * the same for both.
 *
 * Ownership: this layer owns every struct conn (e->conns->list); conn_close frees
 * one, after the closing hook has let the layers above forget it.
 */
#ifndef HKV_EDGE_CONN_H
#define HKV_EDGE_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "proto/buf.h"
#include "proto/resp.h"

struct edge;                      /* the process (edge_int.h): this layer reads its loop,
                                   * its counters and its stopping flag */
struct rslot;
struct ssl_ctx_st;                /* OpenSSL's SSL_CTX */
struct ssl_st;                    /* OpenSSL's SSL */

struct conn {
    /* ---- the connection layer's (edge_conn.c, edge_conn_tls.c, edge_reply.c) ---- */
    struct edge *e;
    const struct conn_hooks *hooks; /* its protocol's (RESP: opts.hooks; HTTP: edge_http.h) */
    int fd;
    uint64_t id;
    struct event *rev;
    struct event *wev;
    struct ssl_st *ssl;           /* accepted on the TLS port; NULL on the plaintext one */
    uint8_t tls;                  /* CONN_TLS_* state bits (edge_conn_tls.h) */
    struct hkv_buf in;
    struct hkv_buf out;
    struct resp_parser parser;    /* its limits are narrowed from above (edge_auth.c) */
    size_t query_cap;             /* 0, or a query buffer bound tighter than the configured one */
    int close_after_write;
    int64_t created_ms;
    int64_t last_ms;              /* last byte received */
    int64_t soft_since_ms;        /* output over the soft limit since, 0 = not */
    size_t out_peak;              /* most output bytes waiting at a flush (CLIENT LIST rbp) */
    size_t held;                  /* bytes held for it besides `out` (conn_held) */
    size_t req_held;              /* bytes its requests waiting for owners keep (edge_op.c) */
    char addr[64];
    char laddr[64];
    struct conn *prev, *next;
    /* reply slots, in request order; empty = replies go straight to out */
    struct rslot *sq_head, *sq_tail;
    uint32_t nslots;
    struct rslot *cur;            /* the slot of the request being dispatched */
    int cur_deferred;
    int paused;                   /* input not read */
    const void *hold;             /* reading held by this until conn_release(e, hold) */
    int in_process;               /* requests are being run (no re-entry) */
    uint8_t lane;                 /* in the write lane (see above) */
    struct conn_batch {           /* the batch being run (conn_note_request): */
        uint8_t writes, reads;    /* it had writes, reads, */
        uint32_t n;               /* this many requests, */
        uint32_t owed;            /* sent while this many replies were owed */
    } batch;
    uint8_t more_input;           /* stopped at CONN_TURN_MAX: run the rest before reading */
    uint8_t pubsub_limits;        /* in subscribed mode: client-output-buffer-limit pubsub
                                   * applies (set by edge_pubsub.c) */
    uint8_t reply_mode;           /* CLIENT REPLY: CONN_REPLY_* bits (conn_reply_mode) */
    /* The layers above' session (hooks->sess_size bytes, edge_sess.h), in the
     * same allocation: this layer never reads it. */
    _Alignas(max_align_t) unsigned char above[];
};

/* What the layers above plug into every connection (set before the edge
 * accepts anything, conns_opts.hooks). */
struct conn_hooks {
    /* A new connection is set up; peer is its address (AF_UNSPEC if
     * unknown).  It may write a refusal and set close_after_write. */
    void (*accepted)(struct conn *c, const struct sockaddr *peer);
    /* One request (argc >= 1, argv[0] its name; slices valid during the
     * call).  Requests come in order, one at a time. */
    void (*dispatch)(struct conn *c, int argc, const struct resp_slice *argv);
    /* c is about to be freed (its unsent output dropped): forget it. */
    void (*closing)(struct conn *c);
    /* Optional: another protocol than RESP (HTTP).  Parses one request at
     * p[0..n) (the head of c->in) and runs it with conn_run.  Returns the
     * bytes it used (> 0), 0 when the request is not whole yet, or -1 to
     * stop reading (it set close_after_write).  With it, dispatch is not
     * called. */
    long (*input)(struct conn *c, const char *p, size_t n);
    /* Optional: RESP's gate before a request runs (CLIENT PAUSE,
     * edge_pause.h).  1: the request stays unread and c has been held
     * (conn_hold): it stops reading until released, then parses it again. */
    int (*park)(struct conn *c, int argc, const struct resp_slice *argv);
    /* Optional: the peer closed its side while replies are owed.  1: close
     * now (what is owed is dropped: a held request only it was waiting
     * for); 0: answer what was asked, then close (RESP's way). */
    int (*hangup)(struct conn *c);
    /* Optional: what a connection refused at accept (maxclients, a stop)
     * is sent before it is closed; NULL: RESP's "-ERR max number of clients
     * reached". */
    const char *refusal;
    /* Bytes reserved after each connection for the layers above' session
     * (struct sess, edge_sess.h), zeroed at accept. */
    size_t sess_size;
    /* 1: accepted while the edge stops too (HTTP, whose /healthz then says
     * "draining" to load balancers; the protocol closes after each answer). */
    int while_stopping;
};

/* The connection layer's options (the process builds them from the config,
 * at setup and at each reload). */
struct conns_opts {
    const struct conn_hooks *hooks; /* what each RESP connection calls (conn_accept) */
    void (*poll)(struct edge *e); /* between client reads (the write lane, above); NULL: none */
    struct resp_limits limits;    /* a new request parser's (the auth gate narrows them) */
    int64_t maxclients;
    int64_t timeout_ms;           /* idle client timeout, 0 = never */
    int64_t tcp_keepalive_ms;
    int64_t query_buffer_limit;   /* client-query-buffer-limit */
    int64_t output_hard;          /* client-output-buffer-limit HARD SOFT SECONDS */
    int64_t output_soft;
    int64_t output_soft_ms;
    int64_t pubsub_hard;          /* ... pubsub HARD SOFT SECONDS (c->pubsub_limits) */
    int64_t pubsub_soft;
    int64_t pubsub_soft_ms;
    int64_t max_pending;          /* client-max-pending: replies owed before input pauses */
    int64_t max_pending_bytes;    /* client-max-pending-bytes: arguments kept, likewise */
    int64_t tls_handshake_timeout_ms;
};

/* e->conns: what the layers above read of the connection layer (its own
 * state lies behind this head, edge_conn_int.h). */
struct edge_conns {
    struct conn *list;            /* every open connection, a doubly linked list */
    uint64_t n;                   /* how many */
    struct ssl_ctx_st *tls_ctx;   /* the TLS port's context: the process's, rebuilt on
                                   * reload; NULL: no TLS */
    struct conns_opts opts;
};

/* e->conns, with no connection yet.  0, or -1 out of memory. */
int conns_setup(struct edge *e, const struct conns_opts *opts);
/* New options (hooks and poll stay); every open connection's parser gets
 * the new limits (the auth gate narrows them again after). */
void conns_reload(struct edge_conns *x, const struct conns_opts *opts);
/* Frees the layer (call conns_close_all first); *x is NULL after. */
void conns_teardown(struct edge_conns **x);

/* Accepts a client socket (tls: from the TLS port, through tls_ctx);
 * refuses it past maxclients or while stopping; closes fd on failure.  Its
 * hooks are opts.hooks (RESP), or `hooks` (conn_accept_with). */
void conn_accept(struct edge *e, int fd, int tls);
void conn_accept_with(struct edge *e, int fd, int tls, const struct conn_hooks *hooks);
/* Runs one request of an input hook in request order: fn(c, arg) appends
 * its answer to c->out, or keeps its slot (slot_defer) and answers later,
 * as a dispatch hook does.  0, or -1 (out of memory: close the client). */
int conn_run(struct conn *c, void (*fn)(struct conn *c, void *arg), void *arg);
/* CLIENT REPLY ON|OFF|SKIP, as Redis: OFF drops the replies of every request
 * from this one on, SKIP those of this one and the next, ON (answered OK)
 * ends both.  A dropped reply is still computed in order and dropped where
 * it leaves (a muted reply slot, edge_reply.c), so a write a muted client
 * sent is applied as any other; pushes (invalidations, messages) go on. */
enum conn_reply { CONN_REPLY_ON, CONN_REPLY_OFF, CONN_REPLY_SKIP };
void conn_reply_mode(struct conn *c, enum conn_reply mode);
/* Closes now, dropping unsent output; c is freed. */
void conn_close(struct conn *c);

#define CONN_TURN_MAX 64          /* requests run per callback of one connection */
#define CONN_FLUSH_NOW (64 * 1024) /* pending output written at once, not at the turn's end */
#define CONN_POLL_EVERY 16        /* client reads between looks at the lane and owners */
#define CONN_LANE_BATCH 8         /* a larger batch of writes is not in the write lane */
#define CONN_LANE_MAX 64          /* write-lane connections per edge */
/* The request being dispatched reads keys (is_write 0) or writes them (1);
 * requests that do neither are not noted.  Decides the write lane at the
 * end of the batch. */
static inline void conn_note_request(struct conn *c, int is_write)
{
    if (is_write)
        c->batch.writes = 1;
    else
        c->batch.reads = 1;
}
/* Every byte held for c's answers: its output buffer, its slots' buffers
 * and what the layers above hold for it (c->held). */
static inline size_t conn_held(const struct conn *c)
{
    return buf_unread(&c->out) + c->held;
}
/* Sends what is buffered (may close c: a peer that is gone, or one over
 * its output limits). */
void conn_flush(struct conn *c);
/* Reads again (after a pause or a hold) and runs what is buffered. */
void conn_resume(struct conn *c);
/* Holds c's input before its next request until conn_release(e, by). */
void conn_hold(struct conn *c, const void *by);
/* Resumes every connection held by `by` (those at their pending bound
 * resume when their replies are sent). */
void conn_release(struct edge *e, const void *by);
/* Slot s (slot_defer) is answered: what is now in order is written from the
 * connection's write event, activated here (or at once when the connection
 * resumes reading). */
void conn_slot_done(struct conn *c, struct rslot *s);

/* Every 100 ms: TLS handshake and idle timeouts, output limits. */
void conns_cron(struct edge *e, int64_t now_ms);
/* A stop: closes the connections with nothing owed now, the others once
 * their replies (writes in flight included) are written. */
void conns_stop(struct edge *e);
/* Closes every connection now (and the write lane's epoll set). */
void conns_close_all(struct edge *e);

/* Writes an error reply now (no slot taken). */
static inline void reply_error(struct conn *c, const char *text)
{
    resp_add_error(&c->out, text);
}

#endif
