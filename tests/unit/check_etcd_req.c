/*
 * check_etcd_req.c - the JSON bodies the etcd client sends (proto/etcd_req.c):
 * keys and values in base64, int64 as strings, enum names, the compare
 * targets and ops the agent uses, etcd's 128-op limit, and the range end of
 * a prefix (etcd_prefix_end, beside the requests).
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "proto/etcd_msg.h"

static const char *body(struct hkv_buf *b)
{
    buf_append(b, "", 1);
    return buf_head(b);
}

START_TEST(request_bodies)
{
    struct hkv_buf b = HKV_BUF_INIT;
    ck_assert_int_eq(etcd_req_range(&b, "/h/", 3, "/h0", 3, 0, 0), HKV_OK);
    ck_assert_str_eq(body(&b), "{\"key\":\"L2gv\",\"range_end\":\"L2gw\"}");
    buf_reset(&b);
    ck_assert_int_eq(etcd_req_range(&b, "/a", 2, NULL, 0, 12, 1), HKV_OK);
    ck_assert_str_eq(body(&b), "{\"key\":\"L2E=\",\"revision\":\"12\",\"limit\":\"1\"}");
    buf_reset(&b);
    ck_assert_int_eq(etcd_req_put(&b, "/a", 2, "", 0, INT64_C(4111120359164393484)), HKV_OK);
    ck_assert_str_eq(body(&b), "{\"key\":\"L2E=\",\"value\":\"\",\"lease\":\"4111120359164393484\"}");
    buf_reset(&b);
    ck_assert_int_eq(etcd_req_delete(&b, "/a", 2, NULL, 0), HKV_OK);
    ck_assert_str_eq(body(&b), "{\"key\":\"L2E=\"}");
    buf_reset(&b);
    ck_assert_int_eq(etcd_req_int(&b, "TTL", 6), HKV_OK);
    ck_assert_str_eq(body(&b), "{\"TTL\":\"6\"}");
    buf_reset(&b);
    ck_assert_int_eq(etcd_req_watch(&b, "/w/", 3, "/w0", 3, 17), HKV_OK);
    ck_assert_str_eq(body(&b), "{\"create_request\":{\"key\":\"L3cv\",\"range_end\":\"L3cw\","
                               "\"start_revision\":\"17\",\"progress_notify\":true}}");
    buf_reset(&b);
    ck_assert_int_eq(etcd_req_auth(&b, "ro\"ot", "p\\w\n"), HKV_OK);
    ck_assert_str_eq(body(&b), "{\"name\":\"ro\\\"ot\",\"password\":\"p\\\\w\\u000a\"}");
    buf_reset(&b);
    ck_assert_int_eq(etcd_req_put(&b, "", 0, "v", 1, 0), HKV_EINVAL); /* no empty key */
    buf_reset(&b);
    ck_assert_int_eq(etcd_req_range(&b, "/a", 2, NULL, 0, -1, 0), HKV_EINVAL);
    buf_deinit(&b);
}
END_TEST

START_TEST(txn_request_with_every_compare_and_op)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct etcd_cmp cmp[] = {
        {ETCD_MOD, ETCD_EQUAL, "/m", 2, 7, NULL, 0},
        {ETCD_CREATE, ETCD_EQUAL, "/c", 2, 0, NULL, 0},
        {ETCD_VERSION, ETCD_GREATER, "/v", 2, 0, NULL, 0},
        {ETCD_VALUE, ETCD_NOT_EQUAL, "/x", 2, 0, "v1", 2},
    };
    struct etcd_op ok[] = {
        {ETCD_OP_PUT, "/p", 2, NULL, 0, "v", 1, 5},
        {ETCD_OP_DELETE, "/d/", 3, "/d0", 3, NULL, 0, 0},
    };
    struct etcd_op fail[] = {{ETCD_OP_RANGE, "/m", 2, NULL, 0, NULL, 0, 0}};
    ck_assert_int_eq(etcd_req_txn(&b, cmp, 4, ok, 2, fail, 1), HKV_OK);
    ck_assert_str_eq(body(&b),
                     "{\"compare\":["
                     "{\"key\":\"L20=\",\"target\":\"MOD\",\"result\":\"EQUAL\",\"mod_revision\":\"7\"},"
                     "{\"key\":\"L2M=\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"},"
                     "{\"key\":\"L3Y=\",\"target\":\"VERSION\",\"result\":\"GREATER\",\"version\":\"0\"},"
                     "{\"key\":\"L3g=\",\"target\":\"VALUE\",\"result\":\"NOT_EQUAL\",\"value\":\"djE=\"}],"
                     "\"success\":[{\"request_put\":{\"key\":\"L3A=\",\"value\":\"dg==\",\"lease\":\"5\"}},"
                     "{\"request_delete_range\":{\"key\":\"L2Qv\",\"range_end\":\"L2Qw\"}}],"
                     "\"failure\":[{\"request_range\":{\"key\":\"L20=\"}}]}");
    buf_reset(&b);
    /* etcd's limit is 128 ops per branch */
    struct etcd_op many[129];
    for (int k = 0; k < 129; k++)
        many[k] = ok[0];
    ck_assert_int_eq(etcd_req_txn(&b, NULL, 0, many, 128, NULL, 0), HKV_OK);
    buf_reset(&b);
    ck_assert_int_eq(etcd_req_txn(&b, NULL, 0, many, 129, NULL, 0), HKV_EINVAL);
    buf_reset(&b);
    ck_assert_int_eq(etcd_req_txn(&b, NULL, 0, ok, 1, many, 129), HKV_EINVAL);
    buf_deinit(&b);
}
END_TEST

START_TEST(prefix_end)
{
    char out[8];
    ck_assert_uint_eq(etcd_prefix_end("/hotkvd/c/", 10, (char[10]){0}), 10);
    ck_assert_uint_eq(etcd_prefix_end("/a/", 3, out), 3);
    ck_assert_int_eq(memcmp(out, "/a0", 3), 0);
    ck_assert_uint_eq(etcd_prefix_end("a\xff\xff", 3, out), 1);
    ck_assert_int_eq(out[0], 'b');
    ck_assert_uint_eq(etcd_prefix_end("\xff", 1, out), 1);
    ck_assert_int_eq(out[0], '\0'); /* every key */
}
END_TEST

Suite *etcd_req_suite(void)
{
    Suite *s = suite_create("etcd_req");
    TCase *tc = tcase_create("bodies");
    tcase_add_test(tc, request_bodies);
    tcase_add_test(tc, txn_request_with_every_compare_and_op);
    suite_add_tcase(s, tc);
    tc = tcase_create("prefix");
    tcase_add_test(tc, prefix_end);
    suite_add_tcase(s, tc);
    return s;
}
