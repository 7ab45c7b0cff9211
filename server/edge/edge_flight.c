/*
 * edge_flight.c - single-flight fetches (edge_flight.h).
 *
 * A flight is one key's fetch from its owner on the owner's READ link, with
 * the readers of this process that wait for it.  Flights live in a hash
 * table by key hash (e->flights) and come from a freelist, so a steady miss
 * rate allocates nothing.  Each flight has one timer: the earliest waiter's
 * miss-wait, or, while another edge of the colo holds the key's refresh
 * lock, a poll of the segment every COLO_POLL_MS.
 *
 * The choice this file is built around: a flight answers readers, it never
 * decides what a reader's reply looks like.  Every outcome (the owner's
 * value or absence, the colo's entry, the stale entry, the class's timeout
 * answer, an error) becomes a struct flight_answer handed to the callback
 * the edge registered, one waiter at a time, in arrival order.  A flight
 * that has its answer leaves the table before it answers anyone, so a
 * reader that arrives while the others are being answered (a client resumed
 * by one of those replies) starts afresh instead of joining a flight that is
 * ending.
 */
#include "server/edge/edge_flight.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event_struct.h>

#include "server/colo/cache.h"
#include "server/core/clock.h"
#include "server/core/topo.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_health.h"

#define COLO_POLL_MS 2
#define FLIGHT_REFETCH_MAX 3 /* fetches again of an answer older than a FLUSHALL */
#define FLIGHT_BUCKETS 4096

struct flight {
    struct flight *hnext;
    struct edge *e;
    uint64_t hash;
    struct hkv_buf key;
    struct hkv_buf val;           /* a segment entry being handed to the waiters */
    struct route rt;              /* rt.cls points into cfg */
    struct cfg *cfg;              /* a reference: a reload must not free rt.cls */
    struct owner_ref *owner;
    struct flight_waiter *waiters, *wtail;
    struct event timer;           /* the next waiter's miss-wait, or a colo poll */
    int timer_init;
    int moved;
    int refetched;                /* fetched again: answers older than a FLUSHALL */
    int linked;
    int fetching;                 /* a request to the owner is in flight */
    int reported;                 /* ... and reported unanswered (edge_health.h) */
    uint64_t token;               /* the colo refresh lock we hold, 0 = none */
    int64_t poll_until;           /* colo wait: stop polling then */
    int64_t started_ms;           /* when the flight began */
    int64_t sent_ms;              /* when its fetch was sent */
};

struct flights {
    struct flights_head head;     /* first: edge_flight.h's inline readers */
    flight_answer_fn answer;
    struct flights_opts opts;
    struct flight *free;
    struct flight *table[FLIGHT_BUCKETS];
};

static struct flight **bucket(struct edge *e, uint64_t hash)
{
    return &e->flights->table[hash & (FLIGHT_BUCKETS - 1)];
}

struct flight *flight_find(struct edge *e, uint64_t hash, const char *key, size_t len)
{
    struct flight *f = *bucket(e, hash);
    while (f != NULL && !(f->hash == hash && buf_unread(&f->key) == len &&
                          memcmp(buf_head(&f->key), key, len) == 0))
        f = f->hnext;
    return f;
}

int64_t flight_started(const struct flight *f)
{
    return f->started_ms;
}

static void flight_unlink(struct flight *f)
{
    if (!f->linked)
        return;
    struct flight **pp = bucket(f->e, f->hash);
    while (*pp != f)
        pp = &(*pp)->hnext;
    *pp = f->hnext;
    f->linked = 0;
}

static void flight_free(struct flight *f)
{
    struct edge *e = f->e;
    flight_unlink(f);
    if (f->timer_init)
        evtimer_del(&f->timer);
    if (f->token != 0 && e->cache->cache != NULL)
        cache_unlock(e->cache->cache, f->hash, f->token);
    f->token = 0;
    cfg_destroy(&f->cfg);
    buf_reset(&f->key);
    buf_shrink(&f->key, 1024);
    buf_reset(&f->val);
    buf_shrink(&f->val, 1024);
    f->hnext = e->flights->free;
    e->flights->free = f;
}

/* ---- waiters -------------------------------------------------------------------- */

/* Answers one waiter (out of the list already) through its own callback, or
 * the flights'. */
static void deliver(struct flight *f, struct flight_waiter *w, const struct flight_answer *a)
{
    flight_answer_fn fn = w->fn != NULL ? w->fn : f->e->flights->answer;
    fn(w, a);
}

static void rearm(struct flight *f);

void flight_wait(struct flight *f, struct flight_waiter *w)
{
    w->f = f;
    w->start_ms = clock_mono_ms();
    w->next = NULL;
    if (f->wtail)
        f->wtail->next = w;
    else
        f->waiters = w;
    f->wtail = w;
    rearm(f);
}

void flight_leave(struct flight_waiter *w)
{
    struct flight *f = w->f;
    if (f == NULL)
        return;
    struct flight_waiter **pp = &f->waiters, *prev = NULL;
    while (*pp != NULL && *pp != w) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp == w) {
        *pp = w->next;
        if (f->wtail == w)
            f->wtail = prev;
    }
    w->f = NULL;
    w->next = NULL;
}

/* The first waiter, out of the list; NULL if none. */
static struct flight_waiter *pop(struct flight *f)
{
    struct flight_waiter *w = f->waiters;
    if (w == NULL)
        return NULL;
    f->waiters = w->next;
    if (f->waiters == NULL)
        f->wtail = NULL;
    w->f = NULL;
    w->next = NULL;
    return w;
}

/* The colo's entry of the key, within keep, as a waiter's answer (a->v in
 * e->cache->cval), counted as the hit it is; 0 (a untouched) if the colo has none. */
static int late_cached(struct flight *f, struct flight_answer *a, int64_t now)
{
    struct edge *e = f->e;
    struct cache_hit hit;
    if (e->cache->cache == NULL ||
        cache_get(e->cache->cache, buf_head(&f->key), buf_unread(&f->key), f->hash, now,
                  &e->cache->cval, &hit) != HKV_OK ||
        (hit.expire_at != 0 && hit.expire_at <= clock_unix_ms()))
        return 0;
    memset(a, 0, sizeof(*a));
    a->kind = FLIGHT_DATA;
    a->stale = now >= hit.fresh_until;
    cache_count(e->cache->cache,
                hit.negative ? CACHE_CTR_cache_negative_hits
                             : a->stale ? CACHE_CTR_cache_stale_hits : CACHE_CTR_cache_hits,
                1);
    a->found = !hit.negative;
    a->v = buf_head(&e->cache->cval);
    a->n = buf_unread(&e->cache->cval);
    a->expire_at = hit.expire_at;
    a->age_ms = now - hit.stored_at;
    a->stamp = hit.stamp;
    return 1;
}

/* The answer for a reader whose owner did not answer in time: the colo's
 * entry of the key, within keep, if there is one (DESIGN §3, promise 2),
 * else its class's timeout answer (the "no value" reply, counted as
 * degraded; or -TRYAGAIN).  err is room for the error text. */
static void late_answer(struct flight *f, struct flight_answer *a, char *err, size_t errlen)
{
    struct edge *e = f->e;
    if (late_cached(f, a, clock_mono_ms()))
        return;
    memset(a, 0, sizeof(*a));
    a->kind = FLIGHT_DATA;
    if (f->rt.cls->on_timeout == CFG_ONTO_DEGRADE) {
        if (e->cache->cache != NULL)
            cache_count(e->cache->cache, CACHE_CTR_degraded_replies, 1);
        a->degraded = 1;
        return;
    }
    snprintf(err, errlen, "TRYAGAIN owner %s/%d did not answer within miss-wait",
             topo_pool_name(f->owner->pool), f->owner->index);
    a->kind = FLIGHT_ERROR;
    a->err = err;
    a->errlen = strlen(err);
}

/* Answers every waiter from an owner message, an error text, or (both NULL)
 * with late_answer.  The flight is out of the table already. */
static void answer_waiters(struct flight *f, const struct wire_msg *m, const char *err)
{
    struct flight_waiter *w;
    while ((w = pop(f)) != NULL) {
        struct flight_answer a = {.kind = FLIGHT_DATA};
        char text[160];
        if (err != NULL) {
            a.kind = FLIGHT_ERROR;
            a.err = err;
            a.errlen = strlen(err);
        } else if (m == NULL) {
            late_answer(f, &a, text, sizeof(text));
        } else if (m->type == WIRE_VALUE) {
            a.found = 1;
            a.v = m->u.value.value.p;
            a.n = m->u.value.value.len;
            a.expire_at = (int64_t)m->u.value.expire_ms;
            a.stamp = m->u.value.stamp;
            a.from_owner = 1;
        } else if (m->type == WIRE_NOTFOUND) {
            a.found = 0;
            a.stamp = m->u.notfound.stamp; /* the delete's version (0: never held) */
            a.from_owner = 1;
        } else if (m->type == WIRE_ERROR) {
            a.kind = FLIGHT_OWNER_ERROR;
            a.err = m->u.error.text.p;
            a.errlen = m->u.error.text.len;
        } else {
            a.kind = FLIGHT_ERROR;
            a.err = "ERR unexpected answer from the owner";
            a.errlen = strlen(a.err);
        }
        deliver(f, w, &a);
    }
}

/* The owner is marked silent: every waiter the colo holds a value for
 * (within keep) gets it now, flagged stale if it is, rather than waiting
 * out its miss-wait for an owner known not to answer.  Waiters of a key
 * the colo does not hold keep waiting (the first of them stops it). */
static void release_cached(struct flight *f, int64_t now)
{
    struct flight_answer a;
    while (f->waiters != NULL && late_cached(f, &a, now)) {
        struct flight_waiter *w = pop(f);
        if (a.stale)
            cache_count(f->e->cache->cache, CACHE_CTR_cache_silent_stale_hits, 1);
        deliver(f, w, &a);
    }
}

/* This edge has just marked owner o silent: the readers of its other keys
 * waiting here now are released too (those of other edges are at their
 * flights' next timer).  Their flights go on. */
static void release_owner(struct edge *e, const struct owner_ref *o, const struct flight *skip,
                          int64_t now)
{
    for (size_t i = 0; i < FLIGHT_BUCKETS; i++)
        for (struct flight *f = e->flights->table[i]; f != NULL; f = f->hnext)
            if (f != skip && f->owner == o && f->waiters != NULL)
                release_cached(f, now); /* (answers touch no flight's links) */
}

/* ---- the fetch -------------------------------------------------------------------- */

static void flight_cb(void *arg, int status, const struct wire_msg *m);
static void flight_timer(evutil_socket_t fd, short what, void *arg);

static int flight_send(struct flight *f)
{
    struct elink *l = edge_owner_link(f->owner, WIRE_ROLE_READ);
    if (l == NULL)
        return -1;
    uint64_t id;
    struct hkv_buf *b = elink_out(l, &id);
    struct wire_slice k = wire_slice(buf_head(&f->key), buf_unread(&f->key));
    if (wire_put_get(b, id, &k, 1) != HKV_OK || elink_commit(l, id, flight_cb, f) != HKV_OK)
        return -1;
    f->fetching = 1;
    f->reported = 0;
    f->sent_ms = clock_mono_ms();
    if (f->e->cache->cache != NULL)
        cache_count(f->e->cache->cache, CACHE_CTR_cache_refreshes, 1);
    rearm(f); /* its allowance: a fetch unanswered that long marks the owner silent */
    return 0;
}

static void arm(struct flight *f, int64_t at)
{
    int64_t ms = at - clock_mono_ms();
    if (ms < 0)
        ms = 0;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(&f->timer, &tv);
}

/* Re-arms the timer for the earliest waiter deadline (and colo polling). */
static void rearm(struct flight *f)
{
    int64_t at = INT64_MAX;
    if (f->waiters != NULL)
        at = f->waiters->start_ms + f->e->flights->opts.miss_wait_ms;
    if (f->fetching && !f->reported && f->sent_ms + flight_allowance(f->e) < at)
        at = f->sent_ms + flight_allowance(f->e);
    if (!f->fetching && f->poll_until > 0) {
        int64_t poll = clock_mono_ms() + COLO_POLL_MS;
        if (poll < at)
            at = poll;
    }
    if (at == INT64_MAX)
        evtimer_del(&f->timer);
    else
        arm(f, at);
}

static void flight_cb(void *arg, int status, const struct wire_msg *m)
{
    struct flight *f = arg;
    struct edge *e = f->e;
    f->fetching = 0;
    if (status == HKV_OK)
        edge_health_answered(e, f->owner); /* whatever it says: it answers */
    /* unanswered for the link's whole timeout: silent too (a write-timeout
     * under the allowance never lets the allowance check fire) */
    int64_t now = clock_mono_ms();
    if (status == HKV_ETIMEDOUT && !f->reported && (f->reported = 1) &&
        edge_health_unanswered(e, f->owner, f->sent_ms, now))
        release_owner(e, f->owner, f, now);
    if (status != HKV_OK) {
        flight_unlink(f);
        answer_waiters(f, NULL, NULL); /* the owner cannot answer: class's timeout answer */
        flight_free(f);
        return;
    }
    if (m->type == WIRE_MOVED && !f->moved) {
        f->moved = 1;
        router_moved(e->owners->router, f->owner->pool, m->u.moved.leaf, m->u.moved.leaf_bits,
                     (int)m->u.moved.owner, m->u.moved.map_gen);
        struct route rt;
        struct owner_ref *o =
            edge_owner_of_hashed(e, buf_head(&f->key), buf_unread(&f->key), f->hash, &rt);
        if (o != NULL) {
            f->owner = o;
            if (flight_send(f) == 0)
                return;
        }
    }
    /* An answer from before a FLUSHALL whose forget reached this colo since
     * the fetch went out (cache_forget_below): a reader that came after the
     * FLUSHALL's OK may be waiting on it, and must not get a value the flush
     * removed.  Fetched again: the next answer is from after that flush (the
     * floor is raised only once the owner's flush is done), older only if yet
     * another flush overtook it; after FLIGHT_REFETCH_MAX of those it is
     * answered as is. */
    if (m->type == WIRE_VALUE && f->refetched < FLIGHT_REFETCH_MAX && e->cache->cache != NULL &&
        cache_forgotten(e->cache->cache, m->u.value.stamp)) {
        f->refetched++;
        if (flight_send(f) == 0)
            return;
    }
    flight_unlink(f);
    if (m->type == WIRE_MOVED) {
        char err[128];
        snprintf(err, sizeof(err), "TRYAGAIN owner %s/%d moved the key", topo_pool_name(f->owner->pool),
                 f->owner->index);
        answer_waiters(f, NULL, err);
        flight_free(f);
        return;
    }
    if (m->type == WIRE_VALUE || m->type == WIRE_NOTFOUND)
        edge_cache_fill(e, buf_head(&f->key), buf_unread(&f->key), &f->rt, m, f->sent_ms);
    answer_waiters(f, m, NULL);
    flight_free(f);
}

/* Colo wait: another edge holds the key's refresh lock.  Answers waiters
 * from the segment once that edge has filled it (an entry servable at once:
 * the stale entry that sent them here does not count), or fetches itself:
 * with the lock if it was released, expired or its holder died
 * (cache_lock), and without it once half the miss-wait has gone by without
 * a fill.  A holder that is alive but does not deliver (stopped, its owner
 * link down) must not turn into a timeout answer for a key the owner would
 * give at once: the lock saves owner fetches, it never decides what a
 * reader gets.  The cost is one extra fetch per edge and key while a holder
 * is that slow.  Returns 1 if the flight ended. */
static int colo_poll(struct flight *f)
{
    struct edge *e = f->e;
    struct cache_hit hit;
    int64_t now = clock_mono_ms();
    if (cache_get(e->cache->cache, buf_head(&f->key), buf_unread(&f->key), f->hash, now,
                  &e->cache->cval, &hit) == HKV_OK &&
        flight_servable(e, hit.fresh_until, now) &&
        !(hit.expire_at != 0 && hit.expire_at <= clock_unix_ms()) &&
        buf_append(&f->val, buf_head(&e->cache->cval), buf_unread(&e->cache->cval)) == HKV_OK) {
        /* The value is copied: answering a waiter may run other requests,
         * which look entries up into e->cache->cval. */
        struct flight_answer a = {
            .kind = FLIGHT_DATA, .found = !hit.negative, .v = buf_head(&f->val),
            .n = buf_unread(&f->val), .expire_at = hit.expire_at,
            .age_ms = now - hit.stored_at, .stamp = hit.stamp, .stale = now >= hit.fresh_until,
        };
        flight_unlink(f);
        struct flight_waiter *w;
        while ((w = pop(f)) != NULL)
            deliver(f, w, &a);
        flight_free(f);
        return 1;
    }
    uint64_t token = edge_cache_token(e);
    int mine = cache_lock(e->cache->cache, f->hash, token, now, edge_lock_ttl(e));
    if (mine || now >= f->started_ms + e->flights->opts.miss_wait_ms / 2) {
        f->token = mine ? token : 0;
        f->poll_until = 0;
        if (flight_send(f) != 0) {
            flight_unlink(f);
            answer_waiters(f, NULL, "ERR out of memory");
            flight_free(f);
            return 1;
        }
    }
    return 0;
}

static void flight_timer(evutil_socket_t fd, short what, void *arg)
{
    struct flight *f = arg;
    int64_t now = clock_mono_ms();
    int64_t wait = f->e->flights->opts.miss_wait_ms;
    /* Reported before any waiter is answered: the reader answered late now
     * must find the mark when it reads the next key. */
    if (f->fetching && !f->reported && now >= f->sent_ms + flight_allowance(f->e)) {
        f->reported = 1;
        if (edge_health_unanswered(f->e, f->owner, f->sent_ms, now))
            release_owner(f->e, f->owner, f, now);
    }
    if (f->waiters != NULL && edge_owner_silent(f->e, f->owner, now))
        release_cached(f, now);
    /* Readers past miss-wait get the late answer now; the fetch goes on. */
    while (f->waiters != NULL && f->waiters->start_ms + wait <= now) {
        struct flight_waiter *w = pop(f);
        struct flight_answer a;
        char text[160];
        late_answer(f, &a, text, sizeof(text));
        deliver(f, w, &a);
    }
    if (!f->fetching && f->poll_until > 0) {
        if (colo_poll(f))
            return;
        /* (colo_poll may have sent the fetch itself: then the flight stays
         * until its answer, which names it, even with nobody waiting) */
        if (!f->fetching && f->waiters == NULL && now >= f->poll_until) {
            flight_free(f); /* nobody waits and the other edge fills the segment */
            return;
        }
    }
    rearm(f);
}

struct flight *flight_start(struct edge *e, const char *key, size_t len, const struct route *rt,
                            struct owner_ref *o, int background)
{
    struct flight *f = e->flights->free;
    if (f != NULL)
        e->flights->free = f->hnext;
    else if ((f = calloc(1, sizeof(*f))) == NULL)
        return NULL;
    if (!f->timer_init) {
        evtimer_assign(&f->timer, e->base, flight_timer, f);
        f->timer_init = 1;
    }
    f->e = e;
    f->hash = rt->hash;
    f->rt = *rt;
    f->cfg = cfg_ref(e->flights->opts.routed); /* the config the router routed with */
    f->owner = o;
    f->moved = f->fetching = f->refetched = 0;
    f->token = 0;
    f->poll_until = 0;
    f->started_ms = clock_mono_ms();
    f->waiters = f->wtail = NULL;
    if (buf_append(&f->key, key, len) != HKV_OK) {
        flight_free(f);
        return NULL;
    }
    f->hnext = *bucket(e, rt->hash);
    *bucket(e, rt->hash) = f;
    f->linked = 1;
    if (e->cache->cache != NULL) {
        uint64_t token = edge_cache_token(e);
        int64_t now = clock_mono_ms();
        if (!cache_lock(e->cache->cache, rt->hash, token, now, edge_lock_ttl(e))) {
            cache_count(e->cache->cache, CACHE_CTR_cache_refresh_lock_waits, 1);
            if (background) {
                flight_free(f); /* another edge refreshes it: keep serving stale */
                return NULL;
            }
            f->poll_until = now + e->flights->opts.miss_wait_ms;
            rearm(f);
            return f;
        }
        f->token = token;
    }
    if (flight_send(f) != 0) {
        flight_free(f);
        return NULL;
    }
    return f;
}

/* ---- setup ------------------------------------------------------------------------ */

int flights_setup(struct edge *e, flight_answer_fn answer, const struct flights_opts *opts)
{
    e->flights = calloc(1, sizeof(*e->flights));
    if (e->flights == NULL)
        return -1;
    e->flights->answer = answer;
    e->flights->opts = *opts;
    e->flights->head.miss_wait_ms = opts->miss_wait_ms;
    return 0;
}

static void flight_destroy(struct flight *f)
{
    if (f->timer_init)
        evtimer_del(&f->timer);
    cfg_destroy(&f->cfg);
    buf_deinit(&f->key);
    buf_deinit(&f->val);
    free(f);
}

void flights_teardown(struct edge *e)
{
    struct flights *fs = e->flights;
    if (fs == NULL)
        return;
    for (size_t i = 0; i < FLIGHT_BUCKETS; i++) {
        while (fs->table[i] != NULL) {
            struct flight *f = fs->table[i];
            fs->table[i] = f->hnext;
            flight_destroy(f);
        }
    }
    while (fs->free != NULL) {
        struct flight *f = fs->free;
        fs->free = f->hnext;
        flight_destroy(f);
    }
    free(fs);
    e->flights = NULL;
}

/* A reload that lowers miss-wait: each flight with waiters has its timer
 * armed for the old, later deadline.  Firing it now (it runs after the new
 * config is installed) answers the waiters already past the new miss-wait
 * and re-arms for the rest, so the lower wait applies at once. */
void flights_reload(struct edge *e, const struct flights_opts *opts)
{
    if (e->flights == NULL)
        return;
    int64_t was = e->flights->opts.miss_wait_ms;
    e->flights->opts = *opts;
    e->flights->head.miss_wait_ms = opts->miss_wait_ms;
    if (opts->miss_wait_ms >= was)
        return;
    for (size_t i = 0; i < FLIGHT_BUCKETS; i++)
        for (struct flight *f = e->flights->table[i]; f != NULL; f = f->hnext)
            if (f->waiters != NULL && f->timer_init)
                arm(f, 0);
}
