/*
 * check_http_write.c - PUT and DELETE /v1/kv/KEY against the real daemon
 * (issue 28, "HTTP writes"), with the raw client of http_test.h:
 * - a PUT is a SET: 200 with ETag "<version>", the same ETag a GET shows
 *   after it, the value RESP's GET reads; ?ttl= and ?px= give the key an
 *   expiry (RESP's PTTL sees it); a DELETE is a DEL: 204, then 404;
 * - If-None-Match: * creates only (201, then 412 with the holder's ETag);
 *   If-Match: "V" is a compare-and-set on the owner's version (200 with the
 *   new ETag, 412 when it changed or the key is gone; DELETE too), and
 *   If-Match: * needs the key to exist; a bad Idempotency-Key is 400;
 * - the gates are RESP's: 401, 403 for a user without +@write or outside
 *   its key patterns, 429 past the `ratelimit write` rule;
 * - bodies: Expect: 100-continue gets its interim 100 before the body is
 *   sent, and a refusal instead when the gates refuse (the body never
 *   sent); a Content-Length over proto-max-bulk-len is 413 before a byte
 *   of the body; a body that does not come within http-body-timeout (or
 *   trickles) closes the connection, counted in INFO; Transfer-Encoding is
 *   501; http-body-timeout is reloadable (CONFIG SET);
 * - owners that do not answer: a PUT past write-deadline is 504 "outcome
 *   unknown" (README's table: it may have been applied).
 * Every loop and wait is bounded; daemons are stopped by pid (h_stop).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/http_test.h"

#define FIXTURE "edge-workers 2\nhot-owners 1\ncold-owners 1\n"

static int start_http(struct daemon *d, int *hp, const char *extra)
{
    char conf[4096];
    *hp = h_free_port();
    snprintf(conf, sizeof(conf), FIXTURE "http-port %d\n%s", *hp, extra != NULL ? extra : "");
    return h_start(d, conf);
}

static struct hr R; /* one response at a time; large, so not on the stack */

/* One request (method, path, extra header lines, body) on a new
 * connection; its response in R.  0 or -1. */
static int req(int hp, const char *method, const char *path, const char *extra, const char *body)
{
    int fd = h_connect(hp);
    if (fd < 0)
        return -1;
    char buf[16384];
    snprintf(buf, sizeof(buf),
             "%s %s HTTP/1.1\r\nHost: t\r\n%sContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
             method, path, extra != NULL ? extra : "", body != NULL ? strlen(body) : 0,
             body != NULL ? body : "");
    memset(&R, 0, offsetof(struct hr, in));
    R.inlen = 0;
    int rc = hx_send(fd, buf) == 0 ? hx_read(fd, &R, 0, 10000) : -1;
    close(fd);
    return rc;
}

static void etag_of(char *out, size_t n)
{
    ck_assert_msg(hx_hdr(&R, "ETag", out, n), "no ETag: %s", R.head);
}

static char *resp_get(int port, const char *k)
{
    static char v[256];
    int fd = h_connect(port);
    struct h_reply *r = h_cmdv(fd, "GET", k, NULL);
    ck_assert_ptr_nonnull(r);
    snprintf(v, sizeof(v), "%s", r->raw);
    h_free(r);
    close(fd);
    return v;
}

START_TEST(put_is_a_set_with_the_etag_get_shows_and_delete_a_del)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, NULL), 0);
    int64_t puts0 = hx_info(&d, "http_puts");
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/w:a", NULL, "hello"), 0);
    ck_assert_msg(R.status == 200, "%s%s", R.head, R.body);
    char put_tag[64], get_tag[64];
    etag_of(put_tag, sizeof(put_tag));
    ck_assert(put_tag[0] == '"' && strtoull(put_tag + 1, NULL, 10) > 0);
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/w:a", NULL, &R), 0);
    ck_assert_int_eq(R.status, 200);
    ck_assert_str_eq(R.body, "hello");
    etag_of(get_tag, sizeof(get_tag));
    ck_assert_str_eq(put_tag, get_tag);
    ck_assert_str_eq(resp_get(d.port, "w:a"), "$5\r\nhello\r\n");
    /* a second PUT: a newer version; a binary body as is */
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/w:a", NULL, "second"), 0);
    ck_assert_int_eq(R.status, 200);
    char tag2[64];
    etag_of(tag2, sizeof(tag2));
    ck_assert_uint_gt(strtoull(tag2 + 1, NULL, 10), strtoull(put_tag + 1, NULL, 10));
    ck_assert_str_eq(resp_get(d.port, "w:a"), "$6\r\nsecond\r\n");
    /* an empty body is an empty value */
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/w:empty", NULL, NULL), 0);
    ck_assert_int_eq(R.status, 200);
    ck_assert_str_eq(resp_get(d.port, "w:empty"), "$0\r\n\r\n");
    /* DELETE: 204 with the delete's version, then 404, and GET is 404 */
    ck_assert_int_eq(req(hp, "DELETE", "/v1/kv/w:a", NULL, NULL), 0);
    ck_assert_int_eq(R.status, 204);
    ck_assert_uint_gt(hx_index(&R), strtoull(tag2 + 1, NULL, 10));
    ck_assert_int_eq(req(hp, "DELETE", "/v1/kv/w:a", NULL, NULL), 0);
    ck_assert_int_eq(R.status, 404);
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/w:a", NULL, &R), 0);
    ck_assert_int_eq(R.status, 404);
    ck_assert_str_eq(resp_get(d.port, "w:a"), "$-1\r\n");
    ck_assert_int_eq(hx_info(&d, "http_puts") - puts0, 3);
    ck_assert_int_ge(hx_info(&d, "http_deletes"), 2);
    /* PUT and DELETE are for /v1/kv only; PATCH is 405 */
    ck_assert_int_eq(req(hp, "PUT", "/v1/watch/w:a", NULL, "x"), 0);
    ck_assert_int_eq(R.status, 405);
    ck_assert_int_eq(req(hp, "PATCH", "/v1/kv/w:a", NULL, NULL), 0);
    ck_assert_int_eq(R.status, 405);
    h_stop(&d);
}
END_TEST

START_TEST(ttl_and_px_set_an_expiry)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, NULL), 0);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/t:a?ttl=100", NULL, "v"), 0);
    ck_assert_int_eq(R.status, 200);
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "PTTL", "t:a", NULL);
    ck_assert_ptr_nonnull(r);
    long long pttl = strtoll(r->raw + 1, NULL, 10);
    h_free(r);
    ck_assert_msg(pttl > 90000 && pttl <= 100000, "PTTL %lld", pttl);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/t:b?px=300", NULL, "v"), 0);
    ck_assert_int_eq(R.status, 200);
    int64_t end = h_now_ms() + 5000;
    int gone = 0;
    while (!gone && h_now_ms() < end) {
        h_sleep_ms(100);
        ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/t:b", NULL, &R), 0);
        gone = R.status == 404;
    }
    ck_assert_msg(gone, "t:b did not expire");
    /* bad ones: 400, nothing written */
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/t:c?ttl=0", NULL, "v"), 0);
    ck_assert_int_eq(R.status, 400);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/t:c?ttl=1&px=1", NULL, "v"), 0);
    ck_assert_int_eq(R.status, 400);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/t:c?ttl=x", NULL, "v"), 0);
    ck_assert_int_eq(R.status, 400);
    ck_assert_int_eq(req(hp, "DELETE", "/v1/kv/t:a?ttl=5", NULL, NULL), 0);
    ck_assert_int_eq(R.status, 400);
    r = h_cmdv(fd, "EXISTS", "t:c", NULL);
    ck_assert_str_eq(r->raw, ":0\r\n");
    h_free(r);
    close(fd);
    h_stop(&d);
}
END_TEST

START_TEST(if_none_match_star_creates_only)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, NULL), 0);
    int64_t f0 = hx_info(&d, "http_precondition_failed");
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/n:a", "If-None-Match: *\r\n", "first"), 0);
    ck_assert_int_eq(R.status, 201);
    char tag[64], tag2[64];
    etag_of(tag, sizeof(tag));
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/n:a", "If-None-Match: *\r\n", "second"), 0);
    ck_assert_int_eq(R.status, 412);
    etag_of(tag2, sizeof(tag2));
    ck_assert_str_eq(tag, tag2); /* the version the key holds */
    ck_assert_str_eq(resp_get(d.port, "n:a"), "$5\r\nfirst\r\n");
    ck_assert_int_eq(hx_info(&d, "http_precondition_failed") - f0, 1);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/n:a", "If-None-Match: \"1\"\r\n", "x"), 0);
    ck_assert_int_eq(R.status, 400);
    /* a bad Idempotency-Key is refused before anything runs (check_http_idem.c has the rest) */
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/n:a", "Idempotency-Key: \"a b\"\r\n", "x"), 0);
    ck_assert_int_eq(R.status, 400);
    ck_assert_str_eq(resp_get(d.port, "n:a"), "$5\r\nfirst\r\n");
    h_stop(&d);
}
END_TEST

static uint64_t tag_num(void)
{
    char t[64];
    etag_of(t, sizeof(t));
    return strtoull(t + 1, NULL, 10);
}

START_TEST(if_match_is_a_compare_and_set_on_the_owners_version)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, NULL), 0);
    char im[96];
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/m:a", NULL, "a"), 0);
    uint64_t v1 = tag_num();
    snprintf(im, sizeof(im), "If-Match: \"%llu\"\r\n", (unsigned long long)v1);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/m:a", im, "b"), 0);
    ck_assert_msg(R.status == 200, "%d %s", R.status, R.body);
    uint64_t v2 = tag_num();
    ck_assert_uint_gt(v2, v1);
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/m:a", NULL, &R), 0);
    ck_assert_str_eq(R.body, "b");
    ck_assert_uint_eq(tag_num(), v2); /* the ETag GET shows is the CAS's new version */
    ck_assert_str_eq(resp_get(d.port, "m:a"), "$1\r\nb\r\n");
    /* the old version no longer matches: 412, nothing changed (PUT and DELETE) */
    int64_t f0 = hx_info(&d, "http_precondition_failed");
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/m:a", im, "c"), 0);
    ck_assert_int_eq(R.status, 412);
    ck_assert_int_eq(req(hp, "DELETE", "/v1/kv/m:a", im, NULL), 0);
    ck_assert_int_eq(R.status, 412);
    ck_assert_str_eq(resp_get(d.port, "m:a"), "$1\r\nb\r\n");
    ck_assert_int_eq(hx_info(&d, "http_precondition_failed") - f0, 2);
    /* a RESP write in between breaks the match too */
    snprintf(im, sizeof(im), "If-Match: \"%llu\"\r\n", (unsigned long long)v2);
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "SET", "m:a", "resp", NULL);
    h_free(r);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/m:a", im, "d"), 0);
    ck_assert_int_eq(R.status, 412);
    ck_assert_str_eq(resp_get(d.port, "m:a"), "$4\r\nresp\r\n");
    /* with ttl, then a DELETE with the current version: 204 */
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/m:a", NULL, &R), 0);
    snprintf(im, sizeof(im), "If-Match: \"%llu\"\r\n", (unsigned long long)tag_num());
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/m:a?ttl=500", im, "e"), 0);
    ck_assert_int_eq(R.status, 200);
    r = h_cmdv(fd, "PTTL", "m:a", NULL);
    long long pttl = strtoll(r->raw + 1, NULL, 10);
    h_free(r);
    ck_assert_msg(pttl > 400000 && pttl <= 500000, "PTTL %lld", pttl);
    snprintf(im, sizeof(im), "If-Match: \"%llu\"\r\n", (unsigned long long)tag_num());
    ck_assert_int_eq(req(hp, "DELETE", "/v1/kv/m:a", im, NULL), 0);
    ck_assert_int_eq(R.status, 204);
    ck_assert_str_eq(resp_get(d.port, "m:a"), "$-1\r\n");
    /* a missing key matches nothing, not even * */
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/m:a", im, "f"), 0);
    ck_assert_int_eq(R.status, 412);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/m:a", "If-Match: *\r\n", "f"), 0);
    ck_assert_int_eq(R.status, 412);
    ck_assert_str_eq(resp_get(d.port, "m:a"), "$-1\r\n");
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/m:a", NULL, "g"), 0);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/m:a", "If-Match: *\r\n", "h"), 0);
    ck_assert_int_eq(R.status, 200);
    ck_assert_str_eq(resp_get(d.port, "m:a"), "$1\r\nh\r\n");
    /* weak tags, lists and If-None-Match with it: 400 */
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/m:a", "If-Match: W/\"1\"\r\n", "x"), 0);
    ck_assert_int_eq(R.status, 400);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/m:a", "If-Match: \"1\", \"2\"\r\n", "x"), 0);
    ck_assert_int_eq(R.status, 400);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/m:a", "If-Match: *\r\nIf-None-Match: *\r\n", "x"), 0);
    ck_assert_int_eq(R.status, 400);
    ck_assert_str_eq(resp_get(d.port, "m:a"), "$1\r\nh\r\n");
    close(fd);
    h_stop(&d);
}
END_TEST

#define AUTH_W "Authorization: Basic d3JpdGVyOndwdw==\r\n" /* writer:wpw */
#define AUTH_R "Authorization: Basic cmVhZGVyOnJwdw==\r\n" /* reader:rpw */

START_TEST(users_acls_and_the_write_rate_limit_answer_401_403_429)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, "requirepass pw\nuser reader on >rpw ~* +@read\n"
                                         "user writer on >wpw ~app:* +@all\n"
                                         "ratelimit write 3/60s burst 3\n"),
                     0);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/app:x", NULL, "v"), 0);
    ck_assert_int_eq(R.status, 401);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/app:x", AUTH_R, "v"), 0);
    ck_assert_msg(R.status == 403 && strstr(R.body, "write"), "%d %s", R.status, R.body);
    ck_assert_int_eq(req(hp, "DELETE", "/v1/kv/app:x", AUTH_R, NULL), 0);
    ck_assert_int_eq(R.status, 403);
    ck_assert_int_eq(req(hp, "PUT", "/v1/kv/other", AUTH_W, "v"), 0); /* outside ~app:* */
    ck_assert_int_eq(R.status, 403);
    int ok = 0, limited = 0;
    char ra[32];
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(req(hp, "PUT", "/v1/kv/app:x", AUTH_W, "v"), 0);
        ok += R.status == 200;
        if (R.status == 429) {
            limited++;
            ck_assert(hx_hdr(&R, "Retry-After", ra, sizeof(ra)) && atoi(ra) >= 1);
        }
    }
    ck_assert_msg(ok == 3 && limited == 2, "%d stored, %d limited", ok, limited);
    /* the reader's GET sees the writer's value */
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/app:x", AUTH_R, &R), 0);
    ck_assert_int_eq(R.status, 200);
    ck_assert_str_eq(R.body, "v");
    h_stop(&d);
}
END_TEST

START_TEST(expect_100_continue_is_answered_before_the_body)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, "user limited on >lpw ~app:* +@all\n"
                                         "user writer on >wpw ~* +@all\n"), 0);
    int fd = h_connect(hp);
    ck_assert_int_eq(hx_send(fd, "PUT /v1/kv/e:a HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
                                 AUTH_W "Expect: 100-continue\r\n\r\n"), 0);
    memset(&R, 0, sizeof(R));
    ck_assert_int_eq(hx_read(fd, &R, 1, 5000), 0); /* the interim response: no body */
    ck_assert_int_eq(R.status, 100);
    ck_assert_int_eq(hx_send(fd, "hello"), 0);
    ck_assert_int_eq(hx_read(fd, &R, 0, 5000), 0);
    ck_assert_int_eq(R.status, 200);
    /* the same connection goes on */
    ck_assert_int_eq(hx_send(fd, "GET /v1/kv/e:a HTTP/1.1\r\nHost: t\r\n" AUTH_W "\r\n"), 0);
    ck_assert_int_eq(hx_read(fd, &R, 0, 5000), 0);
    ck_assert_str_eq(R.body, "hello");
    close(fd);
    /* refused by the gates: the final answer instead of 100, then the close */
    fd = h_connect(hp);
    ck_assert_int_eq(hx_send(fd, "PUT /v1/kv/other HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
                                 "Authorization: Basic bGltaXRlZDpscHc=\r\n" /* limited:lpw */
                                 "Expect: 100-continue\r\n\r\n"), 0);
    memset(&R, 0, sizeof(R));
    ck_assert_int_eq(hx_read(fd, &R, 0, 5000), 0);
    ck_assert_int_eq(R.status, 403);
    ck_assert(hx_eof(fd, 5000));
    close(fd);
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/other", AUTH_W, &R), 0);
    ck_assert_int_eq(R.status, 404);
    h_stop(&d);
}
END_TEST

START_TEST(bodies_are_bounded_and_a_slow_body_closes)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, "proto-max-bulk-len 1mb\nhttp-body-timeout 1s\n"), 0);
    /* over the bound: 413 before a byte of the body, then the close */
    int fd = h_connect(hp);
    ck_assert_int_eq(hx_send(fd, "PUT /v1/kv/b:a HTTP/1.1\r\nHost: t\r\nContent-Length: 1048577\r\n"
                                 "\r\n"), 0);
    memset(&R, 0, sizeof(R));
    ck_assert_int_eq(hx_read(fd, &R, 0, 5000), 0);
    ck_assert_int_eq(R.status, 413);
    ck_assert(hx_eof(fd, 5000));
    close(fd);
    ck_assert_int_eq(hx_info(&d, "http_bodies_too_large"), 1);
    /* at the bound: stored */
    size_t n = 1048576;
    char *big = malloc(n + 256);
    ck_assert_ptr_nonnull(big);
    int hl = snprintf(big, 256, "PUT /v1/kv/b:big HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\n\r\n", n);
    memset(big + hl, 'x', n);
    fd = h_connect(hp);
    ck_assert_int_eq(h_send(fd, big, (size_t)hl + n), 0);
    memset(&R, 0, sizeof(R));
    ck_assert_int_eq(hx_read(fd, &R, 0, 10000), 0);
    ck_assert_int_eq(R.status, 200);
    close(fd);
    free(big);
    ck_assert_int_eq(h_info_int(d.port, "used_memory") > 0, 1);
    /* a body that stops half way: closed after http-body-timeout (408), not
     * before the header timeout would have (the body's clock is its own) */
    int64_t t0 = h_now_ms();
    fd = h_connect(hp);
    ck_assert_int_eq(hx_send(fd, "PUT /v1/kv/b:slow HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n"
                                 "\r\nhalf"), 0);
    /* a slowloris body: a byte every 200 ms does not keep it open */
    int closed = 0;
    for (int i = 0; i < 40 && !closed; i++) {
        h_sleep_ms(200);
        closed = hx_send(fd, "x") != 0 || hx_eof(fd, 1);
    }
    if (!closed)
        closed = hx_eof(fd, 3000);
    int64_t took = h_now_ms() - t0;
    ck_assert_msg(closed && took >= 900 && took < 4000, "closed %d after %lld ms", closed,
                  (long long)took);
    close(fd);
    ck_assert(hx_info_wait(&d, "http_body_timeouts", 1, 3000));
    ck_assert_str_eq(resp_get(d.port, "b:slow"), "$-1\r\n");
    /* Transfer-Encoding: 501 (not implemented for requests) */
    fd = h_connect(hp);
    ck_assert_int_eq(hx_send(fd, "PUT /v1/kv/b:te HTTP/1.1\r\nHost: t\r\n"
                                 "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"), 0);
    memset(&R, 0, sizeof(R));
    ck_assert_int_eq(hx_read(fd, &R, 0, 5000), 0);
    ck_assert_int_eq(R.status, 501);
    close(fd);
    h_stop(&d);
}
END_TEST

START_TEST(a_write_the_owner_does_not_acknowledge_is_504_outcome_unknown)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, "write-timeout 200ms\nwrite-deadline 1s\n"), 0);
    pid_t hot = h_child(&d, "hotkvd: owner hot/0", 0), cold = h_child(&d, "hotkvd: owner cold/0", 0);
    ck_assert(hot > 0 && cold > 0);
    int guard = h_sigcont_guard(hot, cold, NULL);
    kill(hot, SIGSTOP);
    kill(cold, SIGSTOP);
    int64_t t0 = h_now_ms();
    int rc = req(hp, "PUT", "/v1/kv/u:a", NULL, "v");
    int64_t took = h_now_ms() - t0;
    kill(hot, SIGCONT);
    kill(cold, SIGCONT);
    close(guard);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(R.status == 504 && strncmp(R.body, "outcome unknown", 15) == 0, "%d %s",
                  R.status, R.body);
    ck_assert_msg(took >= 900 && took < 8000, "answered after %lld ms", (long long)took);
    /* the owners back: writes go on */
    int64_t end = h_now_ms() + 10000;
    do {
        ck_assert_int_eq(req(hp, "PUT", "/v1/kv/u:a", NULL, "w"), 0);
    } while (R.status != 200 && h_now_ms() < end && (h_sleep_ms(100), 1));
    ck_assert_int_eq(R.status, 200);
    ck_assert_str_eq(resp_get(d.port, "u:a"), "$1\r\nw\r\n");
    h_stop(&d);
}
END_TEST

START_TEST(http_body_timeout_is_reloaded)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, NULL), 0);
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "CONFIG", "SET", "http-body-timeout", "500ms", NULL);
    ck_assert_msg(r != NULL && r->raw[0] == '+', "%s", r != NULL ? r->raw : "no reply");
    h_free(r);
    close(fd);
    h_sleep_ms(300); /* every edge takes the reload */
    int64_t t0 = h_now_ms();
    fd = h_connect(hp);
    ck_assert_int_eq(hx_send(fd, "PUT /v1/kv/r:a HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n"
                                 "\r\nabc"), 0);
    memset(&R, 0, sizeof(R));
    ck_assert_int_eq(hx_read(fd, &R, 0, 5000), 0);
    int64_t took = h_now_ms() - t0;
    ck_assert_int_eq(R.status, 408);
    ck_assert(hx_eof(fd, 3000));
    close(fd);
    ck_assert_msg(took >= 400 && took < 3000, "closed after %lld ms", (long long)took);
    h_stop(&d);
}
END_TEST

Suite *http_write_suite(void)
{
    Suite *s = suite_create("http_write");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"put_delete", put_is_a_set_with_the_etag_get_shows_and_delete_a_del},
        {"ttl", ttl_and_px_set_an_expiry},
        {"if_none_match", if_none_match_star_creates_only},
        {"if_match", if_match_is_a_compare_and_set_on_the_owners_version},
        {"gates", users_acls_and_the_write_rate_limit_answer_401_403_429},
        {"expect", expect_100_continue_is_answered_before_the_body},
        {"bodies", bodies_are_bounded_and_a_slow_body_closes},
        {"outcome_unknown", a_write_the_owner_does_not_acknowledge_is_504_outcome_unknown},
        {"body_timeout_reload", http_body_timeout_is_reloaded},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
