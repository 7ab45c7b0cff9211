/*
 * owner_follow.c - a follower's side of a leaf (CLUSTER.md §7): the copy of
 * a leaf another owner, its primary, keeps serving, kept up to date so that
 * a promotion loses nothing the primary acknowledged.
 *
 * A follow is a move that never ends in a fence.  The primary opens it with
 * a BEGIN carrying `follow`; the stream is the move's (owner_recv.c applies
 * rows, write results and completion records into the ledger, the
 * persister's batches and the completion records, in order, refusing a
 * gap), and this file adds what differs:
 *   - BEGIN is taken when the map names the sender as the leaf's primary
 *     (not as moving here); no durable RECEIVING mark: a follow is not the
 *     leaf's owner, and a restarted process drops what it followed (its
 *     rows are purged before the next seeding, and the agent takes a dead
 *     follower out of every in-sync set before it promotes anyone);
 *   - HELD(seq) once a loop turn after frames came (in memory: what a
 *     `ledger` write's acknowledgment waits for), PROGRESS(seq) as batches
 *     commit (a `durable` write's);
 *   - the map decides the end (owner_follow_settle, from the map poll, so
 *     before any request sees the new map): it makes this owner the primary
 *     (promotion: the stream from the old primary is closed at once, then
 *     the map's serving list has the leaf), names another primary (the copy
 *     is dropped), or splits the leaf (dropped; the halves are reseeded).
 *     A broken link alone changes nothing while the map still names the
 *     sender: the primary may be dead and this copy about to be promoted
 *     (dropping it on link loss is the model's DROP_ON_LINK_LOSS mutant).
 */
#include <stdio.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/owner/owner_recv_sm.h"

static int is_follow_slot(const struct orecv *rv, const struct rmove *r)
{
    return r - rv->m >= OWN_RECV_MAX && r - rv->m < OWN_RECV_SLOTS;
}

/* The map's entry of r's leaf when it is that very leaf (not split or
 * merged since), else NULL. */
static const struct cmap_leaf *same_leaf(struct owner *o, const struct rmove *r)
{
    const struct cmap_table *t = owner_own_map(o);
    const struct cmap_leaf *l = t ? cmap_lookup(t, o->pool, (uint64_t)r->leaf.start << 32) : NULL;
    return l != NULL && l->start == r->leaf.start && l->bits == r->leaf.bits ? l : NULL;
}

static int in_isr(const struct cmap_leaf *l, unsigned n)
{
    for (int i = 0; i < l->nisr; i++)
        if (l->isr[i] == n)
            return 1;
    return 0;
}

/* 1: the map names the sender as the leaf's primary at e1 or later; 0: the
 * map copy is older than e1; -1: no. */
static int map_says_primary(struct owner *o, const struct rmove *r)
{
    owner_own_refresh(o);
    const struct cmap_table *t = owner_own_map(o);
    if (t == NULL || t->revision < r->e1)
        return 0;
    const struct cmap_leaf *l = same_leaf(o, r);
    if (l == NULL)
        return -1;
    if (l->owner == r->from && l->state == CMAP_SERVING && l->epoch >= r->e1)
        return 1;
    return l->epoch < r->e1 ? 0 : -1;
}

static void drop(struct owner *o, struct rmove *r, const char *why)
{
    char name[48];
    log_notice("leaf %s: no longer following owner %u (epoch %lld): %s",
               orecv_leaf_name(&r->leaf, name, sizeof(name)), r->from, (long long)r->e1, why);
    o->recv->fst.dropped++;
    if (r->h != NULL)
        orecv_send_why(r, HANDOFF_ABORT, why);
    r->phase = R_DROPPING;
    orecv_release(o, r);
    owner_purge_cancel(o, r);
    if (owner_purge_leaf(o, r->leaf.start, r->leaf.bits, 0, orecv_purge_done, r) != 0) {
        log_warning("cannot drop leaf %s's follower copy now (out of memory)", name);
        memset(r, 0, sizeof(*r)); /* the next seeding purges it first */
    }
}

/* The map made this owner the leaf's primary: the old stream ends before
 * the leaf is served (the ledger holds every result received). */
static void promoted(struct owner *o, struct rmove *r, int64_t epoch)
{
    char name[48];
    o->recv->fst.promoted++;
    log_notice("leaf %s: promoted from follower of owner %u to primary at epoch %lld (%llu rows, "
               "%llu results held)", orecv_leaf_name(&r->leaf, name, sizeof(name)), r->from,
               (long long)epoch, (unsigned long long)r->rows, (unsigned long long)(r->next_seq - 1));
    struct oheir *hr = &o->recv->heirs[o->recv->nheirs++ % OFOLLOW_HEIRS];
    *hr = (struct oheir){r->leaf.start, r->leaf.bits, r->from_inc, clock_mono_ms()};
    if (r->h != NULL)
        owner_hlink_close(r->h, 0); /* nothing more from it is applied */
    r->h = NULL;
    /* the received rows still on their way to the file go on (the slot's
     * batches are matched by generation: a reused slot ignores them) */
    persist_batch_free(&r->cur);
    if (r->tail != NULL && r->tail->n > 0)
        log_notice("leaf %s: %zu results of a request whose record did not come are dropped "
                   "(never acknowledged)", name, r->tail->n);
    persist_batch_free(&r->tail);
    memset(r, 0, sizeof(*r));
}

void ofollow_yield(struct owner *o, struct hand_leaf leaf)
{
    struct orecv *rv = o->recv;
    char name[48];
    for (int i = OWN_RECV_MAX; i < OWN_RECV_SLOTS; i++) {
        struct rmove *r = &rv->m[i];
        if (r->phase == R_FREE || r->phase == R_DROPPING || r->leaf.start != leaf.start ||
            r->leaf.bits != leaf.bits)
            continue;
        log_notice("leaf %s: no longer following owner %u: a move of the leaf comes here (its "
                   "purge drops the copy)", orecv_leaf_name(&r->leaf, name, sizeof(name)), r->from);
        rv->fst.dropped++;
        /* the primary takes this owner out of the in-sync set (a CAS) before
         * it answers another write without it */
        orecv_send_why(r, HANDOFF_ABORT, "a move of the leaf comes to the follower");
        orecv_release(o, r);
        owner_purge_cancel(o, r);
        memset(r, 0, sizeof(*r));
    }
}

void ofollow_accept(struct owner *o, struct hlink *h, const struct hand_msg *m)
{
    struct orecv *rv = o->recv;
    char why[200] = "";
    struct rmove *r = NULL;
    for (int i = OWN_RECV_MAX; i < OWN_RECV_SLOTS; i++) {
        struct rmove *x = &rv->m[i];
        if (x->phase != R_FREE && x->leaf.start == m->u.begin.leaf.start &&
            x->leaf.bits == m->u.begin.leaf.bits)
            r = x; /* an older follow of the same leaf: replaced (its rows purged first) */
    }
    for (int i = OWN_RECV_MAX; i < OWN_RECV_SLOTS && r == NULL; i++)
        if (rv->m[i].phase == R_FREE)
            r = &rv->m[i];
    if (orecv_begin_refused(o, h, m, why, sizeof(why)))
        ;
    else if (r == NULL)
        snprintf(why, sizeof(why), "%d leaves are followed here already", OWN_FOLLOW_MAX);
    else if (r->phase == R_DROPPING)
        snprintf(why, sizeof(why), "the leaf's previous copy is still being dropped");
    if (why[0] != '\0') {
        log_notice("follow refused: %s", why);
        struct hand_msg a = {.type = HANDOFF_ABORT, .id = 1, .u.why = {m->u.begin.e1, wire_cstr(why)}};
        owner_hlink_send(h, &a);
        owner_hlink_close(h, 1);
        return;
    }
    if (r->phase != R_FREE) {
        orecv_release(o, r);
        owner_purge_cancel(o, r);
    }
    *r = (struct rmove){.phase = R_WAIT_MAP, .h = h, .leaf = m->u.begin.leaf, .e1 = m->u.begin.e1,
                        .from = m->u.begin.from, .from_inc = m->u.begin.incarnation,
                        .next_seq = 1, .gen = ++rv->next_batch,
                        .deadline_ms = clock_mono_ms() + RECV_BEGIN_WAIT_MS,
                        .started_ms = clock_mono_ms(), .follow = 1};
    owner_hlink_set(h, orecv_on_msg, orecv_on_gone, NULL, r);
    rv->fst.seeded++;
}

void ofollow_tick(struct owner *o)
{
    struct orecv *rv = o->recv;
    int64_t now = clock_mono_ms();
    char name[48];
    for (int i = OWN_RECV_MAX; i < OWN_RECV_SLOTS; i++) {
        struct rmove *r = &rv->m[i];
        if (r->phase == R_WAIT_MAP) {
            int says = map_says_primary(o, r);
            if (says > 0) {
                /* leftovers of an earlier copy go first: else a key deleted
                 * since, whose tombstone the primary purged, comes back */
                if (owner_purge_leaf(o, r->leaf.start, r->leaf.bits, 0, orecv_purge_done, r) != 0) {
                    drop(o, r, "cannot drop the leaf's leftover rows now");
                    continue;
                }
                r->phase = R_PREPARING;
                log_notice("leaf %s: following owner %u from epoch %lld",
                           orecv_leaf_name(&r->leaf, name, sizeof(name)), r->from, (long long)r->e1);
            } else if (says < 0 || now > r->deadline_ms) {
                orecv_send_why(r, HANDOFF_ABORT, "the map does not name the sender as the leaf's "
                                                 "primary at that epoch");
                orecv_release(o, r);
                memset(r, 0, sizeof(*r));
            }
        } else if (r->phase == R_PREPARING && r->purged) {
            struct hand_msg ready = {.type = HANDOFF_READY, .id = 1, .u.ready = {r->e1}};
            r->phase = R_RECEIVING;
            if (r->h == NULL || owner_hlink_send(r->h, &ready) != HKV_OK)
                drop(o, r, "the link went before READY");
        }
    }
    owner_follow_settle(o);
}

void ofollow_flush(struct owner *o)
{
    struct orecv *rv = o->recv;
    for (int i = OWN_RECV_MAX; i < OWN_RECV_SLOTS; i++) {
        struct rmove *r = &rv->m[i];
        if (r->phase != R_RECEIVING)
            continue;
        if (r->gap || r->failed) {
            drop(o, r, r->gap ? "a sequence number is missing" : "a row could not be kept");
            continue;
        }
        if (r->held_due && r->h != NULL) {
            struct hand_msg held = {.type = HANDOFF_HELD, .id = 1,
                                    .u.fence = {r->e1, r->next_seq - 1}};
            r->held_due = 0;
            owner_hlink_send(r->h, &held);
        }
        /* frames with no row (a completion record) after the last batch:
         * nothing is left to commit, so they count as committed too (else a
         * durable write whose record came alone would wait for the next row) */
        if (r->batches_out == 0 && (r->cur == NULL || r->cur->n == 0) &&
            r->seq_committed < r->next_seq - 1 && r->h != NULL) {
            r->seq_committed = r->next_seq - 1;
            struct hand_msg p = {.type = HANDOFF_PROGRESS, .id = 1,
                                 .u.fence = {r->e1, r->seq_committed}};
            owner_hlink_send(r->h, &p);
        }
    }
}

void owner_follow_settle(struct owner *o)
{
    struct orecv *rv = o->recv;
    if (rv == NULL)
        return;
    const struct cmap_table *t = owner_own_map(o);
    int64_t now = clock_mono_ms();
    unsigned self = owner_own_number(o);
    for (int i = OWN_RECV_MAX; t != NULL && i < OWN_RECV_SLOTS; i++) {
        struct rmove *r = &rv->m[i];
        if (!is_follow_slot(rv, r) || (r->phase != R_PREPARING && r->phase != R_RECEIVING))
            continue;
        const struct cmap_leaf *l = same_leaf(o, r);
        if (l == NULL) {
            if (t->revision >= r->e1)
                drop(o, r, "the map no longer has the leaf (split or merged)");
            continue;
        }
        if (l->owner == self && l->state == CMAP_SERVING) {
            if (r->phase == R_RECEIVING)
                promoted(o, r, l->epoch);
            else /* never in sync: cannot be promoted (the map is ahead of this copy) */
                drop(o, r, "the map made this owner primary before the copy was seeded");
            continue;
        }
        if (l->owner != r->from) {
            drop(o, r, "the map names another primary");
            continue;
        }
        if (r->h == NULL && r->orphan_ms != 0 && now - r->orphan_ms > FOLLOW_ORPHAN_MS &&
            !in_isr(l, self))
            drop(o, r, "the primary's link went and it did not come back");
    }
    owner_park_release(o); /* requests on a leaf the map no longer keeps waiting */
}

void owner_follow_stats(const struct owner *o, struct ofollow_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (o->recv == NULL)
        return;
    *out = o->recv->fst;
    out->following = 0;
    for (int i = OWN_RECV_MAX; i < OWN_RECV_SLOTS; i++)
        out->following += o->recv->m[i].phase == R_RECEIVING;
}

/* An edge retries a write for write-deadline at most; a minute covers it
 * with room (past it a retry gets "outcome unknown", as before). */
#define OFOLLOW_HEIR_MS 60000

int ofollow_inherits(const struct owner *o, uint64_t place, uint64_t inc)
{
    const struct orecv *rv = o->recv;
    if (rv == NULL || inc == 0)
        return 0;
    uint32_t h = (uint32_t)(place >> 32);
    int64_t since = clock_mono_ms() - OFOLLOW_HEIR_MS;
    unsigned n = rv->nheirs < OFOLLOW_HEIRS ? rv->nheirs : OFOLLOW_HEIRS;
    for (unsigned i = 0; i < n; i++) {
        const struct oheir *x = &rv->heirs[i];
        uint32_t mask = x->bits ? ~(uint32_t)((1ULL << (32 - x->bits)) - 1) : 0;
        if (x->inc == inc && x->at_ms >= since && (h & mask) == x->start)
            return 1; /* a split since: the halves are in the range */
    }
    return 0;
}

void ofollow_inherited(struct owner *o)
{
    if (o->recv != NULL)
        o->recv->fst.inherited++;
}

int ofollow_follows(const struct owner *o, uint64_t place)
{
    const struct orecv *rv = o->recv;
    uint32_t h = (uint32_t)(place >> 32);
    for (int i = OWN_RECV_MAX; rv != NULL && i < OWN_RECV_SLOTS; i++) {
        const struct rmove *r = &rv->m[i];
        uint32_t mask = r->leaf.bits ? ~(uint32_t)((1ULL << (32 - r->leaf.bits)) - 1) : 0;
        if (r->phase == R_RECEIVING && (h & mask) == r->leaf.start)
            return 1;
    }
    return 0;
}
