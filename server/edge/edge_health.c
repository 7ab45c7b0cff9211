/*
 * edge_health.c - one edge's part in the colo's owner health
 * (edge_health.h): reading the mark for the read path, reporting answers
 * and silences into the colo segment, and probing owners marked silent.
 *
 * The design choice: the mark lives in the colo segment, not in the edge,
 * because the cost it removes is per key and per edge (each stale key, in
 * each edge, used to learn again by waiting a miss-wait that its owner is
 * stopped).  The edge keeps only what it needs to probe: which marked
 * owners it has seen, and whether its own PING to each is still out.  The
 * probe timer runs only while this edge has seen a mark; with none it is
 * not armed, so a healthy colo pays nothing but one load per stale-by-
 * allowance read and one (mostly read-only) word per fetch answer.
 *
 * A probe travels on the READ link like a fetch, so the owner answers it
 * in order with the fetches sent before it: a stopped owner that resumes
 * answers the oldest pending request of the colo first, and whichever
 * answer reaches an edge first clears the mark.  A probe that times out
 * (write-timeout) or whose link breaks is simply not out any more; the
 * next claim sends another.
 */
#include "server/edge/edge_health.h"

#include <stdlib.h>

#include "server/colo/cache.h"
#include "server/colo/cache_health.h"
#include "server/colo/changes.h"
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/topo.h"
#include "server/edge/edge_cache.h"

struct eh_owner {
    struct ehealth *h;
    int watching;                 /* marked when last looked at: probe it */
    int probing;                  /* this edge's PING to it is out */
};

struct ehealth {
    struct edge *e;
    struct event *timer;
    int nwatch;                   /* owners watched */
    int n;                        /* slots: e->owners->n */
    int64_t interval_ms;          /* owner-probe-interval (edge_health_setup, _reload) */
    int64_t silent_checked_ms;    /* edge_health_any_silent: when the slots were last read */
    int any_silent;               /* ... and whether one was marked then */
    struct eh_owner own[];
};

static int64_t interval_ms(const struct edge *e)
{
    return e->health->interval_ms;
}

static int64_t trust_ms(const struct edge *e)
{
    return 3 * interval_ms(e);
}

static int slot_of(const struct edge *e, const struct owner_ref *o)
{
    if (e->health == NULL || e->cache->cache == NULL || o == NULL || o < e->owners->ref ||
        o >= e->owners->ref + e->health->n)
        return -1;
    return (int)(o - e->owners->ref);
}

static void arm(struct ehealth *h)
{
    if (evtimer_pending(h->timer, NULL))
        return;
    int64_t ms = interval_ms(h->e);
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(h->timer, &tv);
}

static void watch(struct ehealth *h, int g)
{
    if (!h->own[g].watching) {
        h->own[g].watching = 1;
        h->nwatch++;
    }
    arm(h);
}

static const char *owner_name(const struct owner_ref *o, char *buf, size_t len)
{
    if (o->number != 0)
        snprintf(buf, len, "%u (%s/%d)", o->number, topo_pool_name(o->pool), o->index);
    else
        snprintf(buf, len, "%s/%d", topo_pool_name(o->pool), o->index);
    return buf;
}

int edge_owner_silent(struct edge *e, const struct owner_ref *o, int64_t now)
{
    int g = slot_of(e, o);
    if (g < 0)
        return 0;
    struct cache_health_view v;
    cache_health_get(e->cache->cache, (unsigned)g, now, &v);
    if (!v.marked)
        return 0;
    if (!e->health->own[g].watching)
        watch(e->health, g); /* take a share of the probing: the marker may be gone */
    return v.probed != 0 && now - v.probed <= trust_ms(e);
}

void edge_health_answered(struct edge *e, const struct owner_ref *o)
{
    int g = slot_of(e, o);
    if (g < 0)
        return;
    int64_t now = clock_mono_ms();
    struct cache_health_view v;
    cache_health_get(e->cache->cache, (unsigned)g, now, &v);
    if (cache_health_answered(e->cache->cache, (unsigned)g, now) && v.marked) {
        char name[64];
        log_notice("owner %s answers again: no longer marked silent (marked %lld ms ago)",
                   owner_name(o, name, sizeof(name)), (long long)(now - v.since));
    }
}

int edge_health_unanswered(struct edge *e, const struct owner_ref *o, int64_t sent_ms,
                           int64_t now)
{
    int g = slot_of(e, o);
    if (g < 0 || !cache_health_unanswered(e->cache->cache, (unsigned)g, sent_ms, now))
        return 0;
    char name[64];
    log_warning("owner %s marked silent: a request sent %lld ms ago is unanswered; its stale "
                "cached values are served at once until it answers",
                owner_name(o, name, sizeof(name)), (long long)(now - sent_ms));
    watch(e->health, g);
    /* Its pushes do not come either (a cut link holds them, TCP resends
     * late): the colo's tracking clients are told everything, as after a
     * push link gap, so none keeps a value past the bound meanwhile. */
    changes_note_flush(e->cache->changes);
    e->health->any_silent = 1; /* this edge's own mark counts at once */
    e->health->silent_checked_ms = now;
    return 1;
}

int edge_health_any_silent(struct edge *e, int64_t now)
{
    struct ehealth *h = e->health;
    if (h == NULL)
        return 0;
    if (now - h->silent_checked_ms >= EDGE_SILENT_CHECK_MS) {
        h->silent_checked_ms = now;
        h->any_silent = edge_health_silent_count(e) > 0;
    }
    return h->any_silent;
}

int edge_health_silent_count(struct edge *e)
{
    int n = 0;
    int64_t now = clock_mono_ms();
    for (int g = 0; e->health != NULL && e->cache->cache != NULL && g < e->health->n; g++) {
        struct cache_health_view v;
        cache_health_get(e->cache->cache, (unsigned)g, now, &v);
        n += v.marked;
    }
    return n;
}

/* ---- probing -------------------------------------------------------------------- */

static void probe_cb(void *arg, int status, const struct wire_msg *m)
{
    struct eh_owner *eo = arg;
    struct ehealth *h = eo->h;
    eo->probing = 0;
    if (status == HKV_OK)
        edge_health_answered(h->e, &h->e->owners->ref[eo - h->own]);
}

/* o's READ link, if a probe can go out on it now. */
static struct elink *probe_link(struct ehealth *h, int g)
{
    struct owner_ref *o = edge_owner_at(h->e, g);
    return o != NULL ? edge_owner_link(o, WIRE_ROLE_READ) : NULL;
}

static void probe(struct ehealth *h, int g, struct elink *l)
{
    uint64_t id;
    struct hkv_buf *b = elink_out(l, &id);
    if (wire_put_ping(b, id) != HKV_OK || elink_commit(l, id, probe_cb, &h->own[g]) != HKV_OK)
        return;
    h->own[g].probing = 1;
    cache_count(h->e->cache->cache, CACHE_CTR_owner_probes, 1);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct ehealth *h = arg;
    struct edge *e = h->e;
    int64_t now = clock_mono_ms();
    for (int g = 0; g < h->n && h->nwatch > 0; g++) {
        struct eh_owner *eo = &h->own[g];
        if (!eo->watching)
            continue;
        struct cache_health_view v;
        cache_health_get(e->cache->cache, (unsigned)g, now, &v);
        if (!v.marked) {
            eo->watching = 0; /* it answered (some edge heard it) */
            h->nwatch--;
            continue;
        }
        /* The colo's turn, claimed only by an edge that then has a probe
         * out (edge_read.c relies on it): its PING still out counts (a
         * second one would only queue behind it), else it sends one; an
         * edge with no link to the owner leaves the turn to others. */
        struct elink *l = eo->probing ? NULL : probe_link(h, g);
        if ((eo->probing || l != NULL) &&
            cache_health_probe_claim(e->cache->cache, (unsigned)g, now, interval_ms(e)) &&
            l != NULL)
            probe(h, g, l);
    }
    if (h->nwatch > 0)
        arm(h);
}

/* ---- setup ------------------------------------------------------------------------ */

void edge_health_reload(struct ehealth *h, int64_t probe_interval_ms)
{
    if (h != NULL)
        h->interval_ms = probe_interval_ms;
}

int edge_health_setup(struct edge *e, int64_t probe_interval_ms)
{
    int n = e->owners->n > 0 ? e->owners->n : 0;
    if (n > CACHE_HEALTH_OWNERS)
        n = CACHE_HEALTH_OWNERS; /* (cannot happen: 256 + 256 on a host, 256 in a cluster) */
    struct ehealth *h = calloc(1, sizeof(*h) + (size_t)n * sizeof(h->own[0]));
    if (h == NULL)
        return -1;
    h->e = e;
    h->n = n;
    h->interval_ms = probe_interval_ms;
    for (int g = 0; g < n; g++)
        h->own[g].h = h;
    h->timer = evtimer_new(e->base, on_tick, h);
    if (h->timer == NULL) {
        free(h);
        return -1;
    }
    e->health = h;
    return 0;
}

void edge_health_teardown(struct edge *e)
{
    struct ehealth *h = e->health;
    if (h == NULL)
        return;
    event_free(h->timer);
    free(h);
    e->health = NULL;
}
