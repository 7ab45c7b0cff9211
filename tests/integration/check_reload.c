/*
 * check_reload.c - what a config reload (SIGHUP or CONFIG SET) changes in
 * processes that are busy: reloadable owner settings take effect in the
 * owners, and work that started under the old config finishes safely under
 * the new one.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"

#define ONE_EACH "edge-workers 1\nhot-owners 1\ncold-owners 1\n"

/* Children of `role` ("edge", "owner"; NULL = both) that have not applied
 * config generation `gen` yet, from INFO processes; -1 if INFO did not
 * answer. */
static int behind_role(const struct daemon *d, long long gen, const char *role)
{
    char *text = h_info_processes(d->port);
    if (text == NULL)
        return -1;
    int n = 0;
    for (char *line = strtok(text, "\r\n"); line != NULL; line = strtok(NULL, "\r\n")) {
        const char *g = strstr(line, "config_generation=");
        char want[32];
        snprintf(want, sizeof(want), "role=%s,", role != NULL ? role : "");
        if (strncmp(line, "slot", 4) != 0 || strstr(line, "role=none") != NULL || g == NULL ||
            (role != NULL && strstr(line, want) == NULL))
            continue;
        if (atoll(g + strlen("config_generation=")) != gen)
            n++;
    }
    free(text);
    return n;
}

static int behind(const struct daemon *d, long long gen)
{
    return behind_role(d, gen, NULL);
}

/* Waits (up to 10 s) until the master and every child run generation gen. */
static void wait_generation(const struct daemon *d, long long gen)
{
    int64_t end = h_now_ms() + 10000;
    while (h_now_ms() < end &&
           (h_info_int(d->port, "config_generation") != gen || behind(d, gen) != 0))
        h_sleep_ms(50);
    ck_assert_int_eq(h_info_int(d->port, "config_generation"), gen);
    ck_assert_int_eq(behind(d, gen), 0);
}

static void config_set(int fd, const char *name, const char *value)
{
    struct h_reply *r = h_cmdv(fd, "CONFIG", "SET", name, value, NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->v->type == RESP_SIMPLE, "CONFIG SET %s %s: %.*s", name, value,
                  (int)r->v->len, r->v->str);
    h_free(r);
}

/* ---- persist-interval ---- */

/* persist-interval is reloadable: after CONFIG SET to a long interval a
 * ledger write stays dirty (owners cut no batch for it), and after SIGHUP
 * to a short one it reaches SQLite within a few intervals.  INFO's owner
 * counters are polled once a second, hence the margins. */
START_TEST(persist_interval_reload_changes_the_owners_cadence)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, ONE_EACH), 0);
    int fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    config_set(fd, "persist-interval", "600s");
    wait_generation(&d, 2);

    struct h_reply *r = h_cmdv(fd, "SET", "cadence:k", "v", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->v->type, RESP_SIMPLE);
    h_free(r);
    /* At the start-up interval (100 ms) it would be clean well within 3 s. */
    h_sleep_ms(3000);
    for (int i = 0; i < 4; i++) {
        int64_t dirty = h_info_int(d.port, "persist_dirty_keys");
        ck_assert_msg(dirty >= 1, "persist_dirty_keys %lld %d ms after the write: the owner "
                      "still persists at the start-up interval", (long long)dirty, 3000 + 500 * i);
        h_sleep_ms(500);
    }
    int64_t batches = h_info_int(d.port, "persist_batches");

    h_write_conf(&d, ONE_EACH "persist-interval 200ms\n");
    kill(d.pid, SIGHUP);
    wait_generation(&d, 3);
    int64_t end = h_now_ms() + 10000, dirty = -1;
    while (h_now_ms() < end && (dirty = h_info_int(d.port, "persist_dirty_keys")) != 0)
        h_sleep_ms(100);
    ck_assert_msg(dirty == 0, "persist_dirty_keys still %lld 10 s after a reload to 200ms",
                  (long long)dirty);
    ck_assert_int_gt(h_info_int(d.port, "persist_batches"), batches);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

/* ---- work in flight across a reload ---- */

#define INFLIGHT_CONF ONE_EACH "miss-wait 3s\n" \
    "class strict pattern \"e:*\" on-timeout error\n"
#define NCLIENTS 3

/* Reads wait on a miss (both owners are stopped, so no fetch answers) while
 * the config is replaced several times, by CONFIG SET and by SIGHUP, each
 * freeing the generation the reads started under.  At miss-wait every read
 * gets its class's timeout answer, and when the owners resume, the fetches
 * still in flight fill the cache: the edge must live through all of it.
 * (A use-after-free here crashes the edge in the ASan build:
 * make VARIANT=asan integration ONLY=reload.) */
START_TEST(reads_in_flight_survive_config_reloads)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, INFLIGHT_CONF "maxclients 1000\n"), 0);
    pid_t edge = h_child(&d, "hotkvd: edge", 0);
    pid_t hot = h_child(&d, "hotkvd: owner hot/0", 0);
    pid_t cold = h_child(&d, "hotkvd: owner cold/0", 0);
    ck_assert(edge > 0 && hot > 0 && cold > 0);
    int admin = h_connect(d.port);
    ck_assert_int_ge(admin, 0);
    int guard = h_sigcont_guard(hot, cold, NULL);
    ck_assert_int_eq(kill(hot, SIGSTOP), 0);
    ck_assert_int_eq(kill(cold, SIGSTOP), 0);

    int fds[NCLIENTS];
    for (int i = 0; i < NCLIENTS; i++) {
        fds[i] = h_connect(d.port);
        ck_assert_int_ge(fds[i], 0);
        char req[128];
        int n = snprintf(req, sizeof(req), "*2\r\n$3\r\nGET\r\n$4\r\ne:%02d\r\n"
                         "*2\r\n$3\r\nGET\r\n$4\r\nd:%02d\r\n", i, i);
        ck_assert_int_eq(h_send(fds[i], req, (size_t)n), 0);
    }
    int64_t sent = h_now_ms();
    h_sleep_ms(200); /* the edge has them in flight */

    /* Five generations while they wait: each CONFIG SET is installed in the
     * edge at once and again by the master's broadcast; the SIGHUP reloads
     * the file. */
    config_set(admin, "maxclients", "1001");
    config_set(admin, "maxclients", "1002");
    h_write_conf(&d, INFLIGHT_CONF "maxclients 1003\n");
    ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
    int64_t end = h_now_ms() + 2000;
    while (h_now_ms() < end && (h_info_int(d.port, "config_generation") != 4 ||
                                behind_role(&d, 4, "edge") != 0))
        h_sleep_ms(20);
    ck_assert_int_eq(behind_role(&d, 4, "edge"), 0);
    config_set(admin, "maxclients", "1004");
    ck_assert_msg(h_now_ms() - sent < 2500, "the reloads took %lld ms: not within miss-wait",
                  (long long)(h_now_ms() - sent));

    /* miss-wait passes: every read gets its class's answer. */
    for (int i = 0; i < NCLIENTS; i++) {
        struct h_reply *r = h_read(fds[i]);
        ck_assert_msg(r != NULL, "client %d: no answer to GET e:%02d (edge %d %s)", i, i,
                      (int)edge, h_alive(edge) ? "alive" : "gone");
        ck_assert_msg(r->v->type == RESP_ERROR && strncmp(r->v->str, "TRYAGAIN", 8) == 0,
                      "client %d: GET e:%02d answered %.*s", i, i, (int)r->v->len, r->v->str);
        h_free(r);
        r = h_read(fds[i]);
        ck_assert_msg(r != NULL, "client %d: no answer to GET d:%02d", i, i);
        ck_assert_int_eq(r->v->type, RESP_NULL);
        h_free(r);
    }
    ck_assert_int_ge(h_now_ms() - sent, 2500);

    /* The owners answer the fetches still in flight: they fill the cache. */
    ck_assert_int_eq(kill(hot, SIGCONT), 0);
    ck_assert_int_eq(kill(cold, SIGCONT), 0);
    close(guard);
    h_sleep_ms(1000);
    struct h_reply *r = h_cmdv(admin, "GET", "d:00", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->v->type, RESP_NULL);
    h_free(r);
    ck_assert_msg(h_alive(edge) && h_child(&d, "hotkvd: edge", 0) == edge,
                  "the edge died and was restarted");
    for (int i = 0; i < NCLIENTS; i++)
        close(fds[i]);
    close(admin);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

Suite *reload_suite(void)
{
    Suite *s = suite_create("reload");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"persist_interval", persist_interval_reload_changes_the_owners_cadence},
        {"inflight", reads_in_flight_survive_config_reloads},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
