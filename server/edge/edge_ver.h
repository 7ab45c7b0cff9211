/*
 * edge_ver.h - the versioned commands, Garnet's etag names and replies over
 * hotkvd's versions (the owner's stamp of a key's last write, the number
 * the HTTP door shows as the ETag):
 *   GETWITHETAG key             [etag, value], nil: no key
 *   GETIFNOTMATCH key etag      [etag, value] if the key's etag differs,
 *                               [etag, nil] if it is etag; nil: no key
 * are reads through the read path (edge_read.h: colo cache, single flight,
 * staleness rules, behind the client's own writes), the etag the one the
 * read found beside the value; and
 *   SETIFMATCH key value etag [EX s|PX ms] [NOGET] [XX]
 * is a write the key's owner runs (edge_call.h: CALL, numbered, retried,
 * exactly once): server/owner/owner_cmd_ver.c has its rules and replies.
 * SET ... IFEQ (Valkey 8.1) goes the same way, from edge_write.c.
 */
#ifndef HKV_EDGE_VER_H
#define HKV_EDGE_VER_H

#include "proto/resp.h"
#include "server/edge/edge_conn.h"

#define EDGE_VER_HANDLERS(X) X(getwithetag) X(getifnotmatch) X(setifmatch)
#define X(fn) void edge_cmd_##fn(struct conn *c, int argc, const struct resp_slice *argv);
EDGE_VER_HANDLERS(X)
#undef X

#endif
