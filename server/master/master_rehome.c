/*
 * master_rehome.c - runs persist_rehome() for each pool with the router's
 * placement (router_place: hash tags) and logs what moved.  The layout
 * marker names everything placement depends on, so a file is scanned again
 * only when one of them changed.  A single host only: a cluster's leaves
 * are where its map says.
 */
#include <stdio.h>
#include <stdlib.h>

#include "proto/hkv.h"
#include "server/core/log.h"
#include "server/core/router.h"
#include "server/core/topo.h"
#include "server/master/master_rehome.h"
#include "storage/persist_rehome.h"

/* hot-owners and cold-owners are at most 256 (config/cfg_options.c) */
#define REHOME_MAX_OWNERS 256

struct placement {
    const struct router *router;
    enum cfg_pool pool;
};

static int owner_of(void *arg, const char *key, size_t klen)
{
    const struct placement *p = arg;
    return router_owner(p->router, p->pool, router_place(key, klen));
}

static int rehome_pool(const struct cfg *cfg, const struct router *r, enum cfg_pool pool, int n,
                       char *err, size_t len)
{
    /* Files of owners past n are left from a larger pool: their rows move. */
    int nfiles = REHOME_MAX_OWNERS;
    char (*paths)[TOPO_PATH_MAX] = calloc((size_t)nfiles, sizeof(*paths));
    const char **pp = calloc((size_t)nfiles, sizeof(*pp));
    int rc = -1;
    if (paths == NULL || pp == NULL) {
        snprintf(err, len, "out of memory");
        goto out;
    }
    for (int i = 0; i < nfiles; i++) {
        topo_owner_db(cfg, pool, i, paths[i], sizeof(paths[i]));
        pp[i] = paths[i];
    }
    char layout[96];
    snprintf(layout, sizeof(layout), "place=hashtag-v1 leafbits=%d owners=%d", ROUTER_LEAF_BITS, n);
    struct placement pl = {r, pool};
    struct persist_rehome_stats st;
    char why[512];
    if (persist_rehome(pp, nfiles, n, layout, owner_of, &pl, &st, why, sizeof(why)) != HKV_OK) {
        snprintf(err, len, "%s pool: cannot put stored keys with their owners: %s",
                 topo_pool_name(pool), why);
        goto out;
    }
    if (st.files_refused > 0)
        log_warning("%s pool: %llu file(s) not checked for keys placed elsewhere (their owner "
                    "will refuse them too; %llu row(s) bound for them stay where they are): %s",
                    topo_pool_name(pool), (unsigned long long)st.files_refused,
                    (unsigned long long)st.rows_kept, why);
    if (st.rows_moved > 0 || st.rows_stale > 0)
        log_notice("%s pool: %llu stored key(s) moved to the owner that serves them now "
                   "(%llu older copies dropped; %llu rows in %llu file(s) checked for %s)",
                   topo_pool_name(pool), (unsigned long long)st.rows_moved,
                   (unsigned long long)st.rows_stale, (unsigned long long)st.rows_scanned,
                   (unsigned long long)st.files_scanned, layout);
    rc = 0;
out:
    free(paths);
    free(pp);
    return rc;
}

int master_rehome(const struct cfg *cfg, char *err, size_t len)
{
    /* In a cluster the map in etcd says which owner serves a leaf, not the
     * router's fixed map: rehoming by it moved keys away from the owners
     * the map names (they were then not found), and a leaf moves with its
     * rows by the move protocol (CLUSTER.md §5), never at start. */
    if (cfg->cluster[0] != '\0')
        return 0;
    struct router *r = router_create(cfg);
    if (r == NULL) {
        snprintf(err, len, "out of memory");
        return -1;
    }
    int rc = rehome_pool(cfg, r, CFG_POOL_HOT, cfg->hot_owners, err, len);
    if (rc == 0)
        rc = rehome_pool(cfg, r, CFG_POOL_COLD, cfg->cold_owners, err, len);
    router_destroy(&r);
    return rc;
}
