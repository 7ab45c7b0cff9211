/*
 * agent_promote_pick.c - which follower a leaf whose primary is gone gets
 * as its new primary (agent_promote.h): a pure function of the leaf and of
 * which owners are eligible, so the rule (only in-sync members, the first
 * live one, the dead left out of the new set) is tested without a daemon.
 */
#include "server/agent/agent_promote.h"

#include <string.h>

int apro_choose(const struct cmap_leaf *l, const uint8_t *eligible, int moving_ok,
                struct agent_leaf_v *out)
{
    memset(out, 0, sizeof(*out));
    if ((l->state != CMAP_SERVING && !(moving_ok && l->state == CMAP_MOVING)) || l->nisr == 0 ||
        l->nisr > CMAP_MAX_ISR)
        return 0;
    /* The new set is empty: the other followers followed the old primary's
     * stream and may hold results the new one never got (or, having left
     * that stream, nothing), so they are seeded again from the new primary
     * before they count (tests/model/README.md, replica.pml finding 1:
     * DROP_WHOLE_ON_FAILOVER, NO_TRUNCATE). */
    for (unsigned i = 0; i < l->nisr && out->owner == 0; i++) {
        unsigned n = l->isr[i];
        if (n == 0 || n > CMAP_MAX_OWNERS || n == l->owner || !eligible[n])
            continue;
        out->owner = n;
    }
    out->state = CMAP_SERVING;
    return out->owner != 0;
}
