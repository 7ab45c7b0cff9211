/*
 * owner_move_int.h - what the owner's move files share (../shared/
 * CLUSTER.md §5: a leaf moves from a source owner S to a target owner T,
 * copied while S serves, fenced, committed by a compare-and-swap on the
 * map).  Private to server/owner.  Bottom first; each calls only those
 * before it (and owner_int.h's lower modules):
 *
 *   owner_agent.c   the control channel to the host's agent (LEAF_*): the
 *                   leaf txns, the operators' orders
 *   owner_hlink.c   hand-off links between owners: a Unix socket on one
 *                   host, TCP + the cluster's mutual TLS between hosts; the
 *                   target's end arrives on its edge listeners (owner_link.c
 *                   hands over a connection whose first frame is a HANDOFF)
 *   owner_park.c    requests waiting for a leaf (owner_own_blocks), run
 *                   again when their leaf's wait ends
 *   owner_purge.c   dropping a leaf's rows: the ledger's entries, then the
 *                   SQLite rows in bounded jobs on the persister's writer
 *   owner_recv.c    the target's side (READY, rows and writes, FENCE_ACK,
 *                   adopt or drop)
 *   owner_move.c    the source's side (intent, copy, fence, commit or abort,
 *                   and settling what a restart found)
 * Above them: owner_persist.c hands them finished persister batches,
 * owner_gate.c reports every write applied (owner_move_applied), and
 * owner_fence.c (above the command executors) parks requests on a leaf
 * that waits.
 */
#ifndef HKV_OWNER_MOVE_INT_H
#define HKV_OWNER_MOVE_INT_H

#include <stdint.h>

#include "proto/wire_hand.h"
#include "server/core/cmap.h"
#include "server/core/topo.h"
#include "storage/persist_own.h"
#include "server/owner/owner_int.h"

/* ---- owner_agent.c: the control channel ---- */

/* The answer to a request: r is a LEAF_REPLY (status LEAF_ST_UNKNOWN with
 * a reason when the agent did not answer within the request's timeout or
 * the channel broke), valid during the call only. */
typedef void (*oagent_reply_fn)(struct owner *o, void *arg, const struct hand_msg *r);
/* An order from the agent (LEAF_ORDER: an operator's move request). */
typedef void (*oagent_order_fn)(struct owner *o, const struct hand_msg *order);
/* In a cluster: connects to the agent (and again whenever the channel
 * breaks, every OAGENT_RETRY_MS).  0, or -1 (out of memory). */
#define OAGENT_RETRY_MS 200
int owner_agent_start(struct owner *o, oagent_order_fn on_order);
void owner_agent_stop(struct owner *o);
/* Sends a LEAF_INTENT/COMMIT/ABORT/READ/SPLIT about leaf; cb (NULL: no
 * one listens) is called exactly once, from the loop (never from inside
 * this call), with the reply or UNKNOWN after timeout_ms.  0, or -1 (not
 * in a cluster, out of memory: cb is never called). */
int owner_agent_call(struct owner *o, uint8_t type, struct hand_leaf leaf, int64_t epoch,
                     uint32_t to, int64_t timeout_ms, oagent_reply_fn cb, void *arg);
/* An order ended (LEAF_DONE). */
void owner_agent_done(struct owner *o, uint64_t order, int status, const char *text);
/* 1 while the channel is connected. */
int owner_agent_up(const struct owner *o);
/* Sends a LEAF_LOAD (owner_work_report.c; not answered): 0, or -1 when the
 * channel is down (the report is dropped: the next window sends a new one). */
int owner_agent_load(struct owner *o, struct hand_msg *m);

/* ---- owner_hlink.c: hand-off links ---- */

#define OHLINK_HIGH_WATER (8u << 20)  /* the source stops copying above this backlog */
#define OHLINK_LOW_WATER (2u << 20)   /* ... and goes on below this */
struct hlink;
struct cmap_owner;
struct bufferevent;
/* A message arrived (valid during the call). */
typedef void (*hlink_msg_fn)(struct owner *o, void *arg, struct hlink *h, const struct hand_msg *m);
/* The link went away by itself (peer closed, error, bad frame): h is freed
 * after this returns. */
typedef void (*hlink_gone_fn)(struct owner *o, void *arg, struct hlink *h, const char *why);
/* The output fell under OHLINK_LOW_WATER. */
typedef void (*hlink_drained_fn)(struct owner *o, void *arg, struct hlink *h);
/* A new incoming link's first message: the callee sets the handlers
 * (owner_hlink_set) or closes it. */
typedef void (*hlink_accept_fn)(struct owner *o, struct hlink *h, const struct hand_msg *first);
/* In a cluster (nothing on a single host): 0, or -1. */
int owner_hlink_setup(struct owner *o, hlink_accept_fn on_accept);
void owner_hlink_teardown(struct owner *o);
/* The source's end, to owner t of the map (its own Unix socket on this
 * host; TCP + TLS to t->addr:t->port on another, t->host checked).  NULL
 * with a reason when it cannot even start; a connection that fails later
 * is reported through on_gone.  Messages sent before it is up wait. */
struct hlink *owner_hlink_connect(struct owner *o, const struct cmap_owner *t, hlink_msg_fn on_msg,
                                  hlink_gone_fn on_gone, hlink_drained_fn on_drained, void *arg,
                                  char *why, size_t len);
/* The target's end: an edge listener's connection whose first frame is a
 * move message (taken; the owner link layer's on_handoff hook). */
void owner_hlink_adopt(struct owner *o, struct bufferevent *bev, int tls);
void owner_hlink_set(struct hlink *h, hlink_msg_fn on_msg, hlink_gone_fn on_gone,
                     hlink_drained_fn on_drained, void *arg);
/* HKV_OK, or HKV_EIO (the link is going), an encoding error. */
int owner_hlink_send(struct hlink *h, const struct hand_msg *m);
/* Bytes queued, not yet written. */
size_t owner_hlink_backlog(const struct hlink *h);
/* TEST-ONLY (the repl_write hook): what is queued is written to a plain
 * socket now, as a process killed after a partial send leaves it. */
void owner_hlink_flush_now(struct hlink *h);
/* Stops (1) or resumes (0) reading h: a target whose commits lag pushes
 * back on the source through TCP. */
void owner_hlink_pause(struct hlink *h, int pause);
/* 1 if the peer may speak for host: a Unix link (this host), or a TLS peer
 * whose certificate names it; else 0 with why. */
int owner_hlink_peer_is(struct hlink *h, const char *host, char *why, size_t len);
/* Closes h with no callback; flush_first: after what is queued is written
 * (reads stop at once). */
void owner_hlink_close(struct hlink *h, int flush_first);

/* ---- owner_park.c: requests waiting for a leaf ---- */

#define OPARK_MAX 100000              /* requests parked at once */
#define OPARK_MAX_BYTES (256u << 20)  /* ... and their frames */
#define OPARK_WAIT_MS 10000           /* longest wait, then TRYAGAIN */
#define OPARK_HIST 16                 /* wait histogram: bucket b counts waits < 2^b ms */
struct opark_stats {
    uint64_t parked, parked_writes;   /* requests parked */
    uint64_t released;                /* run again or answered */
    uint64_t timed_out;               /* answered TRYAGAIN after OPARK_WAIT_MS */
    uint64_t refused;                 /* TRYAGAIN at once: the bound */
    uint64_t wait_max_ms;
    uint64_t hist[OPARK_HIST];
};
int owner_park_setup(struct owner *o);
void owner_park_teardown(struct owner *o);
/* Keeps the request (payload copied) on link l until place no longer
 * blocks it (owner_own_blocks(place, write)); TRYAGAIN now when the bound
 * is reached, or after OPARK_WAIT_MS. */
void owner_park_leaf(struct owner *o, struct olink *l, uint64_t place, int write,
                     const char *payload, size_t plen);
/* A leaf's wait changed: runs again what no longer waits. */
void owner_park_release(struct owner *o);
void owner_park_forget_link(struct owner *o, struct olink *l);
size_t owner_park_count(const struct owner *o);
void owner_park_stats(const struct owner *o, struct opark_stats *out);

/* ---- owner_purge.c: dropping a leaf's rows ---- */

/* status HKV_OK (the ledger and the file hold nothing of the leaf), or the
 * persister's failure; entries and rows: how many went. */
typedef void (*opurge_done_fn)(struct owner *o, void *arg, int status, uint64_t entries,
                               uint64_t rows);
/* Starts dropping leaf (start, bits) of this owner's pool (keep_dirty: not
 * the ledger entries still waiting for their commit); done (may be NULL)
 * is called once, from the loop.  0, or -1 (out of memory: done is never
 * called). */
int owner_purge_leaf(struct owner *o, uint32_t start, uint8_t bits, int keep_dirty,
                     opurge_done_fn done, void *arg);
/* The purges started with arg go on, but tell nobody. */
void owner_purge_cancel(struct owner *o, void *arg);
/* After the persister is gone (its jobs have been handed back). */
void owner_purge_teardown(struct owner *o);

/* ---- owner_recv.c: the target's side ---- */

#define OWN_RECV_MAX 2                 /* moves coming in at once (etcd's slots) */
#define OWNER_BATCH_MOVE (1ULL << 62)  /* a persister batch of received rows */
#define OWNER_BATCH_DIRTY (1ULL << 61) /* with MOVE: a follow's fence, the ledger's dirty rows */
struct orecv_stats {
    uint64_t begun, adopted, dropped, nacks, records;
    uint64_t incoming;                 /* moves coming in now */
};
/* A follower's side (owner_follow.c, CLUSTER.md §7). */
struct ofollow_stats {
    uint64_t seeded;                   /* follows that began (BEGIN accepted) */
    uint64_t promoted;                 /* follows ended by the map making this owner primary */
    uint64_t dropped;                  /* follows ended otherwise */
    uint64_t following;                /* leaves followed now (streaming) */
    uint64_t frames;                   /* rows, writes and records applied */
    uint64_t inherited;                /* retries applied as new: their first attempt went to
                                        * the primary this owner was promoted from */
};
/* The map changed: each follow is kept, adopted (the map made this owner
 * its primary: the stream from the old one is closed first, so nothing it
 * sends is applied once this owner serves the leaf) or dropped (the map
 * names another primary).  Called from the map poll, before any request
 * sees the new map. */
void owner_follow_settle(struct owner *o);
void owner_follow_stats(const struct owner *o, struct ofollow_stats *out);
/* 1 if place lies in a leaf this owner was promoted to, within the last
 * OFOLLOW_HEIR_MS, from following process inc.  Such a follower held every
 * result and record inc made visible, each request whole or not at all
 * (owner_recv.c's tail), so a retry whose first attempt went to inc and has
 * no record here had no effect that survives: it may be applied as new
 * (owner_rifl.h R3, owner_gate.c), instead of "outcome unknown". */
int ofollow_inherits(const struct owner *o, uint64_t place, uint64_t inc);
void ofollow_inherited(struct owner *o);
/* 1 if this owner follows the leaf of place (a follow slot in use). */
int ofollow_follows(const struct owner *o, uint64_t place);
/* In a cluster: takes incoming hand-off links (owner_hlink_setup). */
int owner_recv_setup(struct owner *o);
void owner_recv_teardown(struct owner *o);
/* A batch of received rows (id & OWNER_BATCH_MOVE) is done. */
void owner_recv_batch_done(struct owner *o, const struct persist_batch *b);
/* A FLUSHALL applied here: incoming copies are dropped, their sources told. */
void owner_recv_flushed(struct owner *o);
void owner_recv_stats(const struct owner *o, struct orecv_stats *out);

/* ---- owner_copy.c: the source's stream ---- */

struct ocopy;
struct ocopy_stats {
    uint64_t rows, bytes, frames;     /* rows copied (ledger and file) */
    uint64_t skipped;                 /* file rows not sent: the key was resident */
    uint64_t writes, records;         /* write results and completion records sent */
    int64_t started_ms, walked_ms, ended_ms;
};
/* status HKV_OK: every row of the leaf has been sent (writes go on until
 * the fence); else the copy failed (the move aborts). */
typedef void (*ocopy_done_fn)(struct owner *o, void *arg, int status);
/* Starts streaming leaf to h (HANDOFF_ROW, then HANDOFF_WRITE for every
 * write reported by owner_copy_applied).  NULL on allocation failure. */
struct ocopy *owner_copy_start(struct owner *o, struct hlink *h, struct hand_leaf leaf,
                               int64_t e1, ocopy_done_fn done, void *arg);
/* The last sequence number the copy took. */
uint64_t owner_copy_seq(const struct ocopy *c);
/* 1 once every row of the leaf is sent (write results go on). */
int owner_copy_walked(const struct ocopy *c);
/* One completion record travels (a follower's stream: each write's record
 * goes with its result, so a retry after a promotion is answered from it);
 * r NULL: the writer incarnation's lost mark. */
void owner_copy_record(struct ocopy *c, uint32_t writer, uint64_t inc, uint64_t seq,
                       const struct rifl_result *r);
/* Every completion record this owner holds travels (a follower's seeding). */
void owner_copy_records(struct ocopy *c);
/* A write applied to key, or a row of key the reader brought back into the
 * ledger: its result travels if key is in the leaf. */
void owner_copy_applied(struct ocopy *c, const char *key, size_t klen);
/* The fence (writes to the leaf wait from now on): every completion record,
 * then HANDOFF_FENCE; returns its last sequence number. */
uint64_t owner_copy_fence(struct ocopy *c);
/* The link's backlog fell: a paused copy goes on. */
void owner_copy_drained(struct ocopy *c);
/* HANDOFF_PROGRESS: the target has committed every number up to seq. */
void owner_copy_progress(struct ocopy *c, uint64_t seq);
/* 1 once every row is sent and the target has committed all but the last
 * OCOPY_TAIL numbers: a fence now waits for a short tail only. */
#define OCOPY_TAIL 8
int owner_copy_caught_up(const struct ocopy *c);
void owner_copy_stats(const struct ocopy *c, struct ocopy_stats *out);
void owner_copy_stop(struct ocopy **c);

/* ---- owner_move.c, owner_move_ctl.c: the source's side ---- */

struct omove_stats {
    uint64_t started, committed, aborted, refused, in_doubt;
    uint64_t splits, splits_failed;
    uint64_t fence_ms_last, fence_ms_max;   /* FENCE sent to the commit's news */
    uint64_t copy_rows, copy_bytes, copy_writes, copy_ms_last, copy_bytes_per_s_last;
    int phase;                              /* the outgoing move's (owner_move_phase_name) */
    int outgoing;                           /* a move is under way */
};
/* In a cluster: the move modules (park, recv, links, the agent channel)
 * and the tick.  0, or -1. */
int owner_move_setup(struct owner *o);
void owner_move_teardown(struct owner *o);
/* Moves leaf (of this owner's pool, served by it) to owner `to`; order: the
 * agent's order to answer when it ends (0: none).  0 started, or -1 with
 * why (busy, not this owner's leaf, no such target ...). */
int owner_move_start(struct owner *o, struct hand_leaf leaf, uint32_t to, uint64_t order,
                     char *why, size_t len);
/* A write applied to key (owner_gate.c): its result travels if key is in
 * the leaf being copied. */
void owner_move_applied(struct owner *o, const char *key, size_t klen);
/* A FLUSHALL applied here: moves out and in abort. */
void owner_move_flushed(struct owner *o);
void owner_move_stats(const struct owner *o, struct omove_stats *out);
/* The leaf_* fields of STATS (server/core/counters.h). */
void owner_move_counters(const struct owner *o, struct owner_counters *v);
const char *owner_move_phase_name(int phase);

/* ---- owner_fence.c: the gate of a leaf that waits ---- */
/* 1 if one of the request's keys lies in a leaf that waits (it is parked
 * and runs again later); 0: go on.  The executor's first call. */
int owner_fence(struct owner *o, struct olink *l, const struct wire_msg *m, const char *payload,
                size_t plen);

/* ---- owner_move_hook.c: stopping at a named step, for tests ---- */
/* Reads HOTKVD_MOVE_HOOK=<pool>/<index>:<step>:kill|pause=<ms> once. */
void owner_move_hook_setup(struct owner *o);
/* At step: kill -9 itself, or stall its loop, if the hook names this owner
 * and step (once per data directory: a restarted owner does not fire again).
 * 1 when the hook says "cut": the caller drops its hand-off link. */
int owner_move_hook(struct owner *o, const char *step);
/* 1 if a hook still waits at step (a caller prepares what the kill must
 * find first). */
int owner_move_hook_armed(const char *step);

#endif
