/*
 * owner_notify.c - keyspace notifications (notify-keyspace-events): the
 * events of the writes this owner applies, sent as PUBMSG on one push link
 * of every colo, whose edge appends them to the colo's pub/sub bus as any
 * published message (server/edge/edge_pubsub.h).
 *
 * When.  An event is noted as the write applies and sent with the push
 * that makes the write visible to the colos (owner_pushq.c's flush), not
 * before: a durable write's push waits for its commit and a replicated
 * write's for its in-sync followers, and so do its events, so a subscriber
 * hears of a write no sooner than its writer is told it is acknowledged.  The events go after
 * the turn's pushes on the same links, so a subscriber that reads the key
 * on its event gets the new value from its colo.  Per key, events go in the
 * order their writes applied; events of different keys released by one
 * flush keep that order too (one list, in apply order).
 *
 * Bounds: at most NOTIFY_PENDING events wait for their push (past it the
 * oldest is dropped), and one waits NOTIFY_AGE_MS at most (a durable write
 * whose commit failed is never pushed); both counted (owner_notify_dropped).
 */
#include <stdlib.h>
#include <string.h>

#include "proto/syskey.h"
#include "proto/notify.h"
#include "server/core/router.h"
#include "server/owner/owner_notify.h"

#define NOTIFY_PENDING 65536
#define NOTIFY_AGE_MS 30000
#define CHAN_PREFIX_SPACE "__keyspace@0__:"
#define CHAN_PREFIX_EVENT "__keyevent@0__:"

struct nev {
    size_t koff, klen;
    uint64_t place;
    hkv_stamp version;     /* 0: sent with the next flush whatever is pushed (expired) */
    int64_t at_ms;
    uint8_t ev;
};

struct onotify {
    struct nev *e;
    size_t n, cap;
    struct hkv_buf keys;   /* the pending events' key bytes */
    struct hkv_buf chan;   /* scratch: a channel name */
};

static struct onotify *state_of(struct owner *o)
{
    if (o->events == NULL)
        o->events = calloc(1, sizeof(*o->events));
    return o->events;
}

/* The oldest k events go (counted as dropped when unsent). */
static void forget_first(struct onotify *n, size_t k)
{
    memmove(n->e, n->e + k, (n->n - k) * sizeof(*n->e));
    n->n -= k;
}

static void note(struct owner *o, const char *key, size_t klen, uint64_t place, hkv_stamp version,
                 enum notify_event ev)
{
    if (!o->opts.owner_push || !notify_wants(o->opts.notify, ev) || syskey_is(key, klen))
        return; /* hotkvd's own keys (proto/syskey.h) are no client's events */
    struct onotify *n = state_of(o);
    if (n == NULL) {
        o->st.owner_notify_dropped++;
        return;
    }
    if (n->n == NOTIFY_PENDING) { /* an eighth at a time: the move is paid rarely */
        forget_first(n, NOTIFY_PENDING / 8);
        o->st.owner_notify_dropped += NOTIFY_PENDING / 8;
    }
    if (n->n == n->cap) {
        size_t cap = n->cap ? n->cap * 2 : 64;
        struct nev *e = realloc(n->e, cap * sizeof(*e));
        if (e == NULL) {
            o->st.owner_notify_dropped++;
            return;
        }
        n->e = e;
        n->cap = cap;
    }
    size_t koff = n->keys.len;
    if (buf_append(&n->keys, key, klen) != HKV_OK) {
        o->st.owner_notify_dropped++;
        return;
    }
    n->e[n->n++] = (struct nev){koff, klen, place, version, (int64_t)owner_clock().mono_ms,
                                (uint8_t)ev};
}

void owner_notify(struct owner *o, struct wire_slice key, hkv_stamp version, enum notify_event ev)
{
    if (o->opts.notify == 0)
        return; /* every write calls: no placement hash for nothing */
    note(o, key.p, key.len, router_place(key.p, key.len), version, ev);
}

void owner_notify_expired(struct owner *o, const char *key, size_t klen)
{
    note(o, key, klen, router_place(key, klen), 0, NEV_EXPIRED);
}

/* Events that wait for long-held pushes would keep every sent event's key
 * bytes in the arena: rewritten once it is mostly dead. */
static void compact(struct onotify *n)
{
    size_t live = 0;
    for (size_t i = 0; i < n->n; i++)
        live += n->e[i].klen;
    if (n->keys.len < 64 * 1024 || n->keys.len < 4 * live)
        return;
    char *fresh = malloc(live ? live : 1);
    if (fresh == NULL)
        return; /* the old arena stays */
    size_t off = 0;
    for (size_t i = 0; i < n->n; i++) {
        memcpy(fresh + off, n->keys.data + n->e[i].koff, n->e[i].klen);
        n->e[i].koff = off;
        off += n->e[i].klen;
    }
    buf_deinit(&n->keys);
    n->keys = (struct hkv_buf){fresh, 0, live, live ? live : 1};
}

static void send_one(struct onotify *n, struct olink **to, int nto, const char *prefix,
                     struct wire_slice suffix, struct wire_slice msg)
{
    buf_reset(&n->chan);
    if (buf_append(&n->chan, prefix, strlen(prefix)) != HKV_OK ||
        buf_append(&n->chan, suffix.p, suffix.len) != HKV_OK)
        return;
    for (int k = 0; k < nto; k++)
        wire_put_pubmsg(&to[k]->out, wire_slice(n->chan.data, n->chan.len), msg);
}

void owner_notify_flush(struct owner *o, owner_pushed_fn pushed, void *arg, struct olink **to,
                        int nto)
{
    struct onotify *n = o->events;
    if (n == NULL || n->n == 0)
        return;
    int64_t now = (int64_t)owner_clock().mono_ms;
    unsigned f = o->opts.notify;
    size_t keep = 0;
    for (size_t i = 0; i < n->n; i++) {
        struct nev *x = &n->e[i];
        const char *key = n->keys.data + x->koff;
        if (x->version != 0 && !pushed(arg, key, x->klen, x->place, x->version)) {
            if (now - x->at_ms > NOTIFY_AGE_MS) {
                o->st.owner_notify_dropped++;
                continue;
            }
            n->e[keep++] = *x; /* its push has not gone yet */
            continue;
        }
        const char *name = notify_event_name((enum notify_event)x->ev);
        struct wire_slice k = wire_slice(key, x->klen), ev = wire_slice(name, strlen(name));
        if (f & NOTIFY_KEYSPACE)
            send_one(n, to, nto, CHAN_PREFIX_SPACE, k, ev);
        if (f & NOTIFY_KEYEVENT)
            send_one(n, to, nto, CHAN_PREFIX_EVENT, ev, k);
        if (nto > 0)
            o->st.owner_notifications++;
    }
    n->n = keep;
    if (keep == 0) {
        buf_reset(&n->keys);
        buf_shrink(&n->keys, 64 * 1024);
    } else {
        compact(n);
    }
}

void owner_notify_teardown(struct owner *o)
{
    struct onotify *n = o->events;
    if (n == NULL)
        return;
    free(n->e);
    buf_deinit(&n->keys);
    buf_deinit(&n->chan);
    free(n);
    o->events = NULL;
}
