/*
 * kvload.c - one load generator for GET over RESP and over HTTP/1.1
 * keep-alive, so a comparison of the two (and of nginx serving a file) is
 * not a comparison of two clients (scripts/bench/http_compare).
 *
 *   kvload --port P --proto resp|http --target KEY_OR_PATH [--conns 50]
 *          [--pipeline 1] [--requests 100000] [--timeout 120]
 *
 * Each of --conns connections sends --pipeline requests in one write, reads
 * their --pipeline responses, and sends the next batch: redis-benchmark's -P
 * (so a row at -P16 here means what it means in BENCHMARKS.md's Redis rows),
 * applied to HTTP pipelining the same way.  One thread, epoll, non-blocking
 * sockets, the request bytes built once.  A response is checked only as
 * far as framing needs: RESP a bulk string ("$-1" or an error counts as an
 * error), HTTP a status line and Content-Length (a status other than 200
 * counts as an error).  Latency is per batch, from its write to its last
 * response, as redis-benchmark measures it.
 *
 * Prints one line:
 *   KVLOAD requests=N errors=E secs=S rps=R p50_ms=A p99_ms=B
 * and exits 0, or 1 on a connection failure or the timeout.
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
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IN_CAP (1 << 20)
#define LAT_BUCKETS 4096 /* 10 us each: up to ~41 ms exact, the last holds the rest */

struct cn {
    int fd;
    char *in;
    size_t inlen;
    int owed;            /* responses of the batch still to come */
    uint64_t sent_ns;
};

static int http_mode;
static char *req;
static size_t reqlen;
static uint64_t lat[LAT_BUCKETS];

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Length of the first whole response in p[0..n) (0: not whole yet), *err
 * set when it is not the expected answer; -1 when it is garbage. */
static long one_response(const char *p, size_t n, int *err)
{
    if (!http_mode) {
        const char *eol = memmem(p, n, "\r\n", 2);
        if (eol == NULL)
            return 0;
        size_t hl = (size_t)(eol - p) + 2;
        if (p[0] == '-' || p[0] == '+' || p[0] == ':') {
            *err = p[0] == '-';
            return (long)hl;
        }
        if (p[0] != '$')
            return -1;
        long len = strtol(p + 1, NULL, 10);
        if (len < 0) {
            *err = 1;
            return (long)hl;
        }
        return n >= hl + (size_t)len + 2 ? (long)(hl + (size_t)len + 2) : 0;
    }
    const char *end = memmem(p, n, "\r\n\r\n", 4);
    if (end == NULL)
        return 0;
    size_t hl = (size_t)(end - p) + 4;
    int status = 0;
    if (n < 12 || sscanf(p, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    size_t blen = 0;
    for (const char *l = memmem(p, hl, "\r\n", 2); l != NULL && l + 2 < end;
         l = memmem(l + 2, (size_t)(end - l), "\r\n", 2))
        if (strncasecmp(l + 2, "Content-Length:", 15) == 0)
            blen = strtoul(l + 17, NULL, 10);
    *err = status != 200;
    return n >= hl + blen ? (long)(hl + blen) : 0;
}

static int send_batch(struct cn *c, int depth)
{
    static char *batch;
    static size_t cap;
    size_t n = reqlen * (size_t)depth;
    if (n > cap) {
        batch = realloc(batch, n);
        if (batch == NULL)
            return -1;
        for (int i = 0; i < depth; i++)
            memcpy(batch + (size_t)i * reqlen, req, reqlen);
        cap = n;
    }
    size_t off = 0;
    while (off < n) { /* a batch is small: the socket buffer takes it */
        ssize_t w = send(c->fd, batch + off, n - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        off += (size_t)w;
    }
    c->owed = depth;
    c->sent_ns = now_ns();
    return 0;
}

static double pct(uint64_t total, double q)
{
    uint64_t want = (uint64_t)(q * (double)total), seen = 0;
    for (int i = 0; i < LAT_BUCKETS; i++) {
        seen += lat[i];
        if (seen > want)
            return (i + 0.5) * 0.01;
    }
    return LAT_BUCKETS * 0.01;
}

int main(int argc, char **argv)
{
    int port = 0, conns = 50, depth = 1, timeout = 120;
    long requests = 100000;
    const char *target = NULL, *proto = "resp";
    static const struct option opts[] = {
        {"port", 1, 0, 'p'},     {"proto", 1, 0, 'x'},   {"target", 1, 0, 't'},
        {"conns", 1, 0, 'c'},    {"pipeline", 1, 0, 'P'}, {"requests", 1, 0, 'n'},
        {"timeout", 1, 0, 'T'},  {0, 0, 0, 0}};
    for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (o) {
        case 'p': port = atoi(optarg); break;
        case 'x': proto = optarg; break;
        case 't': target = optarg; break;
        case 'c': conns = atoi(optarg); break;
        case 'P': depth = atoi(optarg); break;
        case 'n': requests = atol(optarg); break;
        case 'T': timeout = atoi(optarg); break;
        default: return 2;
        }
    }
    http_mode = strcmp(proto, "http") == 0;
    if (port <= 0 || target == NULL || conns < 1 || depth < 1 || requests < 1 ||
        (!http_mode && strcmp(proto, "resp") != 0)) {
        fprintf(stderr, "usage: kvload --port P --proto resp|http --target KEY|PATH [--conns N] "
                        "[--pipeline D] [--requests N] [--timeout S]\n");
        return 2;
    }
    req = malloc(strlen(target) + 128);
    if (http_mode)
        reqlen = (size_t)sprintf(req, "GET %s HTTP/1.1\r\nHost: kvload\r\n\r\n", target);
    else
        reqlen = (size_t)sprintf(req, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(target), target);
    int ep = epoll_create1(0);
    struct cn *cs = calloc((size_t)conns, sizeof(*cs));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    long started = 0, done = 0, errors = 0;
    for (int i = 0; i < conns; i++) {
        struct cn *c = &cs[i];
        c->fd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c->in = malloc(IN_CAP);
        if (c->in == NULL || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            fprintf(stderr, "kvload: connect to port %d: %s\n", port, strerror(errno));
            return 1;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
    }
    uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)timeout * 1000000000u;
    for (int i = 0; i < conns && started < requests; i++) {
        int d = requests - started < depth ? (int)(requests - started) : depth;
        if (send_batch(&cs[i], d) != 0)
            return 1;
        started += d;
    }
    struct epoll_event evs[256];
    while (done < requests) {
        if (now_ns() > deadline) {
            fprintf(stderr, "kvload: timeout after %d s (%ld of %ld answered)\n", timeout, done,
                    requests);
            return 1;
        }
        int k = epoll_wait(ep, evs, 256, 1000);
        for (int i = 0; i < k; i++) {
            struct cn *c = evs[i].data.ptr;
            ssize_t r = recv(c->fd, c->in + c->inlen, IN_CAP - c->inlen, 0);
            if (r <= 0) {
                if (r < 0 && (errno == EINTR || errno == EAGAIN))
                    continue;
                fprintf(stderr, "kvload: the server closed a connection (%ld answered)\n", done);
                return 1;
            }
            c->inlen += (size_t)r;
            size_t off = 0;
            long m;
            int err = 0;
            while (c->owed > 0 && (m = one_response(c->in + off, c->inlen - off, &err)) != 0) {
                if (m < 0) {
                    fprintf(stderr, "kvload: a response it cannot read: %.40s\n", c->in + off);
                    return 1;
                }
                off += (size_t)m;
                errors += err;
                err = 0;
                done++;
                c->owed--;
            }
            memmove(c->in, c->in + off, c->inlen - off);
            c->inlen -= off;
            if (c->owed == 0) {
                uint64_t us = (now_ns() - c->sent_ns) / 10000;
                lat[us < LAT_BUCKETS ? us : LAT_BUCKETS - 1] += 1;
                if (started < requests) {
                    int d = requests - started < depth ? (int)(requests - started) : depth;
                    if (send_batch(c, d) != 0)
                        return 1;
                    started += d;
                }
            }
        }
    }
    double secs = (double)(now_ns() - t0) / 1e9;
    uint64_t batches = 0;
    for (int i = 0; i < LAT_BUCKETS; i++)
        batches += lat[i];
    printf("KVLOAD requests=%ld errors=%ld secs=%.3f rps=%.0f p50_ms=%.2f p99_ms=%.2f\n", done,
           errors, secs, (double)done / secs, pct(batches, 0.50), pct(batches, 0.99));
    for (int i = 0; i < conns; i++) {
        close(cs[i].fd);
        free(cs[i].in);
    }
    free(cs); /* (an ASan build's leak check runs at exit) */
    free(req);
    return 0;
}
