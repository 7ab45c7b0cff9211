/*
 * edge_conn_int.h - the connection layer's own state (e->conns, behind the
 * head edge_conn.h shows), shared by its files: edge_conn.c (connections),
 * edge_conn_lane.c (the write lane) and edge_reply.c (reply slots).  The
 * layer's unit suite reads it too; nobody else does.
 */
#ifndef HKV_EDGE_CONN_INT_H
#define HKV_EDGE_CONN_INT_H

#include <stdint.h>

#include "server/edge/edge_conn.h"
#include "server/edge/edge_int.h"

struct rslot;

struct conns_state {
    struct edge_conns pub;
    struct rslot *free_slots;     /* the reply slots' freelist */
    uint32_t reads;               /* client read callbacks, for opts.poll's period */
    int lane_ep;                  /* epoll set of the write lane's connections; 0 = none yet */
    int nlane;                    /* connections in the write lane */
};

static inline struct conns_state *conns_st(const struct edge *e)
{
    return (struct conns_state *)e->conns;
}

#endif
