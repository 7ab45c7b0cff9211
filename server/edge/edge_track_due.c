/*
 * edge_track_due.c - CLIENT TRACKING's timed invalidations: keys read while
 * their changes may not be pushed to this colo (owner-push off, the
 * owner's push link not up) are told at the end of their freshness, the
 * class's bound (edge_track.h).  A min-heap by deadline, so a class with a
 * short freshness is not held behind a long one; a key read again while
 * an earlier deadline of it is pending adds nothing (a direct-mapped table
 * by key hash remembers the pending deadlines), so a read storm of one key
 * costs one entry.  Bounded by max_due entries (tracking-table-max-keys):
 * past it a key is told at once.
 */
#include <stdlib.h>
#include <string.h>

#include "server/edge/edge_track_int.h"

static void swap(struct tdue **h, size_t a, size_t b)
{
    struct tdue *x = h[a];
    h[a] = h[b];
    h[b] = x;
}

int track_due_add(struct edge_track *t, const char *key, size_t klen, uint64_t hash,
                  int64_t at, int64_t now)
{
    struct tseen *m = &t->duemap[hash & (TRACK_SEEN - 1)];
    if (m->hash == hash && (int64_t)m->version >= now && (int64_t)m->version <= at)
        return 0; /* an earlier deadline of this key is pending */
    if (t->ndue >= t->max_due)
        return -1;
    if (t->ndue == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct tdue **h = realloc(t->heap, cap * sizeof(*h));
        if (h == NULL)
            return -1;
        t->heap = h;
        t->cap = cap;
    }
    struct tdue *d = malloc(sizeof(*d) + klen);
    if (d == NULL)
        return -1;
    d->at = at;
    d->klen = (uint32_t)klen;
    memcpy(d->key, key, klen);
    m->hash = hash;
    m->version = (uint64_t)at;
    size_t i = t->ndue++;
    t->heap[i] = d;
    while (i > 0 && t->heap[(i - 1) / 2]->at > t->heap[i]->at) {
        swap(t->heap, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return 0;
}

struct tdue *track_due_pop(struct edge_track *t, int64_t now)
{
    if (t->ndue == 0 || t->heap[0]->at > now)
        return NULL;
    struct tdue *top = t->heap[0];
    t->heap[0] = t->heap[--t->ndue];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < t->ndue && t->heap[l]->at < t->heap[m]->at)
            m = l;
        if (r < t->ndue && t->heap[r]->at < t->heap[m]->at)
            m = r;
        if (m == i)
            break;
        swap(t->heap, i, m);
        i = m;
    }
    return top;
}

void track_due_free(struct edge_track *t)
{
    for (size_t i = 0; i < t->ndue; i++)
        free(t->heap[i]);
    free(t->heap);
    t->heap = NULL;
    t->ndue = t->cap = 0;
}
