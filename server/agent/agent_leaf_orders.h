/*
 * agent_leaf_orders.h - the operators' move requests that the agent hands
 * its owners (agent_leaf.h "Orders"), a part of the leaf module kept in a
 * file of its own.  Private to server/agent/agent_leaf*.c.
 */
#ifndef HKV_AGENT_LEAF_ORDERS_H
#define HKV_AGENT_LEAF_ORDERS_H

#include <stdint.h>

#include "server/agent/agent_leaf.h"

struct agent;
struct agent_orders;

struct agent_orders *agent_orders_create(struct agent *a, agent_leaf_order_fn order, void *arg);
void agent_orders_destroy(struct agent_orders **o);
/* An order ended (LEAF_DONE with the order's id): its request key goes. */
void agent_orders_done(struct agent_orders *o, uint64_t order, int status);
/* Polls requests/move/ when due. */
void agent_orders_tick(struct agent_orders *o, int64_t now);

#endif
