/*
 * edge_cache.h - how the edge uses its colo's cache segment
 * (server/colo/cache.h): what goes in and for how long, decided from the
 * key's class; the fills from owner answers, this edge's own writes, and the
 * owners' pushes.  The read path looks entries up itself (edge_read.c,
 * edge_flight.c); this module only stores and invalidates.
 */
#ifndef HKV_EDGE_CACHE_H
#define HKV_EDGE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/stamp.h"
#include "proto/wire.h"
#include "server/core/router.h"
#include "server/edge/edge_cache_policy.h"
#include "server/edge/edge_int.h"

/* e->cache: what the read paths (edge_read.c, edge_mread.c, edge_flight.c)
 * and the HTTP front door use of the module; its own state lies behind
 * this head (edge_cache.c). */
struct edge_cache {
    struct cache *cache;          /* the colo cache; NULL: every read asks the owner */
    struct changes *changes;      /* the colo's change ring: noted here, read by held
                                   * HTTP readers (edge_http_wake.c); NULL: none */
    struct hkv_buf cval;          /* a looked-up value, copied out of the segment */
    struct hkv_buf scratch;       /* MGET from the segment: the values (edge_read.c) */
};

/* The module's options (the process builds them from the config, at setup
 * and at each reload). */
struct edge_cache_opts {
    int64_t write_timeout_ms;     /* a refresh lock is held this + 1 s (edge_lock_ttl) */
    int64_t hotkey_threshold;     /* a fresh-0 class is cached past this rate */
    int64_t negative_ttl_ms;      /* how long a NOTFOUND is kept */
    int owner_push;               /* owners push writes to colo caches */
};

/* e->cache, with the colo cache and change ring of the worker context
 * (each NULL when it fails validation: every read then asks the owner).
 * 0, or -1 out of memory. */
int edge_cache_setup(struct edge *e, const struct edge_cache_opts *opts);
void edge_cache_reload(struct edge *e, const struct edge_cache_opts *opts);
/* Frees the module (the segments stay: the process maps them); *c is NULL
 * after. */
void edge_cache_teardown(struct edge_cache **c);
/* A new refresh-lock token of this process. */
uint64_t edge_cache_token(struct edge *e);
/* How long a refresh lock is held before another edge may take it. */
int64_t edge_lock_ttl(const struct edge *e);
/* Fills the segment from an owner's answer (VALUE / NOTFOUND) to a fetch
 * sent at sent_ms (clock_mono_ms); an answer to a fetch sent
 * EDGE_FILL_HORIZON_MS ago or more is not stored. */
void edge_cache_fill(struct edge *e, const char *key, size_t klen, const struct route *rt,
                     const struct wire_msg *m, int64_t sent_ms);
/* After this edge's write of key was applied with the owner's version
 * (0: nothing changed, nothing to do): stores v (NULL: the new value is not
 * known here) expiring at expire_at (unix ms, 0 none), else a tombstone.
 * base_ms: the write's first send (clock_mono_ms); now: when its answer
 * came in (op_answer_ms; earlier than now only shortens the keep).  hash:
 * the key's router_hash, as the write's route computed it.  origin: the
 * writing client's id (0: gone), which the colo's change ring carries
 * (CLIENT TRACKING's NOLOOP). */
void edge_cache_wrote(struct edge *e, const char *key, size_t klen, uint64_t hash,
                      const struct wire_slice *v, int64_t expire_at, hkv_stamp version,
                      int64_t base_ms, int64_t now, uint64_t origin);
/* A write of key was answered without a change (an error, "outcome
 * unknown", a no-op): the answer may come from a newer state of the key
 * than the colo holds (a write whose own answer is still on its way to
 * another edge), so the cached entry goes, guarded one stamp above it:
 * the key's next read in the colo asks its owner, and a fetch of the old
 * value still in flight cannot bring it back.  A client that saw
 * "not an integer" then read the older integer from the cache. */
void edge_cache_doubt(struct edge *e, const char *key, size_t klen, uint64_t hash);
/* A push from an owner (the owners' push hook; arg is the owner_ref). */
void edge_cache_pushed(void *arg, const struct wire_msg *m);
/* 1 when a change of key may not be pushed to this colo now (owner-push
 * off, or its owner's push link not up): CLIENT TRACKING then times the
 * key out instead.  now: clock_mono_ms. */
int edge_cache_unpushed(struct edge *e, const char *key, size_t klen, int64_t now);
/* The owner_hooks gap hook: a push link of owner_ref arg broke or came back
 * (pushes may have been missed): a FLUSH record in the colo's change ring,
 * so that every tracking client of the colo empties its cache. */
void edge_cache_push_gap(void *arg);

#endif
