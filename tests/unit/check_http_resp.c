/*
 * check_http_resp.c - the etcd client's HTTP/1.1 response parser and chunked
 * decoder (proto/http_resp) on etcd's real answers split at every
 * point, and on the malformed or oversized heads and framings it must refuse.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/agent/etcd_http.h"
#include "proto/http_resp.h"

/* A 200 with Content-Length, as etcd's gateway answers a range. */
static const char resp_len[] =
    "HTTP/1.1 200 OK\r\nAccess-Control-Allow-Headers: accept, content-type, authorization\r\n"
    "Access-Control-Allow-Methods: POST, GET, OPTIONS, PUT, DELETE\r\n"
    "Access-Control-Allow-Origin: *\r\nContent-Type: application/json\r\n"
    "Grpc-Metadata-Content-Type: application/grpc\r\nDate: Tue, 01 Dec 2026 02:09:15 GMT\r\n"
    "Content-Length: 219\r\n\r\n"
    "{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\","
    "\"revision\":\"7\",\"raft_term\":\"2\"},\"kvs\":[{\"key\":\"L2E=\",\"create_revision\":\"2\","
    "\"mod_revision\":\"2\",\"version\":\"1\",\"value\":\"djE=\"}],\"count\":\"1\"}";

/* A 404 error, chunked with a trailer, as etcd answers a revoke of an unknown
 * lease. */
static const char resp_chunked[] =
    "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
    "Trailer: Grpc-Trailer-Content-Type\r\nDate: Tue, 01 Dec 2026 02:09:15 GMT\r\n"
    "Transfer-Encoding: chunked\r\n\r\n"
    "6c\r\n{\"error\":\"etcdserver: requested lease not found\",\"message\":\"etcdserver: requested "
    "lease not found\",\"code\":5}\r\n0\r\nGrpc-Trailer-Content-Type: application/grpc\r\n\r\n";

struct outcome {
    int rc;            /* last event or error */
    int heads;
    int status;
    char body[1024];
    size_t blen;
    size_t used;       /* bytes consumed up to DONE */
};

/* Feeds s in pieces [0,cut) and [cut,len) (cut = len: in one piece), each
 * piece an exact-size heap copy, until DONE or an error. */
static struct outcome feed(const char *s, size_t len, size_t cut, uint64_t max_body)
{
    struct outcome o;
    memset(&o, 0, sizeof(o));
    struct http_resp *p = malloc(sizeof(*p));
    http_resp_init(p, max_body);
    size_t bounds[3] = {0, cut, len};
    for (int piece = 0; piece < 2; piece++) {
        size_t n = bounds[piece + 1] - bounds[piece];
        char *buf = malloc(n + 1);
        memcpy(buf, s + bounds[piece], n);
        size_t off = 0;
        for (int guard = 0; guard < 100000; guard++) {
            size_t used = 0, dlen = 0;
            const char *data = NULL;
            int rc = http_resp_step(p, buf + off, n - off, &used, &data, &dlen);
            ck_assert_uint_le(used, n - off);
            off += used;
            o.used += used;
            o.rc = rc;
            if (rc == HTTP_EV_HEAD) {
                o.heads++;
                o.status = p->status;
            } else if (rc == HTTP_EV_DATA) {
                ck_assert(data >= buf && data + dlen <= buf + n);
                ck_assert_uint_gt(dlen, 0);
                ck_assert_uint_le(o.blen + dlen, sizeof(o.body));
                memcpy(o.body + o.blen, data, dlen);
                o.blen += dlen;
            } else if (rc == HTTP_EV_NEED) {
                ck_assert_uint_eq(off, n);
                break;
            } else {
                break; /* DONE or an error */
            }
        }
        free(buf);
        if (o.rc != HTTP_EV_NEED)
            break;
    }
    free(p);
    return o;
}

static void same_at_every_split(const char *s, size_t len, uint64_t max, int want_rc,
                                int want_status, const char *want_body)
{
    struct outcome whole = feed(s, len, len, max);
    ck_assert_int_eq(whole.rc, want_rc);
    if (want_rc == HTTP_EV_DONE) {
        ck_assert_int_eq(whole.heads, 1);
        ck_assert_int_eq(whole.status, want_status);
        ck_assert_uint_eq(whole.blen, strlen(want_body));
        ck_assert_int_eq(memcmp(whole.body, want_body, whole.blen), 0);
        ck_assert_uint_eq(whole.used, len);
    }
    for (size_t cut = 0; cut <= len; cut++) {
        struct outcome o = feed(s, len, cut, max);
        ck_assert_msg(o.rc == whole.rc, "split at %zu: %d, whole: %d", cut, o.rc, whole.rc);
        ck_assert_int_eq(o.heads, whole.heads);
        ck_assert_int_eq(o.status, whole.status);
        ck_assert_uint_eq(o.blen, whole.blen);
        ck_assert_int_eq(memcmp(o.body, whole.body, o.blen), 0);
    }
}

START_TEST(content_length_answer_at_every_split)
{
    const char *body = strstr(resp_len, "\r\n\r\n") + 4;
    same_at_every_split(resp_len, strlen(resp_len), 4096, HTTP_EV_DONE, 200, body);
}
END_TEST

START_TEST(chunked_answer_with_trailer_at_every_split)
{
    const char *want = "{\"error\":\"etcdserver: requested lease not found\",\"message\":"
                       "\"etcdserver: requested lease not found\",\"code\":5}";
    same_at_every_split(resp_chunked, strlen(resp_chunked), 4096, HTTP_EV_DONE, 404, want);
}
END_TEST

START_TEST(chunks_of_every_size_and_extensions)
{
    const char *s = "HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n"
                    "1\r\na\r\n2;name=val\r\nbc\r\n0A \r\n0123456789\r\n000\r\n\r\n";
    same_at_every_split(s, strlen(s), 64, HTTP_EV_DONE, 200, "abc0123456789");
}
END_TEST

START_TEST(keep_alive_answers_follow_each_other)
{
    char two[2048];
    snprintf(two, sizeof(two), "%s%s", resp_chunked, resp_len);
    struct http_resp p;
    http_resp_init(&p, 4096);
    size_t off = 0, used, dlen;
    const char *data;
    int done = 0, guard = 0;
    while (done < 2 && guard++ < 100) {
        int rc = http_resp_step(&p, two + off, strlen(two) - off, &used, &data, &dlen);
        off += used;
        ck_assert_int_ge(rc, 0);
        if (rc == HTTP_EV_DONE) {
            ck_assert_int_eq(p.status, done == 0 ? 404 : 200);
            ck_assert_int_eq(p.close, 0);
            done++;
            http_resp_init(&p, 4096);
        }
    }
    ck_assert_int_eq(done, 2);
    ck_assert_uint_eq(off, strlen(two));
}
END_TEST

START_TEST(interim_answers_are_skipped_and_close_is_seen)
{
    const char *s = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\n"
                    "Content-Length: 2\r\n\r\nok";
    same_at_every_split(s, strlen(s), 64, HTTP_EV_DONE, 200, "ok");
    struct http_resp p;
    http_resp_init(&p, 64);
    size_t used, dlen;
    const char *data;
    ck_assert_int_eq(http_resp_step(&p, s, strlen(s), &used, &data, &dlen), HTTP_EV_HEAD);
    ck_assert_int_eq(p.close, 1);
    const char *old = "HTTP/1.0 204 No Content\r\n\r\n";
    http_resp_init(&p, 64);
    ck_assert_int_eq(http_resp_step(&p, old, strlen(old), &used, &data, &dlen), HTTP_EV_HEAD);
    ck_assert_int_eq(p.close, 1); /* HTTP/1.0 closes */
    ck_assert_int_eq(http_resp_step(&p, "", 0, &used, &data, &dlen), HTTP_EV_DONE);
}
END_TEST

START_TEST(malformed_heads_and_framings_are_refused)
{
    const char *bad[] = {
        "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n",           /* bare LF */
        "HTTP/1.1 200 OK\r\nContent-Length: 0\n\r\n",
        "HTTP/1.1 200 OK\r\rContent-Length: 0\r\n\r\n",
        "HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 099 OK\r\nContent-Length: 0\r\n\r\n",
        "http/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 101 Switching\r\n\r\n",
        "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
        "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n",      /* space before ':' */
        "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
        "HTTP/1.1 200 OK\r\n\r\nbody until close",              /* no framing */
        "HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\nabc",
        "HTTP/1.1 200 OK\r\nX: a\x01b\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nx\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 x\r\nab\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n folded\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\n\r\n",
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        size_t len = strlen(bad[k]);
        struct outcome o = feed(bad[k], len, len, 64);
        ck_assert_msg(o.rc == HKV_EPROTO, "case %zu gave %d", k, o.rc);
        for (size_t cut = 0; cut <= len; cut++)
            ck_assert_msg(feed(bad[k], len, cut, 64).rc == HKV_EPROTO, "case %zu cut %zu", k,
                          cut);
    }
    static const char nul[] = "HTTP/1.1 200 OK\r\nX: a\0b\r\nContent-Length: 0\r\n\r\n";
    ck_assert_int_eq(feed(nul, sizeof(nul) - 1, sizeof(nul) - 1, 64).rc, HKV_EPROTO);
}
END_TEST

START_TEST(bounds_are_refused_not_allocated)
{
    /* a body over max_body: by Content-Length at once, chunked as it passes */
    const char *cl = "HTTP/1.1 200 OK\r\nContent-Length: 65\r\n\r\n";
    ck_assert_int_eq(feed(cl, strlen(cl), strlen(cl), 64).rc, HKV_ETOOBIG);
    const char *cl0 = "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n";
    ck_assert_int_eq(feed(cl0, strlen(cl0), strlen(cl0), 0).rc, HKV_EPROTO);
    char ch[256];
    snprintf(ch, sizeof(ch), "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "20\r\n%032d\r\n21\r\n%033d\r\n0\r\n\r\n", 0, 0);
    ck_assert_int_eq(feed(ch, strlen(ch), strlen(ch), 64).rc, HKV_ETOOBIG);
    ck_assert_int_eq(feed(ch, strlen(ch), strlen(ch), 0).rc, HTTP_EV_DONE); /* a stream */
    const char *huge = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n";
    ck_assert_int_eq(feed(huge, strlen(huge), strlen(huge), 0).rc, HKV_ETOOBIG);
    /* a line, the header count, the head, a chunk line, the trailers */
    size_t big = HTTP_MAX_HEAD + 16384;
    char *s = malloc(big);
    int n = snprintf(s, big, "HTTP/1.1 200 OK\r\nX: ");
    memset(s + n, 'a', HTTP_MAX_LINE);
    ck_assert_int_eq(feed(s, (size_t)n + HTTP_MAX_LINE, (size_t)n + HTTP_MAX_LINE, 0).rc,
                     HKV_ETOOBIG);
    n = snprintf(s, big, "HTTP/1.1 200 OK\r\n");
    for (int k = 0; k <= HTTP_MAX_HEADERS; k++)
        n += snprintf(s + n, big - (size_t)n, "X%d: y\r\n", k);
    ck_assert_int_eq(feed(s, (size_t)n, (size_t)n, 0).rc, HKV_ETOOBIG);
    n = snprintf(s, big, "HTTP/1.1 200 OK\r\n");
    while ((size_t)n < HTTP_MAX_HEAD + 10)
        n += snprintf(s + n, big - (size_t)n, "X: %04000d\r\n", 0);
    ck_assert_int_eq(feed(s, (size_t)n, (size_t)n, 0).rc, HKV_ETOOBIG);
    n = snprintf(s, big, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;");
    memset(s + n, 'e', HTTP_MAX_CHUNK_LINE);
    ck_assert_int_eq(feed(s, (size_t)n + HTTP_MAX_CHUNK_LINE, 3, 0).rc, HKV_ETOOBIG);
    n = snprintf(s, big, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n");
    for (int k = 0; k <= HTTP_MAX_HEADERS; k++)
        n += snprintf(s + n, big - (size_t)n, "T%d: y\r\n", k);
    ck_assert_int_eq(feed(s, (size_t)n, (size_t)n, 0).rc, HKV_ETOOBIG);
    free(s);
}
END_TEST

START_TEST(chunked_decoder_alone_byte_by_byte)
{
    const char *s = "4\r\nWiki\r\n6;x=\"y\"\r\npedia \r\nE\r\nin \r\n\r\nchunks.\r\n0\r\nA: b\r\n\r\nNEXT";
    struct http_chunked c;
    http_chunked_init(&c);
    char out[64];
    size_t o = 0, i = 0;
    int rc = HTTP_EV_NEED;
    for (; i < strlen(s) && rc != HTTP_EV_DONE; i++) {
        size_t used = 0, dlen = 0;
        const char *data = NULL;
        rc = http_chunked_step(&c, s + i, 1, &used, &data, &dlen);
        ck_assert_int_ge(rc, 0);
        if (rc == HTTP_EV_DATA) {
            memcpy(out + o, data, dlen);
            o += dlen;
        }
        ck_assert_uint_eq(used, 1);
    }
    ck_assert_int_eq(rc, HTTP_EV_DONE);
    ck_assert_uint_eq(o, 24);
    ck_assert_int_eq(memcmp(out, "Wikipedia in \r\n\r\nchunks.", 24), 0);
    ck_assert_str_eq(s + i, "NEXT"); /* stops right after the last CRLF */
}
END_TEST

START_TEST(endpoint_urls)
{
    struct http_url u;
    ck_assert_int_eq(etcd_http_url_parse("http://127.0.0.1:2379", &u), HKV_OK);
    ck_assert_int_eq(u.tls, 0);
    ck_assert_str_eq(u.host, "127.0.0.1");
    ck_assert_str_eq(u.port, "2379");
    ck_assert_str_eq(u.hostport, "127.0.0.1:2379");
    ck_assert_int_eq(etcd_http_url_parse("https://etcd-0.etcd.svc/", &u), HKV_OK);
    ck_assert_int_eq(u.tls, 1);
    ck_assert_str_eq(u.port, "443");
    ck_assert_int_eq(etcd_http_url_parse("http://[::1]:2379", &u), HKV_OK);
    ck_assert_str_eq(u.host, "::1");
    ck_assert_str_eq(u.hostport, "[::1]:2379");
    const char *bad[] = {"127.0.0.1:2379", "ftp://h:1", "http://", "http://:2379",
                         "http://h:0", "http://h:65536", "http://h:12a", "http://h:2379/v3",
                         "http://u@h:1", "http://[::1:2379", "unix:///tmp/s"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
        ck_assert_msg(etcd_http_url_parse(bad[k], &u) == HKV_EINVAL, "%s accepted", bad[k]);
}
END_TEST

Suite *http_resp_suite(void)
{
    Suite *s = suite_create("http_resp");
    TCase *tc = tcase_create("splits");
    tcase_add_test(tc, content_length_answer_at_every_split);
    tcase_add_test(tc, chunked_answer_with_trailer_at_every_split);
    tcase_add_test(tc, chunks_of_every_size_and_extensions);
    tcase_add_test(tc, chunked_decoder_alone_byte_by_byte);
    suite_add_tcase(s, tc);
    tc = tcase_create("connection");
    tcase_add_test(tc, keep_alive_answers_follow_each_other);
    tcase_add_test(tc, interim_answers_are_skipped_and_close_is_seen);
    tcase_add_test(tc, endpoint_urls);
    suite_add_tcase(s, tc);
    tc = tcase_create("hostile");
    tcase_add_test(tc, malformed_heads_and_framings_are_refused);
    tcase_add_test(tc, bounds_are_refused_not_allocated);
    suite_add_tcase(s, tc);
    return s;
}
