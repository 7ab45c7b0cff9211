/*
 * info.c - INFO: "# Section\r\nkey:value\r\n" as Redis prints it, for the
 * whole daemon.  Daemon-wide numbers come from the scoreboard (summed over
 * every edge), so any edge answers the same thing.
 */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "server/edge/info.h"

#include "server/edge/edge_arg.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_owners.h"
#include "server/core/version.h"
#include "server/core/clock.h"
#include "server/core/topo.h"

typedef void (*info_section_fn)(struct hkv_buf *b, struct edge *e);

static uint64_t sum_edges(struct edge *e, size_t off)
{
    struct board *bd = e->ctx->board;
    uint64_t n = 0;
    for (uint32_t i = 0; i < bd->nslots; i++)
        if (atomic_load_explicit(&bd->slots[i].role, memory_order_relaxed) == BOARD_EDGE)
            n += board_load((_Atomic uint64_t *)((char *)&bd->slots[i] + off));
    return n;
}

static void sec_server(struct hkv_buf *b, struct edge *e)
{
    const struct cfg *cfg = e->ctx->cfg;
    struct board *bd = e->ctx->board;
    struct utsname u;
    uname(&u);
    int64_t now_ms = clock_unix_ms();
    int64_t start = atomic_load_explicit(&bd->start_unix_ms, memory_order_relaxed);
    int64_t up = (now_ms - start) / 1000;
    buf_printf(b,
               "# Server\r\n"
               "redis_version:7.0.0\r\n"
               "hotkvd_version:%s\r\n"
               "redis_mode:standalone\r\n"
               "os:%s %s %s\r\n"
               "process_id:%d\r\n"
               "edge_pid:%d\r\n"
               "colo:%s\r\n"
               "tcp_port:%d\r\n"
               "uptime_in_seconds:%lld\r\n"
               "uptime_in_days:%lld\r\n"
               "config_generation:%llu\r\n"
               "config_reload_failures:%llu\r\n"
               "colos:%d\r\n"
               "edge_workers:%d\r\n"
               "owners:%d\r\n"
               "hot_owners:%d\r\n"
               "cold_owners:%d\r\n"
               "\r\n",
               HOTKVD_VERSION, u.sysname, u.release, u.machine,
               (int)atomic_load_explicit(&bd->master_pid, memory_order_relaxed), (int)getpid(),
               e->ectx->colo_name, cfg->port, (long long)up, (long long)up / 86400,
               (unsigned long long)atomic_load_explicit(&bd->config_generation, memory_order_relaxed),
               (unsigned long long)atomic_load_explicit(&bd->config_reload_failures,
                                                        memory_order_relaxed),
               cfg->colos, cfg->colos * cfg->edge_workers, cfg->hot_owners + cfg->cold_owners,
               cfg->hot_owners,
               cfg->cold_owners);
}

static void sec_clients(struct hkv_buf *b, struct edge *e)
{
    buf_printf(b,
               "# Clients\r\n"
               "connected_clients:%llu\r\n"
               "edge_connected_clients:%llu\r\n"
               "maxclients:%lld\r\n"
               "\r\n",
               (unsigned long long)sum_edges(e, offsetof(struct board_slot, connected_clients)),
               (unsigned long long)e->nconns, (long long)e->ctx->cfg->maxclients);
}

static void sec_stats(struct hkv_buf *b, struct edge *e)
{
    buf_printf(b, "# Stats\r\n");
#define X(name, kind, help)                                                          \
    if (kind == CTR_COUNTER)                                                          \
        buf_printf(b, #name ":%llu\r\n",                                              \
                   (unsigned long long)sum_edges(e, offsetof(struct board_slot, name)));
    CTR_EDGE(X)
#undef X
    buf_printf(b, "tls_connections:%llu\r\n",
               (unsigned long long)sum_edges(e, offsetof(struct board_slot, tls_connections)));
    buf_printf(b, "instantaneous_ops_per_sec:%llu\r\n\r\n", (unsigned long long)e->ops_per_sec);
}

static void sec_processes(struct hkv_buf *b, struct edge *e)
{
    struct board *bd = e->ctx->board;
    int64_t now = clock_mono_ms();
    buf_printf(b, "# Processes\r\n");
    for (uint32_t i = 0; i < bd->nslots; i++) {
        struct board_slot *s = &bd->slots[i];
        uint32_t role = atomic_load_explicit(&s->role, memory_order_relaxed);
        buf_printf(b, "slot%u:role=%s,pid=%d,ready=%u,restarts=%u,heartbeat_age_ms=%lld,config_generation=%llu\r\n",
                   i, role == BOARD_EDGE ? "edge" : role == BOARD_OWNER ? "owner" : "none",
                   (int)atomic_load_explicit(&s->pid, memory_order_relaxed),
                   atomic_load_explicit(&s->ready, memory_order_relaxed),
                   atomic_load_explicit(&s->restarts, memory_order_relaxed),
                   (long long)(now - atomic_load_explicit(&s->heartbeat_ms, memory_order_relaxed)),
                   (unsigned long long)board_load(&s->config_generation));
    }
    buf_printf(b, "\r\n");
}

/* Owner counters from the last STATS each owner answered (polled every
 * second on its READ link; INFO never waits for an owner). */
static void sec_owners(struct hkv_buf *b, struct edge *e)
{
    int64_t sum[CTR_OWNER_COUNT] = {0};
    int64_t now = clock_mono_ms();
    int answered = 0;
    for (int g = 0; g < e->nowners; g++) {
        if (e->owners[g].stats_at_ms == 0)
            continue;
        answered++;
        for (int i = 0; i < CTR_OWNER_COUNT; i++)
            sum[i] += e->owners[g].stats[i];
    }
    buf_printf(b, "# Owners\r\nowners_answering:%d\r\n", answered);
    for (int i = 0; i < CTR_OWNER_COUNT; i++)
        buf_printf(b, "%s:%lld\r\n", ctr_owner_defs[i].name, (long long)sum[i]);
    for (int g = 0; g < e->nowners; g++) {
        struct owner_ref *o = &e->owners[g];
        const int64_t *v = o->stats;
        buf_printf(b,
                   "owner_%s_%d:reads=%lld,writes=%lld,idempotent_retries=%lld,keys=%lld,"
                   "dirty_keys=%lld,persist_batches=%lld,persist_rows=%lld,"
                   "persist_last_commit_ms=%lld,persist_stall_ms_max=%lld,persist_errors=%lld,"
                   "queue_depth=%lld,persist_backlog_bytes=%lld,stats_age_ms=%lld,link=%s\r\n",
                   topo_pool_name(o->pool), o->index, (long long)v[CTR_OWNER_owner_reads],
                   (long long)v[CTR_OWNER_owner_writes],
                   (long long)v[CTR_OWNER_owner_idempotent_retries],
                   (long long)v[CTR_OWNER_owner_keys], (long long)v[CTR_OWNER_persist_dirty_keys],
                   (long long)v[CTR_OWNER_persist_batches], (long long)v[CTR_OWNER_persist_rows],
                   (long long)v[CTR_OWNER_persist_last_commit_ms],
                   (long long)v[CTR_OWNER_persist_stall_ms_max],
                   (long long)v[CTR_OWNER_persist_errors], (long long)v[CTR_OWNER_owner_queue_depth],
                   (long long)v[CTR_OWNER_persist_backlog_bytes],
                   o->stats_at_ms ? (long long)(now - o->stats_at_ms) : -1LL,
                   elink_is_up(o->link[WIRE_ROLE_WRITE]) ? "up" : "down");
    }
    buf_printf(b, "\r\n");
}

/* As Redis: no db0 line when the keyspace is empty. */
static void sec_keyspace(struct hkv_buf *b, struct edge *e)
{
    int64_t keys = 0;
    for (int g = 0; g < e->nowners; g++)
        keys += e->owners[g].stats[CTR_OWNER_owner_keys];
    buf_printf(b, "# Keyspace\r\n");
    if (keys > 0)
        buf_printf(b, "db0:keys=%lld,expires=0,avg_ttl=0\r\n", (long long)keys);
    buf_printf(b, "\r\n");
}

static void sec_cache(struct hkv_buf *b, struct edge *e)
{
    struct cache_stats st;
    buf_printf(b, "# Cache\r\n");
    if (e->cache == NULL) {
        buf_printf(b, "cache_enabled:0\r\n\r\n");
        return;
    }
    cache_stats(e->cache, &st);
    buf_printf(b, "cache_enabled:1\r\n");
#define X(name) buf_printf(b, #name ":%llu\r\n", (unsigned long long)st.counters[CACHE_CTR_##name]);
    CACHE_COUNTERS(X)
#undef X
    buf_printf(b, "cache_used_memory:%llu\r\ncache_entries:%llu\r\ncache_capacity:%llu\r\n\r\n",
               (unsigned long long)st.used_memory, (unsigned long long)st.entries,
               (unsigned long long)st.capacity);
}

/* The five hottest keys of the colo, as measured by the sketch.  Keys are
 * printed with anything outside printable ASCII as \xHH. */
static void sec_hotkeys(struct hkv_buf *b, struct edge *e)
{
    buf_printf(b, "# Hotkeys\r\n");
    if (e->cache != NULL) {
        struct cache_hotkey hk[5];
        int n = cache_hotkeys(e->cache, hk, 5, clock_mono_ms());
        for (int i = 0; i < n; i++) {
            buf_printf(b, "hotkey_%d:key=", i);
            size_t len = hk[i].klen < sizeof(hk[i].key) ? hk[i].klen : sizeof(hk[i].key);
            for (size_t j = 0; j < len; j++) {
                unsigned char ch = (unsigned char)hk[i].key[j];
                if (ch > ' ' && ch < 127 && ch != ',' && ch != '\\')
                    buf_append(b, &hk[i].key[j], 1);
                else
                    buf_printf(b, "\\x%02x", ch);
            }
            buf_printf(b, ",reads_per_sec=%llu\r\n", (unsigned long long)hk[i].reads_per_sec);
        }
    }
    buf_printf(b, "\r\n");
}

/* The colo's rate limiter (server/ratelimit.h): counters of the whole colo
 * (every edge of it), buckets in use by a scan of its table.  Per colo, not
 * global: another colo's INFO counts its own clients. */
static void sec_ratelimit(struct hkv_buf *b, struct edge *e)
{
    struct rl_stats st;
    rl_stats(e->rl, rl_now(), &st);
    buf_printf(b, "# Ratelimit\r\n");
#define X(name) buf_printf(b, #name ":%llu\r\n", (unsigned long long)st.counters[RL_CTR_##name]);
    RL_COUNTERS(X)
#undef X
    buf_printf(b, "ratelimit_buckets:%llu\r\nratelimit_buckets_capacity:%llu\r\n"
                  "ratelimit_rules:%d\r\n\r\n",
               (unsigned long long)st.buckets, (unsigned long long)st.capacity, st.rules);
}

static const struct {
    const char *name;
    info_section_fn fn;
    int in_default;
} sections[] = {
    {"server", sec_server, 1},
    {"clients", sec_clients, 1},
    {"stats", sec_stats, 1},
    {"owners", sec_owners, 1},
    {"processes", sec_processes, 0},
    {"keyspace", sec_keyspace, 1},
    {"cache", sec_cache, 1},
    {"hotkeys", sec_hotkeys, 1},
    {"ratelimit", sec_ratelimit, 1},
};
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

void info_render(struct hkv_buf *out, struct edge *e, int n, const struct resp_slice *names)
{
    int want[NSECTIONS] = {0};
    if (n == 0)
        for (size_t i = 0; i < NSECTIONS; i++)
            want[i] = sections[i].in_default;
    for (int a = 0; a < n; a++)
        for (size_t i = 0; i < NSECTIONS; i++) {
            if (slice_is(&names[a], "all") || slice_is(&names[a], "everything"))
                want[i] = 1;
            else if (slice_is(&names[a], "default"))
                want[i] |= sections[i].in_default;
            else if (slice_is(&names[a], sections[i].name))
                want[i] = 1;
        }
    for (size_t i = 0; i < NSECTIONS; i++)
        if (want[i])
            sections[i].fn(out, e);
    /* Redis ends the reply without the last blank line. */
    if (buf_unread(out) >= 2)
        out->len -= 2;
}
