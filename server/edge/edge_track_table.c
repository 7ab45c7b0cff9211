/*
 * edge_track_table.c - CLIENT TRACKING's table (edge_track_int.h): which
 * sessions read which keys.
 *
 * Keys by hash in a chained table that doubles as it fills.  A key names
 * its readers by session id, as Redis names them by client id, so a pair
 * is 8 bytes of the key's id array (none while the key has one reader:
 * the id is held in the entry), and a session that goes frees nothing
 * then: its ids are skipped when a key is told (the id finds no session),
 * and dropped by the sweep, a few buckets per 10 ms tick, started whenever
 * a session that read keys goes (Redis leaves them until the key changes;
 * here a table of gone clients' keys empties in seconds).  A session id
 * is never reused, so an id outliving its session can never name another.
 *
 * Sessions by id: open addressing with linear probes, at most half full,
 * deletion by backward shift (no tombstones to age).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/router.h"
#include "server/edge/edge_track_int.h"

#define SWEEP_BUCKETS 2048   /* per tick of the 10 ms timer */

/* ---- sessions by id ------------------------------------------------------------- */

static size_t home(const struct edge_track *t, uint64_t sid)
{
    return (size_t)((sid * 0x9E3779B97F4A7C15ULL) >> 29) & (t->smap_cap - 1);
}

struct track_sess *track_sess_find(const struct edge_track *t, uint64_t sid)
{
    if (t->smap_cap == 0)
        return NULL;
    for (size_t i = home(t, sid);; i = (i + 1) & (t->smap_cap - 1)) {
        struct track_sess *s = t->smap[i];
        if (s == NULL || s->sid == sid)
            return s;
    }
}

static void place(struct edge_track *t, struct track_sess *s)
{
    size_t i = home(t, s->sid);
    while (t->smap[i] != NULL)
        i = (i + 1) & (t->smap_cap - 1);
    t->smap[i] = s;
}

int track_sess_add(struct edge_track *t, struct track_sess *s)
{
    if ((t->nsessions + 1) * 2 > t->smap_cap) {
        size_t cap = t->smap_cap ? t->smap_cap * 2 : 16, old = t->smap_cap;
        struct track_sess **m = calloc(cap, sizeof(*m)), **was = t->smap;
        if (m == NULL)
            return -1;
        t->smap = m;
        t->smap_cap = cap;
        for (size_t i = 0; i < old; i++)
            if (was[i] != NULL)
                place(t, was[i]);
        free(was);
    }
    s->sid = ++t->next_sid;
    place(t, s);
    return 0;
}

void track_sess_del(struct edge_track *t, struct track_sess *s)
{
    size_t m = t->smap_cap - 1, i = home(t, s->sid);
    while (t->smap[i] != s)
        i = (i + 1) & m;
    /* Backward shift: an entry after the hole moves into it unless its
     * home lies cyclically in (hole, its slot]. */
    for (size_t j = (i + 1) & m; t->smap[j] != NULL; j = (j + 1) & m) {
        size_t h = home(t, t->smap[j]->sid);
        int stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (!stays) {
            t->smap[i] = t->smap[j];
            i = j;
        }
    }
    t->smap[i] = NULL;
}

/* ---- keys ----------------------------------------------------------------------- */

static struct tkey **bucket(struct edge_track *t, uint32_t hash)
{
    return &t->table[hash & (t->nbuckets - 1)];
}

struct tkey *track_key_find(struct edge_track *t, const char *key, size_t klen, uint64_t hash)
{
    uint32_t h = (uint32_t)hash;
    for (struct tkey *k = *bucket(t, h); k != NULL; k = k->bnext)
        if (k->hash == h && k->klen == klen && memcmp(k->key, key, klen) == 0)
            return k;
    return NULL;
}

static void grow(struct edge_track *t)
{
    size_t n = t->nbuckets * 2;
    if (n > ((size_t)1 << 32))
        return; /* the stored hash has 32 bits: chains grow longer instead */
    struct tkey **nt = calloc(n, sizeof(*nt));
    if (nt == NULL)
        return;
    for (size_t b = 0; b < t->nbuckets; b++) {
        struct tkey *k = t->table[b];
        while (k != NULL) {
            struct tkey *next = k->bnext;
            k->bnext = nt[k->hash & (n - 1)];
            nt[k->hash & (n - 1)] = k;
            k = next;
        }
    }
    free(t->table);
    t->table = nt;
    t->nbuckets = n;
    if (t->sweep_left > 0)
        track_sweep_start(t); /* the buckets moved: from the start */
}

const uint64_t *track_key_ids(const struct tkey *k, uint64_t *one, uint32_t *n)
{
    if (k->u & 1) {
        *one = k->u >> 1;
        *n = 1;
        return one;
    }
    const struct tids *a = (const struct tids *)(uintptr_t)k->u;
    *n = a->n;
    return a->id;
}

/* Unlinks k from its chain at pp and frees it. */
static void unlink_free(struct edge_track *t, struct tkey **pp, struct tkey *k)
{
    *pp = k->bnext;
    if (k->u & 1) {
        t->nitems--;
    } else {
        t->nitems -= ((struct tids *)(uintptr_t)k->u)->n;
        free((void *)(uintptr_t)k->u);
    }
    t->nkeys--;
    free(k);
}

void track_key_free(struct edge_track *t, struct tkey *k)
{
    struct tkey **pp = bucket(t, k->hash);
    while (*pp != k)
        pp = &(*pp)->bnext;
    unlink_free(t, pp, k);
}

void track_table_clear(struct edge_track *t)
{
    for (size_t b = 0; t->table != NULL && b < t->nbuckets; b++)
        while (t->table[b] != NULL)
            unlink_free(t, &t->table[b], t->table[b]);
    t->sweep_left = 0;
}

void track_table_free(struct edge_track *t)
{
    track_table_clear(t);
    free(t->table);
    t->table = NULL;
    free(t->smap);
    t->smap = NULL;
    t->smap_cap = 0;
}

/* Drops the ids of gone sessions from a; how many went. */
static uint32_t compact(struct edge_track *t, struct tids *a)
{
    uint32_t w = 0;
    for (uint32_t r = 0; r < a->n; r++)
        if (track_sess_find(t, a->id[r]) != NULL)
            a->id[w++] = a->id[r];
    uint32_t gone = a->n - w;
    a->n = w;
    t->nitems -= gone;
    return gone;
}

int track_remember(struct edge_track *t, struct track_sess *s, const char *key, size_t klen)
{
    uint64_t hash = router_hash(key, klen), me = s->sid << 1 | 1;
    struct tkey *k = track_key_find(t, key, klen, hash);
    if (k == NULL) {
        if ((k = malloc(offsetof(struct tkey, key) + klen)) == NULL)
            return -1;
        k->u = me;
        k->hash = (uint32_t)hash;
        k->klen = (uint32_t)klen;
        memcpy(k->key, key, klen);
        k->bnext = *bucket(t, k->hash);
        *bucket(t, k->hash) = k;
        t->nitems++;
        s->remembered = 1;
        if (++t->nkeys > t->nbuckets)
            grow(t);
        return 0;
    }
    s->remembered = 1;
    if (k->u & 1) {
        if (k->u == me)
            return 0;
        if (track_sess_find(t, k->u >> 1) == NULL) { /* its one reader is gone */
            k->u = me;
            return 0;
        }
        struct tids *a = malloc(sizeof(*a) + 4 * sizeof(a->id[0]));
        if (a == NULL)
            return -1;
        a->n = 2;
        a->cap = 4;
        a->id[0] = k->u >> 1;
        a->id[1] = s->sid;
        k->u = (uintptr_t)a;
        t->nitems++;
        return 0;
    }
    struct tids *a = (struct tids *)(uintptr_t)k->u;
    for (uint32_t i = a->n; i-- > 0;) /* the latest readers last: a re-read finds itself soon */
        if (a->id[i] == s->sid)
            return 0;
    if (a->n == a->cap && compact(t, a) == 0) {
        if (a->cap >= UINT32_MAX / 2)
            return -1;
        struct tids *b = realloc(a, sizeof(*b) + (size_t)a->cap * 2 * sizeof(b->id[0]));
        if (b == NULL)
            return -1;
        b->cap *= 2;
        k->u = (uintptr_t)(a = b);
    }
    a->id[a->n++] = s->sid;
    t->nitems++;
    return 0;
}

/* ---- the sweep ------------------------------------------------------------------ */

void track_sweep_start(struct edge_track *t)
{
    t->sweep_left = t->nbuckets;
    if (t->sweep_pos >= t->nbuckets)
        t->sweep_pos = 0;
    track_due_arm(t);
}

/* 1 when k keeps a live reader (its gone ones dropped), else 0. */
static int sweep_key(struct edge_track *t, struct tkey *k)
{
    if (k->u & 1)
        return track_sess_find(t, k->u >> 1) != NULL;
    struct tids *a = (struct tids *)(uintptr_t)k->u;
    compact(t, a);
    return a->n > 0;
}

int track_sweep_step(struct edge_track *t)
{
    for (size_t n = 0; n < SWEEP_BUCKETS && t->sweep_left > 0; n++, t->sweep_left--) {
        struct tkey **pp = &t->table[t->sweep_pos];
        while (*pp != NULL) {
            if (sweep_key(t, *pp))
                pp = &(*pp)->bnext;
            else
                unlink_free(t, pp, *pp);
        }
        t->sweep_pos = (t->sweep_pos + 1) & (t->nbuckets - 1);
    }
    return t->sweep_left > 0;
}
