/*
 * owner_repl.h - a primary's side of replication (CLUSTER.md §7): the
 * streams to each leaf's followers, and the rule that makes them worth
 * having: a write is answered only once every in-sync follower holds it.
 * Private to server/owner.
 *
 * A stream is the move's copy (owner_copy.c) to another owner, opened with
 * a BEGIN carrying `follow` when the agent orders it (LEAF_ORDER_FOLLOW):
 * the leaf's rows, then the result and the completion record of every
 * write, numbered in apply order.  The follower answers HELD(n) (in memory:
 * what a `ledger` write waits for) and PROGRESS(n) (committed: a `durable`
 * write's).
 *
 * Who writes wait for.  A stream is *required* from the moment its join
 * starts until the map says it is out of the leaf's in-sync set:
 *   join    once seeded and caught up, the stream becomes required, and
 *           once the follower holds everything sent so far, LEAF_ISR_ADD
 *           (a CAS on the leaf's epoch) puts it in the set.  Required before
 *           the CAS, so no write is acknowledged between the CAS and the
 *           follower holding it (every write acknowledged before was sent
 *           before the join started, and is held).
 *   leave   a required follower that does not hold a write within
 *           replica-timeout, or whose link went, is removed by LEAF_ISR_DEL
 *           first; only the CAS's success (or a map showing it out) stops
 *           writes waiting for it.  A CAS that fails or does not answer
 *           leaves them waiting until their deadline: then "outcome unknown".
 *   deposed the map names another primary (a promotion, a move): waiting
 *           writes are answered "outcome unknown" and the streams close.
 * Pushes to the colos and reads of a key whose write waits follow the
 * acknowledgment, not the apply (owner_repl_key_waits): what a failover can
 * lose was never seen.
 */
#ifndef HKV_OWNER_REPL_H
#define HKV_OWNER_REPL_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/wire_hand.h"

struct owner;
struct olink;
struct rifl_result;

#define OREPL_MAX 2048               /* streams out at once (followers x leaves) */
#define OREPL_BEGIN_TIMEOUT_MS 5000
#define OREPL_TICK_MS 10
#define OREPL_RETRY_MS 200           /* a CAS that did not answer is tried again */

struct orepl_stats {
    uint64_t streams;                /* streams out now (any phase) */
    uint64_t in_sync;                /* of them, in the leaf's in-sync set */
    uint64_t primary_leaves;         /* leaves of this owner with a follower in sync */
    uint64_t isr_adds, isr_removals; /* CASes that succeeded */
    uint64_t acks_waited;            /* answers held for followers */
    uint64_t ack_timeouts;           /* ... answered "outcome unknown" */
    uint64_t deposed;                /* ... answered so because the leaf's primary changed */
    uint64_t lag_entries_max;        /* results sent, not held, on the worst stream now */
    uint64_t lag_ms_max;             /* the oldest held answer's age now */
    uint64_t waiting;                /* answers held now */
};

/* In a cluster (or leaf-moves): 0, or -1. */
int owner_repl_setup(struct owner *o);
void owner_repl_teardown(struct owner *o);
/* LEAF_ORDER_FOLLOW from the agent: seed owner ord->u.order.to as a
 * follower of ord->u.order.leaf (answered LEAF_DONE once it is in sync, or
 * failed). */
void owner_repl_order(struct owner *o, const struct hand_msg *ord);
/* A write applied to key: its result goes to the followers of its leaf,
 * and the request being run now waits for those that are required. */
void owner_repl_applied(struct owner *o, const char *key, size_t klen);
/* The request's completion record goes where its results went. */
void owner_repl_record(struct owner *o, uint32_t writer, uint64_t inc, uint64_t seq,
                       const struct rifl_result *r);
/* 1 if the answer being made must wait for followers: the request applied a
 * write to a leaf with a required follower, or (a retry answered from its
 * record) answers are waiting now. */
int owner_repl_wants(const struct owner *o);
/* Holds `reply` (taken) for link l's request id until the followers hold
 * what the request sent (durable: committed), then sends it, through the
 * commit ticket when there is one (ticket != 0).  Always takes it. */
void owner_repl_hold(struct owner *o, struct olink *l, uint64_t id, uint64_t ticket, int durable,
                     struct hkv_buf *reply);
/* A push of key (a ledger write's) that must wait for the acknowledgment:
 * 1 taken (it goes out with the answer), 0 push now. */
int owner_repl_defer_push(struct owner *o, const char *key, size_t klen, uint64_t place,
                          uint64_t version);
/* 1 if a write of key may wait for its followers (a read of it must wait
 * too; a hash slot: rarely, a read waits that need not). */
int owner_repl_key_waits(const struct owner *o, const char *key, size_t klen);
/* Keeps a read (its frame copied) until the next answer is released, then
 * runs it again: 1, or 0 (out of memory: serve it now). */
int owner_repl_park_read(struct owner *o, struct olink *l, const char *payload, size_t plen);
/* The request being run is a retry answered from its record: its answer
 * waits for everything sent to required followers so far. */
void owner_repl_retry(struct owner *o);
void owner_repl_forget_link(struct owner *o, struct olink *l);
void owner_repl_stats(const struct owner *o, struct orepl_stats *out);
/* 1 if the leaf of placement hash `place` has a follower in the map's
 * in-sync set (its ledger writes may be answered from memory; else they
 * commit first: a follower still joining cannot be promoted). */
int owner_repl_covered(const struct owner *o, uint64_t place);
/* A planned hand-over of leaf lf (owner_handover.c).  owner_repl_pick: the
 * in-sync follower to hand it to, `to` itself if it is one (0: any, one on
 * another host first), or 0 if there is none; *epoch the leaf's epoch as
 * that stream knows it (its last CAS's).  owner_repl_caught_up: 1 when
 * follower `to` holds every result of lf sent to it, no answer of a write
 * to lf waits for any follower, and `to` has committed all it holds (asked
 * by a FENCE, sent from here once the rest holds); 0 not yet; -1 `to` is no
 * in-sync follower of lf any more; -2 it could not commit. */
uint32_t owner_repl_pick(struct owner *o, struct hand_leaf lf, uint32_t to, int64_t *epoch);
int owner_repl_caught_up(struct owner *o, struct hand_leaf lf, uint32_t to, int64_t *epoch);
/* Streams out now (FLUSHALL is refused while there are any). */
uint64_t owner_repl_streams(const struct owner *o);

#endif
