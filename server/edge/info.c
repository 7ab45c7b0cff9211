/*
 * info.c - INFO: "# Section\r\nkey:value\r\n" as Redis prints it, for the
 * whole daemon.  Daemon-wide numbers come from the scoreboard (summed over
 * every edge), so any edge answers the same thing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "server/edge/edge_pubsub.h"
#include "server/edge/info.h"

#include "server/colo/cache.h"
#include "server/colo/ratelimit.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_health.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_link.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_http.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_rl.h"
#include "server/edge/info_leaves.h"
#include "server/edge/info_redis.h"
#include "server/edge/edge_sess.h"
#include "server/core/acllog.h"
#include "server/core/version.h"
#include "server/core/notify.h"
#include "server/core/router.h"
#include "server/core/runinfo.h"
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

#ifdef __GNUC__
#define GCC_VERSION_STR STR_(__GNUC__) "." STR_(__GNUC_MINOR__) "." STR_(__GNUC_PATCHLEVEL__)
#else
#define GCC_VERSION_STR "0.0.0"
#endif
#define STR_(x) STR__(x)
#define STR__(x) #x

static void sec_server(struct hkv_buf *b, struct edge *e)
{
    const struct cfg *cfg = edge_config(e);
    struct board *bd = e->ctx->board;
    struct utsname u;
    uname(&u);
    int64_t now_us = clock_unix_us();
    int64_t start = atomic_load_explicit(&bd->start_unix_ms, memory_order_relaxed);
    int64_t up = (now_us / 1000 - start) / 1000;
    char exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    /* Redis's fields where they can be true here (no git, no cron hz, no LRU
     * clock), in Redis's order, then hotkvd's own */
    buf_printf(b,
               "# Server\r\n"
               "redis_version:7.0.0\r\n"
               "redis_git_sha1:00000000\r\n"
               "redis_git_dirty:0\r\n"
               "redis_build_id:%016llx\r\n"
               "hotkvd_version:%s\r\n"
               "redis_mode:standalone\r\n"
               "os:%s %s %s\r\n"
               "arch_bits:%d\r\n"
               "monotonic_clock:POSIX clock_gettime\r\n"
               "multiplexing_api:%s\r\n"
               "atomicvar_api:c11-builtin\r\n"
               "gcc_version:" GCC_VERSION_STR "\r\n"
               "process_id:%d\r\n"
               "process_supervised:%s\r\n"
               "run_id:%s\r\n"
               "edge_pid:%d\r\n"
               "colo:%s\r\n"
               "tcp_port:%d\r\n"
               "writer_port:%d\r\n"
               "edge_serves:%s\r\n"
               "server_time_usec:%lld\r\n"
               "uptime_in_seconds:%lld\r\n"
               "uptime_in_days:%lld\r\n"
               "executable:%s\r\n"
               "config_file:%s\r\n"
               "io_threads_active:0\r\n"
               "config_generation:%llu\r\n"
               "config_reload_failures:%llu\r\n"
               "colos:%d\r\n"
               "edge_workers:%d\r\n"
               "owners:%d\r\n"
               "hot_owners:%d\r\n"
               "cold_owners:%d\r\n"
               "\r\n",
               (unsigned long long)router_hash(HOTKVD_VERSION, strlen(HOTKVD_VERSION)),
               HOTKVD_VERSION, u.sysname, u.release, u.machine, (int)(sizeof(void *) * 8),
               event_base_get_method(e->base),
               (int)atomic_load_explicit(&bd->master_pid, memory_order_relaxed),
               notify_supervised() ? "systemd" : "no", runinfo_run_id(), (int)getpid(),
               e->ectx->colo_name, cfg->port, cfg->writer_port,
               e->ectx->writer ? "writer-port" : "port", (long long)now_us, (long long)up,
               (long long)up / 86400, exe, runinfo_config_file(),
               (unsigned long long)atomic_load_explicit(&bd->config_generation, memory_order_relaxed),
               (unsigned long long)atomic_load_explicit(&bd->config_reload_failures,
                                                        memory_order_relaxed),
               cfg->colos, cfg->colos * cfg->edge_workers, cfg->hot_owners + cfg->cold_owners,
               cfg->hot_owners,
               cfg->cold_owners);
}

/* Redis's client_recent_max_input_buffer / _output_buffer, as the host's
 * clients are published in the board (at most 100 ms old): the largest
 * query buffer and output memory among the clients now. */
static void client_buffers(struct edge *e, uint64_t *in, uint64_t *out)
{
    struct board *bd = e->ctx->board;
    *in = *out = 0;
    for (uint32_t s = 0; s < bd->nslots; s++) {
        struct board_clients *t = board_clients(bd, s);
        if (atomic_load_explicit(&t->owner_pid, memory_order_relaxed) == 0)
            continue;
        uint32_t used = atomic_load_explicit(&t->used, memory_order_relaxed);
        for (uint32_t i = 0; i < used && i < bd->clients_cap; i++) {
            struct board_client *r = board_client_row(bd, s, i);
            if (atomic_load_explicit(&r->id, memory_order_relaxed) == 0)
                continue;
            uint64_t q = r->qbuf + r->qbuf_free;
            *in = q > *in ? q : *in;
            *out = r->omem > *out ? r->omem : *out;
        }
    }
}

static void sec_clients(struct hkv_buf *b, struct edge *e)
{
    uint64_t in_max, out_max;
    client_buffers(e, &in_max, &out_max);
    buf_printf(b,
               "# Clients\r\n"
               "connected_clients:%llu\r\n"
               "edge_connected_clients:%llu\r\n"
               "cluster_connections:0\r\n"
               "maxclients:%lld\r\n"
               "client_recent_max_input_buffer:%llu\r\n"
               "client_recent_max_output_buffer:%llu\r\n"
               "blocked_clients:%llu\r\n"
               "tracking_clients:%llu\r\n"
               "clients_in_timeout_table:0\r\n"
               "\r\n",
               (unsigned long long)sum_edges(e, offsetof(struct board_slot, connected_clients)),
               (unsigned long long)e->conns->n, (long long)edge_config(e)->maxclients,
               (unsigned long long)in_max, (unsigned long long)out_max,
               (unsigned long long)sum_edges(e, offsetof(struct board_slot, blocked_clients)),
               (unsigned long long)sum_edges(e, offsetof(struct board_slot, tracking_clients)));
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
    int64_t expired = 0;
    for (int g = 0; g < e->owners->n; g++)
        expired += e->owners->ref[g].stats[CTR_OWNER_owner_expired];
    buf_printf(b, "expired_keys:%lld\r\nevicted_keys:0\r\n", (long long)expired);
    uint64_t chans, pats;
    pubsub_info_counts(e, &chans, &pats);
    buf_printf(b, "pubsub_channels:%llu\r\npubsub_patterns:%llu\r\n", (unsigned long long)chans,
               (unsigned long long)pats);
    buf_printf(b, "tls_connections:%llu\r\n",
               (unsigned long long)sum_edges(e, offsetof(struct board_slot, tls_connections)));
    buf_printf(b, "tracking_total_keys:%llu\r\ntracking_total_items:%llu\r\n"
               "tracking_total_prefixes:%llu\r\n",
               (unsigned long long)sum_edges(e, offsetof(struct board_slot, tracking_total_keys)),
               (unsigned long long)sum_edges(e, offsetof(struct board_slot, tracking_total_items)),
               (unsigned long long)sum_edges(e,
                                             offsetof(struct board_slot, tracking_total_prefixes)));
    struct acllog *al = board_acllog(e->ctx->board); /* the host's (edge_acllog.h) */
    buf_printf(b, "acl_log_entries:%u\r\nacl_log_dropped:%llu\r\n",
               (unsigned)(al->n < (uint32_t)edge_config(e)->acllog_max_len
                              ? al->n : (uint32_t)edge_config(e)->acllog_max_len),
               (unsigned long long)atomic_load_explicit(&al->dropped, memory_order_relaxed));
    buf_printf(b, "instantaneous_ops_per_sec:%llu\r\n\r\n",
               (unsigned long long)e->ops_rate.per_sec);
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
                   i, role == BOARD_EDGE ? "edge" : role == BOARD_OWNER ? "owner"
                      : role == BOARD_AGENT ? "agent" : "none",
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
    for (int g = 0; g < e->owners->n; g++) {
        if (e->owners->ref[g].stats_at_ms == 0)
            continue;
        answered++;
        for (int i = 0; i < CTR_OWNER_COUNT; i++)
            sum[i] += e->owners->ref[g].stats[i];
    }
    buf_printf(b, "# Owners\r\nowners_answering:%d\r\nowners_silent:%d\r\n", answered,
               edge_health_silent_count(e));
    for (int i = 0; i < CTR_OWNER_COUNT; i++)
        buf_printf(b, "%s:%lld\r\n", ctr_owner_defs[i].name, (long long)sum[i]);
    for (int g = edge_owner_next(e, -1); g >= 0; g = edge_owner_next(e, g)) {
        struct owner_ref *o = &e->owners->ref[g];
        const int64_t *v = o->stats;
        if (o->number != 0) /* a cluster: pools and indexes repeat across hosts */
            buf_printf(b, "owner_%u:host_index=%s/%d,", o->number, topo_pool_name(o->pool),
                       o->index);
        else
            buf_printf(b, "owner_%s_%d:", topo_pool_name(o->pool), o->index);
        buf_printf(b,
                   "reads=%lld,writes=%lld,idempotent_retries=%lld,keys=%lld,"
                   "dirty_keys=%lld,persist_batches=%lld,persist_rows=%lld,"
                   "persist_last_commit_ms=%lld,persist_stall_ms_max=%lld,persist_errors=%lld,"
                   "queue_depth=%lld,persist_backlog_bytes=%lld,stats_age_ms=%lld,link=%s\r\n",
                   (long long)v[CTR_OWNER_owner_reads],
                   (long long)v[CTR_OWNER_owner_writes],
                   (long long)v[CTR_OWNER_owner_idempotent_retries],
                   (long long)v[CTR_OWNER_owner_keys], (long long)v[CTR_OWNER_persist_dirty_keys],
                   (long long)v[CTR_OWNER_persist_batches], (long long)v[CTR_OWNER_persist_rows],
                   (long long)v[CTR_OWNER_persist_last_commit_ms],
                   (long long)v[CTR_OWNER_persist_stall_ms_max],
                   (long long)v[CTR_OWNER_persist_errors], (long long)v[CTR_OWNER_owner_queue_depth],
                   (long long)v[CTR_OWNER_persist_backlog_bytes],
                   o->stats_at_ms ? (long long)(now - o->stats_at_ms) : -1LL,
                   o->link[WIRE_ROLE_WRITE] != NULL && elink_is_up(o->link[WIRE_ROLE_WRITE])
                       ? "up" : "down");
    }
    buf_printf(b, "\r\n");
}

/* As Redis: no db0 line when the keyspace is empty.  avg_ttl: the owners'
 * averages weighted by their keys with an expiry, in ms. */
static void sec_keyspace(struct hkv_buf *b, struct edge *e)
{
    int64_t keys = 0, expires = 0;
    double ttl = 0;
    for (int g = 0; g < e->owners->n; g++) {
        const int64_t *v = e->owners->ref[g].stats;
        keys += v[CTR_OWNER_owner_keys];
        expires += v[CTR_OWNER_owner_expires];
        ttl += (double)v[CTR_OWNER_owner_avg_ttl_ms] * (double)v[CTR_OWNER_owner_expires];
    }
    buf_printf(b, "# Keyspace\r\n");
    if (keys > 0)
        buf_printf(b, "db0:keys=%lld,expires=%lld,avg_ttl=%lld\r\n", (long long)keys,
                   (long long)expires, expires > 0 ? (long long)(ttl / (double)expires) : 0LL);
    buf_printf(b, "\r\n");
}

static void sec_cache(struct hkv_buf *b, struct edge *e)
{
    struct cache_stats st;
    buf_printf(b, "# Cache\r\n");
    if (e->cache->cache == NULL) {
        buf_printf(b, "cache_enabled:0\r\n\r\n");
        return;
    }
    cache_stats(e->cache->cache, &st);
    buf_printf(b, "cache_enabled:1\r\n");
#define X(name, help) buf_printf(b, #name ":%llu\r\n", (unsigned long long)st.counters[CACHE_CTR_##name]);
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
    if (e->cache->cache != NULL) {
        struct cache_hotkey hk[5];
        int n = cache_hotkeys(e->cache->cache, hk, 5, clock_mono_ms());
        for (int i = 0; i < n; i++) {
            buf_printf(b, "hotkey_%d:key=", i);
            size_t len = hk[i].klen < sizeof(hk[i].key) ? hk[i].klen : sizeof(hk[i].key);
            info_key_escaped(b, hk[i].key, len);
            buf_printf(b, ",reads_per_sec=%llu\r\n", (unsigned long long)hk[i].reads_per_sec);
        }
    }
    buf_printf(b, "\r\n");
}

/* The colo's rate limiter (server/colo/ratelimit.h): counters of the whole colo
 * (every edge of it), buckets in use by a scan of its table.  Per colo, not
 * global: another colo's INFO counts its own clients. */
static void sec_ratelimit(struct hkv_buf *b, struct edge *e)
{
    struct rl_stats st;
    rl_stats(e->rl->lim, rl_now(), &st);
    buf_printf(b, "# Ratelimit\r\n");
#define X(name, help) buf_printf(b, #name ":%llu\r\n", (unsigned long long)st.counters[RL_CTR_##name]);
    RL_COUNTERS(X)
#undef X
    buf_printf(b, "ratelimit_buckets:%llu\r\nratelimit_buckets_capacity:%llu\r\n"
                  "ratelimit_rules:%d\r\n",
               (unsigned long long)st.buckets, (unsigned long long)st.capacity, st.rules);
    /* CL.THROTTLE's table (edge_throttle.h), its own segment */
    rl_stats_fast(e->rl->app, &st);
#define X(name, help) buf_printf(b, "app_" #name ":%llu\r\n", (unsigned long long)st.counters[RL_CTR_##name]);
    RL_COUNTERS(X)
#undef X
    buf_printf(b, "app_ratelimit_slots_used:%llu\r\napp_ratelimit_capacity:%llu\r\n\r\n",
               (unsigned long long)st.buckets, (unsigned long long)st.capacity);
}

/* Redis's sections in Redis's order (commandstats and latencystats only
 * when asked, or with "all"), then hotkvd's own. */
static const struct {
    const char *name;
    info_section_fn fn;
    int in_default;
    int owners;                   /* rendered from the owners' STATS */
} sections[] = {
    {"server", sec_server, 1, 0},
    {"clients", sec_clients, 1, 0},
    {"memory", info_memory, 1, 1},
    {"persistence", info_persistence, 1, 1},
    {"stats", sec_stats, 1, 0},
    {"replication", info_replication, 1, 0},
    {"cpu", info_cpu, 1, 0},
    {"modules", info_modules, 1, 0},
    {"commandstats", info_commandstats, 0, 0},
    {"errorstats", info_errorstats, 1, 0},
    {"latencystats", info_latencystats, 0, 0},
    {"cluster", info_cluster, 1, 0},
    {"keyspace", sec_keyspace, 1, 1},
    {"owners", sec_owners, 1, 1},
    {"leaves", info_leaves, 1, 1},
    {"cache", sec_cache, 1, 0},
    {"hotkeys", sec_hotkeys, 1, 0},
    {"ratelimit", sec_ratelimit, 1, 0},
    {"http", edge_http_info, 1, 0},
    {"processes", sec_processes, 0, 0},
};
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

/* Which sections the arguments ask for (Redis: none or "default" the
 * default ones, "all" and "everything" every one, else those named). */
static void wanted(int n, const struct resp_slice *names, uint8_t *want)
{
    memset(want, 0, NSECTIONS);
    if (n == 0)
        for (size_t i = 0; i < NSECTIONS; i++)
            want[i] = (uint8_t)sections[i].in_default;
    for (int a = 0; a < n; a++)
        for (size_t i = 0; i < NSECTIONS; i++) {
            if (edge_arg_is(&names[a], "all") || edge_arg_is(&names[a], "everything"))
                want[i] = 1;
            else if (edge_arg_is(&names[a], "default"))
                want[i] |= (uint8_t)sections[i].in_default;
            else if (edge_arg_is(&names[a], sections[i].name))
                want[i] = 1;
        }
}

static void render(struct hkv_buf *out, struct edge *e, const uint8_t *want)
{
    for (size_t i = 0; i < NSECTIONS; i++)
        if (want[i])
            sections[i].fn(out, e);
    /* Redis ends the reply without the last blank line. */
    if (buf_unread(out) >= 2)
        out->len -= 2;
}

void info_text_now(struct edge *e, struct hkv_buf *out)
{
    struct resp_slice all = {"all", 3};
    uint8_t want[NSECTIONS];
    wanted(1, &all, want);
    render(out, e, want);
}

/* ---- the INFO command: the owners asked first ---------------------------------- */

/* An INFO that waits for the owners' STATS (at most INFO_ASK_MS: an owner
 * that has not answered by then is shown from its last answer). */
struct info_ask {
    struct op *op;
    struct event *timer;
    int pending;
    uint8_t want[NSECTIONS];
    struct info_req {
        struct info_ask *ask;
        struct owner_ref *o;
        uint64_t id;
        int sent;
    } reqs[];
};

struct info_args {
    struct info_ask *ask;
};
#define I(op) OP_ARGS(op, struct info_args)

#define INFO_ASK_MS 300

static void ask_end(struct info_ask *a, int reply)
{
    struct edge *e = a->op->e;
    for (int g = 0; g < e->owners->n; g++)
        if (a->reqs[g].sent)
            elink_cancel(a->reqs[g].o->link[WIRE_ROLE_READ], a->reqs[g].id);
    event_free(a->timer);
    struct op *op = a->op;
    if (reply) {
        struct hkv_buf *out = op_out(op);
        if (out != NULL) {
            struct hkv_buf b = HKV_BUF_INIT;
            render(&b, e, a->want);
            resp_add_verbatim(out, sess_of(op->c)->proto, buf_head(&b), buf_unread(&b));
            buf_deinit(&b);
        }
    }
    I(op)->ask = NULL;
    free(a);
    op_finish(op);
}

static void ask_cb(void *arg, int status, const struct wire_msg *m)
{
    struct info_req *r = arg;
    struct info_ask *a = r->ask;
    r->sent = 0;
    if (status == HKV_OK && m->type == WIRE_STATS_REPLY && !r->o->stats_drop) {
        edge_owner_take_stats(m, r->o->stats);
        r->o->stats_at_ms = clock_mono_ms();
    }
    if (--a->pending == 0)
        ask_end(a, 1);
}

static void ask_timeout(evutil_socket_t fd, short what, void *arg)
{
    ask_end(arg, 1);
}

static void ask_cancel(struct op *op)
{
    if (I(op)->ask != NULL)
        ask_end(I(op)->ask, 0);
}

static const struct op_family info_family = {.cancel = ask_cancel};

void info_command(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    uint8_t want[NSECTIONS];
    wanted(argc - 1, argv + 1, want);
    int owners = 0;
    for (size_t i = 0; i < NSECTIONS; i++)
        owners |= want[i] && sections[i].owners;
    struct hkv_buf b = HKV_BUF_INIT;
    if (!owners || edge_owner_next(e, -1) < 0) {
        render(&b, e, want);
        resp_add_verbatim(&c->out, sess_of(c)->proto, buf_head(&b), buf_unread(&b));
        buf_deinit(&b);
        return;
    }
    struct info_ask *a = calloc(1, sizeof(*a) + (size_t)e->owners->n * sizeof(a->reqs[0]));
    if (a == NULL || (a->timer = evtimer_new(e->base, ask_timeout, a)) == NULL) {
        free(a);
        resp_add_error(&c->out, "ERR out of memory");
        return;
    }
    struct op *op = op_new(c, &info_family, "info");
    if (op == NULL) { /* the error is written */
        event_free(a->timer);
        free(a);
        return;
    }
    a->op = op;
    I(op)->ask = a;
    memcpy(a->want, want, sizeof(want));
    for (int g = edge_owner_next(e, -1); g >= 0; g = edge_owner_next(e, g)) {
        struct info_req *r = &a->reqs[g];
        r->ask = a;
        r->o = &e->owners->ref[g];
        struct elink *l = r->o->link[WIRE_ROLE_READ];
        if (l == NULL || !elink_is_up(l) || elink_congested(l))
            continue; /* not reachable now: its last answer is shown */
        struct hkv_buf *out = elink_out(l, &r->id);
        if (wire_put_stats(out, r->id) == HKV_OK && elink_commit(l, r->id, ask_cb, r) == HKV_OK) {
            r->sent = 1;
            a->pending++;
        }
    }
    if (a->pending == 0) {
        ask_end(a, 1);
        return;
    }
    struct timeval tv = {0, INFO_ASK_MS * 1000};
    evtimer_add(a->timer, &tv);
}
