/*
 * check_writepath.c - the write path under owner and edge failures: a write
 * to a stopped owner is retried with the same stamp and applied exactly once
 * when the owner resumes; an owner stopped past write-deadline gives an
 * explicit error in time; an edge killed with -9 while clients write loses no
 * acknowledged write and the other edge keeps serving.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"

static pid_t child_with_title(const struct daemon *d, const char *prefix, pid_t not)
{
    return h_child(d, prefix, not);
}

#define ONE_OWNER "edge-workers 1\nhot-owners 1\ncold-owners 1\nclass default pool hot\n"

START_TEST(write_to_stopped_owner_applies_once_after_resume)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, ONE_OWNER "write-timeout 500ms\nwrite-retry-backoff 300ms 600ms\n"
                                           "write-deadline 10s\n"), 0);
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "INCR", "ctr", NULL);
    ck_assert_int_eq(r->v->integer, 1);
    h_free(r);
    r = h_cmdv(fd, "INCR", "ctr", NULL);
    ck_assert_int_eq(r->v->integer, 2);
    h_free(r);
    pid_t owner = child_with_title(&d, "hotkvd: owner hot/0", 0);
    ck_assert_int_ne(owner, 0);
    ck_assert_int_eq(kill(owner, SIGSTOP), 0);
    const char *w[] = {"INCR", "ctr"};
    struct hkv_buf b = HKV_BUF_INIT;
    resp_add_array(&b, 2);
    resp_add_bulk_str(&b, w[0]);
    resp_add_bulk_str(&b, w[1]);
    int64_t t0 = h_now_ms();
    ck_assert_int_eq(h_send(fd, buf_head(&b), buf_unread(&b)), 0);
    buf_deinit(&b);
    h_sleep_ms(2000);
    kill(owner, SIGCONT);
    r = h_read(fd);
    int64_t took = h_now_ms() - t0;
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->v->type == RESP_INT, "got %s", r->raw);
    ck_assert_int_eq(r->v->integer, 3);
    ck_assert_int_lt(took, 5000);
    h_free(r);
    r = h_cmdv(fd, "GET", "ctr", NULL);
    ck_assert(r->v->type == RESP_BULK && h_str_is(r->v, "3")); /* applied exactly once */
    h_free(r);
    ck_assert_int_ge(h_info_int(d.port, "write_retries"), 1);
    ck_assert_int_eq(h_info_int(d.port, "write_failures"), 0);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

START_TEST(owner_stopped_past_deadline_gives_explicit_error_in_time)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, ONE_OWNER "write-timeout 500ms\nwrite-retry-backoff 300ms 600ms\n"
                                           "write-deadline 3s\n"), 0);
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "SET", "k", "before", NULL);
    ck_assert(h_str_is(r->v, "OK"));
    h_free(r);
    pid_t owner = child_with_title(&d, "hotkvd: owner hot/0", 0);
    ck_assert_int_ne(owner, 0);
    ck_assert_int_eq(kill(owner, SIGSTOP), 0);
    int64_t t0 = h_now_ms();
    r = h_cmdv(fd, "SET", "k", "during", NULL);
    int64_t took = h_now_ms() - t0;
    kill(owner, SIGCONT);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->v->type == RESP_ERROR, "got %s", r->raw);
    ck_assert_msg(h_str_is(r->v, "UNAVAILABLE outcome unknown: owner hot/0 did not acknowledge the write within 3000 ms"),
                  "got %s", r->raw);
    ck_assert_int_le(took, 4000);
    ck_assert_int_ge(took, 2500);
    h_free(r);
    ck_assert_int_eq(h_info_int(d.port, "write_failures"), 1);
    ck_assert_int_ge(h_info_int(d.port, "write_retries"), 2);
    /* One warning line names the failure and what the owner said. */
    int64_t end = h_now_ms() + 3000;
    while (h_now_ms() < end && !h_log_has(&d, "write set failed", "STATS", NULL))
        h_sleep_ms(50);
    ck_assert_msg(h_log_has(&d, "write set failed", "STATS", NULL), "no failure line in the log");
    /* The owner is back: writes work again. */
    r = h_cmdv(fd, "SET", "k", "after", NULL);
    ck_assert_msg(h_str_is(r->v, "OK"), "got %s", r->raw);
    h_free(r);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

enum { CLIENTS = 4, KEYS_MAX = 6000 };

START_TEST(killed_edge_loses_no_acknowledged_write)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 2\nhot-owners 2\ncold-owners 1\n"), 0);
    static char acked[KEYS_MAX];
    memset(acked, 0, sizeof(acked));
    int fds[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        fds[i] = h_connect(d.port);
        ck_assert_int_ge(fds[i], 0);
    }
    pid_t edge = child_with_title(&d, "hotkvd: edge", 0);
    ck_assert_int_ne(edge, 0);
    int next = 0, killed_at = -1, errors = 0, after_kill_ok = 0;
    int64_t end = h_now_ms() + 30000;
    while (next < KEYS_MAX && h_now_ms() < end) {
        for (int i = 0; i < CLIENTS && next < KEYS_MAX; i++) {
            char key[32];
            int n = next++;
            snprintf(key, sizeof(key), "seq:%d", n);
            struct h_reply *r = fds[i] >= 0 ? h_cmdv(fds[i], "SET", key, key, NULL) : NULL;
            if (r != NULL && r->v->type == RESP_SIMPLE && h_str_is(r->v, "OK")) {
                acked[n] = 1;
                after_kill_ok += killed_at >= 0;
            } else {
                errors++;
                if (fds[i] >= 0)
                    close(fds[i]);
                fds[i] = h_connect(d.port); /* lands on a live edge */
            }
            h_free(r);
        }
        if (killed_at < 0 && next >= KEYS_MAX / 3) {
            ck_assert_int_eq(kill(edge, SIGKILL), 0);
            killed_at = next;
        }
    }
    ck_assert_int_ge(killed_at, 0);
    ck_assert_int_gt(after_kill_ok, 1000); /* the other edge kept serving */
    ck_assert_int_le(errors, CLIENTS * 2);
    for (int i = 0; i < CLIENTS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    /* Every acknowledged write is there (MGET in batches). */
    int fd = h_connect(d.port);
    int missing = 0, checked = 0;
    for (int base = 0; base < next; base += 100) {
        const char *w[101];
        char keys[100][32];
        int n = 0;
        w[0] = "MGET";
        for (int k = base; k < base + 100 && k < next; k++, n++) {
            snprintf(keys[n], sizeof(keys[n]), "seq:%d", k);
            w[1 + n] = keys[n];
        }
        struct h_reply *r = h_cmd(fd, 1 + n, w);
        ck_assert_ptr_nonnull(r);
        ck_assert_uint_eq(r->v->n, (size_t)n);
        for (int j = 0; j < n; j++) {
            if (!acked[base + j])
                continue;
            checked++;
            if (!(r->v->elems[j].type == RESP_BULK && h_str_is(&r->v->elems[j], keys[j])))
                missing++;
        }
        h_free(r);
    }
    ck_assert_int_eq(missing, 0);
    ck_assert_int_gt(checked, KEYS_MAX / 2);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

Suite *writepath_suite(void)
{
    Suite *s = suite_create("writepath");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"stopped_owner_once", write_to_stopped_owner_applies_once_after_resume},
        {"past_deadline", owner_stopped_past_deadline_gives_explicit_error_in_time},
        {"edge_kill", killed_edge_loses_no_acknowledged_write},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
