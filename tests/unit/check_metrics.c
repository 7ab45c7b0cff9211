/*
 * check_metrics.c - /metrics (server/edge/edge_metrics.h) rendered from a
 * scoreboard, owner references and colo segments built in the test, without
 * a daemon: the edge counters are summed over every edge slot per colo, the
 * latency histograms by kind and class put each board bucket under the
 * right seconds bound and add up across edges, class rows are found by name
 * across a reload that reorders the classes, owners are labelled by pool
 * and index (and left out when they stopped answering), each colo's cache
 * and limiter counters come from its own segment, a cluster host's
 * hotkvd_cluster_* families say what INFO # Cluster says (and a single host
 * has none), and the whole exposition passes Prometheus's `promtool check
 * metrics` (format and naming lint).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "server/colo/cache.h"
#include "server/colo/ratelimit.h"
#include "server/core/board.h"
#include "server/core/clock.h"
#include "server/core/cmap.h"
#include "server/core/router.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_metrics.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_rl.h"
#include "server/edge/edge_stats.h"
#include "server/edge/info_cluster.h"
#include "tests/harness.h"

static struct {
    struct board *board;
    struct cfg *cfg;
    struct worker_ctx ctx;
    struct edge_ctx ectx;
    struct edge e[2];             /* two edges of colo 0 (slots 0 and 1) */
    struct edge_cache cache[2];   /* their modules' heads the renderer reads */
    struct edge_rl rl[2];
    struct edge_owners owners;    /* edge 0's owners, when a case gives it some */
    struct router *router;        /* the classes of the latency rows (as the owners
                                   * module's router routes them) */
    struct edge_owners routing[2]; /* each edge's owners head: the router, no owner */
    struct hkv_buf out;
} T;

static void set(struct cfg *c, const char *name, const char *value)
{
    struct cfg_error err;
    ck_assert_msg(cfg_set(c, name, value, &err) == HKV_OK, "%s %s", name, value);
}

static void setup(void)
{
    memset(&T, 0, sizeof(T));
    T.cfg = cfg_create();
    ck_assert_ptr_nonnull(T.cfg);
    set(T.cfg, "class", "live pattern live:* pool hot fresh 1s keep 5m durability ledger "
                        "on-timeout degrade");
    T.board = board_create(4);
    ck_assert_ptr_nonnull(T.board);
    T.ctx = (struct worker_ctx){.role = BOARD_EDGE, .cfg = T.cfg, .board = T.board};
    T.router = router_create(T.cfg);
    ck_assert_ptr_nonnull(T.router);
    for (int i = 0; i < 2; i++) {
        struct board_slot *s = &T.board->slots[i];
        atomic_store(&s->role, BOARD_EDGE);
        atomic_store(&s->colo, 1);
        T.e[i].ctx = &T.ctx;
        T.e[i].ectx = &T.ectx;
        T.e[i].stats = s;
        T.e[i].cache = &T.cache[i];
        T.e[i].rl = &T.rl[i];
        edge_cmd_opts(T.cfg, &T.e[i].cmd_opts); /* edge_config(e): the config as data */
        T.routing[i].router = T.router;
        T.e[i].owners = &T.routing[i];
    }
    atomic_store(&T.board->slots[2].role, BOARD_OWNER);
    snprintf(T.ectx.colo_name, sizeof(T.ectx.colo_name), "%s", T.cfg->colo);
}

static void teardown(void)
{
    buf_deinit(&T.out);
    router_destroy(&T.router);
    board_destroy(&T.board);
    cfg_destroy(&T.cfg);
}

/* The exposition of edge 0, NUL-terminated. */
static const char *render(void)
{
    buf_reset(&T.out);
    ck_assert_int_eq(edge_metrics_render(&T.e[0], &T.out), HKV_OK);
    ck_assert_int_eq(buf_append(&T.out, "", 1), HKV_OK);
    T.out.len--;
    return buf_head(&T.out);
}

/* 1 if the exposition has this exact line. */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p += n)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return 1;
    return 0;
}

#define HAS(text, ...)                                                        \
    do {                                                                      \
        char line_[512];                                                      \
        snprintf(line_, sizeof(line_), __VA_ARGS__);                          \
        ck_assert_msg(has_line(text, line_), "no line '%s' in:\n%.2000s", line_, text); \
    } while (0)

START_TEST(edge_counters_are_summed_over_every_edge_slot)
{
    atomic_store(&T.e[0].stats->total_commands_processed, 5);
    atomic_store(&T.e[1].stats->total_commands_processed, 7);
    atomic_store(&T.e[1].stats->connected_clients, 3);
    /* an owner's slot is not an edge: never summed */
    atomic_store(&T.board->slots[2].total_commands_processed, 1000);
    const char *m = render();
    HAS(m, "# TYPE hotkvd_commands_processed_total counter");
    HAS(m, "hotkvd_commands_processed_total{colo=\"%s\"} 12", T.cfg->colo);
    HAS(m, "# TYPE hotkvd_connected_clients gauge");
    HAS(m, "hotkvd_connected_clients{colo=\"%s\"} 3", T.cfg->colo);
    HAS(m, "hotkvd_process_ready{role=\"owner\",slot=\"2\"} 0");
    ck_assert_ptr_null(strstr(m, "slot=\"3\""));   /* an empty slot is no process */
}
END_TEST

START_TEST(latency_lands_under_its_bound_by_kind_and_class)
{
    /* 1500 ns: above 2^10 ns, within 2^11 ns */
    stats_call_key(&T.e[0], CMD_GET, 1500, "$1\r\n", 4, "live:1", 6);
    stats_call_key(&T.e[1], CMD_GET, 1500, "$1\r\n", 4, "live:2", 6);
    /* 3 ms: within 2^22 ns (4.19 ms), above 2^21 */
    stats_call_key(&T.e[0], CMD_SET, 3000000, "+OK\r\n", 5, "other", 5);
    /* no key: class "" */
    stats_call(&T.e[1], CMD_PING, 100, "+PONG\r\n", 7);
    /* 200 s: above the last bound */
    stats_call_key(&T.e[0], CMD_GET, 200000000000LL, "$1\r\n", 4, "x", 1);
    const char *m = render();
    const char *h = "hotkvd_command_duration_seconds";
    HAS(m, "# TYPE %s histogram", h);
    HAS(m, "%s_bucket{kind=\"read\",class=\"live\",le=\"1.024e-06\"} 0", h);
    HAS(m, "%s_bucket{kind=\"read\",class=\"live\",le=\"2.048e-06\"} 2", h);
    HAS(m, "%s_bucket{kind=\"read\",class=\"live\",le=\"+Inf\"} 2", h);
    HAS(m, "%s_count{kind=\"read\",class=\"live\"} 2", h);
    HAS(m, "%s_sum{kind=\"read\",class=\"live\"} 3e-06", h);
    HAS(m, "%s_bucket{kind=\"write\",class=\"default\",le=\"0.002097152\"} 0", h);
    HAS(m, "%s_bucket{kind=\"write\",class=\"default\",le=\"0.004194304\"} 1", h);
    HAS(m, "%s_bucket{kind=\"admin\",class=\"\",le=\"1.024e-06\"} 1", h);
    HAS(m, "%s_bucket{kind=\"read\",class=\"default\",le=\"34.359738368\"} 0", h);
    HAS(m, "%s_bucket{kind=\"read\",class=\"default\",le=\"+Inf\"} 1", h);
    /* kinds never seen in a class have no series */
    ck_assert_ptr_null(strstr(m, "kind=\"write\",class=\"live\""));
    /* the per-command counters say the same */
    HAS(m, "hotkvd_command_calls_total{command=\"get\"} 3");
    HAS(m, "hotkvd_command_calls_total{command=\"set\"} 1");
    HAS(m, "hotkvd_command_calls_total{command=\"ping\"} 1");
}
END_TEST

START_TEST(class_rows_are_found_by_name_across_a_reload)
{
    stats_call_key(&T.e[0], CMD_GET, 5000, "$1\r\n", 4, "live:1", 6);
    /* the new config has another class first: "live" is no longer index 0 */
    struct cfg *next = cfg_create();
    ck_assert_ptr_nonnull(next);
    set(next, "class", "cold pattern cold:* pool cold fresh 1s keep 5m durability ledger "
                       "on-timeout degrade");
    set(next, "class", "live pattern live:* pool hot fresh 1s keep 5m durability ledger "
                       "on-timeout degrade");
    T.ctx.cfg = next; /* as the reload hook installs it: the router and the options */
    router_set_config(T.router, next);
    edge_cmd_opts(next, &T.e[0].cmd_opts);
    stats_call_key(&T.e[0], CMD_GET, 5000, "$1\r\n", 4, "live:2", 6);
    stats_call_key(&T.e[0], CMD_GET, 5000, "$1\r\n", 4, "cold:1", 6);
    const char *m = render();
    HAS(m, "hotkvd_command_duration_seconds_count{kind=\"read\",class=\"live\"} 2");
    HAS(m, "hotkvd_command_duration_seconds_count{kind=\"read\",class=\"cold\"} 1");
    T.ctx.cfg = T.cfg;
    router_set_config(T.router, T.cfg);
    edge_cmd_opts(T.cfg, &T.e[0].cmd_opts);
    cfg_destroy(&next);
    /* CONFIG RESETSTAT zeroes the histograms, the names stay */
    board_reset_counters(T.e[0].stats);
    m = render();
    ck_assert_ptr_null(strstr(m, "class=\"live\""));
    stats_call_key(&T.e[0], CMD_GET, 5000, "$1\r\n", 4, "live:3", 6);
    m = render();
    HAS(m, "hotkvd_command_duration_seconds_count{kind=\"read\",class=\"live\"} 1");
}
END_TEST

START_TEST(owners_are_labelled_by_pool_and_index)
{
    struct owner_ref o[2];
    memset(o, 0, sizeof(o));
    o[0].pool = CFG_POOL_HOT;
    o[0].index = 0;
    o[0].stats[CTR_OWNER_owner_reads] = 42;
    o[0].stats[CTR_OWNER_persist_last_commit_ms] = 250;
    o[0].stats_at_ms = clock_mono_ms();
    o[1].pool = CFG_POOL_COLD;
    o[1].index = 3;
    o[1].stats[CTR_OWNER_owner_reads] = 9;
    o[1].stats_at_ms = clock_mono_ms() - 60000; /* stopped answering a minute ago */
    T.owners = (struct edge_owners){.router = T.router, .ref = o, .n = 2};
    T.e[0].owners = &T.owners;
    const char *m = render();
    HAS(m, "hotkvd_owner_reads_total{pool=\"hot\",owner=\"0\"} 42");
    HAS(m, "hotkvd_persist_last_commit_seconds{pool=\"hot\",owner=\"0\"} 0.25");
    HAS(m, "hotkvd_owner_up{pool=\"hot\",owner=\"0\"} 1");
    HAS(m, "hotkvd_owner_up{pool=\"cold\",owner=\"3\"} 0");
    /* 60 s, and the few ms the render took after stats_at_ms was set */
    const char *age_key = "hotkvd_owner_stats_age_seconds{pool=\"cold\",owner=\"3\"} ";
    const char *age = strstr(m, age_key);
    ck_assert_msg(age != NULL, "no %s in:\n%.2000s", age_key, m);
    double secs = strtod(age + strlen(age_key), NULL);
    ck_assert_msg(secs >= 60.0 && secs < 70.0, "owner stats age %f, want about 60", secs);
    ck_assert_ptr_null(strstr(m, "hotkvd_owner_reads_total{pool=\"cold\""));
    T.e[0].owners = &T.routing[0];
}
END_TEST

START_TEST(each_colo_reports_its_own_segments)
{
    T.cfg->colos = 2; /* not settable at run time */
    set(T.cfg, "ratelimit", "read 1000/1s");
    struct cache_opts co = {.bytes = 1 << 20, .max_value = 1024, .hot_sample = 1};
    struct rl_opts ro = {.buckets = 64};
    struct cache *c[2];
    struct rl *r[2];
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(cache_create(&co, &c[k]), HKV_OK);
        ck_assert_int_eq(rl_create(&ro, &r[k]), HKV_OK);
        rl_configure(r[k], T.cfg);
    }
    cache_count(c[1], CACHE_CTR_cache_hits, 5);
    cache_count(c[0], CACHE_CTR_cache_misses, 2);
    struct rl_key key = {0};
    int64_t retry;
    ck_assert_int_eq(rl_check(r[1], &key, RL_CLS_READ, rl_now(), &retry), RL_ALLOW);
    T.ectx.colo_caches = c;
    T.ectx.colo_limiters = r;
    T.ectx.ncolos = 2;
    char n0[TOPO_COLO_NAME_MAX], n1[TOPO_COLO_NAME_MAX];
    topo_colo_name(T.cfg, 0, n0, sizeof(n0));
    topo_colo_name(T.cfg, 1, n1, sizeof(n1));
    const char *m = render();
    HAS(m, "# TYPE hotkvd_cache_hits_total counter");
    HAS(m, "hotkvd_cache_hits_total{colo=\"%s\"} 0", n0);
    HAS(m, "hotkvd_cache_hits_total{colo=\"%s\"} 5", n1);
    HAS(m, "hotkvd_cache_misses_total{colo=\"%s\"} 2", n0);
    HAS(m, "hotkvd_ratelimit_allowed_total{colo=\"%s\"} 1", n1);
    HAS(m, "hotkvd_ratelimit_allowed_total{colo=\"%s\"} 0", n0);
    HAS(m, "hotkvd_ratelimit_buckets_capacity{colo=\"%s\"} 64", n0);
    HAS(m, "# TYPE hotkvd_cache_capacity_bytes gauge");
    /* the edge counters have one row per colo too */
    HAS(m, "hotkvd_commands_processed_total{colo=\"%s\"} 0", n1);
    T.ectx.colo_caches = NULL;
    T.ectx.colo_limiters = NULL;
    for (int k = 0; k < 2; k++) {
        cache_destroy(&c[k]);
        rl_destroy(&r[k]);
    }
}
END_TEST

/* Runs `promtool check metrics < path`: its exit status, its output in out. */
static int promtool(const char *path, char *out, size_t cap)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", path);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(promtool_accepts_the_whole_exposition)
{
    struct owner_ref o = {.pool = CFG_POOL_HOT, .index = 0, .stats_at_ms = clock_mono_ms()};
    for (int i = 0; i < CTR_OWNER_COUNT; i++)
        o.stats[i] = i * 11;
    T.owners = (struct edge_owners){.router = T.router, .ref = &o, .n = 1};
    T.e[0].owners = &T.owners;
    struct cache_opts co = {.bytes = 1 << 20, .max_value = 1024, .hot_sample = 1};
    ck_assert_int_eq(cache_create(&co, &T.e[0].cache->cache), HKV_OK);
    for (unsigned id = 0; id < CMD_COUNT; id++)
        stats_call_key(&T.e[id & 1], id, 1000 + (int64_t)id * 997, "-ERR x\r\n", 8, "live:1", 6);
    stats_rejected(&T.e[0], CMD_GET, "-NOPERM no\r\n", 12);
    const char *m = render();
    char dir[256], path[300], out[8192];
    h_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/metrics.txt", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(m, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    int st = promtool(path, out, sizeof(out));
    ck_assert_msg(st == 0, "promtool check metrics exited %d:\n%s", st, out);
    HAS(m, "hotkvd_error_prefix_replies_total{prefix=\"NOPERM\"} 1");
    h_rmtree(dir);
    cache_destroy(&T.e[0].cache->cache);
    T.e[0].owners = &T.routing[0];
}
END_TEST

/* The README's "Metrics (Prometheus)" section, NUL-terminated, on the heap. */
static char *readme_metrics(void)
{
    FILE *f = fopen("README.md", "r");
    ck_assert_msg(f != NULL, "README.md (the tests run from the source tree)");
    char *text = calloc(1, 1 << 20);
    ck_assert_ptr_nonnull(text);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    text[n] = '\0';
    char *sec = strstr(text, "\n## Metrics (Prometheus)\n");
    ck_assert_ptr_nonnull(sec);
    char *end = strstr(sec + 1, "\n## ");
    if (end != NULL)
        *end = '\0';
    memmove(text, sec, strlen(sec) + 1);
    return text;
}

START_TEST(cluster_families_come_from_the_map_and_only_in_a_cluster)
{
    /* a single host: no cluster family at all */
    ck_assert_ptr_null(strstr(render(), "hotkvd_cluster_"));
    struct cmap *m = cmap_create();
    ck_assert_ptr_nonnull(m);
    struct cmap_table *t = calloc(1, sizeof(*t));
    ck_assert_ptr_nonnull(t);
    t->revision = 42;
    t->owners[1] = (struct cmap_owner){.number = 1, .pool = CFG_POOL_HOT, .live = 1,
                                       .id = "h1/hot/0", .host = "h1"};
    t->owners[2] = (struct cmap_owner){.number = 2, .pool = CFG_POOL_HOT, .live = 0,
                                       .index = 0, .id = "h2/hot/0", .host = "h2"};
    t->owners[3] = (struct cmap_owner){.number = 3, .pool = CFG_POOL_COLD, .live = 1,
                                       .id = "h1/cold/0", .host = "h1"};
    t->nleaves[CFG_POOL_HOT] = 2;
    t->leaves[CFG_POOL_HOT][0] = (struct cmap_leaf){.start = 0, .bits = 1, .owner = 1, .epoch = 7};
    t->leaves[CFG_POOL_HOT][1] =
        (struct cmap_leaf){.start = 0x80000000u, .bits = 1, .owner = 2, .epoch = 7};
    t->nleaves[CFG_POOL_COLD] = 1;
    t->leaves[CFG_POOL_COLD][0] = (struct cmap_leaf){.start = 0, .bits = 0, .owner = 3, .epoch = 7};
    char why[256] = "";
    ck_assert_msg(cmap_publish(m, t) == HKV_OK, "cmap_publish: %s",
                  (cmap_validate(t, why, sizeof(why)), why));
    struct cmap_health h = {.etcd_ok_ms = 1700000000500, .lease_id = 99, .lease_ttl_ms = 3000,
                            .lease_renewed_ms = 0, .watch_revision = 43, .compactions = 2,
                            .refused_maps = 1, .host_number = 1, .etcd_up = 1};
    cmap_health_set(m, &h);
    atomic_store(&T.e[0].stats->remote_links_up, 2);
    atomic_store(&T.e[1].stats->remote_links_up, 1);
    atomic_store(&T.board->slots[2].remote_links_up, 100); /* an owner's slot: not summed */
    T.ctx.cmap = m;
    const char *x = render();
    HAS(x, "# TYPE hotkvd_cluster_map_revision gauge");
    HAS(x, "hotkvd_cluster_map_revision 42");
    HAS(x, "hotkvd_cluster_host_number 1");
    HAS(x, "hotkvd_cluster_map_from_disk 0");
    HAS(x, "hotkvd_cluster_etcd_up 1");
    HAS(x, "hotkvd_cluster_etcd_last_ok_timestamp_seconds 1700000000.5");
    HAS(x, "hotkvd_cluster_lease_ttl_seconds 3");
    HAS(x, "hotkvd_cluster_watch_revision 43");
    HAS(x, "# TYPE hotkvd_cluster_watch_restarts_total counter");
    HAS(x, "hotkvd_cluster_watch_restarts_total 2");
    HAS(x, "hotkvd_cluster_maps_refused_total 1");
    HAS(x, "hotkvd_cluster_owners_known 3");
    HAS(x, "hotkvd_cluster_owners_live 2");
    HAS(x, "hotkvd_cluster_leaves{pool=\"hot\"} 2");
    HAS(x, "hotkvd_cluster_leaves{pool=\"cold\"} 1");
    HAS(x, "hotkvd_cluster_remote_links_up{colo=\"%s\"} 3", T.cfg->colo);
    /* never renewed: the family, no sample */
    HAS(x, "# TYPE hotkvd_cluster_lease_renewed_timestamp_seconds gauge");
    ck_assert_ptr_null(strstr(x, "\nhotkvd_cluster_lease_renewed_timestamp_seconds "));
    /* INFO # Cluster says the same: one source */
    struct hkv_buf info = HKV_BUF_INIT;
    info_cluster_lines(&info, &T.e[0]);
    ck_assert_int_eq(buf_append(&info, "", 1), HKV_OK);
    ck_assert_ptr_nonnull(strstr(buf_head(&info), "map_revision:42\r\n"));
    ck_assert_ptr_nonnull(strstr(buf_head(&info), "owners_live:2\r\nleaves_hot:2\r\nleaves_cold:1\r\n"));
    buf_deinit(&info);
    /* a new revision is taken at the next scrape */
    t->revision = 50;
    t->nleaves[CFG_POOL_COLD] = 2;
    t->leaves[CFG_POOL_COLD][0].bits = 1;
    t->leaves[CFG_POOL_COLD][1] =
        (struct cmap_leaf){.start = 0x80000000u, .bits = 1, .owner = 3, .epoch = 9};
    ck_assert_int_eq(cmap_publish(m, t), HKV_OK);
    x = render();
    HAS(x, "hotkvd_cluster_map_revision 50");
    HAS(x, "hotkvd_cluster_leaves{pool=\"cold\"} 2");
    /* promtool accepts it, and README's Metrics section lists every family */
    char dir[256], path[300], out[8192];
    h_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/metrics.txt", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(x, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    int st = promtool(path, out, sizeof(out));
    ck_assert_msg(st == 0, "promtool check metrics exited %d:\n%s", st, out);
    h_rmtree(dir);
    char *readme = readme_metrics();
    int families = 0;
    for (const char *p = x; (p = strstr(p, "# TYPE hotkvd_cluster_")) != NULL; p++) {
        char fam[128], quoted[140];
        ck_assert_int_eq(sscanf(p + 7, "%127s", fam), 1);
        snprintf(quoted, sizeof(quoted), "`%s`", fam);
        ck_assert_msg(strstr(readme, quoted) != NULL, "%s is not in README's Metrics section", fam);
        families++;
    }
    ck_assert_int_eq(families, 14);
    free(readme);
    T.ctx.cmap = NULL;
    cmap_destroy(&m);
    free(t);
}
END_TEST

Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"edge_counters_are_summed_over_every_edge_slot",
         edge_counters_are_summed_over_every_edge_slot},
        {"latency_lands_under_its_bound_by_kind_and_class",
         latency_lands_under_its_bound_by_kind_and_class},
        {"class_rows_are_found_by_name_across_a_reload", class_rows_are_found_by_name_across_a_reload},
        {"owners_are_labelled_by_pool_and_index", owners_are_labelled_by_pool_and_index},
        {"each_colo_reports_its_own_segments", each_colo_reports_its_own_segments},
        {"promtool_accepts_the_whole_exposition", promtool_accepts_the_whole_exposition},
        {"cluster_families_come_from_the_map_and_only_in_a_cluster",
         cluster_families_come_from_the_map_and_only_in_a_cluster},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
