/*
 * owner_recv_map.c - the target's move module, its other half (owner_recv.c
 * has the stream): what the map says ends a move here.  A RECEIVING leaf
 * whose link broke, or that a restart found, is adopted when the map gives
 * it to this owner and dropped when the map shows it elsewhere; never
 * because the link broke alone (CLUSTER.md §5 step 9).  Also the tick (a
 * BEGIN waiting for the map to reach e1, READY once RECEIVING is durable and
 * the leftovers are gone), FLUSHALL, stats and setup.
 */
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/owner/owner_recv_sm.h"

/* ---- the map and the clock ---------------------------------------------------- */

/* A RECEIVING leaf with no live move here (the link broke, or a restart):
 * the map says how its move ended.  1 if it did (adopted or dropped). */
static int settle(struct owner *o, struct own_mark *m, struct rmove *r)
{
    const struct cmap_table *t = owner_own_map(o);
    if (t == NULL)
        return 0;
    const struct cmap_leaf *l = cmap_lookup(t, o->pool, (uint64_t)m->start << 32);
    if (l == NULL)
        return 0;
    if (l->owner == owner_own_number(o) && l->state == CMAP_SERVING && l->epoch > m->e1) {
        if (r != NULL && r->phase == R_ACKED) {
            orecv_adopt(o, r, l->epoch);
        } else if (r == NULL || r->phase == R_ACKED) {
            owner_own_mark_del(o, m); /* a restart: what was acknowledged is on disk */
            owner_park_release(o);
        } else {
            return 0; /* not acknowledged: cannot be (the commit needs the ack) */
        }
        return 1;
    }
    int moving_here = l->state == CMAP_MOVING && l->epoch == m->e1 &&
                      l->to == owner_own_number(o);
    if (moving_here || (l->epoch < m->e1 && t->revision < m->e1))
        return 0; /* the move is still on, or the copy is behind it */
    struct rmove tmp = {.leaf = {(uint8_t)o->pool, m->bits, m->start}, .e1 = m->e1,
                        .from = m->peer};
    if (r == NULL) {
        for (int i = 0; i < OWN_RECV_MAX && r == NULL; i++)
            if (o->recv->m[i].phase == R_FREE)
                r = &o->recv->m[i];
        if (r == NULL)
            return 0;
        *r = tmp;
    }
    orecv_drop(o, r, "the map shows the leaf elsewhere");
    return 1;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct owner *o = arg;
    struct orecv *rv = o->recv;
    int64_t now = clock_mono_ms();
    for (int i = 0; i < OWN_RECV_MAX; i++) {
        struct rmove *r = &rv->m[i];
        if (r->phase == R_WAIT_MAP) {
            int says = orecv_map_says_moving(o, r);
            if (says > 0) {
                orecv_prepare(o, r);
            } else if (says < 0 || now > r->deadline_ms) {
                orecv_send_why(r, HANDOFF_ABORT,
                               "the map does not say the leaf moves here at that epoch");
                orecv_release(o, r);
                memset(r, 0, sizeof(*r));
            }
        } else if (r->phase == R_PREPARING && r->purged &&
                   owner_own_saved_gen(o) >= r->gen_wait) {
            struct hand_msg ready = {.type = HANDOFF_READY, .id = 1, .u.ready = {r->e1}};
            r->phase = R_RECEIVING;
            if (r->h == NULL || owner_hlink_send(r->h, &ready) != HKV_OK)
                orecv_drop(o, r, "the link went before READY");
            else
                owner_move_hook(o, "t_ready");
        }
    }
    /* marks with no live move (a broken link after the ack, a restart) */
    struct own_mark *marks = owner_own_marks(o);
    for (int i = 0; marks != NULL && i < OWN_MAX_MARKS; i++) {
        struct own_mark *m = &marks[i];
        if (!m->used || m->state != PERSIST_RECEIVING || m->adopted)
            continue;
        struct rmove *r = NULL;
        for (int k = 0; k < OWN_RECV_MAX; k++)
            if (rv->m[k].phase != R_FREE && rv->m[k].leaf.start == m->start &&
                rv->m[k].leaf.bits == m->bits && rv->m[k].e1 == m->e1)
                r = &rv->m[k];
        if (r == NULL || ((r->phase == R_RECEIVING || r->phase == R_ACKED) && r->h == NULL) ||
            r->phase == R_ACKED)
            settle(o, m, r);
    }
    /* adopted marks go once the map copy says as much */
    for (int i = 0; marks != NULL && i < OWN_MAX_MARKS; i++) {
        struct own_mark *m = &marks[i];
        if (m->used && m->state == PERSIST_RECEIVING && m->adopted) {
            const struct cmap_table *t = owner_own_map(o);
            const struct cmap_leaf *l = t ? cmap_lookup(t, o->pool, (uint64_t)m->start << 32) : NULL;
            if (l != NULL && l->epoch >= m->e2)
                owner_own_mark_del(o, m);
        }
    }
    ofollow_tick(o);
}

void owner_recv_flushed(struct owner *o)
{
    for (int i = 0; o->recv != NULL && i < OWN_RECV_MAX; i++) {
        struct rmove *r = &o->recv->m[i];
        if (r->phase == R_WAIT_MAP || r->phase == R_PREPARING || r->phase == R_RECEIVING) {
            orecv_send_why(r, HANDOFF_ABORT, "FLUSHALL on the target");
            orecv_drop(o, r, "FLUSHALL");
        }
    }
}

void owner_recv_stats(const struct owner *o, struct orecv_stats *out)
{
    if (o->recv != NULL) {
        *out = o->recv->st;
        out->incoming = 0;
        for (int i = 0; i < OWN_RECV_MAX; i++)
            out->incoming += o->recv->m[i].phase != R_FREE;
    } else {
        memset(out, 0, sizeof(*out));
    }
}

int owner_recv_setup(struct owner *o)
{
    if (o->opts.cluster[0] == '\0')
        return 0;
    o->recv = calloc(1, sizeof(*o->recv));
    if (o->recv == NULL || owner_hlink_setup(o, orecv_on_accept) != 0)
        return -1;
    o->recv->tick = event_new(o->base, -1, EV_PERSIST, on_tick, o);
    o->recv->flush = event_new(o->base, -1, 0, orecv_on_flush, o);
    if (o->recv->tick == NULL || o->recv->flush == NULL)
        return -1;
    struct timeval tv = {0, RECV_TICK_MS * 1000};
    event_add(o->recv->tick, &tv);
    owner_own_on_map(o, owner_follow_settle);
    return 0;
}

void owner_recv_teardown(struct owner *o)
{
    struct orecv *rv = o->recv;
    if (rv == NULL)
        return;
    for (int i = 0; i < OWN_RECV_SLOTS; i++) {
        persist_batch_free(&rv->m[i].cur);
        persist_batch_free(&rv->m[i].tail);
        owner_purge_cancel(o, &rv->m[i]);
    }
    if (rv->tick != NULL)
        event_free(rv->tick);
    if (rv->flush != NULL)
        event_free(rv->flush);
    free(rv);
    o->recv = NULL;
}
