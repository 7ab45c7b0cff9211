/*
 * check_etcd_msg.c - the etcd client's requests and the decoding of etcd's
 * answers (proto/etcd_req.c, etcd_msg.c), against answers captured
 * from the real etcd 3.4.23 of this machine with curl (CLUSTER.md §3): int64
 * as strings, omitted defaults, the {"result"} wrapping of streaming calls,
 * errors with an HTTP error status, and a real watch stream cut at every
 * point by the HTTP chunks and the lines.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/b64.h"
#include "proto/etcd_msg.h"
#include "proto/http_resp.h"

#define HDR(rev) "{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":" \
                 "\"13668033151171901709\",\"revision\":\"" rev "\",\"raft_term\":\"2\"}"

static struct etcd_answer a;

static int dec(enum etcd_kind kind, int status, const char *body)
{
    /* an exact-size heap copy: a read past the end is a crash, not luck */
    size_t n = strlen(body);
    char *p = malloc(n);
    memcpy(p, body, n);
    int rc = etcd_msg_decode(kind, status, p, n, &a);
    /* everything the result points at lives in the answer, not the body */
    memset(p, 'X', n);
    free(p);
    return rc;
}

static void teardown(void)
{
    etcd_answer_free(&a);
}

static void kv_is(const struct etcd_kv *kv, const char *key, const char *val, int64_t cr,
                  int64_t mr, int64_t ver, int64_t lease)
{
    ck_assert_uint_eq(kv->key_len, strlen(key));
    ck_assert_int_eq(memcmp(kv->key, key, kv->key_len), 0);
    ck_assert_int_eq(kv->key[kv->key_len], '\0');
    ck_assert_uint_eq(kv->value_len, strlen(val));
    ck_assert_int_eq(memcmp(kv->value, val, kv->value_len), 0);
    ck_assert_int_eq(kv->create_revision, cr);
    ck_assert_int_eq(kv->mod_revision, mr);
    ck_assert_int_eq(kv->version, ver);
    ck_assert(kv->lease == lease);
}

START_TEST(range_with_kvs_and_an_empty_value)
{
    /* /a = v1, /b = "" (an empty value is omitted too) */
    ck_assert_int_eq(dec(ETCD_K_RANGE, 200,
                         HDR("3") ",\"kvs\":[{\"key\":\"L2E=\",\"create_revision\":\"2\","
                                  "\"mod_revision\":\"2\",\"version\":\"1\",\"value\":\"djE=\"},"
                                  "{\"key\":\"L2I=\",\"create_revision\":\"3\",\"mod_revision\":"
                                  "\"3\",\"version\":\"1\"}],\"count\":\"2\"}"),
                     HKV_OK);
    ck_assert_int_eq(a.r.revision, 3);
    ck_assert_uint_eq(a.r.nkvs, 2);
    ck_assert_int_eq(a.r.count, 2);
    ck_assert_int_eq(a.r.more, 0);
    kv_is(&a.r.kvs[0], "/a", "v1", 2, 2, 1, 0);
    kv_is(&a.r.kvs[1], "/b", "", 3, 3, 1, 0);
}
END_TEST

START_TEST(empty_range_has_no_kvs_nor_count)
{
    ck_assert_int_eq(dec(ETCD_K_RANGE, 200, HDR("1") "}"), HKV_OK);
    ck_assert_int_eq(a.r.revision, 1);
    ck_assert_uint_eq(a.r.nkvs, 0);
    ck_assert_int_eq(a.r.count, 0);
}
END_TEST

START_TEST(range_with_limit_says_more_and_lease)
{
    ck_assert_int_eq(dec(ETCD_K_RANGE, 200,
                         HDR("5") ",\"kvs\":[{\"key\":\"L2w=\",\"create_revision\":\"5\","
                                  "\"mod_revision\":\"5\",\"version\":\"1\",\"value\":\"dg==\","
                                  "\"lease\":\"4111120359164393484\"}],\"more\":true,"
                                  "\"count\":\"2\"}"),
                     HKV_OK);
    ck_assert_int_eq(a.r.more, 1);
    ck_assert_int_eq(a.r.count, 2);
    kv_is(&a.r.kvs[0], "/l", "v", 5, 5, 1, INT64_C(4111120359164393484));
}
END_TEST

START_TEST(failed_txn_has_no_succeeded_and_reads_the_truth)
{
    /* CREATE(/a) = 0 lost; the failure branch read /a */
    ck_assert_int_eq(dec(ETCD_K_TXN, 200,
                         HDR("3") ",\"responses\":[{\"response_range\":{\"header\":{\"revision\":"
                                  "\"3\"},\"kvs\":[{\"key\":\"L2E=\",\"create_revision\":\"2\","
                                  "\"mod_revision\":\"2\",\"version\":\"1\",\"value\":\"djE=\"}],"
                                  "\"count\":\"1\"}}]}"),
                     HKV_OK);
    ck_assert_int_eq(a.r.succeeded, 0);
    ck_assert_int_eq(a.r.revision, 3);
    ck_assert_uint_eq(a.r.nkvs, 1);
    kv_is(&a.r.kvs[0], "/a", "v1", 2, 2, 1, 0);
}
END_TEST

START_TEST(succeeded_txn_with_range_put_and_delete)
{
    ck_assert_int_eq(
        dec(ETCD_K_TXN, 200,
            HDR("4") ",\"succeeded\":true,\"responses\":[{\"response_range\":{\"header\":"
                     "{\"revision\":\"3\"},\"kvs\":[{\"key\":\"L2E=\",\"create_revision\":\"2\","
                     "\"mod_revision\":\"2\",\"version\":\"1\",\"value\":\"djE=\"}],\"count\":"
                     "\"1\"}},{\"response_put\":{\"header\":{\"revision\":\"4\"}}},"
                     "{\"response_delete_range\":{\"header\":{\"revision\":\"4\"},\"deleted\":"
                     "\"1\"}}]}"),
        HKV_OK);
    ck_assert_int_eq(a.r.succeeded, 1);
    ck_assert_int_eq(a.r.revision, 4);
    ck_assert_uint_eq(a.r.nkvs, 1);
    ck_assert_int_eq(a.r.count, 1);
    etcd_answer_free(&a);
    /* a txn with only puts: no kvs at all */
    ck_assert_int_eq(dec(ETCD_K_TXN, 200,
                         HDR("9") ",\"succeeded\":true,\"responses\":[{\"response_put\":"
                                  "{\"header\":{\"revision\":\"9\"}}}]}"),
                     HKV_OK);
    ck_assert_uint_eq(a.r.nkvs, 0);
    ck_assert_int_eq(a.r.succeeded, 1);
}
END_TEST

START_TEST(put_and_delete)
{
    ck_assert_int_eq(dec(ETCD_K_PUT, 200, HDR("2") "}"), HKV_OK);
    ck_assert_int_eq(a.r.revision, 2);
    etcd_answer_free(&a);
    ck_assert_int_eq(dec(ETCD_K_DELETE, 200, HDR("7") ",\"deleted\":\"1\"}"), HKV_OK);
    ck_assert_int_eq(a.r.deleted, 1);
    etcd_answer_free(&a);
    ck_assert_int_eq(dec(ETCD_K_DELETE, 200, HDR("7") "}"), HKV_OK); /* nothing deleted */
    ck_assert_int_eq(a.r.deleted, 0);
}
END_TEST

START_TEST(lease_ids_above_2_pow_53_are_exact)
{
    ck_assert_int_eq(dec(ETCD_K_GRANT, 200, HDR("4") ",\"ID\":\"4111120359164393484\","
                                                     "\"TTL\":\"6\"}"),
                     HKV_OK);
    ck_assert(a.r.lease_id == INT64_C(4111120359164393484)); /* a double gives ...480 */
    ck_assert_int_eq(a.r.ttl_s, 6);
    etcd_answer_free(&a);
    /* TTL 1 is granted as 2 */
    ck_assert_int_eq(dec(ETCD_K_GRANT, 200, HDR("4") ",\"ID\":\"4111120359164393486\","
                                                     "\"TTL\":\"2\"}"),
                     HKV_OK);
    ck_assert_int_eq(a.r.ttl_s, 2);
    etcd_answer_free(&a);
    ck_assert_int_eq(dec(ETCD_K_GRANT, 200, HDR("4") ",\"TTL\":\"2\"}"), HKV_EPROTO);
    etcd_answer_free(&a);
    ck_assert_int_eq(dec(ETCD_K_GRANT, 200, HDR("4") ",\"ID\":4111120359164393486.0,"
                                                     "\"TTL\":\"2\"}"),
                     HKV_EPROTO);
}
END_TEST

START_TEST(keepalive_alive_and_expired)
{
    ck_assert_int_eq(dec(ETCD_K_KEEPALIVE, 200,
                         "{\"result\":" HDR("4") ",\"ID\":\"4111120359164393484\",\"TTL\":\"6\"}}"),
                     HKV_OK);
    ck_assert(a.r.lease_id == INT64_C(4111120359164393484));
    ck_assert_int_eq(a.r.ttl_s, 6);
    etcd_answer_free(&a);
    /* a lease that is gone: HTTP 200, no TTL */
    ck_assert_int_eq(dec(ETCD_K_KEEPALIVE, 200,
                         "{\"result\":" HDR("5") ",\"ID\":\"4111120359164393486\"}}"),
                     HKV_OK);
    ck_assert_int_eq(a.r.ttl_s, 0);
    ck_assert(a.r.lease_id == INT64_C(4111120359164393486));
    etcd_answer_free(&a);
    /* not wrapped in "result": not what the gateway sends for a stream */
    ck_assert_int_eq(dec(ETCD_K_KEEPALIVE, 200, HDR("5") ",\"ID\":\"1\",\"TTL\":\"6\"}"),
                     HKV_EPROTO);
    etcd_answer_free(&a);
    /* a stream's error */
    ck_assert_int_eq(dec(ETCD_K_KEEPALIVE, 200,
                         "{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":"
                         "\"etcdserver: no leader\",\"http_status\":\"Service Unavailable\"}}"),
                     HKV_EINVAL);
    ck_assert_int_eq(a.r.code, 14);
    ck_assert_str_eq(a.r.message, "etcdserver: no leader");
}
END_TEST

START_TEST(etcd_errors_carry_code_and_message)
{
    ck_assert_int_eq(dec(ETCD_K_REVOKE, 404,
                         "{\"error\":\"etcdserver: requested lease not found\",\"message\":"
                         "\"etcdserver: requested lease not found\",\"code\":5}"),
                     HKV_EINVAL);
    ck_assert_int_eq(a.r.code, 5);
    ck_assert_str_eq(a.r.message, "etcdserver: requested lease not found");
    etcd_answer_free(&a);
    ck_assert_int_eq(dec(ETCD_K_AUTH, 400,
                         "{\"error\":\"etcdserver: authentication failed, invalid user ID or "
                         "password\",\"message\":\"etcdserver: authentication failed, invalid "
                         "user ID or password\",\"code\":3}"),
                     HKV_EINVAL);
    ck_assert_int_eq(a.r.code, 3);
    etcd_answer_free(&a);
    ck_assert_int_eq(dec(ETCD_K_RANGE, 401,
                         "{\"error\":\"etcdserver: invalid auth token\",\"message\":"
                         "\"etcdserver: invalid auth token\",\"code\":16}"),
                     HKV_EINVAL);
    ck_assert_int_eq(a.r.code, 16);
    etcd_answer_free(&a);
    ck_assert_int_eq(dec(ETCD_K_RANGE, 400,
                         "{\"error\":\"etcdserver: mvcc: required revision has been compacted\","
                         "\"message\":\"etcdserver: mvcc: required revision has been compacted\","
                         "\"code\":11}"),
                     HKV_EINVAL);
    ck_assert_int_eq(a.r.code, 11);
    etcd_answer_free(&a);
    /* a txn over etcd's limits: code 3, with status 400 */
    ck_assert_int_eq(dec(ETCD_K_TXN, 400,
                         "{\"error\":\"etcdserver: duplicate key given in txn request\","
                         "\"message\":\"etcdserver: duplicate key given in txn request\","
                         "\"code\":3}"),
                     HKV_EINVAL);
    ck_assert_int_eq(a.r.code, 3);
    etcd_answer_free(&a);
    /* an error page that is not etcd's */
    ck_assert_int_eq(dec(ETCD_K_RANGE, 502, "<html>Bad Gateway</html>"), HKV_EPROTO);
    ck_assert_ptr_nonnull(a.r.message);
    etcd_answer_free(&a);
    ck_assert_int_eq(dec(ETCD_K_RANGE, 500, "{\"message\":\"x\"}"), HKV_EPROTO);
}
END_TEST

START_TEST(auth_token)
{
    ck_assert_int_eq(dec(ETCD_K_AUTH, 200, HDR("11") ",\"token\":\"ANSQpYztIcxMwtmR.31\"}"),
                     HKV_OK);
    ck_assert_str_eq(a.token, "ANSQpYztIcxMwtmR.31");
    etcd_answer_free(&a);
    ck_assert_int_eq(dec(ETCD_K_AUTH, 200, HDR("11") "}"), HKV_EPROTO);
}
END_TEST

START_TEST(shapes_etcd_never_sends_are_protocol_errors)
{
    const char *bad[] = {
        "", "null", "[]", "{\"header\":[]}", HDR("x") "}", HDR("1.5") "}",
        HDR("1") ",\"kvs\":{}}", HDR("1") ",\"kvs\":[1]}", HDR("1") ",\"kvs\":[{}]}",
        HDR("1") ",\"kvs\":[{\"key\":\"\"}]}", HDR("1") ",\"kvs\":[{\"key\":\"L2E\"}]}",
        HDR("1") ",\"kvs\":[{\"key\":\"L2E=\",\"value\":5}]}",
        HDR("1") ",\"kvs\":[{\"key\":\"L2E=\",\"version\":true}]}",
        HDR("1") ",\"count\":\"99999999999999999999\"}", HDR("1") ",\"more\":\"true\"}",
        HDR("1") "} trailing", HDR("1"),
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        ck_assert_msg(dec(ETCD_K_RANGE, 200, bad[k]) == HKV_EPROTO, "'%s' accepted", bad[k]);
        ck_assert_uint_eq(a.r.nkvs, 0);
        etcd_answer_free(&a);
    }
    ck_assert_int_eq(dec(ETCD_K_TXN, 200, HDR("1") ",\"succeeded\":1}"), HKV_EPROTO);
    etcd_answer_free(&a);
    ck_assert_int_eq(dec(ETCD_K_TXN, 200, HDR("1") ",\"responses\":{}}"), HKV_EPROTO);
}
END_TEST

static struct etcd_wanswer w;

static int wdec(const char *line)
{
    size_t n = strlen(line);
    char *p = malloc(n);
    memcpy(p, line, n);
    int rc = etcd_msg_decode_watch(p, n, &w);
    memset(p, 'X', n);
    free(p);
    return rc;
}

static void wteardown(void)
{
    etcd_wanswer_free(&w);
}

START_TEST(watch_created_events_progress)
{
    ck_assert_int_eq(wdec("{\"result\":" HDR("9") ",\"created\":true}}"), HKV_OK);
    ck_assert_int_eq(w.m.kind, ETCD_W_CREATED);
    ck_assert_int_eq(w.m.revision, 9);
    etcd_wanswer_free(&w);
    /* a PUT has no "type"; a txn's PUT and DELETE share one revision */
    ck_assert_int_eq(wdec("{\"result\":" HDR("11") ",\"events\":[{\"kv\":{\"key\":\"L3cvYg==\","
                          "\"create_revision\":\"9\",\"mod_revision\":\"11\",\"version\":\"2\","
                          "\"value\":\"Mg==\"}},{\"type\":\"DELETE\",\"kv\":{\"key\":"
                          "\"L3cvYQ==\",\"mod_revision\":\"11\"}}]}}"),
                     HKV_OK);
    ck_assert_int_eq(w.m.kind, ETCD_W_EVENTS);
    ck_assert_uint_eq(w.m.nevents, 2);
    ck_assert_int_eq(w.m.events[0].type, ETCD_EV_PUT);
    kv_is(&w.m.events[0].kv, "/w/b", "2", 9, 11, 2, 0);
    ck_assert_int_eq(w.m.events[1].type, ETCD_EV_DELETE);
    kv_is(&w.m.events[1].kv, "/w/a", "", 0, 11, 0, 0);
    etcd_wanswer_free(&w);
    /* progress: a header and nothing else */
    ck_assert_int_eq(wdec("{\"result\":" HDR("11") "}}"), HKV_OK);
    ck_assert_int_eq(w.m.kind, ETCD_W_PROGRESS);
    ck_assert_int_eq(w.m.revision, 11);
    ck_assert_uint_eq(w.m.nevents, 0);
}
END_TEST

START_TEST(watch_canceled_by_compaction_or_refused)
{
    /* the start was compacted away: no header revision, compact_revision */
    ck_assert_int_eq(wdec("{\"result\":{\"header\":{\"cluster_id\":\"15118495548433857066\","
                          "\"member_id\":\"13668033151171901709\",\"raft_term\":\"2\"},"
                          "\"canceled\":true,\"compact_revision\":\"11\"}}"),
                     HKV_OK);
    ck_assert_int_eq(w.m.kind, ETCD_W_CANCELED);
    ck_assert_int_eq(w.m.compact_revision, 11);
    etcd_wanswer_free(&w);
    /* refused for a bad token: created and canceled at once, watch_id -1 */
    ck_assert_int_eq(wdec("{\"result\":" HDR("1") ",\"watch_id\":\"-1\",\"created\":true,"
                          "\"canceled\":true,\"cancel_reason\":\"rpc error: code = "
                          "Unauthenticated desc = etcdserver: invalid auth token\"}}"),
                     HKV_OK);
    ck_assert_int_eq(w.m.kind, ETCD_W_BROKEN);
    ck_assert_int_eq(w.m.status, HKV_EINVAL);
    ck_assert_ptr_nonnull(strstr(w.reason, "invalid auth token"));
    etcd_wanswer_free(&w);
    ck_assert_int_eq(wdec("{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":"
                          "\"etcdserver: no leader\"}}"),
                     HKV_OK);
    ck_assert_int_eq(w.m.kind, ETCD_W_BROKEN);
    ck_assert_int_eq(w.m.status, HKV_EINVAL);
    ck_assert_str_eq(w.reason, "etcdserver: no leader");
}
END_TEST

START_TEST(watch_lines_etcd_never_sends)
{
    const char *bad[] = {
        "", "{}", "{\"result\":[]}", "{\"result\":{\"events\":{}}}",
        "{\"result\":{\"events\":[{\"type\":\"PATCH\",\"kv\":{\"key\":\"YQ==\","
        "\"mod_revision\":\"2\"}}]}}",
        "{\"result\":{\"events\":[{\"kv\":{\"key\":\"YQ==\"}}]}}",
        "{\"result\":{\"events\":[{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"3\"}},"
        "{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"2\"}}]}}",
        "{\"result\":{\"created\":true,\"events\":[{\"kv\":{\"key\":\"YQ==\","
        "\"mod_revision\":\"2\"}}]}}",
        "{\"result\":{\"events\":[{\"type\":\"DELETE\"}]}}",
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        ck_assert_msg(wdec(bad[k]) == HKV_EPROTO, "'%s' accepted", bad[k]);
        ck_assert_int_eq(w.m.kind, ETCD_W_BROKEN);
        ck_assert_int_eq(w.m.status, HKV_EPROTO);
        etcd_wanswer_free(&w);
    }
}
END_TEST

/* The body of a real watch stream as it came off the wire: the head, then
 * chunks each holding one line. */
static const char watch_stream[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    "Grpc-Metadata-Content-Type: application/grpc\r\nDate: Tue, 01 Dec 2026 02:09:38 GMT\r\n"
    "Transfer-Encoding: chunked\r\n\r\n"
    "8d\r\n{\"result\":{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":"
    "\"13668033151171901709\",\"revision\":\"9\",\"raft_term\":\"2\"},\"created\":true}}\n\r\n"
    "ec\r\n{\"result\":{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":"
    "\"13668033151171901709\",\"revision\":\"10\",\"raft_term\":\"2\"},\"events\":[{\"kv\":"
    "{\"key\":\"L3cvYQ==\",\"create_revision\":\"10\",\"mod_revision\":\"10\",\"version\":\"1\","
    "\"value\":\"MQ==\"}}]}}\n\r\n"
    "129\r\n{\"result\":{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":"
    "\"13668033151171901709\",\"revision\":\"11\",\"raft_term\":\"2\"},\"events\":[{\"kv\":"
    "{\"key\":\"L3cvYg==\",\"create_revision\":\"9\",\"mod_revision\":\"11\",\"version\":\"2\","
    "\"value\":\"Mg==\"}},{\"type\":\"DELETE\",\"kv\":{\"key\":\"L3cvYQ==\",\"mod_revision\":"
    "\"11\"}}]}}\n\r\n"
    "7f\r\n{\"result\":{\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":"
    "\"13668033151171901709\",\"revision\":\"11\",\"raft_term\":\"2\"}}}\n\r\n";

/* A summary of the messages: kind:revision:nevents per line. */
struct wlog {
    char text[512];
    size_t len;
};

static void log_line(struct wlog *l, const char *line, size_t n)
{
    struct etcd_wanswer x;
    ck_assert_int_eq(etcd_msg_decode_watch(line, n, &x), HKV_OK);
    l->len += (size_t)snprintf(l->text + l->len, sizeof(l->text) - l->len, "%d:%" PRId64 ":%zu ",
                               (int)x.m.kind, x.m.revision, x.m.nevents);
    etcd_wanswer_free(&x);
}

/* Feeds the stream to http_resp + etcd_lines in pieces cut at a and b. */
static void run_stream(const char *s, size_t len, size_t a1, size_t b1, struct wlog *out)
{
    struct http_resp *p = malloc(sizeof(*p));
    http_resp_init(p, 0);
    struct etcd_lines lines;
    etcd_lines_init(&lines, 1024);
    size_t cuts[4] = {0, a1, b1, len};
    memset(out, 0, sizeof(*out));
    for (int k = 0; k < 3; k++) {
        size_t n = cuts[k + 1] - cuts[k];
        char *buf = malloc(n + 1);
        memcpy(buf, s + cuts[k], n);
        size_t off = 0;
        for (int guard = 0; guard < 10000; guard++) {
            size_t used, dlen;
            const char *data;
            int rc = http_resp_step(p, buf + off, n - off, &used, &data, &dlen);
            ck_assert_int_ge(rc, 0);
            off += used;
            if (rc == HTTP_EV_NEED)
                break;
            if (rc != HTTP_EV_DATA)
                continue;
            while (dlen > 0) {
                size_t u;
                const char *line;
                size_t llen;
                int lr = etcd_lines_next(&lines, data, dlen, &u, &line, &llen);
                ck_assert_int_ge(lr, 0);
                ck_assert_uint_le(u, dlen);
                ck_assert_uint_gt(u, 0);
                data += u;
                dlen -= u;
                if (lr == 1)
                    log_line(out, line, llen);
            }
        }
        free(buf);
    }
    etcd_lines_deinit(&lines);
    free(p);
}

START_TEST(watch_stream_split_at_every_pair_of_points)
{
    size_t len = strlen(watch_stream);
    struct wlog whole, cut;
    run_stream(watch_stream, len, len, len, &whole);
    char want[64];
    snprintf(want, sizeof(want), "%d:9:0 %d:10:1 %d:11:2 %d:11:0 ", ETCD_W_CREATED, ETCD_W_EVENTS,
             ETCD_W_EVENTS, ETCD_W_PROGRESS);
    ck_assert_str_eq(whole.text, want);
    /* every single cut, and pairs of cuts on a stride (every pair would be
     * 1 M runs): the same four messages each time */
    for (size_t a1 = 0; a1 <= len; a1++) {
        run_stream(watch_stream, len, a1, a1, &cut);
        ck_assert_msg(strcmp(cut.text, want) == 0, "cut at %zu: %s", a1, cut.text);
    }
    for (size_t a1 = 0; a1 <= len; a1 += 7)
        for (size_t b1 = a1; b1 <= len; b1 += 13) {
            run_stream(watch_stream, len, a1, b1, &cut);
            ck_assert_msg(strcmp(cut.text, want) == 0, "cuts at %zu, %zu", a1, b1);
        }
}
END_TEST

START_TEST(lines_are_bounded_and_joined)
{
    struct etcd_lines l;
    etcd_lines_init(&l, 8);
    size_t u, n;
    const char *line;
    /* several lines in one piece: one at a time, no copy */
    const char *s = "ab\ncd\r\n\n";
    ck_assert_int_eq(etcd_lines_next(&l, s, 8, &u, &line, &n), 1);
    ck_assert_uint_eq(u, 3);
    ck_assert_ptr_eq(line, s);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(etcd_lines_next(&l, s + 3, 5, &u, &line, &n), 1);
    ck_assert_uint_eq(n, 2); /* the \r goes too */
    ck_assert_int_eq(etcd_lines_next(&l, s + 7, 1, &u, &line, &n), 1);
    ck_assert_uint_eq(n, 0);
    /* a line over three pieces */
    ck_assert_int_eq(etcd_lines_next(&l, "123", 3, &u, &line, &n), 0);
    ck_assert_int_eq(etcd_lines_next(&l, "456", 3, &u, &line, &n), 0);
    ck_assert_int_eq(etcd_lines_next(&l, "78\nx", 4, &u, &line, &n), 1);
    ck_assert_uint_eq(u, 3);
    ck_assert_uint_eq(n, 8);
    ck_assert_int_eq(memcmp(line, "12345678", 8), 0);
    /* one byte more than max, whole or in pieces */
    ck_assert_int_eq(etcd_lines_next(&l, "123456789\n", 10, &u, &line, &n), HKV_ETOOBIG);
    etcd_lines_deinit(&l);
    etcd_lines_init(&l, 8);
    ck_assert_int_eq(etcd_lines_next(&l, "12345", 5, &u, &line, &n), 0);
    ck_assert_int_eq(etcd_lines_next(&l, "6789", 4, &u, &line, &n), HKV_ETOOBIG);
    etcd_lines_deinit(&l);
}
END_TEST

Suite *etcd_msg_suite(void)
{
    Suite *s = suite_create("etcd_msg");
    TCase *tc = tcase_create("kv");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, range_with_kvs_and_an_empty_value);
    tcase_add_test(tc, empty_range_has_no_kvs_nor_count);
    tcase_add_test(tc, range_with_limit_says_more_and_lease);
    tcase_add_test(tc, failed_txn_has_no_succeeded_and_reads_the_truth);
    tcase_add_test(tc, succeeded_txn_with_range_put_and_delete);
    tcase_add_test(tc, put_and_delete);
    suite_add_tcase(s, tc);
    tc = tcase_create("lease_auth");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, lease_ids_above_2_pow_53_are_exact);
    tcase_add_test(tc, keepalive_alive_and_expired);
    tcase_add_test(tc, auth_token);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, etcd_errors_carry_code_and_message);
    tcase_add_test(tc, shapes_etcd_never_sends_are_protocol_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("watch");
    tcase_add_checked_fixture(tc, NULL, wteardown);
    tcase_add_test(tc, watch_created_events_progress);
    tcase_add_test(tc, watch_canceled_by_compaction_or_refused);
    tcase_add_test(tc, watch_lines_etcd_never_sends);
    tcase_add_test(tc, watch_stream_split_at_every_pair_of_points);
    tcase_add_test(tc, lines_are_bounded_and_joined);
    suite_add_tcase(s, tc);
    return s;
}
