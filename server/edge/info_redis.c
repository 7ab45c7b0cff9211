/*
 * info_redis.c - INFO's Redis-named sections (info_redis.h).
 */
#include "server/edge/info_redis.h"
#include "server/edge/info_leaves.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "server/colo/cache.h"
#include "server/core/clock.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_owners.h"
#include "server/edge/info_cluster.h"
#include "server/edge/edge_subcmd.h"

/* ---- the processes ---------------------------------------------------------- */

/* The pids of the master and of every live child (at most max). */
static int daemon_pids(struct edge *e, pid_t *pids, int max)
{
    struct board *b = e->ctx->board;
    int n = 0;
    pid_t m = atomic_load_explicit(&b->master_pid, memory_order_relaxed);
    if (m > 0 && n < max)
        pids[n++] = m;
    for (uint32_t i = 0; i < b->nslots && n < max; i++) {
        pid_t p = atomic_load_explicit(&b->slots[i].pid, memory_order_relaxed);
        if (p > 0 && atomic_load_explicit(&b->slots[i].role, memory_order_relaxed) != BOARD_EMPTY)
            pids[n++] = p;
    }
    return n;
}

/* kB fields of /proc/PID/status: VmRSS and RssShmem.  0, or -1. */
static int proc_mem(pid_t pid, uint64_t *rss, uint64_t *shmem)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    *rss = *shmem = 0;
    unsigned long long v;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "VmRSS: %llu kB", &v) == 1)
            *rss = v * 1024;
        else if (sscanf(line, "RssShmem: %llu kB", &v) == 1)
            *shmem = v * 1024;
    }
    fclose(f);
    return 0;
}

/* utime and stime of /proc/PID/stat, in seconds.  0, or -1. */
static int proc_cpu(pid_t pid, double *user, double *sys)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    unsigned long long ut, st;
    if (p == NULL ||
        sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    double hz = (double)sysconf(_SC_CLK_TCK);
    *user = (double)ut / hz;
    *sys = (double)st / hz;
    return 0;
}

/* Redis's bytesToHuman. */
static const char *human(uint64_t n, char *s, size_t len)
{
    static const char units[] = "KMGTPE";
    double d = (double)n;
    if (n < 1024) {
        snprintf(s, len, "%lluB", (unsigned long long)n);
        return s;
    }
    int u = 0;
    d /= 1024;
    while (d >= 1024 && units[u + 1] != '\0') {
        d /= 1024;
        u++;
    }
    snprintf(s, len, "%.2f%c", d, units[u]);
    return s;
}

static int64_t owners_sum(struct edge *e, int id)
{
    int64_t n = 0;
    for (int g = 0; g < e->owners->n; g++)
        n += e->owners->ref[g].stats[id];
    return n;
}

static int64_t owners_max(struct edge *e, int id)
{
    int64_t n = 0;
    for (int g = 0; g < e->owners->n; g++)
        if (e->owners->ref[g].stats[id] > n)
            n = e->owners->ref[g].stats[id];
    return n;
}

/* ---- Memory ------------------------------------------------------------------------ */

void info_publish(struct edge *e)
{
    uint64_t bytes = 0;
    if (e->cache->cache != NULL) {
        struct cache_stats st;
        cache_stats(e->cache->cache, &st);
        bytes = st.used_memory;
    }
    atomic_store_explicit(&e->stats->colo, (uint32_t)e->ectx->colo_index + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&e->stats->colo_bytes, bytes, memory_order_relaxed);
}

/* The shared segments, once: the scoreboard's slots (but their latency
 * histograms, mostly never touched) and each colo's cache bytes in use (as
 * the colo's edges last published them). */
static uint64_t shared_bytes(struct edge *e)
{
    struct board *b = e->ctx->board;
    uint64_t n = sizeof(*b) + (uint64_t)b->nslots * offsetof(struct board_slot, latency);
    uint32_t seen[64];
    int nseen = 0;
    info_publish(e);
    for (uint32_t i = 0; i < b->nslots; i++) {
        uint32_t colo = atomic_load_explicit(&b->slots[i].colo, memory_order_relaxed);
        if (colo == 0 || atomic_load_explicit(&b->slots[i].role, memory_order_relaxed) !=
                             BOARD_EDGE)
            continue;
        int dup = 0;
        for (int k = 0; k < nseen && !dup; k++)
            dup = seen[k] == colo;
        if (dup)
            continue;
        if (nseen < (int)(sizeof(seen) / sizeof(seen[0])))
            seen[nseen++] = colo;
        n += atomic_load_explicit(&b->slots[i].colo_bytes, memory_order_relaxed);
    }
    return n;
}

void info_memory(struct hkv_buf *b, struct edge *e)
{
    struct board *bd = e->ctx->board;
    uint64_t heap = 0;
    for (uint32_t i = 0; i < bd->nslots; i++)
        if (atomic_load_explicit(&bd->slots[i].pid, memory_order_relaxed) > 0)
            heap += atomic_load_explicit(&bd->slots[i].heap_bytes, memory_order_relaxed);
    uint64_t shared = shared_bytes(e);
    uint64_t used = heap + shared, rss = shared;
    pid_t pids[256];
    int n = daemon_pids(e, pids, 256);
    for (int i = 0; i < n; i++) {
        uint64_t r, sh;
        if (proc_mem(pids[i], &r, &sh) == 0)
            rss += r > sh ? r - sh : 0;
    }
    uint64_t peak = atomic_load_explicit(&bd->used_memory_peak, memory_order_relaxed);
    while (used > peak && !atomic_compare_exchange_weak_explicit(
                              &bd->used_memory_peak, &peak, used, memory_order_relaxed,
                              memory_order_relaxed))
        ;
    if (used > peak)
        peak = used;
    uint64_t dataset = (uint64_t)owners_sum(e, CTR_OWNER_owner_memory_bytes);
    uint64_t maxmem = (uint64_t)edge_config(e)->owner_maxmemory * (uint64_t)edge_owners_count(e);
    struct sysinfo si;
    uint64_t total = sysinfo(&si) == 0 ? (uint64_t)si.totalram * si.mem_unit : 0;
    char h1[32], h2[32], h3[32], h4[32], h5[32];
    buf_printf(b,
               "# Memory\r\n"
               "used_memory:%llu\r\n"
               "used_memory_human:%s\r\n"
               "used_memory_rss:%llu\r\n"
               "used_memory_rss_human:%s\r\n"
               "used_memory_peak:%llu\r\n"
               "used_memory_peak_human:%s\r\n"
               "used_memory_peak_perc:%.2f%%\r\n"
               "used_memory_shared:%llu\r\n"
               "used_memory_dataset:%llu\r\n"
               "used_memory_dataset_perc:%.2f%%\r\n"
               "total_system_memory:%llu\r\n"
               "total_system_memory_human:%s\r\n"
               "maxmemory:%llu\r\n"
               "maxmemory_human:%s\r\n"
               "maxmemory_policy:noeviction\r\n"
               "mem_fragmentation_ratio:%.2f\r\n"
               "mem_fragmentation_bytes:%lld\r\n"
               "mem_allocator:libc\r\n"
               "processes:%d\r\n"
               "\r\n",
               (unsigned long long)used, human(used, h1, sizeof(h1)), (unsigned long long)rss,
               human(rss, h2, sizeof(h2)), (unsigned long long)peak, human(peak, h3, sizeof(h3)),
               peak ? (double)used * 100 / (double)peak : 0.0, (unsigned long long)shared,
               (unsigned long long)dataset, used ? (double)dataset * 100 / (double)used : 0.0,
               (unsigned long long)total, human(total, h4, sizeof(h4)),
               (unsigned long long)maxmem, human(maxmem, h5, sizeof(h5)),
               used ? (double)rss / (double)used : 0.0, (long long)rss - (long long)used, n);
}

/* ---- Persistence, Replication ----------------------------------------------------- */

void info_persistence(struct hkv_buf *b, struct edge *e)
{
    int64_t dirty = owners_sum(e, CTR_OWNER_persist_dirty_keys);
    int64_t errors = owners_sum(e, CTR_OWNER_persist_errors);
    /* every write older than the oldest batch not yet committed is on disk */
    int64_t saved = (clock_unix_ms() - owners_max(e, CTR_OWNER_persist_backlog_age_ms)) / 1000;
    const char *status = errors > 0 ? "err" : "ok";
    buf_printf(b,
               "# Persistence\r\n"
               "loading:0\r\n"
               "async_loading:0\r\n"
               "current_cow_peak:0\r\n"
               "current_cow_size:0\r\n"
               "current_cow_size_age:0\r\n"
               "current_fork_perc:0.00\r\n"
               "current_save_keys_processed:0\r\n"
               "current_save_keys_total:0\r\n"
               "rdb_changes_since_last_save:%lld\r\n"
               "rdb_bgsave_in_progress:0\r\n"
               "rdb_last_save_time:%lld\r\n"
               "rdb_last_bgsave_status:%s\r\n"
               "rdb_last_bgsave_time_sec:-1\r\n"
               "rdb_current_bgsave_time_sec:-1\r\n"
               "rdb_saves:%lld\r\n"
               "rdb_last_cow_size:0\r\n"
               "rdb_last_load_keys_expired:0\r\n"
               "rdb_last_load_keys_loaded:0\r\n"
               "aof_enabled:0\r\n"
               "aof_rewrite_in_progress:0\r\n"
               "aof_rewrite_scheduled:0\r\n"
               "aof_last_rewrite_time_sec:-1\r\n"
               "aof_current_rewrite_time_sec:-1\r\n"
               "aof_last_bgrewrite_status:ok\r\n"
               "aof_rewrites:0\r\n"
               "aof_rewrites_consecutive_failures:0\r\n"
               "aof_last_write_status:%s\r\n"
               "aof_last_cow_size:0\r\n"
               "module_fork_in_progress:0\r\n"
               "module_fork_last_cow_size:0\r\n"
               "\r\n",
               (long long)dirty, (long long)saved, status,
               (long long)owners_sum(e, CTR_OWNER_persist_transactions), status);
}

void info_replication(struct hkv_buf *b, struct edge *e)
{
    struct board *bd = e->ctx->board;
    /* one id per daemon run, the same from every edge */
    unsigned long long start = (unsigned long long)atomic_load_explicit(&bd->start_unix_ms,
                                                                        memory_order_relaxed);
    unsigned pid = (unsigned)atomic_load_explicit(&bd->master_pid, memory_order_relaxed);
    buf_printf(b,
               "# Replication\r\n"
               "role:master\r\n"
               "connected_slaves:0\r\n"
               "master_failover_state:no-failover\r\n"
               "master_replid:%016llx%08x%016llx\r\n"
               "master_replid2:0000000000000000000000000000000000000000\r\n"
               "master_repl_offset:0\r\n"
               "second_repl_offset:-1\r\n"
               "repl_backlog_active:0\r\n"
               "repl_backlog_size:0\r\n"
               "repl_backlog_first_byte_offset:0\r\n"
               "repl_backlog_histlen:0\r\n",
               start, pid, (start * 0x9e3779b97f4a7c15ULL) ^ pid);
    info_replicas(b, e); /* hotkvd's followers per leaf, below Redis's fields */
    buf_printf(b, "\r\n");
}

/* ---- CPU, Modules, Cluster ------------------------------------------------------ */

void info_cpu(struct hkv_buf *b, struct edge *e)
{
    pid_t pids[256];
    int n = daemon_pids(e, pids, 256);
    double user = 0, sys = 0;
    for (int i = 0; i < n; i++) {
        double u, s;
        if (proc_cpu(pids[i], &u, &s) == 0) {
            user += u;
            sys += s;
        }
    }
    struct rusage me;
    memset(&me, 0, sizeof(me));
    getrusage(RUSAGE_THREAD, &me);
    buf_printf(b,
               "# CPU\r\n"
               "used_cpu_sys:%.6f\r\n"
               "used_cpu_user:%.6f\r\n"
               "used_cpu_sys_children:0.000000\r\n"
               "used_cpu_user_children:0.000000\r\n"
               "used_cpu_sys_main_thread:%.6f\r\n"
               "used_cpu_user_main_thread:%.6f\r\n"
               "\r\n",
               sys, user, (double)me.ru_stime.tv_sec + (double)me.ru_stime.tv_usec / 1e6,
               (double)me.ru_utime.tv_sec + (double)me.ru_utime.tv_usec / 1e6);
}

void info_modules(struct hkv_buf *b, struct edge *e)
{
    buf_printf(b, "# Modules\r\n\r\n");
}

void info_cluster(struct hkv_buf *b, struct edge *e)
{
    buf_printf(b, "# Cluster\r\ncluster_enabled:0\r\n");
    info_cluster_lines(b, e); /* a hotkvd cluster host's own (info_cluster.h) */
    buf_printf(b, "\r\n");
}

/* ---- Commandstats, Errorstats -------------------------------------------------------- */

static uint64_t sum_cmd(struct board *bd, unsigned id, size_t field)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < bd->nslots; i++)
        if (atomic_load_explicit(&bd->slots[i].role, memory_order_relaxed) == BOARD_EDGE)
            n += board_load((_Atomic uint64_t *)((char *)&bd->slots[i].cmdstats[id] + field));
    return n;
}

void info_commandstats(struct hkv_buf *b, struct edge *e)
{
    struct board *bd = e->ctx->board;
    buf_printf(b, "# Commandstats\r\n");
    for (unsigned id = 0; id < EDGE_STAT_IDS; id++) {
        const char *name = subcmd_stat_name(id);
        if (name == NULL)
            continue;
        uint64_t calls = sum_cmd(bd, id, offsetof(struct board_cmdstat, calls));
        uint64_t usec = sum_cmd(bd, id, offsetof(struct board_cmdstat, nsec)) / 1000;
        uint64_t rejected = sum_cmd(bd, id, offsetof(struct board_cmdstat, rejected));
        uint64_t failed = sum_cmd(bd, id, offsetof(struct board_cmdstat, failed));
        if (calls == 0 && rejected == 0 && failed == 0)
            continue;
        buf_printf(b, "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,"
                      "failed_calls=%llu\r\n",
                   name, (unsigned long long)calls, (unsigned long long)usec,
                   calls ? (double)sum_cmd(bd, id, offsetof(struct board_cmdstat, nsec)) / 1000 /
                               (double)calls : 0.0, (unsigned long long)rejected,
                   (unsigned long long)failed);
    }
    buf_printf(b, "\r\n");
}

/* The duration (us) at percentile p of command id over every edge: the
 * upper end of the bucket the p-th sample falls in. */
static double percentile(struct board *bd, unsigned id, uint64_t total, double p)
{
    uint64_t rank = (uint64_t)(p / 100 * (double)total + 0.999999), seen = 0;
    if (rank == 0)
        rank = 1;
    for (unsigned k = 0; k < BOARD_LAT_BUCKETS; k++) {
        for (uint32_t i = 0; i < bd->nslots; i++)
            if (atomic_load_explicit(&bd->slots[i].role, memory_order_relaxed) == BOARD_EDGE)
                seen += board_load(&bd->slots[i].latency[id].n[k]);
        if (seen >= rank)
            return (double)board_lat_upper(k) / 1000;
    }
    return (double)board_lat_upper(BOARD_LAT_BUCKETS - 1) / 1000;
}

void info_latencystats(struct hkv_buf *b, struct edge *e)
{
    struct board *bd = e->ctx->board;
    buf_printf(b, "# Latencystats\r\n");
    for (unsigned id = 0; id < EDGE_STAT_IDS; id++) {
        const char *name = subcmd_stat_name(id);
        uint64_t calls = name ? sum_cmd(bd, id, offsetof(struct board_cmdstat, calls)) : 0;
        if (calls == 0)
            continue;
        buf_printf(b, "latency_percentiles_usec_%s:p50=%.3f,p99=%.3f,p99.9=%.3f\r\n", name,
                   percentile(bd, id, calls, 50), percentile(bd, id, calls, 99),
                   percentile(bd, id, calls, 99.9));
    }
    buf_printf(b, "\r\n");
}

struct errsum {
    char prefix[BOARD_ERRPREFIX];
    uint64_t count;
};

static int by_prefix(const void *a, const void *b)
{
    return strcmp(((const struct errsum *)a)->prefix, ((const struct errsum *)b)->prefix);
}

void info_errorstats(struct hkv_buf *b, struct edge *e)
{
    struct board *bd = e->ctx->board;
    struct errsum sum[BOARD_ERRSTATS * 4];
    size_t n = 0;
    for (uint32_t i = 0; i < bd->nslots; i++) {
        struct board_slot *s = &bd->slots[i];
        if (atomic_load_explicit(&s->role, memory_order_relaxed) != BOARD_EDGE)
            continue;
        uint32_t have = atomic_load_explicit(&s->errstats_n, memory_order_acquire);
        for (uint32_t k = 0; k < have && k < BOARD_ERRSTATS; k++) {
            char p[BOARD_ERRPREFIX];
            memcpy(p, s->errstats[k].prefix, sizeof(p));
            p[sizeof(p) - 1] = '\0';
            uint64_t c = board_load(&s->errstats[k].count);
            size_t j = 0;
            while (j < n && strcmp(sum[j].prefix, p) != 0)
                j++;
            if (j == n) {
                if (n == sizeof(sum) / sizeof(sum[0]))
                    continue;
                memcpy(sum[n].prefix, p, sizeof(p));
                sum[n++].count = 0;
            }
            sum[j].count += c;
        }
    }
    qsort(sum, n, sizeof(sum[0]), by_prefix);
    buf_printf(b, "# Errorstats\r\n");
    for (size_t j = 0; j < n; j++)
        if (sum[j].count > 0)
            buf_printf(b, "errorstat_%s:count=%llu\r\n", sum[j].prefix,
                       (unsigned long long)sum[j].count);
    buf_printf(b, "\r\n");
}
