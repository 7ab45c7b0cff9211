/*
 * owner_move_ctl.c - the source's move module, its other half (owner_move.c
 * has the steps): starting a move (an operator's order through the agent,
 * or a caller), splits asked of the agent, settling a HANDING_OFF mark a
 * restart found (step 10: not served until the map says how the move
 * ended), putting back a leaf the map shows moving from this owner with no
 * move here, the tick, and what the rest of the owner calls.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/owner/owner_handover.h"
#include "server/owner/owner_move_sm.h"
#include "server/owner/owner_repl.h"

/* ---- settling what a restart found, and stale moves ---------------------- */

struct settle {
    struct owner *o;
    uint32_t start;
    uint8_t bits;
    int64_t e1;
    uint32_t to;
};

static struct own_mark *settle_mark(struct owner *o, const struct settle *s)
{
    struct own_mark *k = owner_own_mark(o, s->start, s->bits);
    return k != NULL && k->state == PERSIST_HANDING_OFF && k->unresolved && k->e1 == s->e1 ? k
                                                                                          : NULL;
}

static void settled(struct owner *o, struct own_mark *k, const char *how)
{
    log_notice("leaf %u-%08x (handing off at epoch %lld when this owner stopped): %s", k->bits,
               k->bits ? k->start >> (32 - k->bits) : 0, (long long)k->e1, how);
    owner_park_release(o);
}

static void on_settle_abort(struct owner *o, void *arg, const struct hand_msg *r)
{
    struct settle *s = arg;
    struct own_mark *k = settle_mark(o, s);
    mv(o)->call_out = 0;
    if (k != NULL && (r->u.reply.status == LEAF_ST_OK || is_mine(o, r))) {
        owner_own_mark_del(o, k);
        settled(o, k, "aborted; served here");
    } else if (k != NULL && r->u.reply.exists && r->u.reply.owner == s->to &&
               r->u.reply.state == CMAP_SERVING) {
        k->state = PERSIST_GONE;
        k->e2 = r->u.reply.at;
        k->block = OWN_BLOCK_NONE;
        k->unresolved = 0;
        owner_own_changed(o);
        owner_purge_leaf(o, k->start, k->bits, 1, NULL, NULL);
        settled(o, k, "its commit had applied: gone");
    }
    free(s);
}

static void on_settle_read(struct owner *o, void *arg, const struct hand_msg *r)
{
    struct settle *s = arg;
    struct own_mark *k = settle_mark(o, s);
    mv(o)->call_out = 0;
    if (k == NULL || r->u.reply.status != LEAF_ST_OK) {
        free(s); /* tried again at the next settle tick */
        return;
    }
    if (r->u.reply.exists && r->u.reply.owner == s->to && r->u.reply.state == CMAP_SERVING) {
        k->state = PERSIST_GONE;
        k->e2 = r->u.reply.at;
        k->block = OWN_BLOCK_NONE;
        k->unresolved = 0;
        owner_own_changed(o);
        owner_purge_leaf(o, k->start, k->bits, 1, NULL, NULL);
        settled(o, k, "its commit had applied: gone");
        free(s);
    } else if (is_mine(o, r)) {
        owner_own_mark_del(o, k);
        settled(o, k, "the map shows it here; served");
        free(s);
    } else if (r->u.reply.exists && r->u.reply.owner == owner_own_number(o) &&
               r->u.reply.state == CMAP_MOVING) {
        struct hand_leaf l = {(uint8_t)o->pool, s->bits, s->start};
        mv(o)->call_out = 1;
        if (owner_agent_call(o, LEAF_ABORT, l, r->u.reply.at, r->u.reply.to, agent_timeout(o),
                             on_settle_abort, s) != 0) {
            mv(o)->call_out = 0;
            free(s);
        }
    } else {
        free(s); /* not this owner's any more (split, or moved by hand): read again later */
    }
}

/* A HANDING_OFF mark from a restart: one read (then maybe an abort) at a
 * time, while no move runs. */
static void settle_marks(struct owner *o)
{
    struct own_mark *marks = owner_own_marks(o);
    for (int i = 0; marks != NULL && i < OWN_MAX_MARKS; i++) {
        struct own_mark *k = &marks[i];
        if (!k->used || k->state != PERSIST_HANDING_OFF || !k->unresolved)
            continue;
        struct settle *s = malloc(sizeof(*s));
        if (s == NULL)
            return;
        *s = (struct settle){o, k->start, k->bits, k->e1, k->peer};
        struct hand_leaf l = {(uint8_t)o->pool, k->bits, k->start};
        mv(o)->call_out = 1;
        if (owner_agent_call(o, LEAF_READ, l, 0, 0, agent_timeout(o), on_settle_read, s) != 0) {
            mv(o)->call_out = 0;
            free(s);
        }
        return;
    }
}

/* A leaf the map shows moving from this owner with no move here: its
 * intent applied but this owner never went on (no HANDING_OFF was durable,
 * so no LEAF_COMMIT was sent).  Put back; the CAS makes it harmless. */
static void abort_stale(struct owner *o)
{
    struct omove *m = mv(o);
    const struct cmap_table *t = owner_own_map(o);
    unsigned me = owner_own_number(o);
    for (uint32_t i = 0; t != NULL && me != 0 && i < t->nleaves[o->pool]; i++) {
        const struct cmap_leaf *l = &t->leaves[o->pool][i];
        if (l->owner != me || l->state != CMAP_MOVING || l->epoch == m->stale_abort_epoch ||
            owner_own_mark(o, l->start, l->bits) != NULL ||
            (m->phase != M_IDLE && m->leaf.start == l->start && m->leaf.bits == l->bits))
            continue;
        struct hand_leaf lf = {(uint8_t)o->pool, l->bits, l->start};
        log_notice("leaf %u-%08x is moving from this owner at epoch %lld with no move here: "
                   "putting it back", l->bits, l->bits ? l->start >> (32 - l->bits) : 0,
                   (long long)l->epoch);
        m->stale_abort_epoch = l->epoch;
        owner_agent_call(o, LEAF_ABORT, lf, l->epoch, l->to, agent_timeout(o), NULL, NULL);
        return;
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct owner *o = arg;
    struct omove *m = mv(o);
    int64_t now = clock_mono_ms();
    omove_tick(o, now);
    if (m->phase == M_IDLE && !m->call_out && now >= m->settle_ms) {
        m->settle_ms = now + SETTLE_MS;
        settle_marks(o);
        if (!m->call_out)
            abort_stale(o);
    }
}

/* ---- starting ---------------------------------------------------------------- */

int owner_move_start(struct owner *o, struct hand_leaf leaf, uint32_t to, uint64_t order,
                     char *why, size_t len)
{
    struct omove *m = mv(o);
    owner_own_refresh(o);
    const struct cmap_table *t = owner_own_map(o);
    const struct cmap_leaf *l = t != NULL ? cmap_lookup(t, o->pool, (uint64_t)leaf.start << 32)
                                          : NULL;
    const struct cmap_owner *target = t != NULL ? cmap_owner(t, to) : NULL;
    if (m == NULL || m->phase != M_IDLE || m->call_out)
        snprintf(why, len, "a move is under way from this owner");
    else if (owner_handover_busy(o))
        snprintf(why, len, "a hand-over to a follower is under way from this owner");
    else if (l == NULL || l->start != leaf.start || l->bits != leaf.bits || leaf.pool != o->pool)
        snprintf(why, len, "no such leaf in this owner's pool");
    else if (l->owner != owner_own_number(o) || l->state != CMAP_SERVING)
        snprintf(why, len, "the leaf is not served by this owner alone (owner %u, %s)", l->owner,
                 l->state == CMAP_MOVING ? "moving" : "serving");
    else if (target == NULL || target->pool != o->pool || to == owner_own_number(o))
        snprintf(why, len, "owner %u is no other owner of this pool", to);
    else if (!target->live)
        snprintf(why, len, "owner %u is not live", to);
    else if (owner_own_mark(o, leaf.start, leaf.bits) != NULL)
        snprintf(why, len, "the leaf has an unfinished move here");
    else
        why[0] = '\0';
    if (why[0] != '\0')
        return -1;
    *m = (struct omove){.phase = M_INTENT, .leaf = leaf, .to = to, .target = *target,
                        .e0 = l->epoch, .order = order, .started_ms = clock_mono_ms(),
                        .tick = m->tick, .settle_ms = m->settle_ms,
                        .stale_abort_epoch = m->stale_abort_epoch, .st = m->st};
    m->st.started++;
    m->call_out = 1;
    if (owner_agent_call(o, LEAF_INTENT, leaf, l->epoch, to, agent_timeout(o), omove_on_intent_reply,
                         NULL) != 0) {
        m->call_out = 0;
        m->phase = M_IDLE;
        snprintf(why, len, "no control channel to the agent");
        return -1;
    }
    char n[48];
    log_notice("move of leaf %s to owner %u starts (epoch %lld)", name(&leaf, n, sizeof(n)), to,
               (long long)l->epoch);
    return 0;
}

static void on_split_reply(struct owner *o, void *arg, const struct hand_msg *r)
{
    uint64_t order = (uint64_t)(uintptr_t)arg;
    if (r->u.reply.status == LEAF_ST_OK)
        mv(o)->st.splits++;
    else
        mv(o)->st.splits_failed++;
    owner_agent_done(o, order, r->u.reply.status, r->u.reply.status == LEAF_ST_OK ? "split"
                                                                                  : "not split");
}

static void on_order(struct owner *o, const struct hand_msg *ord)
{
    char why[200];
    struct omove *m = mv(o);
    if (ord->u.order.kind == LEAF_ORDER_FOLLOW) {
        owner_repl_order(o, ord); /* seed a follower (owner_repl.h) */
        return;
    }
    if (ord->u.order.kind == LEAF_ORDER_HANDOVER) {
        if (m->phase != M_IDLE && m->leaf.start == ord->u.order.leaf.start &&
            m->leaf.bits == ord->u.order.leaf.bits)
            owner_agent_done(o, ord->id, LEAF_ST_REFUSED, "the leaf is moving");
        else
            owner_handover_order(o, ord); /* to an in-sync follower (owner_handover.h) */
        return;
    }
    if (ord->u.order.kind == LEAF_ORDER_SPLIT) {
        if (owner_agent_call(o, LEAF_SPLIT, ord->u.order.leaf, 0, 0, agent_timeout(o),
                             on_split_reply, (void *)(uintptr_t)ord->id) != 0)
            owner_agent_done(o, ord->id, LEAF_ST_REFUSED, "no control channel");
        return;
    }
    if (m->phase != M_IDLE && m->leaf.start == ord->u.order.leaf.start &&
        m->leaf.bits == ord->u.order.leaf.bits) {
        m->order = ord->id; /* the same move, asked again: it answers this order */
        return;
    }
    int64_t epoch;
    if (ord->u.order.to != 0 && m->phase == M_IDLE &&
        owner_repl_pick(o, ord->u.order.leaf, ord->u.order.to, &epoch) == ord->u.order.to) {
        /* to the leaf's own in-sync follower: a hand-over, which is that
         * move's last steps.  As a move, the target's follow ended at its
         * BEGIN, this owner took it out of the set by a CAS that changed
         * the epoch the move had just written, and the move, refused at
         * that epoch, could not abort either: the leaf stayed "moving" and
         * fenced (history leaf_move, replicas 1, seed 31). */
        owner_handover_order(o, ord);
        return;
    }
    if (owner_move_start(o, ord->u.order.leaf, ord->u.order.to, ord->id, why, sizeof(why)) != 0) {
        if (m->phase != M_IDLE)
            return; /* busy: the agent asks again later */
        log_notice("move order refused: %s", why);
        owner_agent_done(o, ord->id, LEAF_ST_REFUSED, why);
    }
}

/* ---- what the rest of the owner calls --------------------------------------- */

void owner_move_applied(struct owner *o, const char *key, size_t klen)
{
    struct omove *m = mv(o);
    if (m != NULL && m->copy != NULL && m->phase == M_COPY)
        owner_copy_applied(m->copy, key, klen);
}

void owner_move_flushed(struct owner *o)
{
    struct omove *m = mv(o);
    if (m != NULL && m->phase >= M_BEGIN && m->phase <= M_FENCED)
        omove_abort(o, "FLUSHALL on the source");
    owner_recv_flushed(o);
}

void owner_move_stats(const struct owner *o, struct omove_stats *out)
{
    if (o->move == NULL) {
        memset(out, 0, sizeof(*out));
        return;
    }
    *out = o->move->st;
    out->phase = o->move->phase;
    out->outgoing = o->move->phase != M_IDLE;
}

const char *owner_move_phase_name(int phase)
{
    return phase >= 0 && phase <= M_ABORTING ? PHASES[phase] : "?";
}

int owner_move_setup(struct owner *o)
{
    if (o->opts.cluster[0] == '\0')
        return 0;
    if (owner_park_setup(o) != 0 || owner_recv_setup(o) != 0)
        return -1;
    o->move = calloc(1, sizeof(*o->move));
    if (o->move == NULL)
        return -1;
    o->move->tick = event_new(o->base, -1, EV_PERSIST, on_tick, o);
    if (o->move->tick == NULL)
        return -1;
    struct timeval tv = {0, MOVE_TICK_MS * 1000};
    event_add(o->move->tick, &tv);
    owner_move_hook_setup(o);
    return owner_agent_start(o, on_order);
}

void owner_move_teardown(struct owner *o)
{
    owner_agent_stop(o);
    if (o->move != NULL) {
        owner_copy_stop(&o->move->copy);
        if (o->move->tick != NULL)
            event_free(o->move->tick);
        free(o->move);
        o->move = NULL;
    }
    owner_recv_teardown(o);
    owner_hlink_teardown(o);
    owner_park_teardown(o);
}

void owner_move_counters(const struct owner *o, struct owner_counters *v)
{
    struct omove_stats m;
    struct orecv_stats r;
    struct opark_stats p;
    owner_move_stats(o, &m);
    owner_recv_stats(o, &r);
    owner_park_stats(o, &p);
    v->leaf_moves_started = m.started;
    v->leaf_moves_committed = m.committed;
    v->leaf_moves_aborted = m.aborted;
    v->leaf_moves_refused = m.refused;
    v->leaf_moves_in_doubt = m.in_doubt;
    v->leaf_moves_outgoing = (uint64_t)m.outgoing;
    v->leaf_moves_incoming = r.incoming;
    v->leaf_moves_received = r.adopted;
    v->leaf_moves_dropped = r.dropped;
    v->leaf_splits = m.splits;
    v->leaf_fence_ms_last = m.fence_ms_last;
    v->leaf_fence_ms_max = m.fence_ms_max;
    v->leaf_copy_rows = m.copy_rows;
    v->leaf_copy_bytes = m.copy_bytes;
    v->leaf_copy_ms_last = m.copy_ms_last;
    v->leaf_copy_bytes_per_second = m.copy_bytes_per_s_last;
    v->leaf_parked = p.parked;
    v->leaf_parked_writes = p.parked_writes;
    v->leaf_parked_now = owner_park_count(o);
    v->leaf_parked_ms_max = p.wait_max_ms;
    v->leaf_parked_timeouts = p.timed_out;
    uint64_t total = 0, seen = 0;
    for (int b = 0; b < OPARK_HIST; b++)
        total += p.hist[b];
    v->leaf_parked_ms_p99 = 0;
    for (int b = 0; b < OPARK_HIST && total > 0; b++) {
        seen += p.hist[b];
        if (seen * 100 >= total * 99) {
            v->leaf_parked_ms_p99 = b == 0 ? 0 : (1ULL << b) - 1;
            break;
        }
    }
}
