/*
 * check_json.c - the bounded JSON tokenizer and base64 (proto/json, proto/b64):
 * the shapes etcd's gateway writes (int64 as strings, omitted defaults), and
 * the hostile ones it must refuse without reading or writing out of bounds.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/b64.h"
#include "proto/json.h"

static struct json_tok toks[256];

static int parse(const char *s)
{
    return json_parse(s, strlen(s), toks, 256);
}

START_TEST(tokens_of_an_etcd_range_answer)
{
    const char *s = "{\"header\":{\"cluster_id\":\"15118495548433857066\",\"revision\":\"3\"},"
                    "\"kvs\":[{\"key\":\"L2E=\",\"mod_revision\":\"2\",\"value\":\"djE=\"},"
                    "{\"key\":\"L2I=\",\"mod_revision\":\"3\"}],\"more\":true,\"count\":\"2\"}";
    int n = parse(s);
    ck_assert_int_gt(n, 0);
    ck_assert_int_eq(json_parse(s, strlen(s), NULL, 0), n); /* counting mode agrees */
    ck_assert_int_eq(toks[0].type, JSON_OBJECT);
    ck_assert_uint_eq(toks[0].size, 4);
    ck_assert_uint_eq(toks[0].next, (uint32_t)n);
    ck_assert_uint_eq(toks[0].len, strlen(s));
    int hdr = json_member(s, toks, 0, "header");
    int64_t v;
    ck_assert_int_eq(json_int64(s, toks, json_member(s, toks, hdr, "revision"), &v), HKV_OK);
    ck_assert_int_eq(v, 3);
    /* cluster_id does not fit an int64: refused, never wrapped */
    ck_assert_int_eq(json_int64(s, toks, json_member(s, toks, hdr, "cluster_id"), &v),
                     HKV_ETOOBIG);
    int kvs = json_member(s, toks, 0, "kvs");
    ck_assert_int_eq(toks[kvs].type, JSON_ARRAY);
    ck_assert_uint_eq(toks[kvs].size, 2);
    int kv1 = json_elem(toks, kvs, 1);
    ck_assert_int_eq(json_member(s, toks, kv1, "value"), -1); /* an omitted default */
    ck_assert_int_eq(json_elem(toks, kvs, 2), -1);
    char out[16];
    size_t n2;
    ck_assert_int_eq(json_string(s, toks, json_member(s, toks, kv1, "key"), out, sizeof(out), &n2),
                     HKV_OK);
    ck_assert_uint_eq(n2, 4);
    ck_assert_int_eq(memcmp(out, "L2I=", 4), 0);
    int more;
    ck_assert_int_eq(json_bool(toks, json_member(s, toks, 0, "more"), &more), HKV_OK);
    ck_assert_int_eq(more, 1);
    ck_assert_int_eq(json_member(s, toks, 0, "succeeded"), -1);
    ck_assert_int_eq(json_member(s, toks, kvs, "key"), -1); /* not an object */
}
END_TEST

START_TEST(next_skips_whole_subtrees)
{
    const char *s = "[{\"a\":[1,[2,{}],3]},\"x\",[],{\"b\":{\"c\":null}},false]";
    int n = parse(s);
    ck_assert_int_gt(n, 0);
    const enum json_type want[] = {JSON_OBJECT, JSON_STRING, JSON_ARRAY, JSON_OBJECT, JSON_FALSE};
    uint32_t i = 1;
    for (int k = 0; k < 5; k++) {
        ck_assert_int_eq(toks[i].type, want[k]);
        ck_assert_int_eq(json_elem(toks, 0, (uint32_t)k), (int)i);
        i = toks[i].next;
    }
    ck_assert_uint_eq(i, (uint32_t)n);
    int b = json_member(s, toks, json_elem(toks, 0, 3), "b");
    ck_assert_int_eq(toks[json_member(s, toks, b, "c")].type, JSON_NULL);
}
END_TEST

START_TEST(int64_from_strings_and_numbers_exactly)
{
    const char *s = "{\"id\":\"7587878866212342301\",\"big\":\"9223372036854775807\","
                    "\"min\":\"-9223372036854775808\",\"over\":\"9223372036854775808\","
                    "\"under\":\"-9223372036854775809\",\"n\":9007199254740993,"
                    "\"zero\":\"0\",\"lead\":\"016\",\"plus\":\"+1\",\"frac\":1.0,\"exp\":1e3,"
                    "\"sp\":\" 1\",\"empty\":\"\",\"negz\":\"-0\",\"esc\":\"\\u0031\","
                    "\"t\":true,\"dash\":\"-\"}";
    ck_assert_int_gt(parse(s), 0);
    int64_t v = 42;
    ck_assert_int_eq(json_int64(s, toks, json_member(s, toks, 0, "id"), &v), HKV_OK);
    ck_assert(v == INT64_C(7587878866212342301)); /* > 2^53: a double would round it */
    ck_assert_int_eq(json_int64(s, toks, json_member(s, toks, 0, "big"), &v), HKV_OK);
    ck_assert(v == INT64_MAX);
    ck_assert_int_eq(json_int64(s, toks, json_member(s, toks, 0, "min"), &v), HKV_OK);
    ck_assert(v == INT64_MIN);
    ck_assert_int_eq(json_int64(s, toks, json_member(s, toks, 0, "n"), &v), HKV_OK);
    ck_assert(v == INT64_C(9007199254740993));
    ck_assert_int_eq(json_int64(s, toks, json_member(s, toks, 0, "zero"), &v), HKV_OK);
    ck_assert(v == 0);
    v = 42;
    ck_assert_int_eq(json_int64(s, toks, json_member(s, toks, 0, "over"), &v), HKV_ETOOBIG);
    ck_assert_int_eq(json_int64(s, toks, json_member(s, toks, 0, "under"), &v), HKV_ETOOBIG);
    const char *bad[] = {"lead", "plus", "frac", "exp", "sp", "empty", "negz", "esc", "t", "dash"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
        ck_assert_msg(json_int64(s, toks, json_member(s, toks, 0, bad[k]), &v) == HKV_EINVAL,
                      "%s accepted", bad[k]);
    ck_assert(v == 42); /* untouched by every refusal */
    ck_assert_int_eq(json_int64(s, toks, json_member(s, toks, 0, "absent"), &v), HKV_EINVAL);
}
END_TEST

START_TEST(strings_unescape_to_utf8)
{
    const char *s = "[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\",\"\\u00e9\\u20ac\\ud83d\\ude00\\u0000\","
                    "\"caf\xc3\xa9\"]";
    ck_assert_int_gt(parse(s), 0);
    char out[64];
    size_t n;
    ck_assert_int_eq(json_string(s, toks, json_elem(toks, 0, 0), out, sizeof(out), &n), HKV_OK);
    ck_assert_uint_eq(n, 12);
    ck_assert_int_eq(memcmp(out, "a\"b\\c/d\b\f\n\r\t", 12), 0);
    ck_assert_int_eq(json_string(s, toks, json_elem(toks, 0, 1), out, sizeof(out), &n), HKV_OK);
    ck_assert_uint_eq(n, 2 + 3 + 4 + 1);
    ck_assert_int_eq(memcmp(out, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\0", 10), 0);
    /* raw UTF-8 passes through */
    ck_assert_int_eq(json_string(s, toks, json_elem(toks, 0, 2), out, sizeof(out), &n), HKV_OK);
    ck_assert_uint_eq(n, 5);
    /* a buffer one byte short is refused, not overrun */
    char small[9];
    memset(small, 'Z', sizeof(small));
    ck_assert_int_eq(json_string(s, toks, json_elem(toks, 0, 1), small, 9, &n), HKV_ETOOBIG);
    ck_assert_int_eq(json_string(s, toks, json_elem(toks, 0, 1), small, 0, &n), HKV_ETOOBIG);
    ck_assert_int_eq(json_string(s, toks, 0, out, sizeof(out), &n), HKV_EINVAL);
    /* keys compare unescaped */
    const char *o = "{\"s\\u0075cceeded\":true}";
    ck_assert_int_gt(parse(o), 0);
    ck_assert_int_eq(json_member(o, toks, 0, "succeeded"), 2);
    ck_assert_int_eq(json_member(o, toks, 0, "succeede"), -1);
    ck_assert_int_eq(json_member(o, toks, 0, "succeededx"), -1);
}
END_TEST

START_TEST(malformed_input_is_refused)
{
    const char *bad[] = {
        "", " ", "{", "}", "[", "]", "{]", "[}", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "[1,]",
        "[,1]", "{,}", "{1:2}", "{\"a\" 1}", "{\"a\"::1}", "[1 2]", "\"abc", "\"a\\\"",
        "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"\\ud800\"", "\"\\udc00\"",
        "\"\\ud800\\u0041\"", "\"\\ud800x\"", "\"a\tb\"", "\"a\nb\"", "\"\x01\"", "tru",
        "truex", "nul", "nullx", "falsey", "01", "-", "-a", "1.", ".5", "1e", "1e+", "+1",
        "0x10", "1.2.3", "{} {}", "{}x", "[] ,", "1 2", "\"a\" \"b\"", "NaN", "Infinity",
        "{\"a\":1}}", "[[]]]", "'a'", "{\"a\":[}]",
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        int rc = parse(bad[k]);
        ck_assert_msg(rc == HKV_EPROTO, "'%s' gave %d", bad[k], rc);
        ck_assert_int_eq(json_parse(bad[k], strlen(bad[k]), NULL, 0), HKV_EPROTO);
    }
    /* a NUL inside the text is a control character, not an end */
    ck_assert_int_eq(json_parse("\"a\0b\"", 5, toks, 256), HKV_EPROTO);
    ck_assert_int_eq(json_parse("{}\0", 3, toks, 256), HKV_EPROTO);
    /* a text cut anywhere is refused, never read past its length */
    const char *s = "{\"a\":[\"\\ud83d\\ude00\",-1.5e-3,true,null,{}]}";
    size_t len = strlen(s);
    for (size_t cut = 0; cut < len; cut++) {
        char *p = malloc(cut + 1);
        memcpy(p, s, cut);
        ck_assert_msg(json_parse(p, cut, toks, 256) < 0, "cut at %zu accepted", cut);
        free(p);
    }
    ck_assert_int_gt(json_parse(s, len, toks, 256), 0);
}
END_TEST

START_TEST(valid_edge_cases_are_accepted)
{
    const char *good[] = {"0", "-0", "1.5e+10", "-1E-2", "true", "null", "\"\"", "[]", "{}",
                          " \t\r\n[ 1 , { } ] \n", "{\"\":\"\"}", "\"\\u0000\"",
                          "[\"\\ud83d\\ude00\"]", "\"\xff\xfe\""};
    for (size_t k = 0; k < sizeof(good) / sizeof(good[0]); k++)
        ck_assert_msg(parse(good[k]) > 0, "'%s' refused", good[k]);
    ck_assert_int_eq(parse("[1,[2,3],{\"a\":4}]"), 8);
    ck_assert_uint_eq(toks[0].size, 3);
    ck_assert_uint_eq(toks[5].size, 1);
}
END_TEST

START_TEST(depth_and_token_limits_hold)
{
    char deep[2 * JSON_MAX_DEPTH + 4];
    size_t d = JSON_MAX_DEPTH;
    memset(deep, '[', d);
    memset(deep + d, ']', d);
    ck_assert_int_eq(json_parse(deep, 2 * d, toks, 256), (int)d);
    memset(deep, '[', d + 1);
    memset(deep + d + 1, ']', d + 1);
    ck_assert_int_eq(json_parse(deep, 2 * d + 2, toks, 256), HKV_EFULL);
    ck_assert_int_eq(json_parse(deep, 2 * d + 2, NULL, 0), HKV_EFULL);
    /* a million brackets: refused at the limit, no stack or heap spent */
    size_t big = 1000000;
    char *p = malloc(big);
    memset(p, '[', big);
    ck_assert_int_eq(json_parse(p, big, toks, 256), HKV_EFULL);
    ck_assert_int_eq(json_parse(p, big, NULL, 0), HKV_EFULL);
    free(p);
    /* exactly enough tokens, and one fewer */
    const char *s = "[1,2,3,4]";
    ck_assert_int_eq(json_parse(s, strlen(s), toks, 5), 5);
    ck_assert_int_eq(json_parse(s, strlen(s), toks, 4), HKV_EFULL);
    ck_assert_int_eq(json_parse(s, strlen(s), toks, 0), HKV_EFULL);
}
END_TEST

START_TEST(bools_and_types)
{
    const char *s = "[true,false,\"true\",1]";
    ck_assert_int_gt(parse(s), 0);
    int b = 7;
    ck_assert_int_eq(json_bool(toks, json_elem(toks, 0, 0), &b), HKV_OK);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(json_bool(toks, json_elem(toks, 0, 1), &b), HKV_OK);
    ck_assert_int_eq(b, 0);
    ck_assert_int_eq(json_bool(toks, json_elem(toks, 0, 2), &b), HKV_EINVAL);
    ck_assert_int_eq(json_bool(toks, json_elem(toks, 0, 3), &b), HKV_EINVAL);
    ck_assert_int_eq(json_bool(toks, -1, &b), HKV_EINVAL);
}
END_TEST

/* RFC 4648 §10 vectors, both ways. */
START_TEST(b64_rfc_vectors)
{
    const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *enc[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int k = 0; k < 7; k++) {
        char out[16];
        size_t n = strlen(plain[k]);
        ck_assert_uint_eq(b64_encoded_len(n), strlen(enc[k]));
        b64_encode(plain[k], n, out);
        ck_assert_int_eq(memcmp(out, enc[k], strlen(enc[k])), 0);
        size_t got = 99;
        ck_assert_int_eq(b64_decode(enc[k], strlen(enc[k]), out, sizeof(out), &got), HKV_OK);
        ck_assert_uint_eq(got, n);
        ck_assert_int_eq(memcmp(out, plain[k], n), 0);
    }
    /* every byte value round-trips */
    unsigned char all[256], back[256];
    char e[b64_encoded_len(256)];
    for (int k = 0; k < 256; k++)
        all[k] = (unsigned char)k;
    for (size_t n = 0; n <= 256; n += 37) {
        b64_encode(all, n, e);
        size_t got;
        ck_assert_int_eq(b64_decode(e, b64_encoded_len(n), back, n, &got), HKV_OK);
        ck_assert_uint_eq(got, n);
        ck_assert_int_eq(memcmp(all, back, n), 0);
    }
}
END_TEST

START_TEST(b64_refuses_non_canonical_input)
{
    const char *bad[] = {"Zg", "Zg=", "Zg===", "Z===", "====", "=Zg=", "Zg=a", "Zm9v\n",
                         "Zm 9", "Zm9-", "Zm9_", "Zh==", "Zm9=", "Zm8=Zm8=", "Zm\0v"};
    const size_t len[] = {2, 3, 5, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 8, 4};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        char out[16];
        size_t n;
        ck_assert_msg(b64_decode(bad[k], len[k], out, sizeof(out), &n) == HKV_EPROTO,
                      "'%s' accepted", bad[k]);
    }
    char out[6];
    size_t n;
    ck_assert_int_eq(b64_decode("Zm9vYmFy", 8, out, 5, &n), HKV_ETOOBIG);
    ck_assert_int_eq(b64_decode("Zm9vYmFy", 8, out, 6, &n), HKV_OK);
    ck_assert_int_eq(b64_decode("Zg==", 4, out, 0, &n), HKV_ETOOBIG);
}
END_TEST

Suite *json_suite(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("etcd_shapes");
    tcase_add_test(tc, tokens_of_an_etcd_range_answer);
    tcase_add_test(tc, next_skips_whole_subtrees);
    suite_add_tcase(s, tc);
    tc = tcase_create("numbers");
    tcase_add_test(tc, int64_from_strings_and_numbers_exactly);
    tcase_add_test(tc, bools_and_types);
    suite_add_tcase(s, tc);
    tc = tcase_create("strings");
    tcase_add_test(tc, strings_unescape_to_utf8);
    suite_add_tcase(s, tc);
    tc = tcase_create("hostile");
    tcase_add_test(tc, malformed_input_is_refused);
    tcase_add_test(tc, valid_edge_cases_are_accepted);
    tcase_add_test(tc, depth_and_token_limits_hold);
    suite_add_tcase(s, tc);
    tc = tcase_create("base64");
    tcase_add_test(tc, b64_rfc_vectors);
    tcase_add_test(tc, b64_refuses_non_canonical_input);
    suite_add_tcase(s, tc);
    return s;
}
