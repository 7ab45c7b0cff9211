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

/* Children (edges and owners) that have not applied config generation
 * `gen` yet, from INFO processes; -1 if INFO did not answer. */
static int behind(const struct daemon *d, long long gen)
{
    int fd = h_connect(d->port);
    if (fd < 0)
        return -1;
    struct h_reply *r = h_cmdv(fd, "INFO", "processes", NULL);
    close(fd);
    if (r == NULL || r->v->type != RESP_BULK) {
        h_free(r);
        return -1;
    }
    char *text = strndup(r->v->str, r->v->len);
    h_free(r);
    int n = 0;
    for (char *line = strtok(text, "\r\n"); line != NULL; line = strtok(NULL, "\r\n")) {
        const char *g = strstr(line, "config_generation=");
        if (strncmp(line, "slot", 4) != 0 || strstr(line, "role=none") != NULL || g == NULL)
            continue;
        if (atoll(g + strlen("config_generation=")) != gen)
            n++;
    }
    free(text);
    return n;
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

Suite *reload_suite(void)
{
    Suite *s = suite_create("reload");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"persist_interval", persist_interval_reload_changes_the_owners_cadence},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
