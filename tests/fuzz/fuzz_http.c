/*
 * fuzz_http.c - libFuzzer target for the etcd client's HTTP response parser
 * and chunked decoder (proto/http_resp.c), and for what reads the
 * bodies: the watch line splitter and the answer decoders (etcd_msg.c).
 *
 * The input is one server stream.  It is parsed three ways with the same
 * bounds: whole, in pieces whose sizes come from a generator seeded by the
 * input, and one byte at a time; every piece is an exact-size heap copy (ASan
 * catches a read past it, and a slice kept across calls).  All three must
 * give the same events, the same body bytes and end the same way, and every
 * body slice must lie inside its piece.  The same bytes go through the
 * chunked decoder alone (whole vs byte by byte), and each complete body is
 * decoded as every kind of answer and, line by line, as a watch stream:
 * whatever it holds, the decoders return a known status and whatever an
 * accepted answer points to lies inside its own memory (ASan checks reads).
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I. \
 *     tests/fuzz/fuzz_http.c proto/http_resp.c proto/etcd_msg.c \
 *     proto/json.c proto/b64.c proto/buf.c proto/hkv.c -o /tmp/fuzz_http
 *   /tmp/fuzz_http -max_total_time=20 tests/fuzz/corpus_http
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/etcd_msg.h"
#include "proto/http_resp.h"

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define MAX_BODY 4096
#define MAX_EVENTS 4096

struct run {
    int last;                /* DONE, NEED or an error */
    int nev;
    int ev[MAX_EVENTS];
    int status;
    size_t used;             /* bytes consumed through DONE */
    char body[MAX_BODY + 1];
    size_t blen;
};

static void touch(const char *s)
{
    volatile char sink = 0;
    for (; *s != '\0'; s++)
        sink ^= *s;
    (void)sink;
}

/* Every kind of answer, and the body's lines as a watch stream. */
static void decode_body(const char *body, size_t len, int status)
{
    for (int kind = ETCD_K_RANGE; kind <= ETCD_K_AUTH; kind++) {
        struct etcd_answer a;
        int rc = etcd_msg_decode((enum etcd_kind)kind, status, body, len, &a);
        CHECK(rc == a.r.status);
        CHECK(rc == HKV_OK || rc == HKV_EINVAL || rc == HKV_EPROTO || rc == HKV_EIO);
        if (rc == HKV_OK) {
            for (size_t k = 0; k < a.r.nkvs; k++) {
                const struct etcd_kv *kv = &a.r.kvs[k];
                CHECK(kv->key_len > 0 && kv->key[kv->key_len] == '\0');
                CHECK(kv->value[kv->value_len] == '\0');
            }
            if (kind == ETCD_K_AUTH)
                touch(a.token);
        } else {
            CHECK(a.r.nkvs == 0 || rc == HKV_EINVAL);
        }
        if (a.r.message != NULL)
            touch(a.r.message);
        etcd_answer_free(&a);
    }
    struct etcd_lines l;
    etcd_lines_init(&l, 512);
    size_t off = 0;
    while (off < len) {
        size_t used;
        const char *line;
        size_t llen;
        int rc = etcd_lines_next(&l, body + off, len - off, &used, &line, &llen);
        if (rc < 0) {
            CHECK(rc == HKV_ETOOBIG);
            break;
        }
        CHECK(used > 0 && used <= len - off);
        off += used;
        if (rc == 1) {
            CHECK(llen <= 512);
            struct etcd_wanswer w;
            int wr = etcd_msg_decode_watch(line, llen, &w);
            CHECK(wr == HKV_OK || wr == HKV_EPROTO || wr == HKV_EIO);
            if (w.m.kind == ETCD_W_EVENTS) {
                CHECK(w.m.nevents > 0);
                for (size_t k = 0; k < w.m.nevents; k++) {
                    CHECK(w.m.events[k].kv.key_len > 0);
                    CHECK(w.m.events[k].kv.mod_revision > 0);
                    if (k > 0)
                        CHECK(w.m.events[k].kv.mod_revision >= w.m.events[k - 1].kv.mod_revision);
                }
            } else {
                CHECK(w.m.nevents == 0);
            }
            if (w.m.kind == ETCD_W_CANCELED)
                CHECK(w.m.compact_revision > 0);
            if (w.m.kind == ETCD_W_BROKEN)
                CHECK(w.m.status == HKV_EINVAL || w.m.status == HKV_EPROTO ||
                      w.m.status == HKV_EIO);
            touch(w.reason);
            etcd_wanswer_free(&w);
        }
    }
    etcd_lines_deinit(&l);
}

/* Parses data in pieces; step(i) gives the size of piece i (0 = all). */
static void parse(const uint8_t *data, size_t size, uint64_t seed, int mode, struct run *r)
{
    struct http_resp *p = malloc(sizeof(*p));
    http_resp_init(p, MAX_BODY);
    memset(r, 0, sizeof(*r));
    r->last = HTTP_EV_NEED;
    size_t off = 0;
    while (off < size && r->last == HTTP_EV_NEED) {
        size_t n = size - off;
        if (mode == 1) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            n = 1 + (size_t)(seed >> 33) % 64;
        } else if (mode == 2) {
            n = 1;
        }
        if (n > size - off)
            n = size - off;
        char *piece = malloc(n);
        memcpy(piece, data + off, n);
        size_t at = 0;
        for (;;) {
            size_t used = 0, dlen = 0;
            const char *d = NULL;
            int ev = http_resp_step(p, piece + at, n - at, &used, &d, &dlen);
            CHECK(used <= n - at);
            at += used;
            r->used += used;
            if (ev == HTTP_EV_NEED) {
                CHECK(at == n);
                break;
            }
            if (ev < 0 || ev == HTTP_EV_DONE) {
                r->last = ev;
                break;
            }
            if (ev == HTTP_EV_HEAD) {
                CHECK(p->status >= 200 && p->status <= 999);
                r->status = p->status;
                if (r->nev < MAX_EVENTS)
                    r->ev[r->nev++] = ev;
            }
            if (ev == HTTP_EV_DATA) {
                CHECK(dlen > 0 && d >= piece && d + dlen <= piece + n);
                CHECK(r->blen + dlen <= MAX_BODY);
                memcpy(r->body + r->blen, d, dlen);
                r->blen += dlen;
            }
        }
        free(piece);
        off += n;
    }
    free(p);
}

static void chunked_alone(const uint8_t *data, size_t size)
{
    struct http_chunked a, b;
    http_chunked_init(&a);
    http_chunked_init(&b);
    size_t off = 0, boff = 0;
    int ra = HTTP_EV_NEED, rb = HTTP_EV_NEED;
    uint64_t suma = 0, sumb = 0;
    while (off < size) {
        size_t used, dlen;
        const char *d;
        ra = http_chunked_step(&a, (const char *)data + off, size - off, &used, &d, &dlen);
        off += used;
        if (ra == HTTP_EV_DATA)
            suma += dlen;
        else
            break;
    }
    while (boff < size) {
        char *one = malloc(1);
        one[0] = (char)data[boff];
        size_t used, dlen;
        const char *d;
        rb = http_chunked_step(&b, one, 1, &used, &d, &dlen);
        free(one);
        boff += used;
        if (rb == HTTP_EV_DATA)
            sumb += dlen;
        else if (rb != HTTP_EV_NEED)
            break;
        if (used == 0)
            break;
    }
    if (ra < 0 || ra == HTTP_EV_DONE) {
        CHECK(rb == ra);
        CHECK(suma == sumb);
        if (ra == HTTP_EV_DONE)
            CHECK(off == boff);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct run whole, split, bytes;
    uint64_t seed = 1469598103934665603ULL;
    for (size_t i = 0; i < size && i < 16; i++)
        seed = (seed ^ data[i]) * 1099511628211ULL;
    parse(data, size, seed, 0, &whole);
    parse(data, size, seed, 1, &split);
    parse(data, size, seed, 2, &bytes);
    const struct run *rs[2] = {&split, &bytes};
    for (int k = 0; k < 2; k++) {
        CHECK(rs[k]->last == whole.last);
        CHECK(rs[k]->nev == whole.nev);
        CHECK(rs[k]->status == whole.status);
        if (whole.last == HTTP_EV_DONE)
            CHECK(rs[k]->used == whole.used);
        /* an error may cut the body at a different piece boundary */
        if (whole.last >= 0) {
            CHECK(rs[k]->blen == whole.blen);
            CHECK(memcmp(rs[k]->body, whole.body, whole.blen) == 0);
        }
    }
    if (whole.last == HTTP_EV_DONE)
        decode_body(whole.body, whole.blen, whole.status);
    chunked_alone(data, size);
    return 0;
}
