/*
 * check_idem.c - HTTP Idempotency-Key (README "HTTP", Writes): a retry is
 * answered from the key owner's record, never applied twice, from any
 * connection and edge, across an owner's crash for a durable class; the
 * records are hotkvd's own keys, which no client sees or names.
 *
 *   - the same PUT again (five new connections, two edges) gets the first
 *     status and ETag with Idempotent-Replayed, after another client wrote
 *     the key: the key keeps that client's value;
 *   - the same key with another body, method or condition: 422, not
 *     applied; the same Idempotency-Key on another key, or after
 *     http-idempotency-ttl, is a new request;
 *   - DELETE and If-None-Match: * are replayed with their own statuses
 *     (204 after the key came back; 201 / 412);
 *   - a durable class: kill -9 of the owner after the answer, the retry is
 *     still a replay (the record was in the write's commit);
 *   - DBSIZE, KEYS, SCAN and RANDOMKEY show the client's keys only, and a
 *     RESP command naming a record's prefix is refused;
 *   - a malformed header is 400; INFO counts writes, replays, mismatches.
 * Every wait is bounded; the daemon is stopped by pid (h_stop).
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

static void start(const char *extra)
{
    char conf[1024];
    HP = h_free_port();
    snprintf(conf, sizeof(conf),
             "edge-workers 2\nhot-owners 1\ncold-owners 1\nhttp-port %d\n"
             "class money durability durable pattern m:*\n%s", HP, extra != NULL ? extra : "");
    ck_assert_int_eq(h_start(&D, conf), 0);
}

static void stop(void)
{
    if (D.pid > 0)
        h_stop(&D);
}

/* method path with Idempotency-Key idem (NULL: none), extra lines, body,
 * on a new connection: its status (R has the response). */
static int idem(const char *method, const char *path, const char *key, const char *extra,
                const char *body)
{
    int fd = h_connect(HP);
    ck_assert_int_ge(fd, 0);
    char buf[4096], ik[400] = "";
    if (key != NULL)
        snprintf(ik, sizeof(ik), "Idempotency-Key: %s\r\n", key);
    snprintf(buf, sizeof(buf),
             "%s %s HTTP/1.1\r\nHost: t\r\n%s%sContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
             method, path, ik, extra != NULL ? extra : "", body != NULL ? strlen(body) : 0,
             body != NULL ? body : "");
    memset(&R, 0, offsetof(struct hr, in));
    R.inlen = 0;
    ck_assert_int_eq(hx_send(fd, buf), 0);
    ck_assert_int_eq(hx_read(fd, &R, 0, 10000), 0);
    close(fd);
    return R.status;
}

static int replayed(void)
{
    char v[16];
    return hx_hdr(&R, "Idempotent-Replayed", v, sizeof(v)) && strcmp(v, "true") == 0;
}

static const char *etag(void)
{
    static char t[64];
    ck_assert_msg(hx_hdr(&R, "ETag", t, sizeof(t)), "no ETag: %s", R.head);
    return t;
}

static const char *resp(const char *a, const char *b, const char *c)
{
    static char out[4096];
    int fd = h_connect(D.port);
    struct h_reply *r = h_cmdv(fd, a, b, c, NULL);
    ck_assert_ptr_nonnull(r);
    snprintf(out, sizeof(out), "%s", r->raw);
    h_free(r);
    close(fd);
    return out;
}

START_TEST(a_retry_on_any_connection_is_the_first_answer_and_not_applied_again)
{
    start(NULL);
    int64_t w0 = hx_info(&D, "http_idempotent_writes"), r0 = hx_info(&D, "http_idempotent_replays");
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:1", "\"op-1\"", NULL, "first"), 200);
    ck_assert(!replayed());
    char first[64];
    snprintf(first, sizeof(first), "%s", etag());
    ck_assert_str_eq(resp("SET", "k:1", "other"), "+OK\r\n");
    for (int i = 0; i < 5; i++) { /* new connections: either edge */
        ck_assert_int_eq(idem("PUT", "/v1/kv/k:1", "\"op-1\"", NULL, "first"), 200);
        ck_assert(replayed());
        ck_assert_str_eq(etag(), first);
    }
    ck_assert_str_eq(resp("GET", "k:1", NULL), "$5\r\nother\r\n");
    /* the bare-token form names the same record */
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:1", "op-1", NULL, "first"), 200);
    ck_assert(replayed());
    ck_assert_int_eq(hx_info(&D, "http_idempotent_writes") - w0, 7);
    ck_assert_int_eq(hx_info(&D, "http_idempotent_replays") - r0, 6);
}
END_TEST

START_TEST(another_request_with_the_key_is_422_and_other_keys_are_new)
{
    start(NULL);
    int64_t m0 = hx_info(&D, "http_idempotency_mismatches");
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:2", "\"op-2\"", NULL, "first"), 200);
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:2", "\"op-2\"", NULL, "second"), 422);
    ck_assert_int_eq(idem("DELETE", "/v1/kv/k:2", "\"op-2\"", NULL, NULL), 422);
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:2?ttl=100", "\"op-2\"", NULL, "first"), 422);
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:2", "\"op-2\"", "If-None-Match: *\r\n", "first"), 422);
    ck_assert_str_eq(resp("GET", "k:2", NULL), "$5\r\nfirst\r\n");
    ck_assert_int_eq(hx_info(&D, "http_idempotency_mismatches") - m0, 4);
    /* the same Idempotency-Key on another key: its own request */
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:3", "\"op-2\"", NULL, "third"), 200);
    ck_assert(!replayed());
    ck_assert_str_eq(resp("GET", "k:3", NULL), "$5\r\nthird\r\n");
    /* malformed: refused before anything runs */
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:4", "\"a b\"", NULL, "x"), 400);
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:4", "\"\"", NULL, "x"), 400);
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:4", "\"op\"", "Idempotency-Key: \"op\"\r\n", "x"), 400);
    ck_assert_str_eq(resp("EXISTS", "k:4", NULL), ":0\r\n");
}
END_TEST

START_TEST(deletes_and_creates_replay_their_own_statuses)
{
    start(NULL);
    ck_assert_str_eq(resp("SET", "k:d", "v"), "+OK\r\n");
    ck_assert_int_eq(idem("DELETE", "/v1/kv/k:d", "\"del-1\"", NULL, NULL), 204);
    ck_assert_str_eq(resp("SET", "k:d", "back"), "+OK\r\n");
    ck_assert_int_eq(idem("DELETE", "/v1/kv/k:d", "\"del-1\"", NULL, NULL), 204);
    ck_assert(replayed());
    ck_assert_str_eq(resp("GET", "k:d", NULL), "$4\r\nback\r\n"); /* not deleted again */
    ck_assert_int_eq(idem("DELETE", "/v1/kv/k:none", "\"del-2\"", NULL, NULL), 404);
    ck_assert_int_eq(idem("DELETE", "/v1/kv/k:none", "\"del-2\"", NULL, NULL), 404);
    ck_assert(replayed());
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:c", "\"new-1\"", "If-None-Match: *\r\n", "v1"), 201);
    char tag[64];
    snprintf(tag, sizeof(tag), "%s", etag());
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:c", "\"new-1\"", "If-None-Match: *\r\n", "v1"), 201);
    ck_assert(replayed());
    ck_assert_str_eq(etag(), tag);
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:c", "\"new-2\"", "If-None-Match: *\r\n", "v2"), 412);
    ck_assert_str_eq(etag(), tag); /* the version the key holds */
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:c", "\"new-2\"", "If-None-Match: *\r\n", "v2"), 412);
    ck_assert(replayed());
    /* If-Match: the compare-and-set's answer too */
    char im[96];
    snprintf(im, sizeof(im), "If-Match: %s\r\n", tag);
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:c", "\"cas-1\"", im, "v3"), 200);
    ck_assert_int_eq(idem("PUT", "/v1/kv/k:c", "\"cas-1\"", im, "v3"), 200);
    ck_assert(replayed());
    ck_assert_str_eq(resp("GET", "k:c", NULL), "$2\r\nv3\r\n");
}
END_TEST

START_TEST(a_durable_record_survives_its_owners_kill_9)
{
    start(NULL);
    ck_assert_int_eq(idem("PUT", "/v1/kv/m:1", "\"pay-1\"", NULL, "100"), 200);
    char tag[64];
    snprintf(tag, sizeof(tag), "%s", etag());
    pid_t owner = h_child(&D, "hotkvd: owner cold/0", 0);
    ck_assert_int_gt(owner, 0);
    ck_assert_int_eq(kill(owner, SIGKILL), 0);
    int status = 0;
    for (int64_t end = h_now_ms() + 15000; h_now_ms() < end; h_sleep_ms(100)) {
        status = idem("PUT", "/v1/kv/m:1", "\"pay-1\"", NULL, "100");
        if (status == 200)
            break;
    }
    ck_assert_int_eq(status, 200);
    ck_assert(replayed());
    ck_assert_str_eq(etag(), tag);
    ck_assert_int_ge(h_child(&D, "hotkvd: owner cold/0", owner), 1); /* a new owner answered */
}
END_TEST

START_TEST(records_are_no_clients_keys)
{
    start("http-idempotency-ttl 2s\n");
    for (int i = 0; i < 5; i++) {
        char p[64], k[32];
        snprintf(p, sizeof(p), "/v1/kv/u:%d", i);
        snprintf(k, sizeof(k), "\"hidden-%d\"", i);
        ck_assert_int_eq(idem("PUT", p, k, NULL, "v"), 200);
    }
    ck_assert_str_eq(resp("DBSIZE", NULL, NULL), ":5\r\n");
    const char *keys = resp("KEYS", "*", NULL);
    ck_assert_msg(strstr(keys, "hkv") == NULL && strncmp(keys, "*5\r\n", 4) == 0, "KEYS: %s", keys);
    const char *scan = resp("SCAN", "0", NULL); /* a few keys: one page */
    ck_assert_msg(strstr(scan, "hkv") == NULL && strstr(scan, "*5\r\n") != NULL, "SCAN: %s", scan);
    for (int i = 0; i < 20; i++)
        ck_assert_msg(strstr(resp("RANDOMKEY", NULL, NULL), "u:") != NULL, "RANDOMKEY");
    const char *ks = resp("INFO", "keyspace", NULL);
    ck_assert_msg(strstr(ks, "keys=5,expires=0") != NULL, "INFO keyspace: %s", ks);
    /* a client cannot name one, over RESP or HTTP */
    int fd = h_connect(D.port);
    static const char get[] = "*2\r\n$3\r\nGET\r\n$6\r\n\xffhkv\x00i\r\n";
    ck_assert_int_eq(h_send(fd, get, sizeof(get) - 1), 0);
    struct h_reply *r = h_read(fd);
    ck_assert_msg(r != NULL && strncmp(r->raw, "-ERR keys beginning with", 24) == 0, "GET: %s",
                  r != NULL ? r->raw : "no reply");
    h_free(r);
    close(fd);
    ck_assert_int_eq(idem("GET", "/v1/kv/%FFhkv%00i", NULL, NULL, NULL), 400);
    /* past http-idempotency-ttl the record is gone: the same request is new */
    h_sleep_ms(2500);
    ck_assert_str_eq(resp("SET", "u:0", "other"), "+OK\r\n");
    ck_assert_int_eq(idem("PUT", "/v1/kv/u:0", "\"hidden-0\"", NULL, "v"), 200);
    ck_assert(!replayed());
    ck_assert_str_eq(resp("GET", "u:0", NULL), "$1\r\nv\r\n");
}
END_TEST

Suite *idem_suite(void)
{
    Suite *s = suite_create("idem");
    TCase *tc = tcase_create("idempotency key");
    tcase_set_timeout(tc, 90);
    tcase_add_checked_fixture(tc, NULL, stop);
    tcase_add_test(tc, a_retry_on_any_connection_is_the_first_answer_and_not_applied_again);
    tcase_add_test(tc, another_request_with_the_key_is_422_and_other_keys_are_new);
    tcase_add_test(tc, deletes_and_creates_replay_their_own_statuses);
    tcase_add_test(tc, a_durable_record_survives_its_owners_kill_9);
    tcase_add_test(tc, records_are_no_clients_keys);
    suite_add_tcase(s, tc);
    return s;
}
