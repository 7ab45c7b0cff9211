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
/* 1 if the peer may speak for host: a Unix link (this host), or a TLS peer
 * whose certificate names it; else 0 with why. */
int owner_hlink_peer_is(struct hlink *h, const char *host, char *why, size_t len);
/* Closes h with no callback; flush_first: after what is queued is written
 * (reads stop at once). */
void owner_hlink_close(struct hlink *h, int flush_first);

#endif
