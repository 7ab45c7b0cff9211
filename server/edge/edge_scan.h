/*
 * edge_scan.h - the commands over the whole keyspace: SCAN (a cursor that
 * walks the owners in turn) and DBSIZE (every owner's key count).
 */
#ifndef HKV_EDGE_SCAN_H
#define HKV_EDGE_SCAN_H

#include "proto/resp.h"
#include "server/edge/edge_conn.h"

#define EDGE_SCAN_HANDLERS(X) X(scan) X(dbsize)
#define X(fn) void edge_cmd_##fn(struct conn *c, int argc, const struct resp_slice *argv);
EDGE_SCAN_HANDLERS(X)
#undef X

#endif
