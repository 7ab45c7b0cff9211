/*
 * edge_link.h - the edge's client of one shard owner: one connection of one
 * role (READ, WRITE or PUSH; a write never queues behind reads because each
 * owner gets separate links), over the owner's Unix socket on this host or,
 * in a cluster, over TCP with mutual TLS to an owner of another host
 * (edge_link_io.h; the owner's certificate must name its host).
 *
 * A link is always usable: a request made while the link is down or still
 * connecting is buffered and goes out, after HELLO, once the connection is up.
 * A link that breaks fails every request sent on it with HKV_EIO and
 * reconnects by itself (50 ms backoff doubling to 1 s, reset by HELLO_OK).
 * The master holds each owner's listening socket, so connecting normally
 * succeeds even while the owner restarts; the HELLO then waits in its backlog.
 *
 * Requests.  elink_out() hands out the next request id and the buffer to
 * encode the request into (wire_put_*); elink_commit() registers the callback.
 * Ids are sequential per link, so the pending table is a ring indexed by id:
 * no allocation per request and O(1) lookup of out-of-order replies.  Every
 * request of a link has the same timeout (elink_set_timeout), so deadlines
 * are in send order and one timer serves the whole link.
 *
 * Callbacks: cb(arg, status, msg): status HKV_OK with msg (slices valid only
 * during the call), HKV_ETIMEDOUT (no answer within the timeout; a reply that
 * comes later is dropped) or HKV_EIO (the link broke: the request may or may
 * not have been applied).  A callback is called exactly once, from the event
 * loop, never from elink_out/elink_commit.  A callback may send on any link.
 *
 * Output is written once per event-loop round (a zero-delay event at the
 * loop's lowest priority, after the client reads of the round), so the
 * requests of every client read in a round cost one write(2) per link.  Backpressure:
 * elink_congested() is true while more than ELINK_HIGH_WATER bytes wait to be
 * written; the `drained` hook runs when it falls back under ELINK_LOW_WATER.
 */
#ifndef HKV_EDGE_LINK_H
#define HKV_EDGE_LINK_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <openssl/ssl.h>

#include "proto/buf.h"
#include "proto/wire.h"

#define ELINK_HIGH_WATER (8u << 20)
#define ELINK_LOW_WATER (1u << 20)
#define ELINK_BACKOFF_MIN_MS 50
#define ELINK_BACKOFF_MAX_MS 1000

struct elink;

typedef void (*elink_cb)(void *arg, int status, const struct wire_msg *m);
typedef void (*elink_drained_fn)(struct elink *l, void *arg);
/* A PUSH or INVALIDATE (id 0) arrived on a push link; m is valid only
 * during the call. */
typedef void (*elink_push_fn)(void *arg, const struct wire_msg *m);

struct elink_opts {
    const char *path;         /* the owner's Unix socket (when addr is NULL) */
    const char *addr;         /* an owner of another host: its IP literal (a name is
                               * refused: no DNS on the loop); NULL = Unix socket */
    int port;                 /* ... its TCP port */
    SSL_CTX *tls;             /* ... the client context (tls_cluster.h; the link takes a
                               * reference); required with addr */
    const char *peer_host;    /* ... the host name its certificate must carry */
    const char *name;         /* "hot/0 write" for logs */
    uint32_t edge_id;
    uint64_t incarnation;     /* this edge process (HELLO), != 0 */
    const char *cluster;      /* HELLO v3: the cluster (NULL or "" on a single host) */
    uint32_t want_owner;      /* ... the owner number meant (0 on a single host) */
    const char *host;         /* ... this edge's host name */
    const char *colo;
    uint8_t role;             /* WIRE_ROLE_READ, WIRE_ROLE_WRITE or WIRE_ROLE_PUSH */
    int64_t timeout_ms;
    size_t max_frame;
    elink_drained_fn drained;
    void *drained_arg;
    elink_push_fn push;       /* push links: what to do with a push */
    void *push_arg;
    void (*gap)(void *push_arg); /* push links: a connection that carried pushes broke, or a
                               * new one was greeted: pushes may have been missed */
};

/* A link that starts connecting at once.  NULL on allocation failure (or a
 * TCP link without a TLS context). */
struct elink *elink_create(struct event_base *base, const struct elink_opts *o);
/* Frees the link without calling any pending callback (process exit). */
void elink_destroy(struct elink **l);

/* The buffer to encode one request into, and its id in *id.  Encode exactly
 * one frame with that id, then elink_commit; if encoding failed, do not
 * commit (the buffer is unchanged on a failed wire_put_*). */
struct hkv_buf *elink_out(struct elink *l, uint64_t *id);
/* Registers the request just encoded.  HKV_OK; HKV_ETOOBIG: the frame is
 * larger than max_frame, which the owner would refuse by closing the link:
 * it is taken back out of the buffer, never sent, and the link is untouched
 * (the caller answers "not applied"); HKV_ENOMEM (then the frame still goes
 * out and its reply is dropped; the caller answers an error). */
int elink_commit(struct elink *l, uint64_t id, elink_cb cb, void *arg);
/* The same with the caller's clock_mono_ms reading (taken before this call,
 * so the request's timeout can only come early, never late): a clock read
 * per request was 1.1% of the edge's cycles on SET -P16. */
int elink_commit_at(struct elink *l, uint64_t id, elink_cb cb, void *arg, int64_t now_ms);
/* Inside a reply callback: the clock_mono_ns reading taken when the read
 * batch that holds the reply came in (one reading per batch, not per reply). */
int64_t elink_read_ns(const struct elink *l);
/* Forgets a pending request: its callback will not be called. */
void elink_cancel(struct elink *l, uint64_t id);

/* The timeout of every request of the link, those in flight included (a
 * deadline is a request's send time plus the timeout in force): lowered by a
 * reload, requests already past the new deadline time out at once. */
void elink_set_timeout(struct elink *l, int64_t timeout_ms);
/* A TCP link's TLS context for its next connections (a reload); the link
 * takes a reference.  Nothing for a Unix-socket link. */
void elink_set_tls(struct elink *l, SSL_CTX *ctx);
int elink_congested(const struct elink *l);
int elink_is_up(const struct elink *l);
/* Up, and the owner answered this connection's HELLO (HELLO_OK): from then
 * on the owner knows the link (a push link gets its pushes). */
int elink_greeted(const struct elink *l);
/* 1 for a TCP link (to an owner of another host). */
int elink_is_remote(const struct elink *l);
/* Requests waiting for an answer. */
uint64_t elink_pending(const struct elink *l);
/* Reads and handles what the owner has sent, now, without waiting for the
 * event loop to report it (one read(2), EAGAIN when nothing came): the
 * edge calls it between client reads while requests are pending, so an
 * answer is not left behind a whole loop turn of ready clients.  Nothing
 * when the link is not up or nothing is pending.  Runs the answers'
 * callbacks, as the read event does. */
void elink_poll(struct elink *l);
const char *elink_name(const struct elink *l);

/* Owner incarnations, for exactly-once retries (proto/wire.h, rid.prev).
 * elink_next_conn: the number of the connection a request sent now travels
 * on.  elink_owner_of: the incarnation of the owner that answered HELLO on
 * connection `conn`; 0 if the owner refused that HELLO (then it applied
 * nothing sent on that connection); WIRE_PREV_UNKNOWN if it never answered
 * (or it is too old to be remembered: the last 8 connections are). */
uint64_t elink_next_conn(const struct elink *l);
uint64_t elink_owner_of(const struct elink *l, uint64_t conn);
/* 0 if connection conn of l never went up: what was queued for it never
 * left this process, so it reached no owner. */
int elink_conn_went_up(const struct elink *l, uint64_t conn);

#endif
