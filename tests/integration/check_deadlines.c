/*
 * check_deadlines.c - a reload that makes a deadline earlier applies it to
 * the work in flight, not only to what starts after it (issue 25, item 5):
 * - write-timeout lowered from 8 s to 300 ms while a write waits on a
 *   stopped owner: the write is resent on the new schedule (within 3 s of
 *   being sent, not at 8 s), and applied once the owner resumes;
 * - write-deadline lowered from 60 s to 1 s while a write waits on a
 *   stopped owner: the client hears "outcome unknown" within 4 s, not 60 s;
 * - miss-wait lowered from 8 s to 300 ms while a read waits on a stopped
 *   owner: the read gets its class's timeout answer within 3 s, not 8 s;
 * - http-poll-max-wait lowered from 5 min to 1 s while a long poll asks for
 *   60 s: it is answered within 3 s of its start;
 * - http-heartbeat lowered from 30 s to 200 ms: an open watch stream gets
 *   a heartbeat within 2 s.
 * The owner is stopped with SIGSTOP (a guardian SIGCONTs it whatever
 * happens); every wait is bounded; daemons are stopped by pid.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/http_test.h"

#define BASE "edge-workers 1\nhot-owners 1\ncold-owners 1\nclass default pool hot\n"


/* Writes BASE + extra, SIGHUPs, and waits (up to 5 s) until the edges run a
 * generation after `gen`. */
static void reload_after(struct daemon *d, const char *extra, long long gen)
{
    char conf[1024];
    snprintf(conf, sizeof(conf), BASE "%s", extra);
    h_write_conf(d, conf);
    ck_assert_int_eq(kill(d->pid, SIGHUP), 0);
    int64_t end = h_now_ms() + 5000;
    while (h_now_ms() < end && h_edges_generation(d) <= gen)
        h_sleep_ms(10);
    ck_assert_int_gt(h_edges_generation(d), gen);
}

/* The scene every case of a client waiting on a stopped owner shares: the
 * daemon started with BASE + conf (hot/0 holding "k" = "before" when
 * `set_before`), hot/0 stopped (a guardian SIGCONTs it whatever happens),
 * then `a b [c]` sent without waiting, then after 300 ms the config reloaded
 * to BASE + next.  *t0 is when the command was sent; returns the guardian's
 * pipe (close it when done) and the owner in *owner. */
struct scene {
    struct daemon d;
    int fd, guard;
    pid_t owner;
    int64_t t0;
};

static void scene_start(struct scene *x, const char *conf, int set_before, const char *next,
                        const char *a, const char *b, const char *c)
{
    char text[1024];
    snprintf(text, sizeof(text), BASE "%s", conf);
    ck_assert_int_eq(h_start(&x->d, text), 0);
    x->fd = h_connect(x->d.port);
    if (set_before) {
        struct h_reply *r = h_cmdv(x->fd, "SET", "k", "before", NULL);
        ck_assert_msg(r != NULL && strcmp(r->raw, "+OK\r\n") == 0, "SET before");
        h_free(r);
    }
    long long gen = h_edges_generation(&x->d);
    x->owner = h_child(&x->d, "hotkvd: owner hot/0", 0);
    ck_assert_int_gt(x->owner, 0);
    x->guard = h_sigcont_guard(x->owner, 0, NULL);
    ck_assert_int_eq(kill(x->owner, SIGSTOP), 0);
    x->t0 = h_now_ms();
    ck_assert_int_eq(h_sendv(x->fd, a, b, c, NULL), 0);
    h_sleep_ms(300);
    reload_after(&x->d, next, gen);
}

/* The owner resumed and its guardian let go. */
static void scene_resume(struct scene *x)
{
    kill(x->owner, SIGCONT);
    close(x->guard);
}

START_TEST(a_lower_write_timeout_applies_to_a_write_in_flight)
{
    struct scene x;
    scene_start(&x, "write-timeout 8s\nwrite-retry-backoff 100ms\n", 1,
                "write-timeout 300ms\nwrite-retry-backoff 100ms\n", "SET", "k", "during");
    struct daemon d = x.d;
    int fd = x.fd;
    int64_t t0 = x.t0;
    int64_t retried_at = -1;
    while (h_now_ms() - t0 < 6000 && retried_at < 0) {
        if (h_info_int(d.port, "write_retries") >= 1)
            retried_at = h_now_ms() - t0;
        else
            h_sleep_ms(20);
    }
    scene_resume(&x);
    fprintf(stderr, "deadlines: write sent, write-timeout 8s -> 300ms after 300 ms: first "
                    "resend at %lld ms\n", (long long)retried_at);
    ck_assert_msg(retried_at >= 0 && retried_at < 3000,
                  "the write was first resent %lld ms after it was sent (-1: not in 6 s): the "
                  "old 8 s timeout still ran", (long long)retried_at);
    struct h_reply *r = h_read(fd);
    ck_assert_msg(r != NULL && strcmp(r->raw, "+OK\r\n") == 0, "SET during: %s",
                  r != NULL ? r->raw : "(none)");
    h_free(r);
    r = h_cmdv(fd, "GET", "k", NULL);
    ck_assert_msg(r != NULL && strcmp(r->raw, "$6\r\nduring\r\n") == 0, "GET: %s",
                  r != NULL ? r->raw : "(none)");
    h_free(r);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

/* write-deadline lowered from 60 s to 1 s while a write waits on a stopped
 * owner (write-timeout 5 s: no resend before the new deadline): the client
 * hears "outcome unknown" about 1 s after it wrote, not 60 s. */
START_TEST(a_lower_write_deadline_applies_to_a_write_in_flight)
{
    struct scene x;
    scene_start(&x, "write-timeout 5s\nwrite-deadline 60s\n", 1,
                "write-timeout 1s\nwrite-deadline 1s\n", "SET", "k", "during"); /* >= timeout */
    int fd = x.fd;
    int64_t t0 = x.t0;
    struct h_reply *r = h_read(fd); /* a 5 s receive timeout: the old 60 s deadline fails it */
    int64_t answered = h_now_ms() - t0;
    scene_resume(&x);
    fprintf(stderr, "deadlines: write-deadline 60s -> 1s: the write in flight answered at %lld ms: %s",
            (long long)answered, r != NULL ? r->raw : "(none)\n");
    ck_assert_msg(r != NULL && strstr(r->raw, "outcome unknown") != NULL,
                  "the write in flight was not failed at the new deadline: %s (after %lld ms)",
                  r != NULL ? r->raw : "no answer", (long long)answered);
    ck_assert_int_lt(answered, 4000);
    h_free(r);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&x.d)), 0);
}
END_TEST

START_TEST(a_lower_miss_wait_applies_to_a_read_waiting)
{
    struct scene x;
    scene_start(&x, "miss-wait 8s\n", 0, "miss-wait 300ms\n", "GET", "never:seen", NULL);
    struct daemon d = x.d;
    int fd = x.fd;
    int64_t t0 = x.t0;
    struct h_reply *r = h_read(fd); /* 5 s receive timeout */
    int64_t took = h_now_ms() - t0;
    scene_resume(&x);
    fprintf(stderr, "deadlines: read waiting, miss-wait 8s -> 300ms after 300 ms: answered at "
                    "%lld ms (%s)\n", (long long)took, r != NULL ? "answer" : "none");
    ck_assert_msg(r != NULL && took < 3000,
                  "the read was answered %lld ms after it was sent (%s): the old miss-wait "
                  "still ran", (long long)took, r != NULL ? r->raw : "no answer in 5 s");
    ck_assert_msg(r->v->type == RESP_NULL, "the timeout answer: %s", r->raw); /* degrade */
    h_free(r);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

static struct hr R;

START_TEST(a_lower_poll_cap_applies_to_a_held_poll)
{
    struct daemon d;
    int hp = h_free_port();
    char conf[512], extra[256];
    snprintf(extra, sizeof(extra), "http-port %d\n", hp);
    snprintf(conf, sizeof(conf), BASE "%s", extra);
    ck_assert_int_eq(h_start(&d, conf), 0);
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "SET", "p", "1", NULL);
    ck_assert_msg(r != NULL && strcmp(r->raw, "+OK\r\n") == 0, "SET p");
    h_free(r);
    close(fd);
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/p", NULL, &R), 0);
    ck_assert_int_eq(R.status, 200);
    unsigned long long index = (unsigned long long)hx_index(&R);
    long long gen = h_edges_generation(&d);
    int poll = h_connect(hp);
    char req[256];
    snprintf(req, sizeof(req), "GET /v1/kv/p?index=%llu&wait=60s HTTP/1.1\r\nHost: t\r\n\r\n",
             index);
    int64_t t0 = h_now_ms();
    ck_assert_int_eq(hx_send(poll, req), 0);
    h_sleep_ms(300);
    snprintf(extra, sizeof(extra), "http-port %d\nhttp-poll-max-wait 1s\n", hp);
    reload_after(&d, extra, gen);
    memset(&R, 0, offsetof(struct hr, in));
    R.inlen = 0;
    int rc = hx_read(poll, &R, 0, 8000);
    int64_t took = h_now_ms() - t0;
    fprintf(stderr, "deadlines: poll wait=60s, http-poll-max-wait 5m -> 1s after 300 ms: "
                    "answered at %lld ms (%d)\n", (long long)took, rc == 0 ? R.status : -1);
    ck_assert_msg(rc == 0 && took < 3000, "the poll was answered %lld ms after it began (%s)",
                  (long long)took, rc == 0 ? "answered" : "not in 8 s");
    ck_assert_int_eq(R.status, 200);
    close(poll);
    h_stop(&d);
}
END_TEST

START_TEST(a_lower_heartbeat_applies_to_an_open_stream)
{
    struct daemon d;
    int hp = h_free_port();
    char conf[512], extra[256];
    snprintf(extra, sizeof(extra), "http-port %d\nhttp-heartbeat 30s\n", hp);
    snprintf(conf, sizeof(conf), BASE "%s", extra);
    ck_assert_int_eq(h_start(&d, conf), 0);
    long long gen = h_edges_generation(&d);
    int w = h_connect(hp);
    ck_assert_int_eq(hx_send(w, "GET /v1/watch/hb HTTP/1.1\r\nHost: t\r\n\r\n"), 0);
    memset(&R, 0, sizeof(R));
    ck_assert_int_eq(hx_read(w, &R, 1, 10000), 0);
    ck_assert_int_eq(R.status, 200);
    h_sleep_ms(300);
    snprintf(extra, sizeof(extra), "http-port %d\nhttp-heartbeat 200ms\n", hp);
    reload_after(&d, extra, gen);
    int64_t t0 = h_now_ms();
    while (h_now_ms() - t0 < 5000 && memmem(R.in, R.inlen, ": hb", 4) == NULL)
        if (hx_fill(w, &R, 100) == 0)
            break;
    int64_t took = h_now_ms() - t0;
    int got = memmem(R.in, R.inlen, ": hb", 4) != NULL;
    fprintf(stderr, "deadlines: watch, http-heartbeat 30s -> 200ms: heartbeat %lld ms after "
                    "the reload (%s)\n", (long long)took, got ? "came" : "none");
    ck_assert_msg(got && took < 2000, "no heartbeat within 2 s of the reload (%lld ms, %s)",
                  (long long)took, got ? "late" : "none in 5 s");
    close(w);
    h_stop(&d);
}
END_TEST

Suite *deadlines_suite(void)
{
    Suite *s = suite_create("deadlines");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"write_timeout", a_lower_write_timeout_applies_to_a_write_in_flight},
        {"write_deadline", a_lower_write_deadline_applies_to_a_write_in_flight},
        {"miss_wait", a_lower_miss_wait_applies_to_a_read_waiting},
        {"poll_cap", a_lower_poll_cap_applies_to_a_held_poll},
        {"heartbeat", a_lower_heartbeat_applies_to_an_open_stream},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
