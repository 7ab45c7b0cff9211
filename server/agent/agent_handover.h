/*
 * agent_handover.h - the agent's part of a planned hand-over (CLUSTER.md §7,
 * "Planned hand-over"; the owner's part is server/owner/owner_handover.h):
 * the operator's request value, the check and the one CAS of LEAF_HANDOVER.
 * Pure: no I/O (agent_leaf.c runs the txn, hotkvd-admin writes the request).
 *
 *   requests/move/<pool>/<bits>-<prefix>  {"handover":true,"to":F}  (F 0: any
 *            in-sync follower, the primary picks; one on another host first).
 *            The same key as a move's request ({"to":T}): one operator's ask
 *            per leaf at a time, handed to the leaf's primary by the same
 *            poll, as LEAF_ORDER kind LEAF_ORDER_HANDOVER.
 *   handover mod(map/L) == e ∧ members/<F> exists
 *            -> map/L {owner F, serving, isr: the isr less F}
 *            asked by the primary (the owner the value names at e), F in isr.
 *            The old primary is then no follower: the follow policy seeds it
 *            again, which purges its copy first.
 */
#ifndef HKV_AGENT_HANDOVER_H
#define HKV_AGENT_HANDOVER_H

#include <stddef.h>
#include <stdint.h>

#include "server/agent/agent_txn.h"

/* The request value; its length, or -1. */
int agent_val_handover(char *buf, size_t cap, unsigned to);
/* A requests/move/ value: a move ({"to":T}: *kind LEAF_ORDER_MOVE) or a
 * hand-over (*kind LEAF_ORDER_HANDOVER, *to 0 or an owner).  HKV_OK or
 * HKV_EINVAL. */
int agent_parse_order(const char *v, size_t n, int *kind, unsigned *to);

/* Why a LEAF_HANDOVER from owner `from` to `to` may not run on the leaf's
 * value at the compared epoch (owner, state, its isr), NULL when it may;
 * to_live: `to` is a live owner of the leaf's pool. */
const char *agent_handover_check(unsigned owner, int state, const uint16_t *isr, unsigned nisr,
                                 unsigned from, unsigned to, int to_live);
/* isr less `to`, in order, into out (CMAP_MAX_ISR); how many. */
unsigned agent_handover_isr(const uint16_t *isr, unsigned nisr, unsigned to, uint16_t *out);
/* The txn above (to_id: F's owner id): HKV_OK or HKV_EINVAL. */
int agent_txn_handover(struct agent_txn *t, const char *cluster, int pool, uint32_t start,
                       int bits, int64_t e, unsigned to, const char *to_id, const uint16_t *isr,
                       unsigned nisr);

#endif
