/*
 * edge_track_noloop.c - CLIENT TRACKING's NOLOOP: a client is not told of
 * its own writes, and is told of every other (edge_track.h).
 */
#include <stdlib.h>
#include <string.h>

#include "server/edge/edge_sess.h"
#include "server/edge/edge_track_int.h"

/* A NOLOOP client's own write reaches the ring twice: from its answer here
 * (origin: the client) and from the owner's push to the colo (origin 0),
 * in either order.  A push for a NOLOOP client is held back; its own
 * write's record drops what it supersedes (versions up to its own); what
 * is left is sent when a read of the ring reaches the head while the
 * client has no write in flight (an own write that finished was noted
 * before it finished, so its record was read by then).  So a client is not
 * told of its own write, and is told of every other, a read of the ring
 * later at most (10 ms while it keeps writing). */
int track_defer(struct edge_track *t, struct track_sess *s, uint64_t hash, hkv_stamp version,
                 const char *key, size_t klen)
{
    if (!s->noloop || version == 0)
        return 0; /* version 0: not a change (an eviction, a timer): told now */
    struct tdefer *d = s->ndeferred < TRACK_DEFER_MAX ? malloc(sizeof(*d) + klen) : NULL;
    if (d == NULL) {
        track_send_flush(t, s);
        return 1;
    }
    d->hash = hash;
    d->version = version;
    d->klen = (uint32_t)klen;
    memcpy(d->key, key, klen);
    d->next = s->deferred;
    if (s->deferred == NULL && t->ndeferring++ == 0)
        track_due_arm(t);
    s->deferred = d;
    s->ndeferred++;
    return 1;
}

void track_defer_drop(struct edge_track *t, struct track_sess *s)
{
    if (s->deferred != NULL)
        t->ndeferring--;
    while (s->deferred != NULL) {
        struct tdefer *d = s->deferred;
        s->deferred = d->next;
        free(d);
    }
    s->ndeferred = 0;
}

/* The record of client origin's own write: what it supersedes goes. */
void track_own_write(struct edge_track *t, uint64_t origin, uint64_t hash, hkv_stamp version)
{
    for (struct track_sess *s = t->sessions; s != NULL; s = s->next) {
        if (s->deferred == NULL || s->c->id != origin)
            continue;
        for (struct tdefer **pp = &s->deferred; *pp != NULL;) {
            struct tdefer *d = *pp;
            if (d->hash == hash && d->version <= version) {
                *pp = d->next;
                free(d);
                s->ndeferred--;
            } else
                pp = &d->next;
        }
        if (s->deferred == NULL)
            t->ndeferring--;
    }
}

/* Deferred pushes of clients with no write in flight are sent (call when
 * the ring was read up to its head). */
void track_release(struct edge_track *t)
{
    for (struct track_sess *s = t->sessions; s != NULL && t->ndeferring > 0; s = s->next) {
        if (s->deferred == NULL || sess_of(s->c)->writes_inflight > 0)
            continue;
        for (struct tdefer *d = s->deferred; d != NULL; d = d->next)
            track_send_key(t, s, d->key, d->klen);
        track_defer_drop(t, s);
    }
}

