/*
 * owner_handover.c - a primary hands one of its leaves to an in-sync
 * follower on an operator's order (owner_handover.h has the steps;
 * CLUSTER.md §7 "Planned hand-over"): the last steps of a move (§5 4-7)
 * with a follower that already holds everything, so writes wait only for
 * the stream's tail, one CAS and this owner's next look at the map.
 *
 * Why it loses nothing: from the fence on no write to the leaf is applied
 * here, and the CAS is sent only once the follower holds every result sent
 * to it, no answer of the leaf waits (so every acknowledged write, and
 * every durable one's commit, is at the follower) and the follower has
 * committed what it holds (HANDOFF_FENCE on the stream): the CAS leaves
 * this owner out of the in-sync set, so until a follower is seeded again
 * the new primary's file is the only other copy, and a crash of it must
 * not reload one older than what was acknowledged here.  The requests parked by
 * the fence never ran here; released as MOVED, the edges send them to the
 * new primary, where the completion records that travelled with the stream
 * answer a retry of an earlier write exactly once.  Why no write is
 * acknowledged twice: until this owner's map copy shows the new primary it
 * serves nothing of the leaf, reads included, once the CAS is out.
 *
 * An in-doubt CAS that turns out not applied (the read shows this owner at
 * the same epoch) unfences; were it to apply later still, this owner's
 * acknowledgments go on waiting for the follower (it is in the set), so the
 * promoted follower holds them: at worst an answer says "outcome unknown".
 */
#include "server/owner/owner_handover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/owner/owner_int.h"
#include "server/owner/owner_move_int.h"
#include "server/owner/owner_repl.h"

enum hphase {
    H_IDLE,
    H_DRAIN,     /* writes fenced: waiting for the follower to hold the tail */
    H_CAS,       /* LEAF_HANDOVER out: reads wait too */
    H_DOUBT,     /* its outcome unknown: LEAF_READ until known */
    H_RELEASE,   /* the map moved (or will): waiting for this owner's copy to show it */
};

struct hqueued { struct hand_leaf leaf; uint32_t to; uint64_t order; };

struct ohandover {
    struct hqueued queue[OHANDOVER_QUEUE]; /* orders for other leaves, in arrival order */
    int nqueue;
    enum hphase phase;
    struct hand_leaf leaf;
    uint32_t to;
    int64_t epoch;               /* the CAS compares it */
    uint64_t order;              /* the agent's order, answered at the end */
    int done;                    /* H_RELEASE: `to` became the primary */
    int call_out;
    int64_t fence_ms, deadline_ms, next_read_ms;
    struct event *tick;
    struct ohandover_stats st;
};

enum ohandover_verdict ohandover_verdict(const struct hand_msg *r, int cas, unsigned me,
                                         unsigned to, int64_t epoch)
{
    int32_t st = r->u.reply.status;
    if (cas && st == LEAF_ST_OK)
        return OHV_DONE;
    if (cas && st == LEAF_ST_REFUSED)
        return OHV_BACK; /* not tried: nothing changed */
    if (st == LEAF_ST_UNKNOWN || (!cas && st != LEAF_ST_OK))
        return OHV_AGAIN;
    /* LOST (the truth is in the reply), or a read's truth */
    if (r->u.reply.exists && r->u.reply.owner == me)
        return OHV_BACK; /* the map names this owner still (a moving state: from it) */
    if (r->u.reply.exists && r->u.reply.owner == to && r->u.reply.at > epoch)
        return OHV_DONE;
    return OHV_MOVED_ON;
}

static const char *leaf_name(const struct hand_leaf *l, char *buf, size_t len)
{
    snprintf(buf, len, "%u-%08x", l->bits, l->bits ? l->start >> (32 - l->bits) : 0);
    return buf;
}

static void arm(struct owner *o, int on)
{
    struct ohandover *h = o->handover;
    if (!on) {
        event_del(h->tick);
        return;
    }
    struct timeval tv = {0, OHANDOVER_TICK_MS * 1000};
    event_add(h->tick, &tv);
}

/* The end: the hold goes, parked requests run again (here, or to MOVED). */
static void finish(struct owner *o, int ok, const char *why)
{
    struct ohandover *h = o->handover;
    char n[32], text[200];
    uint64_t ms = (uint64_t)(clock_mono_ms() - h->fence_ms);
    owner_own_hold(o, h->leaf.start, h->leaf.bits, OWN_BLOCK_NONE);
    owner_park_release(o);
    h->st.ms_last = ms;
    if (ms > h->st.ms_max)
        h->st.ms_max = ms;
    if (ok)
        h->st.done++;
    else
        h->st.failed++;
    snprintf(text, sizeof(text), "%s; writes paused %llu ms", why, (unsigned long long)ms);
    log_notice("hand-over of leaf %s to owner %u: %s", leaf_name(&h->leaf, n, sizeof(n)), h->to,
               text);
    if (h->order != 0)
        owner_agent_done(o, h->order, ok ? LEAF_ST_OK : LEAF_ST_LOST, text);
    h->order = 0;
    h->phase = H_IDLE;
    if (h->nqueue == 0)
        arm(o, 0); /* else the tick starts the next */
}

/* A verdict on the CAS's answer or a read's. */
static void judge(struct owner *o, enum ohandover_verdict v)
{
    struct ohandover *h = o->handover;
    switch (v) {
    case OHV_DONE:
    case OHV_MOVED_ON:
        h->done = v == OHV_DONE;
        h->phase = H_RELEASE; /* the tick releases once the map copy moved past the epoch */
        break;
    case OHV_BACK:
        finish(o, 0, "the map still names this owner: writes go on here");
        break;
    case OHV_AGAIN:
        h->phase = H_DOUBT;
        h->next_read_ms = clock_mono_ms() + OHANDOVER_READ_MS;
        break;
    }
}

static void on_cas_reply(struct owner *o, void *arg, const struct hand_msg *r)
{
    struct ohandover *h = o->handover;
    h->call_out = 0;
    if (h->phase != H_CAS)
        return;
    if (r->u.reply.status == LEAF_ST_UNKNOWN) {
        char n[32];
        log_notice("hand-over of leaf %s: the CAS's outcome is unknown (%.*s); the leaf stays "
                   "fenced until the map says", leaf_name(&h->leaf, n, sizeof(n)),
                   (int)r->u.reply.text.len, r->u.reply.text.p);
    }
    judge(o, ohandover_verdict(r, 1, owner_own_number(o), h->to, h->epoch));
}

static void on_read_reply(struct owner *o, void *arg, const struct hand_msg *r)
{
    struct ohandover *h = o->handover;
    h->call_out = 0;
    if (h->phase == H_DOUBT)
        judge(o, ohandover_verdict(r, 0, owner_own_number(o), h->to, h->epoch));
}

/* The follower holds everything: the CAS (reads wait from now on). */
static void send_cas(struct owner *o)
{
    struct ohandover *h = o->handover;
    owner_own_hold(o, h->leaf.start, h->leaf.bits, OWN_BLOCK_ALL);
    h->phase = H_CAS;
    h->call_out = 1;
    if (owner_agent_call(o, LEAF_HANDOVER, h->leaf, h->epoch, h->to,
                         o->opts.etcd_timeout_ms + 1000, on_cas_reply, NULL) != 0) {
        h->call_out = 0;
        finish(o, 0, "no control channel to the agent");
    }
}

/* The map copy no longer gives the leaf to this owner at the epoch. */
static int map_moved(struct owner *o)
{
    struct ohandover *h = o->handover;
    const struct cmap_table *t = owner_own_map(o);
    if (t == NULL)
        return 0;
    const struct cmap_leaf *l = cmap_lookup(t, o->pool, (uint64_t)h->leaf.start << 32);
    return l == NULL || l->start != h->leaf.start || l->bits != h->leaf.bits ||
           l->epoch > h->epoch || l->owner != owner_own_number(o);
}

static void start(struct owner *o, struct hand_leaf lf, uint32_t want, uint64_t order);

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct owner *o = arg;
    struct ohandover *h = o->handover;
    int64_t now = clock_mono_ms();
    owner_own_refresh(o);
    if (h->phase == H_IDLE && h->nqueue > 0) {
        struct hqueued next = h->queue[0];
        memmove(&h->queue[0], &h->queue[1], (size_t)--h->nqueue * sizeof(h->queue[0]));
        start(o, next.leaf, next.to, next.order);
        return;
    }
    if (h->phase == H_IDLE)
        arm(o, 0);
    switch (h->phase) {
    case H_DRAIN: {
        const struct cmap_table *t = owner_own_map(o);
        const struct cmap_leaf *l = t != NULL ? cmap_lookup(t, o->pool,
                                                            (uint64_t)h->leaf.start << 32) : NULL;
        if (l == NULL || l->start != h->leaf.start || l->bits != h->leaf.bits ||
            l->owner != owner_own_number(o) || l->state != CMAP_SERVING) {
            finish(o, 0, "the map changed under the hand-over");
            break;
        }
        int64_t e = 0;
        int rc = owner_repl_caught_up(o, h->leaf, h->to, &e);
        if (l->epoch > h->epoch) /* an in-sync CAS meanwhile (the stream may know it first) */
            h->epoch = l->epoch;
        if (e > h->epoch)
            h->epoch = e;
        if (rc == -2)
            finish(o, 0, "the follower could not commit what it holds");
        else if (rc < 0)
            finish(o, 0, "the follower left the in-sync set");
        else if (rc == 1)
            send_cas(o);
        else if (now >= h->deadline_ms)
            finish(o, 0, "the follower did not catch up within move-fence-timeout");
        break;
    }
    case H_DOUBT:
        if (!h->call_out && now >= h->next_read_ms) {
            h->call_out = 1;
            h->next_read_ms = now + OHANDOVER_READ_MS;
            if (owner_agent_call(o, LEAF_READ, h->leaf, 0, 0, o->opts.etcd_timeout_ms + 1000,
                                 on_read_reply, NULL) != 0)
                h->call_out = 0;
        }
        break;
    case H_RELEASE:
        if (map_moved(o))
            finish(o, h->done, h->done ? "handed over" : "the leaf moved on meanwhile");
        break;
    default:
        break;
    }
}

void owner_handover_order(struct owner *o, const struct hand_msg *ord)
{
    struct ohandover *h = o->handover;
    struct hand_leaf lf = ord->u.order.leaf;
    if (h != NULL && h->phase != H_IDLE && h->leaf.start == lf.start && h->leaf.bits == lf.bits) {
        h->order = ord->id; /* the same hand-over, asked again: it answers this order */
        return;
    }
    for (int i = 0; h != NULL && i < h->nqueue; i++)
        if (h->queue[i].leaf.start == lf.start && h->queue[i].leaf.bits == lf.bits) {
            h->queue[i].order = ord->id;
            return;
        }
    if (h != NULL && (h->phase != H_IDLE || h->nqueue > 0)) {
        if (h->nqueue == OHANDOVER_QUEUE) {
            owner_agent_done(o, ord->id, LEAF_ST_REFUSED, "too many hand-overs queued here");
            return;
        }
        h->queue[h->nqueue++] = (struct hqueued){lf, ord->u.order.to, ord->id};
        return; /* one at a time: a drain hands this owner's leaves over in turn */
    }
    start(o, lf, ord->u.order.to, ord->id);
}

/* The checks, then the fence. */
static void start(struct owner *o, struct hand_leaf lf, uint32_t want, uint64_t order)
{
    struct ohandover *h = o->handover;
    char why[200] = "", n[32];
    owner_own_refresh(o);
    const struct cmap_table *t = owner_own_map(o);
    const struct cmap_leaf *l = t != NULL ? cmap_lookup(t, o->pool, (uint64_t)lf.start << 32)
                                          : NULL;
    int64_t epoch = 0;
    uint32_t to = 0;
    if (h == NULL)
        snprintf(why, sizeof(why), "hand-overs are off here");
    else if (l == NULL || l->start != lf.start || l->bits != lf.bits || lf.pool != o->pool)
        snprintf(why, sizeof(why), "no such leaf in this owner's pool");
    else if (l->owner != owner_own_number(o) || l->state != CMAP_SERVING ||
             owner_own_mark(o, lf.start, lf.bits) != NULL)
        snprintf(why, sizeof(why), "leaf %s is not served by this owner alone",
                 leaf_name(&lf, n, sizeof(n)));
    else if ((to = owner_repl_pick(o, lf, want, &epoch)) == 0 && want != 0)
        snprintf(why, sizeof(why), "owner %u is no live in-sync follower of leaf %s", want,
                 leaf_name(&lf, n, sizeof(n)));
    else if (to == 0)
        snprintf(why, sizeof(why), "leaf %s has no live in-sync follower",
                 leaf_name(&lf, n, sizeof(n)));
    if (why[0] != '\0') {
        log_notice("hand-over order refused: %s", why);
        owner_agent_done(o, order, LEAF_ST_REFUSED, why);
        return;
    }
    h->phase = H_DRAIN;
    h->leaf = lf;
    h->to = to;
    h->order = order;
    h->epoch = epoch > l->epoch ? epoch : l->epoch;
    h->done = h->call_out = 0;
    h->fence_ms = clock_mono_ms();
    h->deadline_ms = h->fence_ms + o->opts.move_fence_timeout_ms;
    owner_own_hold(o, lf.start, lf.bits, OWN_BLOCK_WRITES);
    log_notice("hand-over of leaf %s to owner %u: writes fenced (epoch %lld)",
               leaf_name(&lf, n, sizeof(n)), to, (long long)h->epoch);
    arm(o, 1);
    on_tick(-1, 0, o); /* a follower that holds everything already: the CAS goes now */
}

int owner_handover_busy(const struct owner *o)
{
    return o->handover != NULL && o->handover->phase != H_IDLE;
}

void owner_handover_stats(const struct owner *o, struct ohandover_stats *out)
{
    if (o->handover == NULL) {
        memset(out, 0, sizeof(*out));
        return;
    }
    *out = o->handover->st;
    out->busy = o->handover->phase != H_IDLE;
}

int owner_handover_setup(struct owner *o)
{
    if (o->opts.cluster[0] == '\0')
        return 0;
    struct ohandover *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return -1;
    o->handover = h;
    h->tick = event_new(o->base, -1, EV_PERSIST, on_tick, o);
    return h->tick != NULL ? 0 : -1;
}

void owner_handover_teardown(struct owner *o)
{
    struct ohandover *h = o->handover;
    if (h == NULL)
        return;
    if (h->tick != NULL)
        event_free(h->tick);
    free(h);
    o->handover = NULL;
}
