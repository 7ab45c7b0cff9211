/*
 * check_prometheus.c - GET /metrics of a running daemon (README, Metrics):
 * - its body passes Prometheus's own `promtool check metrics` (format and
 *   naming lint), is served as text format 0.0.4, covers the whole host from
 *   any edge (both colos, every owner by pool and index, the latency
 *   histograms by kind and class counting exactly the commands sent), never
 *   shows a key or a client address, and names no family README's Metrics
 *   section does not list;
 * - Debian's Prometheus server, started on a free port with a temp config
 *   that scrapes the daemon every second, answers a PromQL query over its
 *   HTTP API with the count of the commands the test ran.
 * curl is the HTTP client.  Every wait is bounded; the daemon and Prometheus
 * are stopped by pid (and die with the test process if it dies).
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"

#define CLASS_LIVE                                                                              \
    "class live pattern \"live:*\" pool hot fresh 1s keep 60s durability ledger on-timeout degrade\n"
#define BODY_MAX (1 << 20)
#define NCMD 40                   /* SETs, then as many GETs */

static struct {
    struct daemon d;
    int http;
    char *body;                   /* the last scrape, BODY_MAX bytes */
} T;

static void start(const char *extra)
{
    char conf[1024];
    T.http = h_free_port();
    snprintf(conf, sizeof(conf),
             "colo zz\ncolos 2\nedge-workers 1\nhot-owners 1\ncold-owners 1\nhttp-port %d\n" CLASS_LIVE
             "%s",
             T.http, extra != NULL ? extra : "");
    ck_assert_int_eq(h_start(&T.d, conf), 0);
    T.body = malloc(BODY_MAX);
    ck_assert_ptr_nonnull(T.body);
}

static void stop(void)
{
    h_stop(&T.d);
    free(T.body);
}

/* curl's output for url (headers too when `headers`) into T.body; its exit
 * status. */
static int curl(const char *url, int headers)
{
    char *argv[] = {"/usr/bin/curl", "-sS", "--max-time", "5", headers ? "-i" : "-s",
                    (char *)url, NULL};
    return h_run(argv, NULL, T.body, BODY_MAX, 8000);
}

static void scrape(void)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", T.http);
    int st = curl(url, 0);
    ck_assert_msg(st == 0, "curl %s: exit %d: %s", url, st, T.body);
}

/* The sum of the samples of `name` in T.body whose line also contains
 * `with` (NULL: all); -1 if there is none. */
static double sample_sum(const char *name, const char *with)
{
    size_t n = strlen(name);
    double sum = 0;
    int found = 0;
    for (const char *p = T.body, *end; *p != '\0'; p = end != NULL ? end + 1 : p + strlen(p)) {
        end = strchr(p, '\n');
        if (strncmp(p, name, n) != 0 || (p[n] != '{' && p[n] != ' '))
            continue;
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1), p);
        if (with != NULL && strstr(line, with) == NULL)
            continue;
        const char *v = strrchr(line, ' ');
        ck_assert_ptr_nonnull(v);
        sum += strtod(v + 1, NULL);
        found = 1;
    }
    return found ? sum : -1;
}

/* Runs NCMD SETs of live:<i> then NCMD GETs of them, on one connection. */
static void traffic(void)
{
    int fd = h_connect(T.d.port);
    ck_assert_int_ge(fd, 0);
    char k[32];
    for (int i = 0; i < NCMD; i++) {
        snprintf(k, sizeof(k), "live:%d", i);
        struct h_reply *r = h_cmdv(fd, "SET", k, "v", NULL);
        ck_assert(r != NULL && r->v->type == RESP_SIMPLE);
        h_free(r);
    }
    for (int i = 0; i < NCMD; i++) {
        snprintf(k, sizeof(k), "live:%d", i);
        struct h_reply *r = h_cmdv(fd, "GET", k, NULL);
        ck_assert(r != NULL && r->v->type == RESP_BULK);
        h_free(r);
    }
    close(fd);
}

START_TEST(promtool_passes_on_a_running_daemons_metrics)
{
    start(NULL);
    /* a key whose name must never show */
    int fd = h_connect(T.d.port);
    ck_assert_int_ge(fd, 0);
    struct h_reply *r = h_cmdv(fd, "SET", "s3cret-key-name", "v", NULL);
    ck_assert(r != NULL && r->v->type == RESP_SIMPLE);
    h_free(r);
    close(fd);
    traffic();
    /* the owners' numbers arrive with the edges' 1 s STATS poll */
    int64_t end = h_now_ms() + 15000;
    do {
        scrape();
        if (sample_sum("hotkvd_owner_up", NULL) == 2 &&
            sample_sum("hotkvd_owner_writes_total", NULL) >= NCMD + 1)
            break;
        h_sleep_ms(200);
    } while (h_now_ms() < end);
    ck_assert_msg(sample_sum("hotkvd_owner_up", NULL) == 2, "owners not up:\n%.2000s", T.body);
    ck_assert(sample_sum("hotkvd_owner_writes_total", NULL) >= NCMD + 1);
    ck_assert(sample_sum("hotkvd_owner_up", "pool=\"hot\",owner=\"0\"") == 1);
    ck_assert(sample_sum("hotkvd_owner_up", "pool=\"cold\",owner=\"0\"") == 1);

    char path[400], out[8192];
    snprintf(path, sizeof(path), "%s/metrics.txt", T.d.dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs(T.body, f), 0);
    ck_assert_int_eq(fclose(f), 0);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", path);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "promtool check metrics: %s", out);

    /* the latency histograms count exactly the commands sent, by kind and
     * class (the SET of the other key is class default) */
    const char *h = "hotkvd_command_duration_seconds_count";
    ck_assert(sample_sum(h, "kind=\"write\",class=\"live\"") == NCMD);
    ck_assert(sample_sum(h, "kind=\"read\",class=\"live\"") == NCMD);
    ck_assert(sample_sum(h, "kind=\"write\",class=\"default\"") == 1);
    ck_assert(sample_sum("hotkvd_command_duration_seconds_bucket",
                         "kind=\"read\",class=\"live\",le=\"+Inf\"") == NCMD);
    ck_assert(sample_sum("hotkvd_command_calls_total", "command=\"set\"") == NCMD + 1);
    /* the whole host: both colos, every process */
    ck_assert(sample_sum("hotkvd_cache_hits_total", "colo=\"") >= 0);
    ck_assert_ptr_nonnull(strstr(T.body, "hotkvd_cache_capacity_bytes{colo=\"zz-0\"}"));
    ck_assert_ptr_nonnull(strstr(T.body, "hotkvd_cache_capacity_bytes{colo=\"zz-1\"}"));
    ck_assert(sample_sum("hotkvd_process_ready", "role=\"edge\"") == 2);
    ck_assert(sample_sum("hotkvd_process_ready", "role=\"owner\"") == 2);
    /* no key, no client address */
    ck_assert_ptr_null(strstr(T.body, "s3cret"));
    ck_assert_ptr_null(strstr(T.body, "live:"));
    ck_assert_ptr_null(strstr(T.body, "127.0.0.1"));

    /* every family is documented in README's Metrics section */
    FILE *rf = fopen("README.md", "r");
    ck_assert_msg(rf != NULL, "README.md (the tests run from the source tree)");
    char *readme = calloc(1, 1 << 20);
    ck_assert_ptr_nonnull(readme);
    size_t rn = fread(readme, 1, (1 << 20) - 1, rf);
    fclose(rf);
    readme[rn] = '\0';
    char *sec = strstr(readme, "\n## Metrics (Prometheus)\n");
    ck_assert_ptr_nonnull(sec);
    char *sec_end = strstr(sec + 1, "\n## ");
    if (sec_end != NULL)
        *sec_end = '\0';
    int families = 0;
    for (const char *t = T.body; (t = strstr(t, "# TYPE ")) != NULL; t++) {
        char fam[128], quoted[140];
        ck_assert_int_eq(sscanf(t + 7, "%127s", fam), 1);
        snprintf(quoted, sizeof(quoted), "`%s`", fam);
        ck_assert_msg(strstr(sec, quoted) != NULL, "%s is not in README's Metrics section", fam);
        families++;
    }
    ck_assert_int_gt(families, 40);
    free(readme);

    /* served as the text format 0.0.4 */
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", T.http);
    ck_assert_int_eq(curl(url, 1), 0);
    ck_assert_msg(strstr(T.body, "200") != NULL &&
                      strcasestr(T.body, "content-type: text/plain; version=0.0.4") != NULL,
                  "%.500s", T.body);
    stop();
}
END_TEST

/* /usr/bin/prometheus with `args`, output to log; dies with this process. */
static pid_t spawn_prometheus(char *const args[], const char *log)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv("/usr/bin/prometheus", args);
        _exit(127);
    }
    return pid;
}

/* The value of a one-sample PromQL query over Prometheus's API at port, or
 * -1 (no sample yet, or no answer). */
static double promql(int port, const char *query)
{
    char url[256], q[200];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/query", port);
    snprintf(q, sizeof(q), "query=%s", query);
    char *argv[] = {"/usr/bin/curl", "-sS", "--max-time", "3", "-G", url, "--data-urlencode",
                    q, NULL};
    if (h_run(argv, NULL, T.body, BODY_MAX, 5000) != 0)
        return -1;
    /* {"status":"success","data":{"resultType":"vector","result":[{"metric":{},
     * "value":[1796.3,"81"]}]}} */
    const char *v = strstr(T.body, "\"value\":[");
    if (v == NULL || strstr(T.body, "\"status\":\"success\"") == NULL)
        return -1;
    v = strchr(v, ',');
    return v != NULL && v[1] == '"' ? strtod(v + 2, NULL) : -1;
}

START_TEST(prometheus_scrapes_the_command_count)
{
    start(NULL);
    scrape();
    double before = sample_sum("hotkvd_commands_processed_total", NULL);
    ck_assert(before >= 0);
    traffic();
    scrape();
    double expect = before + 2 * NCMD;
    ck_assert_msg(sample_sum("hotkvd_commands_processed_total", NULL) == expect,
                  "/metrics says %.0f commands, want %.0f",
                  sample_sum("hotkvd_commands_processed_total", NULL), expect);

    int port = h_free_port();
    char conf[400], data[400], log[400], listen[64], cfgarg[460], dataarg[460];
    snprintf(conf, sizeof(conf), "%s/prometheus.yml", T.d.dir);
    snprintf(data, sizeof(data), "%s/prometheus-data", T.d.dir);
    snprintf(log, sizeof(log), "%s/prometheus.log", T.d.dir);
    FILE *f = fopen(conf, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: hotkvd\n    static_configs:\n"
            "      - targets: ['127.0.0.1:%d']\n",
            T.http);
    ck_assert_int_eq(fclose(f), 0);
    snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%d", port);
    snprintf(cfgarg, sizeof(cfgarg), "--config.file=%s", conf);
    snprintf(dataarg, sizeof(dataarg), "--storage.tsdb.path=%s", data);
    char *args[] = {"prometheus", cfgarg, dataarg, listen, NULL};
    pid_t prom = spawn_prometheus(args, log);

    /* Prometheus starts, scrapes within a second, and the query sees it */
    double got = -1, sets = -1;
    int64_t end = h_now_ms() + 45000;
    while (h_now_ms() < end) {
        got = promql(port, "sum(hotkvd_commands_processed_total)");
        sets = promql(port, "sum(hotkvd_command_calls_total{command=\"set\"})");
        if (got == expect && sets == NCMD)
            break;
        ck_assert_msg(waitpid(prom, NULL, WNOHANG) == 0, "prometheus exited; see %s", log);
        h_sleep_ms(500);
    }
    kill(prom, SIGTERM);
    if (h_wait(prom, 10000) < 0) {
        kill(prom, SIGKILL);
        h_wait(prom, 2000);
    }
    ck_assert_msg(got == expect && sets == NCMD,
                  "PromQL: %.0f commands (want %.0f), %.0f SETs (want %d)", got, expect, sets,
                  NCMD);
    stop();
}
END_TEST

Suite *prometheus_suite(void)
{
    Suite *s = suite_create("prometheus");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"promtool_passes_on_a_running_daemons_metrics",
         promtool_passes_on_a_running_daemons_metrics},
        {"prometheus_scrapes_the_command_count", prometheus_scrapes_the_command_count},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
