/*
 * agent_policy.h - automatic moves and splits (../shared/CLUSTER.md §5
 * "When"): the agent decides when a leaf leaves a busy owner of its host.
 * Private to server/agent.
 *
 * Inputs.  Every move-window each local owner sends a LEAF_LOAD over the
 * control channel (server/owner/owner_work.h): its loop's busy fraction,
 * its persist backlog now and a window ago, its busiest leaves with their
 * work, their halves' work and their hottest key.  The agent publishes each
 * owner's busy fraction and backlog as load/<owner number> (etcd, under the
 * cluster prefix, attached to the host lease: a dead host's loads vanish
 * with it), one small put per owner per window, and learns the other hosts'
 * through the watch it already has on the prefix (the map ignores load/).
 *
 * The rule (apol_decide, a pure function of its inputs).  An owner is
 * overloaded when its busy fraction is above move-busy-threshold over a
 * whole window, or its persist backlog grew through the window and holds
 * at least APOL_BACKLOG_MIN keys.  For an overloaded owner that has no move
 * under way and is not cooling down, take its busiest leaf that is not
 * cooling down:
 *   - one key carries >= move-hot-key-share % of its work: REFUSE (nothing
 *     a move or split does spreads one key; counted, the key reported);
 *   - else find the target: the least busy live owner of the pool whose
 *     last load is fresh (APOL_FRESH_WINDOWS), not overloaded, busy under
 *     the threshold, with room (fewer than AGENT_SLOTS moves coming in);
 *     none: nothing to do;
 *   - each half carries >= move-split-min-share %: SPLIT first, then move
 *     the busier half to the target; else MOVE the leaf to it.
 * Cool-downs: a leaf moved, split or refused is left alone for
 * move-cooldown-leaf; an owner whose automatic move or split ended (either
 * way) for move-cooldown-owner.  auto-moves no: nothing is decided (loads
 * are still published).
 *
 * Actions go through the paths operators use: LEAF_ORDER to the source
 * owner (its reply is LEAF_DONE with the order's id, agent_policy_done),
 * ids with AGENT_POLICY_ORDER_BIT set so they never meet agent_leaf.c's.
 * Counters (moves and splits started, refusals and the last refused key) go
 * into the segment's health (cmap.h) for INFO # Leaves and /metrics.
 */
#ifndef HKV_AGENT_POLICY_H
#define HKV_AGENT_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire_hand.h"
#include "server/agent/agent_leaf.h"

#define APOL_BACKLOG_MIN 1000       /* dirty keys before a growing backlog counts */
#define APOL_FRESH_WINDOWS 3        /* a load older than this many windows is unknown */
#define APOL_ORDER_MS 120000        /* an order with no LEAF_DONE is forgotten then */
#define APOL_SPLIT_WAIT_MS 10000    /* a split's halves must show in the map by then */
#define AGENT_POLICY_ORDER_BIT (1ULL << 62)

/* ---- the decision (agent_policy_decide.c, pure) ---- */

struct apol_cfg {
    int on;                         /* auto-moves */
    int busy_pm;                    /* move-busy-threshold, per mille */
    int split_pct;                  /* move-split-min-share */
    int hot_pct;                    /* move-hot-key-share */
};

struct apol_owner {
    unsigned number;
    uint8_t pool;
    uint8_t live;                   /* its host is registered (members/) */
    uint8_t fresh;                  /* a load report is known and recent */
    uint8_t outgoing;               /* a move or split ordered from it is not done */
    uint8_t incoming;               /* moves coming in (a target holds AGENT_SLOTS at most) */
    uint32_t busy;                  /* per mille of the last window */
    uint64_t backlog, backlog_prev;
    int64_t cool_until;             /* monotonic ms; 0: none */
};

struct apol_leaf {
    struct hand_load load;          /* the owner's figures (key: a slice the caller keeps) */
    int64_t cool_until;
};

enum apol_kind { APOL_NONE = 0, APOL_REFUSE, APOL_SPLIT, APOL_MOVE };

struct apol_decision {
    enum apol_kind kind;
    struct hand_leaf leaf;          /* REFUSE, SPLIT, MOVE: the leaf */
    struct hand_leaf half;          /* SPLIT: the half to move once split */
    unsigned to;                    /* SPLIT, MOVE: the target owner */
    uint64_t share_pct;             /* REFUSE: the key's share; SPLIT: the smaller half's */
    const char *why;                /* NONE: why not (a constant string) */
};

/* Overloaded by the rule above. */
int apol_overloaded(const struct apol_cfg *c, const struct apol_owner *o);

/* The decision for owners[src] (owners: every owner of its pool the agent
 * knows, src among them), whose leaves are leaves[0..nleaves) in any order,
 * at monotonic time now. */
void apol_decide(const struct apol_cfg *c, const struct apol_owner *owners, size_t nowners,
                 size_t src, const struct apol_leaf *leaves, size_t nleaves, int64_t now,
                 struct apol_decision *out);

/* ---- the module (agent_policy.c) ---- */

struct agent;
struct agent_policy;

/* Orders go out through `order` (the control channel's, as agent_leaf's). */
struct agent_policy *agent_policy_create(struct agent *a, agent_leaf_order_fn order, void *arg);
void agent_policy_destroy(struct agent_policy **p);
/* A LEAF_LOAD from local owner (pool, index). */
void agent_policy_load(struct agent_policy *p, int pool, int index, const struct hand_msg *m);
/* LEAF_DONE: 1 if the order was the policy's (handled), else 0. */
int agent_policy_done(struct agent_policy *p, uint64_t order, int status);
/* A key of the watch the map does not use (val NULL: deleted): load/<n>
 * keys of other hosts' owners are taken, others ignored. */
void agent_policy_watched(struct agent_policy *p, const char *key, size_t klen, const char *val,
                          size_t vlen);
/* Called by the agent's tick: split-then-move follow-ups, forgotten orders. */
void agent_policy_tick(struct agent_policy *p, int64_t now);

#endif
