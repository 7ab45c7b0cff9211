/*
 * edge_keyspace.h - the keyspace administration commands that every owner
 * or the key's owner runs from its command table (a WIRE_CALL): FLUSHALL and
 * FLUSHDB (every owner, then every colo cache of the host forgets what it
 * held), and OBJECT (the key's owner: how it holds the value).
 */
#ifndef HKV_EDGE_KEYSPACE_H
#define HKV_EDGE_KEYSPACE_H

#include "proto/resp.h"
#include "server/edge/edge_conn.h"

#define EDGE_KEYSPACE_HANDLERS(X) X(flushall) X(object)
#define X(fn) void edge_cmd_##fn(struct conn *c, int argc, const struct resp_slice *argv);
EDGE_KEYSPACE_HANDLERS(X)
#undef X

/* The worker's cache_forgotten hook (arg the edge): the master applied the
 * oldest CTL_CACHE_FORGET this edge sent to every colo segment. */
void edge_cache_forgotten(void *arg);

/* FLUSHALL's count of the forgets sent and applied, and the FLUSHALLs
 * waiting for theirs (e->forgets).  0, or -1 out of memory. */
struct edge_forgets;
int forgets_setup(struct edge *e);
void forgets_teardown(struct edge_forgets **f);

#endif
