/*
 * edge_track_send.c - CLIENT TRACKING's messages (edge_track.h): where a
 * client's invalidations go (itself under RESP3, its redirect target), the
 * RESP3 push or the RESP2 __redis__:invalidate message, placed after what
 * the target is owed (slot_tail_out), and INFO's figures.  Bytes go to the
 * target and it is marked; one deferred event per loop turn flushes the
 * marked connections (track_on_flush), because a flush may close a
 * connection and the callers are in the middle of the feed or a dispatch.
 */
#include <stdlib.h>
#include <string.h>

#include "server/edge/edge_clients.h"
#include "server/edge/edge_pubsub.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_track_int.h"

/* INFO's gauges and counters (the scoreboard sums the edges). */
void track_publish(struct edge_track *t)
{
    struct board_slot *b = t->e->stats;
    atomic_store_explicit(&b->tracking_clients, t->nsessions, memory_order_relaxed);
    atomic_store_explicit(&b->tracking_total_keys, t->nkeys, memory_order_relaxed);
    atomic_store_explicit(&b->tracking_total_items, t->nitems, memory_order_relaxed);
    atomic_store_explicit(&b->tracking_total_prefixes, t->nprefixes, memory_order_relaxed);
    atomic_store_explicit(&b->tracking_invalidations, t->invalidations, memory_order_relaxed);
    atomic_store_explicit(&b->tracking_flushes, t->flushes, memory_order_relaxed);
    atomic_store_explicit(&b->tracking_evicted_keys, t->evicted, memory_order_relaxed);
}

static void mark(struct edge_track *t, struct conn *c)
{
    if (sess_of(c)->track_dirty)
        return;
    sess_of(c)->track_dirty = 1;
    if (t->ndirty == t->dirty_cap) {
        size_t cap = t->dirty_cap ? t->dirty_cap * 2 : 64;
        struct conn **d = realloc(t->dirty, cap * sizeof(*d));
        if (d == NULL) {
            t->dirty_all = 1; /* the flush looks at every connection instead */
            event_active(t->flush, EV_TIMEOUT, 1);
            return;
        }
        t->dirty = d;
        t->dirty_cap = cap;
    }
    t->dirty[t->ndirty++] = c;
    event_active(t->flush, EV_TIMEOUT, 1);
}

void track_dirty_gone(struct edge_track *t, struct conn *c)
{
    if (!sess_of(c)->track_dirty)
        return;
    for (size_t i = 0; i < t->ndirty; i++)
        if (t->dirty[i] == c)
            t->dirty[i] = NULL;
    sess_of(c)->track_dirty = 0;
}

/* Where s's invalidations go: itself (RESP3), its redirect target (on this
 * edge), or nowhere (RESP2 without a redirect, as in Redis; or a target
 * gone: "tracking-redir-broken" once, to a RESP3 client). */
static struct conn *target_of(struct edge_track *t, struct track_sess *s, int *remote)
{
    *remote = 0;
    if (s->redirect == 0)
        return sess_of(s->c)->proto >= 3 ? s->c : NULL;
    if (s->redir != NULL) /* RESP2: only while it is subscribed, as Redis */
        return sess_of(s->redir)->proto >= 3 || pubsub_active(s->redir) ? s->redir : NULL;
    if (s->remote && clients_still_there(t->e, s->rslot, s->ridx, s->redirect)) {
        *remote = 1;
        return NULL;
    }
    if (!s->broken) {
        s->broken = 1;
        if (sess_of(s->c)->proto >= 3) {
            struct rslot *sl;
            struct hkv_buf *o = slot_tail_out(s->c, &sl);
            if (o != NULL) {
                static const char head[] = ">2\r\n$21\r\ntracking-redir-broken\r\n";
                buf_append(o, head, sizeof(head) - 1);
                resp_add_int(o, (int64_t)s->redirect);
                if (sl != NULL)
                    slot_note(s->c, sl);
                mark(t, s->c);
            }
        }
    }
    return NULL;
}

#define PUSH_HEAD ">2\r\n$10\r\ninvalidate\r\n"
#define MESSAGE_HEAD "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"

/* Sends dst the invalidation whose payload (an encoded RESP value: an
 * array of keys, or a null for "everything") is p[0..n). */
static void send_raw(struct edge_track *t, struct conn *dst, const char *p, size_t n, int flush)
{
    struct rslot *sl;
    struct hkv_buf *o = slot_tail_out(dst, &sl);
    if (o == NULL)
        return;
    if (sess_of(dst)->proto >= 3)
        buf_append(o, PUSH_HEAD, sizeof(PUSH_HEAD) - 1);
    else
        buf_append(o, MESSAGE_HEAD, sizeof(MESSAGE_HEAD) - 1);
    if (flush && sess_of(dst)->proto >= 3)
        buf_append(o, "_\r\n", 3);
    else if (flush)
        buf_append(o, "$-1\r\n", 5);
    else
        buf_append(o, p, n);
    if (sl != NULL)
        slot_note(dst, sl);
    mark(t, dst);
    if (flush)
        t->flushes++;
    else
        t->invalidations++;
}

/* The target is a client of another edge of the colo: the message goes
 * through the colo's bus (edge_pubsub.h), framed by the target's edge
 * (RESP2: the __redis__:invalidate message). */
static void send_remote(struct edge_track *t, struct track_sess *s, const char *p, size_t n,
                        int flush)
{
    static const char chan[] = "__redis__:invalidate";
    if (pubsub_send_to_client(t->e, s->redirect, chan, sizeof(chan) - 1, p, n) == HKV_OK) {
        if (flush)
            t->flushes++;
        else
            t->invalidations++;
    }
}

void track_send_msg(struct edge_track *t, struct track_sess *s, const char *msg, size_t n)
{
    int remote;
    struct conn *dst = target_of(t, s, &remote);
    if (dst == NULL && !remote)
        return;
    s->flushed = 0;
    if (remote)
        send_remote(t, s, msg, n, 0);
    else
        send_raw(t, dst, msg, n, 0);
}

void track_send_key(struct edge_track *t, struct track_sess *s, const char *key, size_t klen)
{
    struct hkv_buf *b = &t->scratch;
    buf_reset(b);
    resp_add_array(b, 1);
    resp_add_bulk(b, key, klen);
    track_send_msg(t, s, buf_head(b), buf_unread(b));
}

/* A flush, unless the client was sent one and has read nothing since (a
 * FLUSHALL notes one record per owner's answer; a restarting owner's push
 * link breaks and comes back). */
void track_send_flush(struct edge_track *t, struct track_sess *s)
{
    if (s->flushed)
        return;
    int remote;
    struct conn *dst = target_of(t, s, &remote);
    if (remote) {
        send_remote(t, s, "$-1\r\n", 5, 1);
        s->flushed = 1;
    } else if (dst != NULL) {
        send_raw(t, dst, NULL, 0, 1);
        s->flushed = 1;
    }
}

/* The timer of timed invalidations and held-back pushes. */
void track_due_arm(struct edge_track *t)
{
    if (!evtimer_pending(t->due_timer, NULL)) {
        struct timeval tv = {0, TRACK_DUE_TICK_MS * 1000};
        evtimer_add(t->due_timer, &tv);
    }
}

