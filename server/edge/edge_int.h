/*
 * edge_int.h - the edge process's context (struct edge), which every edge
 * module is handed, and the owner counters it keeps.  Each group of fields
 * belongs to the module named beside it; the others only read it.  Private
 * to server/edge/.
 */
#ifndef HKV_EDGE_INT_H
#define HKV_EDGE_INT_H

#include <stdint.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/listener.h>

#include "proto/buf.h"
#include "proto/cmd.h"
#include "proto/resp.h"
#include "proto/stamp.h"
#include "proto/wire.h"
#include "server/edge/edge_link.h"
#include "server/core/router.h"
#include "server/core/worker.h"
#include "server/colo/cache.h"
#include "server/colo/ratelimit.h"

struct auth;
struct conn;
struct conn_hooks;
struct rslot;
struct owner_ref;
struct op;
struct flight;
struct ssl_st;                    /* OpenSSL's SSL */
struct ssl_ctx_st;                /* OpenSSL's SSL_CTX */

/* Requests a client may have waiting for replies before the edge stops
 * reading from it (Redis has no such bound; this is what keeps one client's
 * pipeline from holding unbounded edge memory).  TODO(config): make it the
 * directive client-max-pending once config/ grows it. */
#define EDGE_MAX_OWNERS 512
#define EDGE_FLIGHT_BUCKETS 4096

/* The owner counters INFO shows, in STATS_REPLY names. */
#define EDGE_OWNER_STATS(X)         \
    X(owner_reads)                  \
    X(owner_writes)                 \
    X(owner_idempotent_retries)     \
    X(owner_unknown_outcomes)       \
    X(owner_completion_records)     \
    X(owner_keys)                   \
    X(persist_dirty_keys)           \
    X(persist_batches)              \
    X(persist_rows)                 \
    X(persist_last_commit_ms)       \
    X(persist_stall_ms_max)         \
    X(persist_errors)               \
    X(owner_queue_depth)            \
    X(persist_backlog_bytes)

enum owner_stat {
#define X(n) OSTAT_##n,
    EDGE_OWNER_STATS(X)
#undef X
    OSTAT_COUNT
};

struct edge {
    struct worker_ctx *ctx;
    struct event_base *base;
    struct worker *worker;
    struct evconnlistener **listeners;
    size_t nlisteners;
    struct event *cron;           /* 100 ms: idle timeouts, soft output limits */
    struct event *deadline;       /* stop deadline */
    const struct conn_hooks *conn_hooks; /* what each connection calls (edge_conn.h) */
    struct conn *conns;           /* every open connection, a doubly linked list */
    uint64_t nconns;
    uint64_t next_client_id;
    struct board_slot *stats;     /* this edge's counters in the scoreboard */
    struct resp_limits limits;
    struct auth *auth;            /* users and ACLs (server/auth.h), rebuilt on reload */
    struct ssl_ctx_st *tls_ctx;   /* the TLS port's context (rebuilt on reload); NULL: no TLS */
    int stopping;
    int64_t ops_sample_ms;        /* instantaneous_ops_per_sec sampling */
    uint64_t ops_sample_cmds;
    uint64_t ops_per_sec;

    /* the data path (edge_data.c and friends) */
    struct router *router;
    uint64_t incarnation;         /* this process, in HELLO (exactly-once retries) */
    uint64_t next_seq;            /* the last write request number given */
    struct owner_ref *owners;     /* hot owners, then cold owners */
    int nowners;
    struct event *stats_poll;     /* 1 s: STATS of every owner, for INFO */
    struct op *free_ops;
    struct op *all_ops;           /* every op ever made, for teardown */
    uint64_t nops_writing;        /* write ops not finished (stop waits) */
    struct rslot *free_slots;
    struct flight *flights[EDGE_FLIGHT_BUCKETS];
    struct flight *free_flights;
    struct hkv_buf scratch;       /* encoding helpers' temporary space */

    /* the colo cache (edge_cache.c) */
    struct cache *cache;          /* NULL: every read asks the owner */
    uint64_t lock_seq;            /* refresh-lock tokens */
    struct hkv_buf cval;          /* a looked-up value, copied out of the segment */

    /* the rate limiter (edge_rl.c) */
    struct rl *rl;                /* the colo's limiter; NULL: none */
    const uint16_t *rl_map;       /* limit class of each command id, 0 = unlimited */
};

/* ---- the data path (edge_data.c) ----
 * An op is one client request that waits for owners: its reply slot, copies
 * of its arguments, and one owner request (oreq) per owner it needs (or per
 * key, for MSET).  Ops come from a per-edge freelist and keep their arrays,
 * so steady traffic allocates nothing.  op->c is NULL once the client is gone
 * (the cancel flag: the answer is then dropped, nothing is dereferenced). */
enum oreq_state { OREQ_IDLE, OREQ_SENT, OREQ_WAIT, OREQ_DONE };

struct oreq {
    struct op *op;
    struct owner_ref *owner;
    uint8_t type;                 /* WIRE_GET ... */
    uint8_t role;                 /* WIRE_ROLE_READ / WIRE_ROLE_WRITE */
    uint8_t state;
    uint8_t moved;                /* a MOVED was followed already */
    uint8_t tried;                /* a write attempt went out: a resend is a retry */
    uint32_t class_id;
    uint32_t k0, nk;              /* its keys: op->keys[op->kidx[k0 .. k0+nk)] */
    struct elink *link;           /* while SENT */
    uint64_t id;
    /* writes: the request id (proto/wire.h "Versions and request ids") */
    uint64_t seq;                 /* 0 until op_start numbers it */
    uint64_t conn;                /* connection of the link the last attempt used */
    struct oreq *wprev, *wnext;   /* in owner->wq while unfinished */
};

typedef void (*op_answer_fn)(struct op *op, struct oreq *r, const struct wire_msg *m);
typedef void (*op_done_fn)(struct op *op);

struct mres {                     /* one key's answer in a multi-owner MGET */
    int found;
    size_t off, len;              /* in op->res */
};

struct op {
    struct edge *e;
    struct conn *c;               /* NULL once the client is gone */
    struct rslot *slot;
    struct op *cprev, *cnext;     /* in c->ops */
    struct op *next;              /* freelist, or a flight's waiters */
    struct op *all_next;
    enum cmd_id cmd;
    int is_write;
    int rendered;                 /* the reply is written already */
    op_answer_fn answer;
    op_done_fn done;
    /* write path */
    int64_t start_ms, deadline_ms;
    int attempt;                  /* resends so far */
    int failed_counted;
    struct event timer;
    int timer_on, timer_deadline;
    /* arguments, copied (slices point into store) */
    struct hkv_buf store;
    struct wire_slice *keys, *vals;
    uint32_t nkeys, keys_cap;
    struct wire_slice value;
    struct wire_expiry exp;
    uint32_t wflags;
    int64_t delta;
    uint64_t cursor;
    uint32_t count;
    int has_match;
    struct wire_slice match;
    int step;
    int64_t ival;                 /* command-specific (TTL unit, SCAN owner ...) */
    /* owner requests */
    struct oreq one;
    struct oreq *reqs;
    uint32_t nreqs, reqs_cap;
    int pending;
    uint32_t *kidx;
    uint32_t kidx_cap;
    /* results */
    int64_t acc;
    struct hkv_buf res;
    struct mres *mres;
    uint32_t mres_cap;
    int err;
    struct hkv_buf errbuf;        /* the error reply text, without '-' */
};

/* A new op for the command being dispatched: its slot is deferred.  NULL on
 * allocation failure (an error reply was written). */
struct op *op_new(struct conn *c, enum cmd_id cmd, int is_write);
/* Room for n keys and n requests. 0, or -1 (error recorded). */
int op_reserve(struct op *op, uint32_t n);
/* Copies the keys (and values, step 2 from first) into the op. */
int op_copy_keys(struct op *op, int n, const struct resp_slice *argv, int step,
                 const struct resp_slice *value);
/* Splits op->keys into one oreq per owner (per_key: one per key). */
int op_split(struct op *op, uint8_t type, uint8_t role, int per_key);
/* One oreq for key 0 of op.  Returns the oreq, or NULL (error written). */
struct oreq *op_single(struct op *op, uint8_t type, uint8_t role);
/* An oreq to a given owner with no keys (SCAN, STATS). */
void op_to_owner(struct op *op, struct oreq *r, struct owner_ref *o, uint8_t type, uint8_t role);
/* Sends every oreq of the op (numbering its write requests first). */
void op_start(struct op *op);
void oreq_send(struct oreq *r);
/* Records an error reply for the op (the first one wins). */
void op_error(struct op *op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The buffer to write the reply into, NULL if the client is gone. */
struct hkv_buf *op_out(struct op *op);
/* Sends the reply written so far and frees the op. */
void op_finish(struct op *op);
/* The i-th owner request of an op (a single request lives inside the op). */
static inline struct oreq *req_at(struct op *op, uint32_t i)
{
    return op->nreqs == 1 && i == 0 ? &op->one : &op->reqs[i];
}
/* edge_op.c: the op timer (write backoff and deadline; lives in edge_data.c)
 * and the split scratch freed at teardown. */
void edge_op_timer_cb(evutil_socket_t fd, short what, void *arg);
void edge_op_teardown(void);
/* edge_diag.c: logs a failed write with what its owner says about itself. */
void edge_write_failed_report(struct owner_ref *o, const char *what);
/* Replies op->errbuf and finishes. */
void op_finish_error(struct op *op);

/* edge_cache.c */
#define EDGE_FILL_HORIZON_MS 10000 /* how long a tombstone guards (edge_cache.c) */
int edge_cache_setup(struct edge *e);
uint64_t edge_cache_token(struct edge *e);
int64_t edge_lock_ttl(const struct edge *e);
/* Fills the segment from an owner's answer (VALUE / NOTFOUND) to a fetch
 * sent at sent_ms (clock_mono_ms); an answer to a fetch sent
 * EDGE_FILL_HORIZON_MS ago or more is not stored. */
void edge_cache_fill(struct edge *e, const char *key, size_t klen, const struct route *rt,
                     const struct wire_msg *m, int64_t sent_ms);
/* After this edge's write was answered: store the new value or invalidate. */
void edge_cache_wrote(struct op *op, struct oreq *r, const struct wire_msg *m);
/* A push from an owner (elink push callback; arg is the owner_ref). */
void edge_cache_pushed(void *arg, const struct wire_msg *m);

/* edge_read.c */
void edge_flights_teardown(struct edge *e);
void edge_data_teardown(struct edge *e);
/* The client is going away: its ops forget it. */
void edge_data_conn_gone(struct conn *c);
#endif
