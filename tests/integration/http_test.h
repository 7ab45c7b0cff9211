/*
 * http_test.h - a tiny raw HTTP/1.1 client for the front door's suites
 * (check_http.c, check_http_poll.c): exact bytes out (hostile requests,
 * pipelines), responses read back with a deadline, headers looked up by
 * name.  Header-only, static: each suite gets its own copy.  Every read is
 * bounded by its deadline (poll), never by a blocking socket.
 */
#ifndef HKV_HTTP_TEST_H
#define HKV_HTTP_TEST_H

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* (include tests/harness.h first: its second half has no include guard) */

struct hr {
    int status;
    char head[16384];     /* status line and headers, NUL-terminated */
    char body[65536];
    size_t blen;
    char in[262144];      /* bytes read past this response (pipelines) */
    size_t inlen;
};

/* Reads what comes within ms into r->in (appending); 0 on EOF, -1 on
 * timeout, else bytes. */
static inline int hx_fill(int fd, struct hr *r, int ms)
{
    if (r->inlen >= sizeof(r->in))
        return -1;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms < 0 ? 0 : ms) != 1)
        return -1;
    ssize_t n = read(fd, r->in + r->inlen, sizeof(r->in) - r->inlen);
    if (n < 0 && errno == ECONNRESET)
        return 0;
    if (n <= 0)
        return n == 0 ? 0 : -1;
    r->inlen += (size_t)n;
    return (int)n;
}

/* One header's value (trimmed) into out; 1 found, 0 not. */
static inline int hx_hdr(const struct hr *r, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    for (const char *p = strstr(r->head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n")) {
        const char *l = p + 2;
        if (strncasecmp(l, name, n) == 0 && l[n] == ':') {
            const char *v = l + n + 1;
            while (*v == ' ')
                v++;
            const char *end = strstr(v, "\r\n");
            size_t k = end != NULL ? (size_t)(end - v) : strlen(v);
            if (k >= len)
                k = len - 1;
            memcpy(out, v, k);
            out[k] = '\0';
            return 1;
        }
    }
    return 0;
}

static inline uint64_t hx_index(const struct hr *r)
{
    char v[64];
    return hx_hdr(r, "X-Hotkvd-Index", v, sizeof(v)) ? strtoull(v, NULL, 10) : 0;
}

/* Reads one response (head_only: a HEAD's, or a 304: no body) within ms;
 * bytes after it stay in r->in.  0, or -1 (timeout, EOF first, garbage). */
static inline int hx_read(int fd, struct hr *r, int head_only, int ms)
{
    int64_t end = h_now_ms() + ms;
    char *sep;
    while ((sep = memmem(r->in, r->inlen, "\r\n\r\n", 4)) == NULL)
        if (hx_fill(fd, r, (int)(end - h_now_ms())) <= 0)
            return -1;
    size_t hl = (size_t)(sep - r->in) + 4;
    if (hl >= sizeof(r->head))
        return -1;
    memcpy(r->head, r->in, hl);
    r->head[hl] = '\0';
    r->status = 0;
    if (sscanf(r->head, "HTTP/1.1 %d", &r->status) != 1)
        return -1;
    char cl[32];
    size_t blen = 0;
    if (!head_only && r->status != 304 && hx_hdr(r, "Content-Length", cl, sizeof(cl)))
        blen = strtoull(cl, NULL, 10);
    if (blen >= sizeof(r->body))
        return -1;
    while (r->inlen < hl + blen)
        if (hx_fill(fd, r, (int)(end - h_now_ms())) <= 0)
            return -1;
    memcpy(r->body, r->in + hl, blen);
    r->body[blen] = '\0';
    r->blen = blen;
    memmove(r->in, r->in + hl + blen, r->inlen - hl - blen);
    r->inlen -= hl + blen;
    return 0;
}

/* 1 if the server closes fd within ms (anything it sends first is read and
 * dropped). */
static inline int hx_eof(int fd, int ms)
{
    int64_t end = h_now_ms() + ms;
    char buf[4096];
    while (h_now_ms() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)(end - h_now_ms())) != 1)
            return 0;
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return 1;
        if (n < 0)
            return 0;
    }
    return 0;
}

static inline int hx_send(int fd, const char *s)
{
    return h_send(fd, s, strlen(s));
}

/* GET path on a new connection with extra header lines (each ending CRLF,
 * or NULL), closed after.  0 or -1. */
static inline int hx_get(int port, const char *method, const char *path, const char *extra,
                         struct hr *r)
{
    int fd = h_connect(port);
    if (fd < 0)
        return -1;
    char req[8192];
    snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: t\r\n%sConnection: close\r\n\r\n", method,
             path, extra != NULL ? extra : "");
    memset(r, 0, offsetof(struct hr, in));
    r->inlen = 0;
    int rc = hx_send(fd, req) == 0 ? hx_read(fd, r, strcmp(method, "HEAD") == 0, 10000) : -1;
    close(fd);
    return rc;
}

/* The daemon's counter `field` (INFO, summed over its edges). */
static inline int64_t hx_info(const struct daemon *d, const char *field)
{
    return h_info_int(d->port, field);
}

/* Waits up to ms for INFO field to reach want; 1 if it did. */
static inline int hx_info_wait(const struct daemon *d, const char *field, int64_t want, int ms)
{
    int64_t end = h_now_ms() + ms;
    do {
        if (hx_info(d, field) == want)
            return 1;
        h_sleep_ms(20);
    } while (h_now_ms() < end);
    return 0;
}

#endif
