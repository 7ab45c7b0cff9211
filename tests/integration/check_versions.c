/*
 * check_versions.c - versions over RESP (issue 28) against the real daemon:
 * - GETWITHETAG's etag is the HTTP door's ETag for the same key, before and
 *   after a SETIFMATCH (the owner's version, read through the colo cache);
 * - GETIFNOTMATCH both ways and on a missing key; SETIFMATCH's success,
 *   mismatch (with and without NOGET), missing key (set; XX: nil), its
 *   options (PX, EX 0) and error texts (arity, not an integer, syntax);
 * - a SETIFMATCH retried after its reply was lost (same request id, on the
 *   owner's own protocol) gets the first answer, not a mismatch against
 *   its own write, and is applied once;
 * - Valkey 8.1's SET ... IFEQ (match, mismatch, missing key, GET, its
 *   syntax errors); SETIFMATCH and GETWITHETAG inside MULTI/EXEC.
 * Every wait is bounded; daemons are stopped by pid (h_stop).
 */
#include <check.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/http_test.h"

#define FIXTURE "edge-workers 2\nhot-owners 1\ncold-owners 1\n"

static struct hr R; /* large: not on the stack */

/* The etag of a [etag, value] reply (its value checked against want, NULL:
 * nil), or fails. */
static int64_t pair_etag(const struct h_reply *r, const char *want)
{
    ck_assert_msg(r->v->type == RESP_ARRAY && r->v->n == 2, "not a pair: %s", r->raw);
    ck_assert_int_eq(r->v->elems[0].type, RESP_INT);
    if (want == NULL)
        ck_assert_msg(r->v->elems[1].type == RESP_NULL, "not nil: %s", r->raw);
    else
        ck_assert_msg(h_str_is(&r->v->elems[1], want), "not %s: %s", want, r->raw);
    return r->v->elems[0].integer;
}

static int64_t etag_of(int fd, const char *key, const char *want)
{
    struct h_reply *r = h_call(fd, "GETWITHETAG", key, NULL);
    int64_t e = pair_etag(r, want);
    h_free(r);
    return e;
}

static void expect_error(int fd, const char *text, ...)
{
    const char *w[16];
    int n = 0;
    va_list ap;
    va_start(ap, text);
    for (const char *s; n < 16 && (s = va_arg(ap, const char *)) != NULL;)
        w[n++] = s;
    va_end(ap);
    struct h_reply *r = h_cmd(fd, n, w);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->v->type == RESP_ERROR && r->v->len == strlen(text) &&
                      memcmp(r->v->str, text, r->v->len) == 0,
                  "%s: want -%s, got %s", w[0], text, r->raw);
    h_free(r);
}

static void expect_nil(int fd, ...)
{
    const char *w[16];
    int n = 0;
    va_list ap;
    va_start(ap, fd);
    for (const char *s; n < 16 && (s = va_arg(ap, const char *)) != NULL;)
        w[n++] = s;
    va_end(ap);
    struct h_reply *r = h_cmd(fd, n, w);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->v->type == RESP_NULL, "%s: want nil, got %s", w[0], r->raw);
    h_free(r);
}

/* The HTTP ETag of key (its number), or fails. */
static int64_t http_etag(int hp, const char *key)
{
    char path[256], etag[64];
    snprintf(path, sizeof(path), "/v1/kv/%s", key);
    ck_assert_int_eq(hx_get(hp, "GET", path, NULL, &R), 0);
    ck_assert_int_eq(R.status, 200);
    ck_assert(hx_hdr(&R, "ETag", etag, sizeof(etag)));
    ck_assert_int_eq(etag[0], '"');
    return strtoll(etag + 1, NULL, 10);
}

START_TEST(getwithetag_is_the_http_etag_and_getifnotmatch_both_ways)
{
    struct daemon d;
    char conf[512];
    int hp = h_free_port();
    snprintf(conf, sizeof(conf), FIXTURE "http-port %d\n", hp);
    ck_assert_int_eq(h_start(&d, conf), 0);
    int fd = h_connect(d.port);
    struct h_reply *r = h_call(fd, "SET", "user:1", "alice", NULL);
    ck_assert_str_eq(r->raw, "+OK\r\n");
    h_free(r);
    int64_t e = etag_of(fd, "user:1", "alice");
    ck_assert_int_gt(e, 0);
    ck_assert_int_eq(http_etag(hp, "user:1"), e);
    /* a second read (from the colo cache now) says the same */
    ck_assert_int_eq(etag_of(fd, "user:1", "alice"), e);
    expect_nil(fd, "GETWITHETAG", "nokey", NULL);

    char es[32], other[32];
    snprintf(es, sizeof(es), "%" PRId64, e);
    snprintf(other, sizeof(other), "%" PRId64, e - 1);
    r = h_call(fd, "GETIFNOTMATCH", "user:1", es, NULL);
    ck_assert_int_eq(pair_etag(r, NULL), e); /* unchanged: [etag, nil] */
    h_free(r);
    r = h_call(fd, "GETIFNOTMATCH", "user:1", other, NULL);
    ck_assert_int_eq(pair_etag(r, "alice"), e);
    h_free(r);
    expect_nil(fd, "GETIFNOTMATCH", "nokey", es, NULL);
    expect_error(fd, "ERR value is not an integer or out of range", "GETIFNOTMATCH", "user:1",
                 "abc", NULL);
    expect_error(fd, "ERR wrong number of arguments for 'getifnotmatch' command",
                 "GETIFNOTMATCH", "user:1", NULL);
    expect_error(fd, "ERR wrong number of arguments for 'getwithetag' command", "GETWITHETAG",
                 NULL);

    /* a SETIFMATCH's new etag is the HTTP door's new ETag */
    r = h_call(fd, "SETIFMATCH", "user:1", "bob", es, NULL);
    int64_t e2 = pair_etag(r, NULL);
    h_free(r);
    ck_assert_int_gt(e2, e);
    ck_assert_int_eq(etag_of(fd, "user:1", "bob"), e2);
    ck_assert_int_eq(http_etag(hp, "user:1"), e2);
    close(fd);
    h_stop(&d);
}
END_TEST

START_TEST(setifmatch_success_mismatch_missing_and_errors)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    int fd = h_connect(d.port);
    /* a missing key is set whatever the etag (Garnet's rule) */
    struct h_reply *r = h_call(fd, "SETIFMATCH", "k", "v1", "12345", NULL);
    int64_t e1 = pair_etag(r, NULL);
    h_free(r);
    ck_assert_int_eq(etag_of(fd, "k", "v1"), e1);
    /* XX (hotkvd's): a missing key is not set */
    expect_nil(fd, "SETIFMATCH", "nokey", "v", "0", "XX", NULL);
    expect_nil(fd, "GET", "nokey", NULL);
    /* mismatch: [current etag, current value], nothing written */
    char es[32], bad[32];
    snprintf(es, sizeof(es), "%" PRId64, e1);
    snprintf(bad, sizeof(bad), "%" PRId64, e1 + 1);
    r = h_call(fd, "SETIFMATCH", "k", "v2", bad, NULL);
    ck_assert_int_eq(pair_etag(r, "v1"), e1);
    h_free(r);
    r = h_call(fd, "SETIFMATCH", "k", "v2", bad, "NOGET", NULL);
    ck_assert_int_eq(pair_etag(r, NULL), e1);
    h_free(r);
    ck_assert_int_eq(etag_of(fd, "k", "v1"), e1);
    /* success with PX: the new etag, the value, an expiry */
    r = h_call(fd, "SETIFMATCH", "k", "v2", es, "PX", "100000", "XX", NULL);
    int64_t e2 = pair_etag(r, NULL);
    h_free(r);
    ck_assert_int_gt(e2, e1);
    ck_assert_int_eq(etag_of(fd, "k", "v2"), e2);
    r = h_call(fd, "PTTL", "k", NULL);
    ck_assert_int_gt(r->v->integer, 90000);
    h_free(r);
    /* the old etag no longer matches */
    r = h_call(fd, "SETIFMATCH", "k", "v3", es, NULL);
    ck_assert_int_eq(pair_etag(r, "v2"), e2);
    h_free(r);
    /* errors, in the grammar's order */
    expect_error(fd, "ERR wrong number of arguments for 'setifmatch' command", "SETIFMATCH", "k",
                 "v", NULL);
    expect_error(fd, "ERR value is not an integer or out of range", "SETIFMATCH", "k", "v",
                 "abc", NULL);
    expect_error(fd, "ERR value is not an integer or out of range", "SETIFMATCH", "k", "v",
                 "1.5", "EX", "10", NULL);
    expect_error(fd, "ERR syntax error", "SETIFMATCH", "k", "v", "1", "NX", NULL);
    expect_error(fd, "ERR syntax error", "SETIFMATCH", "k", "v", "1", "EX", NULL);
    expect_error(fd, "ERR invalid expire time in 'setifmatch' command", "SETIFMATCH", "k", "v",
                 "1", "EX", "0", NULL);
    expect_error(fd, "ERR value is not an integer or out of range", "SETIFMATCH", "k", "v", "1",
                 "PX", "x", NULL);
    ck_assert_int_eq(etag_of(fd, "k", "v2"), e2); /* none of them wrote */
    close(fd);
    h_stop(&d);
}
END_TEST

START_TEST(set_ifeq_compares_the_value)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    int fd = h_connect(d.port);
    struct h_reply *r = h_call(fd, "SET", "k", "a", NULL);
    h_free(r);
    expect_nil(fd, "SET", "k", "b", "IFEQ", "x", NULL);
    r = h_call(fd, "SET", "k", "b", "IFEQ", "a", NULL);
    ck_assert_str_eq(r->raw, "+OK\r\n");
    h_free(r);
    r = h_call(fd, "GET", "k", NULL);
    ck_assert(h_str_is(r->v, "b"));
    h_free(r);
    /* GET: the old value whether or not it matched */
    r = h_call(fd, "SET", "k", "c", "IFEQ", "nope", "GET", NULL);
    ck_assert(h_str_is(r->v, "b"));
    h_free(r);
    r = h_call(fd, "SET", "k", "c", "GET", "IFEQ", "b", "EX", "100", NULL);
    ck_assert(h_str_is(r->v, "b"));
    h_free(r);
    r = h_call(fd, "GET", "k", NULL);
    ck_assert(h_str_is(r->v, "c"));
    h_free(r);
    r = h_call(fd, "TTL", "k", NULL);
    ck_assert_int_gt(r->v->integer, 90);
    h_free(r);
    expect_nil(fd, "SET", "missing", "v", "IFEQ", "v", NULL);
    expect_nil(fd, "GET", "missing", NULL);
    expect_error(fd, "ERR syntax error", "SET", "k", "v", "IFEQ", NULL);
    expect_error(fd, "ERR syntax error", "SET", "k", "v", "IFEQ", "c", "NX", NULL);
    expect_error(fd, "ERR syntax error", "SET", "k", "v", "XX", "IFEQ", "c", NULL);
    expect_error(fd, "ERR syntax error", "SET", "k", "v", "IFEQ", "c", "IFEQ", "c", NULL);
    expect_error(fd, "ERR invalid expire time in 'set' command", "SET", "k", "v", "IFEQ", "c",
                 "EX", "0", NULL);
    r = h_call(fd, "GET", "k", NULL);
    ck_assert(h_str_is(r->v, "c"));
    h_free(r);
    close(fd);
    h_stop(&d);
}
END_TEST

START_TEST(setifmatch_inside_multi_exec)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    int fd = h_connect(d.port);
    struct h_reply *r = h_call(fd, "SET", "k", "a", NULL);
    h_free(r);
    int64_t e = etag_of(fd, "k", "a");
    char es[32];
    snprintf(es, sizeof(es), "%" PRId64, e);
    h_free(h_call(fd, "MULTI", NULL));
    r = h_call(fd, "SETIFMATCH", "k", "b", es, NULL);
    ck_assert_str_eq(r->raw, "+QUEUED\r\n");
    h_free(r);
    h_free(h_call(fd, "GETWITHETAG", "k", NULL));
    h_free(h_call(fd, "SETIFMATCH", "k", "c", es, NULL)); /* the old etag: a mismatch */
    r = h_call(fd, "EXEC", NULL);
    ck_assert_msg(r->v->type == RESP_ARRAY && r->v->n == 3, "%s", r->raw);
    struct resp_value *a = r->v->elems;
    ck_assert(a[0].type == RESP_ARRAY && a[0].n == 2 && a[0].elems[1].type == RESP_NULL);
    int64_t e2 = a[0].elems[0].integer;
    ck_assert_int_gt(e2, e);
    ck_assert(a[1].type == RESP_ARRAY && a[1].elems[0].integer == e2 &&
              h_str_is(&a[1].elems[1], "b"));
    ck_assert(a[2].type == RESP_ARRAY && a[2].elems[0].integer == e2 &&
              h_str_is(&a[2].elems[1], "b"));
    h_free(r);
    ck_assert_int_eq(etag_of(fd, "k", "b"), e2);
    close(fd);
    h_stop(&d);
}
END_TEST

/* One CALL of words w on the owner's write link with request id rid. */
static void call_rid(struct h_wire *w, const char *const *words, uint32_t n, struct wire_rid rid,
                     struct wire_msg *m)
{
    struct wire_slice a[8];
    for (uint32_t i = 0; i < n; i++)
        a[i] = wire_cstr(words[i]);
    struct hkv_buf b = HKV_BUF_INIT;
    uint64_t id = h_wire_id(w);
    ck_assert_int_eq(wire_put_call(&b, id, rid, 2, a, n), HKV_OK);
    ck_assert_int_eq(h_wire_call(w, &b, id, 5000, m), 0);
    buf_deinit(&b);
    ck_assert_int_eq(m->type, WIRE_RESP);
}

START_TEST(a_retried_setifmatch_gets_its_first_answer)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\n"), 0);
    struct h_wire w;
    ck_assert_int_eq(h_wire_open(&w, &d, "cold", 0, WIRE_ROLE_WRITE), 0);
    struct wire_msg m;
    const char *set[] = {"SET", "k", "v0"};
    call_rid(&w, set, 3, h_wire_rid(&w), &m);
    const char *get[] = {"GETWITHETAG", "k"};
    call_rid(&w, get, 2, h_wire_rid(&w), &m);
    ck_assert(m.u.resp.reply.len > 5);
    int64_t e0 = strtoll(m.u.resp.reply.p + 5, NULL, 10); /* "*2\r\n:<etag>" */
    char es[32];
    snprintf(es, sizeof(es), "%" PRId64, e0);
    const char *cas[] = {"SETIFMATCH", "k", "v1", es};
    struct wire_rid rid = h_wire_rid(&w);
    call_rid(&w, cas, 4, rid, &m);
    char first[128];
    ck_assert_uint_lt(m.u.resp.reply.len, sizeof(first));
    memcpy(first, m.u.resp.reply.p, m.u.resp.reply.len);
    first[m.u.resp.reply.len] = '\0';
    ck_assert_uint_eq(m.u.resp.nchanges, 1);
    ck_assert_msg(strncmp(first, "*2\r\n:", 5) == 0 && strstr(first, "$-1\r\n") != NULL, "%s",
                  first);
    /* the reply was "lost": the same request again, as a retry on this link */
    rid.prev = w.owner_inc;
    call_rid(&w, cas, 4, rid, &m);
    ck_assert_uint_eq(m.u.resp.reply.len, strlen(first));
    ck_assert_msg(memcmp(m.u.resp.reply.p, first, strlen(first)) == 0, "retry answered %.*s",
                  (int)m.u.resp.reply.len, m.u.resp.reply.p);
    /* applied once: the key holds the etag of the first answer */
    call_rid(&w, get, 2, h_wire_rid(&w), &m);
    ck_assert(m.u.resp.reply.len > 5);
    ck_assert_int_eq(strtoll(m.u.resp.reply.p + 5, NULL, 10), strtoll(first + 5, NULL, 10));
    ck_assert_int_gt(strtoll(first + 5, NULL, 10), e0);
    /* a new request with the old etag is a mismatch */
    call_rid(&w, cas, 4, h_wire_rid(&w), &m);
    ck_assert_uint_eq(m.u.resp.nchanges, 0);
    ck_assert(memmem(m.u.resp.reply.p, m.u.resp.reply.len, "v1", 2) != NULL);
    h_wire_close(&w);
    h_stop(&d);
}
END_TEST

/* A GETWITHETAG answered with the class's degraded nil (its owner stopped,
 * nothing cached) says so in CLIENT META's attribute, as a GET does: a
 * degraded nil is no "no such key" (the history runs read one as a lost
 * write before it did). */
START_TEST(a_degraded_getwithetag_says_so)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\nmiss-wait 200ms\n"
                                 "class live pattern \"live:*\" pool hot fresh 1s keep 10s "
                                 "on-timeout degrade\n"), 0);
    int fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    h_free(h_call(fd, "HELLO", "3", NULL));
    struct h_reply *r = h_call(fd, "CLIENT", "META", "ON", NULL);
    ck_assert_msg(r->v->type == RESP_SIMPLE, "CLIENT META ON: %s", r->raw);
    h_free(r);
    pid_t owner = h_child(&d, "hotkvd: owner hot/0", 0);
    ck_assert_int_gt(owner, 0);
    kill(owner, SIGSTOP);
    r = h_call(fd, "GETWITHETAG", "live:never", NULL);
    kill(owner, SIGCONT);
    const struct resp_value *dg = h_attr_get(r->v->attr, "degraded");
    ck_assert_msg(r->v->type == RESP_NULL && dg != NULL && dg->type == RESP_BOOL &&
                      dg->integer == 1,
                  "a degraded GETWITHETAG: %s", r->raw);
    h_free(r);
    r = h_call(fd, "GETWITHETAG", "live:never", NULL); /* the owner answers: a real nil */
    dg = h_attr_get(r->v->attr, "degraded");
    ck_assert_msg(r->v->type == RESP_NULL && dg != NULL && dg->integer == 0, "%s", r->raw);
    h_free(r);
    close(fd);
    h_stop(&d);
}
END_TEST

/* SETIFMATCH not applied answers the owner's [etag, value]: a client told
 * of a version must not read an older one next (monotonic reads), even from
 * a colo cache that has not heard of it (pushes off, the write made through
 * the other colo). */
START_TEST(a_setifmatch_mismatch_is_no_older_than_the_next_read)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "colos 2\nedge-workers 1\nhot-owners 1\ncold-owners 1\n"
                                 "owner-push no\n"
                                 "class live pattern \"live:*\" pool hot fresh 10s keep 60s\n"),
                     0);
    int a, b; /* one edge per colo: the other colo's */
    ck_assert_msg(h_edge_pair(&d, &a, &b) == 0, "no second edge answered");
    h_free(h_call(a, "SET", "live:k", "v1", NULL));
    struct h_reply *r = h_call(a, "GET", "live:k", NULL); /* cached in colo A, fresh 10 s */
    ck_assert_msg(h_str_is(r->v, "v1"), "%s", r->raw);
    h_free(r);
    h_free(h_call(b, "SET", "live:k", "v2", NULL)); /* colo A is not told (no pushes) */
    r = h_call(a, "SETIFMATCH", "live:k", "x", "1", NULL);
    ck_assert_msg(r->v->type == RESP_ARRAY && r->v->n == 2 && h_str_is(&r->v->elems[1], "v2"),
                  "a mismatch answers the owner's value: %s", r->raw);
    h_free(r);
    r = h_call(a, "GET", "live:k", NULL);
    ck_assert_msg(h_str_is(r->v, "v2"), "GET after the mismatch read an older value: %s",
                  r->raw);
    h_free(r);
    close(a);
    close(b);
    h_stop(&d);
}
END_TEST

Suite *versions_suite(void)
{
    Suite *s = suite_create("versions");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"etag_http", getwithetag_is_the_http_etag_and_getifnotmatch_both_ways},
        {"setifmatch", setifmatch_success_mismatch_missing_and_errors},
        {"ifeq", set_ifeq_compares_the_value},
        {"multi", setifmatch_inside_multi_exec},
        {"retry", a_retried_setifmatch_gets_its_first_answer},
        {"degraded", a_degraded_getwithetag_says_so},
        {"monotonic", a_setifmatch_mismatch_is_no_older_than_the_next_read},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
