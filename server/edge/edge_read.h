/*
 * edge_read.h - the read commands: GET MGET EXISTS STRLEN TYPE TTL PTTL, and
 * GETMETA key (hotkvd's: the value with its age, stamp, stale and degraded
 * flags as a map; RESP2 a flat array [value, v, age_ms, n, ...]).
 * Every one goes through the colo cache first (edge_read.c says how stale
 * an answer may be); misses wait on the key's flight (edge_flight.h) or, for
 * several keys, become an op (edge_op.h).
 */
#ifndef HKV_EDGE_READ_H
#define HKV_EDGE_READ_H

#include "proto/cmd.h"
#include "proto/resp.h"
#include "server/edge/edge_conn.h"

#define EDGE_READ_HANDLERS(X) X(get) X(mget) X(exists) X(strlen) X(type) X(ttl) X(pttl) \
    X(getmeta)
#define X(fn) void edge_cmd_##fn(struct conn *c, int argc, const struct resp_slice *argv);
EDGE_READ_HANDLERS(X)
#undef X

struct flight_waiter;
struct flight_answer;

/* The flights' answer callback (flights_setup): renders a waiting read's
 * answer in its command's form and ends its op. */
void edge_read_answer(struct flight_waiter *w, const struct flight_answer *a);

/* A one-key read answered as cmd (GET, STRLEN, TYPE, EXISTS, TTL, PTTL,
 * GETMETA: GETEX without options is a GET). */
void edge_read_one(struct conn *c, enum cmd_id cmd, const struct resp_slice *key);

#endif
