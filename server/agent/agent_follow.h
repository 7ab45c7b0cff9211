/*
 * agent_follow.h - follower placement (../shared/CLUSTER.md §7): with
 * `replicas N` > 0 the agent asks the primary of each leaf its host's
 * owners serve to seed followers until the leaf's in-sync set holds N.
 * Private to server/agent.
 *
 * The choice (afol_choose, pure): a live owner of the leaf's pool, not the
 * primary, not in the set already, not seen dead by this host; preferring
 * another zone than the primary's (when both hosts name one), then another
 * host, then another owner of the primary's host; among equals the one
 * following the fewest leaves (then the lowest number).
 *
 * The module: on the agent's tick, for each serving leaf of a local primary
 * with fewer than `replicas` followers and no order out for it, it sends the
 * primary LEAF_ORDER kind LEAF_ORDER_FOLLOW {leaf, to} over the control
 * channel (the path operators' moves take).  The owner seeds the follower
 * (a move copy that never fences), adds it by LEAF_ISR_ADD once it holds
 * everything, and ends the order with LEAF_DONE.  At most AFOL_MAX_OUT
 * orders are out per host; an order ends at its LEAF_DONE, when the map
 * shows its follower in the set, or past AFOL_SILENT_MS without either (a
 * failure); a leaf whose order failed is left alone for AFOL_COOL_MS.
 * `replicas` is read at every tick, so a reload takes effect at once;
 * lowering it only stops adding (the extra followers stay).
 * Order ids carry AGENT_FOLLOW_ORDER_BIT, so they never meet agent_leaf.c's
 * or agent_policy.c's.  Counters: health.repl_follow_sent / _failed.
 */
#ifndef HKV_AGENT_FOLLOW_H
#define HKV_AGENT_FOLLOW_H

#include <stddef.h>
#include <stdint.h>

#include "server/agent/agent_leaf.h"
#include "server/core/cmap.h"

#define AFOL_MAX_OUT 8               /* follow orders out per host */
#define AFOL_COOL_MS 2000            /* a leaf whose order failed waits this long */
#define AFOL_SILENT_MS 30000         /* an order with no end by then has failed */
#define AGENT_FOLLOW_ORDER_BIT (1ULL << 61)

/* ---- the choice (agent_follow_pick.c, pure) ---- */

struct afol_cand {
    unsigned number;                 /* owner number */
    uint8_t pool;
    uint8_t live;                    /* registered, and not seen dead by this host */
    int host;                        /* equal values: the same host */
    int zone;                        /* equal values: the same zone; 0 = none given */
    unsigned following;              /* leaves it follows (or is ordered to) now */
};

/* The follower for leaf l of pool among cands[0..n) (the primary among
 * them gives its host and zone; absent: neither is known): its number, or
 * 0 when no owner fits. */
unsigned afol_choose(const struct afol_cand *cands, size_t n, int pool, const struct cmap_leaf *l);

/* ---- the module (agent_follow.c) ---- */

struct agent;
struct agent_follow;

struct agent_follow *agent_follow_create(struct agent *a, agent_leaf_order_fn order, void *arg);
void agent_follow_destroy(struct agent_follow **f);
/* LEAF_DONE: 1 if the order was a follow order (handled), else 0. */
int agent_follow_done(struct agent_follow *f, uint64_t order, int status);
/* Called by the agent's tick. */
void agent_follow_tick(struct agent_follow *f, int64_t now);

#endif
