/*
 * check_prom.c - the Prometheus text writer (proto/prom) and the counter
 * lists rendered through it (server/core/counters_prom): escaping, float
 * spelling, histogram shape, names, and a whole exposition checked by
 * Prometheus's own promtool (`promtool check metrics`, which also lints the
 * naming conventions).  promtool comes from Debian's prometheus package,
 * which scripts/install-deps.sh installs: a missing promtool fails the test.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/prom.h"
#include "server/core/counters_prom.h"
#include "tests/harness.h"

/* The buffer's bytes as a NUL-terminated string (the buffer keeps them). */
static const char *text(struct hkv_buf *b)
{
    ck_assert_int_eq(buf_append(b, "", 1), HKV_OK);
    b->len--;
    return buf_head(b);
}

START_TEST(help_and_label_values_are_escaped)
{
    struct hkv_buf b = HKV_BUF_INIT;
    ck_assert_int_eq(prom_family(&b, "hotkvd_x", PROM_GAUGE, "a \\ b\nc \"q\""), HKV_OK);
    ck_assert_str_eq(text(&b), "# HELP hotkvd_x a \\\\ b\\nc \"q\"\n# TYPE hotkvd_x gauge\n");
    buf_reset(&b);
    struct prom_label l[] = { {"class", "a\"b\\c\nd"}, {"edge", "3"} };
    ck_assert_int_eq(prom_sample_u64(&b, "hotkvd_x", l, 2, 7), HKV_OK);
    ck_assert_str_eq(text(&b), "hotkvd_x{class=\"a\\\"b\\\\c\\nd\",edge=\"3\"} 7\n");
    buf_reset(&b);
    ck_assert_int_eq(prom_sample_i64(&b, "hotkvd_x", NULL, 0, -5), HKV_OK);
    ck_assert_str_eq(text(&b), "hotkvd_x -5\n");
    /* UTF-8 passes; an invalid sequence is refused, not sent to break a scrape */
    buf_reset(&b);
    struct prom_label u[] = { {"colo", "caf\xc3\xa9"} }, bad[] = { {"colo", "caf\xe9"} };
    ck_assert_int_eq(prom_sample(&b, "hotkvd_x", u, 1, 1), HKV_OK);
    ck_assert_int_eq(prom_sample(&b, "hotkvd_x", bad, 1, 1), HKV_EINVAL);
    ck_assert_int_eq(prom_family(&b, "hotkvd_x", PROM_GAUGE, "\xed\xa0\x80"), HKV_EINVAL);
    buf_deinit(&b);
}
END_TEST

START_TEST(floats_are_spelled_as_prometheus_reads_them)
{
    struct { double v; const char *s; } c[] = {
        {NAN, "NaN"}, {INFINITY, "+Inf"}, {-INFINITY, "-Inf"}, {0.0, "0"}, {-0.0, "0"},
        {42, "42"}, {-7, "-7"}, {1e15, "1000000000000000"}, {9007199254740993.0, "9007199254740992"},
        {0.1, "0.1"}, {0.005, "0.005"}, {2.5, "2.5"}, {1.0 / 3, "0.3333333333333333"},
        {1e300, "1e+300"}, {0.1 + 0.2, "0.30000000000000004"}, {-1.5e-7, "-1.5e-07"},
    };
    char out[PROM_FLOAT_MAX];
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        size_t n = prom_fmt_double(out, c[i].v);
        ck_assert_msg(strcmp(out, c[i].s) == 0, "%.17g -> %s, want %s", c[i].v, out, c[i].s);
        ck_assert_uint_eq(n, strlen(c[i].s));
        if (!isnan(c[i].v))
            ck_assert(strtod(out, NULL) == c[i].v);     /* reads back exactly */
    }
}
END_TEST

START_TEST(histograms_are_cumulative_and_end_with_inf)
{
    struct hkv_buf b = HKV_BUF_INIT;
    double bounds[] = { 0.001, 0.01, 0.1 };
    uint64_t counts[] = { 5, 0, 3, 2 };
    struct prom_label l[] = { {"kind", "read"} };
    ck_assert_int_eq(prom_histogram(&b, "hotkvd_lat_seconds", l, 1, bounds, counts, 3, 1.25), HKV_OK);
    ck_assert_str_eq(text(&b),
                     "hotkvd_lat_seconds_bucket{kind=\"read\",le=\"0.001\"} 5\n"
                     "hotkvd_lat_seconds_bucket{kind=\"read\",le=\"0.01\"} 5\n"
                     "hotkvd_lat_seconds_bucket{kind=\"read\",le=\"0.1\"} 8\n"
                     "hotkvd_lat_seconds_bucket{kind=\"read\",le=\"+Inf\"} 10\n"
                     "hotkvd_lat_seconds_sum{kind=\"read\"} 1.25\n"
                     "hotkvd_lat_seconds_count{kind=\"read\"} 10\n");
    buf_reset(&b);
    uint64_t none[] = { 0 };
    ck_assert_int_eq(prom_histogram(&b, "h", NULL, 0, NULL, none, 0, 0), HKV_OK);
    ck_assert_str_eq(text(&b), "h_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n");
    double unsorted[] = { 1, 1 }, inf[] = { 1, INFINITY };
    uint64_t three[] = { 0, 0, 0 };
    ck_assert_int_eq(prom_histogram(&b, "h", NULL, 0, unsorted, three, 2, 0), HKV_EINVAL);
    ck_assert_int_eq(prom_histogram(&b, "h", NULL, 0, inf, three, 2, 0), HKV_EINVAL);
    struct prom_label le[] = { {"le", "1"} };
    ck_assert_int_eq(prom_histogram(&b, "h", le, 1, bounds, counts, 3, 0), HKV_EINVAL);
    buf_deinit(&b);
}
END_TEST

START_TEST(metric_and_label_names_are_checked)
{
    const char *good[] = { "a", "_x", "hotkvd_up", "ns:rule:rate5m", "A9_" };
    const char *bad[] = { "", "9a", "a-b", "a b", "é", "a.b" };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        ck_assert_msg(prom_name_ok(good[i]), "%s", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(!prom_name_ok(bad[i]), "%s", bad[i]);
    ck_assert(prom_label_name_ok("edge") && prom_label_name_ok("_a") && prom_label_name_ok("le"));
    ck_assert(!prom_label_name_ok("__name__") && !prom_label_name_ok("a:b") &&
              !prom_label_name_ok("1a") && !prom_label_name_ok(""));
    struct hkv_buf b = HKV_BUF_INIT;
    struct prom_label l[] = { {"__x", "1"} }, l2[] = { {"ok", NULL} };
    ck_assert_int_eq(prom_sample(&b, "a-b", NULL, 0, 1), HKV_EINVAL);
    ck_assert_int_eq(prom_sample(&b, "a", l, 1, 1), HKV_EINVAL);
    ck_assert_int_eq(prom_sample(&b, "a", l2, 1, 1), HKV_EINVAL);
    ck_assert_int_eq(prom_family(&b, "9", PROM_COUNTER, "h"), HKV_EINVAL);
    buf_deinit(&b);
}
END_TEST

START_TEST(counter_names_follow_conventions)
{
    struct { struct ctr_def d; const char *name; double scale; } c[] = {
        {{"write_retries", CTR_COUNTER, ""}, "hotkvd_write_retries_total", 1},
        {{"requests_total", CTR_COUNTER, ""}, "hotkvd_requests_total", 1},
        {{"connected_clients", CTR_GAUGE, ""}, "hotkvd_connected_clients", 1},
        {{"owner_memory_bytes", CTR_GAUGE, ""}, "hotkvd_owner_memory_bytes", 1},
        {{"persist_last_commit_ms", CTR_GAUGE, ""}, "hotkvd_persist_last_commit_seconds", 0.001},
        {{"persist_stall_ms_max", CTR_GAUGE, ""}, "hotkvd_persist_stall_max_seconds", 0.001},
        {{"wait_ms", CTR_COUNTER, ""}, "hotkvd_wait_seconds_total", 0.001},
        {{"msgs", CTR_COUNTER, ""}, "hotkvd_msgs_total", 1},
        {{"total_commands_processed", CTR_COUNTER, ""}, "hotkvd_commands_processed_total", 1},
        {{"total_memory", CTR_GAUGE, ""}, "hotkvd_total_memory", 1},
    };
    char name[CTR_PROM_NAME_MAX];
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        double scale = 0;
        ck_assert_int_eq(ctr_prom_name(&c[i].d, name, &scale), HKV_OK);
        ck_assert_str_eq(name, c[i].name);
        ck_assert(scale == c[i].scale);
    }
    struct ctr_def empty = { "ms", CTR_GAUGE, "" };
    double scale;
    ck_assert_int_eq(ctr_prom_name(&empty, name, &scale), HKV_EINVAL);
}
END_TEST

START_TEST(counter_rows_render_one_family_each)
{
    const struct ctr_def defs[] = {
        {"write_retries", CTR_COUNTER, "Write requests sent again"},
        {"persist_last_commit_ms", CTR_GAUGE, "Duration of the last transaction, ms"},
    };
    int64_t e0[] = { 3, 1500 }, e1[] = { 4, 20 };
    struct prom_label l0[] = { {"edge", "0"} }, l1[] = { {"edge", "1"} };
    struct ctr_prom_row rows[] = { {l0, 1, e0}, {l1, 1, e1} };
    struct hkv_buf b = HKV_BUF_INIT;
    ck_assert_int_eq(ctr_prom_render(&b, defs, 2, rows, 2), HKV_OK);
    ck_assert_str_eq(text(&b),
                     "# HELP hotkvd_write_retries_total Write requests sent again\n"
                     "# TYPE hotkvd_write_retries_total counter\n"
                     "hotkvd_write_retries_total{edge=\"0\"} 3\n"
                     "hotkvd_write_retries_total{edge=\"1\"} 4\n"
                     "# HELP hotkvd_persist_last_commit_seconds Duration of the last transaction, seconds\n"
                     "# TYPE hotkvd_persist_last_commit_seconds gauge\n"
                     "hotkvd_persist_last_commit_seconds{edge=\"0\"} 1.5\n"
                     "hotkvd_persist_last_commit_seconds{edge=\"1\"} 0.02\n");
    buf_deinit(&b);
}
END_TEST

/* Runs `promtool check metrics < path`; returns its exit status, its output
 * in out. */
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

static void write_file(const char *path, struct hkv_buf *b)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf_head(b), 1, buf_unread(b), f), buf_unread(b));
    ck_assert_int_eq(fclose(f), 0);
}

/* Both declared counter lists (as /metrics will render them: owners by
 * label), a histogram with labels and a gauge with escaped values. */
START_TEST(promtool_accepts_a_rendered_exposition)
{
    struct hkv_buf b = HKV_BUF_INIT;
    int64_t ev[CTR_EDGE_COUNT], ov0[CTR_OWNER_COUNT], ov1[CTR_OWNER_COUNT];
    for (int i = 0; i < CTR_EDGE_COUNT; i++)
        ev[i] = i * 1000 + 7;
    for (int i = 0; i < CTR_OWNER_COUNT; i++) {
        ov0[i] = i * 3;
        ov1[i] = (int64_t)1 << 60;
    }
    struct ctr_prom_row er[] = { {NULL, 0, ev} };
    struct prom_label o0[] = { {"owner", "0"}, {"pool", "hot"} }, o1[] = { {"owner", "1"}, {"pool", "cold"} };
    struct ctr_prom_row orows[] = { {o0, 2, ov0}, {o1, 2, ov1} };
    ck_assert_int_eq(ctr_prom_render(&b, ctr_edge_defs, CTR_EDGE_COUNT, er, 1), HKV_OK);
    ck_assert_int_eq(ctr_prom_render(&b, ctr_owner_defs, CTR_OWNER_COUNT, orows, 2), HKV_OK);

    double bounds[] = { 0.0001, 0.001, 0.01, 0.1, 1 };
    uint64_t c1[] = { 10, 20, 5, 0, 1, 2 }, c2[] = { 0, 0, 0, 0, 0, 0 };
    ck_assert_int_eq(prom_family(&b, "hotkvd_command_duration_seconds", PROM_HISTOGRAM,
                                 "Command latency by kind and class"), HKV_OK);
    struct prom_label h1[] = { {"kind", "read"}, {"class", "hot \"live\" \\ scores\n"} };
    struct prom_label h2[] = { {"kind", "write"}, {"class", "default"} };
    ck_assert_int_eq(prom_histogram(&b, "hotkvd_command_duration_seconds", h1, 2, bounds, c1, 5, 3.75), HKV_OK);
    ck_assert_int_eq(prom_histogram(&b, "hotkvd_command_duration_seconds", h2, 2, bounds, c2, 5, 0), HKV_OK);
    ck_assert_int_eq(prom_family(&b, "hotkvd_cache_fill_ratio", PROM_GAUGE, "Odd values \\ and\nlines"), HKV_OK);
    struct prom_label g[] = { {"colo", "a"} }, g2[] = { {"colo", "b"} }, g3[] = { {"colo", "c"} };
    ck_assert_int_eq(prom_sample(&b, "hotkvd_cache_fill_ratio", g, 1, NAN), HKV_OK);
    ck_assert_int_eq(prom_sample(&b, "hotkvd_cache_fill_ratio", g2, 1, -INFINITY), HKV_OK);
    ck_assert_int_eq(prom_sample(&b, "hotkvd_cache_fill_ratio", g3, 1, 0.125), HKV_OK);

    char dir[256], path[300], out[8192];
    h_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/metrics.txt", dir);
    write_file(path, &b);
    int st = promtool(path, out, sizeof(out));
    ck_assert_msg(st == 0, "promtool check metrics exited %d (127: promtool missing, install "
                  "Debian's prometheus package: scripts/install-deps.sh):\n%s", st, out);

    /* and the check is real: a broken line and a lint problem are refused */
    buf_reset(&b);
    buf_append_str(&b, "# TYPE x counter\nx_total{a=\"1} 1\n");
    write_file(path, &b);
    ck_assert_int_ne(promtool(path, out, sizeof(out)), 0);
    buf_reset(&b);
    ck_assert_int_eq(prom_family(&b, "hotkvd_requests", PROM_COUNTER, "no _total suffix"), HKV_OK);
    ck_assert_int_eq(prom_sample(&b, "hotkvd_requests", NULL, 0, 1), HKV_OK);
    write_file(path, &b);
    ck_assert_int_ne(promtool(path, out, sizeof(out)), 0);
    h_rmtree(dir);
    buf_deinit(&b);
}
END_TEST

Suite *prom_suite(void)
{
    Suite *s = suite_create("prom");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"help_and_label_values_are_escaped", help_and_label_values_are_escaped},
        {"floats_are_spelled_as_prometheus_reads_them", floats_are_spelled_as_prometheus_reads_them},
        {"histograms_are_cumulative_and_end_with_inf", histograms_are_cumulative_and_end_with_inf},
        {"metric_and_label_names_are_checked", metric_and_label_names_are_checked},
        {"counter_names_follow_conventions", counter_names_follow_conventions},
        {"counter_rows_render_one_family_each", counter_rows_render_one_family_each},
        {"promtool_accepts_a_rendered_exposition", promtool_accepts_a_rendered_exposition},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
