/*
 * owner_handover.h - the planned hand-over of a leaf from its primary (this
 * owner) to one of its in-sync followers (CLUSTER.md §7, "Planned
 * hand-over"): what `hotkvd-admin leaf failover` and `host drain` ask for,
 * so a rolling restart fails no write.  Private to server/owner.
 *
 * The steps (one hand-over per owner at a time; orders for other leaves wait
 * their turn, a few, in arrival order):
 *   fence    writes to the leaf wait (owner_own_hold: memory only; parked
 *            by owner_fence.c like a move's), reads go on
 *   drain    the follower holds the stream's last number and no answer of
 *            the leaf waits for a follower, then commits everything it holds
 *            (HANDOFF_FENCE on the stream; owner_repl_caught_up); past
 *            move-fence-timeout: unfence, the writes go on here
 *   CAS      reads wait too (the outcome is about to be in doubt) and
 *            LEAF_HANDOVER goes to the agent: `mod == epoch`, the asker the
 *            primary, `to` in isr -> primary := to, isr -= to
 *   release  OK: the leaf stays fenced until this owner's map copy shows
 *            the new primary, then the parked requests run again and meet
 *            MOVED (edges resend; the replicated completion records answer
 *            retries exactly once).  LOST/REFUSED: unfence.  UNKNOWN: stay
 *            fenced and read the truth (LEAF_READ) until it is known.
 * The pause (fence to release) is kept as repl_handover_ms_last/_max.
 */
#ifndef HKV_OWNER_HANDOVER_H
#define HKV_OWNER_HANDOVER_H

#include <stdint.h>

#include "proto/wire_hand.h"

struct owner;

#define OHANDOVER_TICK_MS 1          /* while one runs: the drain and the map are watched */
#define OHANDOVER_READ_MS 100        /* an in-doubt CAS: the truth is read this often */
#define OHANDOVER_QUEUE 16           /* orders for other leaves waiting their turn */

struct ohandover_stats {
    uint64_t done, failed;           /* hand-overs that moved the primary / did not */
    uint64_t ms_last, ms_max;        /* writes' pause: fence to release */
    int busy;                        /* one runs now */
};

/* In a cluster (or leaf-moves): 0, or -1. */
int owner_handover_setup(struct owner *o);
void owner_handover_teardown(struct owner *o);
/* LEAF_ORDER_HANDOVER from the agent (answered LEAF_DONE when it ends: run
 * now, or queued behind the one under way). */
void owner_handover_order(struct owner *o, const struct hand_msg *ord);
/* 1 while a hand-over runs (a move does not start meanwhile). */
int owner_handover_busy(const struct owner *o);
void owner_handover_stats(const struct owner *o, struct ohandover_stats *out);

/* What a LEAF_REPLY says of a hand-over from `me` to `to` compared at
 * `epoch`: the CAS's answer (cas 1) or a read's (the truth: the map's value
 * and its mod_revision).  Pure (unit-tested). */
enum ohandover_verdict {
    OHV_DONE,     /* `to` is the primary after epoch: release (MOVED) once the map copy shows it */
    OHV_MOVED_ON, /* the leaf is not this owner's any more, nor `to`'s: release likewise */
    OHV_BACK,     /* this owner serves it still (the CAS lost or was refused): unfence now */
    OHV_AGAIN,    /* not known (etcd silent): stay fenced, read the truth */
};
enum ohandover_verdict ohandover_verdict(const struct hand_msg *reply, int cas, unsigned me,
                                         unsigned to, int64_t epoch);

#endif
