/*
 * edge_track.c - CLIENT TRACKING's table and invalidations (edge_track.h).
 *
 * The table (edge_track_table.c): keys by hash, each naming the sessions
 * that read it, so an invalidation costs the key's readers.
 *
 * Sending.  Bytes go to the target with slot_tail_out (after what it is
 * owed) and the target is marked; one deferred event per loop turn flushes
 * the marked connections, because a flush may close a connection and the
 * callers are in the middle of the feed or a dispatch.
 */
#include "server/edge/edge_track.h"

#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/router.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_feed.h"
#include "server/edge/edge_health.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_track_int.h"

/* ---- events -------------------------------------------------------------------- */

void track_on_flush(evutil_socket_t fd, short what, void *arg)
{
    struct edge *e = arg;
    struct edge_track *t = e->track;
    track_limit(t); /* out of every dispatch: see edge_track_before */
    for (struct track_sess *s = t->sessions; s != NULL && t->nflush_after > 0; s = s->next)
        if (s->flush_after) {
            s->flush_after = 0;
            t->nflush_after--;
            track_send_flush(t, s);
        }
    t->nflush_after = 0;
    /* conn_flush may close a connection: edge_track_conn_gone then clears
     * its entry (the array itself does not move while it is walked). */
    for (size_t i = 0; i < t->ndirty; i++) {
        struct conn *c = t->dirty[i];
        if (c != NULL) {
            sess_of(c)->track_dirty = 0;
            conn_flush(c); /* past its output limits it is closed */
        }
    }
    t->ndirty = 0;
    if (t->dirty_all) {
        t->dirty_all = 0;
        for (struct conn *c = e->conns->list, *next; c != NULL; c = next) {
            next = c->next;
            if (sess_of(c)->track_dirty) {
                sess_of(c)->track_dirty = 0;
                conn_flush(c);
            }
        }
    }
    track_publish(t);
}

/* Every reader of key k is told and the key forgotten (its clients read it
 * again to be told again).  origin: the writing client (NOLOOP); hash:
 * the key's router_hash (NOLOOP's held-back pushes). */
static void invalidate_key(struct edge_track *t, struct tkey *k, uint64_t origin,
                           hkv_stamp version, uint64_t hash)
{
    uint64_t one;
    uint32_t n;
    const uint64_t *ids = track_key_ids(k, &one, &n);
    struct hkv_buf *msg = &t->scratch; /* [key]: the same bytes to every reader */
    buf_reset(msg);
    resp_add_array(msg, 1);
    resp_add_bulk(msg, k->key, k->klen);
    for (uint32_t i = 0; i < n; i++) {
        struct track_sess *s = track_sess_find(t, ids[i]);
        if (s == NULL)
            continue; /* gone: left for the sweep */
        if (s->noloop && origin != 0 && origin == s->c->id)
            continue;
        if (origin == 0 && track_defer(t, s, hash, version, k->key, k->klen))
            continue;
        track_send_msg(t, s, buf_head(msg), buf_unread(msg));
    }
    track_key_free(t, k);
}

/* Every tracking client is sent a flush and every key forgotten. */
static void flush_all(struct edge_track *t)
{
    for (struct track_sess *s = t->sessions; s != NULL; s = s->next)
        track_send_flush(t, s);
    track_table_clear(t);
}

/* BCAST clients whose prefix the change's key starts with. */
static void bcast(struct edge_track *t, const struct change *c)
{

    /* A write comes twice (its own edge's answer, then the owner's push):
     * a version of a key already broadcast, or an older one, is not again. */
    struct tseen *seen = &t->seen[c->hash & (TRACK_SEEN - 1)];
    if (seen->hash == c->hash && seen->version >= c->version)
        return;
    seen->hash = c->hash;
    seen->version = c->version;
    size_t have = c->klen < CHANGES_KEY_MAX ? c->klen : CHANGES_KEY_MAX;
    for (struct track_sess *s = t->bcasts; s != NULL; s = s->bnext) {
        if (s->noloop && c->origin != 0 && c->origin == s->c->id)
            continue;
        for (uint32_t i = 0; i < s->nprefix; i++) {
            const struct tprefix *px = &s->prefix[i];
            if (px->len > c->klen)
                continue;
            if (px->len > have) { /* cannot be decided on the bytes carried */
                track_send_flush(t, s);
                break;
            }
            if (memcmp(px->p, c->key, px->len) != 0)
                continue;
            if (have < c->klen)
                track_send_flush(t, s); /* the key's name is not all in the record */
            else if (c->origin != 0 || !track_defer(t, s, c->hash, c->version, c->key, c->klen))
                track_send_key(t, s, c->key, c->klen);
            break;
        }
    }
}

static void on_changed(void *arg, const struct change *c)
{
    struct edge_track *t = arg;
    if (c->flags & CHANGES_F_FILL)
        return; /* a read's answer, not a change (a missed push is a FLUSH record) */
    if (c->origin != 0 && t->ndeferring > 0)
        track_own_write(t, c->origin, c->hash, c->version);
    if (t->nbcast > 0)
        bcast(t, c);
    if (t->nkeys == 0)
        return;
    if (c->klen > CHANGES_KEY_MAX) { /* matched on hash and the bytes carried */
        struct tkey *k = t->table[(uint32_t)c->hash & (t->nbuckets - 1)];
        while (k != NULL) {
            struct tkey *next = k->bnext;
            if (k->hash == (uint32_t)c->hash && k->klen == c->klen &&
                memcmp(k->key, c->key, CHANGES_KEY_MAX) == 0)
                invalidate_key(t, k, c->origin, c->version, c->hash);
            k = next;
        }
        return;
    }
    struct tkey *k = c->klen > 0 ? track_key_find(t, c->key, c->klen, c->hash) : NULL;
    if (k != NULL) {
        invalidate_key(t, k, c->origin, c->version, c->hash);
        return;
    }
    if (c->klen == 0) { /* a record without its key (none is written today): by hash */
        struct tkey **b = &t->table[(uint32_t)c->hash & (t->nbuckets - 1)];
        for (k = *b; k != NULL; k = *b) {
            while (k != NULL && k->hash != (uint32_t)c->hash)
                k = k->bnext;
            if (k == NULL)
                break;
            invalidate_key(t, k, c->origin, c->version, c->hash);
        }
    }
}

static void on_caught_up(void *arg)
{
    struct edge_track *t = arg;
    if (t->ndeferring > 0)
        track_release(t);
}

static void on_lost(void *arg)
{
    flush_all(arg);
}

const struct feed_hooks track_feed_hooks = {
    .changed = on_changed, .lost = on_lost, .caught_up = on_caught_up};

/* ---- the bound ------------------------------------------------------------------ */

/* Over tracking-table-max-keys: random keys are invalidated (their clients
 * told, as if they had changed) until it fits, as Redis's
 * trackingLimitUsedSlots. */
void track_limit(struct edge_track *t)
{
    while (t->max_keys > 0 && t->nkeys > (uint64_t)t->max_keys) {
        t->rnd = t->rnd * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t b = (size_t)(t->rnd >> 33) & (t->nbuckets - 1);
        for (size_t i = 0; i < t->nbuckets && t->table[b] == NULL; i++)
            b = (b + 1) & (t->nbuckets - 1);
        if (t->table[b] == NULL)
            return;
        invalidate_key(t, t->table[b], 0, 0, 0);
        t->evicted++;
    }
}

/* ---- keys whose changes are not pushed to this colo ---------------------------- */

/* An unpushed key's freshness ended: its trackers (by the table, and the
 * BCAST clients whose prefix it has) are told, as if it changed. */
static void due_key(struct edge_track *t, const char *key, size_t klen)
{
    struct tkey *k = track_key_find(t, key, klen, router_hash(key, klen));
    if (k != NULL)
        invalidate_key(t, k, 0, 0, 0);
    for (struct track_sess *s = t->bcasts; s != NULL; s = s->bnext)
        for (uint32_t i = 0; i < s->nprefix; i++)
            if (s->prefix[i].len <= klen && memcmp(s->prefix[i].p, key, s->prefix[i].len) == 0) {
                track_send_key(t, s, key, klen);
                break;
            }
}

void track_on_due(evutil_socket_t fd, short what, void *arg)
{
    struct edge_track *t = arg;
    int64_t now = clock_mono_ms();
    struct tdue *d;
    while ((d = track_due_pop(t, now)) != NULL) {
        due_key(t, d->key, d->klen);
        free(d);
    }
    if (t->ndeferring > 0) {
        edge_feed_drain(t->e, FEED_TRACK); /* their own records first */
        track_release(t);
    }
    int sweeping = t->sweep_left > 0 && track_sweep_step(t);
    if (t->ndue > 0 || t->ndeferring > 0 || sweeping)
        track_due_arm(t);
    track_publish(t);
}

void edge_track_unpushed(struct edge *e, const char *key, size_t klen, int64_t until_ms)
{
    struct edge_track *t = e->track;
    if (t == NULL)
        return;
    if (track_due_add(t, key, klen, router_hash(key, klen), until_ms, clock_mono_ms()) != 0) {
        due_key(t, key, klen); /* cannot be timed: told now */
        return;
    }
    track_due_arm(t);
}

/* ---- the command path ----------------------------------------------------------- */

void edge_track_before(struct conn *c, const struct cmd_def *d, int argc,
                       const struct resp_slice *argv)
{
    struct track_sess *s = sess_of(c)->track;
    struct edge *e = c->e;
    struct edge_track *t = e->track;
    edge_feed_drain(e, FEED_TRACK);
    int caching = s->caching;
    if (d->flags & CMD_F_READ)
        s->flushed = 0; /* it may cache again */
    /* CLIENT CACHING applies to the next command only (as Redis's
     * resetClient: not past a CLIENT subcommand, nor inside MULTI) */
    if (d->id != CMD_CLIENT && sess_of(c)->tx == NULL)
        s->caching = 0;
    if (!s->on || !(d->flags & CMD_F_READ) || (d->flags & CMD_F_WRITE))
        return;
    if ((s->optin && caching != 1) || (s->optout && caching == 2))
        return;
    int first, last;
    int n = cmd_key_range(d, argc, &first, &last);
    int64_t now = clock_mono_ms();
    /* An owner marked silent may not push what changes (its link cut, its
     * pushes held): what is read meanwhile is told one fresh later, as a
     * key whose push link is down. */
    int silent = n > 0 && edge_health_any_silent(e, now);
    for (int i = first; n > 0 && i <= last; i += d->step) {
        if (!s->bcast && track_remember(t, s, argv[i].p, argv[i].len) != 0) {
            /* out of memory: a flush, after this command's reply (before it,
             * the client would cache the value the edge cannot tell it of) */
            t->nflush_after += !s->flush_after;
            s->flush_after = 1;
            event_active(t->flush, EV_TIMEOUT, 1);
            continue;
        }
        /* BCAST clients cache what they read too: the same timer */
        if (silent || edge_cache_unpushed(e, argv[i].p, argv[i].len, now)) {
            const struct cfg_class *cls = router_class(e->owners->router, argv[i].p, argv[i].len);
            edge_track_unpushed(e, argv[i].p, argv[i].len, now + (cls ? cls->fresh_ms : 0));
        }
    }
    /* Not now: a key this command just remembered could be the victim, told
     * before the reply that fills the client's cache, and forgotten (the
     * client would cache it for good).  After the dispatch, its reply is
     * placed (written or owed), so an eviction's push follows it. */
    if (t->max_keys > 0 && t->nkeys > (uint64_t)t->max_keys)
        event_active(t->flush, EV_TIMEOUT, 1);
    track_publish(t);
}

void edge_track_stats(const struct edge *e, struct track_stats *out)
{
    const struct edge_track *t = e->track;
    memset(out, 0, sizeof(*out));
    if (t == NULL)
        return;
    *out = (struct track_stats){.clients = t->nsessions, .keys = t->nkeys, .items = t->nitems,
                                .prefixes = t->nprefixes, .invalidations = t->invalidations,
                                .flushes = t->flushes, .evicted = t->evicted};
}
