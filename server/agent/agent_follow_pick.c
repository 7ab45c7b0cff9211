/*
 * agent_follow_pick.c - where a leaf's next follower goes (agent_follow.h):
 * a pure function of the candidates and the leaf, so the preference order
 * (another zone, another host, any other owner; then the least loaded
 * with followers) is tested without a daemon.
 */
#include "server/agent/agent_follow.h"

/* 0: another zone; 1: another host; 2: the primary's host. */
static int rank(const struct afol_cand *c, const struct afol_cand *prim)
{
    if (prim == NULL)
        return 1;
    if (c->zone != 0 && prim->zone != 0 && c->zone != prim->zone)
        return 0;
    return c->host != prim->host ? 1 : 2;
}

static int in_isr(const struct cmap_leaf *l, unsigned n)
{
    for (unsigned i = 0; i < l->nisr && i < CMAP_MAX_ISR; i++)
        if (l->isr[i] == n)
            return 1;
    return 0;
}

unsigned afol_choose(const struct afol_cand *cands, size_t n, int pool, const struct cmap_leaf *l)
{
    const struct afol_cand *prim = NULL, *best = NULL;
    int best_rank = 3;
    for (size_t i = 0; i < n; i++)
        if (cands[i].number == l->owner)
            prim = &cands[i];
    for (size_t i = 0; i < n; i++) {
        const struct afol_cand *c = &cands[i];
        if (c->pool != pool || !c->live || c->number == 0 || c->number == l->owner ||
            in_isr(l, c->number) || (l->state == CMAP_MOVING && c->number == l->to))
            continue;
        int r = rank(c, prim);
        if (best == NULL || r < best_rank ||
            (r == best_rank && (c->following < best->following ||
                                (c->following == best->following && c->number < best->number)))) {
            best = c;
            best_rank = r;
        }
    }
    return best != NULL ? best->number : 0;
}
