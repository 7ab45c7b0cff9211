/*
 * check_elink_timeout.c - an owner link's request timeout across a change
 * of it (server/edge/edge_link.c, elink_set_timeout): the owner here is a
 * Unix socket that is listened on and never answers (the connect completes
 * in its backlog), so every request can only time out.
 * - lowered while a request is in flight, the new deadline (its send time
 *   plus the new timeout) applies at once: a request sent under 8 s times
 *   out within a second of a change to 100 ms;
 * - raised, a request in flight gets the longer timeout too;
 * - lowered with nothing in flight, the next request gets it (not the
 *   deadline the timer was armed for under the old one).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "proto/wire.h"
#include "server/core/clock.h"
#include "server/edge/edge_link.h"
#include "tests/harness.h"

struct got {
    int status;
    int64_t at_ms;
    int n;
};

static void on_reply(void *arg, int status, const struct wire_msg *m)
{
    struct got *g = arg;
    g->status = status;
    g->at_ms = clock_mono_ms();
    g->n++;
}

/* Runs the loop for ms, or until g has an answer. */
static void run(struct event_base *b, struct got *g, int ms)
{
    int64_t end = clock_mono_ms() + ms;
    while (g->n == 0 && clock_mono_ms() < end) {
        struct timeval tv = {0, 20 * 1000};
        event_base_loopexit(b, &tv);
        event_base_dispatch(b);
    }
}

static int silent_owner(const char path[100])
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(fd, 16), 0);
    return fd;
}

static void send_stats(struct elink *l, struct got *g)
{
    uint64_t id;
    struct hkv_buf *out = elink_out(l, &id);
    ck_assert_int_eq(wire_put_stats(out, id), HKV_OK);
    ck_assert_int_eq(elink_commit(l, id, on_reply, g), HKV_OK);
}

START_TEST(a_lowered_or_raised_timeout_applies_to_requests_in_flight)
{
    char dir[64], path[100];
    h_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/owner.sock", dir);
    int lfd = silent_owner(path);
    struct event_base *b = event_base_new();
    ck_assert_ptr_nonnull(b);
    struct elink_opts o = {.path = path, .name = "test", .edge_id = 1, .incarnation = 9,
                           .colo = "a", .role = WIRE_ROLE_READ, .timeout_ms = 8000};
    struct elink *l = elink_create(b, &o);
    ck_assert_ptr_nonnull(l);

    /* lowered: 8 s -> 100 ms, 300 ms after the send */
    struct got g = {0};
    int64_t sent = clock_mono_ms();
    send_stats(l, &g);
    run(b, &g, 300);
    ck_assert_int_eq(g.n, 0);
    elink_set_timeout(l, 100);
    run(b, &g, 3000);
    ck_assert_msg(g.n == 1 && g.status == HKV_ETIMEDOUT, "n %d status %d", g.n, g.status);
    ck_assert_msg(g.at_ms - sent < 1500, "timed out %lld ms after the send, under the old 8 s",
                  (long long)(g.at_ms - sent));

    /* raised: 100 ms -> 5 s, at once: the request in flight waits longer */
    struct got h = {0};
    send_stats(l, &h);
    elink_set_timeout(l, 5000);
    run(b, &h, 600);
    ck_assert_msg(h.n == 0, "timed out after %d ms under a timeout raised to 5 s", 600);
    elink_set_timeout(l, 50);
    run(b, &h, 3000);
    ck_assert_msg(h.n == 1 && h.status == HKV_ETIMEDOUT, "n %d status %d", h.n, h.status);

    /* lowered with nothing in flight (the last request cancelled, the
     * timer still armed for its 8 s): the next request gets the new
     * timeout, not the old timer's deadline */
    elink_set_timeout(l, 8000);
    struct got c = {0}, d = {0};
    uint64_t id;
    struct hkv_buf *out = elink_out(l, &id);
    ck_assert_int_eq(wire_put_stats(out, id), HKV_OK);
    ck_assert_int_eq(elink_commit(l, id, on_reply, &c), HKV_OK);
    elink_cancel(l, id);
    elink_set_timeout(l, 100);
    send_stats(l, &d);
    run(b, &d, 3000);
    ck_assert_msg(d.n == 1 && d.status == HKV_ETIMEDOUT, "n %d status %d: the request waited "
                  "for the timer armed under 8 s", d.n, d.status);
    ck_assert_int_eq(c.n, 0); /* cancelled: never answered */

    elink_destroy(&l);
    event_base_free(b);
    close(lfd);
    h_rmtree(dir);
}
END_TEST

Suite *elink_timeout_suite(void)
{
    Suite *s = suite_create("elink_timeout");
    TCase *tc = tcase_create("elink_timeout");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, a_lowered_or_raised_timeout_applies_to_requests_in_flight);
    suite_add_tcase(s, tc);
    return s;
}
