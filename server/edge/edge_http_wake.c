/*
 * edge_http_wake.c - held HTTP readers (struct hreq, edge_http_int.h): their
 * life on the heap, their reads through the read path, and the wakeups that
 * reach them when their key changes anywhere in the colo.
 *
 * Reads.  A held reader reads its key exactly as a RESP GET does: the colo
 * cache under the staleness rules, else the key's single flight (one fetch
 * per edge, one per colo with the refresh lock), with miss-wait and the
 * class's on-timeout answer (edge_read.h).  There is no second read path:
 * this file only turns the two halves' answers into a struct hres.
 *
 * Wakeups.  Long polls and watches are registered in a table by key hash.
 * The colo's change ring (server/colo/changes.h, read through edge_feed.h)
 * is wanted while the table is not empty; the feed hands each new record
 * to the readers of that hash only (their ops
 * then check the version, and their key through the cache): a write of
 * another key wakes nobody.  When records were lost (the ring lapped us, or
 * a writer died inside one), every registered reader is re-checked once,
 * which is always correct.  Arming happens before the ring is read from
 * where this edge left it, so a change that raced with a reader's own read
 * and its registration is seen (changes.c explains the fences).
 *
 * Callbacks may answer and free readers, and an answer may close the whole
 * connection (freeing its other readers): the matching readers are moved to
 * a private batch first and each is put back before its callback runs, so
 * every pointer used is one the callbacks cannot have freed unseen.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/core/clock.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_feed.h"
#include "server/edge/edge_http_int.h"
#include "server/edge/edge_read.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_sess.h"

static struct hreq **bucket(struct http_edge *he, uint64_t hash)
{
    return &he->table[hash & (HTTP_TABLE_BUCKETS - 1)];
}

static void link_into(struct hreq **head, struct hreq *r)
{
    r->hnext = *head;
    if (*head != NULL)
        (*head)->hpprev = &r->hnext;
    *head = r;
    r->hpprev = head;
}

static void unlink_from(struct hreq *r)
{
    if (r->hpprev == NULL)
        return;
    *r->hpprev = r->hnext;
    if (r->hnext != NULL)
        r->hnext->hpprev = r->hpprev;
    r->hnext = NULL;
    r->hpprev = NULL;
}

/* ---- the change ring (through edge_feed.h) -------------------------------------- */

/* Moves the readers of hash (all of them when all) into a batch, then puts
 * each back and tells it. */
static void wake(struct edge *e, uint64_t hash, hkv_stamp v, int all)
{
    struct http_edge *he = e->http;
    struct hreq *batch = NULL;
    size_t lo = all ? 0 : hash & (HTTP_TABLE_BUCKETS - 1);
    size_t hi = all ? HTTP_TABLE_BUCKETS : lo + 1;
    for (size_t b = lo; b < hi; b++) {
        struct hreq *r = he->table[b];
        while (r != NULL) {
            struct hreq *next = r->hnext;
            if (all || r->hash == hash) {
                unlink_from(r);
                link_into(&batch, r);
            }
            r = next;
        }
    }
    struct hreq *r;
    while ((r = batch) != NULL) {
        unlink_from(r);
        link_into(bucket(he, r->hash), r);
        r->ops->changed(r, v);
    }
}

static void on_changed(void *arg, const struct change *c)
{
    wake(arg, c->hash, c->version, 0);
}

static void on_lost(void *arg)
{
    wake(arg, 0, 0, 1);
}

int edge_http_wake_setup(struct edge *e)
{
    static const struct feed_hooks hooks = {.changed = on_changed, .lost = on_lost};
    edge_feed_join(e, FEED_HTTP, &hooks, e);
    return 0;
}

void edge_http_wake_teardown(struct edge *e)
{
    edge_feed_want(e, FEED_HTTP, 0);
}

void hreq_register(struct hreq *r)
{
    struct edge *e = r->c->e;
    struct http_edge *he = e->http;
    if (r->hpprev != NULL)
        return;
    link_into(bucket(he, r->hash), r);
    if (he->nregistered++ == 0)
        edge_feed_want(e, FEED_HTTP, 1); /* reads back past this reader's own read */
}

static void unregister(struct hreq *r)
{
    struct edge *e = r->c->e;
    struct http_edge *he = e->http;
    if (r->hpprev == NULL)
        return;
    unlink_from(r);
    if (--he->nregistered == 0)
        edge_feed_want(e, FEED_HTTP, 0);
}

/* ---- a reader's life ---------------------------------------------------------------- */

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct hreq *r = arg;
    r->ops->timer(r);
}

void hreq_timer(struct hreq *r, int64_t ms)
{
    if (r->timer == NULL && (r->timer = evtimer_new(r->c->e->base, on_timer, r)) == NULL)
        return; /* no timer: it waits for a change (or its client) */
    if (ms < 0)
        ms = 0;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(r->timer, &tv);
}

/* The If-None-Match fields of a request, as header lines. */
static size_t inm_copy(const struct http_req *req, char *out)
{
    size_t pos = 0, n = 0;
    struct http_slice name, value;
    if (!req->if_none_match)
        return 0;
    while (http_req_field_next(req, &pos, &name, &value) == HKV_OK) {
        if (name.len != 13 || strncasecmp(name.p, "if-none-match", 13) != 0)
            continue;
        if (out != NULL) {
            memcpy(out + n, "If-None-Match: ", 15);
            memcpy(out + n + 15, value.p, value.len);
            memcpy(out + n + 15 + value.len, "\r\n", 2);
        }
        n += 17 + value.len;
    }
    return n;
}

/* What a heap reader costs its client (c->held, against its output
 * limits): the struct and its copied key and If-None-Match lines. */
static size_t cost(const struct hreq *r)
{
    return sizeof(*r) + r->klen + r->inm.headers.len + 1;
}

struct hreq *hreq_keep(struct hreq *r)
{
    struct conn *c = r->c;
    size_t ninm = inm_copy(&r->inm, NULL);
    struct hreq *k = malloc(sizeof(*k));
    char *store = malloc(r->klen + ninm + 1);
    struct rslot *s = k != NULL && store != NULL ? slot_defer(c) : NULL;
    if (s == NULL) {
        free(k);
        free(store);
        return NULL;
    }
    *k = *r;
    k->heap = 1;
    k->slot = s;
    k->store = store;
    memcpy(store, r->key, r->klen);
    k->key = store;
    inm_copy(&r->inm, store + r->klen);
    memset(&k->inm, 0, sizeof(k->inm));
    k->inm.if_none_match = ninm > 0;
    k->inm.headers = (struct http_slice){store + r->klen, ninm};
    k->hnext = NULL;
    k->hpprev = NULL;
    k->timer = NULL;
    memset(&k->w, 0, sizeof(k->w));
    struct http_sess *hs = sess_of(c)->http;
    k->cprev = NULL;
    k->cnext = hs->reqs;
    if (hs->reqs != NULL)
        hs->reqs->cprev = k;
    hs->reqs = k;
    c->held += cost(k);
    if (k->kind != HREQ_GET)
        c->e->http->nheld++;
    if (k->kind == HREQ_POLL)
        board_add(&c->e->stats->http_polls_held, 1);
    else if (k->kind == HREQ_WATCH)
        board_add(&c->e->stats->http_watch_streams, 1);
    return k;
}

void hreq_free(struct hreq *r)
{
    struct conn *c = r->c;
    if (r->reading)
        flight_leave(&r->w);
    r->reading = 0;
    unregister(r);
    if (r->timer != NULL)
        event_free(r->timer);
    if (r->cprev != NULL)
        r->cprev->cnext = r->cnext;
    else
        sess_of(c)->http->reqs = r->cnext;
    if (r->cnext != NULL)
        r->cnext->cprev = r->cprev;
    c->held -= cost(r);
    if (r->kind != HREQ_GET)
        c->e->http->nheld--;
    if (r->kind == HREQ_POLL)
        board_add(&c->e->stats->http_polls_held, -1);
    else if (r->kind == HREQ_WATCH)
        board_add(&c->e->stats->http_watch_streams, -1);
    free(r->store);
    free(r);
}

void hreq_done(struct hreq *r)
{
    if (!r->heap)
        return; /* answered within its dispatch: c->out already holds it */
    struct conn *c = r->c;
    struct rslot *s = r->slot;
    hreq_free(r);
    conn_slot_done(c, s); /* may close c */
}

struct hkv_buf *hreq_out(struct hreq *r)
{
    return r->heap ? slot_out(r->c, r->slot) : &r->c->out;
}

/* ---- reads ------------------------------------------------------------------------- */

static void on_answer(struct flight_waiter *w, const struct flight_answer *a)
{
    struct hreq *r = w->arg;
    r->reading = 0;
    struct hres res = {0};
    if (a->kind == FLIGHT_DATA) {
        res.found = a->found;
        res.v = a->v;
        res.n = a->n;
        res.expire_at = a->expire_at;
        res.f = (struct read_facts){a->age_ms, a->stamp, a->stale, a->degraded};
        res.confirmed = a->from_owner && r->fetch_after;
    } else {
        res.error = 1;
        res.err = a->err;
        res.errlen = a->errlen;
    }
    r->ops->result(r, &res);
}

void hreq_read(struct hreq *r, hkv_stamp min)
{
    struct edge *e = r->c->e;
    struct edge_read_hit h;
    if (e->cache->cache != NULL && edge_read_cached(e, r->key, r->klen, r->hash, min, &h)) {
        struct hres res = {.found = h.found, .v = h.v, .n = h.n, .expire_at = h.expire_at,
                           .f = h.f};
        r->ops->result(r, &res);
        return;
    }
    /* A flight already in the air may have been sent before a write this
     * client knows of: only a fetch started now confirms an older version. */
    int fresh_fetch = flight_find(e, r->hash, r->key, r->klen) == NULL;
    const char *err = NULL;
    struct flight *f = edge_read_flight(e, r->key, r->klen, r->hash, &err);
    struct hreq *k = r;
    if (f != NULL && !r->heap && (k = hreq_keep(r)) == NULL)
        err = "ERR out of memory";
    if (f == NULL || k == NULL) {
        struct hres res = {.error = 1, .err = err, .errlen = strlen(err)};
        r->ops->result(r, &res);
        return;
    }
    r = k;
    r->fetch_after = fresh_fetch;
    r->reading = 1;
    r->w.arg = r;
    flight_wait(f, &r->w);
    r->w.fn = on_answer;
    if (r->kind != HREQ_GET)
        hreq_register(r);
}
