/*
 * owner_recv.c - the target's side of a leaf move (CLUSTER.md §5, steps 2,
 * 3, 5, 7, 9, 10; the Spin model's Target in tests/model/).
 *
 *   BEGIN     the map must say the leaf is moving from the sender to this
 *             owner at e1 (a map copy that has not reached e1 yet is waited
 *             for, briefly); RECEIVING(e1) is recorded durably, every
 *             leftover row of the leaf is dropped (owner_purge.c: else a
 *             deleted key whose tombstone the source has purged comes back),
 *             then READY.
 *   ROW/WRITE rows go into the ledger keeping, per key, the higher version
 *             (ledger_load_moved: order and duplicates do not matter) and
 *             into persister batches (committed with fsync: they may hold
 *             durable writes the source acknowledged); sequence numbers
 *             must come without a gap.  RECORD: a completion record,
 *             merged (owner_rifl.h rifl_merge).
 *   FENCE     acknowledged only when every sequence number up to `last`
 *             came, with no gap, and every batch holding them committed;
 *             else NACK.  From the acknowledgment on, requests on the leaf
 *             wait here (owner_park.c): the commit may be known to edges
 *             (the source's MOVED) before it is known here.
 *   COMMITTED the leaf is adopted (served; stored OWNED); its waiting
 *             requests run.  The version clock is already past every
 *             received version (ledger_load_moved observes each).
 *   ABORT     the copy is dropped.  So is it when the map shows the leaf
 *             with the source again (or moving at another epoch), and it is
 *             adopted when the map gives it to this owner.  A broken link
 *             alone changes nothing: after an acknowledgment the outcome is
 *             the map's (the model's DROP_ON_LINK_LOSS mutant loses writes).
 * A RECEIVING mark read back at start is settled the same way, from the
 * map (step 10: owner_recv_map.c).  At most OWN_RECV_MAX moves come in at once (etcd's slots
 * say the same).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/router.h"
#include "server/owner/owner_recv_sm.h"
#include "server/owner/owner_cut.h"

const char *orecv_leaf_name(const struct hand_leaf *l, char *buf, size_t len)
{
    snprintf(buf, len, "%s %u-%08x", topo_pool_name((enum cfg_pool)l->pool), l->bits,
             l->bits ? l->start >> (32 - l->bits) : 0);
    return buf;
}

void orecv_send_why(struct rmove *r, uint8_t type, const char *why)
{
    struct hand_msg m = {.type = type, .id = 1, .u.why = {r->e1, wire_cstr(why)}};
    if (r->h != NULL)
        owner_hlink_send(r->h, &m);
}

/* ---- the end of a move here ----------------------------------------------- */

void orecv_purge_done(struct owner *o, void *arg, int status, uint64_t entries, uint64_t rows)
{
    struct rmove *r = arg;
    char name[48];
    if (status != HKV_OK) {
        log_warning("dropping the copy of leaf %s failed (%s); trying again",
                    orecv_leaf_name(&r->leaf, name, sizeof(name)), hkv_strstatus(status));
        if (owner_purge_leaf(o, r->leaf.start, r->leaf.bits, 0, orecv_purge_done, r) == 0)
            return;
    }
    if (r->phase == R_DROPPING) {
        struct own_mark *m = owner_own_mark(o, r->leaf.start, r->leaf.bits);
        if (m != NULL && m->state == PERSIST_RECEIVING)
            owner_own_mark_del(o, m);
        log_notice("leaf %s: the copy from owner %u is dropped (%llu entries, %llu rows)",
                   orecv_leaf_name(&r->leaf, name, sizeof(name)), r->from,
                   (unsigned long long)entries, (unsigned long long)rows);
        memset(r, 0, sizeof(*r));
        return;
    }
    r->purged = 1; /* R_PREPARING: READY once RECEIVING is durable too */
}

void orecv_release(struct owner *o, struct rmove *r)
{
    persist_batch_free(&r->cur);
    persist_batch_free(&r->tail);
    if (r->h != NULL)
        owner_hlink_close(r->h, 1);
    r->h = NULL;
    owner_park_release(o);
}

/* The copy goes (ABORT, or the map shows the leaf elsewhere). */
void orecv_drop(struct owner *o, struct rmove *r, const char *why)
{
    char name[48];
    struct own_mark *m = owner_own_mark(o, r->leaf.start, r->leaf.bits);
    if (m != NULL)
        m->block = OWN_BLOCK_NONE;
    log_notice("leaf %s: move from owner %u at epoch %lld ends without this owner: %s",
               orecv_leaf_name(&r->leaf, name, sizeof(name)), r->from, (long long)r->e1, why);
    o->recv->st.dropped++;
    r->phase = R_DROPPING;
    orecv_release(o, r);
    owner_purge_cancel(o, r);
    if (owner_purge_leaf(o, r->leaf.start, r->leaf.bits, 0, orecv_purge_done, r) != 0)
        log_warning("cannot drop leaf %s's copy now (out of memory)", name);
}

/* The leaf is this owner's now (COMMITTED, or the map says so). */
void orecv_adopt(struct owner *o, struct rmove *r, int64_t e2)
{
    char name[48];
    struct own_mark *m = owner_own_mark(o, r->leaf.start, r->leaf.bits);
    if (m != NULL) {
        m->adopted = 1;
        m->e2 = e2;
        m->block = OWN_BLOCK_NONE;
        owner_own_changed(o);
        owner_own_save_now(o);
    }
    o->recv->st.adopted++;
    log_notice("leaf %s is served here from epoch %lld (from owner %u: %llu rows, %llu bytes in "
               "%lld ms)", orecv_leaf_name(&r->leaf, name, sizeof(name)), (long long)e2, r->from,
               (unsigned long long)r->rows, (unsigned long long)r->bytes,
               (long long)(clock_mono_ms() - r->started_ms));
    orecv_release(o, r);
    memset(r, 0, sizeof(*r));
}

/* ---- batches ---------------------------------------------------------------- */

static void submit_batch(struct owner *o, struct rmove *r, struct persist_batch *b);

/* A follow's fence: every ledger-class key dirty here now, in one durable
 * batch behind every batch already queued (the persister commits in
 * order), so its commit means the follower's file holds all it was sent.
 * The keys are taken only when the batch can go at once: a key in flight
 * stays so only while the persister has it. */
static void submit_dirty(struct owner *o, struct rmove *r)
{
    if (!r->fence_dirty || r->batches_out >= RECV_RING)
        return;
    int st;
    struct persist_batch *b = owner_cut_dirty(o, &st);
    r->fence_dirty = 0;
    if (b == NULL) {
        r->fence_spoiled = 1;
        return;
    }
    b->id = OWNER_BATCH_DIRTY;
    submit_batch(o, r, b);
}

static void submit(struct owner *o, struct rmove *r)
{
    if (r->cur == NULL || r->cur->n == 0 || r->batches_out >= RECV_RING) {
        submit_dirty(o, r);
        return; /* a full ring: the rows wait for the next submit */
    }
    struct persist_batch *b = r->cur;
    r->cur = NULL;
    b->id = 0;
    submit_batch(o, r, b);
    submit_dirty(o, r);
}

static void submit_batch(struct owner *o, struct rmove *r, struct persist_batch *b)
{
    b->id |= OWNER_BATCH_MOVE | ((uint64_t)(r - o->recv->m) << 40) | (r->gen & ((1ULL << 40) - 1));
    if (persister_submit(o->persister, b) != HKV_OK) {
        if (b->id & OWNER_BATCH_DIRTY) {
            b->status = HKV_EIO; /* its keys collectable again */
            ledger_batch_done(o->ledger, b);
            r->fence_spoiled = 1;
        } else {
            r->failed = 1;
        }
        persist_batch_free(&b);
        return;
    }
    uint64_t bytes = 0;
    for (size_t i = 0; i < b->n; i++)
        bytes += b->rows[i].klen + b->rows[i].vlen + 64;
    r->ring_bytes[r->ring_tail % RECV_RING] = bytes;
    r->ring[r->ring_tail++ % RECV_RING] = r->cur_seq;
    r->batches_out++;
    r->bytes_out += bytes;
    if (r->bytes_out >= RECV_MAX_OUT_BYTES && r->h != NULL && !r->paused) {
        r->paused = 1; /* TCP pushes back on the source until the commits catch up */
        owner_hlink_pause(r->h, 1);
    }
}

/* A follow's fence is answered once its dirty batch and every one before
 * it committed; the follow goes on streaming (a refused CAS unfences the
 * primary, whose writes then come as before). */
static void try_ack_follow(struct rmove *r)
{
    if (r->batches_out > 0 || r->fence_dirty || (r->cur != NULL && r->cur->n > 0))
        return;
    r->fence_pending = 0;
    if (r->fence_spoiled) {
        orecv_send_why(r, HANDOFF_FENCE_NACK, "the follower could not commit what it holds");
        return;
    }
    struct hand_msg ack = {.type = HANDOFF_FENCE_ACK, .id = 1, .u.fence = {r->e1, r->fence_last}};
    if (r->h != NULL)
        owner_hlink_send(r->h, &ack);
}

static void try_ack(struct owner *o, struct rmove *r)
{
    if (!r->fence_pending || r->phase != R_RECEIVING)
        return;
    if (r->follow && !r->gap && !r->failed && r->next_seq == r->fence_last + 1) {
        try_ack_follow(r);
        return;
    }
    if (r->gap || r->failed || r->next_seq != r->fence_last + 1) {
        orecv_send_why(r, HANDOFF_FENCE_NACK, r->gap ? "a sequence number is missing"
                                        : r->failed ? "a batch failed to commit"
                                                    : "the fence is past the last row received");
        o->recv->st.nacks++;
        r->fence_pending = 0;
        return;
    }
    if (r->batches_out > 0 || (r->cur != NULL && r->cur->n > 0))
        return; /* once the commits are in */
    struct hand_msg ack = {.type = HANDOFF_FENCE_ACK, .id = 1, .u.fence = {r->e1, r->fence_last}};
    r->fence_pending = 0;
    r->phase = R_ACKED;
    struct own_mark *m = owner_own_mark(o, r->leaf.start, r->leaf.bits);
    if (m != NULL)
        m->block = OWN_BLOCK_ALL; /* edges may hear of the commit before this owner */
    owner_hlink_send(r->h, &ack);
    if (owner_move_hook(o, "t_acked")) {
        owner_hlink_close(r->h, 1); /* a test cuts the link after the ack */
        r->h = NULL;
    }
}

void owner_recv_batch_done(struct owner *o, const struct persist_batch *b)
{
    if (o->recv == NULL)
        return;
    struct rmove *r = &o->recv->m[((b->id >> 40) & 0xffff) % OWN_RECV_SLOTS];
    if ((r->phase != R_RECEIVING && r->phase != R_ACKED) ||
        r->gen != (b->id & ((1ULL << 40) - 1)))
        return; /* the move ended meanwhile */
    if (r->batches_out > 0) { /* batches are done in the order they were submitted */
        r->bytes_out -= r->ring_bytes[r->ring_head % RECV_RING];
        r->seq_committed = r->ring[r->ring_head++ % RECV_RING];
        r->batches_out--;
    }
    if (b->status != HKV_OK && (b->id & OWNER_BATCH_DIRTY))
        r->fence_spoiled = 1; /* the follow goes on; the hand-over does not */
    else if (b->status != HKV_OK)
        r->failed = 1;
    submit(o, r); /* rows a full ring held back */
    if (r->paused && r->bytes_out < RECV_MAX_OUT_BYTES / 2 && r->h != NULL) {
        r->paused = 0;
        owner_hlink_pause(r->h, 0);
    }
    if (b->status == HKV_OK && r->h != NULL && !r->gap) {
        struct hand_msg p = {.type = HANDOFF_PROGRESS, .id = 1,
                             .u.fence = {r->e1, r->seq_committed}};
        owner_hlink_send(r->h, &p);
    }
    try_ack(o, r);
}

/* ---- messages ----------------------------------------------------------------- */

static void submit(struct owner *o, struct rmove *r);

/* One received row into the ledger (the higher version stays) and the
 * batch; -1 when it cannot be kept (the fence is then refused: a key the
 * ledger lost would read as absent in a ledger that holds every key). */
static int add_row(struct owner *o, struct rmove *r, const struct hand_row *w)
{
    struct persist_row row = {(char *)w->key.p, w->key.len, (char *)w->value.p, w->value.len,
                              w->stamp, w->expire_ms, w->class_id, w->tomb};
    o->durable_tagged = 1; /* the row may be a durable write not committed yet */
    if (r->follow && w->class_id != OWNER_TAG_DURABLE) {
        /* a follower's ledger row: held in memory (what its acknowledgment
         * waits for) and dirty, so this owner's write-behind persists the
         * latest version per key; no batch per received result */
        r->rows++;
        r->bytes += w->key.len + w->value.len;
        return ledger_load_followed(o->ledger, &row, owner_clock()) == HKV_ENOMEM ? -1 : 0;
    }
    if (ledger_load_moved(o->ledger, &row, owner_clock()) == HKV_ENOMEM)
        return -1;
    if (r->cur != NULL && r->cur->n >= RECV_BATCH_ROWS)
        submit(o, r);
    if (r->cur == NULL && (r->cur = persist_batch_new(1)) == NULL)
        return -1;
    r->rows++;
    r->bytes += w->key.len + w->value.len;
    return persist_batch_add(r->cur, w->key.p, w->key.len, w->value.p, w->value.len, w->stamp,
                             w->expire_ms, w->class_id, w->tomb) == HKV_OK ? 0 : -1;
}

/* A follower applies a request whole: its results wait in the tail until
 * its completion record, which the primary sends after the last of them in
 * the same loop turn, comes (owner_gate.c keeps a request to one leaf, so to
 * one stream).  A primary killed after part of a turn's bytes went would
 * otherwise leave a promoted follower with half an MSETNX or EXEC applied,
 * and a record answering its retry OK.  What the tail holds at a promotion
 * was never acknowledged (an acknowledgment waits for HELD past the record)
 * and is dropped; ofollow_tail_max bounds a tail that never meets a record
 * (a result whose request failed after it applied, ENOMEM). */
#define OFOLLOW_TAIL_MAX (RECV_BATCH_ROWS * 8)

static int hold_row(struct rmove *r, const struct hand_row *w)
{
    if (r->tail == NULL && (r->tail = persist_batch_new(0)) == NULL)
        return -1;
    return persist_batch_add(r->tail, w->key.p, w->key.len, w->value.p, w->value.len, w->stamp,
                             w->expire_ms, w->class_id, w->tomb) == HKV_OK ? 0 : -1;
}

static int apply_tail(struct owner *o, struct rmove *r)
{
    int failed = 0;
    for (size_t i = 0; r->tail != NULL && i < r->tail->n && !failed; i++) {
        const struct persist_row *p = &r->tail->rows[i];
        struct hand_row w = {wire_slice(p->key, p->klen), wire_slice(p->val, p->vlen),
                             p->tombstone != 0, p->stamp, p->expire_at_ms, p->class_id};
        failed = add_row(o, r, &w) != 0;
    }
    persist_batch_free(&r->tail);
    return failed ? -1 : 0;
}

static void take_seq(struct rmove *r, uint64_t seq)
{
    if (seq != r->next_seq)
        r->gap = 1;
    if (seq >= r->next_seq)
        r->next_seq = seq + 1;
    r->cur_seq = seq;
}

/* The live incarnation of writer w on this owner's links (0: none). */
static uint64_t live_inc(const struct owner *o, uint32_t w)
{
    for (const struct olink *l = o->links; l != NULL; l = l->next)
        if (l->hello && l->edge_id == w && l->role == WIRE_ROLE_WRITE)
            return l->edge_inc;
    return 0;
}

void orecv_on_msg(struct owner *o, void *arg, struct hlink *h, const struct hand_msg *m)
{
    struct rmove *r = arg;
    int streaming = r->phase == R_RECEIVING;
    switch (m->type) {
    case HANDOFF_ROW:
        if (!streaming)
            return;
        take_seq(r, m->u.row.seq);
        for (uint32_t i = 0; i < m->u.row.nrows && !r->failed; i++)
            r->failed |= add_row(o, r, &m->u.row.rows[i]) != 0;
        break;
    case HANDOFF_WRITE:
        if (!streaming)
            return;
        take_seq(r, m->u.write.seq);
        if (!r->follow)
            r->failed |= add_row(o, r, &m->u.write.r) != 0;
        else if ((r->failed |= hold_row(r, &m->u.write.r) != 0) == 0 &&
                 r->tail->n >= OFOLLOW_TAIL_MAX)
            r->failed |= apply_tail(o, r) != 0;
        break;
    case HANDOFF_RECORD: {
        if (!streaming)
            return;
        take_seq(r, m->u.record.seq);
        r->failed |= apply_tail(o, r) != 0;
        struct rifl_result res = {
            .type = m->u.record.rtype, .applied = m->u.record.applied,
            .has_old = m->u.record.has_old, .value = m->u.record.value,
            .version = m->u.record.version, .old = m->u.record.old.p,
            .oldlen = m->u.record.old.len, .resp = m->u.record.resp.p,
            .resplen = m->u.record.resp.len, .changes = m->u.record.changes,
            .nchanges = m->u.record.nchanges};
        int lost = m->u.record.rtype == HAND_RECORD_LOST;
        if (rifl_merge(o->rifl, m->u.record.writer, m->u.record.inc, m->u.record.rseq,
                       lost ? NULL : &res, live_inc(o, m->u.record.writer)) == HKV_OK && !lost)
            o->recv->st.records++;
        break;
    }
    case HANDOFF_EPOCH: /* an in-sync set changed: the stream speaks for the new epoch */
        if (r->follow && m->u.committed.e1 == r->e1 && m->u.committed.e2 > r->e1)
            r->e1 = m->u.committed.e2;
        return;
    case HANDOFF_FENCE:
        if (!streaming || m->u.fence.e1 != r->e1)
            return;
        if (r->follow) { /* a planned hand-over's last step before its CAS */
            r->failed |= apply_tail(o, r) != 0;
            r->fence_pending = r->fence_dirty = 1;
            r->fence_spoiled = 0;
            r->fence_last = m->u.fence.last;
            submit(o, r);
            try_ack(o, r);
            return;
        }
        if (owner_move_hook(o, "t_fence")) {
            owner_hlink_close(r->h, 0); /* a test cuts the link before the ack */
            r->h = NULL;
            return;
        }
        r->fence_pending = 1;
        r->fence_last = m->u.fence.last;
        submit(o, r);
        try_ack(o, r);
        return;
    case HANDOFF_COMMITTED:
        if (!r->follow && m->u.committed.e1 == r->e1 && r->phase == R_ACKED)
            orecv_adopt(o, r, m->u.committed.e2);
        return;
    case HANDOFF_ABORT:
        if (m->u.why.e1 == r->e1 && r->phase != R_DROPPING)
            orecv_drop(o, r, "the source aborted");
        return;
    default:
        return;
    }
    if (r->follow) {
        r->held_due = 1;
        o->recv->fst.frames++;
    }
    event_active(o->recv->flush, EV_TIMEOUT, 0); /* one batch per loop turn */
}

void orecv_on_gone(struct owner *o, void *arg, struct hlink *h, const char *why)
{
    struct rmove *r = arg;
    r->h = NULL;
    if (r->follow) {
        r->orphan_ms = clock_mono_ms(); /* the map decides (owner_follow_settle) */
        return;
    }
    char name[48];
    log_notice("leaf %s: the hand-off link from owner %u went (%s); the map decides now",
               orecv_leaf_name(&r->leaf, name, sizeof(name)), r->from, why);
}

void orecv_on_flush(evutil_socket_t fd, short what, void *arg)
{
    struct owner *o = arg;
    for (int i = 0; i < OWN_RECV_SLOTS; i++)
        if (o->recv->m[i].phase == R_RECEIVING || o->recv->m[i].phase == R_ACKED)
            submit(o, &o->recv->m[i]);
    ofollow_flush(o);
}

/* ---- BEGIN ------------------------------------------------------------------ */

/* What the map copy says of BEGIN's leaf: 1 moving from `from` to this
 * owner at e1; 0 not yet known (the copy is older than e1); -1 no. */
int orecv_map_says_moving(struct owner *o, const struct rmove *r)
{
    owner_own_refresh(o);
    const struct cmap_table *t = owner_own_map(o);
    if (t == NULL || t->revision < r->e1)
        return 0;
    const struct cmap_leaf *l = cmap_lookup(t, o->pool, (uint64_t)r->leaf.start << 32);
    if (l == NULL || l->start != r->leaf.start || l->bits != r->leaf.bits)
        return -1;
    if (l->epoch == r->e1 && l->state == CMAP_MOVING && l->owner == r->from &&
        l->to == owner_own_number(o))
        return 1;
    return l->epoch < r->e1 ? 0 : -1;
}

/* Step 2 once the map agrees: RECEIVING(e1) durable, leftovers dropped. */
void orecv_prepare(struct owner *o, struct rmove *r)
{
    char name[48];
    struct own_mark *m = owner_own_mark_add(o, r->leaf.start, r->leaf.bits, PERSIST_RECEIVING,
                                            r->e1, r->from);
    if (m == NULL || owner_purge_leaf(o, r->leaf.start, r->leaf.bits, 0, orecv_purge_done, r) != 0) {
        if (m != NULL)
            owner_own_mark_del(o, m);
        orecv_send_why(r, HANDOFF_ABORT, "the target cannot take the leaf now");
        orecv_release(o, r);
        memset(r, 0, sizeof(*r));
        return;
    }
    owner_own_save_now(o);
    r->gen_wait = owner_own_gen(o);
    r->phase = R_PREPARING;
    log_notice("leaf %s: receiving from owner %u at epoch %lld",
               orecv_leaf_name(&r->leaf, name, sizeof(name)), r->from, (long long)r->e1);
}

int orecv_begin_refused(struct owner *o, struct hlink *h, const struct hand_msg *m, char *why,
                        size_t len)
{
    const struct owner_opts *opts = &o->opts;
    char host[64];
    snprintf(host, sizeof(host), "%.*s", (int)(m->u.begin.host.len > 63 ? 63 : m->u.begin.host.len),
             m->u.begin.host.p);
    why[0] = '\0';
    if (m->u.begin.cluster.len != strlen(opts->cluster) ||
        memcmp(m->u.begin.cluster.p, opts->cluster, m->u.begin.cluster.len) != 0)
        snprintf(why, len, "BEGIN for another cluster");
    else if (!owner_hlink_peer_is(h, host, why + 20, len - 20))
        memcpy(why, "peer not its host: ", 20);
    else if (m->u.begin.to != owner_own_number(o) || m->u.begin.leaf.pool != o->pool)
        snprintf(why, len, "BEGIN for owner %u, this is %u", m->u.begin.to, owner_own_number(o));
    return why[0] != '\0';
}

void orecv_on_accept(struct owner *o, struct hlink *h, const struct hand_msg *m)
{
    char why[200] = "";
    struct orecv *rv = o->recv;
    if (m->type != HANDOFF_BEGIN || rv == NULL) {
        owner_hlink_close(h, 0);
        return;
    }
    if (m->u.begin.follow) {
        ofollow_accept(o, h, m);
        return;
    }
    struct rmove *r = NULL;
    for (int i = 0; i < OWN_RECV_MAX; i++) {
        struct rmove *x = &rv->m[i];
        if (x->phase != R_FREE && x->leaf.start == m->u.begin.leaf.start &&
            x->leaf.bits == m->u.begin.leaf.bits)
            r = x; /* an older move of the same leaf: replaced */
    }
    for (int i = 0; i < OWN_RECV_MAX && r == NULL; i++)
        if (rv->m[i].phase == R_FREE)
            r = &rv->m[i];
    if (orecv_begin_refused(o, h, m, why, sizeof(why)))
        ;
    else if (r == NULL)
        snprintf(why, sizeof(why), "%d moves are coming in already", OWN_RECV_MAX);
    else if (r->phase == R_ACKED || r->phase == R_DROPPING)
        snprintf(why, sizeof(why), "the leaf's previous move is not over here");
    if (why[0] != '\0') {
        log_notice("hand-off refused: %s", why);
        struct hand_msg a = {.type = HANDOFF_ABORT, .id = 1,
                             .u.why = {m->u.begin.e1, wire_cstr(why)}};
        owner_hlink_send(h, &a);
        owner_hlink_close(h, 1);
        return;
    }
    if (r->phase != R_FREE) {
        orecv_release(o, r);
        owner_purge_cancel(o, r);
    }
    ofollow_yield(o, m->u.begin.leaf);
    *r = (struct rmove){.phase = R_WAIT_MAP, .h = h, .leaf = m->u.begin.leaf, .e1 = m->u.begin.e1,
                        .from = m->u.begin.from, .next_seq = 1, .gen = ++rv->next_batch,
                        .deadline_ms = clock_mono_ms() + RECV_BEGIN_WAIT_MS,
                        .started_ms = clock_mono_ms()};
    owner_hlink_set(h, orecv_on_msg, orecv_on_gone, NULL, r);
    rv->st.begun++;
}

