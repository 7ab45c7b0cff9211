/*
 * agent_promote_pick.c - which follower a leaf whose primary is gone gets
 * as its new primary (agent_promote.h): a pure function of the leaf and of
 * which owners are eligible, so the rule (only in-sync members, the first
 * live one, the dead left out of the new set) is tested without a daemon.
 */
#include "server/agent/agent_promote.h"

#include <string.h>

int apro_choose(const struct cmap_leaf *l, const uint8_t *eligible, struct agent_leaf_v *out)
{
    memset(out, 0, sizeof(*out));
    if (l->state != CMAP_SERVING || l->nisr == 0 || l->nisr > CMAP_MAX_ISR)
        return 0;
    for (unsigned i = 0; i < l->nisr; i++) {
        unsigned n = l->isr[i];
        if (n == 0 || n > CMAP_MAX_OWNERS || n == l->owner || !eligible[n])
            continue;
        if (out->owner == 0)
            out->owner = n;
        else
            agent_isr_with(out, n);
    }
    out->state = CMAP_SERVING;
    return out->owner != 0;
}
