/* cluster_fixture.h - cluster maps for the unit suites of routing, owners
 * and links in a cluster (check_router_map.c, check_owner_cluster.c,
 * check_elink_tls.c): owner rows and leaves dealt to them, built as the
 * agent would (a struct cmap_table that cmap_validate accepts), and
 * published to a real segment when a test needs one.  Header-only: each
 * suite includes it once. */
#ifndef HKV_TEST_CLUSTER_FIXTURE_H
#define HKV_TEST_CLUSTER_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/core/cmap.h"

static inline struct cmap_table *cf_new(int64_t revision)
{
    struct cmap_table *t = calloc(1, sizeof(*t));
    ck_assert_ptr_nonnull(t);
    t->revision = revision;
    return t;
}

/* Owner number n: owner k of pool on host, reachable at addr:port. */
static inline void cf_owner(struct cmap_table *t, unsigned n, int pool, int k, const char *host,
                            const char *addr, int port)
{
    struct cmap_owner *o = &t->owners[n];
    o->number = (uint16_t)n;
    o->pool = (uint8_t)pool;
    o->index = (uint16_t)k;
    o->live = 1;
    o->port = (uint16_t)port;
    o->incarnation = 100 + n;
    snprintf(o->host, sizeof(o->host), "%s", host);
    snprintf(o->id, sizeof(o->id), "%s/%s/%d", host, pool == CFG_POOL_HOT ? "hot" : "cold", k);
    snprintf(o->addr, sizeof(o->addr), "%s", addr != NULL ? addr : "");
}

/* Pool in 2^bits leaves dealt round-robin to owners[0..n), all at epoch. */
static inline void cf_deal(struct cmap_table *t, int pool, int bits, const unsigned *owners,
                           int n, int64_t epoch)
{
    t->nleaves[pool] = 1u << bits;
    for (uint32_t i = 0; i < t->nleaves[pool]; i++) {
        struct cmap_leaf *l = &t->leaves[pool][i];
        memset(l, 0, sizeof(*l));
        l->bits = (uint8_t)bits;
        l->start = bits == 0 ? 0 : i << (32 - bits);
        l->owner = (uint16_t)owners[i % (uint32_t)n];
        l->epoch = epoch;
    }
}

/* The leaf of place in pool (the table must have one). */
static inline struct cmap_leaf *cf_leaf(struct cmap_table *t, int pool, uint64_t place)
{
    const struct cmap_leaf *l = cmap_lookup(t, (enum cfg_pool)pool, place);
    ck_assert_ptr_nonnull(l);
    return (struct cmap_leaf *)l;
}

static inline void cf_valid(const struct cmap_table *t)
{
    char why[256];
    ck_assert_msg(cmap_validate(t, why, sizeof(why)) == HKV_OK, "fixture map: %s", why);
}

#endif
