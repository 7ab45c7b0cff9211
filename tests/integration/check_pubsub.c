/*
 * check_pubsub.c - pub/sub through the daemon (server/edge/edge_pubsub.h,
 * server/colo/bus.h), subscribers on BOTH edges of a colo:
 * - every message arrives exactly once and in publish order, to channel and
 *   pattern subscribers on either edge, and PUBLISH answers the colo's
 *   count of receivers;
 * - RESP3 (HELLO 3): confirmations and messages are pushes;
 * - RESP2 subscribed mode: Redis 7.0's error for other commands, PING's
 *   ["pong", ""], UNSUBSCRIBE without arguments, RESET leaves everything;
 * - PUBSUB NUMSUB / NUMPAT / CHANNELS and INFO's counts see both edges;
 * - a subscriber that does not read is closed at client-output-buffer-limit
 *   pubsub while its edge's RSS stays bounded;
 * - a message over a quarter of pubsub-bus-size is refused;
 * - with colos 2, a PUBLISH in one colo reaches the other colo's subscribers
 *   through the channel's owner (its push links), and with owner-push no
 *   through the host's buses;
 * - a publisher's messages keep their order, with no duplicate, while its
 *   route switches between the channel's owner and the local fallback
 *   (the owner killed and restarted twice under a steady stream): those in
 *   flight to a dying owner may be lost, none overtakes another;
 * - redis-py's PubSub works against it (tests/integration/pubsub_redispy.py).
 * Every wait is bounded; the daemon is stopped by pid (h_stop).
 */
#include <check.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/harness.h"

#define CONF "edge-workers 2\nhot-owners 1\ncold-owners 1\n"

static struct daemon d;

static void cleanup(void);
#define h_assert(...) H_EXPECT(cleanup, __VA_ARGS__)

static void cleanup(void)
{
    h_stop(&d);
}

static int64_t integer(int fd, ...)
{
    /* one command's integer reply */
    const char *w[8];
    va_list ap;
    va_start(ap, fd);
    int n = 0;
    for (const char *s; n < 8 && (s = va_arg(ap, const char *)) != NULL;)
        w[n++] = s;
    va_end(ap);
    struct h_reply *r = h_cmd(fd, n, w);
    h_assert(r != NULL && r->v->type == RESP_INT, "%s: not an integer reply", w[0]);
    int64_t v = r->v->integer;
    h_free(r);
    return v;
}

/* Reads one pushed message and checks its kind, (pattern,) channel and payload. */
static void expect_msg(int fd, int push, const char *kind, const char *pat, const char *ch,
                       const char *payload)
{
    struct h_reply *r = h_read(fd);
    h_assert(r != NULL, "no %s on %s", kind, ch);
    const struct resp_value *v = r->v;
    size_t want = pat != NULL ? 4 : 3;
    h_assert(v->type == (push ? RESP_PUSH : RESP_ARRAY) && v->n == want,
             "not a %s: %.200s", kind, r->raw);
    h_assert(h_str_is(&v->elems[0], kind), "kind: %.200s", r->raw);
    size_t i = 1;
    if (pat != NULL)
        h_assert(h_str_is(&v->elems[i++], pat), "pattern: %.200s", r->raw);
    h_assert(h_str_is(&v->elems[i++], ch), "channel: %.200s", r->raw);
    h_assert(h_str_is(&v->elems[i], payload), "want %s, got %.200s", payload, r->raw);
    h_free(r);
}

static void expect_confirm(int fd, int push, const char *kind, const char *name, int64_t n)
{
    struct h_reply *r = h_read(fd);
    h_assert(r != NULL && r->v->type == (push ? RESP_PUSH : RESP_ARRAY) && r->v->n == 3,
             "no %s confirmation", kind);
    h_assert(h_str_is(&r->v->elems[0], kind), "%.200s", r->raw);
    if (name != NULL)
        h_assert(h_str_is(&r->v->elems[1], name), "%.200s", r->raw);
    else
        h_assert(r->v->elems[1].type == RESP_NULL, "%.200s", r->raw);
    h_assert(r->v->elems[2].type == RESP_INT && r->v->elems[2].integer == n, "count: %.200s",
             r->raw);
    h_free(r);
}

static void start(const char *extra)
{
    char conf[512];
    snprintf(conf, sizeof(conf), "%s%s", CONF, extra != NULL ? extra : "");
    ck_assert_int_eq(h_start(&d, conf), 0);
    h_on_fail(cleanup);
}

START_TEST(every_message_once_in_order_on_both_edges)
{
    start(NULL);
    int a, b;
    h_assert(h_edge_pair(&d, &a, &b) == 0, "no two edges answered");
    int ea = h_edge_of(a), eb = h_edge_of(b);
    h_assert(ea > 0 && eb > 0 && ea != eb, "same edge: %d %d", ea, eb);
    int p = h_connect(d.port);
    h_assert(p >= 0, "no publisher");
    h_sendv(a, "SUBSCRIBE", "news", NULL);
    expect_confirm(a, 0, "subscribe", "news", 1);
    h_sendv(a, "PSUBSCRIBE", "n*", NULL);
    expect_confirm(a, 0, "psubscribe", "n*", 2);
    h_sendv(b, "SUBSCRIBE", "news", "other", NULL);
    expect_confirm(b, 0, "subscribe", "news", 1);
    expect_confirm(b, 0, "subscribe", "other", 2);
    /* the colo's receivers: 2 channel subscribers + 1 pattern */
    h_assert(integer(p, "PUBLISH", "news", "m0", NULL) == 3, "PUBLISH's count");
    h_assert(integer(p, "PUBLISH", "zzz", "x", NULL) == 0, "PUBLISH to nobody");
    h_assert(integer(p, "PUBLISH", "nobody", "x", NULL) == 1, "PUBLISH to the pattern only");
    h_assert(integer(p, "PUBLISH", "other", "o0", NULL) == 1, "PUBLISH other");
    expect_msg(a, 0, "message", NULL, "news", "m0");
    expect_msg(a, 0, "pmessage", "n*", "news", "m0");
    expect_msg(a, 0, "pmessage", "n*", "nobody", "x");
    expect_msg(b, 0, "message", NULL, "news", "m0");
    expect_msg(b, 0, "message", NULL, "other", "o0");
    /* a burst, pipelined: exactly once each, in publish order */
    enum { N = 500 };
    char m[32];
    for (int i = 1; i <= N; i++) {
        snprintf(m, sizeof(m), "m%d", i);
        h_sendv(p, "PUBLISH", "news", m, NULL);
    }
    for (int i = 1; i <= N; i++) {
        struct h_reply *r = h_read(p);
        h_assert(r != NULL && r->v->type == RESP_INT && r->v->integer == 3, "reply %d", i);
        h_free(r);
    }
    for (int i = 1; i <= N; i++) {
        snprintf(m, sizeof(m), "m%d", i);
        expect_msg(a, 0, "message", NULL, "news", m);
        expect_msg(a, 0, "pmessage", "n*", "news", m);
        expect_msg(b, 0, "message", NULL, "news", m);
    }
    /* nothing more: a PING answers next */
    h_sendv(b, "PING", NULL);
    struct h_reply *r = h_read(b);
    h_assert(r != NULL && r->v->type == RESP_ARRAY && r->v->n == 2 &&
             h_str_is(&r->v->elems[0], "pong") && h_str_is(&r->v->elems[1], ""),
             "PING in subscribed mode: %.200s", r != NULL ? r->raw : "(none)");
    h_free(r);
    /* host-wide answers from the publisher's edge, whichever it is */
    r = h_call(p, "PUBSUB", "NUMSUB", "news", "other", "none", NULL);
    h_assert(r->v->type == RESP_ARRAY && r->v->n == 6 && r->v->elems[1].integer == 2 &&
             r->v->elems[3].integer == 1 && r->v->elems[5].integer == 0, "NUMSUB: %.300s",
             r->raw);
    h_free(r);
    h_assert(integer(p, "PUBSUB", "NUMPAT", NULL) == 1, "NUMPAT");
    r = h_call(p, "PUBSUB", "CHANNELS", "n*", NULL);
    h_assert(r->v->type == RESP_ARRAY && r->v->n == 1 && h_str_is(&r->v->elems[0], "news"),
             "CHANNELS n*: %.300s", r->raw);
    h_free(r);
    r = h_call(p, "PUBSUB", "CHANNELS", NULL);
    h_assert(r->v->type == RESP_ARRAY && r->v->n == 2, "CHANNELS: %.300s", r->raw);
    h_free(r);
    char val[32];
    h_assert(h_info_field(d.port, "pubsub_channels", val, sizeof(val)) == 0 &&
             strcmp(val, "2") == 0, "INFO pubsub_channels %s", val);
    h_assert(h_info_field(d.port, "pubsub_patterns", val, sizeof(val)) == 0 &&
             strcmp(val, "1") == 0, "INFO pubsub_patterns %s", val);
    h_assert(h_info_int(d.port, "pubsub_messages_delivered") >= 3 * N, "delivered count");
    /* a subscriber that leaves is no longer counted */
    close(a);
    int64_t until = h_now_ms() + 5000;
    while (h_now_ms() < until && integer(p, "PUBSUB", "NUMPAT", NULL) != 0)
        h_sleep_ms(20);
    h_assert(integer(p, "PUBSUB", "NUMPAT", NULL) == 0, "NUMPAT after close");
    h_assert(integer(p, "PUBLISH", "news", "last", NULL) == 1, "count after close");
    expect_msg(b, 0, "message", NULL, "news", "last");
    close(b);
    close(p);
    h_stop(&d);
}
END_TEST

START_TEST(resp3_pushes_and_resp2_subscribed_mode_rules)
{
    start(NULL);
    int a, b;
    h_assert(h_edge_pair(&d, &a, &b) == 0, "no two edges answered");
    struct h_reply *r = h_call(a, "HELLO", "3", NULL);
    h_free(r);
    h_sendv(a, "SUBSCRIBE", "c3", NULL);
    expect_confirm(a, 1, "subscribe", "c3", 1);
    /* RESP3: other commands still run, PING is PONG */
    r = h_call(a, "GET", "nokey", NULL);
    h_assert(r->v->type == RESP_NULL, "GET in RESP3 subscribed mode: %.200s", r->raw);
    h_free(r);
    r = h_call(a, "PING", NULL);
    h_assert(r->v->type == RESP_SIMPLE && h_str_is(r->v, "PONG"), "%.200s", r->raw);
    h_free(r);
    h_assert(integer(b, "PUBLISH", "c3", "hi", NULL) == 1, "PUBLISH to a RESP3 subscriber");
    expect_msg(a, 1, "message", NULL, "c3", "hi");
    h_sendv(a, "PSUBSCRIBE", "c?", NULL);
    expect_confirm(a, 1, "psubscribe", "c?", 2);
    r = h_call(a, "CLIENT", "INFO", NULL);
    h_assert(strstr(r->raw, " flags=P ") != NULL && strstr(r->raw, " sub=1 psub=1 ") != NULL,
             "CLIENT INFO of a subscriber: %.300s", r->raw);
    h_free(r);
    /* seen from the other edge: TYPE pubsub lists it, TYPE normal does not */
    r = h_call(b, "CLIENT", "LIST", "TYPE", "pubsub", NULL);
    h_assert(strstr(r->raw, " flags=P ") != NULL && strstr(r->raw, " sub=1 psub=1 ") != NULL,
             "CLIENT LIST TYPE pubsub: %.300s", r->raw);
    h_free(r);
    r = h_call(b, "CLIENT", "LIST", "TYPE", "normal", NULL);
    h_assert(strstr(r->raw, " flags=P ") == NULL, "CLIENT LIST TYPE normal: %.300s", r->raw);
    h_free(r);
    h_assert(integer(b, "PUBLISH", "c3", "two", NULL) == 2, "channel + pattern");
    expect_msg(a, 1, "message", NULL, "c3", "two");
    expect_msg(a, 1, "pmessage", "c?", "c3", "two");
    h_sendv(a, "PUNSUBSCRIBE", NULL);
    expect_confirm(a, 1, "punsubscribe", "c?", 1);
    h_sendv(a, "PUNSUBSCRIBE", NULL);
    expect_confirm(a, 1, "punsubscribe", NULL, 1);
    /* RESP2 on the other edge: the subset, Redis's error text */
    h_sendv(b, "SUBSCRIBE", "x", "y", NULL);
    expect_confirm(b, 0, "subscribe", "x", 1);
    expect_confirm(b, 0, "subscribe", "y", 2);
    r = h_call(b, "GET", "k", NULL);
    h_assert(r->v->type == RESP_ERROR &&
             h_str_is(r->v, "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / "
                            "PING / QUIT / RESET are allowed in this context"),
             "%.300s", r->raw);
    h_free(r);
    r = h_call(b, "PUBSUB", "NUMPAT", NULL);
    h_assert(r->v->type == RESP_ERROR && strstr(r->raw, "'pubsub|numpat'") != NULL, "%.300s",
             r->raw);
    h_free(r);
    r = h_call(b, "PING", "hey", NULL);
    h_assert(r->v->type == RESP_ARRAY && r->v->n == 2 && h_str_is(&r->v->elems[1], "hey"),
             "%.200s", r->raw);
    h_free(r);
    h_sendv(b, "UNSUBSCRIBE", NULL);
    expect_confirm(b, 0, "unsubscribe", "y", 1);
    expect_confirm(b, 0, "unsubscribe", "x", 0);
    h_sendv(b, "UNSUBSCRIBE", NULL);
    expect_confirm(b, 0, "unsubscribe", NULL, 0);
    r = h_call(b, "GET", "k", NULL); /* out of subscribed mode */
    h_assert(r->v->type == RESP_NULL, "%.200s", r->raw);
    h_free(r);
    /* RESET leaves every subscription, without confirmations */
    h_sendv(b, "SUBSCRIBE", "z", NULL);
    expect_confirm(b, 0, "subscribe", "z", 1);
    r = h_call(b, "RESET", NULL);
    h_assert(r->v->type == RESP_SIMPLE && h_str_is(r->v, "RESET"), "%.200s", r->raw);
    h_free(r);
    h_assert(integer(a, "PUBLISH", "z", "gone", NULL) == 0, "RESET left z");
    r = h_call(b, "PUBSUB", "NUMSUB", "z", NULL);
    h_assert(r->v->n == 2 && r->v->elems[1].integer == 0, "%.200s", r->raw);
    h_free(r);
    close(a);
    close(b);
    h_stop(&d);
}
END_TEST

/* VmRSS of pid in kB, -1 if unknown. */
static long rss_kb(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    if (f != NULL)
        fclose(f);
    return kb;
}

START_TEST(a_subscriber_that_does_not_read_is_closed_at_the_pubsub_limit)
{
    start("client-output-buffer-limit 256mb 64mb 60s pubsub 1mb 256kb 2\n");
    int s = h_connect(d.port), p = h_connect(d.port);
    h_assert(s >= 0 && p >= 0, "connections");
    int rcv = 4096;
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
    int edge = h_edge_of(s);
    h_sendv(s, "SUBSCRIBE", "flood", NULL);
    expect_confirm(s, 0, "subscribe", "flood", 1);
    long before = rss_kb(edge);
    static char big[16384];
    memset(big, 'f', sizeof(big) - 1);
    /* 64 MB published; the subscriber reads nothing */
    int closed = 0;
    for (int i = 0; i < 4096 && !closed; i++) {
        h_assert(integer(p, "PUBLISH", "flood", big, NULL) >= 0, "PUBLISH");
        if (i % 256 == 255)
            closed = h_info_int(d.port, "pubsub_output_limit_closed") >= 1;
    }
    int64_t until = h_now_ms() + 5000;
    while (!closed && h_now_ms() < until) {
        closed = h_info_int(d.port, "pubsub_output_limit_closed") >= 1;
        h_sleep_ms(20);
    }
    h_assert(closed, "the subscriber was not closed");
    long after = rss_kb(edge);
    h_assert(before > 0 && after > 0 && (h_sanitized() || after - before < 48 * 1024),
             "the edge grew from %ld to %ld kB", before, after);
    h_assert(integer(p, "PUBLISH", "flood", "x", NULL) == 0, "its subscription went with it");
    close(s);
    close(p);
    h_stop(&d);
}
END_TEST

START_TEST(a_message_over_a_quarter_of_the_bus_is_refused)
{
    start("pubsub-bus-size 64kb\n");
    int p = h_connect(d.port);
    static char big[20000];
    memset(big, 'b', sizeof(big) - 1);
    struct h_reply *r = h_call(p, "PUBLISH", "c", big, NULL);
    h_assert(r->v->type == RESP_ERROR && strstr(r->raw, "too big") != NULL, "%.200s", r->raw);
    h_free(r);
    h_assert(integer(p, "PUBLISH", "c", "small", NULL) == 0, "a small one");
    close(p);
    h_stop(&d);
}
END_TEST

/* colos 2, one edge each: a PUBLISH in one colo reaches the other colo's
 * subscriber (through that colo's bus), and answers its own colo's count. */
static void two_colos(const char *extra, int routed)
{
    char conf[256];
    snprintf(conf, sizeof(conf), "colos 2\nedge-workers 1\nhot-owners 1\ncold-owners 1\n%s",
             extra);
    ck_assert_int_eq(h_start(&d, conf), 0);
    h_on_fail(cleanup);
    int a, b;
    h_assert(h_edge_pair(&d, &a, &b) == 0, "no two edges (colos) answered");
    char ca[64] = "", cb[64] = "";
    struct h_reply *r = h_call(a, "INFO", "server", NULL);
    const char *p = strstr(r->raw, "colo:");
    if (p != NULL)
        sscanf(p + 5, "%63[^\r]", ca);
    h_free(r);
    r = h_call(b, "INFO", "server", NULL);
    p = strstr(r->raw, "colo:");
    if (p != NULL)
        sscanf(p + 5, "%63[^\r]", cb);
    h_free(r);
    h_assert(strcmp(ca, cb) != 0, "same colo: '%s' '%s'", ca, cb);
    h_sendv(a, "SUBSCRIBE", "x", NULL);
    expect_confirm(a, 0, "subscribe", "x", 1);
    h_sendv(b, "PSUBSCRIBE", "*", NULL);
    expect_confirm(b, 0, "psubscribe", "*", 1);
    int pb = h_connect(d.port);
    /* pb lands on one of the two colos: its own counts 1 either way */
    for (int i = 0; i < 20; i++) {
        char m[16];
        snprintf(m, sizeof(m), "m%d", i);
        h_assert(integer(pb, "PUBLISH", "x", m, NULL) == 1, "its own colo's count");
    }
    for (int i = 0; i < 20; i++) {
        char m[16];
        snprintf(m, sizeof(m), "m%d", i);
        expect_msg(a, 0, "message", NULL, "x", m);
        expect_msg(b, 0, "pmessage", "*", "x", m);
    }
    /* through the channel's owner (its push links), or with owner-push no
     * appended to each colo's bus of the host by the publisher's edge */
    int64_t local = h_info_int(d.port, "pubsub_published_local");
    h_assert(routed ? local == 0 : local == 20, "published_local %lld", (long long)local);
    close(a);
    close(b);
    close(pb);
    h_stop(&d);
}

START_TEST(a_publish_reaches_the_other_colo_through_the_owner)
{
    two_colos("", 1);
}
END_TEST

START_TEST(with_owner_push_off_a_publish_reaches_the_hosts_colos)
{
    two_colos("owner-push no\n", 0);
}
END_TEST

static int64_t published_local(void)
{
    char v[32];
    return h_info_field(d.port, "pubsub_published_local", v, sizeof(v)) == 0
               ? strtoll(v, NULL, 10) : -1;
}

START_TEST(a_publishers_order_holds_across_the_switch_to_the_fallback_and_back)
{
    start(NULL);
    int pub, sub;
    h_assert(h_edge_pair(&d, &pub, &sub) == 0, "no second edge answered");
    h_assert(h_sendv(sub, "SUBSCRIBE", "sw", NULL) == 0, "SUBSCRIBE");
    expect_confirm(sub, 0, "subscribe", "sw", 1);
    int64_t local0 = published_local(), n = 0;
    int kills = 0;
    int64_t t0 = h_now_ms(), next_kill = t0 + 400;
    char m[32];
    /* a steady stream for 3 s; the channel's owner killed at 0.4 s and, once
     * the master has it back, again */
    while (h_now_ms() - t0 < 3000 && n < 200000) {
        snprintf(m, sizeof(m), "%lld", (long long)++n);
        h_assert(integer(pub, "PUBLISH", "sw", m, NULL) >= 0, "PUBLISH %s", m);
        if (kills < 2 && h_now_ms() >= next_kill) {
            pid_t o = h_child(&d, "hotkvd: owner cold/0", 0);
            if (o > 0 && kill(o, SIGKILL) == 0) {
                kills++;
                next_kill = h_now_ms() + 1200;
            }
        }
        if (n % 50 == 0)
            h_sleep_ms(1);
    }
    h_assert(kills == 2, "the owner was killed %d times", kills);
    int64_t local = published_local() - local0;
    h_assert(local > 0, "no PUBLISH took the local fallback while the owner was down");
    /* the owner route back: a PUBLISH that does not count as local (10 s) */
    int64_t end = h_now_ms() + 10000, before;
    do {
        before = published_local();
        snprintf(m, sizeof(m), "%lld", (long long)++n);
        integer(pub, "PUBLISH", "sw", m, NULL);
        h_sleep_ms(50);
    } while (published_local() != before && h_now_ms() < end);
    h_assert(published_local() == before, "PUBLISH never went through the owner again");
    int64_t last = n, heard = 0, prev = 0;
    for (int i = 0; i < 300000 && prev < last; i++) {
        struct h_reply *r = h_read(sub);
        h_assert(r != NULL, "the stream stopped at %lld of %lld", (long long)prev,
                 (long long)last);
        h_assert(r->v->type == RESP_ARRAY && r->v->n == 3 && r->v->elems[2].type == RESP_BULK,
                 "not a message: %.200s", r->raw);
        int64_t k = strtoll(r->v->elems[2].str, NULL, 10);
        h_assert(k > prev, "message %lld after %lld: order broken (or a duplicate)",
                 (long long)k, (long long)prev);
        prev = k;
        heard++;
        h_free(r);
    }
    fprintf(stderr, "pubsub: %lld published (%lld through the local fallback), %lld heard in "
            "order, %lld lost with the killed owners\n", (long long)last, (long long)local,
            (long long)heard, (long long)(last - heard));
    h_assert(heard >= last / 2, "more than half the stream lost (%lld of %lld heard)",
             (long long)heard, (long long)last);
    close(pub);
    close(sub);
    h_assert(h_stop(&d) == 0, "unclean stop");
}
END_TEST

START_TEST(redis_py_pubsub_interop)
{
    if (access("/usr/bin/python3", X_OK) != 0 ||
        system("/usr/bin/python3 -c 'import redis' >/dev/null 2>&1") != 0) {
        fprintf(stderr, "SKIP redis-py: /usr/bin/python3 with redis not installed\n");
        return;
    }
    start(NULL);
    char port[16], out[4096];
    snprintf(port, sizeof(port), "%d", d.port);
    char *py[] = {"/usr/bin/python3", "tests/integration/pubsub_redispy.py", port, NULL};
    int rc = h_run(py, NULL, out, sizeof(out), 30000);
    h_assert(rc == 0, "redis-py exited %d: %s", rc, out);
    h_assert(strstr(out, "ok\n") != NULL, "%s", out);
    h_stop(&d);
}
END_TEST

Suite *pubsub_suite(void)
{
    Suite *s = suite_create("pubsub");
    TCase *tc = tcase_create("pubsub");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, every_message_once_in_order_on_both_edges);
    tcase_add_test(tc, resp3_pushes_and_resp2_subscribed_mode_rules);
    tcase_add_test(tc, a_subscriber_that_does_not_read_is_closed_at_the_pubsub_limit);
    tcase_add_test(tc, a_message_over_a_quarter_of_the_bus_is_refused);
    tcase_add_test(tc, a_publish_reaches_the_other_colo_through_the_owner);
    tcase_add_test(tc, with_owner_push_off_a_publish_reaches_the_hosts_colos);
    tcase_add_test(tc, a_publishers_order_holds_across_the_switch_to_the_fallback_and_back);
    tcase_add_test(tc, redis_py_pubsub_interop);
    suite_add_tcase(s, tc);
    return s;
}
