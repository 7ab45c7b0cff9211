/*
 * edge_throttle.h - CL.THROTTLE key max_burst count_per_period period
 * [quantity]: redis-cell's command, answered by the edge from its colo's
 * CL.THROTTLE segment (server/colo/ratelimit.h rl_throttle, the arithmetic
 * server/colo/gcra.h's); never sent to an owner, never persisted.
 *
 * Limits are per colo, as the seed's platform binding was per data centre:
 * a client whose requests reach k colos gets up to k times the limit in
 * all.  Counters live in memory only: a restart starts every key afresh.
 * When the table cannot decide (full near the key's slot, a lock it cannot
 * take at once, a damaged segment) the request is allowed - it fails open -
 * and counted in INFO (app_ratelimit_failopen); a RESP3 client with CLIENT
 * META ON also gets the attribute failopen 1 before that reply.
 *
 * The HTTP door's POST /v1/ratelimit/KEY is the same call
 * (edge_throttle_http).
 */
#ifndef HKV_EDGE_THROTTLE_H
#define HKV_EDGE_THROTTLE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/resp.h"
#include "server/colo/gcra.h"

struct conn;
struct edge;

void edge_cmd_throttle(struct conn *c, int argc, const struct resp_slice *argv);

/* The check itself, for either door: the limit's arguments as given (words,
 * parsed and bounded here).  0 with *res (and *failopen), or -1 with *err a
 * static message (the arguments are refused). */
int edge_throttle(struct edge *e, const char *key, size_t klen, const struct resp_slice *burst,
                  const struct resp_slice *count, const struct resp_slice *period,
                  const struct resp_slice *quantity, struct gcra_result *res, int *failopen,
                  const char **err);

#endif
