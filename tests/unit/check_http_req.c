/*
 * check_http_req.c - the HTTP/1.1 request parser (proto/http_req): every
 * status it can ask for, the framing rules that stop request smuggling, the
 * limits, keep-alive, pipelining, and the helpers the front door uses.
 *
 * Every request in the tables is also fed split at every byte offset and one
 * byte at a time, each call on a fresh exact-size copy (so a read past the
 * bytes given, or a pointer kept across calls, shows under valgrind/ASan),
 * and must give exactly what it gives whole.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http_req.h"

#define R(lit) lit, sizeof(lit) - 1

struct out {
    int rc;
    size_t consumed;
    struct http_error err;
    struct http_req req;
};

static struct out parse(const char *s, size_t n, const struct http_limits *lim)
{
    struct http_req_parser p;
    http_req_parser_init(&p, lim);
    struct out o;
    memset(&o, 0, sizeof(o));
    o.rc = http_req_parse(&p, s, n, &o.consumed, &o.req, &o.err);
    return o;
}

/* A request's slices as offsets from its buffer (-1 absent, -2 elsewhere). */
static void norm(const struct http_req *r, const char *base, size_t n, long *v)
{
    const struct http_slice *sl[] = { &r->target, &r->path, &r->query, &r->host,
                                      &r->authorization, &r->last_event_id, &r->headers };
    for (size_t i = 0; i < 7; i++) {
        const char *p = sl[i]->p;
        v[2 * i] = p == NULL ? -1 : (p >= base && p <= base + n) ? (long)(p - base) : -2;
        v[2 * i + 1] = (long)sl[i]->len;
    }
    v[14] = r->method;
    v[15] = r->minor;
    v[16] = r->keep_alive;
    v[17] = r->if_none_match;
    v[18] = (long)r->accept | (long)r->has_accept << 8;
}

/* Feeds s as the prefixes ends[0..k) then the whole, each on a fresh copy;
 * checks the outcome equals `want` (parsed whole). */
static void feed_like(const char *s, size_t n, const struct http_limits *lim, const size_t *ends,
                      size_t k, const struct out *want)
{
    struct http_req_parser p;
    http_req_parser_init(&p, lim);
    long wv[19], gv[19];
    norm(&want->req, s, n, wv);
    for (size_t i = 0; i <= k; i++) {
        size_t end = i < k ? ends[i] : n;
        char *copy = malloc(end ? end : 1);
        ck_assert_ptr_nonnull(copy);
        memcpy(copy, s, end);
        struct out o;
        memset(&o, 0, sizeof(o));
        o.rc = http_req_parse(&p, copy, end, &o.consumed, &o.req, &o.err);
        if (o.rc == HKV_EAGAIN && end < n) {
            ck_assert_uint_eq(o.consumed, 0);
            free(copy);
            continue;
        }
        ck_assert_int_eq(o.rc, want->rc);
        ck_assert_uint_eq(o.consumed, want->consumed);
        if (o.rc == HKV_EPROTO) {
            ck_assert_int_eq(o.err.status, want->err.status);
            ck_assert_int_eq(o.err.close, want->err.close);
            ck_assert_str_eq(o.err.reason, want->err.reason);
        }
        if (o.rc == HKV_OK) {
            norm(&o.req, copy, end, gv);
            ck_assert_mem_eq(gv, wv, sizeof(gv));
        }
        free(copy);
        return;
    }
    ck_abort_msg("no outcome");
}

/* Whole, every split into two, and one byte at a time agree. */
static struct out parse_all_ways(const char *s, size_t n, const struct http_limits *lim)
{
    struct out whole = parse(s, n, lim);
    for (size_t cut = 0; cut <= n; cut++)
        feed_like(s, n, lim, &cut, 1, &whole);
    size_t *ends = malloc((n + 1) * sizeof(*ends));
    ck_assert_ptr_nonnull(ends);
    for (size_t i = 0; i < n; i++)
        ends[i] = i + 1;
    feed_like(s, n, lim, ends, n, &whole);
    free(ends);
    return whole;
}

static struct http_req ok(const char *s, size_t n)
{
    struct out o = parse_all_ways(s, n, NULL);
    ck_assert_msg(o.rc == HKV_OK, "%.*s: rc %d status %d (%s)", (int)n, s, o.rc, o.err.status,
                  o.err.reason ? o.err.reason : "");
    ck_assert_uint_eq(o.consumed, n);
    return o.req;
}

static void refused(const char *s, size_t n, int status, int close)
{
    struct out o = parse_all_ways(s, n, NULL);
    ck_assert_msg(o.rc == HKV_EPROTO && o.err.status == status && o.err.close == close,
                  "%.*s: rc %d status %d close %d, want %d/%d", (int)n, s, o.rc, o.err.status,
                  o.err.close, status, close);
    ck_assert_ptr_nonnull(o.err.reason);
    ck_assert_uint_eq(o.consumed, close ? 0 : n);
}

static int slice_is(struct http_slice s, const char *want)
{
    return s.p != NULL && s.len == strlen(want) && memcmp(s.p, want, s.len) == 0;
}

START_TEST(get_and_head_parse_into_path_query_and_host)
{
    struct http_req r = ok(R("GET /v1/kv/a%2Fb?index=7&wait=30s HTTP/1.1\r\nHost: h:8080 \r\n\r\n"));
    ck_assert_int_eq(r.method, HTTP_GET);
    ck_assert_int_eq(r.minor, 1);
    ck_assert(slice_is(r.target, "/v1/kv/a%2Fb?index=7&wait=30s"));
    ck_assert(slice_is(r.path, "/v1/kv/a%2Fb"));
    ck_assert(slice_is(r.query, "index=7&wait=30s"));
    ck_assert(slice_is(r.host, "h:8080"));
    ck_assert_ptr_null(r.authorization.p);
    ck_assert_ptr_null(r.last_event_id.p);

    r = ok(R("HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n"));
    ck_assert_int_eq(r.method, HTTP_HEAD);
    ck_assert_ptr_null(r.query.p);
    r = ok(R("GET /x? HTTP/1.1\r\nHost: h\r\n\r\n"));
    ck_assert(r.query.p != NULL && r.query.len == 0);
    /* absolute-form: the path is its path, "/" when empty */
    r = ok(R("GET http://h:1/v1/kv/k?wait=1s HTTP/1.1\r\nHost: h\r\n\r\n"));
    ck_assert(slice_is(r.path, "/v1/kv/k") && slice_is(r.query, "wait=1s"));
    r = ok(R("GET HTTPS://h?x HTTP/1.1\r\nHost: h\r\n\r\n"));
    ck_assert(slice_is(r.path, "/") && slice_is(r.query, "x"));
    /* empty lines before the request line are skipped and consumed */
    r = ok(R("\r\n\r\nGET / HTTP/1.0\r\n\r\n"));
    ck_assert_int_eq(r.minor, 0);
    refused(R("\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.0\r\n\r\n"), 400, 1);
}
END_TEST

START_TEST(methods_other_than_get_head_are_405)
{
    /* framed without a body on a keep-alive connection: answer and go on */
    refused(R("PATCH /v1/kv/a HTTP/1.1\r\nHost: h\r\n\r\n"), 405, 0);
    refused(R("PATCH /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"), 405, 0);
    refused(R("get / HTTP/1.1\r\nHost: h\r\n\r\n"), 405, 0);
    refused(R("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"), 405, 0);
    refused(R("CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n"), 405, 0);
    /* with a body, or on a connection that closes anyway: close */
    refused(R("PATCH /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"), 405, 1);
    refused(R("PATCH / HTTP/1.0\r\n\r\n"), 405, 1);
    refused(R("PATCH / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"), 405, 1);
    /* POST is a method (POST /v1/ratelimit/KEY), without a body */
    struct http_req q = ok(R("POST /v1/ratelimit/a HTTP/1.1\r\nHost: h\r\n\r\n"));
    ck_assert_int_eq(q.method, HTTP_POST);
    refused(R("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"), 413, 1);
    refused(R("G\"T / HTTP/1.1\r\nHost: h\r\n\r\n"), 400, 1);
}
END_TEST

START_TEST(put_and_delete_carry_their_write_fields)
{
    struct http_req r = ok(R("PUT /v1/kv/a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n"
                             "Expect: 100-continue\r\nIf-Match: \"7\"\r\n"
                             "Idempotency-Key: k-1\r\n\r\n"));
    ck_assert_int_eq(r.method, HTTP_PUT);
    ck_assert_uint_eq(r.content_length, 3);
    ck_assert_int_eq(r.expect_continue, 1);
    ck_assert(slice_is(r.if_match, "\"7\""));
    ck_assert(slice_is(r.idem_key, "k-1"));
    r = ok(R("DELETE /v1/kv/a HTTP/1.1\r\nHost: h\r\n\r\n"));
    ck_assert_int_eq(r.method, HTTP_DELETE);
    ck_assert_ptr_null(r.if_match.p);
    ck_assert_ptr_null(r.idem_key.p);
    ck_assert_int_eq(r.expect_continue, 0);
    refused(R("DELETE /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nab"), 413, 1);
    refused(R("PUT /x HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n"), 417, 1);
    refused(R("PUT /x HTTP/1.1\r\nHost: h\r\nIdempotency-Key: a\r\nIdempotency-Key: b\r\n\r\n"),
            400, 1);
    refused(R("PUT /x HTTP/1.1\r\nHost: h\r\nIdempotency-Key:\r\n\r\n"), 400, 1);
    refused(R("PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"), 501, 1);
}
END_TEST

START_TEST(versions_other_than_1x_are_505)
{
    ck_assert_int_eq(ok(R("GET / HTTP/1.0\r\n\r\n")).minor, 0);
    ck_assert_int_eq(ok(R("GET / HTTP/1.2\r\nHost: h\r\n\r\n")).minor, 1);
    refused(R("GET / HTTP/2.0\r\nHost: h\r\n\r\n"), 505, 1);
    refused(R("GET / HTTP/0.9\r\n\r\n"), 505, 1);
    refused(R("GET / HTTP/1.1x\r\nHost: h\r\n\r\n"), 400, 1);
    refused(R("GET / http/1.1\r\nHost: h\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/11\r\nHost: h\r\n\r\n"), 400, 1);
    refused(R("GET /\r\n\r\n"), 400, 1);
    refused(R("GET  / HTTP/1.1\r\nHost: h\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1 \r\nHost: h\r\n\r\n"), 400, 1);
}
END_TEST

START_TEST(request_bodies_are_413_and_transfer_codings_501)
{
    ok(R("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"));
    ok(R("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 000\r\n\r\n"));
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"), 413, 1);
    refused(R("HEAD / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx"), 413, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), 501, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\ntransfer-encoding: identity\r\n\r\n"), 501, 1);
}
END_TEST

/* The classic desync attempts: each must be refused and the connection
 * closed, whatever order or spelling the fields come in. */
START_TEST(smuggling_attempts_are_400_and_close)
{
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 0, 5\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: +5\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x5\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: \r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nFoo: x\r\n Transfer-Encoding: chunked\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\nTransfer-Encoding: chunked\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\rTransfer-Encoding: chunked\r\n\r\n"), 400, 1);
    /* two equal lengths are one length (RFC 9112 6.3) */
    ok(R("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nContent-Length: 0, 0\r\n\r\n"));
}
END_TEST

START_TEST(malformed_lines_and_bytes_are_400)
{
    refused(R("GET / HTTP/1.1\nHost: h\r\n\r\n"), 400, 1);             /* bare LF */
    refused(R("GET / HTTP/1.1\r\nHost: h\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\n\n"), 400, 1);
    refused(R("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"), 400, 1);
    refused(R("GET /a\rb HTTP/1.1\r\nHost: h\r\n\r\n"), 400, 1);        /* bare CR */
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n"), 400, 1); /* obs-fold */
    refused(R("GET / HTTP/1.1\r\n\tHost: h\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost : h\r\n\r\n"), 400, 1);           /* space before colon */
    refused(R("GET / HTTP/1.1\r\nHost\t: h\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n"), 400, 1); /* NUL */
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nX: a\x01\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nX: a\x7f\r\n\r\n"), 400, 1);
    refused(R("GET /\0 HTTP/1.1\r\nHost: h\r\n\r\n"), 400, 1);
    refused(R("GET /\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n"), 400, 1);
    refused(R("GET /#frag HTTP/1.1\r\nHost: h\r\n\r\n"), 400, 1);
    refused(R("GET x HTTP/1.1\r\nHost: h\r\n\r\n"), 400, 1);
    refused(R("GET * HTTP/1.1\r\nHost: h\r\n\r\n"), 400, 1);
    refused(R("GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\n: v\r\nHost: h\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nno colon\r\nHost: h\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nX\x80: v\r\nHost: h\r\n\r\n"), 400, 1);
    /* a tab and obs-text are allowed in a value */
    ok(R("GET / HTTP/1.1\r\nHost: h\r\nX-Name: caf\xc3\xa9\tau lait\r\n\r\n"));
}
END_TEST

START_TEST(host_is_required_once_in_http_1_1)
{
    refused(R("GET / HTTP/1.1\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: a b\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"), 400, 1);
    ok(R("GET / HTTP/1.1\r\nHost:\r\n\r\n"));                         /* empty: allowed */
    ok(R("GET / HTTP/1.1\r\nHOST: [::1]:80\r\n\r\n"));
    ck_assert_ptr_null(ok(R("GET / HTTP/1.0\r\n\r\n")).host.p);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nAuthorization: a\r\nAuthorization: b\r\n\r\n"), 400, 1);
    refused(R("GET / HTTP/1.1\r\nHost: h\r\nLast-Event-ID: 1\r\nLast-Event-ID: 2\r\n\r\n"), 400, 1);
}
END_TEST

static void fill(char *s, size_t n) { memset(s, 'a', n); }

START_TEST(limits_give_414_and_431)
{
    struct http_limits lim = { 64, 4, 128 };
    char buf[4096];
    /* "GET /" + k bytes + " HTTP/1.0\r\n" is 16 + k bytes: k = 48 is exactly
     * max_line (CRLF included) and passes; one byte more is 414, and so is
     * any prefix already longer than the limit. */
    for (size_t k = 48; k <= 49; k++) {
        memcpy(buf, "GET /", 5);
        fill(buf + 5, k);
        memcpy(buf + 5 + k, " HTTP/1.0\r\n\r\n", 13);
        struct out o = parse_all_ways(buf, 18 + k, &lim);
        if (k == 48)
            ck_assert_int_eq(o.rc, HKV_OK);
        else
            ck_assert(o.rc == HKV_EPROTO && o.err.status == 414 && o.err.close == 1);
    }
    ck_assert_int_eq(parse(buf, 65, &lim).err.status, 414);
    ck_assert_int_eq(parse(buf, 64, &lim).rc, HKV_EAGAIN);
    size_t n;
    struct out o;

    /* four fields pass, a fifth is 431 */
    const char *four = "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    ck_assert_int_eq(parse_all_ways(four, strlen(four), &lim).rc, HKV_OK);
    const char *five = "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n";
    o = parse_all_ways(five, strlen(five), &lim);
    ck_assert_int_eq(o.err.status, 431);
    ck_assert_int_eq(o.err.close, 1);

    /* a section of exactly max_header_bytes (CRLFs and the empty line
     * included) passes, one byte more is 431 */
    for (size_t k = 112; k <= 113; k++) {
        n = (size_t)snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\nHost: h\r\nX: ");
        fill(buf + n, k);
        memcpy(buf + n + k, "\r\n\r\n", 4);
        o = parse_all_ways(buf, n + k + 4, &lim);
        ck_assert_int_eq(o.rc, k == 112 ? HKV_OK : HKV_EPROTO);
        ck_assert_int_eq(o.err.status, k == 112 ? 0 : 431);
    }
    /* a header section over max_header_bytes is 431, even before its end */
    n = (size_t)snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\nHost: h\r\nX: ");
    fill(buf + n, 200);
    ck_assert_int_eq(parse_all_ways(buf, n + 200, &lim).err.status, 431);
    ck_assert_int_eq(parse(buf, n + 40, &lim).rc, HKV_EAGAIN);
}
END_TEST

/* A hostile client streaming a line that never ends, or endless fields:
 * refused once the bound is passed, with only the bound's bytes held. */
START_TEST(huge_headers_are_refused_at_the_bound)
{
    size_t big = 1 << 20;
    char *s = malloc(big);
    ck_assert_ptr_nonnull(s);
    memcpy(s, "GET /", 5);
    fill(s + 5, big - 5);
    struct http_req_parser p;
    http_req_parser_init(&p, NULL);
    size_t consumed = 0, at = 0;
    struct http_req r;
    struct http_error e;
    int rc = HKV_EAGAIN;
    for (size_t end = 1024; end <= big && rc == HKV_EAGAIN; end += 1024) {
        rc = http_req_parse(&p, s, end, &consumed, &r, &e);
        at = end;
    }
    ck_assert_int_eq(rc, HKV_EPROTO);
    ck_assert_int_eq(e.status, 414);
    ck_assert_uint_le(at, 8192 + 1024);

    size_t n = (size_t)snprintf(s, big, "GET / HTTP/1.1\r\nHost: h\r\n");
    while (n + 8 < big) {
        memcpy(s + n, "X: 1\r\n", 6);
        n += 6;
    }
    http_req_parser_reset(&p);
    ck_assert_int_eq(http_req_parse(&p, s, n, &consumed, &r, &e), HKV_EPROTO);
    ck_assert_int_eq(e.status, 431);
    /* the error is sticky until reset */
    ck_assert_int_eq(http_req_parse(&p, s, n, &consumed, &r, &e), HKV_EPROTO);
    ck_assert_int_eq(e.status, 431);
    ck_assert_uint_eq(consumed, 0);
    free(s);
}
END_TEST

START_TEST(keep_alive_follows_version_and_connection)
{
    ck_assert_int_eq(ok(R("GET / HTTP/1.1\r\nHost: h\r\n\r\n")).keep_alive, 1);
    ck_assert_int_eq(ok(R("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")).keep_alive, 0);
    ck_assert_int_eq(ok(R("GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, CLOSE\r\n\r\n")).keep_alive, 0);
    ck_assert_int_eq(ok(R("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\nConnection: ,close,\r\n\r\n")).keep_alive, 0);
    ck_assert_int_eq(ok(R("GET / HTTP/1.0\r\n\r\n")).keep_alive, 0);
    ck_assert_int_eq(ok(R("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")).keep_alive, 1);
    ck_assert_int_eq(ok(R("GET / HTTP/1.0\r\nConnection: foo,  keep-alive \r\n\r\n")).keep_alive, 1);
    ck_assert_int_eq(ok(R("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n")).keep_alive, 0);
    ck_assert_int_eq(ok(R("GET / HTTP/1.1\r\nHost: h\r\nConnection: closed\r\n\r\n")).keep_alive, 1);
}
END_TEST

START_TEST(pipelined_requests_parse_in_order)
{
    const char s[] = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
                     "PATCH /b HTTP/1.1\r\nHost: h\r\n\r\n"
                     "HEAD /c HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
                     "GET /d HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx"
                     "GET /e HTTP/1.1\r\n";
    size_t n = sizeof(s) - 1, off = 0, consumed;
    struct http_req_parser p;
    http_req_parser_init(&p, NULL);
    struct http_req r;
    struct http_error e;
    ck_assert_int_eq(http_req_parse(&p, s + off, n - off, &consumed, &r, &e), HKV_OK);
    ck_assert(slice_is(r.path, "/a") && r.keep_alive);
    off += consumed;
    ck_assert_int_eq(http_req_parse(&p, s + off, n - off, &consumed, &r, &e), HKV_EPROTO);
    ck_assert(e.status == 405 && e.close == 0 && consumed > 0);
    off += consumed;
    ck_assert_int_eq(http_req_parse(&p, s + off, n - off, &consumed, &r, &e), HKV_OK);
    ck_assert(slice_is(r.path, "/c") && r.method == HTTP_HEAD && !r.keep_alive);
    off += consumed;
    ck_assert_int_eq(http_req_parse(&p, s + off, n - off, &consumed, &r, &e), HKV_EPROTO);
    ck_assert(e.status == 413 && e.close == 1 && consumed == 0);

    /* the last, partial request waits for more bytes */
    const char *tail = strstr(s, "GET /e");
    http_req_parser_reset(&p);
    ck_assert_int_eq(http_req_parse(&p, tail, strlen(tail), &consumed, &r, &e), HKV_EAGAIN);

    /* a flood of pipelined requests: each consumed exactly, none lost */
    const char one[] = "GET /k HTTP/1.1\r\nHost: h\r\n\r\n";
    size_t per = sizeof(one) - 1, count = 1000;
    char *flood = malloc(per * count);
    ck_assert_ptr_nonnull(flood);
    for (size_t i = 0; i < count; i++)
        memcpy(flood + i * per, one, per);
    size_t seen = 0;
    for (off = 0; off < per * count; off += consumed, seen++)
        ck_assert_int_eq(http_req_parse(&p, flood + off, per * count - off, &consumed, &r, &e), HKV_OK);
    ck_assert_uint_eq(seen, count);
    free(flood);
}
END_TEST

START_TEST(fields_the_server_reads)
{
    struct http_req r = ok(R("GET /v1/watch/k HTTP/1.1\r\nHost: h\r\nLast-Event-ID:  42 \r\n"
                             "Accept: text/event-stream\r\nIf-None-Match: \"v1\"\r\n\r\n"));
    ck_assert(slice_is(r.last_event_id, "42"));
    ck_assert_uint_eq(r.accept, HTTP_ACCEPT_SSE);
    ck_assert_int_eq(r.if_none_match, 1);
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\nAccept: application/x-ndjson;q=0.5, text/event-stream;q=0\r\n\r\n"));
    ck_assert_uint_eq(r.accept, HTTP_ACCEPT_NDJSON);
    ck_assert_int_eq(r.has_accept, 1);
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\nAccept: text/html, */*; q=0.1\r\nAccept: Application/*\r\n\r\n"));
    ck_assert_uint_eq(r.accept, HTTP_ACCEPT_ANY | HTTP_ACCEPT_NDJSON);
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\nAccept: */*;q=0.000\r\n\r\n"));
    ck_assert(r.accept == 0 && r.has_accept == 1);
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
    ck_assert(r.accept == 0 && r.has_accept == 0 && r.if_none_match == 0);

    /* the field iterator sees every line, values trimmed */
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\nX-A:  1 \r\nx-b:\r\n\r\n"));
    size_t pos = 0, k = 0;
    struct http_slice name, val;
    const char *names[] = { "Host", "X-A", "x-b" }, *vals[] = { "h", "1", "" };
    while (http_req_field_next(&r, &pos, &name, &val) == HKV_OK) {
        ck_assert_uint_lt(k, 3);
        ck_assert(slice_is(name, names[k]) && slice_is(val, vals[k]));
        k++;
    }
    ck_assert_uint_eq(k, 3);
}
END_TEST

START_TEST(if_none_match_uses_weak_comparison)
{
    struct http_req r = ok(R("GET / HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"a\", W/\"v7\"\r\n\r\n"));
    ck_assert_int_eq(http_req_inm_match(&r, R("\"v7\"")), 1);
    ck_assert_int_eq(http_req_inm_match(&r, R("W/\"a\"")), 1);
    ck_assert_int_eq(http_req_inm_match(&r, R("\"v8\"")), 0);
    ck_assert_int_eq(http_req_inm_match(&r, R("v7")), 0);
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\nif-none-match: \"x\"\r\nIf-None-Match: \"a,b\"\r\n\r\n"));
    ck_assert_int_eq(http_req_inm_match(&r, R("\"a,b\"")), 1);
    ck_assert_int_eq(http_req_inm_match(&r, R("\"a\"")), 0);
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\nIf-None-Match: *\r\n\r\n"));
    ck_assert_int_eq(http_req_inm_match(&r, R("\"anything\"")), 1);
    /* malformed lists match nothing: the full answer is always correct */
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"v7\", v8\r\n\r\n"));
    ck_assert_int_eq(http_req_inm_match(&r, R("\"v7\"")), 0);
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"v7\r\n\r\n"));
    ck_assert_int_eq(http_req_inm_match(&r, R("\"v7\"")), 0);
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
    ck_assert_int_eq(http_req_inm_match(&r, R("\"v7\"")), 0);
}
END_TEST

START_TEST(basic_credentials_decode_strictly)
{
    char out[64];
    struct http_slice u, pw;
    /* "alice:s3cr:et" */
    struct http_req r = ok(R("GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Basic YWxpY2U6czNjcjpldA==\r\n\r\n"));
    ck_assert_int_eq(http_req_basic(&r, out, sizeof(out), &u, &pw), HKV_OK);
    ck_assert(slice_is(u, "alice") && slice_is(pw, "s3cr:et"));
    ck_assert_int_eq(http_req_basic(&r, out, 8, &u, &pw), HKV_ETOOBIG);
    /* ":" alone: empty user and password; "a:\0b" keeps the NUL */
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\nAuthorization: basic Og==\r\n\r\n"));
    ck_assert_int_eq(http_req_basic(&r, out, sizeof(out), &u, &pw), HKV_OK);
    ck_assert(u.len == 0 && pw.len == 0);
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Basic YToAYg==\r\n\r\n"));
    ck_assert_int_eq(http_req_basic(&r, out, sizeof(out), &u, &pw), HKV_OK);
    ck_assert(pw.len == 2 && pw.p[0] == '\0' && pw.p[1] == 'b');
    const char *bad[] = {
        "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Basic YWxpY2U\r\n\r\n",      /* no padding */
        "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Basic YW=pY2U6\r\n\r\n",     /* '=' inside */
        "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Basic YWxp Y2U6\r\n\r\n",    /* space */
        "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Basic YWxpY2U=\r\n\r\n",     /* "alice": no ':' */
        "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Basic Oh==\r\n\r\n",         /* unused bits set */
        "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Basic Y*==\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = ok(bad[i], strlen(bad[i]));
        ck_assert_msg(http_req_basic(&r, out, sizeof(out), &u, &pw) == HKV_EPROTO, "%s", bad[i]);
    }
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer abc\r\n\r\n"));
    ck_assert_int_eq(http_req_basic(&r, out, sizeof(out), &u, &pw), HKV_ENOENT);
    r = ok(R("GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
    ck_assert_int_eq(http_req_basic(&r, out, sizeof(out), &u, &pw), HKV_ENOENT);
}
END_TEST

START_TEST(percent_decoding_is_binary_safe_and_strict)
{
    char out[16];
    size_t n;
    ck_assert_int_eq(http_pct_decode(R("a%2Fb%00c+%7e"), out, sizeof(out), &n), HKV_OK);
    ck_assert_uint_eq(n, 7);
    ck_assert_mem_eq(out, "a/b\0c+~", 7);
    ck_assert_int_eq(http_pct_decode(R("%"), out, sizeof(out), &n), HKV_EPROTO);
    ck_assert_int_eq(http_pct_decode(R("ab%4"), out, sizeof(out), &n), HKV_EPROTO);
    ck_assert_int_eq(http_pct_decode(R("%zz"), out, sizeof(out), &n), HKV_EPROTO);
    ck_assert_int_eq(http_pct_decode(R("%+1"), out, sizeof(out), &n), HKV_EPROTO);
    ck_assert_int_eq(http_pct_decode(R("abcd"), out, 3, &n), HKV_ETOOBIG);
    ck_assert_int_eq(http_pct_decode(R("%41%42%43"), out, 3, &n), HKV_OK);
    ck_assert_uint_eq(n, 3);
    char inplace[] = "k%20%FF";
    ck_assert_int_eq(http_pct_decode(inplace, 7, inplace, 7, &n), HKV_OK);
    ck_assert(n == 3 && memcmp(inplace, "k \xff", 3) == 0);
    ck_assert_int_eq(http_pct_decode("", 0, out, 0, &n), HKV_OK);
    ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(query_parameters_for_long_polls)
{
    struct http_slice q = { "index=42&wait=30s&flag&x=", 25 }, v;
    uint64_t u;
    ck_assert_int_eq(http_query_get(q, "index", &v), HKV_OK);
    ck_assert_int_eq(http_parse_u64(v, &u), HKV_OK);
    ck_assert_uint_eq(u, 42);
    ck_assert_int_eq(http_query_get(q, "wait", &v), HKV_OK);
    ck_assert_int_eq(http_parse_wait(v, &u), HKV_OK);
    ck_assert_uint_eq(u, 30000);
    ck_assert_int_eq(http_query_get(q, "flag", &v), HKV_OK);
    ck_assert(v.len == 0);
    ck_assert_int_eq(http_query_get(q, "x", &v), HKV_OK);
    ck_assert(v.len == 0);
    ck_assert_int_eq(http_query_get(q, "ind", &v), HKV_ENOENT);
    struct http_slice dup = { "index=1&index=2", 15 }, none = { NULL, 0 };
    ck_assert_int_eq(http_query_get(dup, "index", &v), HKV_EPROTO);
    ck_assert_int_eq(http_query_get(none, "index", &v), HKV_ENOENT);

    struct { const char *s; int rc; uint64_t ms; } w[] = {
        {"1500ms", HKV_OK, 1500}, {"5m", HKV_OK, 300000}, {"2h", HKV_OK, 7200000}, {"7", HKV_OK, 7000},
        {"0s", HKV_OK, 0}, {"", HKV_EPROTO, 0}, {"s", HKV_EPROTO, 0}, {"10x", HKV_EPROTO, 0},
        {"-1s", HKV_EPROTO, 0}, {"1.5s", HKV_EPROTO, 0}, {"99999999999999999999h", HKV_EPROTO, 0},
        {"9007199254740993ms", HKV_EPROTO, 0},
    };
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
        struct http_slice s = { w[i].s, strlen(w[i].s) };
        u = 12345;
        ck_assert_msg(http_parse_wait(s, &u) == w[i].rc, "%s", w[i].s);
        if (w[i].rc == HKV_OK)
            ck_assert_uint_eq(u, w[i].ms);
    }
    struct http_slice big = { "18446744073709551615", 20 }, over = { "18446744073709551616", 20 };
    ck_assert_int_eq(http_parse_u64(big, &u), HKV_OK);
    ck_assert_uint_eq(u, UINT64_MAX);
    ck_assert_int_eq(http_parse_u64(over, &u), HKV_EPROTO);
}
END_TEST

Suite *http_req_suite(void)
{
    Suite *s = suite_create("http_req");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"get_and_head_parse_into_path_query_and_host", get_and_head_parse_into_path_query_and_host},
        {"methods_other_than_get_head_are_405", methods_other_than_get_head_are_405},
        {"put_and_delete_carry_their_write_fields", put_and_delete_carry_their_write_fields},
        {"versions_other_than_1x_are_505", versions_other_than_1x_are_505},
        {"request_bodies_are_413_and_transfer_codings_501", request_bodies_are_413_and_transfer_codings_501},
        {"smuggling_attempts_are_400_and_close", smuggling_attempts_are_400_and_close},
        {"malformed_lines_and_bytes_are_400", malformed_lines_and_bytes_are_400},
        {"host_is_required_once_in_http_1_1", host_is_required_once_in_http_1_1},
        {"limits_give_414_and_431", limits_give_414_and_431},
        {"huge_headers_are_refused_at_the_bound", huge_headers_are_refused_at_the_bound},
        {"keep_alive_follows_version_and_connection", keep_alive_follows_version_and_connection},
        {"pipelined_requests_parse_in_order", pipelined_requests_parse_in_order},
        {"fields_the_server_reads", fields_the_server_reads},
        {"if_none_match_uses_weak_comparison", if_none_match_uses_weak_comparison},
        {"basic_credentials_decode_strictly", basic_credentials_decode_strictly},
        {"percent_decoding_is_binary_safe_and_strict", percent_decoding_is_binary_safe_and_strict},
        {"query_parameters_for_long_polls", query_parameters_for_long_polls},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
