/*
 * tx_fixture.h - what the suites of issue 13's commands share (check_tx.c,
 * check_calls.c): the daemon's config (a hot class h:* beside the cold
 * default, so "h:x" and "x" always live on different owners and "{u}a",
 * "{u}b" on one), its start and stop with one connection, and a reply shown
 * as one line (+OK -ERR.. :1 "bulk" (nil) [a, b] {k: v}) to compare.
 */
#ifndef HKV_TESTS_TX_FIXTURE_H
#define HKV_TESTS_TX_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"

#define FIXTURE                                                                          \
    "edge-workers 2\nhot-owners 2\ncold-owners 2\n"                                       \
    "class live pattern h:* pool hot fresh 1s keep 1m\n"                                  \
    "class money pattern d:* pool cold durability durable\n"                              \
    "class default pool cold fresh 10s keep 1m\n"

#define CROSSSLOT "-CROSSSLOT Keys in request don't hash to the same slot"

static struct daemon d;
static int fd = -1;

static inline void up_with(const char *extra)
{
    char conf[1024];
    snprintf(conf, sizeof(conf), "%s%s", FIXTURE, extra);
    ck_assert_int_eq(h_start(&d, conf), 0);
    fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
}

static inline void up(void)
{
    up_with("");
}

static inline void down(void)
{
    if (fd >= 0)
        close(fd);
    fd = -1;
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}

/* A reply as one line: +OK -ERR.. :1 "bulk" (nil) [a, b] {k: v}. */
static inline void show(const struct resp_value *v, char *out, size_t len)
{
    size_t n = strlen(out);
    if (n + 64 >= len)
        return;
    switch (v->type) {
    case RESP_SIMPLE:
        snprintf(out + n, len - n, "+%.*s", (int)v->len, v->str);
        break;
    case RESP_ERROR:
        snprintf(out + n, len - n, "-%.*s", (int)v->len, v->str);
        break;
    case RESP_INT:
        snprintf(out + n, len - n, ":%lld", (long long)v->integer);
        break;
    case RESP_BULK:
        snprintf(out + n, len - n, "\"%.*s\"", (int)v->len, v->str);
        break;
    case RESP_NULL:
        snprintf(out + n, len - n, "(nil)");
        break;
    case RESP_ARRAY:
    case RESP_SET:
    case RESP_MAP:
        snprintf(out + n, len - n, v->type == RESP_MAP ? "{" : "[");
        for (size_t i = 0; i < v->n; i++) {
            if (i > 0)
                strncat(out, v->type == RESP_MAP && i % 2 ? ": " : ", ", len - strlen(out) - 1);
            show(&v->elems[i], out, len);
        }
        strncat(out, v->type == RESP_MAP ? "}" : "]", len - strlen(out) - 1);
        break;
    default:
        snprintf(out + n, len - n, "<type %d>", (int)v->type);
    }
}

/* The reply r shown (r freed); a static buffer. */
static inline const char *shown(struct h_reply *r)
{
    static char buf[8192];
    buf[0] = '\0';
    show(r->v, buf, sizeof(buf));
    h_free(r);
    return buf;
}

/* Runs one command on f (NULL-terminated words) and returns its reply shown. */
#define on(f, ...) shown(h_call((f), __VA_ARGS__))

#define EXPECT_ON(f, want, ...)                                                   \
    do {                                                                          \
        const char *got_ = on(f, __VA_ARGS__, NULL);                              \
        ck_assert_msg(strcmp(got_, want) == 0, "%s: got %s, want %s", #__VA_ARGS__, got_, \
                      want);                                                      \
    } while (0)
#define EXPECT(want, ...) EXPECT_ON(fd, want, __VA_ARGS__)

#endif
