/*
 * router_map.h - routing in a cluster: a key's leaf -> the cluster owner
 * number that serves it, from this process's own copy of the cluster map
 * (server/core/cmap.h), corrected by MOVED answers.
 *
 * The copy.  The map lives in a shared segment the host's agent writes; a
 * process routes from its own copy (a struct cmap_table on the heap) and
 * polls the segment's revision, one atomic load, taking a new copy only
 * when the revision moved (rmap_sync).  A copy that does not validate
 * (cmap_validate) is not taken: the old one stays.
 *
 * Overrides.  An owner that no longer serves a leaf answers MOVED {leaf,
 * bits, epoch, owner}: the leaf's epoch is the etcd mod_revision of its map
 * key, so two claims about a leaf compare by epoch.  A MOVED newer than
 * everything this process holds for that range of the hash space (the
 * copy's leaves there, earlier overrides there, and the copy's revision)
 * becomes an override of the range, used before the copy; an older one is
 * ignored.  An override is kept until the copy's revision reaches its epoch
 * (then the copy says the same or something newer) and is dropped at that
 * copy.  Overrides of one pool never overlap: a newer one replaces those it
 * overlaps.  There are at most RMAP_MAX_OVERRIDES per pool (a MOVED past
 * that is ignored: the next copy carries the change anyway).
 *
 * Owners.  rmap_serves says whether an owner number serves any leaf (in the
 * copy or an override): commands that walk every owner (SCAN, KEYS,
 * DBSIZE ...) walk those.
 */
#ifndef HKV_ROUTER_MAP_H
#define HKV_ROUTER_MAP_H

#include <stdint.h>

#include "config/cfg.h"
#include "server/core/cmap.h"

#define RMAP_MAX_OVERRIDES 1024

struct rmap;

/* Where a placement hash lives. */
struct rmap_route {
    unsigned owner;           /* cluster owner number; 0 = the pool has no leaves */
    uint32_t leaf;            /* the leaf's prefix (top `bits` bits of the hash) */
    uint8_t bits;
    int64_t epoch;            /* the epoch this process holds for the leaf */
};

/* An empty map (revision 0: every pool without leaves).  NULL on allocation
 * failure. */
struct rmap *rmap_create(void);
void rmap_destroy(struct rmap **m);

/* Takes a copy of the segment's table if its revision moved since the last
 * call.  1 if the copy changed, 0 if not (same revision, none published, a
 * copy that lost the race with the writer, or one that did not validate:
 * the old copy stays).  seg NULL: 0. */
int rmap_sync(struct rmap *m, const struct cmap *seg);
/* Makes t (copied) this process's copy, dropping the overrides its
 * revision reached.  HKV_OK, or HKV_EINVAL if t does not validate (nothing
 * changes). */
int rmap_set_table(struct rmap *m, const struct cmap_table *t);
/* The copy's revision (0 = none yet) and the copy itself (for owner rows:
 * addresses, hosts, live). */
int64_t rmap_revision(const struct rmap *m);
const struct cmap_table *rmap_table(const struct rmap *m);

/* The owner of placement hash `place` in pool (0 if none), and the leaf. */
unsigned rmap_owner(const struct rmap *m, enum cfg_pool pool, uint64_t place,
                    struct rmap_route *out);
/* A MOVED: leaf/bits of pool is served by `owner` as of `epoch`.  1 if it
 * became an override, 0 if it was not newer than what this process holds
 * (or no room), HKV_EINVAL if the leaf does not fit its bits or the owner
 * is not an owner of the pool in the copy. */
int rmap_moved(struct rmap *m, enum cfg_pool pool, uint32_t leaf, uint8_t bits, int64_t epoch,
               unsigned owner);
/* Overrides held for pool. */
unsigned rmap_overrides(const struct rmap *m, enum cfg_pool pool);
/* 1 if owner n serves a leaf of the copy or an override. */
int rmap_serves(const struct rmap *m, unsigned n);

#endif
