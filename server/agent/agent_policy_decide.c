/*
 * agent_policy_decide.c - the rule of automatic moves as a pure function;
 * see agent_policy.h.  No clock, no etcd, no map: what it needs is handed
 * in, so every rule is a unit test (tests/unit/check_agent_policy.c).
 *
 * Shares are compared in integers (a * 100 >= pct * b), never divided, so a
 * leaf with no work is never "hot" and a rounding never tips a decision.
 */
#include "server/agent/agent_policy.h"

#include "server/agent/agent_txn.h"
#include "server/core/cmap.h"

int apol_overloaded(const struct apol_cfg *c, const struct apol_owner *o)
{
    if (!o->fresh)
        return 0;
    if (o->busy > (uint32_t)c->busy_pm)
        return 1;
    return o->backlog >= APOL_BACKLOG_MIN && o->backlog > o->backlog_prev;
}

static int share_at_least(uint64_t part, uint64_t whole, int pct)
{
    /* part / whole >= pct / 100, without overflow for any u64 part and whole */
    if (whole == 0)
        return 0;
    unsigned __int128 a = (unsigned __int128)part * 100, b = (unsigned __int128)whole * (unsigned)pct;
    return a >= b;
}

static uint64_t pct_of(uint64_t part, uint64_t whole)
{
    return whole == 0 ? 0 : (uint64_t)((unsigned __int128)part * 100 / whole);
}

/* The least busy owner that can take a leaf from owners[src], or -1. */
static long pick_target(const struct apol_cfg *c, const struct apol_owner *owners, size_t n,
                        size_t src)
{
    long best = -1;
    for (size_t i = 0; i < n; i++) {
        const struct apol_owner *t = &owners[i];
        if (i == src || t->number == owners[src].number || t->pool != owners[src].pool ||
            !t->live || !t->fresh || t->incoming >= AGENT_SLOTS || apol_overloaded(c, t) ||
            t->busy >= (uint32_t)c->busy_pm)
            continue;
        if (best < 0 || t->busy < owners[best].busy ||
            (t->busy == owners[best].busy && t->number < owners[best].number))
            best = (long)i;
    }
    return best;
}

static struct hand_leaf half_of(struct hand_leaf l, int which)
{
    struct hand_leaf h = {.pool = l.pool, .bits = (uint8_t)(l.bits + 1), .start = l.start};
    if (which)
        h.start |= 1u << (31 - l.bits);
    return h;
}

void apol_decide(const struct apol_cfg *c, const struct apol_owner *owners, size_t nowners,
                 size_t src, const struct apol_leaf *leaves, size_t nleaves, int64_t now,
                 struct apol_decision *out)
{
    *out = (struct apol_decision){.kind = APOL_NONE};
    const struct apol_owner *s = src < nowners ? &owners[src] : NULL;
    if (!c->on) {
        out->why = "auto-moves is off";
        return;
    }
    if (s == NULL || !apol_overloaded(c, s)) {
        out->why = "the owner is not overloaded";
        return;
    }
    if (s->outgoing) {
        out->why = "a move from the owner is under way";
        return;
    }
    if (s->cool_until > now) {
        out->why = "the owner is cooling down";
        return;
    }
    const struct apol_leaf *busiest = NULL;
    for (size_t i = 0; i < nleaves; i++) {
        const struct apol_leaf *l = &leaves[i];
        if (l->cool_until > now || l->load.work == 0)
            continue;
        if (busiest == NULL || l->load.work > busiest->load.work)
            busiest = l;
    }
    if (busiest == NULL) {
        out->why = "no leaf to shed (none with work, or all cooling down)";
        return;
    }
    const struct hand_load *L = &busiest->load;
    out->leaf = L->leaf;
    if (L->has_key && share_at_least(L->topwork, L->work, c->hot_pct)) {
        out->kind = APOL_REFUSE;
        out->share_pct = pct_of(L->topwork, L->work);
        return;
    }
    long t = pick_target(c, owners, nowners, src);
    if (t < 0) {
        out->why = "no owner of the pool can take a leaf (none live, known, idle enough)";
        return;
    }
    out->to = owners[t].number;
    uint64_t small = L->half[0] < L->half[1] ? L->half[0] : L->half[1];
    if (L->leaf.bits < CMAP_MAX_BITS && share_at_least(small, L->work, c->split_pct)) {
        out->kind = APOL_SPLIT;
        out->half = half_of(L->leaf, L->half[1] > L->half[0]);
        out->share_pct = pct_of(small, L->work);
        return;
    }
    out->kind = APOL_MOVE;
}
