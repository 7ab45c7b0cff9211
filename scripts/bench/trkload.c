/*
 * trkload.c - many RESP3 tracking clients on one thread, for
 * scripts/bench/tracking (the same client against hotkvd and redis-server).
 *
 *   trkload inval --port P [--conns 1000] [--writes 200] [--timeout 110]
 *     --conns connections say HELLO 3 and CLIENT TRACKING on, and GET
 *     trk:inval; then, --writes times, one more connection SETs trk:inval
 *     and the time from that SET's send to the moment every tracking
 *     connection has its ">2 invalidate [trk:inval]" push is one sample
 *     (and each connection's own arrival another); every connection then
 *     GETs the key again (tracked again) before the next write.
 *     Prints: TRKLOAD inval all_p50_ms=A all_p99_ms=B each_p50_ms=C
 *             each_p99_ms=D writes=N; a write some connection is not told
 *     of within 5 s ends the run (exit 3): the writes before it, lost=N.
 *     spurious=N: invalidations that came when none was due (a write told
 *     twice); the connection reads the key again, as a caching client does.
 *   trkload table --port P [--conns 1000] [--keys 200] [--track 0|1]
 *     every connection (HELLO 3, CLIENT TRACKING on when --track 1) GETs
 *     its own --keys keys trk:t:<conn>:<i> (pipelined), then waits for
 *     one line on stdin before closing (so the caller can read the
 *     servers' memory while the table is held).  Prints TRKLOAD table
 *     replies=N when every reply came.
 * One thread, epoll, blocking only where nothing else is due.  Exits 1 on a
 * connection failure, an error reply or the timeout.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct tconn {
    int fd;
    int want_push;  /* this phase waits for an invalidation push, */
    int want_reply; /* or for this many replies to GETs (of a fixed length) */
    size_t reply_len;
    double at;      /* when the phase's frame came */
    char buf[256];  /* a partial frame */
    size_t have;
};

static long long spurious;
static double phase_ms = 5000; /* a phase that waits longer fails (inval: a lost push) */
static int cur_write = -1; /* the write being waited for, for a timeout's message */ /* pushes that came in a phase not waiting for one */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double deadline;

static void die(const char *what)
{
    fprintf(stderr, "trkload: %s: %s\n", what, errno ? strerror(errno) : "failed");
    exit(1);
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        die("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* Blocking reads (HELLO, the writer's OK) give up after 10 s, not never. */
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            die("write");
        p += w;
        n -= (size_t)w;
    }
}

/* Reads exactly n bytes from a blocking fd (replies whose length is known). */
static void read_n(int fd, size_t n, const char *what)
{
    char buf[65536];
    while (n > 0) {
        ssize_t r = read(fd, buf, n < sizeof(buf) ? n : sizeof(buf));
        if (r <= 0)
            die(what);
        if (buf[0] == '-' || buf[0] == '!') {
            fprintf(stderr, "trkload: %s: error reply %.*s\n", what, (int)r, buf);
            exit(1);
        }
        n -= (size_t)r;
    }
}

#define KEY "trk:inval"
static const char GETK[] = "*2\r\n$3\r\nGET\r\n$9\r\n" KEY "\r\n";
/* "$8\r\nvNNNNNNN\r\n" */
static const size_t GOT_LEN = 4 + 8 + 2;

/* ">2\r\n$10\r\ninvalidate\r\n" then "*1\r\n$<n>\r\n<key>\r\n" or "_\r\n" (a
 * flush): the length of the whole push at p, 0 if incomplete, -1 if p is
 * not one. */
static long push_len(const char *p, size_t n)
{
    static const char head[] = ">2\r\n$10\r\ninvalidate\r\n";
    size_t h = sizeof(head) - 1;
    if (n < h)
        return memcmp(p, head, n) == 0 ? 0 : -1;
    if (memcmp(p, head, h) != 0)
        return -1;
    const char *e = memmem(p + h, n - h, "\r\n", 2); /* "*1" or "_" */
    if (e == NULL)
        return 0;
    if (p[h] == '_')
        return (long)(e + 2 - p);
    const char *e2 = memmem(e + 2, n - (size_t)(e + 2 - p), "\r\n", 2); /* "$<n>" */
    if (e2 == NULL)
        return 0;
    long klen = strtol(e + 3, NULL, 10);
    long total = (long)(e2 + 2 - p) + klen + 2;
    return (size_t)total <= n ? total : 0;
}

/* Consumes the whole frames in t's buffer; 1 when t's phase is done. */
static int frames(struct tconn *t, double now)
{
    for (;;) {
        if (t->have == 0)
            return !t->want_push && !t->want_reply;
        if (t->buf[0] == '>') {
            long n = push_len(t->buf, t->have);
            if (n < 0) {
                fprintf(stderr, "trkload: unexpected push %.*s\n", (int)t->have, t->buf);
                exit(1);
            }
            if (n == 0)
                return 0;
            if (t->want_push) {
                t->want_push = 0;
                t->at = now;
            } else {
                /* Another invalidation (hotkvd: a write's second record, its
                 * owner's push, read after this client's GET had tracked the
                 * key again): the client's copy is gone, so it reads the key
                 * again, as a caching client would, to be told of the next
                 * write. */
                spurious++;
                send_all(t->fd, GETK, sizeof(GETK) - 1);
                t->want_reply++;
                t->reply_len = GOT_LEN;
            }
            memmove(t->buf, t->buf + n, t->have - (size_t)n);
            t->have -= (size_t)n;
        } else if (t->buf[0] == '$' && t->want_reply) {
            if (t->have < t->reply_len)
                return 0;
            if (--t->want_reply == 0)
                t->at = now;
            memmove(t->buf, t->buf + t->reply_len, t->have - t->reply_len);
            t->have -= t->reply_len;
        } else if (t->buf[0] == '$') {
            return 1; /* the next phase's reply (a pipeline), kept */
        } else {
            fprintf(stderr, "trkload: unexpected reply %.*s\n", (int)t->have, t->buf);
            exit(1);
        }
    }
}

/* Reads whatever each connection has until every one has the frame its
 * phase waits for; at[] stamped when a connection's came. */
static int gather(int ep, struct tconn *c, int n)
{
    double phase_end = now_ms() + phase_ms;
    int left = 0;
    for (int i = 0; i < n; i++) /* frames already read count first */
        left += (c[i].want_push || c[i].want_reply) && !frames(&c[i], now_ms());
    struct epoll_event ev[256];
    while (left > 0) {
        if (now_ms() > deadline || now_ms() > phase_end) {
            int np = 0, nr = 0, first = -1;
            for (int i = 0; i < n; i++) {
                np += c[i].want_push;
                nr += c[i].want_reply;
                if (first < 0 && (c[i].want_push || c[i].want_reply))
                    first = i;
            }
            fprintf(stderr, "trkload: timeout at write %d: %d of %d connections still wait for a"
                            " push, %d for a reply (first: connection %d, %zu bytes held)\n",
                    cur_write, np, n, nr, first, first >= 0 ? c[first].have : 0);
            return np + nr;
        }
        int k = epoll_wait(ep, ev, 256, 1000);
        double now = now_ms();
        for (int j = 0; j < k; j++) {
            struct tconn *t = &c[ev[j].data.u32];
            int was = t->want_push || t->want_reply;
            ssize_t r = read(t->fd, t->buf + t->have, sizeof(t->buf) - t->have);
            if (r <= 0)
                die("read");
            t->have += (size_t)r;
            if (frames(t, now) && was)
                left--;
        }
    }
    return 0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double p)
{
    qsort(v, n, sizeof(*v), cmp_d);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i];
}

static const char HELLO[] = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
static const char TRACK[] = "*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\non\r\n";

/* A connection in RESP3 (tracking on when track): the HELLO map's length
 * varies by server, so it is read up to the TRACKING +OK that follows. */
static int nconn;

static int open_conn(int port, int track)
{
    nconn++;
    int fd = dial(port);
    send_all(fd, HELLO, sizeof(HELLO) - 1);
    if (track)
        send_all(fd, TRACK, sizeof(TRACK) - 1);
    else
        send_all(fd, "*1\r\n$4\r\nPING\r\n", 14);
    const char *end = track ? "+OK\r\n" : "+PONG\r\n";
    char buf[4096];
    size_t have = 0;
    for (;;) {
        ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
        if (r <= 0) {
            fprintf(stderr, "trkload: connection %d: ", nconn);
            die("hello");
        }
        have += (size_t)r;
        buf[have] = 0;
        if (have >= strlen(end) && strcmp(buf + have - strlen(end), end) == 0)
            break;
        if (have >= sizeof(buf) - 1)
            die("hello: reply too long");
    }
    return fd;
}

static int add_all(struct tconn *c, int n)
{
    int ep = epoll_create1(0);
    for (int i = 0; i < n; i++) {
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &e) != 0)
            die("epoll_ctl");
    }
    return ep;
}

static void want_get(struct tconn *t, size_t len, int count)
{
    t->want_reply = count;
    t->reply_len = len;
}

static int inval(int port, int n, int writes)
{
    struct tconn *c = calloc((size_t)n, sizeof(*c));
    double *all = calloc((size_t)writes, sizeof(double));
    double *each = calloc((size_t)writes * (size_t)n, sizeof(double));
    if (c == NULL || all == NULL || each == NULL)
        die("out of memory");
    int w = dial(port);
    char set[128];
    int sl = snprintf(set, sizeof(set), "*3\r\n$3\r\nSET\r\n$9\r\n" KEY "\r\n$8\r\nv%07d\r\n", 0);
    send_all(w, set, (size_t)sl);
    read_n(w, 5, "set");
    for (int i = 0; i < n; i++)
        c[i].fd = open_conn(port, 1);
    int ep = add_all(c, n);
    for (int i = 0; i < n; i++) {
        send_all(c[i].fd, GETK, sizeof(GETK) - 1);
        want_get(&c[i], GOT_LEN, 1);
    }
    if (gather(ep, c, n) > 0)
        return 1;
    for (int k = 0; k < writes; k++) {
        cur_write = k;
        sl = snprintf(set, sizeof(set), "*3\r\n$3\r\nSET\r\n$9\r\n" KEY "\r\n$8\r\nv%07d\r\n", k + 1);
        for (int i = 0; i < n; i++)
            c[i].want_push = 1;
        double t0 = now_ms();
        send_all(w, set, (size_t)sl);
        int lost = gather(ep, c, n);
        if (lost > 0) { /* never told: what was measured before, and the verdict */
            if (k > 0)
                printf("TRKLOAD inval all_p50_ms=%.3f all_p99_ms=%.3f all_max_ms=%.3f each_p50_ms=0 "
                       "each_p99_ms=0 writes=%d conns=%d spurious=%lld lost=%d lost_at=%d\n",
                       pct(all, (size_t)k, 0.5), pct(all, (size_t)k, 0.99), pct(all, (size_t)k, 1.0),
                       k, n, spurious, lost, k);
            return 3;
        }
        double last = 0;
        for (int i = 0; i < n; i++) {
            each[(size_t)k * (size_t)n + (size_t)i] = c[i].at - t0;
            if (c[i].at > last)
                last = c[i].at;
        }
        all[k] = last - t0;
        read_n(w, 5, "set");
        for (int i = 0; i < n; i++) { /* tracked again */
            send_all(c[i].fd, GETK, sizeof(GETK) - 1);
            want_get(&c[i], GOT_LEN, 1);
        }
        if (gather(ep, c, n) > 0)
            return 1;
    }
    size_t ne = (size_t)writes * (size_t)n;
    printf("TRKLOAD inval all_p50_ms=%.3f all_p99_ms=%.3f all_max_ms=%.3f each_p50_ms=%.3f "
           "each_p99_ms=%.3f writes=%d conns=%d spurious=%lld\n",
           pct(all, (size_t)writes, 0.5), pct(all, (size_t)writes, 0.99), pct(all, (size_t)writes, 1.0),
           pct(each, ne, 0.5), pct(each, ne, 0.99), writes, n, spurious);
    return 0;
}

/* Bytes of the reply to GET of a value of vlen bytes. */
static size_t bulk_len(size_t vlen)
{
    char tmp[32];
    return (size_t)snprintf(tmp, sizeof(tmp), "$%zu\r\n", vlen) + vlen + 2;
}

static int table(int port, int n, int keys, int track, int vlen)
{
    struct tconn *c = calloc((size_t)n, sizeof(*c));
    if (c == NULL)
        die("out of memory");
    for (int i = 0; i < n; i++)
        c[i].fd = open_conn(port, track);
    int ep = add_all(c, n);
    size_t cap = (size_t)keys * 64 + 64;
    char *req = malloc(cap);
    if (req == NULL)
        die("out of memory");
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        for (int k = 0; k < keys; k++) {
            char key[48];
            int kl = snprintf(key, sizeof(key), "trk:t:%d:%d", i, k);
            len += (size_t)snprintf(req + len, cap - len, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", kl, key);
        }
        send_all(c[i].fd, req, len);
    }
    for (int i = 0; i < n; i++)
        want_get(&c[i], bulk_len((size_t)vlen), keys);
    if (gather(ep, c, n) > 0)
        return 1;
    printf("TRKLOAD table replies=%lld\n", (long long)n * keys);
    fflush(stdout);
    char line[16];
    if (fgets(line, sizeof(line), stdin) == NULL)
        return 0;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: trkload inval|table --port P [options]\n");
        return 2;
    }
    const char *mode = argv[1];
    int port = 0, conns = 1000, writes = 200, keys = 200, track = 1, vlen = 8;
    double timeout = 110;
    static const struct option opts[] = {
        {"port", 1, 0, 'p'}, {"conns", 1, 0, 'c'}, {"writes", 1, 0, 'w'}, {"keys", 1, 0, 'k'},
        {"track", 1, 0, 't'}, {"vlen", 1, 0, 'v'}, {"timeout", 1, 0, 'T'}, {0, 0, 0, 0}};
    int o;
    optind = 2;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'p': port = atoi(optarg); break;
        case 'c': conns = atoi(optarg); break;
        case 'w': writes = atoi(optarg); break;
        case 'k': keys = atoi(optarg); break;
        case 't': track = atoi(optarg); break;
        case 'v': vlen = atoi(optarg); break;
        case 'T': timeout = atof(optarg); break;
        default: return 2;
        }
    }
    if (port <= 0 || conns <= 0 || writes <= 0 || keys <= 0)
        return 2;
    deadline = now_ms() + timeout * 1e3;
    if (strcmp(mode, "inval") == 0)
        return inval(port, conns, writes);
    if (strcmp(mode, "table") == 0 && (phase_ms = timeout * 1e3) > 0)
        return table(port, conns, keys, track, vlen);
    return 2;
}
