/*
 * info_leaves.c - INFO # Leaves; see info_leaves.h.  Rendered from the
 * owners' last STATS, like # Owners: INFO never waits for an owner.
 */
#include "server/edge/info_leaves.h"

#include <string.h>

#include "server/core/cmap.h"
#include "server/core/counters.h"
#include "server/edge/edge_owners.h"

/* Gauges that are a largest value, not an amount. */
static int is_max(const char *name)
{
    static const char *const suffix[] = {"_last", "_max", "_p99", "_per_second"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
        size_t k = strlen(suffix[i]);
        if (n > k && strcmp(name + n - k, suffix[i]) == 0)
            return 1;
    }
    return 0;
}

void info_leaves(struct hkv_buf *b, struct edge *e)
{
    if (e->ctx->cmap == NULL)
        return;
    int64_t v[CTR_OWNER_COUNT] = {0};
    for (int g = 0; g < e->nowners; g++) {
        if (e->owners[g].stats_at_ms == 0)
            continue;
        for (int i = 0; i < CTR_OWNER_COUNT; i++) {
            int64_t x = e->owners[g].stats[i];
            if (!is_max(ctr_owner_defs[i].name))
                v[i] += x;
            else if (x > v[i])
                v[i] = x;
        }
    }
    buf_printf(b, "# Leaves\r\n");
    for (int i = 0; i < CTR_OWNER_COUNT; i++)
        if (strncmp(ctr_owner_defs[i].name, "leaf_", 5) == 0)
            buf_printf(b, "%s:%lld\r\n", ctr_owner_defs[i].name, (long long)v[i]);
    buf_printf(b, "\r\n");
}
