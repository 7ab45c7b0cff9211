/*
 * owner_own_wait.c - the waits a leaf of this owner can be under (the
 * ownership module's other half; owner_own_int.h): a move's marks (their
 * block), a planned hand-over's hold, a restarted owner's wait for the
 * promotion of the leaves that had in-sync followers (CLUSTER.md §7), and
 * the lease fence of a cluster primary that cannot prove its lease.  A
 * request on a leaf that waits is parked (owner_fence.c, owner_park.c).
 */
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/owner/owner_own_int.h"

int owner_own_any_block(const struct owner *o)
{
    if (o->own != NULL && (o->own->await_rev != 0 || o->own->lease_fenced || o->own->hold.block))
        return 1;
    for (int i = 0; o->own != NULL && i < OWN_MAX_MARKS; i++)
        if (o->own->marks[i].used && o->own->marks[i].block != OWN_BLOCK_NONE)
            return 1;
    return 0;
}

int owner_own_blocks(const struct owner *o, uint64_t place, int write)
{
    if (o->own != NULL && o->own->lease_fenced && owner_own_map(o) != NULL) {
        const struct cmap_leaf *l = cmap_lookup(o->own->snap, o->pool, place);
        if (l != NULL && l->nisr > 0 && l->owner == o->own->number)
            return 1;
    }
    if (o->own != NULL && o->own->await_rev != 0 && owner_own_map(o) != NULL) {
        const struct cmap_leaf *l = cmap_lookup(o->own->snap, o->pool, place);
        if (l != NULL && l->owner == o->own->number && l->nisr > 0 &&
            l->epoch <= o->own->await_rev)
            return 1;
    }
    if (o->own != NULL && o->own->hold.block != OWN_BLOCK_NONE &&
        covers(o->own->hold.start, o->own->hold.bits, place) &&
        (write || o->own->hold.block == OWN_BLOCK_ALL))
        return 1;
    const struct own_mark *m = owner_own_mark_at(o, place);
    return m != NULL && (m->block == OWN_BLOCK_ALL || (write && m->block == OWN_BLOCK_WRITES));
}

void owner_own_hold(struct owner *o, uint32_t start, uint8_t bits, int block)
{
    if (o->own == NULL)
        return;
    o->own->hold.start = start;
    o->own->hold.bits = bits;
    o->own->hold.block = (uint8_t)block;
}

/* The first map of this process: its leaves with followers wait (see
 * struct owner_own); later maps end the waits they moved past. */
void own_settle_awaits(struct owner *o)
{
    struct owner_own *w = o->own;
    if (w->number == 0)
        return;
    if (!w->first_map_seen) {
        w->first_map_seen = 1;
        w->await_rev = w->snap->revision;
    }
    if (w->await_rev == 0)
        return;
    size_t waiting = 0;
    for (uint32_t i = 0; i < w->snap->nleaves[o->pool]; i++) {
        const struct cmap_leaf *l = &w->snap->leaves[o->pool][i];
        waiting += l->owner == w->number && l->nisr > 0 && l->epoch <= w->await_rev;
    }
    if (waiting == 0) {
        w->await_rev = 0; /* every such leaf was promoted away or lost its set */
    } else if (!w->awaits_logged) {
        w->awaits_logged = 1;
        log_notice("%zu leaves have in-sync followers: not served until the map moves past "
                   "revision %lld (a follower holds what this restarted owner lost)", waiting,
                   (long long)w->await_rev);
    }
}

/* The lease check (see struct owner_own); 1 when it changed. */
int own_check_lease(struct owner *o)
{
    struct owner_own *w = o->own;
    if (o->opts.local_map || o->ctx->cmap == NULL)
        return 0;
    struct cmap_health h;
    cmap_health_get(o->ctx->cmap, &h);
    /* lease_renewed_mono_ms is when the renewal was ASKED (etcd renewed no
     * earlier): the margin is for this check's period (OWN_POLL_MS) and the
     * clocks' slop, not for a round trip.  By the monotonic clock: etcd lets
     * the lease go TTL after the last keepalive whatever this host's wall
     * clock does (set 10 s back, the wall clock kept an old primary serving,
     * and acknowledging, 10 s after its follower was promoted) */
    int64_t margin = 500;
    int64_t now = clock_mono_ms();
    int fenced = h.lease_ttl_ms > 0 && h.lease_renewed_mono_ms > 0 &&
                 now > h.lease_renewed_mono_ms + h.lease_ttl_ms - margin;
    if (fenced == w->lease_fenced)
        return 0;
    w->lease_fenced = fenced;
    if (fenced)
        log_warning("the host lease was last renewed %lld ms ago (TTL %lld ms): leaves with "
                    "followers are not served until it is renewed",
                    (long long)(now - h.lease_renewed_mono_ms), (long long)h.lease_ttl_ms);
    else
        log_notice("the host lease is renewed: serving every leaf again");
    return 1;
}
