/*
 * edge_mread.h - the reads of several keys: MGET, EXISTS (one key is
 * edge_read.h's), and the two values a computed read such as LCS needs.
 * They answer from the colo cache when every key is there (edge_read.c's
 * staleness rule), else ask the owners, whose answers fill the cache.
 */
#ifndef HKV_EDGE_MREAD_H
#define HKV_EDGE_MREAD_H

#include "proto/cmd.h"
#include "proto/resp.h"
#include "server/edge/edge_conn.h"

#define EDGE_MREAD_HANDLERS(X) X(mget) X(exists)
#define X(fn) void edge_cmd_##fn(struct conn *c, int argc, const struct resp_slice *argv);
EDGE_MREAD_HANDLERS(X)
#undef X

/* Renders a reply computed from two keys' values a and b (NULL: absent)
 * and the words after the keys. */
typedef void (*edge_read2_fn)(struct conn *c, struct hkv_buf *out, const struct resp_slice *a,
                              const struct resp_slice *b, const struct resp_slice *args,
                              int nargs);
/* Reads argv[1] and argv[2], which the caller made sure live on one owner,
 * and renders the reply with fn over argv[3..argc); cmd names it. */
void edge_read_two(struct conn *c, enum cmd_id cmd, int argc, const struct resp_slice *argv,
                   edge_read2_fn fn);

#endif
