/*
 * fuzz_resp.c - libFuzzer target for proto/resp.
 *
 * The input is a client stream.  It is parsed twice with the same limits:
 * once with everything available, and once as if it arrived in chunks whose
 * sizes come from a generator seeded by the input, each call getting a fresh
 * exact-size copy of the bytes so far (ASan then catches any read past len,
 * and any pointer kept across calls).  Both must give the same sequence of
 * results, every result must stay inside its buffer and its limits, and the
 * same bytes are then read as a stream of replies by resp_parse_reply.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I. \
 *     tests/fuzz/fuzz_resp.c proto/resp*.c proto/buf.c proto/hkv.c -o /tmp/fuzz_resp
 *   /tmp/fuzz_resp -max_total_time=20 tests/fuzz/corpus_resp
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/resp.h"

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
    int argc;
    uint64_t hash;      /* of the arguments' lengths and bytes */
    char err[64];       /* a copy: the text may live in the parser */
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

/* Checks one result against its buffer and the limits, and records it. */
static struct result record(const struct resp_parser *p, const char *buf, size_t len, int rc,
                            size_t consumed, const struct resp_req *req, const char *err)
{
    struct result r = { rc, consumed, -1, 0, "" };
    CHECK(rc == HKV_OK || rc == HKV_EAGAIN || rc == HKV_EPROTO || rc == HKV_ETOOBIG);
    if (rc != HKV_OK) {
        CHECK(consumed == 0);
        if (rc != HKV_EAGAIN) {
            CHECK(err != NULL && strncmp(err, "ERR Protocol error: ", 20) == 0);
            CHECK(strlen(err) < sizeof(r.err));
            strcpy(r.err, err);
        }
        return r;
    }
    CHECK(consumed > 0 && consumed <= len);
    CHECK(req->argc >= 0 && req->argc <= p->lim.max_args);
    CHECK(req->argc == 0 || req->argv != NULL);
    r.argc = req->argc;
    r.hash = 14695981039346656037ULL;
    size_t total = 0;
    for (int i = 0; i < req->argc; i++) {
        const struct resp_slice *a = &req->argv[i];
        int in_buf = a->p >= buf && a->len <= len && a->p - buf <= (ptrdiff_t)(len - a->len);
        int in_scratch = p->scratch != NULL && a->p >= p->scratch &&
                         a->len <= p->scratch_cap &&
                         a->p - p->scratch <= (ptrdiff_t)(p->scratch_cap - a->len);
        CHECK(in_buf || in_scratch);
        CHECK((int64_t)a->len <= p->lim.max_bulk);
        total += a->len;
        r.hash = fnv(r.hash, &a->len, sizeof(a->len));
        if (a->len > 0)
            r.hash = fnv(r.hash, a->p, a->len);
    }
    CHECK(total <= consumed);
    return r;
}

/* Parses the whole stream with all bytes present; returns the result count. */
static size_t parse_whole(const struct resp_limits *lim, const char *data, size_t size,
                          struct result *out)
{
    struct resp_parser p;
    resp_parser_init(&p, lim);
    size_t off = 0, n = 0;
    for (;;) {
        size_t consumed = 1;
        struct resp_req req = { 0, NULL };
        const char *err = NULL;
        int rc = resp_parse(&p, data + off, size - off, &consumed, &req, &err);
        out[n++] = record(&p, data + off, size - off, rc, consumed, &req, err);
        if (rc != HKV_OK)
            break;
        off += consumed;
    }
    resp_parser_deinit(&p);
    return n;
}

/* Parses the stream as it would arrive in chunks; compares with `want`. */
static void parse_chunked(const struct resp_limits *lim, const char *data, size_t size,
                          uint64_t seed, const struct result *want, size_t nwant)
{
    struct resp_parser p;
    resp_parser_init(&p, lim);
    size_t off = 0, end = 0, n = 0;
    uint64_t x = seed | 1;
    for (;;) {
        size_t have = end - off;
        char *copy = malloc(have ? have : 1);
        CHECK(copy != NULL);
        memcpy(copy, data + off, have);
        size_t consumed = 1;
        struct resp_req req = { 0, NULL };
        const char *err = NULL;
        int rc = resp_parse(&p, copy, have, &consumed, &req, &err);
        struct result r = record(&p, copy, have, rc, consumed, &req, err);
        free(copy);
        if (rc == HKV_EAGAIN && end < size) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            size_t step = (x & 3) == 0 ? 1 + (size_t)(x >> 8) % 256 : 1 + (size_t)(x >> 8) % 4;
            end = end + step > size ? size : end + step;
            continue;
        }
        CHECK(n < nwant);
        const struct result *w = &want[n++];
        CHECK(r.rc == w->rc);
        if (rc == HKV_OK) {
            CHECK(r.consumed == w->consumed && r.argc == w->argc && r.hash == w->hash);
            off += consumed;
            continue;
        }
        CHECK(strcmp(r.err, w->err) == 0);
        break;
    }
    CHECK(n == nwant);
    resp_parser_deinit(&p);
}

/* Walks a reply tree, checking every string lies in buf[0..len). */
static void walk(const struct resp_value *v, const char *buf, size_t len, int depth)
{
    CHECK(depth <= RESP_REPLY_MAX_DEPTH + 1);
    if (v->str != NULL)
        CHECK(v->str >= buf && v->len <= len && v->str - buf <= (ptrdiff_t)(len - v->len));
    CHECK(v->n <= len);
    for (size_t i = 0; i < v->n; i++)
        walk(&v->elems[i], buf, len, depth + 1);
    for (const struct resp_value *a = v->attr; a != NULL; a = a->attr) {
        CHECK(a->type == RESP_ATTR && a->n % 2 == 0);
        for (size_t i = 0; i < a->n; i++)
            walk(&a->elems[i], buf, len, depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct resp_limits small = { 64, 16, 48 };
    static const struct resp_limits deflt = { 0, 0, 0 };
    const char *s = (const char *)data;
    struct result *want = malloc((size + 2) * sizeof(*want));
    CHECK(want != NULL);
    uint64_t seed = fnv(14695981039346656037ULL, data, size);

    const struct resp_limits *lims[] = { &small, &deflt };
    for (size_t i = 0; i < 2; i++) {
        size_t n = parse_whole(lims[i], s, size, want);
        parse_chunked(lims[i], s, size, seed + i, want, n);
    }
    free(want);

    /* The same bytes as a stream of replies. */
    size_t off = 0;
    while (off < size) {
        struct resp_value *v = NULL;
        size_t consumed = 0;
        int rc = resp_parse_reply(s + off, size - off, &consumed, &v);
        CHECK(rc == HKV_OK || rc == HKV_EAGAIN || rc == HKV_EPROTO);
        if (rc != HKV_OK) {
            CHECK(v == NULL && consumed == 0);
            break;
        }
        CHECK(v != NULL && consumed > 0 && consumed <= size - off);
        walk(v, s + off, size - off, 0);
        resp_value_free(&v);
        CHECK(v == NULL);
        off += consumed;
    }
    return 0;
}
