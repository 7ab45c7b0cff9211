/*
 * check_http_idem.c - HTTP Idempotency-Key on PUT and DELETE /v1/kv/KEY
 * (README "HTTP", Writes; draft-ietf-httpapi-idempotency-key-header),
 * against the real daemon with the raw client of http_test.h.
 *
 * The header exists so that a client which lost an answer (504, a closed
 * connection) may send the very same request again from anywhere and be
 * sure it is applied at most once.  So what is checked is that promise and
 * its edges:
 *   - the first request is answered as it would be without the header
 *     (200/201/412/204/404), a malformed header is 400 and a GET ignores it;
 *   - the same request again gets the first answer (status, ETag /
 *     X-Hotkvd-Index, Idempotent-Replayed: true) and is not applied again,
 *     even after another client wrote the key; another request with the
 *     same key is 422 "not applied";
 *   - a record is per (user, key, Idempotency-Key), kept by the key's owner
 *     (so a new connection or the other edge finds it), survives kill -9 of
 *     the owner for a durable class, and is gone after http-idempotency-ttl;
 *   - records are hotkvd's own keys: no keyspace command shows one and no
 *     client can name one;
 *   - INFO counts idempotent writes, replays and mismatches.
 * Every loop is bounded in count and time; the daemon is stopped by pid.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/http_test.h"

static struct hr R; /* one response at a time; large, so not on the stack */
static struct daemon D;
static int HP;

#define ALICE "Authorization: Basic YWxpY2U6YXB3\r\n" /* alice:apw */
#define BOB "Authorization: Basic Ym9iOmJwdw==\r\n"   /* bob:bpw */
#define READER "Authorization: Basic cmVhZGVyOnJwdw==\r\n" /* reader:rpw */

static void stop(void)
{
    if (D.pid > 0)
        h_stop(&D);
    D.pid = 0;
}

/* One hot owner holds every key, so "the key's owner" is hotkvd: owner hot/0. */
static void start(const char *extra)
{
    char conf[2048];
    HP = h_free_port();
    snprintf(conf, sizeof(conf),
             "edge-workers 2\nhot-owners 1\ncold-owners 1\nhttp-port %d\n"
             "class pay pattern pay:* pool hot durability durable\nclass default pool hot\n%s",
             HP, extra != NULL ? extra : "");
    ck_assert_int_eq(h_start(&D, conf), 0);
    h_on_fail(stop);
}

/* Builds method path with Idempotency-Key ik (NULL: none), extra header
 * lines and body into buf. */
static void build(char *buf, size_t len, const char *method, const char *path, const char *ik,
                  const char *extra, const char *body)
{
    char ikh[600] = "";
    if (ik != NULL)
        snprintf(ikh, sizeof(ikh), "Idempotency-Key: %s\r\n", ik);
    snprintf(buf, len, "%s %s HTTP/1.1\r\nHost: t\r\n%s%sContent-Length: %zu\r\n\r\n%s", method,
             path, ikh, extra != NULL ? extra : "", body != NULL ? strlen(body) : 0,
             body != NULL ? body : "");
}

/* One request on keep-alive connection fd: its status (R holds the rest). */
static int on(int fd, const char *method, const char *path, const char *ik, const char *extra,
              const char *body)
{
    char buf[4096];
    build(buf, sizeof(buf), method, path, ik, extra, body);
    memset(&R, 0, offsetof(struct hr, in));
    R.inlen = 0;
    ck_assert_int_eq(hx_send(fd, buf), 0);
    ck_assert_msg(hx_read(fd, &R, strcmp(method, "HEAD") == 0, 10000) == 0, "no answer to %s %s",
                  method, path);
    return R.status;
}

/* The same on a new connection, closed after. */
static int idem(const char *method, const char *path, const char *ik, const char *extra,
                const char *body)
{
    int fd = h_connect(HP);
    ck_assert_int_ge(fd, 0);
    int status = on(fd, method, path, ik, extra, body);
    close(fd);
    return status;
}

static int replayed(void)
{
    char v[16];
    return hx_hdr(&R, "Idempotent-Replayed", v, sizeof(v)) && strcmp(v, "true") == 0;
}

/* R's ETag into out (it must have one), and that it names X-Hotkvd-Index. */
static void etag(char *out, size_t len)
{
    ck_assert_msg(hx_hdr(&R, "ETag", out, len), "no ETag: %s", R.head);
    ck_assert_msg(out[0] == '"' && strtoull(out + 1, NULL, 10) == hx_index(&R), "ETag %s, index %llu",
                  out, (unsigned long long)hx_index(&R));
}

/* A RESP command's raw reply (copied; the next call overwrites it). */
static const char *resp(const char *a, const char *b, const char *c)
{
    static char out[8192];
    int fd = h_connect(D.port);
    struct h_reply *r = h_call(fd, a, b, c, NULL);
    snprintf(out, sizeof(out), "%s", r->raw);
    h_free(r);
    close(fd);
    return out;
}

static int64_t ctr(const char *name)
{
    return hx_info(&D, name);
}

/* ---- the first request ---- */

START_TEST(the_first_request_answers_as_without_the_header)
{
    start(NULL);
    int64_t w0 = ctr("http_idempotent_writes");
    char t[64];
    ck_assert_int_eq(idem("PUT", "/v1/kv/f:a", "\"put-1\"", NULL, "one"), 200);
    ck_assert(!replayed());
    etag(t, sizeof(t));
    ck_assert_str_eq(resp("GET", "f:a", NULL), "$3\r\none\r\n");
    ck_assert_int_eq(idem("PUT", "/v1/kv/f:b", "\"new-1\"", "If-None-Match: *\r\n", "b"), 201);
    etag(t, sizeof(t));
    ck_assert_int_eq(idem("PUT", "/v1/kv/f:b", "\"new-2\"", "If-None-Match: *\r\n", "c"), 412);
    ck_assert_str_eq(resp("GET", "f:b", NULL), "$1\r\nb\r\n");
    ck_assert_int_eq(idem("PUT", "/v1/kv/f:b", "\"cas-1\"", "If-Match: \"1\"\r\n", "d"), 412);
    ck_assert_int_eq(idem("DELETE", "/v1/kv/f:a", "\"del-1\"", NULL, NULL), 204);
    ck_assert_uint_gt(hx_index(&R), 0);
    ck_assert_str_eq(resp("EXISTS", "f:a", NULL), ":0\r\n");
    ck_assert_int_eq(idem("DELETE", "/v1/kv/f:none", "\"del-2\"", NULL, NULL), 404);
    ck_assert(!replayed());
    ck_assert_int_eq(ctr("http_idempotent_writes") - w0, 6);
}
END_TEST

START_TEST(a_malformed_header_is_400_and_nothing_is_applied)
{
    start(NULL);
    int64_t w0 = ctr("http_idempotent_writes");
    char bare[300];
    memset(bare, 'k', 256);
    bare[256] = '\0';
    const char *bad[] = {"\"\"", "\"a b\"", "caf\xc3\xa9", "\"tab\there\"", bare};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(idem("PUT", "/v1/kv/b:a", bad[i], NULL, "x") == 400, "%s: %d", bad[i],
                      R.status);
    ck_assert_int_eq(idem("DELETE", "/v1/kv/b:a", "\"a b\"", NULL, NULL), 400);
    ck_assert_int_eq(idem("PUT", "/v1/kv/b:a", "\"k1\"", "Idempotency-Key: \"k2\"\r\n", "x"), 400);
    ck_assert_str_eq(resp("EXISTS", "b:a", NULL), ":0\r\n");
    ck_assert_int_eq(ctr("http_idempotent_writes"), w0); /* the gates refused them */
}
END_TEST

/* The limit is on the key after unquoting: the quotes are not its bytes. */
START_TEST(a_key_of_255_bytes_is_allowed_bare_or_quoted)
{
    start(NULL);
    char bare[256], quoted[sizeof(bare) + 2];
    memset(bare, 'k', 255);
    bare[255] = '\0';
    ck_assert_msg(idem("PUT", "/v1/kv/l:bare", bare, NULL, "x") == 200, "bare 255 bytes: %d %s",
                  R.status, R.body);
    snprintf(quoted, sizeof(quoted), "\"%s\"", bare);
    ck_assert_msg(idem("PUT", "/v1/kv/l:quoted", quoted, NULL, "x") == 200,
                  "sf-string of 255 bytes: %d %s", R.status, R.body);
    ck_assert_int_eq(idem("PUT", "/v1/kv/l:quoted", quoted, NULL, "x"), 200);
    ck_assert(replayed());
}
END_TEST

START_TEST(a_get_ignores_the_header)
{
    start(NULL);
    ck_assert_str_eq(resp("SET", "g:a", "one"), "+OK\r\n");
    ck_assert_int_eq(idem("GET", "/v1/kv/g:a", "\"get-1\"", NULL, NULL), 200);
    ck_assert_str_eq(R.body, "one");
    ck_assert(!replayed());
    ck_assert_str_eq(resp("SET", "g:a", "two"), "+OK\r\n");
    /* the colo's copy is fresh for up to 1 s */
    int64_t end = h_now_ms() + 5000;
    for (int i = 0; i < 50 && h_now_ms() < end; i++, h_sleep_ms(100)) {
        ck_assert_int_eq(idem("GET", "/v1/kv/g:a", "\"get-1\"", NULL, NULL), 200);
        if (strcmp(R.body, "two") == 0)
            break;
    }
    ck_assert_str_eq(R.body, "two");
    ck_assert(!replayed());
    ck_assert_int_eq(idem("GET", "/v1/kv/g:a", "\"not valid\"", NULL, NULL), 200);
    ck_assert_int_eq(ctr("http_idempotent_writes"), 0);
}
END_TEST

/* ---- the same request again, and another one ---- */

START_TEST(a_retry_is_the_first_answer_and_not_applied_again)
{
    start(NULL);
    int64_t w0 = ctr("http_idempotent_writes"), r0 = ctr("http_idempotent_replays");
    char first[64], again[64];
    ck_assert_int_eq(idem("PUT", "/v1/kv/r:a", "\"op-1\"", NULL, "A"), 200);
    etag(first, sizeof(first));
    ck_assert_str_eq(resp("SET", "r:a", "B"), "+OK\r\n");
    ck_assert_int_eq(idem("PUT", "/v1/kv/r:a", "\"op-1\"", NULL, "A"), 200);
    ck_assert_msg(replayed(), "%s", R.head);
    etag(again, sizeof(again));
    ck_assert_str_eq(again, first);
    ck_assert_str_eq(resp("GET", "r:a", NULL), "$1\r\nB\r\n");
    /* the bare token names the same record as the sf-string */
    ck_assert_int_eq(idem("PUT", "/v1/kv/r:a", "op-1", NULL, "A"), 200);
    ck_assert(replayed());
    ck_assert_str_eq(resp("GET", "r:a", NULL), "$1\r\nB\r\n");
    ck_assert_int_eq(ctr("http_idempotent_writes") - w0, 3);
    ck_assert_int_eq(ctr("http_idempotent_replays") - r0, 2);
}
END_TEST

START_TEST(each_status_is_replayed_as_its_own)
{
    start(NULL);
    char first[64], again[64];
    /* 201: replayed after the key is gone, and not created again */
    ck_assert_int_eq(idem("PUT", "/v1/kv/s:c", "\"mk\"", "If-None-Match: *\r\n", "c"), 201);
    etag(first, sizeof(first));
    ck_assert_str_eq(resp("DEL", "s:c", NULL), ":1\r\n");
    ck_assert_int_eq(idem("PUT", "/v1/kv/s:c", "\"mk\"", "If-None-Match: *\r\n", "c"), 201);
    ck_assert(replayed());
    etag(again, sizeof(again));
    ck_assert_str_eq(again, first);
    ck_assert_str_eq(resp("EXISTS", "s:c", NULL), ":0\r\n");
    /* 412: replayed though the request would now succeed */
    ck_assert_str_eq(resp("SET", "s:n", "held"), "+OK\r\n");
    ck_assert_int_eq(idem("PUT", "/v1/kv/s:n", "\"mk2\"", "If-None-Match: *\r\n", "x"), 412);
    ck_assert_str_eq(resp("DEL", "s:n", NULL), ":1\r\n");
    ck_assert_int_eq(idem("PUT", "/v1/kv/s:n", "\"mk2\"", "If-None-Match: *\r\n", "x"), 412);
    ck_assert(replayed());
    ck_assert_str_eq(resp("EXISTS", "s:n", NULL), ":0\r\n");
    /* 204: replayed after the key was created again, which stays */
    ck_assert_str_eq(resp("SET", "s:d", "v"), "+OK\r\n");
    ck_assert_int_eq(idem("DELETE", "/v1/kv/s:d", "\"rm\"", NULL, NULL), 204);
    uint64_t del_index = hx_index(&R);
    ck_assert_str_eq(resp("SET", "s:d", "back"), "+OK\r\n");
    ck_assert_int_eq(idem("DELETE", "/v1/kv/s:d", "\"rm\"", NULL, NULL), 204);
    ck_assert(replayed());
    ck_assert_uint_eq(hx_index(&R), del_index);
    ck_assert_str_eq(resp("GET", "s:d", NULL), "$4\r\nback\r\n");
    /* 404: replayed after the key came into being */
    ck_assert_int_eq(idem("DELETE", "/v1/kv/s:x", "\"rm2\"", NULL, NULL), 404);
    ck_assert_str_eq(resp("SET", "s:x", "new"), "+OK\r\n");
    ck_assert_int_eq(idem("DELETE", "/v1/kv/s:x", "\"rm2\"", NULL, NULL), 404);
    ck_assert(replayed());
    ck_assert_str_eq(resp("GET", "s:x", NULL), "$3\r\nnew\r\n");
    /* If-Match's 200: replayed after another write broke the match */
    ck_assert_int_eq(idem("PUT", "/v1/kv/s:m", NULL, NULL, "m0"), 200);
    char im[96], tag[64];
    etag(tag, sizeof(tag));
    snprintf(im, sizeof(im), "If-Match: %s\r\n", tag);
    ck_assert_int_eq(idem("PUT", "/v1/kv/s:m", "\"cas\"", im, "m1"), 200);
    etag(first, sizeof(first));
    ck_assert_str_eq(resp("SET", "s:m", "m2"), "+OK\r\n");
    ck_assert_int_eq(idem("PUT", "/v1/kv/s:m", "\"cas\"", im, "m1"), 200);
    ck_assert(replayed());
    etag(again, sizeof(again));
    ck_assert_str_eq(again, first);
    ck_assert_str_eq(resp("GET", "s:m", NULL), "$2\r\nm2\r\n");
}
END_TEST

START_TEST(another_request_with_the_key_is_422_not_applied)
{
    start(NULL);
    ck_assert_int_eq(idem("PUT", "/v1/kv/x:a", "\"op\"", NULL, "first"), 200);
    char first[64], tag[64];
    etag(first, sizeof(first));
    int64_t m0 = ctr("http_idempotency_mismatches");
    struct {
        const char *method, *path, *extra, *body;
    } other[] = {
        {"PUT", "/v1/kv/x:a", NULL, "second"},
        {"DELETE", "/v1/kv/x:a", NULL, NULL},
        {"PUT", "/v1/kv/x:a?ttl=100", NULL, "first"},
        {"PUT", "/v1/kv/x:a?px=5000", NULL, "first"},
        {"PUT", "/v1/kv/x:a", "If-None-Match: *\r\n", "first"},
        {"PUT", "/v1/kv/x:a", "If-Match: *\r\n", "first"},
    };
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        int st = idem(other[i].method, other[i].path, "\"op\"", other[i].extra, other[i].body);
        ck_assert_msg(st == 422 && strncmp(R.body, "not applied", 11) == 0, "%s %s %s: %d %s",
                      other[i].method, other[i].path, other[i].extra ? other[i].extra : "", st,
                      R.body);
        ck_assert(!replayed());
    }
    ck_assert_str_eq(resp("GET", "x:a", NULL), "$5\r\nfirst\r\n");
    ck_assert_str_eq(resp("PTTL", "x:a", NULL), ":-1\r\n");
    ck_assert_int_eq(ctr("http_idempotency_mismatches") - m0, 6);
    /* the record still holds the first request */
    ck_assert_int_eq(idem("PUT", "/v1/kv/x:a", "\"op\"", NULL, "first"), 200);
    ck_assert(replayed());
    etag(tag, sizeof(tag));
    ck_assert_str_eq(tag, first);
}
END_TEST

/* ---- whose record ---- */

START_TEST(a_record_is_per_key)
{
    start(NULL);
    ck_assert_int_eq(idem("PUT", "/v1/kv/p:a", "\"shared\"", NULL, "a"), 200);
    ck_assert_int_eq(idem("PUT", "/v1/kv/p:b", "\"shared\"", NULL, "b"), 200);
    ck_assert(!replayed());
    ck_assert_int_eq(idem("PUT", "/v1/kv/p:c", "\"shared\"", NULL, "a"), 200); /* same body too */
    ck_assert(!replayed());
    ck_assert_str_eq(resp("GET", "p:b", NULL), "$1\r\nb\r\n");
    ck_assert_str_eq(resp("GET", "p:c", NULL), "$1\r\na\r\n");
}
END_TEST

START_TEST(a_record_is_per_user)
{
    start("user default on nopass ~* +@all\nuser alice on >apw ~* +@all\n"
          "user bob on >bpw ~* +@all\nuser reader on >rpw ~* +@read\n");
    char a1[64], b1[64], t[64];
    ck_assert_int_eq(idem("PUT", "/v1/kv/u:k", "\"same\"", ALICE, "from-alice"), 200);
    etag(a1, sizeof(a1));
    /* bob's request with alice's Idempotency-Key is his own: applied, no 422 */
    ck_assert_int_eq(idem("PUT", "/v1/kv/u:k", "\"same\"", BOB, "from-bob"), 200);
    ck_assert(!replayed());
    etag(b1, sizeof(b1));
    ck_assert_str_ne(a1, b1);
    ck_assert_str_eq(resp("GET", "u:k", NULL), "$8\r\nfrom-bob\r\n");
    /* each user's retry gets that user's answer; the key keeps bob's write */
    ck_assert_int_eq(idem("PUT", "/v1/kv/u:k", "\"same\"", ALICE, "from-alice"), 200);
    ck_assert(replayed());
    etag(t, sizeof(t));
    ck_assert_str_eq(t, a1);
    ck_assert_int_eq(idem("PUT", "/v1/kv/u:k", "\"same\"", BOB, "from-bob"), 200);
    ck_assert(replayed());
    etag(t, sizeof(t));
    ck_assert_str_eq(t, b1);
    ck_assert_str_eq(resp("GET", "u:k", NULL), "$8\r\nfrom-bob\r\n");
    /* the default user (no credentials) is a third one */
    ck_assert_int_eq(idem("PUT", "/v1/kv/u:k", "\"same\"", NULL, "from-default"), 200);
    ck_assert(!replayed());
    /* a request the gates refuse is no idempotent write and leaves no record */
    int64_t w0 = ctr("http_idempotent_writes");
    ck_assert_int_eq(idem("PUT", "/v1/kv/u:k", "\"same\"", READER, "r"), 403);
    ck_assert_int_eq(ctr("http_idempotent_writes"), w0);
    ck_assert_str_eq(resp("GET", "u:k", NULL), "$12\r\nfrom-default\r\n");
}
END_TEST

/* ---- where the record is kept ---- */

START_TEST(a_retry_on_another_connection_gets_the_record)
{
    start(NULL);
    char first[64], t[64];
    int a = h_connect(HP), b = h_connect(HP);
    ck_assert(a >= 0 && b >= 0);
    ck_assert_int_eq(on(a, "PUT", "/v1/kv/c:a", "\"conn\"", NULL, "A"), 200);
    etag(first, sizeof(first));
    ck_assert_str_eq(resp("SET", "c:a", "B"), "+OK\r\n");
    ck_assert_int_eq(on(b, "PUT", "/v1/kv/c:a", "\"conn\"", NULL, "A"), 200);
    ck_assert(replayed());
    etag(t, sizeof(t));
    ck_assert_str_eq(t, first);
    close(a);
    close(b);
    ck_assert_int_eq(idem("PUT", "/v1/kv/c:a", "\"conn\"", NULL, "A"), 200);
    ck_assert(replayed());
    ck_assert_str_eq(resp("GET", "c:a", NULL), "$1\r\nB\r\n");
}
END_TEST

START_TEST(a_retry_through_the_other_edge_gets_the_record)
{
    start(NULL);
    pid_t e0 = h_child(&D, "hotkvd: edge", 0), e1 = h_child(&D, "hotkvd: edge", e0);
    ck_assert(e0 > 0 && e1 > 0);
    int guard = h_sigcont_guard(e0, e1, NULL);
    char first[64], t[64];
    /* the edges share the listening socket: with one stopped, the other
     * takes the connection */
    kill(e0, SIGSTOP);
    int st = idem("PUT", "/v1/kv/e:a", "\"edge\"", NULL, "A");
    kill(e0, SIGCONT);
    ck_assert_int_eq(st, 200);
    etag(first, sizeof(first));
    ck_assert_str_eq(resp("SET", "e:a", "B"), "+OK\r\n");
    kill(e1, SIGSTOP);
    st = idem("PUT", "/v1/kv/e:a", "\"edge\"", NULL, "A");
    int rep = replayed();
    kill(e1, SIGCONT);
    close(guard);
    ck_assert_int_eq(st, 200);
    ck_assert_msg(rep, "the other edge applied it again: %s", R.head);
    etag(t, sizeof(t));
    ck_assert_str_eq(t, first);
    int64_t r0 = ctr("http_idempotent_replays");
    for (int i = 0; i < 8; i++) { /* new connections, wherever they land */
        ck_assert_int_eq(idem("PUT", "/v1/kv/e:a", "\"edge\"", NULL, "A"), 200);
        ck_assert(replayed());
        etag(t, sizeof(t));
        ck_assert_str_eq(t, first);
    }
    ck_assert_int_eq(ctr("http_idempotent_replays") - r0, 8);
    ck_assert_str_eq(resp("GET", "e:a", NULL), "$1\r\nB\r\n");
}
END_TEST

START_TEST(a_durable_record_survives_the_owners_kill_9)
{
    start(NULL);
    char first[64], t[64];
    ck_assert_int_eq(idem("PUT", "/v1/kv/pay:1", "\"pay-1\"", NULL, "100"), 200);
    etag(first, sizeof(first));
    ck_assert_str_eq(resp("SET", "pay:1", "250"), "+OK\r\n"); /* durable: committed when OK */
    pid_t owner = h_child(&D, "hotkvd: owner hot/0", 0);
    ck_assert_int_gt(owner, 0);
    ck_assert_int_eq(kill(owner, SIGKILL), 0);
    /* the master starts a new owner; wait until it takes writes */
    int back = 0;
    int64_t end = h_now_ms() + 30000;
    for (int i = 0; i < 300 && !back && h_now_ms() < end; i++, h_sleep_ms(100)) {
        if (h_child(&D, "hotkvd: owner hot/0", owner) <= 0)
            continue;
        int fd = h_connect(D.port);
        struct h_reply *r = fd >= 0 ? h_cmdv(fd, "SET", "pay:probe", "x", NULL) : NULL;
        back = r != NULL && strcmp(r->raw, "+OK\r\n") == 0;
        h_free(r);
        if (fd >= 0)
            close(fd);
    }
    ck_assert_msg(back, "the owner did not come back");
    ck_assert_int_eq(idem("PUT", "/v1/kv/pay:1", "\"pay-1\"", NULL, "100"), 200);
    ck_assert_msg(replayed(), "applied again after the crash: %s", R.head);
    etag(t, sizeof(t));
    ck_assert_str_eq(t, first);
    ck_assert_str_eq(resp("GET", "pay:1", NULL), "$3\r\n250\r\n");
}
END_TEST

START_TEST(past_the_ttl_the_same_request_is_new)
{
    start("http-idempotency-ttl 2s\n");
    char first[64], t[64];
    int64_t t0 = h_now_ms();
    ck_assert_int_eq(idem("PUT", "/v1/kv/t:a", "\"short\"", NULL, "A"), 200);
    etag(first, sizeof(first));
    ck_assert_int_eq(idem("PUT", "/v1/kv/t:a", "\"short\"", NULL, "A"), 200);
    ck_assert(replayed()); /* within the ttl */
    ck_assert_str_eq(resp("SET", "t:a", "B"), "+OK\r\n");
    h_sleep_ms((int)(t0 + 3000 - h_now_ms()));
    ck_assert_int_eq(idem("PUT", "/v1/kv/t:a", "\"short\"", NULL, "A"), 200);
    ck_assert_msg(!replayed(), "replayed after http-idempotency-ttl: %s", R.head);
    etag(t, sizeof(t));
    ck_assert_str_ne(t, first);
    ck_assert_str_eq(resp("GET", "t:a", NULL), "$1\r\nA\r\n");
    /* another request with it is new too, not 422 */
    h_sleep_ms(2500);
    ck_assert_int_eq(idem("PUT", "/v1/kv/t:a", "\"short\"", NULL, "C"), 200);
    ck_assert(!replayed());
    ck_assert_str_eq(resp("GET", "t:a", NULL), "$1\r\nC\r\n");
}
END_TEST

/* ---- records are not the clients' keys ---- */

/* 1 if every element of the array v is one of the n names, each seen once
 * at least (seen is or-ed in). */
static int only_user_keys(const struct resp_value *v, const char *const *names, int n,
                          unsigned *seen)
{
    if (v->type != RESP_ARRAY)
        return 0;
    for (size_t i = 0; i < v->n; i++) {
        int hit = -1;
        for (int j = 0; j < n; j++)
            if (h_str_is(&v->elems[i], names[j]))
                hit = j;
        if (hit < 0)
            return 0;
        *seen |= 1u << hit;
    }
    return 1;
}

static const char *const NAMES[] = {"v:0", "v:1", "v:2", "v:3", "v:4", "v:5"};
#define NNAMES 6
#define RECORDS 20 /* per key: records outnumber the keys, as on a busy server */

/* The keys of NAMES, each written RECORDS times with its own Idempotency-Key
 * (one keep-alive connection), and a 404 DELETE's record of a missing key. */
static void fill(void)
{
    int fd = h_connect(HP);
    ck_assert_int_ge(fd, 0);
    for (int i = 0; i < NNAMES; i++)
        for (int j = 0; j < RECORDS; j++) {
            char path[64], ik[32];
            snprintf(path, sizeof(path), "/v1/kv/%s", NAMES[i]);
            snprintf(ik, sizeof(ik), "\"hidden-%d-%d\"", i, j);
            ck_assert_int_eq(on(fd, "PUT", path, ik, NULL, "v"), 200);
        }
    ck_assert_int_eq(on(fd, "DELETE", "/v1/kv/v:none", "\"gone\"", NULL, NULL), 404);
    close(fd);
}

START_TEST(records_are_invisible_to_keyspace_commands)
{
    start(NULL);
    fill();
    ck_assert_str_eq(resp("DBSIZE", NULL, NULL), ":6\r\n");
    /* records have a TTL, the keys none: INFO keyspace counts the keys' */
    const char *ks = resp("INFO", "keyspace", NULL);
    ck_assert_msg(strstr(ks, "db0:keys=6,expires=0,") != NULL, "INFO keyspace: %s", ks);
    int fd = h_connect(D.port);
    unsigned seen = 0;
    struct h_reply *r = h_call(fd, "KEYS", "*", NULL);
    ck_assert_msg(only_user_keys(r->v, NAMES, NNAMES, &seen) && r->v->n == NNAMES, "KEYS: %s",
                  r->raw);
    h_free(r);
    /* a full SCAN walk in small pages */
    char cursor[32] = "0";
    int pages = 0;
    seen = 0;
    do {
        r = h_call(fd, "SCAN", cursor, "COUNT", "2", NULL);
        ck_assert_msg(r->v->type == RESP_ARRAY && r->v->n == 2, "SCAN: %s", r->raw);
        snprintf(cursor, sizeof(cursor), "%.*s", (int)r->v->elems[0].len, r->v->elems[0].str);
        ck_assert_msg(only_user_keys(&r->v->elems[1], NAMES, NNAMES, &seen), "SCAN page: %s",
                      r->raw);
        h_free(r);
    } while (strcmp(cursor, "0") != 0 && ++pages < 1000);
    ck_assert_str_eq(cursor, "0");
    ck_assert_uint_eq(seen, (1u << NNAMES) - 1);
    close(fd);
}
END_TEST

/* Redis's RANDOMKEY is nil only for an empty keyspace: records must not
 * crowd the client's keys out of the draw. */
START_TEST(randomkey_answers_a_client_key_however_many_records)
{
    start(NULL);
    fill();
    int fd = h_connect(D.port);
    int nil = 0;
    for (int i = 0; i < 40; i++) {
        struct h_reply *r = h_call(fd, "RANDOMKEY", NULL);
        ck_assert_msg(r->v->type == RESP_BULK || r->v->type == RESP_NULL, "RANDOMKEY: %s", r->raw);
        if (r->v->type == RESP_NULL)
            nil++;
        else
            ck_assert_msg(r->v->len == 3 && memcmp(r->v->str, "v:", 2) == 0, "RANDOMKEY: %s",
                          r->raw);
        h_free(r);
    }
    close(fd);
    ck_assert_msg(nil == 0, "RANDOMKEY was nil %d times of 40 with %d keys and %d records", nil,
                  NNAMES, NNAMES * RECORDS + 1);
}
END_TEST

/* Sends a command of n words with explicit lengths (a key with a NUL) and
 * returns its raw reply (copied). */
static const char *resp_bin(int n, const char *const *w, const size_t *len)
{
    static char out[1024];
    char buf[1024];
    size_t at = (size_t)snprintf(buf, sizeof(buf), "*%d\r\n", n);
    for (int i = 0; i < n; i++) {
        at += (size_t)snprintf(buf + at, sizeof(buf) - at, "$%zu\r\n", len[i]);
        ck_assert_uint_lt(at + len[i] + 2, sizeof(buf));
        memcpy(buf + at, w[i], len[i]);
        memcpy(buf + at + len[i], "\r\n", 2);
        at += len[i] + 2;
    }
    int fd = h_connect(D.port);
    ck_assert_int_eq(h_send(fd, buf, at), 0);
    struct h_reply *r = h_read(fd);
    ck_assert_ptr_nonnull(r);
    snprintf(out, sizeof(out), "%s", r->raw);
    h_free(r);
    close(fd);
    return out;
}

START_TEST(no_client_can_name_a_record)
{
    start(NULL);
    ck_assert_int_eq(idem("PUT", "/v1/kv/n:k", "op", NULL, "A"), 200);
    char first[64], t[64];
    etag(first, sizeof(first));
    /* the record's very key (proto/syskey.h), and any key with the prefix */
    static const char rec[] = "\xffhkv\0i\0\0\0\x03n:k\x07" "defaultop";
    static const char any[] = "\xffhkv\0x";
    const char *get_rec[] = {"GET", rec}, *del_rec[] = {"DEL", rec}, *set_any[] = {"SET", any, "v"};
    const char *mget[] = {"MGET", "n:k", any};
    size_t l_get[] = {3, sizeof(rec) - 1}, l_del[] = {3, sizeof(rec) - 1},
           l_set[] = {3, sizeof(any) - 1, 1}, l_mget[] = {4, 3, sizeof(any) - 1};
    const char *out = resp_bin(2, get_rec, l_get);
    ck_assert_msg(strncmp(out, "-ERR", 4) == 0, "GET record: %s", out);
    out = resp_bin(2, del_rec, l_del);
    ck_assert_msg(strncmp(out, "-ERR", 4) == 0, "DEL record: %s", out);
    out = resp_bin(3, set_any, l_set);
    ck_assert_msg(strncmp(out, "-ERR", 4) == 0, "SET: %s", out);
    out = resp_bin(3, mget, l_mget);
    ck_assert_msg(strncmp(out, "-ERR", 4) == 0, "MGET: %s", out);
    ck_assert_str_eq(resp("DBSIZE", NULL, NULL), ":1\r\n");
    ck_assert_int_eq(idem("PUT", "/v1/kv/%FFhkv%00x", NULL, NULL, "v"), 400);
    ck_assert_int_eq(idem("GET", "/v1/kv/%FFhkv%00i%00%00%00%03n:k%07defaultop", NULL, NULL, NULL),
                     400);
    /* the DEL did not reach the record: the retry is still a replay */
    ck_assert_str_eq(resp("SET", "n:k", "B"), "+OK\r\n");
    ck_assert_int_eq(idem("PUT", "/v1/kv/n:k", "op", NULL, "A"), 200);
    ck_assert(replayed());
    etag(t, sizeof(t));
    ck_assert_str_eq(t, first);
}
END_TEST

Suite *http_idem_suite(void)
{
    Suite *s = suite_create("http_idem");
    struct {
        const char *name;
        const TTest *tests[5]; /* NULL-terminated */
    } cases[] = {
        {"first", {the_first_request_answers_as_without_the_header,
                   a_malformed_header_is_400_and_nothing_is_applied,
                   a_key_of_255_bytes_is_allowed_bare_or_quoted, a_get_ignores_the_header}},
        {"replay", {a_retry_is_the_first_answer_and_not_applied_again,
                    each_status_is_replayed_as_its_own,
                    another_request_with_the_key_is_422_not_applied}},
        {"scope", {a_record_is_per_key, a_record_is_per_user}},
        {"kept", {a_retry_on_another_connection_gets_the_record,
                  a_retry_through_the_other_edge_gets_the_record,
                  a_durable_record_survives_the_owners_kill_9, past_the_ttl_the_same_request_is_new}},
        {"hidden", {records_are_invisible_to_keyspace_commands,
                    randomkey_answers_a_client_key_however_many_records, no_client_can_name_a_record}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 120);
        tcase_add_checked_fixture(tc, NULL, stop);
        for (size_t j = 0; cases[i].tests[j] != NULL; j++)
            tcase_add_test(tc, cases[i].tests[j]);
        suite_add_tcase(s, tc);
    }
    return s;
}
