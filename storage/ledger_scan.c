/*
 * ledger_scan.c - the ledger's walks over its buckets: SCAN, the sweep and
 * the eviction hand.
 *
 * SCAN uses Redis's reverse-binary cursor: the cursor is a bucket index
 * whose bits are incremented from the top down.  Because the table size is
 * a power of two and a key's bucket is the low bits of its hash, the buckets
 * of a smaller table are prefixes of those of a larger one, so after a grow
 * (or while both tables exist) the cursor resumes at the expansion of where
 * it was and never skips a bucket it had not visited.  The cost is that a
 * key may be reported twice.
 *
 * The sweep and the eviction hand only need to come round eventually, so
 * each keeps a plain ordinal that it maps onto the current table(s) with
 * ledger_slots(); a resize just makes them start a new lap.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "proto/hkv.h"
#include "storage/ledger.h"
#include "storage/ledger_int.h"

#define EVICT_MAX_BUCKETS 1024 /* bucket visits per eviction call */

/* ---- glob --------------------------------------------------------------- */

/* Matches one pattern item at p[*pi] against c; *pi moves past the item. */
static int match_item(const char *p, size_t plen, size_t *pi, char c)
{
    size_t i = *pi;
    if (p[i] == '?') {
        *pi = i + 1;
        return 1;
    }
    if (p[i] == '\\' && i + 1 < plen) {
        *pi = i + 2;
        return p[i + 1] == c;
    }
    if (p[i] != '[') {
        *pi = i + 1;
        return p[i] == c;
    }
    i++;
    int neg = 0, hit = 0;
    if (i < plen && p[i] == '^') {
        neg = 1;
        i++;
    }
    while (i < plen && p[i] != ']') {
        if (p[i] == '\\' && i + 1 < plen) {
            hit |= p[i + 1] == c;
            i += 2;
        } else if (i + 2 < plen && p[i + 1] == '-' && p[i + 2] != ']') {
            unsigned char lo = (unsigned char)p[i], hi = (unsigned char)p[i + 2];
            if (lo > hi) {
                unsigned char t = lo;
                lo = hi;
                hi = t;
            }
            hit |= (unsigned char)c >= lo && (unsigned char)c <= hi;
            i += 3;
        } else {
            hit |= p[i] == c;
            i++;
        }
    }
    *pi = i < plen ? i + 1 : i; /* past ']'; an unclosed class ends the pattern */
    return neg ? !hit : hit;
}

/* Glob match with one backtrack point per '*': linear in practice and never
 * exponential, whatever the pattern. */
int ledger_glob(const char *p, size_t plen, const char *s, size_t slen)
{
    size_t pi = 0, si = 0, star_p = SIZE_MAX, star_s = 0;
    while (si < slen) {
        if (pi < plen && p[pi] == '*') {
            star_p = ++pi;
            star_s = si;
            continue;
        }
        if (pi < plen) {
            size_t next = pi;
            if (match_item(p, plen, &next, s[si])) {
                pi = next;
                si++;
                continue;
            }
        }
        if (star_p == SIZE_MAX)
            return 0;
        pi = star_p;
        si = ++star_s;
    }
    while (pi < plen && p[pi] == '*')
        pi++;
    return pi == plen;
}

/* ---- scan --------------------------------------------------------------- */

#define SCAN_MAX_VISITS 65536 /* buckets one SCAN call may visit: ~100 us */

static uint64_t rev64(uint64_t v)
{
    v = ((v >> 1) & 0x5555555555555555ULL) | ((v & 0x5555555555555555ULL) << 1);
    v = ((v >> 2) & 0x3333333333333333ULL) | ((v & 0x3333333333333333ULL) << 2);
    v = ((v >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((v & 0x0F0F0F0F0F0F0F0FULL) << 4);
    v = ((v >> 8) & 0x00FF00FF00FF00FFULL) | ((v & 0x00FF00FF00FF00FFULL) << 8);
    v = ((v >> 16) & 0x0000FFFF0000FFFFULL) | ((v & 0x0000FFFF0000FFFFULL) << 16);
    return (v >> 32) | (v << 32);
}

struct scan_ctx {
    const char *pattern;
    size_t plen;
    uint64_t now_mono;
    ledger_scan_fn fn;
    void *arg;
    size_t emitted;
};

static void scan_chain(const struct lentry *e, struct scan_ctx *c)
{
    for (; e != NULL; e = e->next) {
        if (!entry_live(e, c->now_mono))
            continue;
        if (c->pattern != NULL && !ledger_glob(c->pattern, c->plen, e->key, e->klen))
            continue;
        c->fn(e->key, e->klen, c->arg);
        c->emitted++;
    }
}

static uint64_t scan_step(struct ledger *l, uint64_t v, struct scan_ctx *c)
{
    if (l->rehashidx < 0) {
        uint64_t m0 = l->t[0].mask;
        scan_chain(l->t[0].b[v & m0], c);
        v |= ~m0;
        return rev64(rev64(v) + 1);
    }
    const struct ltable *small = &l->t[0], *big = &l->t[1];
    if (small->size > big->size) {
        const struct ltable *t = small;
        small = big;
        big = t;
    }
    uint64_t m0 = small->mask, m1 = big->mask;
    scan_chain(small->b[v & m0], c);
    do {
        scan_chain(big->b[v & m1], c);
        v |= ~m1;
        v = rev64(rev64(v) + 1);
    } while (v & (m0 ^ m1));
    return v;
}

uint64_t ledger_scan(struct ledger *l, uint64_t cursor, size_t count, const char *pattern,
                     size_t plen, struct ledger_clock now, ledger_scan_fn fn, void *arg)
{
    struct scan_ctx c = {pattern, plen, now.mono_ms, fn, arg, 0};
    if (count == 0)
        count = 10;
    /* Redis visits up to count * 10 buckets of a table it keeps dense.  This
     * table may be sparse in live keys (tombstones wait out their horizon,
     * and it shrinks only after), so the budget grows with the buckets per
     * live key: a SCAN after many deletes takes about as many calls as
     * Redis's, each still bounded. */
    size_t buckets = l->t[0].size + (l->rehashidx >= 0 ? l->t[1].size : 0);
    size_t per_live = buckets / (l->st.keys ? l->st.keys : 1);
    size_t max_visits = count > SIZE_MAX / 10 ? SIZE_MAX : count * 10;
    if (per_live > 1)
        max_visits = max_visits > SCAN_MAX_VISITS / per_live ? SCAN_MAX_VISITS : max_visits * per_live;
    if (max_visits < count * 10)
        max_visits = count * 10;
    size_t visits = 0;
    do {
        cursor = scan_step(l, cursor, &c);
        visits++;
    } while (cursor != 0 && c.emitted < count && visits < max_visits);
    return cursor;
}

/* ---- sweep and eviction ------------------------------------------------- */

size_t ledger_sweep(struct ledger *l, struct ledger_clock now, size_t budget)
{
    /* Due deadlines first (exact, from the heap), then the bucket walk that
     * collects old tombstones and catches anything the heap lost. */
    size_t changed = ledger_expire_due(l, now, budget * 8);
    ledger_shrink_if_sparse(l);
    for (size_t b = 0; b < budget; b++) {
        struct ltable *tabs[2];
        size_t idx[2];
        int n = ledger_slots(l, l->sweep_pos++, tabs, idx);
        for (int k = 0; k < n; k++) {
            struct lentry **pp = &tabs[k]->b[idx[k]];
            while (*pp != NULL) {
                struct lentry *e = *pp;
                uint64_t deadline = entry_expire_mono(e);
                if (deadline != 0 && deadline <= now.mono_ms) {
                    if (ledger_make_tomb(l, e, e->stamp, now.mono_ms) == HKV_OK) {
                        l->st.expired++; /* else: no memory now, a later pass retries */
                        changed++;
                        if (l->on_expired != NULL)
                            l->on_expired(l->expired_arg, e->key, e->klen);
                    }
                } else if ((e->flags & E_TOMB) && e->state == D_CLEAN &&
                           now.mono_ms >= e->tomb_mono + l->tombstone_ttl_ms) {
                    ledger_drop(l, tabs[k], pp);
                    l->st.tombstones_collected++;
                    changed++;
                    continue;
                }
                pp = &e->next;
            }
        }
    }
    return changed;
}

void ledger_evict(struct ledger *l)
{
    for (size_t v = 0; v < EVICT_MAX_BUCKETS; v++) {
        struct ltable *tabs[2];
        size_t idx[2];
        int n = ledger_slots(l, l->hand++, tabs, idx);
        for (int k = 0; k < n; k++) {
            struct lentry **pp = &tabs[k]->b[idx[k]];
            while (*pp != NULL) {
                struct lentry *e = *pp;
                if (e->state != D_CLEAN) {
                    pp = &e->next;
                } else if (e->flags & E_REF) {
                    e->flags &= (uint8_t)~E_REF; /* second chance */
                    pp = &e->next;
                } else {
                    ledger_drop(l, tabs[k], pp);
                    l->st.evictions++;
                    l->complete = 0;
                    l->evicted_ever = 1;
                    if (l->st.memory_bytes <= l->maxmemory)
                        return;
                }
            }
        }
    }
}
