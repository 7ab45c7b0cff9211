/*
 * agent_leaf.h - the agent's half of a move (../shared/CLUSTER.md §5): it
 * runs the leaf txns (agent_txn.h) its owners ask for over the control
 * channel (agent_ctl.h), since owners never talk to etcd, and it hands its
 * owners the moves operators ask for (requests/move/, hotkvd-admin).
 * Private to server/agent.
 *
 * A request is one LEAF_INTENT / COMMIT / ABORT / READ / SPLIT / ISR_ADD /
 * ISR_DEL message (proto/wire_hand.h) from a local owner; its answer is one
 * LEAF_REPLY,
 * given through the reply function with the request's cookie:
 *   OK       the txn applied; epoch = the revision it made (the leaf's new
 *            epoch); the truth fields say what the leaf is now
 *   LOST     a compare failed; the truth fields are the leaf as etcd has it
 *            (exists 0: no such leaf)
 *   UNKNOWN  etcd did not answer in time: the txn may or may not have
 *            applied (the owner re-reads with LEAF_READ, step 8)
 *   REFUSED  not tried: no lease yet, no free slot on the target, an owner
 *            number the map does not know, a malformed leaf; ISR_ADD: the
 *            asker is not the leaf's serving primary, the follower is not
 *            another live owner of the pool (or was seen dead), is in the
 *            set already, or the set is full; ISR_DEL: not in the set
 * Txns that rewrite a leaf keep its in-sync set (INTENT, ABORT) or empty
 * it deliberately (COMMIT, SPLIT: the new primary's followers are seeded
 * again); ISR_ADD / DEL are `mod == epoch` CASes that add or remove `to`
 * (ADD also compares that members/<to> exists).
 * Each request is a short chain of etcd calls (a read of slots/ or moves/,
 * then the txn), every call bounded by etcd-timeout; nothing blocks the
 * loop.  Requests are served in arrival order, one chain at a time, and at
 * most AGENT_LEAF_QUEUE wait (more are REFUSED at once).
 *
 * Orders: every AGENT_LEAF_POLL_MS the agent reads requests/move/; a request
 * for a leaf one of its owners serves is sent to that owner (LEAF_ORDER,
 * through the order function) once, again after AGENT_LEAF_ORDER_MS without
 * a LEAF_DONE, and the request key is deleted when LEAF_DONE comes.
 */
#ifndef HKV_AGENT_LEAF_H
#define HKV_AGENT_LEAF_H

#include <stdint.h>

#include "proto/wire_hand.h"

#define AGENT_LEAF_QUEUE 64
#define AGENT_LEAF_POLL_MS 500
#define AGENT_LEAF_ORDER_MS 5000

struct agent;
struct agent_leaf;

/* The reply to the request `cookie` named (m->id is set by the caller). */
typedef void (*agent_leaf_reply_fn)(void *arg, uint64_t cookie, struct hand_msg *m);
/* Sends an order to local owner (pool, index): 0, or -1 (no channel to it). */
typedef int (*agent_leaf_order_fn)(void *arg, int pool, int index, const struct hand_msg *m);

struct agent_leaf *agent_leaf_create(struct agent *a, agent_leaf_reply_fn reply,
                                     agent_leaf_order_fn order, void *arg);
void agent_leaf_destroy(struct agent_leaf **l);

/* A request of local owner (pool, index): its reply comes through the reply
 * function (possibly before this returns, for a request refused at once). */
void agent_leaf_request(struct agent_leaf *l, int pool, int index, const struct hand_msg *m,
                        uint64_t cookie);
/* An order ended (LEAF_DONE with the order's id). */
void agent_leaf_done(struct agent_leaf *l, uint64_t order, int status);
/* Called by the agent's tick: polls requests/move/ when due. */
void agent_leaf_tick(struct agent_leaf *l, int64_t now);

#endif
