/* counters.c - the counter lists as data, and decoding STATS by them; see
 * counters.h. */
#include "counters.h"

#include <string.h>

const struct ctr_def ctr_edge_defs[CTR_EDGE_COUNT] = {
#define X(name, kind, help) {#name, kind, help},
    CTR_EDGE(X)
#undef X
};

const struct ctr_def ctr_owner_defs[CTR_OWNER_COUNT] = {
#define X(name, kind, help) {#name, kind, help},
    CTR_OWNER(X)
#undef X
};

void ctr_owner_take(const struct wire_stat *stats, uint32_t n, int64_t *v)
{
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < CTR_OWNER_COUNT; k++) {
            const char *name = ctr_owner_defs[k].name;
            if (stats[i].name.len == strlen(name) && memcmp(stats[i].name.p, name, stats[i].name.len) == 0) {
                v[k] = stats[i].value;
                break;
            }
        }
}
