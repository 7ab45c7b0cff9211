/*
 * router.h - where a key lives: key -> class -> pool -> leaf -> owner.
 *
 * The hash is SipHash-2-4 under a fixed, public key (computed in
 * proto/place.h, so storage can place keys too): the same on every
 * process, host and restart (it must be: it is how the edge finds the owner
 * and how the owner recognises its keys).  It is not a defence against
 * chosen keys and does not need to be: a leaf is a routing unit, not a hash
 * bucket, and a hot leaf is split (later) rather than overflowed.
 *
 * A leaf is a prefix of the hash's top bits.  Each pool has a leaf map in the
 * shape of an extendible-hashing directory: 2^bits entries, each naming the
 * owner of that prefix.  Today every leaf has ROUTER_LEAF_BITS bits and
 * leaves are dealt round-robin to the pool's owners; splitting a leaf later
 * deepens the directory and changes no routing code.  The map carries a
 * generation: a MOVED answer from an owner with a newer generation updates
 * it, so a stale map costs one more hop, never a wrong answer.
 *
 * Hash tags, exactly as Redis Cluster: when a key holds a '{' followed later
 * by a '}' with at least one byte between them, only the bytes between the
 * first '{' and the first '}' after it are hashed for placement, so
 * "{user:1}:a" and "{user:1}:b" live on one owner (and a command over both
 * can be atomic).  The key's identity hash (router_hash: colo cache, tables)
 * stays the hash of the whole key, so one tag does not crowd one bucket.
 *
 * In a cluster the fixed maps are not used: a router given a cluster map
 * (router_use_map, server/core/router_map.h) routes from it, and `owner`
 * is then a cluster owner number (1..CMAP_MAX_OWNERS), the generation the
 * map's revision, and router_moved takes MOVED's epoch and owner number.
 */
#ifndef HKV_ROUTER_H
#define HKV_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include "config/cfg.h"

#define ROUTER_LEAF_BITS 10 /* 1024 leaves per pool to start with */

struct router;

struct route {
    uint64_t hash;           /* router_hash of the whole key */
    uint64_t place;          /* router_place: what leaf and owner come from */
    const struct cfg_class *cls;  /* into the router's config: a route kept past the
                                   * callback needs a reference to it (cfg_ref) */
    uint32_t class_id;       /* index in cfg->classes */
    enum cfg_pool pool;
    uint32_t leaf;           /* the hash's top `bits` bits */
    uint8_t bits;
    int owner;               /* owner index within the pool, -1 if the pool is empty
                              * (in a cluster: the cluster owner number, -1 if none) */
};

/* The stable hash of a whole key. */
uint64_t router_hash(const char *key, size_t len);
/* The placement hash: router_hash of the key's hash tag if it has one (see
 * above), else of the whole key.  Leaves and owners are chosen by this. */
uint64_t router_place(const char *key, size_t len);
/* Where the hash tag of key is: sets *off and *n and returns 1, or returns 0
 * when the key has none (then the whole key is hashed). */
int router_hash_tag(const char *key, size_t len, size_t *off, size_t *n);

/* A router for cfg's pools (cfg is borrowed: keep it alive, or call
 * router_set_config after a reload).  NULL on allocation failure. */
struct router *router_create(const struct cfg *cfg);
void router_destroy(struct router **r);
/* Points the router at a reloaded config (classes may have changed; owner
 * counts are restart-only, so the maps stay). */
void router_set_config(struct router *r, const struct cfg *cfg);

void router_route(const struct router *r, const char *key, size_t len, struct route *out);
/* The same for a key whose router_hash the caller already has (`hash`: it
 * must be router_hash(key, len)), so a request hashes its key once. */
void router_route_hashed(const struct router *r, const char *key, size_t len, uint64_t hash,
                         struct route *out);
/* The class of key in the router's config (what router_route puts in cls). */
const struct cfg_class *router_class(const struct router *r, const char *key, size_t len);
/* Owner index of placement hash `hash` in `pool`; -1 for an empty pool. */
int router_owner(const struct router *r, enum cfg_pool pool, uint64_t hash);
/* The leaf (prefix and bit count) that holds hash in pool. */
void router_leaf(const struct router *r, enum cfg_pool pool, uint64_t hash, uint32_t *leaf,
                 uint8_t *bits);
uint64_t router_generation(const struct router *r, enum cfg_pool pool);

/* Cluster mode: routes from m from now on (the router takes it and frees
 * it with itself); router_map gives it back (NULL on a single host). */
struct rmap;
void router_use_map(struct router *r, struct rmap *m);
struct rmap *router_map(const struct router *r);

/* Applies "leaf/bits belongs to owner, as of generation gen".  Returns 1 if the
 * map changed, 0 if gen was not newer, HKV_EINVAL for a leaf or owner out of
 * range.  (Cluster mode: rmap_moved with gen as the epoch.) */
int router_moved(struct router *r, enum cfg_pool pool, uint32_t leaf, uint8_t bits, int owner,
                 uint64_t gen);

#endif
