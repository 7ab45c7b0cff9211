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
#include "server/edge/edge_render.h"

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
/* The same for a reply that also shows the key's version (GETWITHETAG,
 * GETIFNOTMATCH: edge_ver.h): fn gets the owner's stamp of what was read
 * (the colo cache's entry, the flight's or the owner's answer), the number
 * the HTTP door shows as the ETag. */
typedef void (*edge_read_vfn)(struct conn *c, struct hkv_buf *out, const struct resp_slice *v,
                              hkv_stamp version, const struct resp_slice *args, int nargs);
void edge_read_versioned(struct conn *c, enum cmd_id cmd, int argc,
                         const struct resp_slice *argv, edge_read_vfn fn);

/* The read path's two halves, for a front door that renders its own replies
 * (HTTP, edge_http_kv.c): the same rules, counters and refreshes as the
 * commands above, with the answer handed back instead of written.
 *
 * What a one-key read found in the colo cache. */
struct edge_read_hit {
    int found;                    /* 0: a cached authoritative absence */
    const char *v;                /* the value: valid until the next lookup (e->cache->cval) */
    size_t n;
    int64_t expire_at;            /* unix ms, 0 = none */
    struct read_facts f;          /* age, the owner's stamp, stale (degraded: never here) */
};
/* The key in the colo cache (e->cache->cache not NULL), under the staleness rules
 * at the top of edge_read.c (a stale entry starts the colo's one refresh).
 * min != 0: an entry stamped below min counts as a miss (the reader knows a
 * newer version exists).  1 = answered (*h), 0 = wait on the key's flight. */
int edge_read_cached(struct edge *e, const char *key, size_t len, uint64_t hash, hkv_stamp min,
                     struct edge_read_hit *h);
/* The key's flight in this process, joined or started (single flight per
 * edge, refresh lock per colo); NULL with *err the error reply's text (no
 * owner for its pool, out of memory). */
struct flight *edge_read_flight(struct edge *e, const char *key, size_t len, uint64_t hash,
                                const char **err);

#endif
