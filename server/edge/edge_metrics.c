/*
 * edge_metrics.c - the /metrics exposition; see edge_metrics.h.  This file
 * renders what the scoreboard holds (the host, its processes, the edge
 * counters, the commands and their latency); edge_metrics_colo.c the
 * owners' STATS and the colo segments.
 *
 * Everything is summed over the board's slots at each scrape, never kept:
 * a scrape is rare (seconds apart) and the board is already the host's
 * single copy.  The edge counters are summed per colo (a bounded label;
 * summing over `colo` gives what INFO shows), the command counters per
 * command name, the latency per kind and class.
 *
 * Latency.  The board keeps log-linear buckets of whole nanoseconds
 * (board.h, 8 per power of two); a Prometheus histogram wants a few fixed
 * bounds, the same on every host so that histograms add up across edges
 * and hosts.  The bounds are the powers of two from 2^10 ns (about 1 us) to
 * 2^35 ns (about 34 s), in seconds: each is the top of an octave of the
 * board, so every board bucket falls under exactly one bound and nothing
 * is interpolated (a bound b counts the durations of at most b - 1 ns).
 */
#include "server/edge/edge_metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/counters_prom.h"
#include "server/core/topo.h"
#include "server/core/version.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_metrics_colo.h"
#include "server/edge/edge_stats.h"
#include "server/edge/edge_subcmd.h"

#define MET_COLOS_MAX 16           /* the config's bound on colos */
#define LAT_LOW 10                 /* the first bound: 2^10 ns */
#define LAT_NB 26                  /* bounds 2^10 .. 2^35 ns */
#define CLASS_ROWS (2 * BOARD_CLASSLAT) /* class names summed over the edges */

static const char *const kind_names[BOARD_KINDS] = {"read", "write", "admin"};

static int is_edge(const struct board_slot *s)
{
    return atomic_load_explicit(&s->role, memory_order_relaxed) == BOARD_EDGE;
}

static double ms_to_s(int64_t ms)
{
    return (double)ms / 1000.0;
}

/* ---- the host ------------------------------------------------------------ */

static hkv_status render_host(struct edge *e, struct hkv_buf *out)
{
    struct board *bd = e->ctx->board;
    struct prom_label v = {"version", HOTKVD_VERSION};
    hkv_status s = prom_family(out, "hotkvd_build_info", PROM_GAUGE,
                               "Always 1; the version of the daemon in a label");
    if (s == HKV_OK)
        s = prom_sample(out, "hotkvd_build_info", &v, 1, 1);
    if (s == HKV_OK)
        s = prom_family(out, "hotkvd_start_time_seconds", PROM_GAUGE,
                        "When the daemon started, seconds since the Unix epoch");
    if (s == HKV_OK)
        s = prom_sample(out, "hotkvd_start_time_seconds", NULL, 0,
                        ms_to_s(atomic_load_explicit(&bd->start_unix_ms, memory_order_relaxed)));
    if (s == HKV_OK)
        s = prom_family(out, "hotkvd_config_generation", PROM_GAUGE,
                        "The configuration generation in effect (each reload adds one)");
    if (s == HKV_OK)
        s = prom_sample_u64(out, "hotkvd_config_generation", NULL, 0,
                            atomic_load_explicit(&bd->config_generation, memory_order_relaxed));
    if (s == HKV_OK)
        s = prom_family(out, "hotkvd_config_reload_failures_total", PROM_COUNTER,
                        "Configuration reloads refused");
    if (s == HKV_OK)
        s = prom_sample_u64(out, "hotkvd_config_reload_failures_total", NULL, 0,
                            atomic_load_explicit(&bd->config_reload_failures,
                                                 memory_order_relaxed));
    return s;
}

/* The master's children, one sample each per board slot in use. */
static hkv_status render_processes(struct edge *e, struct hkv_buf *out)
{
    static const struct {
        const char *name, *help;
        enum prom_type type;
    } fam[] = {
        {"hotkvd_process_ready", "1 while the process serves (edge or owner, by board slot)",
         PROM_GAUGE},
        {"hotkvd_process_restarts_total", "Times the master replaced the process in this slot",
         PROM_COUNTER},
        {"hotkvd_process_heap_bytes", "Bytes the process has allocated (at its last heartbeat)",
         PROM_GAUGE},
    };
    struct board *bd = e->ctx->board;
    for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
        hkv_status s = prom_family(out, fam[f].name, fam[f].type, fam[f].help);
        for (uint32_t i = 0; s == HKV_OK && i < bd->nslots; i++) {
            struct board_slot *sl = &bd->slots[i];
            uint32_t role = atomic_load_explicit(&sl->role, memory_order_relaxed);
            if (role != BOARD_EDGE && role != BOARD_OWNER)
                continue;
            char slot[16];
            snprintf(slot, sizeof(slot), "%u", i);
            struct prom_label l[] = {{"role", role == BOARD_EDGE ? "edge" : "owner"},
                                     {"slot", slot}};
            uint64_t v = f == 0   ? atomic_load_explicit(&sl->ready, memory_order_relaxed)
                         : f == 1 ? atomic_load_explicit(&sl->restarts, memory_order_relaxed)
                                  : board_load(&sl->heap_bytes);
            s = prom_sample_u64(out, fam[f].name, l, 2, v);
        }
        if (s != HKV_OK)
            return s;
    }
    return HKV_OK;
}

/* The CTR_EDGE counters, summed per colo over every edge slot. */
static hkv_status render_edge_counters(struct edge *e, struct hkv_buf *out)
{
    struct board *bd = e->ctx->board;
    int ncolo = edge_config(e)->colos > 0 ? edge_config(e)->colos : 1;
    if (ncolo > MET_COLOS_MAX)
        ncolo = MET_COLOS_MAX;
    int64_t vals[MET_COLOS_MAX][CTR_EDGE_COUNT];
    memset(vals, 0, sizeof(vals));
    for (uint32_t i = 0; i < bd->nslots; i++) {
        struct board_slot *s = &bd->slots[i];
        if (!is_edge(s))
            continue;
        uint32_t c = atomic_load_explicit(&s->colo, memory_order_relaxed);
        int k = c == 0 ? 0 : (int)c - 1;
        if (k >= ncolo)
            k = ncolo - 1;
        int j = 0;
#define X(name, kind, help) vals[k][j++] += (int64_t)board_load(&s->name);
        CTR_EDGE(X)
#undef X
    }
    char names[MET_COLOS_MAX][TOPO_COLO_NAME_MAX];
    struct prom_label labels[MET_COLOS_MAX];
    struct ctr_prom_row rows[MET_COLOS_MAX];
    for (int k = 0; k < ncolo; k++) {
        topo_colo_name(edge_config(e), k, names[k], sizeof(names[k]));
        labels[k] = (struct prom_label){"colo", names[k]};
        rows[k] = (struct ctr_prom_row){&labels[k], 1, vals[k]};
    }
    return ctr_prom_render(out, ctr_edge_defs, CTR_EDGE_COUNT, rows, (size_t)ncolo);
}

/* ---- commands ------------------------------------------------------------ */

/* INFO commandstats as counters per command name (the command table's, a
 * bounded set), for the commands counted at least once. */
static hkv_status render_commands(struct edge *e, struct hkv_buf *out)
{
    static const struct {
        const char *name, *help;
    } fam[] = {
        {"hotkvd_command_calls_total", "Commands run, by command"},
        {"hotkvd_command_failed_total", "Commands that ran and answered an error, by command"},
        {"hotkvd_command_rejected_total",
         "Commands refused before they ran (arity, NOAUTH, NOPERM, RATELIMITED), by command"},
        {"hotkvd_command_seconds_total", "Time spent in commands, by command"},
    };
    struct board *bd = e->ctx->board;
    uint64_t (*sum)[4] = calloc(EDGE_STAT_IDS, sizeof(*sum));
    if (sum == NULL)
        return HKV_ENOMEM;
    for (uint32_t i = 0; i < bd->nslots; i++) {
        struct board_slot *s = &bd->slots[i];
        if (!is_edge(s))
            continue;
        for (unsigned id = 0; id < EDGE_STAT_IDS; id++) {
            struct board_cmdstat *c = &s->cmdstats[id];
            sum[id][0] += board_load(&c->calls);
            sum[id][1] += board_load(&c->failed);
            sum[id][2] += board_load(&c->rejected);
            sum[id][3] += board_load(&c->nsec);
        }
    }
    hkv_status st = HKV_OK;
    for (size_t f = 0; st == HKV_OK && f < 4; f++) {
        st = prom_family(out, fam[f].name, PROM_COUNTER, fam[f].help);
        for (unsigned id = 0; st == HKV_OK && id < EDGE_STAT_IDS; id++) {
            const char *name = subcmd_stat_name(id);
            if (name == NULL || (sum[id][0] == 0 && sum[id][2] == 0))
                continue;
            struct prom_label l = {"command", name};
            st = f < 3 ? prom_sample_u64(out, fam[f].name, &l, 1, sum[id][f])
                       : prom_sample(out, fam[f].name, &l, 1, (double)sum[id][3] / 1e9);
        }
    }
    free(sum);
    return st;
}

/* Error replies by prefix (INFO errorstats): at most BOARD_ERRSTATS per
 * edge, the same few in every edge; bounded here again all the same. */
static hkv_status render_errors(struct edge *e, struct hkv_buf *out)
{
    enum { NP = 2 * BOARD_ERRSTATS };
    struct board *bd = e->ctx->board;
    char pfx[NP][BOARD_ERRPREFIX];
    uint64_t cnt[NP];
    int np = 0;
    for (uint32_t i = 0; i < bd->nslots; i++) {
        struct board_slot *s = &bd->slots[i];
        if (!is_edge(s))
            continue;
        uint32_t n = atomic_load_explicit(&s->errstats_n, memory_order_acquire);
        for (uint32_t j = 0; j < n && j < BOARD_ERRSTATS; j++) {
            char p[BOARD_ERRPREFIX];
            memcpy(p, s->errstats[j].prefix, sizeof(p));
            p[sizeof(p) - 1] = '\0';
            int k = 0;
            while (k < np && strcmp(pfx[k], p) != 0)
                k++;
            if (k == np) {
                if (np == NP)
                    continue;
                memcpy(pfx[np], p, sizeof(p));
                cnt[np++] = 0;
            }
            cnt[k] += board_load(&s->errstats[j].count);
        }
    }
    const char *name = "hotkvd_error_prefix_replies_total";
    hkv_status st = prom_family(out, name, PROM_COUNTER,
                                "Error replies by their first word (INFO errorstats)");
    for (int k = 0; st == HKV_OK && k < np; k++) {
        struct prom_label l = {"prefix", pfx[k]};
        st = prom_sample_u64(out, name, &l, 1, cnt[k]);
    }
    return st;
}

/* ---- latency ------------------------------------------------------------- */

/* One class's histograms summed over the edges. */
struct lat_row {
    char name[BOARD_CLASS_NAME];
    uint64_t n[BOARD_KINDS][LAT_NB + 1];   /* per bound, the last above them all */
    uint64_t nsec[BOARD_KINDS];
};

static struct lat_row *lat_row_of(struct lat_row *rows, int *nrows, const char *name)
{
    for (int i = 0; i < *nrows; i++)
        if (strcmp(rows[i].name, name) == 0)
            return &rows[i];
    if (*nrows == CLASS_ROWS)
        return NULL;
    struct lat_row *r = &rows[(*nrows)++];
    snprintf(r->name, sizeof(r->name), "%s", name);
    return r;
}

static hkv_status render_latency(struct edge *e, struct hkv_buf *out)
{
    /* which bound each board bucket falls under */
    uint8_t under[BOARD_LAT_BUCKETS];
    double bounds[LAT_NB];
    for (int i = 0; i < LAT_NB; i++)
        bounds[i] = (double)(1ull << (LAT_LOW + i)) / 1e9;
    for (unsigned b = 0; b < BOARD_LAT_BUCKETS; b++) {
        uint64_t top = board_lat_upper(b) + 1; /* the bucket holds durations < top */
        int i = 0;
        while (i < LAT_NB && top > (1ull << (LAT_LOW + i)))
            i++;
        under[b] = (uint8_t)(b == BOARD_LAT_BUCKETS - 1 ? LAT_NB : i); /* the last: open */
    }
    struct lat_row *rows = calloc(CLASS_ROWS, sizeof(*rows));
    if (rows == NULL)
        return HKV_ENOMEM;
    int nrows = 0;
    struct board *bd = e->ctx->board;
    for (uint32_t i = 0; i < bd->nslots; i++) {
        struct board_slot *s = &bd->slots[i];
        if (!is_edge(s))
            continue;
        uint32_t n = atomic_load_explicit(&s->classlat_n, memory_order_acquire);
        for (uint32_t j = 0; j < BOARD_CLASSLAT && (j == 0 || j < n); j++) {
            struct board_classlat *c = &s->classlat[j];
            char name[BOARD_CLASS_NAME];
            memcpy(name, j == 0 ? "" : c->name, j == 0 ? 1 : sizeof(name));
            name[sizeof(name) - 1] = '\0';
            struct lat_row *r = lat_row_of(rows, &nrows, name);
            for (int k = 0; r != NULL && k < BOARD_KINDS; k++) {
                uint64_t ns = board_load(&c->nsec[k]);
                if (ns == 0 && board_load(&c->lat[k].n[0]) == 0)
                    continue; /* never counted: leave its pages untouched */
                r->nsec[k] += ns;
                for (unsigned b = 0; b < BOARD_LAT_BUCKETS; b++)
                    r->n[k][under[b]] += board_load(&c->lat[k].n[b]);
            }
        }
    }
    const char *name = "hotkvd_command_duration_seconds";
    hkv_status st = prom_family(out, name, PROM_HISTOGRAM,
                                "Command durations, dispatch to reply, by kind (read, write, "
                                "admin: the others) and class of the first key (empty: no key)");
    for (int i = 0; st == HKV_OK && i < nrows; i++)
        for (int k = 0; st == HKV_OK && k < BOARD_KINDS; k++) {
            uint64_t total = 0;
            for (int b = 0; b <= LAT_NB; b++)
                total += rows[i].n[k][b];
            if (total == 0)
                continue;
            struct prom_label l[] = {{"kind", kind_names[k]}, {"class", rows[i].name}};
            st = prom_histogram(out, name, l, 2, bounds, rows[i].n[k], LAT_NB,
                                (double)rows[i].nsec[k] / 1e9);
        }
    free(rows);
    return st;
}

int edge_metrics_render(struct edge *e, struct hkv_buf *out)
{
    hkv_status s = render_host(e, out);
    if (s == HKV_OK)
        s = render_processes(e, out);
    if (s == HKV_OK)
        s = render_edge_counters(e, out);
    if (s == HKV_OK)
        s = render_commands(e, out);
    if (s == HKV_OK)
        s = render_errors(e, out);
    if (s == HKV_OK)
        s = render_latency(e, out);
    if (s == HKV_OK)
        s = metrics_owners(e, out);
    if (s == HKV_OK)
        s = metrics_colos(e, out);
    if (s == HKV_OK)
        s = metrics_cluster(e, out);
    return s;
}
