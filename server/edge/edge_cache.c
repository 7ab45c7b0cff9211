/*
 * edge_cache.c - how the edge uses the colo segment (server/colo/cache.h): the
 * lookup that answers most reads without asking anyone, filling the segment
 * from owner answers, keeping it right after this edge's writes, and taking
 * the owners' pushes.
 *
 * What goes in and for how long is decided here, from the key's class:
 *   found      fresh_until = base + fresh, keep_until = now + keep, both
 *              capped by the key's own expiry.  base is a moment at or before
 *              the owner read or applied the value: the fetch's send time for
 *              a fill, the write's first send time for this edge's own write;
 *              for a push, its arrival (so a push's delay adds to the
 *              staleness bound: edge_read.c);
 *   fresh 0    not cached, unless the key is measured hot (reads/s past
 *              hotkey-threshold): then it is stored already stale with the
 *              class's keep, so readers get the last value and one refresh
 *              per colo is in flight at a time;
 *   not found  cached for negative-ttl from the fetch's send time, with the
 *              owner's stamp for the absence (its tombstone's, 0 if none).
 * Timeouts, errors and malformed answers are never cached (the callers only
 * fill from VALUE and NOTFOUND).
 *
 * A write this edge made updates the segment from the owner's answer before
 * the client is answered, so a client reads its own writes through any edge
 * of the colo.  Where the new value is not known here (DEL, INCRBY, EXPIRE,
 * a KEEPTTL set ...) the key gets a tombstone with the write's version (the owner's), whether
 * or not the segment held it: never served, and no fetch that started
 * before the write can put the old value back.
 *
 * How long a tombstone must guard.  A fetch that can be overtaken by a write
 * was sent before the write was acknowledged, so before the tombstone was
 * made.  A fill is stored only if its fetch was sent less than
 * EDGE_FILL_HORIZON_MS before (edge_cache_fill checks it; later answers still
 * answer their readers, they are just not cached), and a tombstone guards
 * for EDGE_FILL_HORIZON_MS: so every fill that started before the write is
 * stored, if at all, while the tombstone still stands, whatever the link
 * timeouts, a reload of them, or an edge stalled between the two.  10 s is
 * the default write-timeout (every owner request's timeout, reads included)
 * plus a margin, so in practice only fetches that time out anyway are not
 * cached.  Pushes carry no send time: an older push is one the owner wrote
 * on the colo's push link before the write, read by the edge's loop in the
 * same round or the next, far inside the horizon.
 *
 * A fill needs this edge's push link to the key's owner greeted (when owners
 * push): an owner pushes a write only to the push links it knows, so a value
 * read over the read link of an owner that has not yet taken this edge's
 * push link (both are opened together, the first time an edge of another
 * host needs that owner, or after the owner restarted) could stay cached,
 * unpushed, for its whole fresh time.  Such an answer still answers its
 * readers; it is not cached, but it leaves a tombstone at its version (or,
 * for an absence that carries none, at the version the segment held), so
 * that no edge of the colo serves an older value after it: the colo's
 * other edges may have their push links and serve the segment as fresh.
 *
 * Every write, push and value fill applied here is also noted in the colo's
 * change ring (server/colo/changes.h), after the segment holds it, so that
 * readers held on the key on any edge of the colo (HTTP long polls and
 * watches) wake; a record carries the version, so a fill that only
 * refreshes a version the readers have wakes none of them.
 */
#include "server/edge/edge_cache.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/colo/cache.h"
#include "server/colo/changes.h"
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/edge/edge_owners.h"

static int64_t now_ms(void)
{
    return clock_mono_ms();
}

/* The module's state: the head the read paths use, then its own. */
struct cache_state {
    struct edge_cache pub;
    uint64_t lock_seq;            /* refresh-lock tokens */
    struct edge_cache_opts opts;
};

static inline struct cache_state *cst(const struct edge *e)
{
    return (struct cache_state *)e->cache;
}

int edge_cache_setup(struct edge *e, const struct edge_cache_opts *opts)
{
    struct cache_state *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return -1;
    st->opts = *opts;
    e->cache = &st->pub;
    e->cache->cache = e->ectx->cache;
    if (e->cache->cache != NULL && cache_attach(e->cache->cache) != HKV_OK) {
        log_warning("the colo cache segment failed validation; serving without it");
        e->cache->cache = NULL;
    }
    /* The change ring: notes from here (writes, pushes), read by the HTTP
     * front door's held readers (edge_http_wake.c).  Without it nothing is
     * noted and held readers wait for their deadlines. */
    e->cache->changes = e->ectx->changes;
    if (e->cache->changes != NULL &&
        changes_attach(e->cache->changes, (uint32_t)e->ctx->index) != HKV_OK) {
        log_warning("the colo change ring failed validation; long polls wake at their deadline");
        e->cache->changes = NULL;
    }
    return 0;
}

void edge_cache_reload(struct edge *e, const struct edge_cache_opts *opts)
{
    if (e->cache != NULL)
        cst(e)->opts = *opts;
}

void edge_cache_teardown(struct edge_cache **cp)
{
    struct edge_cache *c = *cp;
    if (c == NULL)
        return;
    buf_deinit(&c->cval);
    buf_deinit(&c->scratch);
    free(c);
    *cp = NULL;
}

uint64_t edge_cache_token(struct edge *e)
{
    return ((uint64_t)(uint32_t)getpid() << 32) | (++cst(e)->lock_seq & 0xffffffffu);
}

int64_t edge_lock_ttl(const struct edge *e)
{
    return cst(e)->opts.write_timeout_ms + 1000;
}

/* Times for a value of class cls stored now that the owner read or applied
 * at base or later (base <= now); 0 = do not cache (edge_cache_policy.h).
 * The key's rate is measured only for a fresh-0 class, the wall clock read
 * only for a key with an expiry. */
static int lifetimes(struct edge *e, const struct cfg_class *cls, uint64_t khash, int64_t base,
                     int64_t now, int64_t expire_at, int64_t *fresh_until, int64_t *keep_until)
{
    int hot = cls->fresh_ms == 0 &&
              cache_sketch_rate(e->cache->cache, khash, now) >= (uint64_t)cst(e)->opts.hotkey_threshold;
    return edge_cache_lifetimes(cls->fresh_ms, cls->keep_ms, hot, base, now, expire_at,
                                expire_at > 0 ? clock_unix_ms() : 0, fresh_until, keep_until);
}

/* The entry of a value the owner gave (a read's answer, a push, or a write's
 * own new value), with the lifetimes lifetimes() chose. */
static struct cache_entry value_entry(const char *key, size_t klen, uint64_t hash,
                                      const struct wire_slice *v, hkv_stamp stamp, int64_t fu,
                                      int64_t ku, int64_t expire_at)
{
    return (struct cache_entry){.key = key,
                                .klen = klen,
                                .khash = hash,
                                .val = v->p,
                                .vlen = v->len,
                                .stamp = stamp,
                                .fresh_until = fu,
                                .keep_until = ku,
                                .expire_at = expire_at};
}

/* The owner says key is absent but gives no version (an MGET's absent keys,
 * an owner that holds no tombstone): the value the segment holds, if any,
 * may be one a lost or delayed push should have removed (a delete through
 * another host while this host's push link was cut), so it is made a
 * tombstone at its own version: never served again, and any answer newer
 * than it replaces it.  An answer older than that value costs one more
 * fetch, never a wrong read. */
static void forget_held(struct edge *e, const char *key, size_t klen, uint64_t hash, int64_t now)
{
    struct hkv_buf tmp = HKV_BUF_INIT;
    struct cache_hit hit;
    if (cache_get(e->cache->cache, key, klen, hash, now, &tmp, &hit) == HKV_OK && !hit.negative &&
        hit.stamp != 0)
        cache_invalidate(e->cache->cache, key, klen, hash, hit.stamp, now + EDGE_FILL_HORIZON_MS,
                         now);
    buf_deinit(&tmp);
}

/* Whether the owner of the key routed to rt pushes its writes to this edge
 * now (see above).  From the fill's route: no second hash or class lookup. */
static int push_ready(struct edge *e, const struct route *rt)
{
    if (!cst(e)->opts.owner_push)
        return 1;
    uint32_t leaf;
    uint8_t bits;
    struct owner_ref *o = edge_owner_of_place(e, rt->pool, rt->place, &leaf, &bits);
    if (o == NULL || o->link[WIRE_ROLE_PUSH] == NULL)
        return 0;
    if (elink_greeted(o->link[WIRE_ROLE_PUSH]))
        return 1;
    cache_count(e->cache->cache, CACHE_CTR_cache_not_cached_unpushed, 1);
    return 0;
}

void edge_cache_fill(struct edge *e, const char *key, size_t klen, const struct route *rt,
                     const struct wire_msg *m, int64_t sent_ms)
{
    if (e->cache->cache == NULL)
        return;
    int64_t now = now_ms(), fu, ku;
    if (!edge_cache_fill_in_horizon(sent_ms, now))
        return; /* a tombstone made since it was sent may be gone: not stored */
    if (!push_ready(e, rt)) {
        /* Not cached, but no older value stays servable either. */
        hkv_stamp v = m->type == WIRE_VALUE      ? m->u.value.stamp
                      : m->type == WIRE_NOTFOUND ? m->u.notfound.stamp
                                                 : 0;
        if (v != 0)
            cache_invalidate(e->cache->cache, key, klen, rt->hash, v, now + EDGE_FILL_HORIZON_MS,
                             now);
        else if (m->type == WIRE_NOTFOUND)
            forget_held(e, key, klen, rt->hash, now);
        return;
    }
    if (m->type == WIRE_VALUE) {
        if (!lifetimes(e, rt->cls, rt->hash, sent_ms, now, (int64_t)m->u.value.expire_ms, &fu,
                       &ku))
            return;
        struct cache_entry ce = value_entry(key, klen, rt->hash, &m->u.value.value,
                                            m->u.value.stamp, fu, ku,
                                            (int64_t)m->u.value.expire_ms);
        int rc = cache_put(e->cache->cache, &ce, now);
        if (rc == HKV_ETOOBIG)
            cache_count(e->cache->cache, CACHE_CTR_cache_not_cached_too_big, 1);
        if (rc == HKV_OK) /* a version a missed push never brought wakes its readers too */
            changes_note_fill(e->cache->changes, key, klen, rt->hash, m->u.value.stamp);
    } else if (m->type == WIRE_NOTFOUND) {
        int64_t until;
        /* The owner's stamp for the absence (its tombstone's) orders this
         * "not found" after the delete it comes from, so it replaces the
         * delete's invalidation marker and a deleted hot key stays cached. */
        if (m->u.notfound.stamp == 0)
            forget_held(e, key, klen, rt->hash, now);
        if (edge_cache_negative_until(cst(e)->opts.negative_ttl_ms, sent_ms, now, &until))
            cache_put(e->cache->cache,
                      &(struct cache_entry){.key = key,
                                            .klen = klen,
                                            .khash = rt->hash,
                                            .negative = 1,
                                            .stamp = m->u.notfound.stamp,
                                            .fresh_until = until,
                                            .keep_until = until},
                      now);
    }
}

void edge_cache_wrote(struct edge *e, const char *key, size_t klen, uint64_t hash,
                      const struct wire_slice *v, int64_t expire_at, hkv_stamp version,
                      int64_t base_ms, int64_t now, uint64_t origin)
{
    if (e->cache->cache == NULL || version == 0)
        return;
    /* The write's route gave the hash; only a known value needs the class
     * (its lifetimes), and nothing needs the owner. */
    int64_t fu, ku;
    int put = 0;
    if (v != NULL && lifetimes(e, router_class(e->owners->router, key, klen), hash, base_ms, now,
                               expire_at, &fu, &ku)) {
        struct cache_entry ce = value_entry(key, klen, hash, v, version, fu, ku, expire_at);
        put = cache_put(e->cache->cache, &ce, now) == HKV_OK;
    }
    if (!put)
        cache_invalidate(e->cache->cache, key, klen, hash, version, now + EDGE_FILL_HORIZON_MS, now);
    /* wakes the key's readers and tells its trackers, in the colo */
    changes_note_key(e->cache->changes, key, klen, hash, version, origin);
}

void edge_cache_doubt(struct edge *e, const char *key, size_t klen, uint64_t hash)
{
    if (e->cache == NULL || e->cache->cache == NULL)
        return; /* no colo cache (the op engine's unit tests) */
    int64_t now = now_ms();
    struct hkv_buf v = HKV_BUF_INIT;
    struct cache_hit hit;
    if (cache_get(e->cache->cache, key, klen, hash, now, &v, &hit) == HKV_OK)
        cache_invalidate(e->cache->cache, key, klen, hash, hit.stamp + 1,
                         now + EDGE_FILL_HORIZON_MS, now);
    buf_deinit(&v);
}

int edge_cache_unpushed(struct edge *e, const char *key, size_t klen, int64_t now)
{
    return !cst(e)->opts.owner_push || edge_push_gap(e, key, klen, now);
}

void edge_cache_push_gap(void *arg)
{
    struct owner_ref *o = arg;
    changes_note_flush(o->e->cache->changes);
}

void edge_cache_pushed(void *arg, const struct wire_msg *m)
{
    struct owner_ref *o = arg;
    struct edge *e = o->e;
    if (e->cache->cache == NULL)
        return;
    cache_count(e->cache->cache, CACHE_CTR_pushes_received, 1);
    if (m->type == WIRE_INVALIDATE) {
        struct wire_slice k = m->u.invalidate.key;
        int64_t now = now_ms();
        uint64_t h = router_hash(k.p, k.len);
        cache_invalidate(e->cache->cache, k.p, k.len, h, m->u.invalidate.stamp,
                         now + EDGE_FILL_HORIZON_MS, now);
        changes_note_key(e->cache->changes, k.p, k.len, h, m->u.invalidate.stamp, 0);
        return;
    }
    struct wire_slice k = m->u.push.key;
    struct route rt;
    router_route(e->owners->router, k.p, k.len, &rt);
    int64_t now = now_ms(), fu, ku;
    int rc;
    if (lifetimes(e, rt.cls, rt.hash, now, now, (int64_t)m->u.push.expire_ms, &fu, &ku)) {
        struct cache_entry ce = value_entry(k.p, k.len, rt.hash, &m->u.push.value, m->u.push.stamp,
                                            fu, ku, (int64_t)m->u.push.expire_ms);
        rc = cache_put(e->cache->cache, &ce, now);
    } else
        rc = cache_invalidate(e->cache->cache, k.p, k.len, rt.hash, m->u.push.stamp,
                              now + EDGE_FILL_HORIZON_MS, now);
    if (rc != HKV_ESTALE) /* an older push changes nothing */
        changes_note_key(e->cache->changes, k.p, k.len, rt.hash, m->u.push.stamp, 0);
}
