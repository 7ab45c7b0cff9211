/*
 * edge_op.h - the op engine: one client request that waits for owners.
 *
 * An op holds the request's reply slot, copies of its keys (and one value),
 * and one owner request (oreq) per owner it needs, or per key.  The engine
 * splits keys to owners, numbers and sends the requests, retries writes
 * until write-deadline, follows a MOVED once, turns an owner's ERROR or
 * silence into the op's error, and calls its family when every request has
 * finished.  It knows no command and no cache: a command family describes
 * its ops with a small table (struct op_family: encode, answer, done, flags)
 * and keeps its own arguments and results in the op's args block, which
 * op_new zeroes with everything else that is per op.
 *
 * Ops come from a per-edge freelist and keep their arrays, so steady traffic
 * allocates nothing.  op->c is NULL once the client is gone (its closing
 * hook, op_conn_gone): the answer is then dropped and nothing of the client
 * is touched; a write still runs to its end.
 *
 * Files: edge_op.c builds and ends ops (new, keys, split, reply, finish);
 * edge_op_send.c sends their requests and takes the answers.
 */
#ifndef HKV_EDGE_OP_H
#define HKV_EDGE_OP_H

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event_struct.h>

#include "proto/buf.h"
#include "proto/resp.h"
#include "proto/wire.h"
#include "server/edge/edge_conn.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_owners.h"

struct edge_ops;
struct op;

enum oreq_state { OREQ_IDLE, OREQ_SENT, OREQ_WAIT, OREQ_DONE };

/* One request of an op to one owner. */
struct oreq {
    struct op *op;
    struct owner_ref *owner;
    uint8_t type;                 /* WIRE_GET ... */
    uint8_t role;                 /* WIRE_ROLE_READ / WIRE_ROLE_WRITE */
    uint8_t state;
    uint8_t moved;                /* a MOVED was followed already */
    uint8_t tried;                /* a write attempt went out: a resend is a retry */
    uint32_t k0, nk;              /* its keys: op->keys[op->kidx[k0 .. k0+nk)] */
    struct elink *link;           /* while SENT */
    uint64_t id;
    /* writes: the request id (proto/wire.h "Versions and request ids") */
    uint64_t seq;                 /* 0 until op_start numbers it */
    uint64_t conn;                /* connection of the link the last attempt used */
    uint64_t sent_prev;           /* rid.prev of the last attempt (an HKV_ERESEND answer
                                     keeps it for the next) */
    uint64_t prev_at;             /* re-routed after a broken link: the incarnation the last
                                   * attempt reached there (its rid.prev), 0: none */
    struct oreq *wprev, *wnext;   /* in the edge's wq while unfinished */
};

#define OP_F_WRITE 0x1            /* numbered, retried until write-deadline; a stop waits for it */
#define OP_F_MOVED 0x2            /* a MOVED to a request without keys goes to answer (after the
                                   * router took it), for a family that routes by position
                                   * (SCAN): the engine has no key to route it again by */
#define OP_F_ERRDONE 0x4          /* done is called on an error too (op->err set, its text in
                                   * op->errbuf), for a family that renders its own errors
                                   * (edge_cas.c: not a RESP client's) */

/* What a family of commands plugs into the engine (one static table per
 * kind of op). */
struct op_family {
    uint32_t flags;               /* OP_F_* */
    /* Encodes r's request into b with id (and rid, for a numbered write);
     * keys are r's keys, contiguous.  HKV_OK, or a status that fails the op
     * ("cannot send"). */
    int (*encode)(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                  const struct wire_slice *keys, struct wire_rid rid);
    /* One owner's answer to r (never ERROR, and MOVED only with
     * OP_F_MOVED: the engine handles those).  May record an error
     * (op_error). */
    void (*answer)(struct op *op, struct oreq *r, const struct wire_msg *m);
    /* Every request finished and no error was recorded: write the reply
     * (op_out) and op_finish, or start another round (op_start). */
    void (*done)(struct op *op);
    /* Optional: the client went away (op->c is NULL already).  A family
     * whose op waits on something other than owner requests ends it here
     * (op_finish); without it the op runs on and its answer is dropped. */
    void (*cancel)(struct op *op);
    /* Optional: the op ends, whatever the outcome (done, its error reply,
     * or its client gone); called as it is released, op->c still set unless
     * the client is gone.  For a family that keeps state outside the op
     * (WATCH's pending count, edge_tx.c). */
    void (*end)(struct op *op);
};

/* One key's result, for a family that assembles answers from many owners. */
struct op_item {
    int found;
    size_t off, len;              /* in op->res */
};

#define OP_ARGS_MAX 96

struct op {
    /* ---- kept while the op sits in the freelist ---- */
    struct edge *e;
    struct op *all_next;          /* every op ever made, for teardown */
    struct event timer;           /* write backoff and deadline (edge_op_send.c) */
    int timer_init;
    struct hkv_buf store;         /* the copied arguments: keys, vals and value point here */
    struct wire_slice *keys, *vals;
    uint64_t *khash;              /* each key's router_hash, from its route: set by
                                   * op_single and op_split only (an op_to_owner op's
                                   * are not), for the families' cache update */
    uint32_t *kidx;               /* keys in request order (op_split) */
    struct oreq *reqs;
    uint32_t cap;                 /* of keys, vals, khash, kidx and reqs */
    struct hkv_buf res;           /* the family's results (values, an old value) */
    struct op_item *items;
    uint32_t items_cap;
    struct hkv_buf errbuf;        /* the error reply text, without '-' */

    /* ---- per op: op_new zeroes everything from `c` on, in one memset ---- */
    struct conn *c;               /* NULL once the client is gone */
    const struct op_family *fam;
    /* Set after op_new by a family of another protocol (HTTP,
     * edge_http_write.c): writes the recorded error (errbuf, without '-')
     * in its words and op_finish; NULL: a RESP error reply. */
    void (*fail)(struct op *op);
    const char *label;            /* the command's name, for messages */
    struct rslot *slot;
    struct op *cprev, *cnext;     /* in c->ops */
    struct op *next;              /* freelist */
    int is_write;                 /* fam->flags & OP_F_WRITE */
    int64_t start_ms;             /* op_start: the first send of this round */
    int64_t deadline_ms;          /* writes: start_ms + write-deadline */
    int attempt;                  /* resends so far */
    int failed_counted;
    int timer_on, timer_deadline;
    int64_t timer_at_ms;          /* when the op timer fires, while on */
    uint32_t nkeys;
    size_t args_held;             /* of store, in c->req_held (client-max-pending-bytes) */
    struct wire_slice value;      /* the argument copied with the keys (SET's value, SCAN's MATCH) */
    struct oreq one;              /* the request of a one-request op */
    uint32_t nreqs;
    int pending;
    int err;
    uint16_t stat;                /* the request's command stat id (edge_stats.h) */
    int64_t t0_ns;                /* its dispatch */
    int64_t answer_ns;            /* the owner link's read batch of its last answer (its
                                   * elink_read_ns), 0 before: the op's end, for its stat */
    struct hkv_buf *out_buf;      /* where its reply went, from out_mark on (op_out) */
    size_t out_mark;
    alignas(max_align_t) unsigned char args[OP_ARGS_MAX]; /* the family's: OP_ARGS */
};

/* The family's arguments and results inside op (a struct of at most
 * OP_ARGS_MAX bytes; zero at op_new). */
#define OP_ARGS(op, type) ((type *)(void *)(op)->args)

/* A new op for the request being dispatched on c: its reply slot is taken
 * (slot_defer).  NULL on allocation failure (an error reply was written). */
struct op *op_new(struct conn *c, const struct op_family *fam, const char *label);
/* Room for n keys and n requests.  0, or -1 (error recorded). */
int op_reserve(struct op *op, uint32_t n);
/* Copies n keys (argv[0], argv[step] ...; with step 2 each key's value
 * follows it) and value (may be NULL) into the op.  0, or -1 (error
 * recorded). */
int op_copy_keys(struct op *op, int n, const struct resp_slice *argv, int step,
                 const struct resp_slice *value);
/* n zeroed items; NULL on allocation failure (error recorded). */
struct op_item *op_items(struct op *op, uint32_t n);
/* Splits op->keys into one request per owner (per_key: one per key), keys
 * kept in order within each.  0, or -1 (error recorded, nothing sent): a
 * key with no owner, or one owner's part too large for a request. */
int op_split(struct op *op, uint8_t type, uint8_t role, int per_key);
/* One request for key 0.  Returns it, or NULL (error recorded). */
struct oreq *op_single(struct op *op, uint8_t type, uint8_t role);
/* One more request, with no key, to owner o (SCAN, STATS).  0, or -1 (error
 * recorded). */
int op_to_owner(struct op *op, struct owner_ref *o, uint8_t type, uint8_t role);
/* Sends every request of the op (numbering its writes first); the family's
 * done (or the error reply) follows when all have finished. */
void op_start(struct op *op);

/* Records an error reply for the op (the first one wins). */
void op_error(struct op *op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The buffer to write the reply into, NULL if the client is gone. */
struct hkv_buf *op_out(struct op *op);
/* Sends the reply written so far and frees the op; the request is counted
 * in INFO commandstats (edge_stats.h: its time from dispatch, failed if
 * the reply is an error). */
void op_finish(struct op *op);
/* clock_mono_ms when the op's last owner answer came in, or now if none
 * has: for what the answer is stored with (edge_cache_wrote). */
int64_t op_answer_ms(const struct op *op);
/* Replies the recorded error and frees the op. */
void op_finish_error(struct op *op);

/* The closing hook's part: c's ops forget it (and are cancelled). */
void op_conn_gone(struct conn *c);
/* The op engine's options (the process builds them from the config). */
struct op_opts {
    int64_t write_timeout_ms;     /* a write request unanswered this long is resent */
    int64_t write_deadline_ms;    /* a write unacknowledged this long fails */
    const int64_t *backoff_ms;    /* write-retry-backoff: the waits before each resend */
    size_t nbackoff;              /* (copied by op_setup and op_reload) */
    int64_t max_frame;            /* wire-max-frame: op_split's bound on one request */
};

/* The op engine's state (e->ops, edge_op_int.h): 0, or -1 out of memory. */
int op_setup(struct edge *e, const struct op_opts *opts);
/* Frees every op (process exit); *m is NULL after. */
void op_teardown(struct edge_ops **m);
/* Write ops not finished (a stop waits for them). */
uint64_t op_writing(const struct edge *e);
/* A reload: a lower write-deadline applies at once to the writes in flight.
 * Keeps the old options when it cannot copy the new backoff (no memory). */
void op_reload(struct edge *e, const struct op_opts *opts);

/* The i-th owner request of an op (a single request lives inside the op). */
static inline struct oreq *req_at(struct op *op, uint32_t i)
{
    return op->nreqs == 1 && i == 0 ? &op->one : &op->reqs[i];
}

#endif
