/*
 * check_http.c - the HTTP front door against the real daemon (issue 16), with
 * curl, Python's http.client and urllib (tests/integration/py/http_client.py)
 * and a raw client (http_test.h) as clients:
 * - a value comes back with its ETag, index, Cache-Control, Age and the
 *   class's Content-Type; HEAD has no body; If-None-Match gives 304 on the
 *   same keep-alive connection; a deleted key is 404 with the delete's
 *   (newer) version;
 * - every refusal has its status: 405 (the connection stays open), 400, 404,
 *   413, 414, 431, 501, 505, and request smuggling (Content-Length with
 *   Transfer-Encoding), each of the framing ones followed by a close;
 *   /healthz and /metrics answer;
 * - users: 401 without or with wrong Basic credentials, 403 for a key the
 *   user may not read, 429 with Retry-After past the GET rate limit;
 * - an owner that does not answer gives 200 + X-Hotkvd-Degraded (class
 *   on-timeout degrade) or 503 + Retry-After (error);
 * - hostile clients (huge headers, slowloris, a pipelining flood) get their
 *   error or their answers and are closed, while another client is
 *   answered throughout;
 * - HTTPS on https-port with tls-port's certificate.
 * Long polls and watches: check_http_poll.c.  Every loop and wait is
 * bounded; daemons are stopped by pid (h_stop).
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/http_test.h"

#define CURL "/usr/bin/curl"
#define PY "/usr/bin/python3"
#define OPENSSL "/usr/bin/openssl"
#define FIXTURE "edge-workers 2\nhot-owners 1\ncold-owners 1\n"

static int start_http(struct daemon *d, int *hp, const char *extra)
{
    char conf[4096];
    *hp = h_free_port();
    snprintf(conf, sizeof(conf),
             FIXTURE "http-port %d\nclass cfg pattern cfg:* fresh 2s keep 60s content-type "
                     "\"application/json\"\nclass nc pattern nc:* fresh 0 keep 0\n%s",
             *hp, extra != NULL ? extra : "");
    return h_start(d, conf);
}

static void resp_set(int port, const char *k, const char *v)
{
    int fd = h_connect(port);
    ck_assert_int_ge(fd, 0);
    struct h_reply *r = h_cmdv(fd, "SET", k, v, NULL);
    ck_assert_msg(r != NULL && r->raw[0] == '+', "SET %s failed", k);
    h_free(r);
    close(fd);
}

static void resp_del(int port, const char *k)
{
    int fd = h_connect(port);
    struct h_reply *r = h_cmdv(fd, "DEL", k, NULL);
    ck_assert_ptr_nonnull(r);
    h_free(r);
    close(fd);
}

static char *py_script(void)
{
    static char path[4096];
    ck_assert_ptr_nonnull(realpath("tests/integration/py/http_client.py", path));
    return path;
}

static struct hr R; /* one response at a time; large, so not on the stack */

/* ---- values, 304, 404 -------------------------------------------------------- */

START_TEST(values_come_with_their_headers_and_304_on_a_second_request)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, NULL), 0);
    resp_set(d.port, "cfg:a", "{\"x\":1}");
    char port[16], url[128], out[8192];
    snprintf(port, sizeof(port), "%d", hp);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/kv/cfg:a", hp);
    char *curl[] = {CURL, "-s", "-i", url, NULL};
    ck_assert_int_eq(h_run(curl, NULL, out, sizeof(out), 10000), 0);
    ck_assert_msg(strstr(out, "HTTP/1.1 200 OK\r\n") && strstr(out, "ETag: \"") &&
                      strstr(out, "X-Hotkvd-Index: ") && strstr(out, "X-Hotkvd-Stale: 0\r\n") &&
                      strstr(out, "Age: ") && strstr(out, "Content-Type: application/json\r\n") &&
                      strstr(out, "Cache-Control: max-age=2, stale-while-revalidate=58, "
                                  "stale-if-error=60\r\n") &&
                      strstr(out, "\r\n\r\n{\"x\":1}"),
                  "curl GET: %s", out);
    char *head[] = {CURL, "-s", "-I", url, NULL};
    ck_assert_int_eq(h_run(head, NULL, out, sizeof(out), 10000), 0);
    ck_assert_msg(strstr(out, "200 OK") && strstr(out, "Content-Length: 7") &&
                      strstr(out, "{\"x\"") == NULL, "curl HEAD: %s", out);
    char *py[] = {PY, py_script(), "etag", port, "cfg:a", NULL};
    int rc = h_run(py, NULL, out, sizeof(out), 20000);
    ck_assert_msg(rc == 0 && strstr(out, "304 \"") != NULL, "http.client: %s", out);
    char *ul[] = {PY, py_script(), "urllib", port, "cfg:a", NULL};
    rc = h_run(ul, NULL, out, sizeof(out), 20000);
    ck_assert_msg(rc == 0 && strstr(out, "200 application/json b'{\"x\":1}'") &&
                      strstr(out, "\n404 "), "urllib: %s", out);
    /* a value of the default class is application/octet-stream, binary-safe */
    resp_set(d.port, "bin\x01key", "v\x00w");
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/bin%01key", NULL, &R), 0);
    char ct[128];
    ck_assert_int_eq(R.status, 200);
    ck_assert(hx_hdr(&R, "Content-Type", ct, sizeof(ct)) &&
              strcmp(ct, "application/octet-stream") == 0);
    /* an uncached class: every read is a fetch through the key's flight, and
     * If-None-Match still gives 304 (the request waited on the heap) */
    resp_set(d.port, "nc:a", "fetched");
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/nc:a", NULL, &R), 0);
    ck_assert_int_eq(R.status, 200);
    char etag[64], inm[128];
    ck_assert(hx_hdr(&R, "ETag", etag, sizeof(etag)));
    snprintf(inm, sizeof(inm), "If-None-Match: W/\"1\", %s\r\n", etag);
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/nc:a", inm, &R), 0);
    ck_assert_msg(R.status == 304 && R.blen == 0, "%s", R.head);
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/nc:a", "If-None-Match: \"1\"\r\n", &R), 0);
    ck_assert_msg(R.status == 200 && strcmp(R.body, "fetched") == 0, "%s", R.head);
    h_stop(&d);
}
END_TEST

START_TEST(a_deleted_key_is_404_with_the_deletes_version)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, NULL), 0);
    resp_set(d.port, "gone", "here");
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/gone", NULL, &R), 0);
    ck_assert_int_eq(R.status, 200);
    uint64_t written = hx_index(&R);
    ck_assert_uint_gt(written, 0);
    resp_del(d.port, "gone");
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/gone", NULL, &R), 0);
    ck_assert_msg(R.status == 404, "%s", R.head);
    ck_assert_msg(hx_index(&R) > written, "404 index %llu, write %llu",
                  (unsigned long long)hx_index(&R), (unsigned long long)written);
    h_stop(&d);
}
END_TEST

/* ---- refusals ------------------------------------------------------------------- */

/* Sends raw bytes on a new connection; the response's status, and whether
 * the server then closed the connection (*closed; NULL: not asked, so no
 * wait for an EOF that a kept-alive connection never gives). */
static int refused(int hp, const char *bytes, int *closed)
{
    int fd = h_connect(hp);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(hx_send(fd, bytes), 0);
    memset(&R, 0, offsetof(struct hr, in));
    R.inlen = 0;
    int rc = hx_read(fd, &R, 0, 10000);
    ck_assert_msg(rc == 0, "no response to %.60s", bytes);
    if (closed != NULL)
        *closed = hx_eof(fd, 3000);
    close(fd);
    return R.status;
}

START_TEST(refused_requests_get_their_status_and_framing_errors_close)
{
    struct daemon d;
    int hp, closed;
    ck_assert_int_eq(start_http(&d, &hp, NULL), 0);
    resp_set(d.port, "k", "v");
    /* 405: no body, the connection stays and serves the next request */
    int fd = h_connect(hp);
    ck_assert_int_eq(hx_send(fd, "PATCH /v1/kv/k HTTP/1.1\r\nHost: t\r\n\r\n"
                                 "GET /v1/kv/k HTTP/1.1\r\nHost: t\r\n\r\n"), 0);
    memset(&R, 0, sizeof(R));
    ck_assert_int_eq(hx_read(fd, &R, 0, 10000), 0);
    char allow[64];
    ck_assert_int_eq(R.status, 405);
    ck_assert(hx_hdr(&R, "Allow", allow, sizeof(allow)) && strcmp(allow, "GET, HEAD, PUT, DELETE, POST") == 0);
    ck_assert_int_eq(hx_read(fd, &R, 0, 10000), 0);
    ck_assert_int_eq(R.status, 200);
    ck_assert_str_eq(R.body, "v");
    close(fd);
    ck_assert_int_eq(refused(hp, "GET /v1/kv/%zz HTTP/1.1\r\nHost: t\r\n\r\n", NULL), 400);
    ck_assert_int_eq(refused(hp, "GET /v1/kv/ HTTP/1.1\r\nHost: t\r\n\r\n", NULL), 400);
    ck_assert_int_eq(refused(hp, "GET /nope HTTP/1.1\r\nHost: t\r\n\r\n", NULL), 404);
    ck_assert_int_eq(refused(hp, "GET /v1/kv/k?index=x HTTP/1.1\r\nHost: t\r\n\r\n", NULL),
                     400);
    struct {
        const char *req;
        int status;
    } framing[] = {
        {"GET /v1/kv/k HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello", 413},
        {"GET /v1/kv/k HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501},
        {"GET /v1/kv/k HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n"
         "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400}, /* smuggling */
        {"GET /v1/kv/k HTTP/2.0\r\nHost: t\r\n\r\n", 505},
        {"GET /v1/kv/k HTTP/1.1\r\n\r\n", 400},               /* no Host */
        {"\x16\x03\x01\x02\x01\x01\xfc\x03\x03\r\n\r\n", 400}, /* TLS on the plain port */
    };
    for (size_t i = 0; i < sizeof(framing) / sizeof(framing[0]); i++) {
        ck_assert_int_eq(refused(hp, framing[i].req, &closed), framing[i].status);
        ck_assert_msg(closed, "not closed after %d", framing[i].status);
    }
    static char big[20000];
    memset(big, 0, sizeof(big));
    strcpy(big, "GET /v1/kv/");
    memset(big + strlen(big), 'a', 9000);
    strcat(big, " HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_int_eq(refused(hp, big, &closed), 414);
    ck_assert(closed);
    strcpy(big, "GET /v1/kv/k HTTP/1.1\r\nHost: t\r\n");
    for (int i = 0; i < 100; i++)
        sprintf(big + strlen(big), "X-Pad-%d: %d\r\n", i, i);
    strcat(big, "\r\n");
    ck_assert_int_eq(refused(hp, big, &closed), 431);
    ck_assert(closed);
    /* health and metrics */
    ck_assert_int_eq(hx_get(hp, "GET", "/healthz", NULL, &R), 0);
    ck_assert_msg(R.status == 200 && strcmp(R.body, "ok\n") == 0, "%s", R.head);
    ck_assert_int_eq(hx_get(hp, "GET", "/metrics", NULL, &R), 0);
    char ct[128];
    ck_assert(R.status == 200 && hx_hdr(&R, "Content-Type", ct, sizeof(ct)) &&
              strstr(ct, "version=0.0.4") != NULL);
    ck_assert_msg(strstr(R.body, "hotkvd_http_requests_4xx_total") != NULL, "%.300s", R.body);
    ck_assert_int_gt(hx_info(&d, "http_requests_4xx"), 10);
    h_stop(&d);
}
END_TEST

/* ---- users and limits --------------------------------------------------------- */

START_TEST(basic_auth_acls_and_rate_limits_answer_401_403_429)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, "requirepass pw\nuser reader on >rpw ~app:* +@read\n"
                                         "user writer on >wpw ~* +@all\n"
                                         "ratelimit read 4/60s burst 4\n"),
                     0);
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "AUTH", "pw", NULL);
    h_free(r);
    r = h_cmdv(fd, "SET", "app:x", "1", NULL);
    h_free(r);
    r = h_cmdv(fd, "SET", "other", "2", NULL);
    h_free(r);
    close(fd);
    char www[128];
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/app:x", NULL, &R), 0);
    ck_assert_int_eq(R.status, 401);
    ck_assert(hx_hdr(&R, "WWW-Authenticate", www, sizeof(www)) && strncmp(www, "Basic ", 6) == 0);
    /* reader:bad, reader:rpw */
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/app:x", "Authorization: Basic cmVhZGVyOmJhZA==\r\n",
                            &R), 0);
    ck_assert_int_eq(R.status, 401);
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/app:x", "Authorization: Basic cmVhZGVyOnJwdw==\r\n",
                            &R), 0);
    ck_assert_int_eq(R.status, 200);
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/other", "Authorization: Basic cmVhZGVyOnJwdw==\r\n",
                            &R), 0);
    ck_assert_int_eq(R.status, 403);
    /* writer:wpw has its own bucket: 4 reads, then 429 with Retry-After */
    int ok = 0, limited = 0;
    char ra[32] = "";
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/other",
                                "Authorization: Basic d3JpdGVyOndwdw==\r\n", &R), 0);
        ok += R.status == 200;
        if (R.status == 429) {
            limited++;
            ck_assert(hx_hdr(&R, "Retry-After", ra, sizeof(ra)) && atoi(ra) >= 1);
        }
    }
    ck_assert_msg(ok == 4 && limited == 2, "%d answered, %d limited", ok, limited);
    h_stop(&d);
}
END_TEST

START_TEST(an_owner_that_does_not_answer_gives_degraded_or_503)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, "miss-wait 300ms\n"
                                         "class strict pattern err:* on-timeout error\n"), 0);
    pid_t owner = h_child(&d, "hotkvd: owner cold/0", 0);
    ck_assert_int_gt(owner, 0);
    int guard = h_sigcont_guard(owner, 0, NULL);
    kill(owner, SIGSTOP);
    int64_t t0 = h_now_ms();
    int rc = hx_get(hp, "GET", "/v1/kv/never:seen", NULL, &R);
    char v[64];
    int degraded = rc == 0 && R.status == 200 && hx_hdr(&R, "X-Hotkvd-Degraded", v, sizeof(v)) &&
                   strcmp(v, "1") == 0 && hx_hdr(&R, "Cache-Control", v, sizeof(v)) &&
                   strcmp(v, "no-store") == 0;
    int64_t took = h_now_ms() - t0;
    rc = hx_get(hp, "GET", "/v1/kv/err:x", NULL, &R);
    int unavailable = rc == 0 && R.status == 503 && hx_hdr(&R, "Retry-After", v, sizeof(v));
    kill(owner, SIGCONT);
    close(guard);
    ck_assert_msg(degraded, "degrade class: %s", R.head);
    ck_assert_msg(took < 5000, "degraded answer took %lld ms", (long long)took);
    ck_assert_msg(unavailable, "error class: %s", R.head);
    h_stop(&d);
}
END_TEST

START_TEST(protected_mode_refuses_a_non_loopback_peer_with_403)
{
    char ip[64];
    if (h_private_net(ip, sizeof(ip)) != 0) { /* a peer "from elsewhere", in a namespace */
        fprintf(stderr, "SKIP http protected_mode: no network namespace\n");
        return;
    }
    struct daemon d;
    int hp;
    char extra[128];
    snprintf(extra, sizeof(extra), "bind 127.0.0.1 %s\n", ip);
    ck_assert_int_eq(start_http(&d, &hp, extra), 0);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)hp)};
    inet_pton(AF_INET, ip, &to.sin_addr);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
    ck_assert_int_eq(hx_send(fd, "GET /v1/kv/k HTTP/1.1\r\nHost: t\r\n\r\n"), 0);
    memset(&R, 0, sizeof(R));
    ck_assert_int_eq(hx_read(fd, &R, 0, 10000), 0);
    ck_assert_msg(R.status == 403 && strstr(R.body, "protected mode"), "%s %s", R.head, R.body);
    ck_assert(hx_eof(fd, 3000));
    close(fd);
    /* loopback is served */
    ck_assert_int_eq(hx_get(hp, "GET", "/healthz", NULL, &R), 0);
    ck_assert_int_eq(R.status, 200);
    h_stop(&d);
}
END_TEST

/* ---- hostile clients -------------------------------------------------------------- */

/* A normal GET on another connection, answered within 2 s. */
static void other_client_answered(int hp)
{
    static struct hr other;
    int64_t t0 = h_now_ms();
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/k", NULL, &other), 0);
    ck_assert_int_eq(other.status, 200);
    ck_assert_msg(h_now_ms() - t0 < 2000, "a bystander waited %lld ms",
                  (long long)(h_now_ms() - t0));
}

START_TEST(hostile_clients_are_closed_and_others_served)
{
    struct daemon d;
    int hp;
    ck_assert_int_eq(start_http(&d, &hp, "http-header-timeout 1s\n"), 0);
    resp_set(d.port, "k", "v");
    /* slowloris: a header section dripped a byte at a time never finishes */
    int slow = h_connect(hp);
    const char *drip = "GET /v1/kv/k HTTP/1.1\r\nHost: t\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaa";
    int64_t t0 = h_now_ms();
    int got408 = 0;
    for (size_t i = 0; drip[i] && h_now_ms() - t0 < 8000; i++) {
        if (h_send(slow, drip + i, 1) != 0)
            break;
        other_client_answered(hp);
        h_sleep_ms(100);
    }
    memset(&R, 0, sizeof(R));
    if (hx_read(slow, &R, 0, 5000) == 0)
        got408 = R.status == 408;
    ck_assert_msg(got408, "slowloris: %s", R.head);
    ck_assert(hx_eof(slow, 3000));
    close(slow);
    /* a pipelining flood: 3000 requests in one go, answered in order */
    for (int i = 0; i < 10; i++) {
        char k[16], v[16];
        snprintf(k, sizeof(k), "f%d", i);
        snprintf(v, sizeof(v), "v%d", i);
        resp_set(d.port, k, v);
    }
    int flood = h_connect(hp);
    static char reqs[3000 * 48];
    size_t n = 0;
    for (int i = 0; i < 3000; i++)
        n += (size_t)sprintf(reqs + n, "GET /v1/kv/f%d HTTP/1.1\r\nHost: t\r\n\r\n", i % 10);
    ck_assert_int_eq(h_send(flood, reqs, n), 0);
    memset(&R, 0, sizeof(R));
    int answered = 0;
    for (int i = 0; i < 3000; i++) {
        if (hx_read(flood, &R, 0, 10000) != 0)
            break;
        char want[16];
        snprintf(want, sizeof(want), "v%d", i % 10);
        ck_assert_msg(R.status == 200 && strcmp(R.body, want) == 0, "response %d: %s %s", i,
                      R.head, R.body);
        answered++;
        if (i % 1000 == 0)
            other_client_answered(hp);
    }
    ck_assert_int_eq(answered, 3000);
    close(flood);
    other_client_answered(hp);
    h_stop(&d);
}
END_TEST

/* ---- HTTPS --------------------------------------------------------------------------- */

START_TEST(https_port_serves_with_the_tls_certificate)
{
    if (access(OPENSSL, X_OK) != 0) {
        fprintf(stderr, "SKIP http https: openssl not installed\n");
        return;
    }
    char dir[256], crt[320], key[320], out[8192];
    h_tmpdir(dir, sizeof(dir));
    snprintf(crt, sizeof(crt), "%s/srv.crt", dir);
    snprintf(key, sizeof(key), "%s/srv.key", dir);
    char *gen[] = {OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt",
                   "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                   "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key,
                   "-out", crt, NULL};
    ck_assert_int_eq(h_run(gen, NULL, out, sizeof(out), 20000), 0);
    struct daemon d;
    int hp;
    int sp = h_free_port();
    char extra[1024];
    snprintf(extra, sizeof(extra),
             "https-port %d\ntls-cert-file %s\ntls-key-file %s\ntls-auth-clients no\n", sp, crt,
             key);
    ck_assert_int_eq(start_http(&d, &hp, extra), 0);
    resp_set(d.port, "cfg:s", "\"secure\"");
    char url[128];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/v1/kv/cfg:s", sp);
    char *curl[] = {CURL, "-s", "-i", "--cacert", crt, url, NULL};
    int rc = h_run(curl, NULL, out, sizeof(out), 10000);
    ck_assert_msg(rc == 0 && strstr(out, "200 OK") && strstr(out, "\"secure\""), "%s", out);
    h_stop(&d);
    h_rmtree(dir);
}
END_TEST

Suite *http_suite(void)
{
    Suite *s = suite_create("http");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"values", values_come_with_their_headers_and_304_on_a_second_request},
        {"not_found", a_deleted_key_is_404_with_the_deletes_version},
        {"refusals", refused_requests_get_their_status_and_framing_errors_close},
        {"gates", basic_auth_acls_and_rate_limits_answer_401_403_429},
        {"degraded", an_owner_that_does_not_answer_gives_degraded_or_503},
        {"protected_mode", protected_mode_refuses_a_non_loopback_peer_with_403},
        {"hostile", hostile_clients_are_closed_and_others_served},
        {"https", https_port_serves_with_the_tls_certificate},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
