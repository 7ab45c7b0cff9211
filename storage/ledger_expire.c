/*
 * ledger_expire.c - active expiry: a key whose deadline passed leaves the
 * ledger within one sweep tick, however many keys there are.
 *
 * Sampling buckets (the sweep's walk) finds expired keys only as fast as it
 * walks the table, so with a million keys an expired one could be counted by
 * DBSIZE for minutes.  Instead every deadline set on a live entry is pushed
 * on a min-heap of (deadline, hash) pairs; ledger_expire_due() pops the due
 * ones and looks in that hash's bucket(s) for entries that are really due.
 * The heap holds no pointers, so an entry freed, overwritten or given a new
 * deadline leaves a stale pair that finds nothing when it comes due: stale
 * pairs cost a pop, never a wrong expiry.  A deadline is pushed only when it
 * changes (the pair of accounting hooks around every entry change sees the
 * before and after); when stale pairs pile up (many TTL rewrites) the heap is
 * rebuilt from the table, which bounds it to about twice the keys with a
 * deadline.  If the heap cannot grow (out of memory) it is marked lossy and
 * rebuilt later; the bucket sweep still finds every expired key meanwhile.
 */
#include <stdlib.h>

#include "proto/syskey.h"
#include "proto/hkv.h"
#include "storage/ledger.h"
#include "storage/ledger_int.h"

#define XHEAP_SLACK 4096 /* stale pairs tolerated before a rebuild, at least */

static int before(const struct lexp *a, const struct lexp *b)
{
    return a->deadline < b->deadline;
}

static void sift_up(struct lexp *h, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&h[i], &h[p]))
            break;
        struct lexp t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

static void sift_down(struct lexp *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && before(&h[l], &h[m]))
            m = l;
        if (r < n && before(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        struct lexp t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void push(struct ledger *l, uint64_t deadline, uint64_t hash)
{
    if (l->xn == l->xcap) {
        size_t cap = l->xcap ? l->xcap * 2 : 256;
        struct lexp *h = realloc(l->xheap, cap * sizeof(*h));
        if (h == NULL) {
            l->xlossy = 1;
            return;
        }
        l->xheap = h;
        l->xcap = cap;
    }
    l->xheap[l->xn] = (struct lexp){deadline, hash};
    sift_up(l->xheap, l->xn++);
}

static int has_deadline(const struct lentry *e)
{
    return entry_expire_mono(e) != 0;
}

void ledger_xnote_sub(struct ledger *l, const struct lentry *e)
{
    l->xprev = e;
    uint64_t d = entry_expire_mono(e);
    l->xprev_deadline = d;
    if (d != 0) {
        l->st.expires--;
        l->st.expire_mono_sum -= d;
        if (syskey_is(e->key, e->klen))
            l->st.sys_expires--, l->st.sys_expire_mono_sum -= d;
    }
}

void ledger_xnote_add(struct ledger *l, const struct lentry *e)
{
    uint64_t prev = l->xprev == e ? l->xprev_deadline : 0;
    l->xprev = NULL;
    uint64_t d = entry_expire_mono(e);
    if (d == 0)
        return;
    l->st.expires++;
    l->st.expire_mono_sum += d;
    if (syskey_is(e->key, e->klen))
        l->st.sys_expires++, l->st.sys_expire_mono_sum += d;
    if (d != prev)
        push(l, d, ledger_hash(l, e->key, e->klen));
}

static void rebuild(struct ledger *l)
{
    l->xn = 0;
    l->xlossy = 0;
    for (int ti = 0; ti < 2; ti++) {
        const struct ltable *t = &l->t[ti];
        for (size_t i = 0; i < t->size; i++)
            for (const struct lentry *e = t->b[i]; e != NULL; e = e->next)
                if (has_deadline(e))
                    push(l, entry_expire_mono(e), ledger_hash(l, e->key, e->klen));
    }
}

/* Expires the entries of hash h that are due; returns how many. */
static size_t expire_hash(struct ledger *l, uint64_t h, uint64_t now_mono)
{
    size_t n = 0;
    for (int ti = 0; ti < 2; ti++) {
        struct ltable *t = &l->t[ti];
        if (t->size == 0)
            continue;
        for (struct lentry *e = t->b[h & t->mask]; e != NULL; e = e->next)
            if (has_deadline(e) && entry_expire_mono(e) <= now_mono &&
                ledger_hash(l, e->key, e->klen) == h) {
                if (ledger_make_tomb(l, e, e->stamp, now_mono) != HKV_OK) {
                    l->xlossy = 1; /* its pair is gone: rebuild, the sweep retries */
                    continue;
                }
                l->st.expired++;
                n++;
                if (l->on_expired != NULL)
                    l->on_expired(l->expired_arg, e->key, e->klen);
            }
    }
    return n;
}

size_t ledger_expire_due(struct ledger *l, struct ledger_clock now, size_t budget)
{
    ledger_release_held(l);
    size_t slack = l->st.keys / 8 > XHEAP_SLACK ? l->st.keys / 8 : XHEAP_SLACK;
    if (l->xlossy || l->xn > 2 * l->st.expires + slack)
        rebuild(l);
    size_t expired = 0;
    for (size_t pops = 0; pops < budget && l->xn > 0 && l->xheap[0].deadline <= now.mono_ms;
         pops++) {
        uint64_t h = l->xheap[0].hash;
        l->xheap[0] = l->xheap[--l->xn];
        sift_down(l->xheap, l->xn, 0);
        expired += expire_hash(l, h, now.mono_ms);
    }
    return expired;
}

void ledger_xheap_free(struct ledger *l)
{
    free(l->xheap);
    l->xheap = NULL;
    l->xn = l->xcap = 0;
}

void ledger_on_expired(struct ledger *l, ledger_expired_fn fn, void *arg)
{
    l->on_expired = fn;
    l->expired_arg = arg;
}
