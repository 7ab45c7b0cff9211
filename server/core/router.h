/*
 * router.h - where a key lives: key -> class -> pool -> leaf -> owner.
 *
 * The hash is SipHash-2-4 under a fixed, public key: the same on every
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
 */
#ifndef HKV_ROUTER_H
#define HKV_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include "config/cfg.h"

#define ROUTER_LEAF_BITS 10 /* 1024 leaves per pool to start with */

struct router;

struct route {
    uint64_t hash;
    const struct cfg_class *cls;  /* into the router's config: a route kept past the
                                   * callback needs a reference to it (cfg_ref) */
    uint32_t class_id;       /* index in cfg->classes */
    enum cfg_pool pool;
    uint32_t leaf;           /* the hash's top `bits` bits */
    uint8_t bits;
    int owner;               /* owner index within the pool, -1 if the pool is empty */
};

/* The stable routing hash of a key. */
uint64_t router_hash(const char *key, size_t len);

/* A router for cfg's pools (cfg is borrowed: keep it alive, or call
 * router_set_config after a reload).  NULL on allocation failure. */
struct router *router_create(const struct cfg *cfg);
void router_destroy(struct router **r);
/* Points the router at a reloaded config (classes may have changed; owner
 * counts are restart-only, so the maps stay). */
void router_set_config(struct router *r, const struct cfg *cfg);

void router_route(const struct router *r, const char *key, size_t len, struct route *out);
/* Owner index of `hash` in `pool`; -1 for an empty pool. */
int router_owner(const struct router *r, enum cfg_pool pool, uint64_t hash);
/* The leaf (prefix and bit count) that holds hash in pool. */
void router_leaf(const struct router *r, enum cfg_pool pool, uint64_t hash, uint32_t *leaf,
                 uint8_t *bits);
uint64_t router_generation(const struct router *r, enum cfg_pool pool);

/* Applies "leaf/bits belongs to owner, as of generation gen".  Returns 1 if the
 * map changed, 0 if gen was not newer, HKV_EINVAL for a leaf or owner out of
 * range. */
int router_moved(struct router *r, enum cfg_pool pool, uint32_t leaf, uint8_t bits, int owner,
                 uint64_t gen);

#endif
