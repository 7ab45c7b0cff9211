/*
 * owner_move.c - the source's side of a leaf move (CLUSTER.md §5; the Spin
 * model's Source in tests/model/), one outgoing move per owner:
 *
 *   1 INTENT     LEAF_INTENT to the agent (the map goes moving to T at e1);
 *                then HANDING_OFF(e1) is made durable before anything else
 *   2 BEGIN      the hand-off link, HANDOFF_BEGIN; T answers READY
 *   3 COPY       owner_copy.c streams the leaf while it is served
 *   4 FENCED     writes to the leaf wait (owner_park.c), the completion
 *                records and HANDOFF_FENCE go out, move-fence-timeout runs
 *   5/6 COMMIT   on FENCE_ACK reads wait too (the outcome is about to be in
 *                doubt) and LEAF_COMMIT goes to the agent
 *   7 GONE       committed: GONE is recorded, T is told (COMMITTED), and the
 *                waiting requests run again and meet MOVED to T
 *   8 IN_DOUBT   no answer: the leaf stays fenced and the map is read
 *                (LEAF_READ) until the outcome is known
 *   9 ABORT      deadline, NACK, the link lost before the ack, T refusing:
 *                LEAF_ABORT puts the map back, T is told, the waiting
 *                writes run here.  Before any LEAF_COMMIT was sent the
 *                leaf cannot have gone, so the source serves again at once
 *                and the abort's txn only tidies the map (the settle tick
 *                tries again); after one, the abort's answer decides.
 *   10 SETTLE    a HANDING_OFF mark read back at start: the leaf is not
 *                served until the map says how its move ended (GONE if it
 *                names T; otherwise the move is aborted and it is served).
 * The settle tick also aborts a move the map shows from this owner with no
 * move under way here (an intent whose answer was lost, a crash before
 * HANDING_OFF was durable: no LEAF_COMMIT can have been sent for it).
 *
 * Tests stop an owner at a named step with HOTKVD_MOVE_HOOK=<pool>/<index>:
 * <step>:kill|pause=<ms> (owner_move_hook.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/owner/owner_move_sm.h"

/* The move is over (whatever way): back to idle, the order answered. */
void omove_finish(struct owner *o, int status, const char *why)
{
    struct omove *m = mv(o);
    char n[48];
    if (m->copy != NULL) {
        struct ocopy_stats cs;
        owner_copy_stats(m->copy, &cs);
        m->st.copy_rows += cs.rows;
        m->st.copy_bytes += cs.bytes;
        m->st.copy_writes += cs.writes;
        int64_t ms = (cs.ended_ms ? cs.ended_ms : clock_mono_ms()) - cs.started_ms;
        m->st.copy_ms_last = (uint64_t)ms;
        m->st.copy_bytes_per_s_last = ms > 0 ? cs.bytes * 1000 / (uint64_t)ms : cs.bytes;
        log_notice("move of leaf %s: copied %llu rows (%llu file rows of resident keys not sent "
                   "again), %llu writes, in %lld ms", name(&m->leaf, n, sizeof(n)),
                   (unsigned long long)cs.rows, (unsigned long long)cs.skipped,
                   (unsigned long long)cs.writes, (long long)ms);
        owner_copy_stop(&m->copy);
    }
    if (m->h != NULL)
        owner_hlink_close(m->h, 1);
    m->h = NULL;
    if (m->order != 0)
        owner_agent_done(o, m->order, status, why);
    log_notice("move of leaf %s to owner %u: %s (%lld ms)", name(&m->leaf, n, sizeof(n)), m->to,
               why, (long long)(clock_mono_ms() - m->started_ms));
    m->phase = M_IDLE;
    m->order = 0;
    owner_park_release(o);
}

/* Writes and reads of the leaf run here again. */
static void resume(struct owner *o, const char *why)
{
    struct own_mark *k = mark(o);
    if (k != NULL)
        owner_own_mark_del(o, k);
    mv(o)->st.aborted++;
    omove_finish(o, LEAF_ST_LOST, why);
}

/* Committed at e2: the leaf is T's. */
void omove_gone(struct owner *o, int64_t e2)
{
    struct omove *m = mv(o);
    struct own_mark *k = mark(o);
    if (k == NULL)
        k = owner_own_mark_add(o, m->leaf.start, m->leaf.bits, PERSIST_GONE, m->e1, m->to);
    if (k != NULL) {
        k->state = PERSIST_GONE;
        k->e2 = e2;
        k->peer = m->to;
        k->block = OWN_BLOCK_NONE;
        k->unresolved = 0;
        owner_own_changed(o);
        owner_own_save_now(o);
    }
    struct hand_msg c = {.type = HANDOFF_COMMITTED, .id = 1, .u.committed = {m->e1, e2}};
    if (m->h != NULL)
        owner_hlink_send(m->h, &c); /* before the waiting requests meet MOVED */
    if (m->fence_at_ms != 0) {
        m->st.fence_ms_last = (uint64_t)(clock_mono_ms() - m->fence_at_ms);
        if (m->st.fence_ms_last > m->st.fence_ms_max)
            m->st.fence_ms_max = m->st.fence_ms_last;
    }
    m->st.committed++;
    char n[48];
    log_notice("move of leaf %s to owner %u committed at epoch %lld: writes waited %llu ms "
               "(fence to commit), %zu requests are told MOVED now", name(&m->leaf, n, sizeof(n)),
               m->to, (long long)e2, (unsigned long long)m->st.fence_ms_last, owner_park_count(o));
    /* the leaf is not served here any more: its copy goes (not what still
     * waits for its commit here: durable acknowledgments wait for those) */
    owner_purge_leaf(o, m->leaf.start, m->leaf.bits, 1, NULL, NULL);
    owner_move_hook(o, "committed");
    omove_finish(o, LEAF_ST_OK, "committed");
}

static void on_abort_reply(struct owner *o, void *arg, const struct hand_msg *r);

/* Step 9. */
void omove_abort(struct owner *o, const char *why)
{
    struct omove *m = mv(o);
    char n[48];
    struct hand_msg a = {.type = HANDOFF_ABORT, .id = 1, .u.why = {m->e1, wire_cstr(why)}};
    if (m->h != NULL)
        owner_hlink_send(m->h, &a);
    log_notice("move of leaf %s to owner %u aborts: %s", name(&m->leaf, n, sizeof(n)), m->to, why);
    if (m->e1 == 0) {
        omove_finish(o, LEAF_ST_LOST, why); /* no intent applied */
        return;
    }
    owner_agent_call(o, LEAF_ABORT, m->leaf, m->e1, m->to, agent_timeout(o),
                     m->commit_sent ? on_abort_reply : NULL, NULL);
    if (!m->commit_sent) {
        resume(o, why); /* the map can only go back to this owner */
        return;
    }
    m->phase = M_ABORTING;
    m->call_out = 1;
}

/* ---- replies from the agent ------------------------------------------------ */

static void on_abort_reply(struct owner *o, void *arg, const struct hand_msg *r)
{
    struct omove *m = mv(o);
    m->call_out = 0;
    if (m->phase != M_ABORTING)
        return;
    if (r->u.reply.status == LEAF_ST_OK || is_mine(o, r))
        resume(o, "aborted after the commit was in doubt");
    else if (is_targets(m, r))
        omove_gone(o, r->u.reply.at);
    else
        m->phase = M_IN_DOUBT; /* read again */
}

static void on_read_reply(struct owner *o, void *arg, const struct hand_msg *r)
{
    struct omove *m = mv(o);
    m->call_out = 0;
    if (m->phase != M_IN_DOUBT)
        return;
    m->next_read_ms = clock_mono_ms() + 200;
    if (r->u.reply.status != LEAF_ST_OK)
        return; /* etcd still silent: read again */
    if (is_targets(m, r))
        omove_gone(o, r->u.reply.at);
    else if (is_moving(o, m, r))
        omove_abort(o, "the commit's outcome was unknown and the map still says moving");
    else if (is_mine(o, r))
        resume(o, "the map shows the leaf here again");
}

static void on_commit_reply(struct owner *o, void *arg, const struct hand_msg *r)
{
    struct omove *m = mv(o);
    char n[48];
    m->call_out = 0;
    if (m->phase != M_COMMITTING)
        return;
    if (r->u.reply.status == LEAF_ST_OK) {
        omove_gone(o, r->u.reply.epoch);
    } else if (r->u.reply.status == LEAF_ST_LOST && is_targets(m, r)) {
        omove_gone(o, r->u.reply.at);
    } else if (r->u.reply.status == LEAF_ST_LOST && is_moving(o, m, r)) {
        omove_abort(o, "the target is no member any more");
    } else if (r->u.reply.status == LEAF_ST_LOST && is_mine(o, r)) {
        resume(o, "the map shows the leaf here again");
    } else {
        m->st.in_doubt++;
        log_notice("move of leaf %s: the commit's outcome is unknown (%.*s); the leaf stays "
                   "fenced until the map says", name(&m->leaf, n, sizeof(n)),
                   (int)r->u.reply.text.len, r->u.reply.text.p);
        m->phase = M_IN_DOUBT;
        m->next_read_ms = clock_mono_ms();
    }
}

static void on_msg(struct owner *o, void *arg, struct hlink *h, const struct hand_msg *msg);
static void on_gone(struct owner *o, void *arg, struct hlink *h, const char *why);
static void on_drained(struct owner *o, void *arg, struct hlink *h);

void omove_on_intent_reply(struct owner *o, void *arg, const struct hand_msg *r)
{
    struct omove *m = mv(o);
    char why[160];
    m->call_out = 0;
    if (m->phase != M_INTENT)
        return;
    if (r->u.reply.status != LEAF_ST_OK) {
        snprintf(why, sizeof(why), "intent %s: %.*s",
                 r->u.reply.status == LEAF_ST_UNKNOWN ? "in doubt (the settle tick aborts it if "
                                                        "it applied)" : "refused",
                 (int)r->u.reply.text.len, r->u.reply.text.p);
        m->st.refused++;
        omove_finish(o, r->u.reply.status, why);
        return;
    }
    m->e1 = r->u.reply.epoch;
    struct own_mark *k = owner_own_mark_add(o, m->leaf.start, m->leaf.bits, PERSIST_HANDING_OFF,
                                            m->e1, m->to);
    if (k == NULL) {
        omove_abort(o, "no room for another leaf mark");
        return;
    }
    owner_own_save_now(o);
    m->gen_wait = owner_own_gen(o);
    m->phase = M_RECORDING;
    owner_move_hook(o, "intent");
}

/* ---- messages from the target --------------------------------------------- */

/* Step 4, once every row went and the target has committed all but a short
 * tail (or after CATCHUP_MAX_MS: the fence's deadline decides then). */
static void try_fence(struct owner *o, int64_t now)
{
    struct omove *m = mv(o);
    if (m->phase != M_COPY || m->copied_ms == 0 ||
        (!owner_copy_caught_up(m->copy) && now - m->copied_ms < CATCHUP_MAX_MS))
        return;
    struct own_mark *k = mark(o);
    if (k != NULL)
        k->block = OWN_BLOCK_WRITES; /* step 4: writes to the leaf wait */
    owner_copy_fence(m->copy);
    m->fence_at_ms = now;
    m->deadline_ms = m->fence_at_ms + o->opts.move_fence_timeout_ms;
    m->phase = M_FENCED;
    owner_move_hook(o, "fenced");
}

static void copied(struct owner *o, void *arg, int status)
{
    struct omove *m = mv(o);
    if (m->phase != M_COPY)
        return;
    if (status != HKV_OK) {
        omove_abort(o, "the copy failed");
        return;
    }
    owner_move_hook(o, "copied");
    m->copied_ms = clock_mono_ms();
    try_fence(o, m->copied_ms);
}

static void on_msg(struct owner *o, void *arg, struct hlink *h, const struct hand_msg *msg)
{
    struct omove *m = mv(o);
    if (h != m->h)
        return;
    switch (msg->type) {
    case HANDOFF_READY:
        if (m->phase != M_BEGIN || msg->u.ready.e1 != m->e1)
            return;
        owner_move_hook(o, "ready");
        m->copy = owner_copy_start(o, h, m->leaf, m->e1, copied, NULL);
        if (m->copy == NULL) {
            omove_abort(o, "out of memory for the copy");
            return;
        }
        m->phase = M_COPY;
        return;
    case HANDOFF_PROGRESS:
        if (m->phase == M_COPY && msg->u.fence.e1 == m->e1) {
            owner_copy_progress(m->copy, msg->u.fence.last);
            try_fence(o, clock_mono_ms());
        }
        return;
    case HANDOFF_FENCE_ACK:
        if (m->phase != M_FENCED || msg->u.fence.e1 != m->e1)
            return;
        owner_move_hook(o, "acked");
        struct own_mark *k = mark(o);
        if (k != NULL)
            k->block = OWN_BLOCK_ALL; /* step 6: reads too, the outcome is about to be in doubt */
        m->phase = M_COMMITTING;
        m->commit_sent = 1;
        m->call_out = 1;
        if (owner_agent_call(o, LEAF_COMMIT, m->leaf, m->e1, m->to, agent_timeout(o),
                             on_commit_reply, NULL) != 0) {
            m->call_out = 0;
            m->phase = M_IN_DOUBT; /* it was not sent, but the read says so */
        }
        owner_move_hook(o, "commit");
        return;
    case HANDOFF_FENCE_NACK:
    case HANDOFF_ABORT:
        if (m->phase >= M_BEGIN && m->phase <= M_FENCED && msg->u.why.e1 == m->e1) {
            char why[200];
            snprintf(why, sizeof(why), "the target says: %.*s",
                     (int)(msg->u.why.text.len > 150 ? 150 : msg->u.why.text.len),
                     msg->u.why.text.p);
            omove_abort(o, why);
        }
        return;
    default:
        return;
    }
}

static void on_gone(struct owner *o, void *arg, struct hlink *h, const char *why)
{
    struct omove *m = mv(o);
    if (h != m->h)
        return;
    m->h = NULL;
    if (m->copy != NULL)
        owner_copy_stop(&m->copy);
    if (m->phase >= M_BEGIN && m->phase <= M_FENCED)
        omove_abort(o, why); /* before the ack: step 9 */
}

static void on_drained(struct owner *o, void *arg, struct hlink *h)
{
    if (mv(o)->copy != NULL)
        owner_copy_drained(mv(o)->copy);
}

/* ---- the clock -------------------------------------------------------------- */

static void begin(struct owner *o)
{
    struct omove *m = mv(o);
    char why[200];
    owner_move_hook(o, "recorded");
    m->h = owner_hlink_connect(o, &m->target, on_msg, on_gone, on_drained, NULL, why, sizeof(why));
    if (m->h == NULL) {
        omove_abort(o, why);
        return;
    }
    struct hand_msg b = {.type = HANDOFF_BEGIN, .id = 1,
                         .u.begin = {wire_cstr(o->opts.cluster), wire_cstr(o->opts.host),
                                     m->leaf, m->e1, owner_own_number(o), m->to, o->incarnation,
                                     0}};
    owner_hlink_send(m->h, &b);
    m->phase = M_BEGIN;
    m->deadline_ms = clock_mono_ms() + BEGIN_TIMEOUT_MS;
}

void omove_tick(struct owner *o, int64_t now)
{
    struct omove *m = mv(o);
    switch (m->phase) {
    case M_RECORDING:
        if (owner_own_saved_gen(o) >= m->gen_wait)
            begin(o);
        break;
    case M_BEGIN:
        if (now >= m->deadline_ms)
            omove_abort(o, "the target did not answer BEGIN");
        break;
    case M_COPY:
        try_fence(o, now);
        break;
    case M_FENCED:
        if (now >= m->deadline_ms)
            omove_abort(o, "fence deadline (move-fence-timeout)");
        break;
    case M_IN_DOUBT:
        if (!m->call_out && now >= m->next_read_ms) {
            m->call_out = 1;
            if (owner_agent_call(o, LEAF_READ, m->leaf, 0, 0, agent_timeout(o), on_read_reply,
                                 NULL) != 0)
                m->call_out = 0;
        }
        break;
    default:
        break;
    }
}

