/*
 * owner_pushq.c - pushes, coalesced per loop turn (owner_int.h owner_push).
 *
 * A write used to push at once: a ledger lookup, one PUSH frame and one
 * bufferevent_write per colo for every write, which was the owner's second
 * largest cost on SET -P16 (16% of its cycles).  Now a write only queues
 * its key; a zero-delay event, activated by the first key of a turn, runs
 * after the link reads that are ready in the same loop iteration and sends
 * each queued key ONCE per colo, in one flush per push link, with the state
 * the key holds at that moment (PUSH with the value and its stamp, or
 * INVALIDATE with the newest stamp queued for it or held for it, whichever
 * is newer).  That is the latest value per key: every frame still carries
 * the stamp the caches order by, and since the queue is emptied in one go
 * and the ledger's stamps only grow, a colo never gets an older state of a
 * key after a newer one (within a flush each key appears once; a later
 * flush carries a state at least as new).  The writes' replies go out with
 * their read batch, before the push: a colo cache reads its own writes from
 * the reply (edge_cache), never from a push.
 *
 * No allocation in steady state: key bytes go into one arena, entries into
 * one array, the dedup index is an open-addressed table of entry numbers;
 * all three are kept and reused.  The index probes at most PROBES slots: a
 * key that does not find its place within them (crafted collisions) is
 * queued again rather than searched for, which costs one more frame, never
 * an order.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/syskey.h"
#include "server/core/log.h"
#include "server/core/router.h"
#include "server/owner/owner_int.h"
#include "server/owner/owner_notify.h"

#define PROBES 8
#define IDX_MIN 64
#define MAX_COLOS 16

struct qent {
    size_t koff, klen;   /* key bytes in the arena */
    hkv_stamp stamp;     /* the newest version queued for it */
};

struct opushq {
    struct event *ev;
    struct hkv_buf keys;     /* arena of key bytes */
    struct qent *e;
    size_t n, cap;
    uint32_t *idx;           /* entry number + 1; 0 = free */
    size_t nidx;             /* a power of 2, >= 2 * cap */
};

static void flush_cb(evutil_socket_t fd, short what, void *arg);

static struct opushq *queue_of(struct owner *o)
{
    if (o->pushq != NULL)
        return o->pushq;
    struct opushq *q = calloc(1, sizeof(*q));
    if (q == NULL)
        return NULL;
    q->ev = event_new(o->base, -1, 0, flush_cb, o);
    if (q->ev == NULL) {
        free(q);
        return NULL;
    }
    o->pushq = q;
    return q;
}

static int grow(struct opushq *q)
{
    size_t cap = q->cap ? q->cap * 2 : IDX_MIN / 2;
    struct qent *e = realloc(q->e, cap * sizeof(*e));
    if (e == NULL)
        return -1;
    q->e = e;
    uint32_t *idx = calloc(cap * 2, sizeof(*idx));
    if (idx == NULL) {
        q->cap = cap; /* the entries fit; dedup stays at the old size */
        return 0;
    }
    free(q->idx);
    q->idx = idx;
    q->nidx = cap * 2;
    q->cap = cap;
    for (size_t i = 0; i < q->n; i++) { /* re-index (best effort, as on insert) */
        uint64_t h = router_place(q->keys.data + q->e[i].koff, q->e[i].klen);
        for (size_t p = 0; p < PROBES; p++) {
            uint32_t *s = &q->idx[(h + p) & (q->nidx - 1)];
            if (*s == 0) {
                *s = (uint32_t)i + 1;
                break;
            }
        }
    }
    return 0;
}

/* The queued entry of key, or a free index slot for it in *slot (NULL when
 * the probes found neither). */
static struct qent *find(struct opushq *q, const char *key, size_t klen, uint64_t h,
                         uint32_t **slot)
{
    *slot = NULL;
    if (q->nidx == 0)
        return NULL;
    for (size_t p = 0; p < PROBES; p++) {
        uint32_t *s = &q->idx[(h + p) & (q->nidx - 1)];
        if (*s == 0) {
            *slot = s;
            return NULL;
        }
        struct qent *x = &q->e[*s - 1];
        if (x->klen == klen && memcmp(q->keys.data + x->koff, key, klen) == 0)
            return x;
    }
    return NULL;
}

void owner_push(struct owner *o, const char *key, size_t klen, hkv_stamp stamp)
{
    owner_push_at(o, key, klen, router_place(key, klen), stamp);
}

void owner_push_at(struct owner *o, const char *key, size_t klen, uint64_t place, hkv_stamp stamp)
{
    if (!o->opts.owner_push || syskey_is(key, klen))
        return; /* off; hotkvd's own keys are never read through a colo */
    struct opushq *q = queue_of(o);
    if (q == NULL) {
        log_warning("push queue: out of memory; a push is lost (caches see the write "
                    "within the class's fresh)");
        return;
    }
    uint32_t *slot;
    struct qent *x = find(q, key, klen, place, &slot);
    if (x != NULL) {
        if (stamp > x->stamp)
            x->stamp = stamp;
        return;
    }
    if (q->n == q->cap) {
        if (grow(q) != 0) {
            log_warning("push queue: out of memory; a push is lost");
            return;
        }
        x = find(q, key, klen, place, &slot); /* the index moved */
    }
    size_t koff = q->keys.len;
    if (buf_append(&q->keys, key, klen) != HKV_OK) {
        log_warning("push queue: out of memory; a push is lost");
        return;
    }
    q->e[q->n] = (struct qent){koff, klen, stamp};
    if (slot != NULL)
        *slot = (uint32_t)q->n + 1;
    if (q->n++ == 0)
        event_active(q->ev, 0, 1);
}

/* One push link per colo (the first greeted one), into to[]; their number. */
static int push_targets(struct owner *o, struct olink **to)
{
    int nto = 0;
    for (struct olink *l = o->links; l != NULL && nto < MAX_COLOS; l = l->next) {
        if (l->role != WIRE_ROLE_PUSH || !l->hello || l->closing)
            continue;
        int seen = 0;
        for (int i = 0; i < nto && !seen; i++)
            seen = strcmp(to[i]->colo, l->colo) == 0;
        if (!seen)
            to[nto++] = l;
    }
    return nto;
}

/* PUBLISH (a channel routed to this owner as a key would be): the message
 * goes at once, in the order the owner reads them, to one push link of
 * every colo, whose edge appends it to its colo's bus (server/colo/bus.h);
 * never stored.  Answered PONG, an acknowledgement.  With owner-push off
 * the edges do not ask (they publish to their host's colos themselves). */
void owner_publish(struct owner *o, struct olink *from, const struct wire_msg *m)
{
    struct olink *to[MAX_COLOS];
    int nto = push_targets(o, to);
    for (int k = 0; k < nto; k++) {
        wire_put_pubmsg(&to[k]->out, m->u.pub.channel, m->u.pub.msg);
        olink_flush(to[k]);
    }
    wire_put_pong(&from->out, m->id);
}

/* owner_pushed_fn: the flush pushes key at version or newer. */
static int pushed(void *arg, const char *key, size_t klen, uint64_t place, hkv_stamp version)
{
    uint32_t *slot;
    const struct qent *x = find(arg, key, klen, place, &slot);
    return x != NULL && x->stamp >= version;
}

void owner_pushq_kick(struct owner *o)
{
    struct opushq *q = queue_of(o);
    if (q != NULL)
        event_active(q->ev, 0, 1);
}

/* Every queued key once to every colo with a push link. */
static void flush_cb(evutil_socket_t fd, short what, void *arg)
{
    struct owner *o = arg;
    struct opushq *q = o->pushq;
    struct olink *to[MAX_COLOS];
    int nto = push_targets(o, to);
    struct ledger_clock now = owner_clock();
    for (size_t i = 0; i < q->n && nto > 0; i++) {
        struct qent *x = &q->e[i];
        struct wire_slice key = wire_slice(q->keys.data + x->koff, x->klen);
        struct ledger_view v = {0};
        int rc = o->pool == CFG_POOL_HOT ? ledger_get(o->ledger, key.p, key.len, now, &v)
                                         : HKV_EAGAIN;
        for (int k = 0; k < nto; k++) {
            if (rc == HKV_OK)
                wire_put_push(&to[k]->out, key, wire_slice(v.val, v.vlen), v.stamp,
                              (uint64_t)v.expire_at_ms);
            else
                wire_put_invalidate(&to[k]->out, key, rc == HKV_ENOENT && v.stamp > x->stamp
                                                          ? v.stamp : x->stamp);
            o->st.owner_pushes++;
        }
        if (nto > 0) /* the leaf's work for the move policy (owner_work.h) */
            owner_work_push(o, key.p, key.len, (unsigned)nto,
                            (uint64_t)nto * (key.len + (rc == HKV_OK ? v.vlen : 0)));
    }
    owner_notify_flush(o, pushed, q, to, nto); /* after the pushes: a reader sees the value */
    for (int k = 0; k < nto; k++)
        olink_flush(to[k]);
    for (size_t i = 0; i < q->n; i++) { /* empty the index where it was used */
        uint32_t *s;
        struct qent *x = &q->e[i];
        uint64_t h = router_place(q->keys.data + x->koff, x->klen);
        for (size_t p = 0; p < PROBES && q->nidx > 0; p++) {
            s = &q->idx[(h + p) & (q->nidx - 1)];
            if (*s == i + 1) {
                *s = 0;
                break;
            }
        }
    }
    q->n = 0;
    buf_reset(&q->keys);
    buf_shrink(&q->keys, 64 * 1024);
}

void owner_pushq_teardown(struct owner *o)
{
    struct opushq *q = o->pushq;
    if (q == NULL)
        return;
    event_free(q->ev);
    buf_deinit(&q->keys);
    free(q->e);
    free(q->idx);
    free(q);
    o->pushq = NULL;
}
