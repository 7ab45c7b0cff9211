/*
 * fuzz_json.c - libFuzzer target for proto/json and proto/b64.
 *
 * The input is tokenized from an exact-size heap copy (ASan catches a read
 * past its end) in counting mode and with a token array, and both must agree.
 * Every token of an accepted text must lie inside the text and inside its
 * parent, `next` must move strictly forward and land on the parent's end, and
 * every reader (json_string, json_streq, json_int64, json_bool, json_member,
 * json_elem) is run on every token: a string token always decodes into a
 * buffer as long as its raw form, and what an int64 reader accepts prints back
 * to the same digits.  The same bytes go to b64_decode: what it accepts
 * re-encodes to exactly the input (only the canonical form is accepted), and
 * the input always round-trips through b64_encode + b64_decode.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I. \
 *     tests/fuzz/fuzz_json.c proto/json.c proto/b64.c proto/hkv.c -o /tmp/fuzz_json
 *   /tmp/fuzz_json -max_total_time=20 tests/fuzz/corpus_json
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/b64.h"
#include "proto/json.h"

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define MAX_TOKS 4096

static struct json_tok toks[MAX_TOKS];

/* Checks token i's subtree; returns the index after it. */
static uint32_t walk(const char *js, size_t len, uint32_t i, uint32_t n, uint32_t lo, uint32_t hi)
{
    const struct json_tok *t = &toks[i];
    CHECK(t->type >= JSON_OBJECT && t->type <= JSON_NULL);
    CHECK(t->start >= lo && (uint64_t)t->start + t->len <= hi && t->start + t->len <= len);
    CHECK(t->next > i && t->next <= n);
    if (t->type == JSON_OBJECT || t->type == JSON_ARRAY) {
        CHECK(t->len >= 2);
        uint32_t k = i + 1, kids = t->type == JSON_OBJECT ? 2 * t->size : t->size;
        for (uint32_t c = 0; c < kids; c++) {
            if (t->type == JSON_OBJECT && c % 2 == 0)
                CHECK(toks[k].type == JSON_STRING);
            k = walk(js, len, k, n, t->start + 1, t->start + t->len - 1);
        }
        CHECK(k == t->next);
        if (t->type == JSON_ARRAY && t->size > 0)
            CHECK(json_elem(toks, (int)i, t->size - 1) >= 0);
    } else {
        CHECK(t->next == i + 1 && t->size == 0);
    }
    if (t->type == JSON_STRING) {
        char *out = malloc(t->len + 1);
        size_t got;
        CHECK(json_string(js, toks, (int)i, out, t->len, &got) == HKV_OK);
        CHECK(got <= t->len);
        if (got > 0)
            CHECK(json_string(js, toks, (int)i, out, got - 1, &got) == HKV_ETOOBIG);
        /* a string without NUL bytes equals itself through json_streq */
        if (memchr(out, 0, got) == NULL) {
            out[got] = '\0';
            CHECK(json_streq(js, toks, (int)i, out));
        }
        free(out);
    }
    int64_t v;
    int rc = json_int64(js, toks, (int)i, &v);
    CHECK(rc == HKV_OK || rc == HKV_EINVAL || rc == HKV_ETOOBIG);
    if (rc == HKV_OK) {
        char d[32];
        int dl = snprintf(d, sizeof(d), "%" PRId64, v);
        CHECK((uint32_t)dl == t->len && memcmp(d, js + t->start, t->len) == 0);
    }
    int b;
    rc = json_bool(toks, (int)i, &b);
    CHECK(rc == (t->type == JSON_TRUE || t->type == JSON_FALSE ? HKV_OK : HKV_EINVAL));
    int m = json_member(js, toks, (int)i, "kvs");
    CHECK(m == -1 || (t->type == JSON_OBJECT && (uint32_t)m > i && (uint32_t)m < t->next));
    return t->next;
}

static void b64(const char *s, size_t n)
{
    size_t cap = b64_decoded_max(n);
    unsigned char *out = malloc(cap + 1);
    size_t got;
    int rc = b64_decode(s, n, out, cap, &got);
    CHECK(rc == HKV_OK || rc == HKV_EPROTO);
    if (rc == HKV_OK) {
        CHECK(got <= cap && b64_encoded_len(got) == n);
        char *e = malloc(n + 1);
        b64_encode(out, got, e);
        CHECK(memcmp(e, s, n) == 0);
        free(e);
        if (got > 0)
            CHECK(b64_decode(s, n, out, got - 1, &got) == HKV_ETOOBIG);
    }
    free(out);
    size_t el = b64_encoded_len(n);
    char *e = malloc(el + 1);
    b64_encode(s, n, e);
    unsigned char *back = malloc(n + 1);
    CHECK(b64_decode(e, el, back, n, &got) == HKV_OK && got == n && memcmp(back, s, n) == 0);
    free(back);
    free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *js = malloc(size + 1);
    memcpy(js, data, size);
    int counted = json_parse(js, size, NULL, 0);
    int n = json_parse(js, size, toks, MAX_TOKS);
    CHECK(counted == HKV_EPROTO || counted == HKV_EFULL || counted > 0);
    if (counted > 0 && counted <= MAX_TOKS)
        CHECK(n == counted);
    else if (counted > MAX_TOKS)
        CHECK(n == HKV_EFULL);
    else
        CHECK(n == counted || n == HKV_EFULL); /* the array may fill before the error */
    if (n > 0)
        CHECK(walk(js, size, 0, (uint32_t)n, 0, (uint32_t)size) == (uint32_t)n);
    b64(js, size);
    free(js);
    return 0;
}
