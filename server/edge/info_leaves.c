/*
 * info_leaves.c - INFO # Leaves; see info_leaves.h.  Rendered from the
 * owners' last STATS, like # Owners: INFO never waits for an owner.
 */
#include "server/edge/info_leaves.h"

#include <string.h>

#include "server/core/cmap.h"
#include "server/core/counters.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_owners.h"
#include "server/edge/info_cluster.h"

void info_key_escaped(struct hkv_buf *b, const char *key, size_t len)
{
    for (size_t j = 0; j < len; j++) {
        unsigned char ch = (unsigned char)key[j];
        if (ch > ' ' && ch < 127 && ch != ',' && ch != '\\')
            buf_append(b, &key[j], 1);
        else
            buf_printf(b, "\\x%02x", ch);
    }
}

/* The automatic moves (the agent's, through the segment's health) and the
 * busy fraction of every owner this edge polls. */
static void auto_lines(struct hkv_buf *b, struct edge *e)
{
    struct cluster_view v;
    if (info_cluster_view(e, &v) != 0)
        return;
    const struct cmap_health *h = &v.h;
    size_t klen = h->auto_refused_key_len < 0 ? 0
                  : (size_t)h->auto_refused_key_len > sizeof(h->auto_refused_key)
                      ? sizeof(h->auto_refused_key)
                      : (size_t)h->auto_refused_key_len;
    buf_printf(b, "auto_moves_enabled:%d\r\nauto_moves_started:%lld\r\n"
               "auto_splits_started:%lld\r\nauto_refused_hot_key:%lld\r\n"
               "auto_refused_last_key:", edge_config(e)->auto_moves, (long long)h->auto_moves,
               (long long)h->auto_splits, (long long)h->auto_refused);
    info_key_escaped(b, h->auto_refused_key, klen);
    buf_printf(b, "\r\n");
    for (int g = 0; g < e->owners->n; g++) {
        const struct owner_ref *o = &e->owners->ref[g];
        if (o->stats_at_ms == 0)
            continue;
        int64_t pm = o->stats[CTR_OWNER_owner_busy_permille];
        buf_printf(b, "owner_%u_busy:%lld.%03lld\r\n", o->number, (long long)(pm / 1000),
                   (long long)(pm % 1000));
    }
}

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

/* The owners' counters, summed (the largest for a gauge that is a maximum). */
static void owner_sums(struct edge *e, int64_t *v)
{
    for (int g = 0; g < e->owners->n; g++) {
        if (e->owners->ref[g].stats_at_ms == 0)
            continue;
        for (int i = 0; i < CTR_OWNER_COUNT; i++) {
            int64_t x = e->owners->ref[g].stats[i];
            if (!is_max(ctr_owner_defs[i].name))
                v[i] += x;
            else if (x > v[i])
                v[i] = x;
        }
    }
}

void info_leaves(struct hkv_buf *b, struct edge *e)
{
    if (e->ctx->cmap == NULL)
        return;
    int64_t v[CTR_OWNER_COUNT] = {0};
    owner_sums(e, v);
    buf_printf(b, "# Leaves\r\n");
    for (int i = 0; i < CTR_OWNER_COUNT; i++)
        if (strncmp(ctr_owner_defs[i].name, "leaf_", 5) == 0)
            buf_printf(b, "%s:%lld\r\n", ctr_owner_defs[i].name, (long long)v[i]);
    auto_lines(b, e);
    buf_printf(b, "\r\n");
}

void info_replicas(struct hkv_buf *b, struct edge *e)
{
    if (e->ctx->cmap == NULL)
        return;
    int64_t v[CTR_OWNER_COUNT] = {0};
    owner_sums(e, v);
    buf_printf(b, "replicas:%d\r\n", edge_config(e)->replicas);
    for (int i = 0; i < CTR_OWNER_COUNT; i++)
        if (strncmp(ctr_owner_defs[i].name, "repl_", 5) == 0)
            buf_printf(b, "%s:%lld\r\n", ctr_owner_defs[i].name, (long long)v[i]);
    struct cluster_view cv; /* this host's agent: promotions and follow orders */
    if (info_cluster_view(e, &cv) == 0)
        buf_printf(b, "repl_promotions:%lld\r\nrepl_agent_isr_adds:%lld\r\n"
                   "repl_agent_isr_removals:%lld\r\nrepl_follow_orders:%lld\r\n"
                   "repl_follow_orders_failed:%lld\r\n", (long long)cv.h.repl_promotions,
                   (long long)cv.h.repl_isr_adds, (long long)cv.h.repl_isr_removals,
                   (long long)cv.h.repl_follow_sent, (long long)cv.h.repl_follow_failed);
}
