/*
 * check_hostile.c - hostile clients against the real daemon.  One TCase per
 * attack.  Each starts the daemon with limits suited to the attack, measures
 * a normal client's GET latency unloaded and again while the attack runs
 * (from a thread of this process), checks the outcome the attacker gets
 * (reply text, connection closed or kept, time to close, edge RSS), and
 * prints what it sent and what happened ("[hostile] ..." lines).
 *
 * The latency bound: p99 during the attack <= 2 x max(p99 unloaded, 5 ms).
 * The 5 ms floor is there because an unloaded p99 on loopback is ~0.1 ms and
 * the test box may have 2 cores shared by the daemon, the attacker, the
 * measuring client and whatever else builds or tests there: twice 0.1 ms is
 * below scheduler noise, and a 1 ms floor was crossed (p99 4.1 ms) on a box
 * running other suites at once.  An edge the attack starves answers in tens
 * or hundreds of ms, far over 10 ms.
 * The attacker threads run at nice 19 (a real attacker is not on the server's
 * CPU; here it is, and it must not be what the measurement sees).  A
 * measurement over the bound is repeated up to LAT_ATTEMPTS times (unloaded,
 * then loaded again), because the box is shared with other builds and test
 * suites; every attempt is printed.
 *
 * Every loop is bounded in time and count, every socket is closed, and the
 * daemon is stopped by pid (h_stop).  TLS and password attacks live with the
 * TLS and AUTH tests.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"

/* One edge: the attacker and the normal client share an event loop, which is
 * the harder case for latency; a small shared cache keeps the RSS baseline
 * low so that a large allocation would stand out. */
#define BASE_CONF "edge-workers 1\nhot-owners 1\ncold-owners 1\ncache-memory 16mb\n"

enum {
    LAT_N = 300,             /* GETs per latency measurement */
    LAT_WARMUP = 20,
    LAT_FLOOR_US = 5000,     /* see the header comment */
    LAT_BUDGET_MS = 15000,   /* one measurement never takes longer */
    RSS_LIMIT_KB = 200 * 1024,
    ATK_MAX_ROUNDS = 100000,
    ATK_MAX_MS = 20000,
};

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Printable form of bytes: CR LF as \r \n, others as \xHH, truncated. */
static void esc(const char *p, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 8 < cap; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\r')
            o += (size_t)snprintf(out + o, cap - o, "\\r");
        else if (c == '\n')
            o += (size_t)snprintf(out + o, cap - o, "\\n");
        else if (c < 32 || c > 126)
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
        if (i + 1 < n && o + 8 >= cap) {
            snprintf(out + o, cap - o, "...");
            return;
        }
    }
    out[o] = '\0';
}

/* ---- daemon helpers ---------------------------------------------------------- */

/* The running test's daemon dir, in memory shared with the runner process:
 * a failed assertion ends the forked test before h_stop, the daemon follows
 * (PR_SET_PDEATHSIG), and the runner's teardown removes what it left. */
static char *g_dir;

static void dir_setup(void)
{
    g_dir = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_dir == MAP_FAILED)
        g_dir = NULL;
    else
        g_dir[0] = '\0';
}

static void dir_teardown(void)
{
    if (g_dir == NULL)
        return;
    if (g_dir[0] != '\0') {
        h_sleep_ms(300); /* the daemon's processes follow the test out */
        h_rmtree(g_dir);
    }
    munmap(g_dir, 4096);
    g_dir = NULL;
}

static void stop(struct daemon *d)
{
    h_stop(d);
    if (g_dir != NULL)
        g_dir[0] = '\0';
}

static int start(struct daemon *d, const char *extra)
{
    char conf[1024];
    snprintf(conf, sizeof(conf), "%s%s", BASE_CONF, extra);
    int rc = h_start(d, conf);
    if (g_dir != NULL)
        snprintf(g_dir, 4096, "%s", d->dir);
    ck_assert_msg(rc == 0, "daemon did not start");
    printf("[hostile] daemon pid %d, port %d, dir %s\n", (int)d->pid, d->port, d->dir);
    return rc;
}

/* Edge pids from INFO processes. */
static int edge_pids(const struct daemon *d, pid_t *pids, int max)
{
    int fd = h_connect(d->port);
    if (fd < 0)
        return 0;
    struct h_reply *r = h_cmdv(fd, "INFO", "processes", NULL);
    close(fd);
    if (r == NULL)
        return 0;
    int n = 0;
    const char *p = r->v->str;
    while (p != NULL && n < max && (p = strstr(p, "role=edge,pid=")) != NULL) {
        p += strlen("role=edge,pid=");
        int pid = atoi(p);
        if (pid > 0)
            pids[n++] = pid;
    }
    h_free(r);
    return n;
}


/* How many lines of the daemon log contain `needle`. */
static int log_count(const struct daemon *d, const char *needle)
{
    FILE *f = fopen(d->log, "r");
    if (f == NULL)
        return 0;
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, needle) != NULL)
            n++;
    fclose(f);
    return n;
}

/* Prints the last log lines containing `needle` (at most max). */
static void log_show(const struct daemon *d, const char *needle, int max)
{
    int total = log_count(d, needle), seen = 0, shown = 0;
    FILE *f = fopen(d->log, "r");
    if (f == NULL)
        return;
    char line[2048];
    while (fgets(line, sizeof(line), f) && shown < max) {
        if (strstr(line, needle) == NULL)
            continue;
        if (++seen > total - max) {
            printf("[hostile]   log: %s", line);
            shown++;
        }
    }
    fclose(f);
}

/* The edges are the same processes as before (none crashed or restarted) and
 * PING still answers. */
static void assert_daemon_fine(const struct daemon *d, const pid_t *before, int nbefore)
{
    ck_assert_msg(h_alive(d->pid), "master died");
    ck_assert_msg(h_ping(d->port), "daemon does not answer PING after the attack");
    pid_t now[16];
    int n = edge_pids(d, now, 16);
    ck_assert_int_eq(n, nbefore);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(now[i] == before[i], "edge %d restarted (pid %d -> %d)", i, (int)before[i],
                      (int)now[i]);
        ck_assert_msg(h_alive(now[i]), "edge pid %d is gone", (int)now[i]);
    }
    ck_assert_int_eq(log_count(d, "; restarting in"), 0);
}

/* ---- RSS sampler --------------------------------------------------------------- */

struct rss {
    pid_t pids[16];
    int n;
    atomic_int stop;
    long base_rss, base_anon;   /* largest edge before */
    long max_rss, max_anon;     /* largest edge while running */
    int samples;
    pthread_t th;
};

static void *rss_main(void *arg)
{
    struct rss *r = arg;
    int64_t end = h_now_ms() + ATK_MAX_MS + 10000;
    while (!atomic_load(&r->stop) && h_now_ms() < end) {
        for (int i = 0; i < r->n; i++) {
            long v = h_proc_kb(r->pids[i], "VmRSS"), a = h_proc_kb(r->pids[i], "RssAnon");
            if (v > r->max_rss)
                r->max_rss = v;
            if (a > r->max_anon)
                r->max_anon = a;
        }
        r->samples++;
        h_sleep_ms(10);
    }
    return NULL;
}

static void rss_start(struct rss *r, const struct daemon *d)
{
    memset(r, 0, sizeof(*r));
    r->n = edge_pids(d, r->pids, 16);
    ck_assert_int_gt(r->n, 0);
    for (int i = 0; i < r->n; i++) {
        long v = h_proc_kb(r->pids[i], "VmRSS"), a = h_proc_kb(r->pids[i], "RssAnon");
        if (v > r->base_rss)
            r->base_rss = v;
        if (a > r->base_anon)
            r->base_anon = a;
    }
    ck_assert_int_eq(pthread_create(&r->th, NULL, rss_main, r), 0);
}

static void rss_stop(struct rss *r, const char *what)
{
    atomic_store(&r->stop, 1);
    pthread_join(r->th, NULL);
    printf("[hostile] %s: edge RSS before %ld kB (anon %ld kB), max during %ld kB (anon %ld kB), "
           "%d samples\n",
           what, r->base_rss, r->base_anon, r->max_rss, r->max_anon, r->samples);
    ck_assert_msg(r->max_rss < RSS_LIMIT_KB, "edge VmRSS reached %ld kB (limit %d kB)", r->max_rss,
                  (int)RSS_LIMIT_KB);
}

/* ---- the normal client ----------------------------------------------------------- */

struct lat {
    int n, fail;
    int64_t p50_us, p99_us, max_us;
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One GET on fd (a blocking socket with a receive timeout); 0 or -1. */
static int one_get(int fd, const char *req, size_t reqlen)
{
    if (h_send(fd, req, reqlen) != 0)
        return -1;
    char buf[512];
    size_t len = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + len, sizeof(buf) - len, 0);
        if (n <= 0)
            return -1;
        len += (size_t)n;
        struct resp_value *v = NULL;
        size_t used = 0;
        int rc = resp_parse_reply(buf, len, &used, &v);
        if (rc == HKV_OK) {
            int ok = v->type == RESP_BULK && used == len;
            resp_value_free(&v);
            return ok ? 0 : -1;
        }
        if (rc != HKV_EAGAIN || len == sizeof(buf))
            return -1;
    }
}

/* LAT_N GETs of a cached key over fd, 0.5 ms apart, each timed. */
static void measure_fd(int fd, const char *label, struct lat *L)
{
    static const char req[] = "*2\r\n$3\r\nGET\r\n$6\r\nnorm:k\r\n";
    int64_t *s = calloc(LAT_N, sizeof(*s));
    memset(L, 0, sizeof(*L));
    int64_t end = h_now_ms() + LAT_BUDGET_MS;
    for (int i = 0; i < LAT_WARMUP && h_now_ms() < end; i++)
        if (one_get(fd, req, sizeof(req) - 1) != 0)
            L->fail++;
    for (int i = 0; i < LAT_N && h_now_ms() < end; i++) {
        int64_t t0 = now_us();
        if (one_get(fd, req, sizeof(req) - 1) != 0) {
            L->fail++;
            break;
        }
        s[L->n++] = now_us() - t0;
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
    }
    if (L->n > 0) {
        qsort(s, (size_t)L->n, sizeof(*s), cmp_i64);
        int i99 = (L->n * 99 + 99) / 100 - 1;
        L->p50_us = s[L->n / 2];
        L->p99_us = s[i99 < 0 ? 0 : i99];
        L->max_us = s[L->n - 1];
    }
    free(s);
    printf("[hostile] %s: normal client %d GETs p50 %lld us, p99 %lld us, max %lld us, "
           "failures %d\n",
           label, L->n, (long long)L->p50_us, (long long)L->p99_us, (long long)L->max_us, L->fail);
}

static void measure(int port, const char *label, struct lat *L)
{
    int fd = h_connect(port);
    ck_assert_msg(fd >= 0, "%s: the normal client cannot connect", label);
    measure_fd(fd, label, L);
    close(fd);
}

/* Sets the key the normal client reads, and measures unloaded. */
static void baseline(int port, const char *label, struct lat *L)
{
    int fd = h_connect(port);
    ck_assert_int_ge(fd, 0);
    struct h_reply *r = h_cmdv(fd, "SET", "norm:k", "0123456789abcdef", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->v->type, RESP_SIMPLE);
    h_free(r);
    close(fd);
    char l[128];
    snprintf(l, sizeof(l), "%s unloaded", label);
    measure(port, l, L);
    ck_assert_msg(L->fail == 0 && L->n == LAT_N, "unloaded measurement failed");
}

static int lat_within(const struct lat *u, const struct lat *d)
{
    int64_t base = u->p99_us > LAT_FLOOR_US ? u->p99_us : LAT_FLOOR_US;
    return d->fail == 0 && d->n == LAT_N && d->p99_us <= 2 * base;
}

static void report_latency(const char *label, const struct lat *u, const struct lat *d)
{
    int64_t base = u->p99_us > LAT_FLOOR_US ? u->p99_us : LAT_FLOOR_US;
    printf("[hostile] %s: p99 during %lld us vs bound %lld us (2 x max(unloaded p99 %lld us, "
           "floor %d us)): %s\n",
           label, (long long)d->p99_us, (long long)(2 * base), (long long)u->p99_us, LAT_FLOOR_US,
           lat_within(u, d) ? "ok" : "OVER");
}

static void assert_latency(const char *label, const struct lat *u, const struct lat *d)
{
    int64_t bound = 2 * (u->p99_us > LAT_FLOOR_US ? u->p99_us : LAT_FLOOR_US);
    ck_assert_msg(d->fail == 0 && d->n == LAT_N, "%s: the normal client was not served (%d of %d "
                  "GETs, %d failures)", label, d->n, LAT_N, d->fail);
    ck_assert_msg(d->p99_us <= bound, "%s: p99 %lld us over the bound %lld us", label,
                  (long long)d->p99_us, (long long)bound);
}

/* The test box is shared (other builds and test suites run on its 2 cores),
 * so one p99 over 300 GETs can catch a noisy moment that has nothing to do
 * with the attack.  A measurement over the bound is repeated, unloaded and
 * loaded again, up to LAT_ATTEMPTS times; a daemon that really starves the
 * normal client fails every attempt.  Every attempt is printed. */
enum { LAT_ATTEMPTS = 3 };

/* ---- attacker thread ---------------------------------------------------------------- */

struct atk;
typedef int (*atk_round_fn)(struct atk *a, long i);

struct atk {
    int port;
    atk_round_fn round;     /* one attack; 0 if the outcome was as expected */
    void *arg;
    atomic_int stop;
    long rounds, bad;
    char bad_msg[1024];
    pthread_t th;
};

static void *atk_main(void *p)
{
    struct atk *a = p;
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    int64_t end = h_now_ms() + ATK_MAX_MS;
    while (!atomic_load(&a->stop) && a->rounds < ATK_MAX_ROUNDS && h_now_ms() < end) {
        if (a->round(a, a->rounds) != 0)
            a->bad++;
        a->rounds++;
    }
    return NULL;
}

static void atk_start(struct atk *a, int port, atk_round_fn fn, void *arg)
{
    memset(a, 0, sizeof(*a));
    a->port = port;
    a->round = fn;
    a->arg = arg;
    ck_assert_int_eq(pthread_create(&a->th, NULL, atk_main, a), 0);
    h_sleep_ms(100); /* let it get going */
}

static void atk_stop(struct atk *a, const char *label)
{
    atomic_store(&a->stop, 1);
    pthread_join(a->th, NULL);
    printf("[hostile] %s: attacker ran %ld rounds during the measurement, %ld unexpected%s%s\n",
           label, a->rounds, a->bad, a->bad ? ": " : "", a->bad ? a->bad_msg : "");
    ck_assert_msg(a->rounds > 0, "%s: the attacker never ran", label);
    ck_assert_msg(a->bad == 0, "%s: unexpected outcome: %s", label, a->bad_msg);
}

/* Runs fn in a thread while the normal client is measured; asserts the bound
 * (see LAT_ATTEMPTS). */
static void during(int port, const char *label, const struct lat *unloaded, atk_round_fn fn,
                   void *arg)
{
    struct atk a;
    struct lat u = *unloaded, L;
    char l[128];
    for (int attempt = 1; attempt <= LAT_ATTEMPTS; attempt++) {
        if (attempt > 1) {
            snprintf(l, sizeof(l), "%s unloaded (attempt %d)", label, attempt);
            measure(port, l, &u);
        }
        snprintf(l, sizeof(l), "%s during (attempt %d)", label, attempt);
        atk_start(&a, port, fn, arg);
        measure(port, l, &L);
        atk_stop(&a, label);
        report_latency(label, &u, &L);
        if (lat_within(&u, &L))
            return;
    }
    assert_latency(label, &u, &L);
}

/* ---- raw sockets -------------------------------------------------------------------- */

/* A connected non-blocking socket; rcvbuf > 0 shrinks the receive buffer
 * (set before connect, so the window is small from the start). */
static int connect_nb(int port, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)); /* bounds connect() */
    if (connect(fd, (struct sockaddr *)&in, sizeof(in)) != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

enum { CL_OPEN = 0, CL_EOF = 1, CL_RESET = 2 };

struct outcome {
    int connect_failed;
    size_t sent;            /* bytes the socket took */
    int closed;             /* CL_* */
    int64_t sent_ms;        /* all sent, from connect; -1 if not all */
    int64_t close_ms;       /* from connect; -1 if still open */
    int nreplies;
    size_t rbytes;
    char first[256];        /* first reply, raw and escaped */
    char last[256];
    int first_is_err;
    char first_raw[256];    /* first reply, raw (truncated) */
};

/* Reads what is there; sets o->closed on EOF or an error. */
static void drain(int fd, char *rb, size_t cap, size_t *rl, struct outcome *o)
{
    char tmp[65536];
    for (int k = 0; k < 1000; k++) {
        ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
        if (n > 0) {
            size_t c = (size_t)n;
            if (*rl + c > cap)
                c = cap - *rl;
            memcpy(rb + *rl, tmp, c);
            *rl += c;
            o->rbytes += (size_t)n;
            continue;
        }
        if (n == 0)
            o->closed = CL_EOF;
        else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            o->closed = CL_RESET;
        return;
    }
}

static void parse_replies(const char *rb, size_t rl, struct outcome *o)
{
    size_t off = 0;
    while (off < rl && o->nreplies < 1000000) {
        struct resp_value *v = NULL;
        size_t used = 0;
        if (resp_parse_reply(rb + off, rl - off, &used, &v) != HKV_OK)
            break;
        if (o->nreplies == 0) {
            esc(rb + off, used, o->first, sizeof(o->first));
            size_t c = used < sizeof(o->first_raw) - 1 ? used : sizeof(o->first_raw) - 1;
            memcpy(o->first_raw, rb + off, c);
            o->first_raw[c] = '\0';
            o->first_is_err = v->type == RESP_ERROR;
        }
        esc(rb + off, used, o->last, sizeof(o->last));
        resp_value_free(&v);
        off += used;
        o->nreplies++;
    }
}

/* Sends data[0..len) on a new connection while reading whatever comes back;
 * after the last byte, waits up to linger_ms for the daemon to close.  Gives
 * up sending after 10 s. */
static void blast(int port, const char *data, size_t len, int linger_ms, struct outcome *o)
{
    memset(o, 0, sizeof(*o));
    o->sent_ms = o->close_ms = -1;
    int64_t t0 = h_now_ms();
    int fd = connect_nb(port, 0);
    if (fd < 0) {
        o->connect_failed = 1;
        return;
    }
    size_t cap = 1 << 20, rl = 0;
    char *rb = malloc(cap);
    int64_t end = t0 + 10000;
    while (!o->closed && h_now_ms() < end) {
        if (o->sent == len && o->sent_ms < 0) {
            o->sent_ms = h_now_ms() - t0;
            end = h_now_ms() + linger_ms;
        }
        struct pollfd p = {fd, POLLIN | POLLRDHUP | (o->sent < len ? POLLOUT : 0), 0};
        if (poll(&p, 1, 20) < 0)
            continue;
        if (p.revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))
            drain(fd, rb, cap, &rl, o);
        if (!o->closed && o->sent < len && (p.revents & POLLOUT)) {
            size_t c = len - o->sent > 65536 ? 65536 : len - o->sent;
            ssize_t n = send(fd, data + o->sent, c, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0) {
                o->sent += (size_t)n;
            } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                drain(fd, rb, cap, &rl, o); /* the reply may still be queued */
                o->closed = CL_RESET;
            }
        }
    }
    if (o->closed)
        o->close_ms = h_now_ms() - t0;
    parse_replies(rb, rl, o);
    free(rb);
    close(fd);
}

static const char *closed_str(int c)
{
    return c == CL_EOF ? "closed (EOF)" : c == CL_RESET ? "closed (reset)" : "NOT closed";
}

static void print_outcome(const char *label, const char *what, const struct outcome *o)
{
    printf("[hostile] %s: sent %s (%zu bytes taken) -> %d repl%s, first %s%s%s, %s",
           label, what, o->sent, o->nreplies, o->nreplies == 1 ? "y" : "ies",
           o->nreplies ? "\"" : "", o->nreplies ? o->first : "none", o->nreplies ? "\"" : "",
           closed_str(o->closed));
    if (o->closed)
        printf(" after %lld ms", (long long)o->close_ms);
    if (o->nreplies > 1)
        printf("; last \"%s\"", o->last);
    printf("\n");
}

/* The reply `o` got equals "-<err>\r\n" exactly. */
static int first_is(const struct outcome *o, const char *err)
{
    char want[256];
    snprintf(want, sizeof(want), "-%s\r\n", err);
    return o->nreplies >= 1 && strcmp(o->first_raw, want) == 0;
}

/* Waits until each fd in fds[0..n) sees EOF or a reset, up to deadline (ms,
 * h_now_ms clock).  close_at[i] is when it closed or -1; replies counts fds
 * that got bytes before closing.  Returns how many closed. */
static int wait_closed(const int *fds, int n, int64_t deadline, int64_t *close_at, int *replies)
{
    struct pollfd *p = calloc((size_t)n, sizeof(*p));
    int closed = 0;
    *replies = 0;
    for (int i = 0; i < n; i++)
        close_at[i] = -1;
    while (closed < n && h_now_ms() < deadline) {
        int m = 0;
        int *idx = calloc((size_t)n, sizeof(*idx));
        for (int i = 0; i < n; i++)
            if (close_at[i] < 0) {
                p[m].fd = fds[i];
                p[m].events = POLLIN | POLLRDHUP;
                p[m].revents = 0;
                idx[m++] = i;
            }
        int64_t left = deadline - h_now_ms();
        int r = poll(p, (nfds_t)m, left > 50 ? 50 : (int)(left > 0 ? left : 0));
        int64_t t = h_now_ms();
        for (int j = 0; r > 0 && j < m; j++) {
            if (p[j].revents == 0)
                continue;
            char tmp[4096];
            ssize_t k = recv(p[j].fd, tmp, sizeof(tmp), MSG_DONTWAIT);
            if (k > 0) {
                (*replies)++;
                k = recv(p[j].fd, tmp, sizeof(tmp), MSG_DONTWAIT);
            }
            if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                close_at[idx[j]] = t;
                closed++;
            }
        }
        free(idx);
    }
    free(p);
    return closed;
}

/* ================================================================================
 * 1. Bad multibulk and bulk lengths
 * ================================================================================ */

#define E_MB "ERR Protocol error: invalid multibulk length"
#define E_BL "ERR Protocol error: invalid bulk length"

struct bad_case {
    const char *what;   /* printable */
    const char *data;
    const char *err;    /* expected error text; NULL: expect +PONG and kept */
};

static const struct bad_case bad_cases[] = {
    {"*-", "*-\r\n", E_MB},
    {"*abc", "*abc\r\n", E_MB},
    {"*+1", "*+1\r\n", E_MB},
    {"*2^31 (2147483648)", "*2147483648\r\n", E_MB},
    {"*2^63 (9223372036854775808)", "*9223372036854775808\r\n", E_MB},
    {"*2^64 (18446744073709551616)", "*18446744073709551616\r\n", E_MB},
    {"*1 $-2", "*1\r\n$-2\r\n", E_BL},
    {"*1 $-1", "*1\r\n$-1\r\n", E_BL},
    {"*1 $2^31 (over proto-max-bulk-len)", "*1\r\n$2147483648\r\n", E_BL},
    {"*1 $2^63-1", "*1\r\n$9223372036854775807\r\n", E_BL},
    {"*1 $2^63", "*1\r\n$9223372036854775808\r\n", E_BL},
    {"*1 $-2^63", "*1\r\n$-9223372036854775808\r\n", E_BL},
    {"*1 $03 (leading zero)", "*1\r\n$03\r\nGET\r\n", E_BL},
    {"*1 $abc", "*1\r\n$abc\r\n", E_BL},
    {"*1 GET (no $)", "*1\r\nGET\r\n", "ERR Protocol error: expected '$', got 'G'"},
    {"*2 $3 GET $1 kX (no CRLF after bulk)", "*2\r\n$3\r\nGET\r\n$1\r\nkX\r\n",
     "ERR Protocol error: expected CRLF after bulk data"},
    /* control: empty multibulks (any count below 1, as Redis) are skipped,
     * then a PING is answered */
    {"*0 *-1 *-5 PING (control)", "*0\r\n*-1\r\n*-5\r\n*1\r\n$4\r\nPING\r\n", NULL},
};
#define NBAD ((int)(sizeof(bad_cases) / sizeof(bad_cases[0])))

/* 0 if the outcome is the expected one. */
static int bad_check(const struct bad_case *bc, const struct outcome *o)
{
    if (o->connect_failed)
        return -1;
    if (bc->err == NULL)
        return o->nreplies == 1 && strcmp(o->first_raw, "+PONG\r\n") == 0 && o->closed == CL_OPEN
                   ? 0
                   : -1;
    return o->nreplies == 1 && first_is(o, bc->err) && o->closed != CL_OPEN ? 0 : -1;
}

static int bad_round(struct atk *a, long i)
{
    const struct bad_case *bc = &bad_cases[i % NBAD];
    struct outcome o;
    blast(a->port, bc->data, strlen(bc->data), bc->err ? 2000 : 50, &o);
    if (bad_check(bc, &o) != 0) {
        snprintf(a->bad_msg, sizeof(a->bad_msg), "%s: got \"%s\", %s", bc->what, o.first,
                 closed_str(o.closed));
        return -1;
    }
    return 0;
}

START_TEST(bad_lengths_get_protocol_error_and_close)
{
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 50\n");
    struct lat u;
    baseline(d.port, "bad-lengths", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    int64_t perr0 = h_info_int(d.port, "protocol_errors");
    for (int i = 0; i < NBAD; i++) {
        const struct bad_case *bc = &bad_cases[i];
        struct outcome o;
        blast(d.port, bc->data, strlen(bc->data), bc->err ? 3000 : 300, &o);
        print_outcome("bad-lengths", bc->what, &o);
        ck_assert_msg(bad_check(bc, &o) == 0, "%s: expected \"-%s\" and %s, got \"%s\", %s",
                      bc->what, bc->err ? bc->err : "+PONG", bc->err ? "closed" : "kept",
                      o.first, closed_str(o.closed));
        if (bc->err)
            ck_assert_msg(o.close_ms < 1000, "%s: closed only after %lld ms", bc->what,
                          (long long)o.close_ms);
    }
    /* A protocol error after a request that waits for an owner: the owed
     * reply still comes first, then the error, then the close. */
    {
        static const char req[] = "SET ord:k v\r\nGET ord:k\r\n*abc\r\n";
        struct outcome o;
        blast(d.port, req, sizeof(req) - 1, 3000, &o);
        print_outcome("bad-lengths", "'SET ord:k v' 'GET ord:k' then *abc, in one write", &o);
        ck_assert_msg(o.nreplies == 3 && strcmp(o.first_raw, "+OK\r\n") == 0 &&
                      strcmp(o.last, "-" E_MB "\\r\\n") == 0 && o.closed != CL_OPEN,
                      "owed replies then the error: got %d replies, first \"%s\", last \"%s\", %s",
                      o.nreplies, o.first, o.last, closed_str(o.closed));
    }
    int64_t perr = h_info_int(d.port, "protocol_errors") - perr0;
    printf("[hostile] bad-lengths: INFO protocol_errors +%lld\n", (long long)perr);
    ck_assert_int_eq(perr, NBAD - 1 + 1);
    during(d.port, "bad-lengths", &u, bad_round, NULL);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 2. A 70 KB line without CRLF;  3. an inline request over 64 KB
 * ================================================================================ */

struct big_line {
    const char *what;
    char *data;
    size_t len;
    const char *err;
};

static struct big_line long_lines[3];
static struct big_line big_inlines[3];

static char *filled(const char *head, char fill, size_t n, const char *tail, size_t *len)
{
    size_t h = strlen(head), t = strlen(tail);
    char *p = malloc(h + n + t + 1);
    memcpy(p, head, h);
    memset(p + h, fill, n);
    memcpy(p + h + n, tail, t);
    p[h + n + t] = '\0';
    *len = h + n + t;
    return p;
}

static void make_lines(void)
{
    size_t n;
    /* 70 KB without CRLF: inline text, a `*` count, a `$` length. */
    long_lines[0] = (struct big_line){"70 KB of 'a' (inline, no newline)",
                                      filled("", 'a', 70 * 1024, "", &n), 0,
                                      "ERR Protocol error: too big inline request"};
    long_lines[0].len = n;
    long_lines[1] = (struct big_line){"'*' + 70 KB of '1' (multibulk count, no CRLF)",
                                      filled("*", '1', 70 * 1024, "", &n), 0,
                                      "ERR Protocol error: too big mbulk count string"};
    long_lines[1].len = n;
    long_lines[2] = (struct big_line){"'*1\\r\\n$' + 70 KB of '1' (bulk length, no CRLF)",
                                      filled("*1\r\n$", '1', 70 * 1024, "", &n), 0,
                                      "ERR Protocol error: too big bulk count string"};
    long_lines[2].len = n;
    /* Inline requests over 64 KB, complete with their newline. */
    big_inlines[0] = (struct big_line){"inline 'SET k <70 KB>\\r\\n'",
                                       filled("SET k ", 'v', 70 * 1024, "\r\n", &n), 0,
                                       "ERR Protocol error: too big inline request"};
    big_inlines[0].len = n;
    big_inlines[1] = (struct big_line){"inline 'GET <65537-byte key>\\n'",
                                       filled("GET ", 'k', 65537, "\n", &n), 0,
                                       "ERR Protocol error: too big inline request"};
    big_inlines[1].len = n;
    /* Just under the limit: served. */
    big_inlines[2] = (struct big_line){"inline 'SET k <60 KB>\\r\\n' (under the limit, control)",
                                       filled("SET k ", 'v', 60 * 1024, "\r\n", &n), 0, NULL};
    big_inlines[2].len = n;
}

static void free_lines(void)
{
    for (int i = 0; i < 3; i++) {
        free(long_lines[i].data);
        free(big_inlines[i].data);
        long_lines[i].data = big_inlines[i].data = NULL;
    }
}

static int line_check(const struct big_line *b, const struct outcome *o)
{
    if (o->connect_failed)
        return -1;
    if (b->err == NULL)
        return o->nreplies == 1 && strcmp(o->first_raw, "+OK\r\n") == 0 && o->closed == CL_OPEN
                   ? 0 : -1;
    return o->nreplies == 1 && first_is(o, b->err) && o->closed != CL_OPEN ? 0 : -1;
}

static int line_round(struct atk *a, long i)
{
    const struct big_line *set = a->arg;
    const struct big_line *b = &set[i % 3];
    struct outcome o;
    blast(a->port, b->data, b->len, b->err ? 2000 : 200, &o);
    if (line_check(b, &o) != 0) {
        snprintf(a->bad_msg, sizeof(a->bad_msg), "%s: got \"%s\", %s", b->what, o.first,
                 closed_str(o.closed));
        return -1;
    }
    return 0;
}

static void run_lines(const char *label, struct big_line *set)
{
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 50\nclient-query-buffer-limit 1mb\n");
    struct lat u;
    baseline(d.port, label, &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    for (int i = 0; i < 3; i++) {
        struct outcome o;
        blast(d.port, set[i].data, set[i].len, set[i].err ? 3000 : 300, &o);
        print_outcome(label, set[i].what, &o);
        ck_assert_msg(line_check(&set[i], &o) == 0, "%s: expected \"%s\" and %s, got \"%s\", %s",
                      set[i].what, set[i].err ? set[i].err : "+OK", set[i].err ? "closed" : "kept",
                      o.first, closed_str(o.closed));
    }
    during(d.port, label, &u, line_round, set);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}

START_TEST(line_70kb_without_crlf_gets_error_and_close)
{
    make_lines();
    run_lines("70KB-line", long_lines);
    free_lines();
}
END_TEST

START_TEST(inline_over_64kb_gets_error_and_close)
{
    make_lines();
    run_lines("big-inline", big_inlines);
    free_lines();
}
END_TEST

/* ================================================================================
 * 4. NUL and junk streams
 * ================================================================================ */

#define JUNK_LEN (1024 * 1024)

struct junk {
    const char *what;
    char *data;
};
static struct junk junks[4];

static uint64_t xs(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void make_junk(uint64_t seed)
{
    for (int k = 0; k < 4; k++)
        junks[k].data = malloc(JUNK_LEN);
    uint64_t s = seed;
    /* random bytes (NULs included) */
    junks[0].what = "1 MB of random bytes (xorshift seed 0x5eed)";
    for (size_t i = 0; i < JUNK_LEN; i++)
        junks[0].data[i] = (char)(xs(&s) >> 24);
    if (junks[0].data[0] == '*')
        junks[0].data[0] = 'x';
    /* all NUL */
    junks[1].what = "1 MB of NUL bytes";
    memset(junks[1].data, 0, JUNK_LEN);
    /* random after a '*': the multibulk path */
    junks[2].what = "'*' + 1 MB of random bytes";
    memcpy(junks[2].data, junks[0].data, JUNK_LEN);
    junks[2].data[0] = '*';
    /* a valid header, then random bytes where the bulk header should be */
    junks[3].what = "'*3\\r\\n$3\\r\\nSET\\r\\n' + random bytes";
    memcpy(junks[3].data, junks[0].data, JUNK_LEN);
    memcpy(junks[3].data, "*3\r\n$3\r\nSET\r\n", 13);
    if (junks[3].data[13] == '$')
        junks[3].data[13] = 'x';
}

static void free_junk(void)
{
    for (int k = 0; k < 4; k++) {
        free(junks[k].data);
        junks[k].data = NULL;
    }
}

/* Junk must end in a protocol error (or the query buffer limit) and a close.
 * Random inline lines before the fatal one may be answered as unknown
 * commands, as Redis does. */
static int junk_check(const struct outcome *o)
{
    if (o->connect_failed || o->closed == CL_OPEN || o->nreplies < 1)
        return -1;
    return strncmp(o->last, "-ERR Protocol error: ", 21) == 0 ? 0 : -1;
}

static int junk_round(struct atk *a, long i)
{
    const struct junk *j = &junks[i % 4];
    struct outcome o;
    blast(a->port, j->data, JUNK_LEN, 3000, &o);
    if (junk_check(&o) != 0) {
        snprintf(a->bad_msg, sizeof(a->bad_msg), "%s: last reply \"%s\", %s", j->what, o.last,
                 closed_str(o.closed));
        return -1;
    }
    return 0;
}

START_TEST(junk_and_nul_streams_get_error_and_close)
{
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 50\nclient-query-buffer-limit 1mb\n");
    struct lat u;
    baseline(d.port, "junk", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    make_junk(0x5eed);
    struct rss r;
    rss_start(&r, &d);
    for (int k = 0; k < 4; k++) {
        struct outcome o;
        blast(d.port, junks[k].data, JUNK_LEN, 3000, &o);
        print_outcome("junk", junks[k].what, &o);
        ck_assert_msg(junk_check(&o) == 0, "%s: expected a protocol error and a close, got "
                      "last reply \"%s\", %s", junks[k].what, o.last, closed_str(o.closed));
    }
    /* "\0\n" lines are empty requests (sdssplitargs stops at the NUL), as in
     * Redis: skipped, the connection kept. */
    {
        size_t n = 200000;
        char *p = malloc(n * 2 + 14);
        for (size_t i = 0; i < n; i++) {
            p[2 * i] = '\0';
            p[2 * i + 1] = '\n';
        }
        memcpy(p + 2 * n, "*1\r\n$4\r\nPING\r\n", 14);
        struct outcome o;
        blast(d.port, p, 2 * n + 14, 500, &o);
        print_outcome("junk", "200000 x \"\\0\\n\" then PING (control)", &o);
        ck_assert_msg(o.nreplies == 1 && strcmp(o.first_raw, "+PONG\r\n") == 0 &&
                      o.closed == CL_OPEN, "NUL lines: got \"%s\", %s", o.first,
                      closed_str(o.closed));
        free(p);
    }
    during(d.port, "junk", &u, junk_round, NULL);
    rss_stop(&r, "junk");
    free_junk();
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 5. A declared 1 GB bulk followed by silence
 * ================================================================================ */

#define GB_HEAD "*3\r\n$3\r\nSET\r\n$5\r\nbig:k\r\n$1073741824\r\n"
enum { SILENT_N = 20, TIMEOUT_MS = 2000 };

START_TEST(declared_1gb_bulk_then_silence_closed_at_timeout)
{
    struct daemon d;
    /* proto-max-bulk-len over 1 GB so that the header is accepted and the
     * daemon has to wait for the body. */
    start(&d, "timeout 2s\nmaxclients 100\nproto-max-bulk-len 2gb\n"
              "client-query-buffer-limit 1mb\nclient-output-buffer-limit 1mb 512kb 1s\n");
    struct lat u;
    baseline(d.port, "1GB-bulk", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    struct rss r;
    rss_start(&r, &d);

    /* SILENT_N connections declare 1 GB, send 16 KB of it, and go silent. */
    size_t hl;
    char *msg = filled(GB_HEAD, 'x', 16384, "", &hl);
    int fds[SILENT_N];
    int64_t sent_at[SILENT_N], close_at[SILENT_N];
    for (int i = 0; i < SILENT_N; i++) {
        fds[i] = h_connect(d.port);
        ck_assert_int_ge(fds[i], 0);
        ck_assert_int_eq(h_send(fds[i], msg, hl), 0);
        sent_at[i] = h_now_ms();
    }
    free(msg);
    printf("[hostile] 1GB-bulk: %d connections sent \"%s\" + 16384 bytes of body, then "
           "nothing\n", SILENT_N, "*3\\r\\n$3\\r\\nSET\\r\\n$5\\r\\nbig:k\\r\\n$1073741824\\r\\n");
    /* measured while the silent connections are held (the attack is static:
     * a repeat measures again, against the same unloaded baseline) */
    struct lat L;
    for (int attempt = 1; attempt <= LAT_ATTEMPTS; attempt++) {
        char l[64];
        snprintf(l, sizeof(l), "1GB-bulk during (attempt %d)", attempt);
        measure(d.port, l, &L);
        report_latency("1GB-bulk", &u, &L);
        if (lat_within(&u, &L) || h_now_ms() - sent_at[SILENT_N - 1] > TIMEOUT_MS - 700)
            break;
    }
    int replies = 0;
    int closed = wait_closed(fds, SILENT_N, sent_at[SILENT_N - 1] + TIMEOUT_MS + 4000, close_at,
                             &replies);
    int64_t mn = -1, mx = -1;
    for (int i = 0; i < SILENT_N; i++) {
        if (close_at[i] < 0)
            continue;
        int64_t t = close_at[i] - sent_at[i];
        if (mn < 0 || t < mn)
            mn = t;
        if (t > mx)
            mx = t;
    }
    for (int i = 0; i < SILENT_N; i++)
        close(fds[i]);
    printf("[hostile] 1GB-bulk: %d of %d closed, %d got bytes first, silence before close "
           "%lld..%lld ms (timeout %d ms)\n",
           closed, SILENT_N, replies, (long long)mn, (long long)mx, TIMEOUT_MS);
    log_show(&d, "idle for", 2);
    assert_latency("1GB-bulk", &u, &L);
    ck_assert_int_eq(closed, SILENT_N);
    ck_assert_int_eq(replies, 0);
    ck_assert_msg(mn >= TIMEOUT_MS - 100, "closed before the timeout: %lld ms", (long long)mn);
    ck_assert_msg(mx <= TIMEOUT_MS + 1500, "closed late: %lld ms", (long long)mx);

    /* The same header, then the body streamed as fast as the daemon takes it:
     * closed at client-query-buffer-limit (1 MB), never buffering 1 GB. */
    size_t sl;
    char *stream = filled(GB_HEAD, 'x', 64u << 20, "", &sl);
    struct outcome o;
    blast(d.port, stream, sl, 3000, &o);
    free(stream);
    print_outcome("1GB-bulk", "the 1 GB header + up to 64 MB of body, streamed", &o);
    log_show(&d, "query buffer", 1);
    ck_assert_msg(o.closed != CL_OPEN, "streaming a 1 GB bulk was not cut off");
    ck_assert_msg(o.sent < sl, "all 64 MB were taken before the close");
    rss_stop(&r, "1GB-bulk");
    ck_assert_msg(r.max_anon < 64 * 1024, "edge anonymous memory reached %ld kB", r.max_anon);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 6. 1M pipelined PINGs never read
 * ================================================================================ */

#define NPINGS 1000000
static const char PING_MB[] = "*1\r\n$4\r\nPING\r\n";
#define PING_LEN (sizeof(PING_MB) - 1)
static char *pings;

struct flood_out {
    int connect_failed;
    size_t sent;
    int closed;
    int64_t close_ms, sent_ms;
};

/* Sends the 1M PINGs as fast as the socket takes them, never reading (a
 * 4 KB receive buffer, so the replies back up into the daemon quickly). */
static void flood(int port, int budget_ms, struct flood_out *o)
{
    memset(o, 0, sizeof(*o));
    o->close_ms = o->sent_ms = -1;
    int64_t t0 = h_now_ms(), end = t0 + budget_ms;
    int fd = connect_nb(port, 4096);
    if (fd < 0) {
        o->connect_failed = 1;
        return;
    }
    size_t len = (size_t)NPINGS * PING_LEN;
    while (!o->closed && h_now_ms() < end) {
        if (o->sent == len && o->sent_ms < 0)
            o->sent_ms = h_now_ms() - t0;
        struct pollfd p = {fd, POLLRDHUP | (o->sent < len ? POLLOUT : 0), 0};
        if (poll(&p, 1, 20) < 0)
            continue;
        if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) {
            o->closed = p.revents & POLLERR ? CL_RESET : CL_EOF;
            break;
        }
        if (o->sent < len && (p.revents & POLLOUT)) {
            size_t c = len - o->sent > 262144 ? 262144 : len - o->sent;
            ssize_t n = send(fd, pings + o->sent, c, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0)
                o->sent += (size_t)n;
            else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                o->closed = CL_RESET;
        }
    }
    if (o->closed)
        o->close_ms = h_now_ms() - t0;
    close(fd);
}

static int flood_round(struct atk *a, long i)
{
    struct flood_out o;
    flood(a->port, 8000, &o);
    if (o.connect_failed || !o.closed) {
        snprintf(a->bad_msg, sizeof(a->bad_msg), "round %ld: %s after %zu PINGs", i,
                 o.connect_failed ? "connect failed" : "not closed", o.sent / PING_LEN);
        return -1;
    }
    return 0;
}

/* pending output of the one other client, from CLIENT LIST (omem=) */
static long other_omem(int fd, const char *addr_port)
{
    struct h_reply *r = h_cmdv(fd, "CLIENT", "LIST", NULL);
    if (r == NULL)
        return -1;
    long v = -1;
    char key[96];
    snprintf(key, sizeof(key), "addr=%s ", addr_port);
    const char *p = strstr(r->v->str, key);
    if (p != NULL) {
        const char *m = strstr(p, " omem=");
        const char *nl = strchr(p, '\n');
        if (m != NULL && (nl == NULL || m < nl))
            v = atol(m + 6);
    }
    h_free(r);
    return v;
}

START_TEST(pipelined_pings_never_read_closed_at_output_limit)
{
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 50\nclient-output-buffer-limit 1mb 512kb 1s\n");
    struct lat u;
    baseline(d.port, "ping-flood", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    pings = malloc((size_t)NPINGS * PING_LEN);
    for (size_t i = 0; i < NPINGS; i++)
        memcpy(pings + i * PING_LEN, PING_MB, PING_LEN);
    struct rss r;
    rss_start(&r, &d);

    struct flood_out o;
    flood(d.port, 10000, &o);
    printf("[hostile] ping-flood: sent 1M x \"*1\\r\\n$4\\r\\nPING\\r\\n\" (never reading, "
           "SO_RCVBUF 4 KB): %zu PINGs (%zu bytes) taken%s, %s after %lld ms\n",
           o.sent / PING_LEN, o.sent, o.sent_ms >= 0 ? " (all)" : "", closed_str(o.closed),
           (long long)o.close_ms);
    h_sleep_ms(200);
    int hard = log_count(&d, "over the hard limit"), soft = log_count(&d, "over the soft limit");
    printf("[hostile] ping-flood: daemon log: %d hard-limit close(s), %d soft-limit close(s)\n",
           hard, soft);
    log_show(&d, "output buffer over", 1);
    ck_assert_msg(!o.connect_failed, "connect failed");
    ck_assert_msg(o.closed != CL_OPEN, "a client that never reads was not closed in 10 s");
    ck_assert_int_ge(hard + soft, 1);

    during(d.port, "ping-flood", &u, flood_round, NULL);
    rss_stop(&r, "ping-flood");
    free(pings);
    pings = NULL;

    /* Large replies: 16 KB of pipelined GETs of a cached 300 KB value (600+
     * replies, 190 MB if all were buffered), never read: closed at the hard
     * limit, and the edge's peak RSS (VmHWM) stays small. */
    {
        int c2 = h_connect(d.port);
        ck_assert_int_ge(c2, 0);
        size_t bl;
        char *bv = filled("", 'w', 300 * 1024, "", &bl);
        struct h_reply *br = h_cmdv(c2, "SET", "big:w", bv, NULL);
        ck_assert_ptr_nonnull(br);
        h_free(br);
        free(bv);
        for (int i = 0; i < 3; i++) { /* into the colo cache */
            br = h_cmdv(c2, "GET", "big:w", NULL);
            ck_assert_ptr_nonnull(br);
            h_free(br);
        }
        close(c2);
        static const char g1[] = "*2\r\n$3\r\nGET\r\n$5\r\nbig:w\r\n";
        size_t ng = 16384 / (sizeof(g1) - 1);
        char *gs = malloc(ng * (sizeof(g1) - 1));
        for (size_t i = 0; i < ng; i++)
            memcpy(gs + i * (sizeof(g1) - 1), g1, sizeof(g1) - 1);
        long hwm0 = h_proc_kb(edges[0], "VmHWM");
        int hard0 = log_count(&d, "over the hard limit");
        int g = connect_nb(d.port, 4096);
        ck_assert_int_ge(g, 0);
        ck_assert_int_eq(send(g, gs, ng * (sizeof(g1) - 1), MSG_NOSIGNAL),
                         (ssize_t)(ng * (sizeof(g1) - 1)));
        free(gs);
        int64_t gend = h_now_ms() + 5000;
        while (log_count(&d, "over the hard limit") == hard0 && h_now_ms() < gend)
            h_sleep_ms(20);
        close(g);
        long hwm = h_proc_kb(edges[0], "VmHWM");
        printf("[hostile] ping-flood/big-GETs: %zu pipelined GETs of a 300 KB value, never read "
               "-> %s; edge VmHWM %ld kB before, %ld kB after\n", ng,
               log_count(&d, "over the hard limit") > hard0 ? "closed at the hard limit"
                                                             : "NOT closed in 5 s",
               hwm0, hwm);
        log_show(&d, "over the hard limit", 1);
        ck_assert_int_gt(log_count(&d, "over the hard limit"), hard0);
        ck_assert_msg(hwm < RSS_LIMIT_KB, "edge peak RSS %ld kB", hwm);
    }

    /* The soft limit alone: GETs of a 200 KB value, one at a time, never
     * read, until the client's pending output (CLIENT LIST omem) is over
     * 512 KB (it stays under the 1 MB hard limit); closed ~1 s later. */
    int ctl = h_connect(d.port);
    ck_assert_int_ge(ctl, 0);
    size_t vl;
    char *val = filled("", 'v', 200 * 1024, "", &vl);
    struct h_reply *sr = h_cmdv(ctl, "SET", "big:v", val, NULL);
    ck_assert_ptr_nonnull(sr);
    h_free(sr);
    free(val);
    int fd = connect_nb(d.port, 4096);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in me;
    socklen_t ml = sizeof(me);
    getsockname(fd, (struct sockaddr *)&me, &ml);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(me.sin_port));
    static const char get[] = "*2\r\n$3\r\nGET\r\n$5\r\nbig:v\r\n";
    long omem = 0;
    int ngets = 0;
    int64_t over_at = -1;
    for (; ngets < 40 && over_at < 0; ngets++) {
        ck_assert_int_eq(send(fd, get, sizeof(get) - 1, MSG_NOSIGNAL), (ssize_t)(sizeof(get) - 1));
        for (int k = 0; k < 20; k++) {
            h_sleep_ms(10);
            omem = other_omem(ctl, addr);
            if (omem > 512 * 1024) {
                over_at = h_now_ms();
                break;
            }
        }
    }
    printf("[hostile] ping-flood/soft: %d GETs of a 200 KB value, never read -> omem %ld bytes\n",
           ngets, omem);
    ck_assert_msg(over_at > 0, "pending output never passed the soft limit (omem %ld)", omem);
    /* Watched from the daemon's side (CLIENT LIST): reading the socket here
     * would drain the output the limit is about. */
    int64_t cat = -1;
    while (h_now_ms() < over_at + 5000) {
        if (other_omem(ctl, addr) < 0) {
            cat = h_now_ms();
            break;
        }
        h_sleep_ms(20);
    }
    close(fd);
    close(ctl);
    printf("[hostile] ping-flood/soft: %s %lld ms after passing 512 KB (soft limit 1 s)\n",
           cat > 0 ? "closed" : "NOT closed", (long long)(cat > 0 ? cat - over_at : -1));
    log_show(&d, "over the soft limit", 1);
    ck_assert_msg(cat > 0, "not closed 5 s over the soft limit");
    ck_assert_msg(cat - over_at >= 800, "closed %lld ms over the soft limit (< 1 s)",
                  (long long)(cat - over_at));
    ck_assert_msg(cat - over_at <= 1000 + 1000, "closed %lld ms over the soft limit (> 2 s)",
                  (long long)(cat - over_at));
    ck_assert_int_ge(log_count(&d, "over the soft limit"), 1);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 7. maxclients + 1 connections
 * ================================================================================ */

#define MAXCL 50
static const char MAXCL_ERR[] = "-ERR max number of clients reached\r\n";

/* A connection over the limit: reads the reply and whether it was closed. */
static int try_extra(int port, char *reply, size_t cap, int *closed, int64_t *close_ms)
{
    struct outcome o;
    blast(port, "", 0, 2000, &o);
    snprintf(reply, cap, "%s", o.nreplies ? o.first_raw : "");
    *closed = o.closed;
    *close_ms = o.close_ms;
    return o.connect_failed ? -1 : 0;
}

static int maxcl_round(struct atk *a, long i)
{
    char reply[256];
    int closed;
    int64_t ms;
    if (try_extra(a->port, reply, sizeof(reply), &closed, &ms) != 0 ||
        strcmp(reply, MAXCL_ERR) != 0 || closed == CL_OPEN) {
        char e[300];
        esc(reply, strlen(reply), e, sizeof(e));
        snprintf(a->bad_msg, sizeof(a->bad_msg), "extra connection got \"%s\", %s", e,
                 closed_str(closed));
        return -1;
    }
    return 0;
}

static int ping_fd(int fd)
{
    struct h_reply *r = h_cmdv(fd, "PING", NULL);
    int ok = r != NULL && r->v->type == RESP_SIMPLE && strcmp(r->raw, "+PONG\r\n") == 0;
    h_free(r);
    return ok;
}

START_TEST(maxclients_plus_one_rejected_then_accepted_again)
{
    struct daemon d;
    char conf[256];
    /* two edges: the limit is for all edges together */
    snprintf(conf, sizeof(conf), "timeout 0\nmaxclients %d\nedge-workers 2\n", MAXCL);
    start(&d, conf);
    struct lat u;
    baseline(d.port, "maxclients", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);

    int normal = h_connect(d.port);
    ck_assert_int_ge(normal, 0);
    ck_assert(ping_fd(normal));
    /* wait until only the normal client and the INFO connection are counted */
    int64_t end = h_now_ms() + 3000;
    while (h_info_int(d.port, "connected_clients") != 2 && h_now_ms() < end)
        h_sleep_ms(20);
    int fds[MAXCL];
    int nf = 0;
    for (; nf < MAXCL - 1; nf++) {
        fds[nf] = h_connect(d.port);
        ck_assert_int_ge(fds[nf], 0);
        ck_assert_msg(ping_fd(fds[nf]), "connection %d of %d was not served", nf + 2, MAXCL);
    }
    char reply[256], e[300];
    int closed;
    int64_t cms;
    ck_assert_int_eq(try_extra(d.port, reply, sizeof(reply), &closed, &cms), 0);
    esc(reply, strlen(reply), e, sizeof(e));
    printf("[hostile] maxclients: %d connections open (maxclients %d), connection %d got \"%s\", "
           "%s after %lld ms\n", nf + 1, MAXCL, MAXCL + 1, e, closed_str(closed), (long long)cms);
    ck_assert_str_eq(reply, MAXCL_ERR);
    ck_assert_int_ne(closed, CL_OPEN);

    /* The normal client (connected before the limit) keeps being served while
     * new connections hammer the full server. */
    struct atk a;
    struct lat L;
    long rounds = 0;
    for (int attempt = 1; attempt <= LAT_ATTEMPTS; attempt++) {
        char l[64];
        snprintf(l, sizeof(l), "maxclients during (attempt %d)", attempt);
        atk_start(&a, d.port, maxcl_round, NULL);
        measure_fd(normal, l, &L);
        atk_stop(&a, "maxclients");
        rounds += a.rounds;
        report_latency("maxclients", &u, &L);
        if (lat_within(&u, &L))
            break;
    }
    assert_latency("maxclients", &u, &L);
    int64_t rej = h_info_int(d.port, "rejected_connections");
    (void)rej; /* INFO needs a connection: over the limit it is refused */

    /* Close 10; 10 new ones are accepted (bounded retry while the daemon
     * notices the closes), and the 11th is refused again. */
    for (int i = 0; i < 10; i++)
        close(fds[--nf]);
    int accepted = 0;
    end = h_now_ms() + 3000;
    while (accepted < 10 && h_now_ms() < end) {
        int fd = h_connect(d.port);
        if (fd >= 0 && ping_fd(fd)) {
            fds[nf++] = fd;
            accepted++;
        } else {
            if (fd >= 0)
                close(fd);
            h_sleep_ms(20);
        }
    }
    ck_assert_int_eq(try_extra(d.port, reply, sizeof(reply), &closed, &cms), 0);
    esc(reply, strlen(reply), e, sizeof(e));
    printf("[hostile] maxclients: after closing 10, %d new connections accepted; the next got "
           "\"%s\", %s\n", accepted, e, closed_str(closed));
    ck_assert_int_eq(accepted, 10);
    ck_assert_str_eq(reply, MAXCL_ERR);
    for (int i = 0; i < nf; i++)
        close(fds[i]);
    close(normal);
    end = h_now_ms() + 3000;
    while (!h_ping(d.port) && h_now_ms() < end)
        h_sleep_ms(20);
    rej = h_info_int(d.port, "rejected_connections");
    printf("[hostile] maxclients: INFO rejected_connections %lld\n", (long long)rej);
    ck_assert_int_ge(rej, 2 + rounds);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 8. 2,000 idle connections (slowloris)
 * ================================================================================ */

#define IDLE_N 2000

START_TEST(idle_connections_2000_normal_client_served_then_timed_out)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < IDLE_N + 500) {
        rl.rlim_cur = rl.rlim_max < IDLE_N + 1000 ? rl.rlim_max : IDLE_N + 1000;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    ck_assert_msg(rl.rlim_cur >= IDLE_N + 100, "RLIMIT_NOFILE %llu too low",
                  (unsigned long long)rl.rlim_cur);
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 3000\n");
    struct lat u;
    baseline(d.port, "slowloris", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    struct rss r;
    rss_start(&r, &d);

    int *fds = calloc(IDLE_N, sizeof(int));
    int64_t *at = calloc(IDLE_N, sizeof(int64_t)), *cat = calloc(IDLE_N, sizeof(int64_t));
    /* Connected in batches of 100, each waited for until the daemon has
     * accepted it: a faster burst overflows the listen queue (the edge's
     * evconnlistener re-listens with libevent's backlog of 128) and the
     * kernel drops SYNs, which costs those clients a 1 s retransmit. */
    int64_t t0 = h_now_ms();
    int n = 0, stalls = 0;
    while (n < IDLE_N && h_now_ms() < t0 + 15000) {
        int b = 0;
        for (; b < 100 && n < IDLE_N; b++, n++) {
            int64_t c0 = h_now_ms();
            fds[n] = h_connect(d.port);
            if (fds[n] < 0)
                break;
            at[n] = h_now_ms();
            if (at[n] - c0 > 500)
                stalls++;
        }
        if (b < 100 && n < IDLE_N)
            break;
        int64_t wend = h_now_ms() + 3000;
        while (h_info_int(d.port, "connected_clients") < n + 1 && h_now_ms() < wend)
            h_sleep_ms(2);
    }
    int64_t t1 = h_now_ms();
    int64_t conn = h_info_int(d.port, "connected_clients");
    printf("[hostile] slowloris: opened %d idle connections (sending nothing) in %lld ms, %d "
           "connect(s) took over 500 ms; INFO connected_clients %lld\n", n,
           (long long)(t1 - t0), stalls, (long long)conn);
    ck_assert_int_eq(n, IDLE_N);
    ck_assert_msg(t1 - at[0] < 1500, "connecting took %lld ms: the first ones time out before "
                  "the measurement", (long long)(t1 - at[0]));
    ck_assert_int_ge(conn, IDLE_N);

    struct lat L1, L2;
    measure(d.port, "slowloris during (idle)", &L1);
    report_latency("slowloris (idle)", &u, &L1);
    /* again across the timeout: the first connections close ~2 s after open */
    int64_t w = at[0] + 1950 - h_now_ms();
    if (w > 0)
        h_sleep_ms((int)w);
    measure(d.port, "slowloris during (timeouts firing)", &L2);
    report_latency("slowloris (timeouts firing)", &u, &L2);

    int replies = 0;
    int closed = wait_closed(fds, n, at[n - 1] + 2000 + 4000, cat, &replies);
    int64_t mn = -1, mx = -1;
    int early = 0;
    for (int i = 0; i < n; i++) {
        if (cat[i] < 0)
            continue;
        int64_t t = cat[i] - at[i];
        if (t < 1900)
            early++;
        if (mn < 0 || t < mn)
            mn = t;
        if (t > mx)
            mx = t;
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    printf("[hostile] slowloris: %d of %d closed by the daemon, idle time at close %lld..%lld ms "
           "(timeout 2000 ms), %d before 1900 ms, %d got bytes\n",
           closed, n, (long long)mn, (long long)mx, early, replies);
    rss_stop(&r, "slowloris");
    free(fds);
    free(at);
    free(cat);
    assert_latency("slowloris (idle)", &u, &L1);
    assert_latency("slowloris (timeouts firing)", &u, &L2);
    ck_assert_int_eq(closed, IDLE_N);
    ck_assert_int_eq(early, 0);
    ck_assert_int_eq(replies, 0);
    ck_assert_msg(mx <= 2000 + 1500, "closed late: %lld ms idle", (long long)mx);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 9. Wrong arity and unknown commands: error, connection kept
 * ================================================================================ */

struct cmd_case {
    const char *what;
    const char *data;
    const char *reply;  /* exact expected reply */
};

static const struct cmd_case cmd_cases[] = {
    {"GET (no key)", "*1\r\n$3\r\nGET\r\n",
     "-ERR wrong number of arguments for 'get' command\r\n"},
    {"GET a b", "*3\r\n$3\r\nGET\r\n$1\r\na\r\n$1\r\nb\r\n",
     "-ERR wrong number of arguments for 'get' command\r\n"},
    {"SET k", "*2\r\n$3\r\nSET\r\n$1\r\nk\r\n",
     "-ERR wrong number of arguments for 'set' command\r\n"},
    {"inline 'incrby n'", "incrby n\r\n",
     "-ERR wrong number of arguments for 'incrby' command\r\n"},
    {"EXPIRE k", "*2\r\n$6\r\nEXPIRE\r\n$1\r\nk\r\n",
     "-ERR wrong number of arguments for 'expire' command\r\n"},
    {"FOOBAR a b", "*3\r\n$6\r\nFOOBAR\r\n$1\r\na\r\n$1\r\nb\r\n",
     "-ERR unknown command 'FOOBAR', with args beginning with: 'a' 'b' \r\n"},
    {"inline 'nosuchcmd'", "nosuchcmd\r\n",
     "-ERR unknown command 'nosuchcmd', with args beginning with: \r\n"},
    /* a command name with CRLF inside must not inject a reply */
    {"'FOO\\r\\n+OK\\r\\n' (CRLF in the name)", "*1\r\n$10\r\nFOO\r\n+OK\r\n\r\n",
     "-ERR unknown command 'FOO  +OK  ', with args beginning with: \r\n"},
};
#define NCMD ((int)(sizeof(cmd_cases) / sizeof(cmd_cases[0])))

/* Each case then a PING on the same connection: the error, then +PONG. */
static int cmd_one(int port, const struct cmd_case *cc, struct outcome *o)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s*1\r\n$4\r\nPING\r\n", cc->data);
    blast(port, buf, strlen(buf), 100, o);
    if (o->nreplies != 2 || strcmp(o->first_raw, cc->reply) != 0 || o->closed != CL_OPEN ||
        strcmp(o->last, "+PONG\\r\\n") != 0)
        return -1;
    return 0;
}

static int cmd_round(struct atk *a, long i)
{
    const struct cmd_case *cc = &cmd_cases[i % NCMD];
    struct outcome o;
    if (cmd_one(a->port, cc, &o) != 0) {
        snprintf(a->bad_msg, sizeof(a->bad_msg), "%s: got \"%s\" then \"%s\", %s", cc->what,
                 o.first, o.last, closed_str(o.closed));
        return -1;
    }
    return 0;
}

START_TEST(wrong_arity_and_unknown_commands_error_and_keep_connection)
{
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 50\n");
    struct lat u;
    baseline(d.port, "arity", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    for (int i = 0; i < NCMD; i++) {
        struct outcome o;
        int rc = cmd_one(d.port, &cmd_cases[i], &o);
        char want[200];
        esc(cmd_cases[i].reply, strlen(cmd_cases[i].reply), want, sizeof(want));
        printf("[hostile] arity: sent %s + PING -> \"%s\" then \"%s\", %s\n", cmd_cases[i].what,
               o.first, o.last, o.closed == CL_OPEN ? "connection kept" : closed_str(o.closed));
        ck_assert_msg(rc == 0, "%s: expected \"%s\" then +PONG on a kept connection", 
                      cmd_cases[i].what, want);
    }
    /* A long unknown command with many arguments: one error line, kept. */
    {
        char *p = malloc(64 * 1024);
        size_t n = (size_t)snprintf(p, 64 * 1024, "*1001\r\n$200\r\n");
        memset(p + n, 'Z', 200);
        n += 200;
        memcpy(p + n, "\r\n", 2);
        n += 2;
        for (int i = 0; i < 1000; i++)
            n += (size_t)snprintf(p + n, 64 * 1024 - n, "$10\r\narg%07d\r\n", i);
        n += (size_t)snprintf(p + n, 64 * 1024 - n, "*1\r\n$4\r\nPING\r\n");
        struct outcome o;
        blast(d.port, p, n, 100, &o);
        free(p);
        print_outcome("arity", "unknown 200-byte command name with 1000 args + PING", &o);
        ck_assert_int_eq(o.nreplies, 2);
        ck_assert_int_eq(o.closed, CL_OPEN);
        ck_assert(strncmp(o.first_raw, "-ERR unknown command '", 22) == 0);
        ck_assert_msg(strlen(o.first_raw) < 512, "error line %zu bytes", strlen(o.first_raw));
        ck_assert_str_eq(o.last, "+PONG\\r\\n");
    }
    during(d.port, "arity", &u, cmd_round, NULL);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 10. INCRBY overflow and negative EXPIRE
 * ================================================================================ */

struct step {
    const char *words[6];
    const char *reply;
};

static const struct step num_steps[] = {
    {{"SET", "n", "9223372036854775807"}, "+OK\r\n"},
    {{"INCRBY", "n", "1"}, "-ERR increment or decrement would overflow\r\n"},
    {{"INCR", "n"}, "-ERR increment or decrement would overflow\r\n"},
    {{"GET", "n"}, "$19\r\n9223372036854775807\r\n"},
    {{"SET", "m", "-9223372036854775808"}, "+OK\r\n"},
    {{"DECR", "m"}, "-ERR increment or decrement would overflow\r\n"},
    {{"INCRBY", "m", "-1"}, "-ERR increment or decrement would overflow\r\n"},
    {{"DECRBY", "m", "-9223372036854775808"}, "-ERR decrement would overflow\r\n"},
    {{"INCRBY", "n", "9223372036854775808"}, "-ERR value is not an integer or out of range\r\n"},
    {{"INCRBY", "n", "abc"}, "-ERR value is not an integer or out of range\r\n"},
    {{"SET", "s", "abc"}, "+OK\r\n"},
    {{"INCR", "s"}, "-ERR value is not an integer or out of range\r\n"},
    {{"SET", "k", "v"}, "+OK\r\n"},
    {{"EXPIRE", "k", "-1"}, ":1\r\n"},
    {{"GET", "k"}, "$-1\r\n"},
    {{"EXISTS", "k"}, ":0\r\n"},
    {{"EXPIRE", "k", "-1"}, ":0\r\n"},
    {{"SET", "k2", "v"}, "+OK\r\n"},
    {{"PEXPIRE", "k2", "-100"}, ":1\r\n"},
    {{"GET", "k2"}, "$-1\r\n"},
    {{"SET", "k3", "v"}, "+OK\r\n"},
    {{"EXPIRE", "k3", "9223372036854775807"}, "-ERR invalid expire time in 'expire' command\r\n"},
    {{"EXPIRE", "k3", "-9223372036854775808"}, "-ERR invalid expire time in 'expire' command\r\n"},
    {{"GET", "k3"}, "$1\r\nv\r\n"},
    {{"SET", "k4", "v", "EX", "-1"}, "-ERR invalid expire time in 'set' command\r\n"},
    {{"SET", "k4", "v", "EX", "0"}, "-ERR invalid expire time in 'set' command\r\n"},
    {{"GET", "k4"}, "$-1\r\n"},
};
#define NSTEPS ((int)(sizeof(num_steps) / sizeof(num_steps[0])))

/* Runs the steps with keys prefixed by `pre`; 0 or -1 with *fail = the step. */
static int run_steps(int fd, const char *pre, int verbose, int *fail, char *got, size_t cap)
{
    for (int i = 0; i < NSTEPS; i++) {
        const struct step *s = &num_steps[i];
        const char *w[6];
        char key[64];
        int n = 0;
        for (; n < 6 && s->words[n] != NULL; n++)
            w[n] = s->words[n];
        snprintf(key, sizeof(key), "%s%s", pre, s->words[1]);
        w[1] = key;
        struct h_reply *r = h_cmd(fd, n, w);
        const char *raw = r != NULL ? r->raw : "(no reply)";
        esc(raw, strlen(raw), got, cap);
        if (verbose) {
            char cmd[160] = "";
            size_t o = 0;
            for (int j = 0; j < n; j++)
                o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, "%s%s", j ? " " : "", w[j]);
            printf("[hostile] numbers: %s -> \"%s\"\n", cmd, got);
        }
        int ok = r != NULL && strcmp(r->raw, s->reply) == 0;
        h_free(r);
        if (!ok) {
            *fail = i;
            return -1;
        }
    }
    return 0;
}

static int num_round(struct atk *a, long i)
{
    int fd = h_connect(a->port);
    if (fd < 0) {
        snprintf(a->bad_msg, sizeof(a->bad_msg), "connect failed");
        return -1;
    }
    char pre[32], got[200];
    snprintf(pre, sizeof(pre), "atk%ld:", i);
    int fail = -1;
    int rc = run_steps(fd, pre, 0, &fail, got, sizeof(got));
    close(fd);
    if (rc != 0)
        snprintf(a->bad_msg, sizeof(a->bad_msg), "step %d (%s %s): got \"%s\"", fail,
                 num_steps[fail].words[0], num_steps[fail].words[1], got);
    return rc;
}

START_TEST(incrby_overflow_and_negative_expire_get_redis_replies)
{
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 50\n");
    struct lat u;
    baseline(d.port, "numbers", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    int fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    int fail = -1;
    char got[200];
    int rc = run_steps(fd, "", 1, &fail, got, sizeof(got));
    if (rc != 0) {
        char want[200];
        esc(num_steps[fail].reply, strlen(num_steps[fail].reply), want, sizeof(want));
        close(fd);
        ck_abort_msg("%s %s: expected \"%s\", got \"%s\"", num_steps[fail].words[0],
                     num_steps[fail].words[1], want, got);
    }
    ck_assert(ping_fd(fd)); /* the connection is kept after every error */
    close(fd);
    during(d.port, "numbers", &u, num_round, NULL);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* Check forks each test and a failed assertion ends the child: keep every
 * report line, so line-buffer stdout in the child. */
static void unbuffer(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
}

Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"bad_lengths", bad_lengths_get_protocol_error_and_close},
        {"line_70kb", line_70kb_without_crlf_gets_error_and_close},
        {"inline_64kb", inline_over_64kb_gets_error_and_close},
        {"junk", junk_and_nul_streams_get_error_and_close},
        {"bulk_1gb_silence", declared_1gb_bulk_then_silence_closed_at_timeout},
        {"ping_flood", pipelined_pings_never_read_closed_at_output_limit},
        {"maxclients", maxclients_plus_one_rejected_then_accepted_again},
        {"slowloris", idle_connections_2000_normal_client_served_then_timed_out},
        {"arity", wrong_arity_and_unknown_commands_error_and_keep_connection},
        {"numbers", incrby_overflow_and_negative_expire_get_redis_replies},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_checked_fixture(tc, unbuffer, NULL);
        tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
