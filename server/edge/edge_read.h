/*
 * edge_read.h - the one-key read commands: GET STRLEN TYPE TTL PTTL (and
 * EXISTS of one key, GETEX without options), and GETMETA key (hotkvd's: the
 * value with its age, stamp, stale and degraded flags as a map; RESP2 a
 * flat array [value, v, age_ms, n, ...]).  Every one goes through the colo
 * cache first (edge_read.c says how stale an answer may be); misses wait on
 * the key's flight (edge_flight.h).  Several keys: edge_mread.h.  A read
 * whose reply is computed from the value (GETRANGE ..., edge_strread.c)
 * takes the same path with its own renderer.
 */
#ifndef HKV_EDGE_READ_H
#define HKV_EDGE_READ_H

#include "proto/cmd.h"
#include "proto/resp.h"
#include "server/edge/edge_conn.h"

#define EDGE_READ_HANDLERS(X) X(get) X(strlen) X(type) X(ttl) X(pttl) X(getmeta)
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

/* Renders a computed read's reply into out from the key's value v (NULL:
 * the key is absent, or its class's degraded answer) and the words after
 * the key.  c is the client (its protocol, the config). */
typedef void (*edge_read_fn)(struct conn *c, struct hkv_buf *out, const struct resp_slice *v,
                             const struct resp_slice *args, int nargs);
/* A one-key read of argv[1] through the read path above (cache, flight,
 * miss-wait, behind the client's own writes), its reply rendered by fn
 * with argv[2..argc) as its arguments; cmd names it. */
void edge_read_calc(struct conn *c, enum cmd_id cmd, int argc, const struct resp_slice *argv,
                    edge_read_fn fn);

#endif
