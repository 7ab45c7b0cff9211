/*
 * ratelimit_stats.c - the limiter's numbers for INFO and /metrics
 * (ratelimit.h): the counter rows summed, the buckets in use by a scan
 * (rl_stats) or by the stripes' counts (rl_stats_fast: a CL.THROTTLE
 * table is too large to scan), and RESETSTAT.
 */
#include <string.h>

#include "server/colo/ratelimit_int.h"

void rl_stats(struct rl *rl, int64_t now, struct rl_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (rl == NULL)
        return;
    for (int i = 0; i < RL_CTR_COUNT; i++)
        out->counters[i] = rl->local[i];
    out->rules = rl->nrules;
    if (!rl->ok)
        return;
    seg_counters(&rl->seg, out->counters, RL_CTR_COUNT);
    size_t n = (size_t)rl->nstripes * rl->per_stripe;
    out->capacity = n;
    for (size_t i = 0; i < n; i++) {
        struct rl_slot *sl = &rl->slots[i];
        if (atomic_load_explicit(&sl->key, memory_order_relaxed) == 0)
            continue;
        uint64_t t = atomic_load_explicit(&sl->tat, memory_order_relaxed);
        if (t != RL_BUSY && (int64_t)(t - (uint64_t)now) > 0)
            out->buckets++;
    }
}

void rl_stats_fast(struct rl *rl, struct rl_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (rl == NULL)
        return;
    for (int i = 0; i < RL_CTR_COUNT; i++)
        out->counters[i] = rl->local[i];
    if (!rl->ok)
        return;
    seg_counters(&rl->seg, out->counters, RL_CTR_COUNT);
    out->capacity = (uint64_t)rl->nstripes * rl->per_stripe;
    for (uint32_t s = 0; s < rl->nstripes; s++)
        out->buckets += stripe_at(rl, s)->used; /* read unlocked: a level, not a sum */
}

void rl_reset_counters(struct rl *rl)
{
    if (rl == NULL)
        return;
    memset(rl->local, 0, sizeof(rl->local));
    if (rl->ok)
        seg_reset_counters(&rl->seg);
}

