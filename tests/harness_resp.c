/*
 * harness_resp.c - the tests' RESP client and the fixture language built on
 * it (harness.h): a blocking connection with a 5 s timeout, one command's
 * words sent and its one reply read, INFO fields, and h_call, which fails the
 * test at the caller's line (after the test's cleanup) when no reply comes,
 * so a suite needs no "send these words" helper of its own.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define H_MAX_WORDS 256

static void (*fail_cleanup)(void);

void h_on_fail(void (*cleanup)(void))
{
    fail_cleanup = cleanup;
}

void h_fail_cleanup(void)
{
    void (*fn)(void) = fail_cleanup;
    fail_cleanup = NULL; /* once: a cleanup that fails must not loop */
    if (fn != NULL)
        fn();
}

int h_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&in, sizeof(in)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int h_send(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One reply, never a byte past it (the next reply stays in the socket for
 * the next call, or for a test reading the socket itself): what is there is
 * peeked, parsed, and only the reply's own bytes are taken.  Bytes peeked
 * that end before a reply does are all the reply's, so they are taken and
 * the next peek waits for more (SO_RCVTIMEO bounds each wait).  Two system
 * calls a reply instead of one per byte: a test reading 500,000 replies
 * spent most of its time here. */
struct h_reply *h_read(int fd)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t n = recv(fd, buf + len, cap - 1 - len, MSG_PEEK);
        int peeked = n > 0;
        if (n < 0 && errno == ENOTSOCK) /* not a socket: byte by byte */
            n = read(fd, buf + len, 1);
        if (n <= 0)
            break;
        buf[len + (size_t)n] = '\0'; /* replies are read as C strings by the tests */
        struct resp_value *v = NULL;
        size_t used = 0;
        int rc = resp_parse_reply(buf, len + (size_t)n, &used, &v);
        size_t take = rc == HKV_OK ? used - len : (size_t)n;
        if (peeked && recv(fd, buf + len, take, 0) != (ssize_t)take) {
            resp_value_free(&v);
            break;
        }
        len += take;
        buf[len] = '\0';
        if (rc == HKV_OK) {
            struct h_reply *r = calloc(1, sizeof(*r));
            r->v = v;
            r->raw = buf;
            return r;
        }
        if (rc != HKV_EAGAIN)
            break;
    }
    free(buf);
    return NULL;
}

/* Sends one command's words as a RESP array; 0 or -1. */
static int send_words(int fd, int argc, const char **argv)
{
    struct hkv_buf b = HKV_BUF_INIT;
    resp_add_array(&b, argc);
    for (int i = 0; i < argc; i++)
        resp_add_bulk(&b, argv[i], strlen(argv[i]));
    int rc = h_send(fd, buf_head(&b), buf_unread(&b));
    buf_deinit(&b);
    return rc;
}

struct h_reply *h_cmd(int fd, int argc, const char **argv)
{
    return send_words(fd, argc, argv) == 0 ? h_read(fd) : NULL;
}

/* The words of ap up to its NULL (at most H_MAX_WORDS) into words; their count. */
static int words_of(const char **words, va_list ap)
{
    int n = 0;
    const char *w;
    while (n < H_MAX_WORDS && (w = va_arg(ap, const char *)) != NULL)
        words[n++] = w;
    return n;
}

int h_sendv(int fd, ...)
{
    const char *words[H_MAX_WORDS];
    va_list ap;
    va_start(ap, fd);
    int n = words_of(words, ap);
    va_end(ap);
    return send_words(fd, n, words);
}

struct h_reply *h_cmdv(int fd, ...)
{
    const char *words[H_MAX_WORDS];
    va_list ap;
    va_start(ap, fd);
    int n = words_of(words, ap);
    va_end(ap);
    return h_cmd(fd, n, words);
}

void h_free(struct h_reply *r)
{
    if (r == NULL)
        return;
    resp_value_free(&r->v);
    free(r->raw);
    free(r);
}

int h_info_field(int port, const char *field, char *out, size_t len)
{
    int fd = h_connect(port);
    if (fd < 0)
        return -1;
    struct h_reply *r = h_cmdv(fd, "INFO", "all", NULL);
    close(fd);
    if (r == NULL)
        return -1;
    char key[128];
    snprintf(key, sizeof(key), "\n%s:", field);
    int rc = -1;
    /* Search from the byte before the text so the first line matches too. */
    const char *text = r->v->str;
    size_t tlen = r->v->len;
    char *copy = malloc(tlen + 2);
    copy[0] = '\n';
    memcpy(copy + 1, text, tlen);
    copy[tlen + 1] = '\0';
    const char *p = strstr(copy, key);
    if (p != NULL) {
        p += strlen(key);
        size_t n = strcspn(p, "\r\n");
        if (n >= len)
            n = len - 1;
        memcpy(out, p, n);
        out[n] = '\0';
        rc = 0;
    }
    free(copy);
    h_free(r);
    return rc;
}

int64_t h_info_int(int port, const char *field)
{
    char buf[64];
    if (h_info_field(port, field, buf, sizeof(buf)) != 0)
        return -1;
    return strtoll(buf, NULL, 10);
}

int h_ping(int port)
{
    int fd = h_connect(port);
    if (fd < 0)
        return 0;
    struct h_reply *r = h_cmdv(fd, "PING", NULL);
    close(fd);
    int ok = r != NULL && r->v->type == RESP_SIMPLE && r->v->len == 4 &&
             memcmp(r->v->str, "PONG", 4) == 0;
    h_free(r);
    return ok;
}

struct h_reply *h_call_at(const char *file, int line, int fd, ...)
{
    const char *words[H_MAX_WORDS];
    int n = 0;
    va_list ap;
    va_start(ap, fd);
    const char *w;
    while (n < H_MAX_WORDS && (w = va_arg(ap, const char *)) != NULL)
        words[n++] = w;
    va_end(ap);
    struct h_reply *r = fd >= 0 ? h_cmd(fd, n, words) : NULL;
    if (r == NULL) {
        h_fail_cleanup();
        _ck_assert_failed(file, line, "no reply", "no reply to %s %s", n > 0 ? words[0] : "?",
                          n > 1 ? words[1] : "");
    }
    return r;
}

int h_str_is(const struct resp_value *v, const char *want)
{
    return v != NULL && v->str != NULL && v->len == strlen(want) &&
           memcmp(v->str, want, v->len) == 0;
}

int h_edge_of(int fd)
{
    struct h_reply *r = h_cmdv(fd, "INFO", "server", NULL);
    int pid = -1;
    const char *p = r != NULL && r->v->str != NULL ? strstr(r->v->str, "edge_pid:") : NULL;
    if (p != NULL)
        pid = atoi(p + 9);
    h_free(r);
    return pid;
}

char *h_info_processes(int port)
{
    int fd = h_connect(port);
    if (fd < 0)
        return NULL;
    struct h_reply *r = h_cmdv(fd, "INFO", "processes", NULL);
    close(fd);
    char *text = r != NULL && r->v->type == RESP_BULK ? strndup(r->v->str, r->v->len) : NULL;
    h_free(r);
    return text;
}

const struct resp_value *h_attr_get(const struct resp_value *attr, const char *name)
{
    for (size_t i = 0; attr != NULL && i + 1 < attr->n; i += 2)
        if (h_str_is(&attr->elems[i], name))
            return &attr->elems[i + 1];
    return NULL;
}
