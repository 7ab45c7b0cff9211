/*
 * agent_promote.h - failover (../shared/CLUSTER.md §7 "Promotion", "Single
 * host"): the agent makes an in-sync follower the primary of a leaf whose
 * primary is gone, by one CAS on the leaf's epoch.  Private to server/agent.
 *
 * When a primary is gone:
 *  - a local owner process ended (the master's CTL_OWNER_DIED, at its
 *    SIGCHLD): this agent knows it at once and is the one to act, on a
 *    single host with leaf-moves and on a cluster host alike; the CAS is
 *    `mod(map/L) == epoch ∧ members/<new primary> exists`;
 *  - another host's lease expired (its members/ keys left the watch): the
 *    agent of the host of the leaf's first live in-sync follower acts, with
 *    the compare `mod(map/L) == epoch ∧ members/<old primary> absent`, so a
 *    primary whose registration came back meanwhile keeps its leaf.
 * Only in-sync followers are eligible (no unclean election): the new
 * primary is the first live member of `isr`, the new `isr` the other live
 * members; a leaf with no live member waits for its primary.  Only serving
 * leaves are promoted (a leaf caught mid-move waits for its source to
 * resolve the move, CLUSTER.md §5 step 10).
 *
 * A local owner that died is "dead" until it says HELLO again AND no leaf
 * lists it as a follower: a restarted process lost what it held in memory,
 * so it must never be promoted on its old membership.  The agent takes it
 * out of every in-sync set it was in (a CAS each: the set only shrinks by
 * CAS, R6), and LEAF_ISR_ADD refuses it meanwhile (agent_leaf.c).
 *
 * A leaf whose primary is ours, dead, and has said HELLO again, with no
 * live follower (they died too): its dead followers leave the set, so the
 * restarted primary serves what its own file holds (nobody holds more).
 *
 * At the start of a single host with leaf-moves (the whole host restarted:
 * no follower is fresher than the primary's own file), every leaf's isr is
 * cleared before the agent's first map is read (agent_promote_clear_local).
 * Not on a cluster host: another host's followers may be fresher, so there
 * a whole-daemon start (no map in the segment yet) counts every local owner
 * as dead and restarted: a live follower elsewhere is promoted, and they
 * leave the sets they were in.  A restart of the agent alone (the segment
 * has a map: the owners ran on) changes nothing.
 *
 * Counters: health.repl_promotions, health.repl_isr_removals.
 */
#ifndef HKV_AGENT_PROMOTE_H
#define HKV_AGENT_PROMOTE_H

#include <stdint.h>

#include "server/agent/agent_keys.h"
#include "server/core/cmap.h"

#define APRO_MAX_INFLIGHT 1024      /* promotion / removal CASes out at once */
#define APRO_RETRY_MS 200           /* a failed CAS's leaf is looked at again after this */
#define APRO_BATCHES 8              /* promotion txns of AGENT_BATCH leaves out at once */

/* ---- the choice (agent_promote_pick.c, pure) ---- */

/* l's new value when its primary is gone: 1 and *out (owner := the first
 * member of l's isr with eligible[n] set, isr := empty (the others are
 * seeded again from it), state serving, the move's target dropped), or 0 (no
 * eligible member, or l is not serving: no promotion).  moving_ok: a leaf
 * moving out of the dead primary is promoted too.  That is safe when the
 * primary's HOST lease is gone: the move's keys (moves/L, the target's slot)
 * lived under it and went with it, the target serves nothing before a commit
 * (which would have changed the leaf: the CAS compares its epoch), and the
 * followers kept following through the copy; without it (one host) the
 * restarted source settles its own move first.  eligible: CMAP_MAX_OWNERS +
 * 1 flags by number. */
int apro_choose(const struct cmap_leaf *l, const uint8_t *eligible, int moving_ok,
                struct agent_leaf_v *out);

/* ---- the module (agent_promote.c) ---- */

struct agent;
struct agent_promote;

struct agent_promote *agent_promote_create(struct agent *a);
void agent_promote_destroy(struct agent_promote **p);
/* CTL_OWNER_DIED: local owner (pool, index) ended; promotes at once. */
void agent_promote_owner_died(struct agent_promote *p, int pool, int index);
/* LEAF_HELLO from local owner (pool, index): its process runs again. */
void agent_promote_owner_hello(struct agent_promote *p, int pool, int index);
/* Owner number n is a local owner seen dead (not to be added to a set). */
int agent_promote_dead(const struct agent_promote *p, unsigned n);
/* Called by the agent's tick: leaves of gone primaries, retries. */
void agent_promote_tick(struct agent_promote *p, int64_t now);

/* A single host's start, before its loop runs (it runs the loop itself):
 * every leaf's isr emptied, a CAS each.  0, or -1 (logged; the leaves keep
 * their sets: a restarted owner then waits for a promotion). */
int agent_promote_clear_local(struct agent *a);

#endif
