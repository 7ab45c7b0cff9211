/* router.c - key routing; see router.h.  A single host routes from the
 * fixed leaf maps below; a cluster process from its copy of the cluster map
 * (router_map.c), which every routing call hands over to when it is set. */
#include "router.h"

#include <stdlib.h>
#include <string.h>

#include "proto/place.h"
#include "server/core/router_map.h"

struct leafmap {
    uint8_t bits;
    uint64_t generation;
    int nowners;
    uint16_t *owner; /* 1 << bits entries */
};

struct router {
    const struct cfg *cfg;
    struct leafmap pools[2];
    struct rmap *map;   /* cluster mode; NULL on a single host */
};

uint64_t router_hash(const char *key, size_t len)
{
    return place_ident(key, len);
}

int router_hash_tag(const char *key, size_t len, size_t *off, size_t *n)
{
    return place_tag(key, len, off, n);
}

uint64_t router_place(const char *key, size_t len)
{
    return place_hash(key, len);
}

static int map_init(struct leafmap *m, int nowners)
{
    size_t n = (size_t)1 << ROUTER_LEAF_BITS;
    m->bits = ROUTER_LEAF_BITS;
    m->generation = 1;
    m->nowners = nowners;
    m->owner = calloc(n, sizeof(uint16_t));
    if (m->owner == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        m->owner[i] = nowners > 0 ? (uint16_t)(i % (size_t)nowners) : 0;
    return 0;
}

struct router *router_create(const struct cfg *cfg)
{
    struct router *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->cfg = cfg;
    if (map_init(&r->pools[CFG_POOL_HOT], cfg->hot_owners) != 0 ||
        map_init(&r->pools[CFG_POOL_COLD], cfg->cold_owners) != 0) {
        router_destroy(&r);
        return NULL;
    }
    return r;
}

void router_destroy(struct router **rp)
{
    if (rp == NULL || *rp == NULL)
        return;
    free((*rp)->pools[0].owner);
    free((*rp)->pools[1].owner);
    rmap_destroy(&(*rp)->map);
    free(*rp);
    *rp = NULL;
}

void router_set_config(struct router *r, const struct cfg *cfg)
{
    r->cfg = cfg;
}

void router_use_map(struct router *r, struct rmap *m)
{
    rmap_destroy(&r->map);
    r->map = m;
}

struct rmap *router_map(const struct router *r)
{
    return r->map;
}

static inline uint32_t prefix(uint64_t hash, uint8_t bits)
{
    return bits == 0 ? 0 : (uint32_t)(hash >> (64 - bits));
}

int router_owner(const struct router *r, enum cfg_pool pool, uint64_t hash)
{
    if (r->map != NULL) {
        struct rmap_route rr;
        unsigned n = rmap_owner(r->map, pool, hash, &rr);
        return n != 0 ? (int)n : -1;
    }
    const struct leafmap *m = &r->pools[pool];
    if (m->nowners == 0)
        return -1;
    return m->owner[prefix(hash, m->bits)];
}

void router_leaf(const struct router *r, enum cfg_pool pool, uint64_t hash, uint32_t *leaf,
                 uint8_t *bits)
{
    if (r->map != NULL) {
        struct rmap_route rr;
        rmap_owner(r->map, pool, hash, &rr);
        *bits = rr.bits;
        *leaf = rr.leaf;
        return;
    }
    const struct leafmap *m = &r->pools[pool];
    *bits = m->bits;
    *leaf = prefix(hash, m->bits);
}

uint64_t router_generation(const struct router *r, enum cfg_pool pool)
{
    if (r->map != NULL)
        return (uint64_t)rmap_revision(r->map);
    return r->pools[pool].generation;
}

const struct cfg_class *router_class(const struct router *r, const char *key, size_t len)
{
    return cfg_class_for(r->cfg, key, len);
}

void router_route(const struct router *r, const char *key, size_t len, struct route *out)
{
    router_route_hashed(r, key, len, router_hash(key, len), out);
}

void router_route_hashed(const struct router *r, const char *key, size_t len, uint64_t hash,
                         struct route *out)
{
    const struct cfg_class *cls = cfg_class_for(r->cfg, key, len);
    /* One SipHash when the key has no hash tag: then the placement hash is
     * the identity hash (place_hash), and a SET routed twice on the edge
     * (owner, colo cache) hashed its key four times. */
    size_t toff, tlen;
    out->hash = hash;
    out->place = place_tag(key, len, &toff, &tlen) ? place_ident(key + toff, tlen) : out->hash;
    out->cls = cls;
    out->class_id = (uint32_t)(cls - r->cfg->classes);
    out->pool = cls->pool;
    if (r->map != NULL) {
        struct rmap_route rr;
        unsigned n = rmap_owner(r->map, cls->pool, out->place, &rr);
        out->leaf = rr.leaf;
        out->bits = rr.bits;
        out->owner = n != 0 ? (int)n : -1;
        return;
    }
    router_leaf(r, cls->pool, out->place, &out->leaf, &out->bits);
    out->owner = router_owner(r, cls->pool, out->place);
}

int router_moved(struct router *r, enum cfg_pool pool, uint32_t leaf, uint8_t bits, int owner,
                 uint64_t gen)
{
    if (r->map != NULL)
        return owner < 0 ? HKV_EINVAL
                         : rmap_moved(r->map, pool, leaf, bits, (int64_t)gen, (unsigned)owner);
    struct leafmap *m = &r->pools[pool];
    if (owner < 0 || owner >= m->nowners || bits > m->bits || bits > 32 ||
        (bits < 32 && (leaf >> bits) != 0))
        return HKV_EINVAL;
    if (gen <= m->generation)
        return 0;
    /* A leaf of fewer bits than the directory covers a run of entries. */
    uint32_t span = 1u << (m->bits - bits);
    for (uint32_t i = 0; i < span; i++)
        m->owner[(leaf << (m->bits - bits)) | i] = (uint16_t)owner;
    m->generation = gen;
    return 1;
}
