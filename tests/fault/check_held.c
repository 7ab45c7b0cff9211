/*
 * check_held.c - what one client can make an edge hold (issue 25, item 3):
 * every byte held for a client's answers counts against its
 * client-output-buffer-limit, and nothing is run behind a request that
 * never finishes.  Each case starts the real daemon (one edge, so the
 * edge's memory is the client's), attacks it with a client that never
 * reads (SO_RCVBUF 4 KB), and samples the edge's RssAnon from
 * /proc/<pid>/status every 10 ms while it runs: the growth must stay under
 * the hard limit plus SLACK_KB (allocator and kernel noise, far below the
 * hundreds of MB the unbounded cases reach).
 *
 * - HTTP: GET /v1/watch/KEY then 600 pipelined GETs of a 512 KB value: the
 *   stream says Connection: close and no request behind it is run (their
 *   slots would hold 300 MB); the stream still carries writes.
 * - HTTP: a long poll held, then the same 600 GETs: their replies wait in
 *   slots behind the poll, are counted, and the client is closed at the
 *   limit (INFO client_output_buffer_limit_disconnections).
 * - RESP: a GET waiting on a stopped owner, then 600 cached GETs of 512 KB:
 *   same; first the plain slow reader (no slow head), closed as before and
 *   now counted.
 * - RESP: MONITOR never read while another client writes: closed at the
 *   limit, counted, memory bounded.
 * - RESP: 200 durable SETs of 1 MB while the owner's fsync is stalled (the
 *   stall shim): the edge keeps each value for retries, so past
 *   client-max-pending-bytes the writer is not read; all are answered once
 *   the disk is.
 * Every loop is bounded in time and count; stopped owners are resumed by a
 * guardian whatever happens; daemons are stopped by pid.
 */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/harness.h"

#define HARD_MB 32
#define CONF_LIMIT "client-output-buffer-limit 32mb 16mb 60s\n"
#define CONF_BASE                                                                               \
    "edge-workers 1\nhot-owners 1\ncold-owners 1\ncache-memory 64mb\n"                          \
    "class big pattern big:* pool hot\n"
#define BIG_LEN (512 * 1024)
#define NGETS 600 /* 300 MB of replies if every one were held */
#define SMALL_LEN (40 * 1024)
#define NSMALL 7000 /* 280 MB */
#define SLACK_KB (24 * 1024)

static int start(struct daemon *d, int *hp, const char *extra)
{
    char conf[2048];
    setvbuf(stdout, NULL, _IOLBF, 0); /* the lines survive a failed check's exit */
    *hp = h_free_port();
    snprintf(conf, sizeof(conf), "%s%shttp-port %d\n%s", CONF_BASE, CONF_LIMIT, *hp, extra);
    int rc = h_start(d, conf);
    ck_assert_msg(rc == 0, "daemon did not start");
    return rc;
}


/* The one edge's pid (edge-workers 1). */
static pid_t edge_pid(const struct daemon *d)
{
    int fd = h_connect(d->port);
    ck_assert_int_ge(fd, 0);
    pid_t p = h_edge_of(fd);
    close(fd);
    ck_assert_int_gt(p, 0);
    return p;
}

/* A client that never reads: 4 KB receive buffer, non-blocking after connect. */
static int connect_small(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
    return fd;
}

/* Sends all of p (blocking: the edge reads what it is sent). */
static void send_all(int fd, const char *p, size_t n)
{
    ck_assert_int_eq(h_send(fd, p, n), 0);
}

/* key = len bytes, read three times (into the colo cache if it fits). */
static void set_val(const struct daemon *d, const char *key, size_t len)
{
    int fd = h_connect(d->port);
    ck_assert_int_ge(fd, 0);
    char *v = malloc(len + 1);
    memset(v, 'v', len);
    v[len] = '\0';
    struct h_reply *r = h_cmdv(fd, "SET", key, v, NULL);
    ck_assert_msg(r != NULL && r->raw[0] == '+', "SET %s", key);
    h_free(r);
    free(v);
    for (int i = 0; i < 3; i++) { /* into the colo cache */
        r = h_cmdv(fd, "GET", key, NULL);
        ck_assert_msg(r != NULL && r->v->len == len, "GET %s", key);
        h_free(r);
    }
    close(fd);
}

/* n copies of one request, concatenated (free it). */
static char *repeat(const char *req, int n, size_t *len)
{
    size_t l = strlen(req);
    char *p = malloc(l * (size_t)n);
    for (int i = 0; i < n; i++)
        memcpy(p + (size_t)i * l, req, l);
    *len = l * (size_t)n;
    return p;
}

/* The edge's RssAnon, sampled every 10 ms for ms (or, with a counter, until
 * it passes `above` and 300 ms more); the largest growth over base, kB. */
struct sample {
    long base_kb, max_kb;
    int samples;
};

static void sample_start(struct sample *s, pid_t edge)
{
    memset(s, 0, sizeof(*s));
    s->base_kb = s->max_kb = h_proc_kb(edge, "RssAnon");
    ck_assert_int_gt(s->base_kb, 0);
}

static void sample_run(struct sample *s, pid_t edge, int ms, const struct daemon *d,
                       const char *counter, int64_t above)
{
    int64_t end = h_now_ms() + ms, seen_at = -1;
    while (h_now_ms() < end && (seen_at < 0 || h_now_ms() < seen_at + 300)) {
        long v = h_proc_kb(edge, "RssAnon");
        if (v > s->max_kb)
            s->max_kb = v;
        s->samples++;
        if (counter != NULL && seen_at < 0 && s->samples % 10 == 0 &&
            h_info_int(d->port, counter) > above)
            seen_at = h_now_ms();
        h_sleep_ms(10);
    }
}

static long grown_kb(const struct sample *s)
{
    return s->max_kb - s->base_kb;
}

static int64_t closed_count(const struct daemon *d)
{
    return h_info_int(d->port, "client_output_buffer_limit_disconnections");
}

static const char get_big_http[] = "GET /v1/kv/big:v HTTP/1.1\r\nHost: t\r\n\r\n";

START_TEST(nothing_behind_a_watch_is_run_or_held)
{
    struct daemon d;
    int hp;
    start(&d, &hp, "");
    set_val(&d, "big:v", BIG_LEN);
    pid_t edge = edge_pid(&d);
    int64_t ok0 = h_info_int(d.port, "http_requests_2xx");
    struct sample s;
    sample_start(&s, edge);
    int fd = connect_small(hp);
    size_t n;
    char *gets = repeat(get_big_http, NGETS, &n);
    const char *w = "GET /v1/watch/wk?format=ndjson HTTP/1.1\r\nHost: t\r\n\r\n";
    send_all(fd, w, strlen(w));
    send_all(fd, gets, n);
    free(gets);
    sample_run(&s, edge, 3000, NULL, NULL, 0);
    int64_t ran = h_info_int(d.port, "http_requests_2xx") - ok0;
    printf("[held] watch + %d pipelined GETs of %d KB, never read: %lld requests answered 2xx, "
           "edge RssAnon %ld kB -> max %ld kB (+%ld kB, %d samples)\n",
           NGETS, BIG_LEN / 1024, (long long)ran, s.base_kb, s.max_kb, grown_kb(&s), s.samples);
    ck_assert_msg(grown_kb(&s) < HARD_MB * 1024 + SLACK_KB,
                  "the edge grew by %ld kB for one client (limit %d MB)", grown_kb(&s), HARD_MB);
    ck_assert_msg(ran <= 1, "%lld requests behind the watch were run", (long long)ran);
    /* the stream: Connection: close, and it still carries a write */
    int wf = h_connect(d.port);
    struct h_reply *r = h_cmdv(wf, "SET", "wk", "after", NULL);
    ck_assert_ptr_nonnull(r);
    h_free(r);
    close(wf);
    static char in[1 << 16];
    size_t got = 0;
    int64_t end = h_now_ms() + 5000;
    while (h_now_ms() < end && got < sizeof(in) - 1 && strstr(in, "\"after\"") == NULL) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 200) != 1)
            continue;
        ssize_t k = read(fd, in + got, sizeof(in) - 1 - got);
        if (k <= 0)
            break;
        got += (size_t)k;
        in[got] = '\0';
    }
    const char *eoh = strstr(in, "\r\n\r\n");
    printf("[held] the stream's head: %.*s\n", eoh != NULL ? (int)(eoh - in) : 0, in);
    ck_assert_msg(strstr(in, "\r\nConnection: close\r\n") != NULL, "%s", in);
    ck_assert_msg(strstr(in, "\"value\":\"after\"") != NULL, "no event for the write: %s", in);
    int statuses = 0;
    for (const char *p = in; (p = strstr(p, "HTTP/1.1 ")) != NULL; p++)
        statuses++;
    ck_assert_int_eq(statuses, 1);
    close(fd);
    h_stop(&d);
}
END_TEST

START_TEST(replies_behind_a_held_poll_count_against_the_output_limit)
{
    struct daemon d;
    int hp;
    start(&d, &hp, "");
    set_val(&d, "big:v", BIG_LEN);
    int c = h_connect(d.port);
    struct h_reply *r = h_cmdv(c, "SET", "pk", "1", NULL);
    h_free(r);
    close(c);
    /* the poll's index: what GET /v1/kv/pk says now */
    int g = h_connect(hp);
    const char *q = "GET /v1/kv/pk HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    send_all(g, q, strlen(q));
    char head[4096] = {0};
    size_t hl = 0;
    int64_t end = h_now_ms() + 5000;
    while (h_now_ms() < end && hl < sizeof(head) - 1 && strstr(head, "\r\n\r\n") == NULL) {
        ssize_t k = read(g, head + hl, sizeof(head) - 1 - hl);
        if (k <= 0)
            break;
        hl += (size_t)k;
    }
    close(g);
    const char *ix = strstr(head, "X-Hotkvd-Index: ");
    ck_assert_msg(ix != NULL, "%s", head);
    unsigned long long index = strtoull(ix + 16, NULL, 10);
    pid_t edge = edge_pid(&d);
    int64_t closed0 = closed_count(&d);
    struct sample s;
    sample_start(&s, edge);
    int fd = connect_small(hp);
    char poll_req[256];
    snprintf(poll_req, sizeof(poll_req),
             "GET /v1/kv/pk?index=%llu&wait=20s HTTP/1.1\r\nHost: t\r\n\r\n", index);
    send_all(fd, poll_req, strlen(poll_req));
    size_t n;
    char *gets = repeat(get_big_http, NGETS, &n);
    send_all(fd, gets, n);
    free(gets);
    sample_run(&s, edge, 8000, &d, "client_output_buffer_limit_disconnections", closed0);
    int64_t closed = closed_count(&d) - closed0;
    int64_t held = h_info_int(d.port, "http_polls_held");
    printf("[held] poll + %d pipelined GETs of %d KB, never read: closed by the output limit "
           "%lld time(s), polls held after %lld, edge RssAnon %ld kB -> max %ld kB (+%ld kB)\n",
           NGETS, BIG_LEN / 1024, (long long)closed, (long long)held, s.base_kb, s.max_kb,
           grown_kb(&s));
    ck_assert_msg(grown_kb(&s) < HARD_MB * 1024 + SLACK_KB,
                  "the edge grew by %ld kB for one client (limit %d MB)", grown_kb(&s), HARD_MB);
    ck_assert_msg(closed == 1, "closed by the limit: %lld", (long long)closed);
    ck_assert_int_eq(held, 0);
    close(fd);
    h_stop(&d);
}
END_TEST

/* One RESP client that never reads sends head (or nothing) then n GETs of
 * key; the edge sampled until the output limit closes it (8 s at most).
 * Returns how many clients the limit closed meanwhile. */
static int64_t resp_attack(const struct daemon *d, pid_t edge, const char *head, const char *key,
                           int n, struct sample *s)
{
    char one[128];
    snprintf(one, sizeof(one), "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(key), key);
    size_t len;
    char *gets = repeat(one, n, &len);
    int64_t closed0 = closed_count(d);
    sample_start(s, edge);
    int fd = connect_small(d->port);
    if (head != NULL)
        send_all(fd, head, strlen(head));
    send_all(fd, gets, len);
    free(gets);
    sample_run(s, edge, 8000, d, "client_output_buffer_limit_disconnections", closed0);
    close(fd);
    return closed_count(d) - closed0;
}

START_TEST(replies_behind_a_slow_owner_count_against_the_output_limit)
{
    struct daemon d;
    int hp;
    /* big:* is read from the hot owner (a flight: too big for the colo
     * cache), small:* from the colo cache; the cold owner, stopped below,
     * serves the misses that make the head wait (miss-wait 10 s) */
    start(&d, &hp, "miss-wait 10s\nclient-max-pending 8192\n"
                   "class small pattern small:* pool hot fresh 1h keep 2h\n");
    set_val(&d, "big:v", BIG_LEN);
    set_val(&d, "small:v", SMALL_LEN);
    pid_t edge = edge_pid(&d);
    struct sample s;
    /* a slow reader with nothing owed: closed at the limit (as before), counted */
    int64_t closed = resp_attack(&d, edge, NULL, "big:v", NGETS, &s);
    printf("[held] %d pipelined GETs of %d KB, never read: closed by the output limit %lld "
           "time(s), edge RssAnon %ld kB -> max %ld kB (+%ld kB)\n",
           NGETS, BIG_LEN / 1024, (long long)closed, s.base_kb, s.max_kb, grown_kb(&s));
    long g0 = grown_kb(&s);

    /* behind a read its (stopped) owner does not answer, the replies wait in
     * slots: a flight's answer to every GET at once, then cached answers
     * within their dispatch (a write would not do as the head: reads behind
     * a client's write go to the owner, read-your-writes) */
    pid_t owner = h_child(&d, "hotkvd: owner cold/0", 0);
    ck_assert_int_gt(owner, 0);
    int guard = h_sigcont_guard(owner, 0, NULL);
    kill(owner, SIGSTOP);
    int64_t c1 = resp_attack(&d, edge, "*2\r\n$3\r\nGET\r\n$6\r\nnever1\r\n", "big:v",
                             NGETS, &s);
    printf("[held] a GET waiting on a stopped owner + %d pipelined GETs of %d KB (one flight), "
           "never read: closed by the output limit %lld time(s), edge RssAnon %ld kB -> max %ld "
           "kB (+%ld kB)\n",
           NGETS, BIG_LEN / 1024, (long long)c1, s.base_kb, s.max_kb, grown_kb(&s));
    long g1 = grown_kb(&s);
    int64_t hits0 = h_info_int(d.port, "cache_hits");
    int64_t c2 = resp_attack(&d, edge, "*2\r\n$3\r\nGET\r\n$6\r\nnever2\r\n", "small:v",
                             NSMALL, &s);
    int64_t hits = h_info_int(d.port, "cache_hits") - hits0;
    kill(owner, SIGCONT);
    close(guard);
    printf("[held] a GET waiting on a stopped owner + %d pipelined GETs of %d KB (%lld from the "
           "colo cache), never read: closed by the output limit %lld time(s), edge RssAnon %ld "
           "kB -> max %ld kB (+%ld kB)\n",
           NSMALL, SMALL_LEN / 1024, (long long)hits, (long long)c2, s.base_kb, s.max_kb,
           grown_kb(&s));
    long lim = HARD_MB * 1024 + SLACK_KB;
    ck_assert_msg(h_sanitized() || (g0 < lim && g1 < lim && grown_kb(&s) < lim),
                  "the edge grew by %ld, %ld, %ld kB for one client (limit %d MB)", g0, g1,
                  grown_kb(&s), HARD_MB);
    ck_assert_msg(hits > 100, "the small GETs were not cache hits (%lld)", (long long)hits);
    ck_assert_msg(closed == 1 && c1 == 1 && c2 == 1, "closed by the limit: %lld, %lld, %lld",
                  (long long)closed, (long long)c1, (long long)c2);
    ck_assert(h_ping(d.port));
    h_stop(&d);
}
END_TEST

START_TEST(a_monitor_that_never_reads_is_closed_at_the_output_limit)
{
    struct daemon d;
    int hp;
    /* a lower limit: the lines come from real commands, not faster than the
     * monitor ring takes them (256 KB per edge per 10 ms poll) */
    start(&d, &hp, "client-output-buffer-limit 2mb 1mb 60s\n");
    pid_t edge = edge_pid(&d);
    int64_t closed0 = closed_count(&d);
    struct sample s;
    sample_start(&s, edge);
    int m = connect_small(d.port);
    send_all(m, "MONITOR\r\n", 9);
    h_sleep_ms(200);
    int w = h_connect(d.port);
    ck_assert_int_ge(w, 0);
    static char v[3072 + 1];
    memset(v, 'm', sizeof(v) - 1);
    int sets = 0;
    int64_t end = h_now_ms() + 20000;
    for (; sets < 6000 && h_now_ms() < end; sets++) {
        struct h_reply *r = h_cmdv(w, "SET", "mon:k", v, NULL);
        ck_assert_ptr_nonnull(r);
        h_free(r);
        if (sets % 16 == 0) {
            long a = h_proc_kb(edge, "RssAnon");
            if (a > s.max_kb)
                s.max_kb = a;
            if (closed_count(&d) > closed0)
                break;
        }
        usleep(700);
    }
    close(w);
    sample_run(&s, edge, 300, NULL, NULL, 0);
    int64_t closed = closed_count(&d) - closed0;
    printf("[held] MONITOR never read, %d SETs of 3 KB: closed by the output limit %lld "
           "time(s), edge RssAnon %ld kB -> max %ld kB (+%ld kB)\n",
           sets, (long long)closed, s.base_kb, s.max_kb, grown_kb(&s));
    close(m);
    ck_assert_msg(closed == 1, "closed by the limit: %lld", (long long)closed);
    ck_assert_msg(grown_kb(&s) < 2 * 1024 + SLACK_KB, "grew by %ld kB", grown_kb(&s));
    ck_assert(!h_log_has(&d, "fell a whole ring behind", NULL, NULL));
    h_stop(&d);
}
END_TEST

/* Writes whose owner took them and has not answered (durable, its fsync
 * stalled) keep their values in the edge for retries: past
 * client-max-pending-bytes the client is not read (paused, not closed), and
 * once the disk answers every write is answered. */
START_TEST(writes_waiting_for_owners_pause_the_client_at_its_byte_bound)
{
    struct daemon d;
    char conf[1024], flag[320];
    setvbuf(stdout, NULL, _IOLBF, 0);
    snprintf(conf, sizeof(conf), "%s%sclass dur pattern dur:* durability durable\n"
             "durable-timeout 60s\npersist-max-dirty 1gb\n",
             CONF_BASE, CONF_LIMIT);
    snprintf(flag, sizeof(flag), "%s/stall", h_fixture_dir);
    ck_assert_int_eq(h_start_shim(&d, conf, flag, sizeof(flag)), 0);
    pid_t edge = edge_pid(&d);
    struct h_reply *r;
    int c = h_connect(d.port);
    /* set here, not in the file: a binary without it (the previous one)
     * still starts and shows what it holds */
    r = h_cmdv(c, "CONFIG", "SET", "client-max-pending-bytes", "8mb", NULL);
    printf("[held] CONFIG SET client-max-pending-bytes 8mb: %s\n", r != NULL ? r->raw : "-");
    h_free(r);
    r = h_cmdv(c, "SET", "dur:warm", "1", NULL); /* the owners' files are open */
    ck_assert_msg(r != NULL && r->raw[0] == '+', "warm-up SET");
    h_free(r);
    close(c);
    FILE *f = fopen(flag, "w"); /* from now on the owners' fsyncs wait */
    ck_assert_ptr_nonnull(f);
    fclose(f);
    enum { NSETS = 200, VLEN = 1024 * 1024 };
    static char req[VLEN + 64];
    struct sample s;
    sample_start(&s, edge);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d.port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    int sent = 0, replies = 0;
    size_t at = 0, rl = 0;
    int64_t unstall_at = h_now_ms() + 4000, end = h_now_ms() + 80000, unstalled = -1;
    while (replies < NSETS && h_now_ms() < end) {
        if (at == rl && sent < NSETS) {
            int h = snprintf(req, sizeof(req), "*3\r\n$3\r\nSET\r\n$9\r\ndur:%05d\r\n$%d\r\n",
                             sent, VLEN);
            memset(req + h, 'd', VLEN);
            memcpy(req + h + VLEN, "\r\n", 2);
            rl = (size_t)h + VLEN + 2;
            at = 0;
            sent++;
        }
        struct pollfd p = {fd, POLLIN | (at < rl ? POLLOUT : 0), 0};
        poll(&p, 1, 10);
        if ((p.revents & POLLOUT) && at < rl) {
            ssize_t k = send(fd, req + at, rl - at, MSG_NOSIGNAL);
            if (k > 0)
                at += (size_t)k;
        }
        if (p.revents & POLLIN) {
            char in[4096];
            ssize_t k = read(fd, in, sizeof(in));
            ck_assert_msg(k > 0, "the edge closed the writer");
            for (ssize_t i = 0; i < k; i++)
                replies += in[i] == '\n';
        }
        if (unstalled < 0) {
            long v = h_proc_kb(edge, "RssAnon");
            if (v > s.max_kb)
                s.max_kb = v;
            if (h_now_ms() >= unstall_at) {
                printf("[held] %d SETs of 1 MB (durable, the owner's fsync stalled) sent in 4 "
                       "s, %d answered; edge RssAnon %ld kB -> max %ld kB (+%ld kB)\n",
                       sent - (at < rl), replies, s.base_kb, s.max_kb, grown_kb(&s));
                ck_assert_int_eq(unlink(flag), 0);
                unstalled = h_now_ms();
            }
        }
    }
    printf("[held] after the disk answers: %d of %d SETs answered in %lld ms\n", replies, NSETS,
           (long long)(h_now_ms() - unstalled));
    close(fd);
    ck_assert_msg(grown_kb(&s) < 8 * 1024 + 8 * 1024 + SLACK_KB,
                  "the edge grew by %ld kB for one writer (client-max-pending-bytes 8 MB)",
                  grown_kb(&s));
    ck_assert_int_eq(replies, NSETS);
    h_stop(&d);
}
END_TEST

Suite *held_suite(void)
{
    Suite *s = suite_create("held");
    const struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"watch_pipeline", nothing_behind_a_watch_is_run_or_held},
        {"poll_pipeline", replies_behind_a_held_poll_count_against_the_output_limit},
        {"resp_slots", replies_behind_a_slow_owner_count_against_the_output_limit},
        {"monitor", a_monitor_that_never_reads_is_closed_at_the_output_limit},
        {"pending_writes", writes_waiting_for_owners_pause_the_client_at_its_byte_bound},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_unchecked_fixture(tc, h_dir_setup, h_dir_teardown);
        tcase_set_timeout(tc, 150);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
