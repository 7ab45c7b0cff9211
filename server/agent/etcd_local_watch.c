/*
 * etcd_local_watch.c - the local store's watches (etcd_local.h): each one
 * hears the history's revisions from its start up to the durable revision,
 * one message per revision, filtered by its range; CREATED first; CANCELED
 * when its start is older than the history; PROGRESS on the store's timer;
 * BROKEN (HKV_EIO) once the store's file failed a write.
 * A callback may cancel any watch or destroy the store: the `dead` flags
 * and the pass number (`gen`: a watch is visited once a pass, whatever the
 * callbacks did to the list) keep the loop safe.
 */
#include "server/agent/etcd_local.h"

#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/agent/etcd_local_int.h"
#include "proto/etcd_msg.h"

/* ---- watches ---- */

struct etcd_lwatch *etcd_local_watch(struct etcd_local *l, const char *key, size_t klen,
                                     const char *end, size_t elen, int64_t start_revision,
                                     etcd_watch_cb cb, void *arg)
{
    if (key == NULL || cb == NULL)
        return NULL;
    struct etcd_lwatch *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    w->key = malloc(klen + 1);
    w->end = malloc(elen + 1);
    if (w->key == NULL || w->end == NULL) {
        free(w->key);
        free(w->end);
        free(w);
        return NULL;
    }
    memcpy(w->key, key, klen);
    if (elen > 0)
        memcpy(w->end, end, elen);
    w->klen = klen;
    w->elen = end != NULL ? elen : 0;
    w->next_rev = start_revision > 0 ? start_revision : l->s.t.rev + 1;
    w->cb = cb;
    w->arg = arg;
    w->l = l;
    w->next = l->watches.next;
    w->prev = &l->watches;
    l->watches.next->prev = w;
    l->watches.next = w;
    event_active(l->kick, EV_TIMEOUT, 1);
    return w;
}

void etcd_lw_unlink(struct etcd_lwatch *w)
{
    w->prev->next = w->next;
    w->next->prev = w->prev;
    w->next = w->prev = w;
}

void etcd_local_watch_cancel(struct etcd_lwatch **wp)
{
    struct etcd_lwatch *w = *wp;
    if (w == NULL)
        return;
    *wp = NULL;
    etcd_lw_unlink(w);
    if (w->dead != NULL)
        *w->dead = 1;
    free(w->key);
    free(w->end);
    free(w);
}

/* Hands m to w's owner; 1 if w (or the store) went away meanwhile. */
static int wdeliver(struct etcd_lwatch *w, const struct etcd_watch_msg *m)
{
    struct etcd_local *l = w->l;
    int wdead = 0, ldead = 0;
    int *outer = l->dead;
    w->dead = &wdead;
    l->dead = &ldead;
    w->cb(w->arg, m);
    if (ldead) {
        if (outer != NULL)
            *outer = 1;
        if (!wdead)
            w->dead = NULL;
        return 1;
    }
    l->dead = outer;
    if (wdead)
        return 1;
    w->dead = NULL;
    return 0;
}

/* The first history entry of revision >= rev. */
static size_t hist_at(const struct etcd_local *l, int64_t rev)
{
    size_t lo = 0, hi = l->s.nhist;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->s.hist[mid].rev < rev)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Delivers what w may hear now (w may be gone after: the caller checks
 * its own dead flag). */
static int pump_watch(struct etcd_local *l, struct etcd_lwatch *w, int progress)
{
    struct etcd_watch_msg m;
    memset(&m, 0, sizeof(m));
    if (l->s.failed) {
        /* the file failed a write: the stream breaks, as a connection
         * would (a PROGRESS would tell its owner the store works) */
        if (!w->over) {
            w->over = 1;
            m.kind = ETCD_W_BROKEN;
            m.status = HKV_EIO;
            m.revision = l->s.durable;
            wdeliver(w, &m);
        }
        return 0;
    }
    if (!w->created) {
        w->created = 1;
        m.kind = ETCD_W_CREATED;
        m.revision = l->s.durable;
        if (wdeliver(w, &m))
            return 0;
    }
    if (w->over)
        return 0;
    if (w->next_rev <= l->s.hist_base) {
        w->over = 1;
        m.kind = ETCD_W_CANCELED;
        m.revision = l->s.durable;
        m.compact_revision = l->s.hist_base;
        wdeliver(w, &m);
        return 0;
    }
    struct etcd_event ev[2 * ETCD_MAX_OPS + 16];
    while (w->next_rev <= l->s.durable) {
        size_t i = hist_at(l, w->next_rev);
        if (i == l->s.nhist)
            break;
        int64_t rev = l->s.hist[i].rev;
        if (rev > l->s.durable)
            break;
        size_t n = 0;
        for (; i < l->s.nhist && l->s.hist[i].rev == rev; i++) {
            const struct lchange *c = &l->s.hist[i].c;
            if (n < sizeof(ev) / sizeof(ev[0]) &&
                lstore_in_range(c->kv.key, c->kv.klen, w->key, w->klen,
                                w->elen ? w->end : NULL, w->elen))
                ev[n++] = (struct etcd_event){c->del ? ETCD_EV_DELETE : ETCD_EV_PUT,
                                              {c->kv.key, c->kv.klen, c->kv.val, c->kv.vlen,
                                               c->kv.create, c->kv.mod, c->kv.version,
                                               c->kv.lease}};
        }
        w->next_rev = rev + 1;
        if (n == 0)
            continue;
        m.kind = ETCD_W_EVENTS;
        m.revision = rev;
        m.events = ev;
        m.nevents = n;
        if (wdeliver(w, &m))
            return 0;
    }
    if (w->next_rev <= l->s.durable)
        w->next_rev = l->s.durable + 1;
    if (progress) {
        memset(&m, 0, sizeof(m));
        m.kind = ETCD_W_PROGRESS;
        m.revision = l->s.durable;
        wdeliver(w, &m);
    }
    return 0;
}

void etcd_lw_pump(struct etcd_local *l, int progress)
{
    uint64_t gen = ++l->gen;
    int dead = 0;
    int *outer = l->dead;
    l->dead = &dead;
    for (;;) {
        struct etcd_lwatch *w = l->watches.next;
        while (w != &l->watches && w->gen == gen)
            w = w->next;
        if (w == &l->watches)
            break;
        w->gen = gen;
        pump_watch(l, w, progress);
        if (dead)
            break;
    }
    if (dead) {
        if (outer != NULL)
            *outer = 1;
        return;
    }
    l->dead = outer;
}
