/*
 * edge_keys.h - KEYS and RANDOMKEY: the whole keyspace through the owners'
 * SCAN (the same wire SCAN as the SCAN command, edge_scan.c).
 */
#ifndef HKV_EDGE_KEYS_H
#define HKV_EDGE_KEYS_H

#include "proto/resp.h"
#include "server/edge/edge_conn.h"

#define EDGE_KEYS_HANDLERS(X) X(keys) X(randomkey)
#define X(fn) void edge_cmd_##fn(struct conn *c, int argc, const struct resp_slice *argv);
EDGE_KEYS_HANDLERS(X)
#undef X

#endif
