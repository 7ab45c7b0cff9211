/*
 * check_http_stats.c - GET /v1/stats against the real daemon (issue 30's
 * data source for a status page): valid JSON (proto/json.c's strict
 * tokenizer) whose sections and fields are INFO all's, numbers as numbers
 * and the rest as strings (redis_version, run_id, a zero-padded sha1),
 * counters that move as INFO's do, valid JSON while a hot key of user bytes
 * (not UTF-8, a quote, "<script>") is being read, HEAD without a body, and
 * http-metrics-allow's rule (403 from a peer outside it).
 * Every wait is bounded; the daemon is stopped by pid.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/json.h"
#include "tests/harness.h"
#include "tests/integration/http_test.h"

static struct daemon D;
static struct hr G;

static void cleanup(void)
{
    if (D.pid > 0)
        h_stop(&D);
}

static int start(int *hp, const char *extra)
{
    char conf[512];
    *hp = h_free_port();
    snprintf(conf, sizeof(conf), "edge-workers 2\nhot-owners 1\ncold-owners 1\nhttp-port %d\n%s",
             *hp, extra);
    h_on_fail(cleanup);
    return h_start(&D, conf);
}

static struct json_tok T[8192];

/* GET /v1/stats into G and its tokens into T; the token count. */
static int stats(int hp)
{
    H_EXPECT(cleanup, hx_get(hp, "GET", "/v1/stats", NULL, &G) == 0 && G.status == 200,
             "GET /v1/stats: %d", G.status);
    char ct[64];
    H_EXPECT(cleanup, hx_hdr(&G, "Content-Type", ct, sizeof(ct)) &&
                          strcmp(ct, "application/json") == 0, "Content-Type %s", ct);
    int n = json_parse(G.body, strlen(G.body), T, sizeof(T) / sizeof(T[0]));
    H_EXPECT(cleanup, n > 0 && T[0].type == JSON_OBJECT, "not a JSON object (%d): %.200s", n,
             G.body);
    return n;
}

static int field(const char *section, const char *name)
{
    int s = json_member(G.body, T, 0, section);
    return s < 0 ? -1 : json_member(G.body, T, s, name);
}

START_TEST(info_as_json)
{
    int hp;
    ck_assert_int_eq(start(&hp, ""), 0);
    int fd = h_connect(D.port);
    h_free(h_call(fd, "SET", "k\xff\"<script>", "v", NULL));
    for (int i = 0; i < 200; i++)
        h_free(h_call(fd, "GET", "k\xff\"<script>", NULL));
    stats(hp);
    static const char *const sections[] = {"server", "clients", "memory", "persistence", "stats",
                                           "cpu", "owners", "cache", "ratelimit"};
    for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
        H_EXPECT(cleanup, json_member(G.body, T, 0, sections[i]) > 0, "no section %s",
                 sections[i]);
    int v = field("server", "redis_version");
    H_EXPECT(cleanup, v > 0 && T[v].type == JSON_STRING, "redis_version not a string");
    v = field("server", "redis_git_sha1");
    H_EXPECT(cleanup, v > 0 && T[v].type == JSON_STRING && json_streq(G.body, T, v, "00000000"),
             "redis_git_sha1");
    v = field("server", "tcp_port");
    int64_t port = 0;
    H_EXPECT(cleanup, v > 0 && T[v].type == JSON_NUMBER &&
                          json_int64(G.body, T, v, &port) == HKV_OK && port == D.port,
             "tcp_port");
    v = field("stats", "total_commands_processed");
    int64_t cmds = 0;
    H_EXPECT(cleanup, v > 0 && json_int64(G.body, T, v, &cmds) == HKV_OK && cmds >= 201,
             "total_commands_processed %lld", (long long)cmds);
    /* every INFO all field is there (db0 aside: /v1/stats does not wait for
     * the owners' answer that INFO asks for) */
    char *info = NULL;
    struct h_reply *r = h_call(fd, "INFO", "all", NULL);
    info = strdup(r->v->str != NULL ? r->v->str : "");
    h_free(r);
    int missing = 0;
    char miss[128] = "";
    for (char *line = strtok(info, "\r\n"); line != NULL; line = strtok(NULL, "\r\n")) {
        char *colon = strchr(line, ':');
        if (line[0] == '#' || colon == NULL || strncmp(line, "db", 2) == 0 ||
            strncmp(line, "hotkey", 6) == 0)
            continue;
        *colon = '\0';
        int found = 0;
        for (int s = 1; (uint32_t)s < T[0].next && !found; s = (int)T[s + 1].next)
            found = T[s + 1].type == JSON_OBJECT && json_member(G.body, T, s + 1, line) > 0;
        if (!found && missing++ == 0)
            snprintf(miss, sizeof(miss), "%s", line);
    }
    free(info);
    H_EXPECT(cleanup, missing == 0, "%d INFO fields missing, first %s", missing, miss);
    /* HEAD: the headers only */
    struct hr h;
    H_EXPECT(cleanup, hx_get(hp, "HEAD", "/v1/stats", NULL, &h) == 0 && h.status == 200 &&
                          h.body[0] == '\0', "HEAD");
    /* counters move between two polls */
    for (int i = 0; i < 50; i++)
        h_free(h_call(fd, "PING", NULL));
    stats(hp);
    v = field("stats", "total_commands_processed");
    int64_t later = 0;
    H_EXPECT(cleanup, v > 0 && json_int64(G.body, T, v, &later) == HKV_OK && later >= cmds + 50,
             "total_commands_processed did not move: %lld -> %lld", (long long)cmds,
             (long long)later);
    close(fd);
    ck_assert_int_eq(h_stop(&D), 0);
}
END_TEST

START_TEST(only_to_http_metrics_allow)
{
    int hp;
    ck_assert_int_eq(start(&hp, "http-metrics-allow 10.0.0.0/8\n"), 0);
    H_EXPECT(cleanup, hx_get(hp, "GET", "/v1/stats", NULL, &G) == 0 && G.status == 403,
             "a loopback peer outside http-metrics-allow: %d", G.status);
    ck_assert_int_eq(h_stop(&D), 0);
}
END_TEST

Suite *http_stats_suite(void)
{
    Suite *s = suite_create("http_stats");
    TCase *tc = tcase_create("stats");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, info_as_json);
    tcase_add_test(tc, only_to_http_metrics_allow);
    suite_add_tcase(s, tc);
    return s;
}
