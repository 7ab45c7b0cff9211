/*
 * edge_strread.h - read commands whose reply the edge computes from the
 * value the read path returns (proto/strops.h, Redis 7.0's exact replies):
 * GETRANGE SUBSTR GETBIT BITCOUNT BITPOS over one key (edge_read.h: colo
 * cache, single flight, miss-wait, behind the client's own writes), and LCS
 * over two keys (edge_mread.h), which must live on one owner (otherwise
 * "-CROSSSLOT ...", as Redis Cluster, before anything is read).
 */
#ifndef HKV_EDGE_STRREAD_H
#define HKV_EDGE_STRREAD_H

#include "proto/resp.h"
#include "server/edge/edge_conn.h"

#define EDGE_STRREAD_HANDLERS(X) X(getrange) X(substr) X(getbit) X(bitcount) X(bitpos) X(lcs)
#define X(fn) void edge_cmd_##fn(struct conn *c, int argc, const struct resp_slice *argv);
EDGE_STRREAD_HANDLERS(X)
#undef X

#endif
