/*
 * edge_int.h - what the edge's files share: the edge context and a client
 * connection.  Private to server/edge*.c and server/info.c.
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
#include "server/edge/edge_arg.h"
#include "server/edge/edge_link.h"
#include "server/core/router.h"
#include "server/core/worker.h"
#include "server/colo/cache.h"
#include "server/colo/ratelimit.h"

struct auth;
struct conn;
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

/* A reply slot: a request whose reply must wait for the ones before it. */
struct rslot {
    struct rslot *next;
    struct hkv_buf buf;
    uint8_t ready;
};

struct conn {
    struct edge *e;
    int fd;
    uint64_t id;
    struct event *rev;
    struct event *wev;
    struct ssl_st *ssl;           /* accepted on the TLS port; NULL on the plaintext one */
    uint8_t tls;                  /* CONN_TLS_* state bits (edge_conn.c) */
    struct hkv_buf in;
    struct hkv_buf out;
    struct resp_parser parser;
    int user;                     /* auth user id; -1 = not authenticated */
    int gated;                    /* run the auth gate before each command (edge_auth.c) */
    int user_implicit;            /* logged in without AUTH (default user, nopass) */
    struct rl_key rl_addr;        /* rate-limit key: the peer address part (edge_rl.c) */
    int rl_addr_ok;               /* rl_addr is set (on the first limited command) */
    int proto;                    /* 2 or 3 */
    int meta;                     /* CLIENT META ON: RESP3 attributes on reads */
    int close_after_write;
    int64_t created_ms;
    int64_t last_ms;              /* last byte received */
    int64_t soft_since_ms;        /* output over the soft limit since, 0 = not */
    uint64_t ncmds;
    const char *last_cmd;
    char name[128];
    char lib_name[64];
    char lib_ver[32];
    char addr[64];
    char laddr[64];
    struct conn *prev, *next;
    /* reply slots, in request order; empty = replies go straight to out */
    struct rslot *sq_head, *sq_tail;
    uint32_t nslots;
    struct rslot *cur;            /* the slot of the command being dispatched */
    int cur_deferred;
    int paused;                   /* input not read: see conn_pause */
    struct elink *wait_link;      /* paused behind this congested link */
    int in_process;               /* process_input is on the stack */
    struct op *ops;               /* ops answering this client (edge_data.c) */
    uint32_t writes_inflight;     /* its write ops not finished */
};

typedef void (*edge_handler)(struct conn *c, int argc, const struct resp_slice *argv);

/* The handler of each command id, NULL for commands this edge does not serve. */
extern const edge_handler edge_handlers[CMD_COUNT];

/* Accepts a client socket (tls: from the TLS port, through e->tls_ctx);
 * closes fd on failure. */
void conn_accept(struct edge *e, int fd, int tls);
/* Closes now, dropping unsent output. */
void conn_close(struct conn *c);
/* Periodic checks of one connection; returns 0 if it was closed. */
int conn_cron(struct conn *c, int64_t now_ms);
/* Sends what is buffered; called after handlers have appended replies. */
void conn_flush(struct conn *c);

/* ---- authentication (edge_auth.c) ----
 * Until authenticated a client may send at most this much (Redis's limits). */
#define EDGE_PREAUTH_MAX_ARGS 10
#define EDGE_PREAUTH_MAX_BULK (16 * 1024)
#define EDGE_PREAUTH_QUERYBUF (1024 * 1024)
/* e->auth from the config; -1 on allocation failure. */
int edge_auth_setup(struct edge *e);
void edge_auth_teardown(struct edge *e);
/* A new e->auth from next; every connection re-finds its user (and its
 * parser limits).  Keeps the old one on allocation failure. */
void edge_auth_reload(struct edge *e, const struct cfg *next);
/* A new connection's user and limits (call after resp_parser_init).  Returns
 * 1 if protected mode refuses the peer: then call edge_auth_deny once the
 * connection is set up, which replies -DENIED and closes after the write. */
int edge_auth_accept(struct conn *c, const struct sockaddr *peer);
void edge_auth_deny(struct conn *c);
/* The gate, for a gated connection (c->gated): 0 = run the command, -1 =
 * refused, the -NOAUTH or -NOPERM reply written. */
int edge_auth_gate(struct conn *c, const struct cmd_def *d, int argc,
                   const struct resp_slice *argv);
/* AUTH / HELLO AUTH: 0 logged in as user, -1 -WRONGPASS written (counted in
 * auth_failures; the connection keeps its previous user). */
int edge_auth_login(struct conn *c, const struct resp_slice *user, const struct resp_slice *pass);
/* Logs c in as user (-1: out); implicit = without AUTH. */
void conn_set_user(struct conn *c, int user, int implicit);
/* c->parser.lim: the edge's limits, narrowed until c is authenticated. */
void conn_apply_limits(struct conn *c);
/* The query buffer limit of c: 1 MB until it is authenticated. */
static inline size_t conn_query_limit(const struct conn *c, size_t configured)
{
    return c->user < 0 && configured > EDGE_PREAUTH_QUERYBUF ? EDGE_PREAUTH_QUERYBUF
                                                             : configured;
}

/* ---- reply slots (edge_reply.c) ----
 * A handler that answers at once writes to c->out (dispatch has pointed
 * c->out at a slot when earlier replies are still owed).  A handler that
 * waits for an owner calls conn_defer() and writes nothing more; when the
 * answer comes it writes into slot_out() and calls slot_done(), which sends
 * every reply that is now in order.  slot_done may close the connection. */
struct rslot *conn_defer(struct conn *c);
struct rslot *slot_push(struct conn *c);
void slots_after_dispatch(struct conn *c, struct rslot *s);
struct hkv_buf *slot_out(struct conn *c, struct rslot *s);
void slot_done(struct conn *c, struct rslot *s);
/* Frees every slot (the connection is closing). */
void slots_release(struct conn *c);
void slots_teardown(struct edge *e);
/* Stops reading from the client (at its pending bound, or behind a congested
 * owner link); conn_resume reads again and runs what is buffered. */
void conn_pause(struct conn *c);
void conn_resume(struct conn *c);
/* Runs buffered requests (after a resume). */
void conn_process(struct conn *c);

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
/* Writes an error reply now (before an op exists). */
void reply_error(struct conn *c, const char *text);

/* edge_rl.c: the limiter attached and configured (again on reload), and
 * the check dispatch makes when e->rl_map[d->id] is not 0: returns 1 when
 * the command is over its limit (-RATELIMITED written, do not run it). */
void edge_rl_setup(struct edge *e);
void edge_rl_reload(struct edge *e, const struct cfg *next);
int edge_rl_refuse(struct conn *c, const struct cmd_def *d, int argc,
                   const struct resp_slice *argv);

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
/* Handlers of the data commands. */
#define EDGE_DATA_HANDLERS(X)                                             \
    X(GET, get) X(MGET, mget) X(EXISTS, exists) X(STRLEN, strlen)         \
    X(TYPE, type) X(TTL, ttl) X(PTTL, pttl) X(SCAN, scan)                 \
    X(DBSIZE, dbsize) X(SET, set) X(SETEX, setex) X(PSETEX, psetex)       \
    X(SETNX, setnx) X(GETSET, getset) X(GETDEL, getdel) X(GETEX, getex)   \
    X(MSET, mset) X(DEL, del) X(UNLINK, unlink) X(EXPIRE, expire)         \
    X(PEXPIRE, pexpire) X(EXPIREAT, expireat) X(PEXPIREAT, pexpireat)     \
    X(PERSIST, persist) X(INCR, incr) X(DECR, decr) X(INCRBY, incrby)     \
    X(DECRBY, decrby)
#define X(ID, fn) void edge_cmd_##fn(struct conn *c, int argc, const struct resp_slice *argv);
EDGE_DATA_HANDLERS(X)
#undef X

/* INFO: renders the requested sections ("" or "default", "all", or names). */
void info_render(struct hkv_buf *out, struct edge *e, int nsections,
                 const struct resp_slice *sections);


#endif
