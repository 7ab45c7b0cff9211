/*
 * storm.c - the hot-key storm: a RESP load generator for hotkvd and Redis.
 *
 * One process, non-blocking sockets, loopback only.  N reader connections
 * each keep P GETs in flight (one key, or K keys drawn with a Zipf skew s,
 * rank 0 being the hot key); one writer connection SETs the hot key every I
 * ms and times each write from the moment its bytes go out to the moment its
 * reply is parsed (CLOCK_MONOTONIC).  The readers share one epoll loop; the
 * writer has its own loop on its own thread, so a write's time is the
 * server's and not the time this process spends on the readers' replies
 * that arrived with it (in one shared loop a reply waited behind up to 200
 * reader events; pinned to one core the two threads still share it, as the
 * kernel schedules them).  A write unanswered after T ms
 * counts as a timeout; if its reply comes later it is also counted late and
 * its real latency still enters the percentiles, so a stall shows in `max`
 * instead of vanishing.  Against hotkvd, --info-owner-reads samples INFO's
 * owner_reads (owners' STATS, polled by the edges every second) before and
 * after the run and prints owner read calls per second.
 *
 * --load N is a loading mode for memory tests: SET KEY and KEY:1..KEY:N-1
 * (the same names the K-key read mode uses) over the reader connections.
 *
 * Bounds: at most 10000 connections; the process stops at duration + 5 s
 * whatever happens (each phase checks the deadline; an alarm backs it up).
 * Output: one line per metric, then one machine-readable `STORM k=v ...` line.
 * Requests are encoded and replies parsed with proto/resp.h; readers use a
 * scanner for scalar replies and fall back to resp_parse_reply for the rest.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proto/buf.h"
#include "proto/resp.h"

#include "scripts/bench/storm_int.h"

int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "storm: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(2);
}

static void on_alarm(int sig)
{
    static const char msg[] = "storm: hard time limit passed, exiting\n";
    (void)sig;
    ssize_t r = write(2, msg, sizeof(msg) - 1);
    (void)r;
    _exit(3);
}

/* ---- address ---------------------------------------------------------------- */

/* Fills s->addr from host/port; loopback only (127.0.0.0/8, ::1, localhost). */
static void resolve(struct storm *s)
{
    const char *h = s->o.host;
    memset(&s->addr, 0, sizeof(s->addr));
    if (strcmp(h, "localhost") == 0)
        h = "127.0.0.1";
    struct sockaddr_in *a4 = (struct sockaddr_in *)&s->addr;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&s->addr;
    if (inet_pton(AF_INET, h, &a4->sin_addr) == 1) {
        if ((ntohl(a4->sin_addr.s_addr) >> 24) != 127)
            die("refusing non-loopback address %s (storm is for loopback only)", s->o.host);
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)s->o.port);
        s->addrlen = sizeof(*a4);
    } else if (inet_pton(AF_INET6, h, &a6->sin6_addr) == 1) {
        if (!IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr))
            die("refusing non-loopback address %s (storm is for loopback only)", s->o.host);
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)s->o.port);
        s->addrlen = sizeof(*a6);
    } else {
        die("--host must be a numeric loopback address or localhost, not %s", s->o.host);
    }
}

/* ---- keys and requests ------------------------------------------------------ */

static uint64_t rng_next(struct storm *s)
{
    uint64_t x = s->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return s->rng = x;
}

static void zipf_setup(struct storm *s)
{
    if (s->o.keys <= 1)
        return;
    s->cdf = malloc(sizeof(double) * (size_t)s->o.keys);
    if (s->cdf == NULL)
        die("out of memory for %s keys", "the");
    double sum = 0;
    for (long i = 0; i < s->o.keys; i++) {
        sum += 1.0 / pow((double)(i + 1), s->o.zipf);
        s->cdf[i] = sum;
    }
    for (long i = 0; i < s->o.keys; i++)
        s->cdf[i] /= sum;
}

static long zipf_rank(struct storm *s)
{
    double u = (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
    long lo = 0, hi = s->o.keys - 1;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (s->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Rank 0 is the hot key itself; rank i > 0 is "KEY:i". */
static void add_key(struct storm *s, struct hkv_buf *b, long rank)
{
    if (rank == 0) {
        resp_add_bulk_str(b, s->o.key);
        return;
    }
    char k[320];
    int n = snprintf(k, sizeof(k), "%s:%ld", s->o.key, rank);
    resp_add_bulk(b, k, (size_t)n);
}

static void add_get(struct storm *s, struct hkv_buf *b)
{
    if (s->cdf == NULL) {
        buf_append(b, buf_head(&s->hotreq), buf_unread(&s->hotreq));
        return;
    }
    resp_add_array(b, 2);
    resp_add_bulk(b, "GET", 3);
    add_key(s, b, zipf_rank(s));
}

static void fill_value(struct storm *s, const char *tag, uint64_t n)
{
    char head[48];
    int len = snprintf(head, sizeof(head), "%s%llu:", tag, (unsigned long long)n);
    memset(s->value, 'x', (size_t)s->o.value_size);
    memcpy(s->value, head, (size_t)(len < s->o.value_size ? len : s->o.value_size));
}

static void add_set(struct storm *s, struct hkv_buf *b, long rank, const char *tag, uint64_t n)
{
    fill_value(s, tag, n);
    resp_add_array(b, 3);
    resp_add_bulk(b, "SET", 3);
    add_key(s, b, rank);
    resp_add_bulk(b, s->value, (size_t)s->o.value_size);
}

/* ---- replies ---------------------------------------------------------------- */

/* The length of one reply at p[0..n): > 0 bytes, 0 incomplete, -1 malformed.
 * *type is its first byte ('$' with *null set for a null bulk).  Scalars are
 * scanned in place; aggregates and attributes go through resp_parse_reply. */
static long scan_reply(const char *p, size_t n, char *type, int *null)
{
    if (n < 3)
        return 0;
    *type = p[0];
    *null = 0;
    const char *nl = memchr(p, '\n', n);
    if (nl == NULL)
        return n > 65536 ? -1 : 0;
    size_t line = (size_t)(nl - p) + 1;
    switch (p[0]) {
    case '+': case '-': case ':': case ',': case '#': case '(':
        return (long)line;
    case '_':
        *null = 1;
        return (long)line;
    case '$': {
        if (p[1] == '-') {
            *null = 1;
            return (long)line;
        }
        long len = 0;
        for (const char *q = p + 1; q < nl - 1; q++) {
            if (*q < '0' || *q > '9' || len > (1L << 40))
                return -1;
            len = len * 10 + (*q - '0');
        }
        size_t total = line + (size_t)len + 2;
        return total <= n ? (long)total : 0;
    }
    default: {
        size_t used = 0;
        struct resp_value *v = NULL;
        int rc = resp_parse_reply(p, n, &used, &v);
        if (rc == HKV_EAGAIN)
            return 0;
        if (rc != HKV_OK)
            return -1;
        *null = v->type == RESP_NULL;
        *type = v->type == RESP_ERROR ? '-' : p[0];
        resp_value_free(&v);
        return (long)used;
    }
    }
}

/* ---- connections ------------------------------------------------------------- */

static void ep_set(struct storm *s, struct conn *c, uint32_t ev)
{
    if (c->ev == ev)
        return;
    struct epoll_event e = {.events = ev, .data.ptr = c};
    epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &e);
    c->ev = ev;
}

static int conn_open(struct storm *s, struct conn *c)
{
    c->fd = socket(s->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -1;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->connected = 0;
    c->inflight = 0;
    c->retry_at = 0;
    buf_reset(&c->in);
    buf_reset(&c->out);
    if (connect(c->fd, (struct sockaddr *)&s->addr, s->addrlen) != 0 && errno != EINPROGRESS) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    c->ev = EPOLLOUT | EPOLLIN;
    struct epoll_event e = {.events = c->ev, .data.ptr = c};
    if (epoll_ctl(s->ep, EPOLL_CTL_ADD, c->fd, &e) != 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

static void conn_fail(struct storm *s, struct conn *c, int64_t now)
{
    if (c->fd >= 0) {
        epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->connected = 0;
    if (c->kind == K_WRITER) {
        s->w_conn_err++;
        for (size_t i = s->w_head; i < s->w_n; i++)
            s->w[i].lat = -2;
        s->w_head = s->w_n;
    } else {
        s->r_conn_err++;
        if (s->o.load > 0)
            s->load_err += (uint64_t)c->inflight; /* those keys may be missing */
    }
    c->inflight = 0;
    if (s->phase == PH_RUN || s->phase == PH_CONNECT) {
        c->retry_at = now + RECONNECT_NS;
        s->pending_reconnects++;
    }
}

static void conn_flush(struct storm *s, struct conn *c, int64_t now)
{
    while (buf_unread(&c->out) > 0) {
        ssize_t n = write(c->fd, buf_head(&c->out), buf_unread(&c->out));
        if (n > 0) {
            buf_consume(&c->out, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            ep_set(s, c, EPOLLIN | EPOLLOUT);
            return;
        }
        conn_fail(s, c, now);
        return;
    }
    buf_compact(&c->out);
    ep_set(s, c, EPOLLIN);
}

/* ---- readers ------------------------------------------------------------------ */

static int reader_may_send(struct storm *s, int64_t now)
{
    if (s->o.load > 0)
        return s->load_next < s->o.load && now < s->hard;
    return s->phase == PH_RUN && now < s->end;
}

static void reader_fill(struct storm *s, struct conn *c, int64_t now)
{
    while (c->inflight < s->o.pipeline && reader_may_send(s, now)) {
        if (s->o.load > 0) {
            long rank = s->load_next++;
            add_set(s, &c->out, rank, "v", (uint64_t)rank);
        } else {
            add_get(s, &c->out);
        }
        c->inflight++;
    }
}

static void reader_reply(struct storm *s, char type, int null, int64_t now)
{
    if (s->o.load > 0) {
        s->load_done++;
        if (type == '-')
            s->load_err++;
        return;
    }
    if (s->phase != PH_RUN || now >= s->end)
        return;
    s->r_ops++;
    if (type == '-')
        s->r_err++;
    else if (null)
        s->r_null++;
    else if (type != '$')
        s->r_other++;
}

/* ---- writer ------------------------------------------------------------------- */

static void writer_send(struct storm *s, struct conn *c, int64_t now)
{
    if (s->w_n == s->w_cap) {
        size_t cap = s->w_cap ? s->w_cap * 2 : 4096;
        struct wrec *w = realloc(s->w, cap * sizeof(*w));
        if (w == NULL)
            return;
        s->w = w;
        s->w_cap = cap;
    }
    add_set(s, &c->out, 0, "w", ++s->w_seq);
    struct wrec *r = &s->w[s->w_n++];
    r->sent = now_ns() - s->start;
    r->lat = -1;
    r->err = 0;
    r->late = 0;
    c->inflight++;
    conn_flush(s, c, now);
}

static void writer_reply(struct storm *s, struct conn *c, char type)
{
    c->inflight--;
    if (s->w_head >= s->w_n)
        return;
    struct wrec *r = &s->w[s->w_head++];
    r->lat = now_ns() - s->start - r->sent;
    r->err = type == '-';
    if (r->lat > (int64_t)s->o.write_timeout_ms * 1000000LL)
        r->late = 1;
}

/* ---- the loop ----------------------------------------------------------------- */

static void on_readable(struct storm *s, struct conn *c, int64_t now)
{
    for (int rounds = 0; rounds < 4; rounds++) {
        if (buf_reserve(&c->in, READ_CHUNK, 0) != HKV_OK) {
            conn_fail(s, c, now);
            return;
        }
        ssize_t n = read(c->fd, buf_tail(&c->in), buf_room(&c->in));
        if (n == 0) {
            conn_fail(s, c, now);
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            conn_fail(s, c, now);
            return;
        }
        c->in.len += (size_t)n;
        if ((size_t)n < READ_CHUNK)
            break;
    }
    while (buf_unread(&c->in) > 0) {
        char type;
        int null;
        long used = scan_reply(buf_head(&c->in), buf_unread(&c->in), &type, &null);
        if (used == 0)
            break;
        if (used < 0) {
            conn_fail(s, c, now);
            return;
        }
        buf_consume(&c->in, (size_t)used);
        if (c->kind == K_WRITER) {
            writer_reply(s, c, type);
        } else {
            c->inflight--;
            reader_reply(s, type, null, now);
        }
    }
    buf_compact(&c->in);
    if (c->kind == K_READER) {
        reader_fill(s, c, now);
        conn_flush(s, c, now);
    }
}

static void on_event(struct storm *s, struct conn *c, uint32_t ev, int64_t now)
{
    if (!c->connected) {
        int err = 0;
        socklen_t len = sizeof(err);
        if ((ev & (EPOLLERR | EPOLLHUP)) ||
            getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            conn_fail(s, c, now);
            return;
        }
        c->connected = 1;
        if (c->kind == K_READER && s->phase == PH_RUN)
            reader_fill(s, c, now);
        conn_flush(s, c, now);
        return;
    }
    if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        on_readable(s, c, now);
        if (c->fd < 0)
            return;
    }
    if (ev & EPOLLOUT)
        conn_flush(s, c, now);
}

static void reconnect_due(struct storm *s, int64_t now)
{
    if (s->pending_reconnects == 0)
        return;
    for (int i = 0; i < s->nconns; i++) {
        struct conn *c = &s->conns[i];
        if (c->fd >= 0 || c->retry_at == 0 || c->retry_at > now)
            continue;
        s->pending_reconnects--;
        if (conn_open(s, c) != 0) {
            c->retry_at = now + RECONNECT_NS;
            s->pending_reconnects++;
        }
    }
}

static struct conn *writer(struct storm *s)
{
    return s->has_writer ? &s->conns[s->nconns - 1] : NULL;
}

/* Runs the loop until `until` (ns) or until done(s) is true. */
static void loop(struct storm *s, int64_t until, int (*done)(struct storm *))
{
    struct epoll_event evs[256];
    for (;;) {
        int64_t now = now_ns();
        if (now >= until || now >= s->hard || (done && done(s)))
            return;
        reconnect_due(s, now);
        struct conn *w = writer(s);
        int64_t wake = until;
        if (s->phase == PH_RUN && w != NULL) {
            if (now >= s->next_tick) {
                if (w->connected)
                    writer_send(s, w, now);
                s->next_tick += (int64_t)s->o.write_interval_ms * 1000000LL;
                if (s->next_tick < now)
                    s->next_tick = now + (int64_t)s->o.write_interval_ms * 1000000LL;
            }
            if (s->next_tick < wake)
                wake = s->next_tick;
        }
        if (s->pending_reconnects && now + RECONNECT_NS < wake)
            wake = now + RECONNECT_NS;
        int64_t left = wake - now;
        int timeout = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
        if (timeout > 100)
            timeout = 100;
        int n = epoll_wait(s->ep, evs, 256, timeout);
        now = now_ns();
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (c->fd >= 0)
                on_event(s, c, evs[i].events, now);
        }
    }
}

static int all_connected(struct storm *s)
{
    for (int i = 0; i < s->nconns; i++)
        if (!s->conns[i].connected)
            return 0;
    return 1;
}

static int writer_drained(struct storm *s)
{
    return s->w_head >= s->w_n;
}

static int load_finished(struct storm *s)
{
    return s->load_done + (long)s->load_err >= s->o.load;
}

/* Frees what main set up (the process is about to exit, but a tool that
 * leaks on exit would hide real leaks from LeakSanitizer runs). */
static void storm_free(struct storm *s)
{
    if (s->conns != NULL)
        for (int i = 0; i < s->nconns; i++) {
            if (s->conns[i].fd >= 0)
                close(s->conns[i].fd);
            buf_deinit(&s->conns[i].in);
            buf_deinit(&s->conns[i].out);
        }
    free(s->conns);
    free(s->cdf);
    free(s->value);
    free(s->w);
    buf_deinit(&s->hotreq);
    if (s->ep >= 0)
        close(s->ep);
}

/* Opens every connection of x and runs its loop until all are up or the
 * connect phase is over; returns how many are up. */
static int connect_all(struct storm *x)
{
    x->phase = PH_CONNECT;
    for (int i = 0; i < x->nconns; i++) {
        struct conn *c = &x->conns[i];
        c->kind = x->has_writer && i == x->nconns - 1 ? K_WRITER : K_READER;
        c->fd = -1;
        if (conn_open(x, c) != 0) {
            c->retry_at = now_ns() + RECONNECT_NS;
            x->pending_reconnects++;
        }
    }
    loop(x, now_ns() + CONNECT_PHASE_NS, all_connected);
    int connected = 0;
    for (int i = 0; i < x->nconns; i++)
        connected += x->conns[i].connected;
    return connected;
}

/* The writer's thread: its own loop, from the common start to the common
 * end, then a bounded grace period for its last writes.  Touches only w
 * (main reads it after the join). */
static void *writer_main(void *arg)
{
    struct storm *w = arg;
    w->connected_n = connect_all(w);
    pthread_barrier_wait(w->bar); /* connected */
    pthread_barrier_wait(w->bar); /* main has set start and end */
    w->phase = PH_RUN;
    loop(w, w->end, NULL);
    w->phase = PH_DRAIN;
    int grace = w->o.write_timeout_ms < 1500 ? w->o.write_timeout_ms : 1500;
    loop(w, now_ns() + (int64_t)grace * 1000000LL, writer_drained);
    w->phase = PH_DONE;
    return NULL;
}

/* Moves the writer's records from w into s for the report. */
static void take_writes(struct storm *s, struct storm *w)
{
    s->w = w->w;
    s->w_n = w->w_n;
    s->w_cap = w->w_cap;
    s->w_head = w->w_head;
    s->w_seq = w->w_seq;
    s->w_timeouts = w->w_timeouts;
    s->w_conn_err = w->w_conn_err;
    w->w = NULL;
    w->w_n = w->w_cap = w->w_head = 0;
}

int main(int argc, char **argv)
{
    struct storm st;
    struct storm *s = &st;
    memset(s, 0, sizeof(*s));
    parse_opts(&s->o, argc, argv);
    resolve(s);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    alarm((unsigned)ceil(s->o.duration) + 6);
    s->t0 = now_ns();
    s->hard = s->t0 + (int64_t)(s->o.duration * 1e9) + HARD_EXTRA_NS;
    s->rng = 0x9E3779B97F4A7C15ULL ^ (uint64_t)s->t0;
    s->nconns = s->o.readers;

    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)s->nconns + 64) {
        rl.rlim_cur = rl.rlim_max < (rlim_t)s->nconns + 64 ? rl.rlim_max : (rlim_t)s->nconns + 64;
        setrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < (rlim_t)s->nconns + 16)
            die("the open-file limit is too low for the connections (%s)", "ulimit -n");
    }
    s->value = malloc((size_t)s->o.value_size);
    s->conns = calloc((size_t)s->nconns + 1, sizeof(*s->conns));
    s->ep = epoll_create1(EPOLL_CLOEXEC);
    if (s->value == NULL || s->conns == NULL || s->ep < 0)
        die("setup failed: %s", strerror(errno));
    struct storm wst;
    struct storm *w = NULL;
    if (s->o.write_interval_ms > 0 && s->o.load == 0) {
        w = &wst;
        memset(w, 0, sizeof(*w));
        w->o = s->o;
        w->addr = s->addr;
        w->addrlen = s->addrlen;
        if (s->o.writer_port != 0) /* both families keep the port at the same offset */
            ((struct sockaddr_in *)&w->addr)->sin_port = htons((uint16_t)s->o.writer_port);
        w->t0 = s->t0;
        w->hard = s->hard;
        w->nconns = 1;
        w->has_writer = 1;
        w->value = malloc((size_t)s->o.value_size);
        w->conns = calloc(1, sizeof(*w->conns));
        w->ep = epoll_create1(EPOLL_CLOEXEC);
        if (w->value == NULL || w->conns == NULL || w->ep < 0)
            die("setup failed: %s", strerror(errno));
    }
    zipf_setup(s);
    resp_add_array(&s->hotreq, 2);
    resp_add_bulk(&s->hotreq, "GET", 3);
    resp_add_bulk_str(&s->hotreq, s->o.key);

    int64_t reads0 = 0, reads1 = 0;
    int info0 = 0, info1 = 0;
    if (s->o.info_owner_reads && s->o.load == 0)
        info0 = info_owner_reads(s, 1000, &reads0);

    /* connect everything first, so the measurement covers a steady state */
    pthread_barrier_t bar;
    pthread_t wt;
    int threaded = w != NULL;
    if (threaded) {
        if (pthread_barrier_init(&bar, NULL, 2) != 0)
            die("pthread_barrier_init: %s", strerror(errno));
        w->bar = &bar;
        if (pthread_create(&wt, NULL, writer_main, w) != 0)
            die("cannot start the writer's thread: %s", strerror(errno));
    }
    int connected = connect_all(s);
    if (threaded)
        pthread_barrier_wait(&bar); /* the writer is connected (or gave up) */
    int total = s->nconns + (threaded ? w->nconns : 0);
    connected += threaded ? w->connected_n : 0;
    if (connected == 0) {
        fprintf(stderr, "storm: could not connect to %s port %d\n", s->o.host, s->o.port);
        return 2;
    }
    if (connected < total)
        fprintf(stderr, "storm: only %d of %d connections up after %.1f s; going on\n", connected,
                total, CONNECT_PHASE_NS / 1e9);

    s->phase = PH_RUN;
    s->start = now_ns();
    s->end = s->start + (int64_t)(s->o.duration * 1e9);
    if (s->end > s->hard)
        s->end = s->hard;
    s->next_tick = s->start;
    if (threaded) {
        w->start = s->start;
        w->end = s->end;
        w->next_tick = s->start;
        pthread_barrier_wait(&bar); /* go */
    }
    for (int i = 0; i < s->o.readers; i++) {
        struct conn *c = &s->conns[i];
        if (c->connected) {
            reader_fill(s, c, s->start);
            conn_flush(s, c, s->start);
        }
    }
    if (s->o.load > 0) {
        loop(s, s->hard, load_finished);
        int rc = report_load(s, (double)(now_ns() - s->start) / 1e9);
        storm_free(s);
        return rc;
    }
    loop(s, s->end, NULL);
    double secs = (double)(s->end - s->start) / 1e9;

    /* readers stop; the writer's last writes get a bounded grace period */
    s->phase = PH_DRAIN;
    for (int i = 0; i < s->o.readers; i++) {
        struct conn *c = &s->conns[i];
        if (c->fd >= 0) {
            epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
            close(c->fd);
            c->fd = -1;
        }
    }
    if (threaded) {
        pthread_join(wt, NULL);
        pthread_barrier_destroy(&bar);
        take_writes(s, w);
    }
    s->phase = PH_DONE;

    if (s->o.info_owner_reads) {
        int64_t left_ms = (s->hard - now_ns()) / 1000000 - 600;
        int wait_ms = left_ms < STATS_POLL_WAIT_MS ? (int)(left_ms > 0 ? left_ms : 0) : STATS_POLL_WAIT_MS;
        struct timespec ts = {wait_ms / 1000, (long)(wait_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        info1 = info_owner_reads(s, 500, &reads1);
    }
    if (s->o.latency_log)
        write_latency_log(s);
    report(s, secs, info0, reads0, info1, reads1);
    storm_free(s);
    if (w != NULL)
        storm_free(w);
    return 0;
}
