/*
 * edge_conn_lane.h - the write lane (what it is: edge_conn.h), as the
 * connection layer (edge_conn.c) drives it.  Nothing else calls these.
 */
#ifndef HKV_EDGE_CONN_LANE_H
#define HKV_EDGE_CONN_LANE_H

#include "server/edge/edge_conn.h"

/* The batch process_input just ran (c->batch_*) decides: writes only, few,
 * with few replies owed, is the lane; any read, a larger batch or more
 * owed leaves it; a batch of neither (PING, CLIENT ...) changes nothing. */
void lane_after_batch(struct conn *c);
/* After each client read (in_lane: that connection was in the lane):
 * every CONN_POLL_EVERY reads, e->conn_poll, then the lane's connections
 * with bytes to read are made active. */
void lane_tick(struct edge *e, int in_lane);
/* c is closing: out of the lane's set (before its fd is closed). */
void lane_forget(struct conn *c);
/* Closes the lane's epoll set (the edge stops). */
void lane_teardown(struct edge *e);

#endif
