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
/* Sends a LEAF_INTENT/COMMIT/ABORT/READ/SPLIT about leaf; cb is called
 * exactly once, from the loop (never from inside this call), with the
 * reply or UNKNOWN after timeout_ms.  0, or -1 (not in a cluster, out of
 * memory: cb is never called). */
int owner_agent_call(struct owner *o, uint8_t type, struct hand_leaf leaf, int64_t epoch,
                     uint32_t to, int64_t timeout_ms, oagent_reply_fn cb, void *arg);
/* An order ended (LEAF_DONE). */
void owner_agent_done(struct owner *o, uint64_t order, int status, const char *text);
/* 1 while the channel is connected. */
int owner_agent_up(const struct owner *o);

#endif
