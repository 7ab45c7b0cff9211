/*
 * fuzz_http_req.c - libFuzzer target for proto/http_req.
 *
 * The input is a client stream of pipelined requests.  It is parsed twice
 * with the same limits: once with everything available, and once as if it
 * arrived in chunks whose sizes come from a generator seeded by the input,
 * each call getting a fresh exact-size copy of the bytes so far (ASan then
 * catches a read past len, or a pointer kept across calls).  Both must give
 * the same sequence of outcomes; every outcome must keep the parser's
 * promises (consumed within the input, slices inside the buffer, only the
 * documented statuses, a non-closing error only for a 405); and the helpers
 * the front door calls on a parsed request run on each one.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I. \
 *     tests/fuzz/fuzz_http_req.c proto/http_req*.c proto/hkv.c -o /tmp/fuzz_http_req
 *   /tmp/fuzz_http_req -max_total_time=20 tests/fuzz/corpus_http_req
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http_req.h"

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                           \
        }                                                                      \
    } while (0)

struct result {
    int rc;
    size_t consumed;
    int status, close;
    uint64_t hash;      /* of the request's fields, slices as offsets */
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

static int inside(struct http_slice s, const char *buf, size_t len)
{
    if (s.p == NULL)
        return s.len == 0;
    return s.p >= buf && s.len <= len && (size_t)(s.p - buf) <= len - s.len;
}

/* Runs the front door's helpers on a parsed request; checks their bounds. */
static void helpers(const struct http_req *r)
{
    char out[64];
    size_t n;
    int rc = http_pct_decode(r->path.p, r->path.len, out, sizeof(out), &n);
    CHECK(rc == HKV_OK || rc == HKV_EPROTO || rc == HKV_ETOOBIG);
    if (rc == HKV_OK)
        CHECK(n <= r->path.len && n <= sizeof(out));
    struct http_slice v;
    uint64_t u;
    const char *params[] = { "index", "wait" };
    for (int i = 0; i < 2; i++) {
        rc = http_query_get(r->query, params[i], &v);
        CHECK(rc == HKV_OK || rc == HKV_ENOENT || rc == HKV_EPROTO);
        if (rc == HKV_OK) {
            CHECK(inside(v, r->query.p, r->query.len));
            rc = i == 0 ? http_parse_u64(v, &u) : http_parse_wait(v, &u);
            CHECK(rc == HKV_OK || rc == HKV_EPROTO);
        }
    }
    int m = http_req_inm_match(r, "\"v1\"", 4);
    CHECK(m == 0 || m == 1);
    CHECK(m == 0 || r->if_none_match);
    struct http_slice user, pass;
    rc = http_req_basic(r, out, sizeof(out), &user, &pass);
    CHECK(rc == HKV_OK || rc == HKV_ENOENT || rc == HKV_EPROTO || rc == HKV_ETOOBIG);
    if (rc == HKV_OK)
        CHECK(user.p == out && user.len + 1 + pass.len <= sizeof(out));
    size_t pos = 0, k = 0;
    struct http_slice name;
    while (http_req_field_next(r, &pos, &name, &v) == HKV_OK) {
        CHECK(inside(name, r->headers.p, r->headers.len) && inside(v, r->headers.p, r->headers.len));
        CHECK(name.len > 0);
        CHECK(++k <= 1000);
    }
}

/* Checks one outcome against its buffer and the limits, and records it. */
static struct result record(const struct http_limits *lim, const char *buf, size_t len, int rc,
                            size_t consumed, const struct http_req *r, const struct http_error *e)
{
    struct result res = { rc, consumed, 0, 0, 0 };
    CHECK(rc == HKV_OK || rc == HKV_EAGAIN || rc == HKV_EPROTO);
    CHECK(consumed <= len);
    if (rc == HKV_EAGAIN) {
        CHECK(consumed == 0);
        return res;
    }
    if (rc == HKV_EPROTO) {
        int s = e->status;
        CHECK(s == 400 || s == 405 || s == 413 || s == 414 || s == 417 || s == 431 || s == 501 ||
              s == 505);
        CHECK(e->close == 0 || e->close == 1);
        CHECK(e->reason != NULL);
        CHECK(e->close ? consumed == 0 : (s == 405 && consumed > 0));
        res.status = s;
        res.close = e->close;
        res.hash = fnv(14695981039346656037ULL, e->reason, strlen(e->reason));
        return res;
    }
    CHECK(consumed > 0);
    CHECK(r->method == HTTP_GET || r->method == HTTP_HEAD || r->method == HTTP_PUT ||
          r->method == HTTP_DELETE || r->method == HTTP_POST);
    CHECK(r->method == HTTP_PUT || r->content_length == 0);
    CHECK(r->idem_key.p == NULL || (r->idem_key.len > 0 && r->idem_key.len <= HTTP_IDEM_KEY_MAX));
    CHECK(r->minor == 0 || r->minor == 1);
    CHECK(r->keep_alive == 0 || r->keep_alive == 1);
    const struct http_slice *sl[] = { &r->target, &r->path, &r->query, &r->host,
                                      &r->authorization, &r->last_event_id, &r->headers,
                                      &r->if_match, &r->idem_key };
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < 9; i++) {
        int static_root = i == 1 && sl[i]->len == 1 && sl[i]->p != NULL && !inside(*sl[i], buf, consumed);
        CHECK(static_root || inside(*sl[i], buf, consumed));
        long off = sl[i]->p == NULL ? -1 : static_root ? -2 : (long)(sl[i]->p - buf);
        h = fnv(h, &off, sizeof(off));
        h = fnv(h, &sl[i]->len, sizeof(sl[i]->len));
    }
    CHECK(r->path.p != NULL && r->path.len > 0 && r->path.p[0] == '/');
    CHECK(r->target.len + 12 <= lim->max_line);   /* "M " target " HTTP/1.x\r\n" */
    CHECK(r->headers.len <= lim->max_header_bytes);
    int flags[] = { r->method, r->minor, r->keep_alive, r->if_none_match, r->has_accept, (int)r->accept,
                    (int)r->content_length, r->expect_continue };
    res.hash = fnv(h, flags, sizeof(flags));
    helpers(r);
    return res;
}

/* Parses the whole stream with all bytes present; returns the outcome count. */
static size_t parse_whole(const struct http_limits *lim, const char *data, size_t size,
                          struct result *out)
{
    struct http_req_parser p;
    http_req_parser_init(&p, lim);
    size_t off = 0, n = 0;
    for (;;) {
        size_t consumed = 7;
        struct http_req r;
        struct http_error e;
        memset(&r, 0, sizeof(r));
        int rc = http_req_parse(&p, data + off, size - off, &consumed, &r, &e);
        out[n++] = record(&p.lim, data + off, size - off, rc, consumed, &r, &e);
        if (consumed == 0)
            break;
        off += consumed;
    }
    return n;
}

/* Parses the stream as it would arrive in chunks; compares with `want`. */
static void parse_chunked(const struct http_limits *lim, const char *data, size_t size,
                          uint64_t seed, const struct result *want, size_t nwant)
{
    struct http_req_parser p;
    http_req_parser_init(&p, lim);
    size_t off = 0, end = 0, n = 0;
    uint64_t x = seed | 1;
    for (;;) {
        size_t have = end - off;
        char *copy = malloc(have ? have : 1);
        CHECK(copy != NULL);
        memcpy(copy, data + off, have);
        size_t consumed = 7;
        struct http_req r;
        struct http_error e;
        memset(&r, 0, sizeof(r));
        int rc = http_req_parse(&p, copy, have, &consumed, &r, &e);
        struct result got = record(&p.lim, copy, have, rc, consumed, &r, &e);
        free(copy);
        if (rc == HKV_EAGAIN && end < size) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            size_t step = (x & 3) == 0 ? 1 + (size_t)(x >> 8) % 512 : 1 + (size_t)(x >> 8) % 4;
            end = end + step > size ? size : end + step;
            continue;
        }
        CHECK(n < nwant);
        const struct result *w = &want[n++];
        CHECK(got.rc == w->rc && got.consumed == w->consumed && got.status == w->status &&
              got.close == w->close && got.hash == w->hash);
        if (consumed == 0)
            break;
        off += consumed;
    }
    CHECK(n == nwant);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct http_limits small = { 48, 3, 96 };
    static const struct http_limits deflt = { 0, 0, 0 };
    const char *s = (const char *)data;
    struct result *want = malloc((size + 2) * sizeof(*want));
    CHECK(want != NULL);
    uint64_t seed = fnv(14695981039346656037ULL, data, size);
    const struct http_limits *lims[] = { &small, &deflt };
    for (size_t i = 0; i < 2; i++) {
        size_t n = parse_whole(lims[i], s, size, want);
        parse_chunked(lims[i], s, size, seed + i, want, n);
    }
    free(want);

    /* The helpers on raw bytes as well. */
    char out[256];
    size_t n;
    int rc = http_pct_decode(s, size, out, sizeof(out), &n);
    CHECK(rc == HKV_OK || rc == HKV_EPROTO || rc == HKV_ETOOBIG);
    if (rc == HKV_OK)
        CHECK(n <= size && n <= sizeof(out));
    struct http_slice q = { s, size }, v;
    uint64_t u;
    if (http_query_get(q, "wait", &v) == HKV_OK)
        (void)http_parse_wait(v, &u);
    return 0;
}
