/*
 * edge_cas.h - a conditional write of one key, for a front door that
 * renders its own replies (HTTP's If-Match / If-None-Match: *): the key's
 * owner compares the key's version and writes in one step of its loop
 * (SETIFMATCH, server/owner/owner_cmd_ver.c, sent as a CALL), so the
 * comparison and the write are atomic, and the write is numbered like
 * every other: retried with the same request id until write-deadline, a
 * retry after a lost answer answered with the first result (never a
 * mismatch against its own write), the colo cache ordered by the owner's
 * answer before the callback runs (read-your-writes through this colo).
 *
 * The version is the owner's stamp of the key's last write: the number
 * GETWITHETAG answers and the HTTP door shows as the ETag.
 */
#ifndef HKV_EDGE_CAS_H
#define HKV_EDGE_CAS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/stamp.h"
#include "server/edge/edge_conn.h"

enum edge_cas_cond {
    EDGE_CAS_IF_VERSION,           /* the key exists and holds version `expected` (If-Match) */
    EDGE_CAS_IF_ABSENT,            /* no live key (If-None-Match: *) */
    EDGE_CAS_IF_VERSION_OR_ABSENT, /* either (Garnet's SETIFMATCH) */
};

struct edge_cas_req {
    const char *key;
    size_t klen;
    const char *val;
    size_t vlen;
    int64_t ttl_ms;                /* > 0: the key expires this long after the write; 0: never */
    enum edge_cas_cond cond;
    hkv_stamp expected;            /* EDGE_CAS_IF_VERSION*: the version it must hold */
};

enum edge_cas_outcome {
    EDGE_CAS_APPLIED,              /* written: version is the key's new version */
    EDGE_CAS_MISMATCH,             /* not written: version is the key's current one (0: no key) */
    EDGE_CAS_FAILED,               /* error: see unknown and err */
};

struct edge_cas_result {
    enum edge_cas_outcome outcome;
    hkv_stamp version;
    int unknown;                   /* FAILED: 1 if the write may have been applied (the
                                      engine's "UNAVAILABLE outcome unknown ..."); 0: it was
                                      not (no owner, refused, out of memory ...) */
    const char *err;               /* FAILED: Redis's error text, without '-' and CRLF; valid
                                      during the callback */
    size_t errlen;
};

/* Called once, when the write has ended: out is the request's place in c's
 * reply order (write the reply there), NULL if the client has gone (the
 * write still ran to its end: free arg then).  res is valid during the
 * call only. */
typedef void (*edge_cas_fn)(void *arg, struct hkv_buf *out, const struct edge_cas_result *res);

/* Issues q on c, which must be dispatching a request (the write takes its
 * reply slot, as every op: replies stay in request order).  fn is always
 * called, perhaps before this returns (an error found at once: no owner for
 * the key, out of memory).  The key and value are copied.  (When not even
 * the op could be made, out of memory, fn gets out NULL and c's reply slot
 * holds Redis's "-ERR out of memory", as every op's.) */
void edge_cas_write(struct conn *c, const struct edge_cas_req *q, edge_cas_fn fn, void *arg);

#endif
