/*
 * check_cfg_class.c - key classes in the configuration: class lines build
 * classes in file order, their errors name the line, validation catches
 * mistakes across directives, and patterns match as Redis's globs do
 * (whatever their shape, and fast on a pathological pattern).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/syskey.h"
#include "config/cfg.h"
#include "tests/unit/cfg_fixture.h"

/* ---- classes ---- */

/* cfg_class_for compares a pattern's literal prefix itself and leaves a
 * pattern with a wildcard inside to the glob matcher: every shape must
 * still match exactly as a glob does. */
START_TEST(class_patterns_match_as_globs_whatever_their_shape)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    const char *text =
        "class exact pattern user\n"
        "class pre pattern ab*\n"
        "class mid pattern x*z\n"
        "class one pattern k?y pattern [pq]:*\n"
        "class default\n";
    ck_assert_msg(load_str(c, text, &err) == HKV_OK, "%s", err.msg);
    static const struct { const char *key; size_t len; const char *cls; } cases[] = {
        {"user", 4, "exact"}, {"use", 3, "default"}, {"users", 5, "default"},
        {"ab", 2, "pre"}, {"abc", 3, "pre"}, {"ab\0x", 4, "pre"}, {"a", 1, "default"},
        {"", 0, "default"}, {"xz", 2, "mid"}, {"xyz", 3, "mid"}, {"xy", 2, "default"},
        {"key", 3, "one"}, {"ky", 2, "default"}, {"p:1", 3, "one"}, {"r:1", 3, "default"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ck_assert_msg(strcmp(cfg_class_for(c, cases[i].key, cases[i].len)->name, cases[i].cls) == 0,
                      "key %zu (%.*s): class %s, want %s", i, (int)cases[i].len, cases[i].key,
                      cfg_class_for(c, cases[i].key, cases[i].len)->name, cases[i].cls);
    cfg_destroy(&c);
}
END_TEST

START_TEST(class_lines_build_classes_in_file_order)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    const char *text =
        "class live pattern draw:* pattern \"score:*\" pool hot fresh 1s keep 5m\n"
        "class money on-timeout error durability durable pattern balance:*\n"
        "class wide pattern * pool hot\n"
        "class default fresh 500ms keep 30s pool hot\n";
    ck_assert_msg(load_str(c, text, &err) == HKV_OK, "%s", err.msg);
    ck_assert_uint_eq(c->nclasses, 4);
    ck_assert_str_eq(c->classes[0].name, "live");
    ck_assert_str_eq(c->classes[1].name, "money");
    ck_assert_str_eq(c->classes[2].name, "wide");
    ck_assert_str_eq(c->classes[3].name, "default");
    const struct cfg_class *live = cfg_class_named(c, "live");
    ck_assert_uint_eq(live->npatterns, 2);
    ck_assert_str_eq(live->patterns[1], "score:*");
    ck_assert_int_eq(live->pool, CFG_POOL_HOT);
    ck_assert_int_eq(live->fresh_ms, 1000);
    ck_assert_int_eq(live->keep_ms, 300000);
    ck_assert_int_eq(live->durability, CFG_DUR_LEDGER);
    ck_assert_int_eq(live->on_timeout, CFG_ONTO_DEGRADE);
    /* an Idempotency-Key record is of its target's class (its durability) */
    char rk[64];
    size_t rn = syskey_idem(rk, sizeof(rk), "balance:7", 9, "u", 1, "i", 1);
    ck_assert_ptr_eq(cfg_class_for(c, rk, rn), cfg_class_named(c, "money"));
    rn = syskey_idem(rk, sizeof(rk), "draw:1", 6, "u", 1, "i", 1);
    ck_assert_ptr_eq(cfg_class_for(c, rk, rn), live);
    const struct cfg_class *money = cfg_class_named(c, "money");
    ck_assert_int_eq(money->pool, CFG_POOL_COLD);   /* omitted fields take defaults */
    ck_assert_int_eq(money->fresh_ms, 1000);
    ck_assert_int_eq(money->keep_ms, 60000);
    ck_assert_int_eq(money->durability, CFG_DUR_DURABLE);
    ck_assert_int_eq(money->on_timeout, CFG_ONTO_ERROR);
    ck_assert_int_eq(c->classes[3].fresh_ms, 500);
    ck_assert_int_eq(c->classes[3].pool, CFG_POOL_HOT);
    ck_assert_ptr_null(cfg_class_named(c, "nope"));

    /* first match in file order wins; `wide` catches the rest before default */
    ck_assert_str_eq(cfg_class_for(c, "draw:1", 6)->name, "live");
    ck_assert_str_eq(cfg_class_for(c, "score:x", 7)->name, "live");
    ck_assert_str_eq(cfg_class_for(c, "balance:7", 9)->name, "money");
    ck_assert_str_eq(cfg_class_for(c, "other", 5)->name, "wide");
    ck_assert_str_eq(cfg_class_for(c, "draw:1\0tail", 11)->name, "live");

    /* a repeated name replaces in place; a line states the whole class */
    ck_assert_int_eq(load_str(c, "class live pattern tip:*\nclass wide pattern w:*\n", &err),
                     HKV_OK);
    ck_assert_uint_eq(c->nclasses, 4);
    ck_assert_str_eq(c->classes[0].name, "live");
    ck_assert_uint_eq(c->classes[0].npatterns, 1);
    ck_assert_int_eq(c->classes[0].pool, CFG_POOL_COLD);
    ck_assert_str_eq(cfg_class_for(c, "tip:1", 5)->name, "live");
    ck_assert_str_eq(cfg_class_for(c, "draw:1", 6)->name, "default");
    ck_assert_int_eq(cfg_validate(c, &err), HKV_OK);
    cfg_destroy(&c);
}
END_TEST

START_TEST(class_errors_are_reported_at_their_line)
{
    expect_file_error("class x pool hot\n",
                      "1: class 'x' has no pattern: no key could ever use it");
    expect_file_error("class default pattern a*\n",
                      "1: class 'default' cannot have patterns: it catches every key no other "
                      "class matches");
    expect_file_error("class\n", "1: 'class' needs a name");
    expect_file_error("class bad.name pattern x\n",
                      "1: class name needs 1 to 63 characters of [A-Za-z0-9_-], got 'bad.name'");
    expect_file_error("class x pattern a pool warm\n",
                      "1: class 'x': 'pool' needs hot or cold, got 'warm'");
    expect_file_error("class x pattern a colour red\n",
                      "1: class 'x': unknown keyword 'colour' (pattern, pool, fresh, keep, "
                      "durability, on-timeout, content-type)");
    expect_file_error("class x pattern a pool\n", "1: class 'x': 'pool' needs a value");
    expect_file_error("class x pattern a pool hot pool cold\n",
                      "1: class 'x': 'pool' given twice");
    expect_file_error("class x pattern a fresh soon\n",
                      "1: class 'x': 'fresh' needs a duration between 0 and 8760h (e.g. 1.5s, "
                      "200ms; whole ms), got 'soon'");
    expect_file_error("class x pattern a durability maybe\n",
                      "1: class 'x': 'durability' needs ledger or durable, got 'maybe'");
    expect_file_error("class x pattern a on-timeout panic\n",
                      "1: class 'x': 'on-timeout' needs degrade or error, got 'panic'");
}
END_TEST

START_TEST(validation_catches_cross_directive_mistakes)
{
    struct {
        const char *text;
        const char *msg;
    } cases[] = {
        { "class x pattern a fresh 10s keep 5s\n",
          "class 'x': keep (5s) must be at least fresh (10s)" },
        { "class default fresh 2m keep 1m\n",
          "class 'default': keep (1m) must be at least fresh (2m)" },
        { "hot-owners 0\nclass live pattern a pool hot\n",
          "class 'live' uses the hot pool but hot-owners is 0" },
        { "cold-owners 0\n", "class 'default' uses the cold pool but cold-owners is 0" },
        { "hot-owners 0\ncold-owners 0\n", "hot-owners + cold-owners must be at least 1 (0 only in a cluster)" },
        { "write-timeout 30s\n", "write-deadline (28500ms) must be at least write-timeout (30s)" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cfg *c = cfg_create();
        struct cfg_error err = { "" };
        ck_assert_int_eq(load_str(c, cases[i].text, &err), HKV_OK);
        ck_assert_int_eq(cfg_validate(c, &err), HKV_EINVAL);
        ck_assert_str_eq(err.msg, cases[i].msg);
        cfg_destroy(&c);
    }
    /* what no file can express but a caller could build */
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    c->edge_workers = 0;
    ck_assert_int_eq(cfg_validate(c, &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "edge-workers must be at least 1");
    c->edge_workers = 1;
    size_t n = c->nbind;
    c->nbind = 0;
    ck_assert_int_eq(cfg_validate(c, &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "at least one bind address is needed");
    c->nbind = n;
    ck_assert_int_eq(cfg_validate(c, &err), HKV_OK);
    cfg_destroy(&c);
}
END_TEST

/* ---- glob ---- */

static int gm(const char *p, const char *s)
{
    return cfg_glob_match(p, strlen(p), s, strlen(s), 0);
}

START_TEST(glob_matches_redis_semantics)
{
    ck_assert_int_eq(gm("*", ""), 1);
    ck_assert_int_eq(gm("*", "anything"), 1);
    ck_assert_int_eq(gm("", ""), 1);
    ck_assert_int_eq(gm("", "a"), 0);
    ck_assert_int_eq(gm("draw:*", "draw:"), 1);
    ck_assert_int_eq(gm("draw:*", "draw:42"), 1);
    ck_assert_int_eq(gm("draw:*", "drew:42"), 0);
    ck_assert_int_eq(gm("*:42", "draw:42"), 1);
    ck_assert_int_eq(gm("*:42", "draw:421"), 0);
    ck_assert_int_eq(gm("a*b*c", "axxbyyc"), 1);
    ck_assert_int_eq(gm("a*b*c", "axxbyy"), 0);
    ck_assert_int_eq(gm("h?llo", "hello"), 1);
    ck_assert_int_eq(gm("h?llo", "hllo"), 0);
    ck_assert_int_eq(gm("h[ae]llo", "hallo"), 1);
    ck_assert_int_eq(gm("h[ae]llo", "hillo"), 0);
    ck_assert_int_eq(gm("h[^e]llo", "hallo"), 1);
    ck_assert_int_eq(gm("h[^e]llo", "hello"), 0);
    ck_assert_int_eq(gm("h[a-c]llo", "hbllo"), 1);
    ck_assert_int_eq(gm("h[c-a]llo", "hbllo"), 1);   /* reversed range */
    ck_assert_int_eq(gm("h[a-c]llo", "hdllo"), 0);
    ck_assert_int_eq(gm("[\\]]", "]"), 1);
    ck_assert_int_eq(gm("a\\*b", "a*b"), 1);
    ck_assert_int_eq(gm("a\\*b", "axb"), 0);
    ck_assert_int_eq(gm("a\\?", "a?"), 1);
    ck_assert_int_eq(gm("**a**", "xxaxx"), 1);
    ck_assert_int_eq(gm("[abc", "b"), 1);            /* open class ends the pattern */
    ck_assert_int_eq(cfg_glob_match("Draw:*", 6, "dRAW:1", 6, 1), 1);
    ck_assert_int_eq(cfg_glob_match("Draw:*", 6, "dRAW:1", 6, 0), 0);
    ck_assert_int_eq(cfg_glob_match("[A-C]x", 6, "bx", 2, 1), 1);
    /* binary safe: NUL bytes in both */
    ck_assert_int_eq(cfg_glob_match("a\0*z", 4, "a\0\0yz", 5, 0), 1);
    ck_assert_int_eq(cfg_glob_match("a?b", 3, "a\0b", 3, 0), 1);
    ck_assert_int_eq(cfg_glob_match("a*", 2, "b\0", 2, 0), 0);
}
END_TEST

START_TEST(glob_pathological_pattern_finishes_fast)
{
    size_t n = 200000;
    char *s = malloc(n);
    memset(s, 'a', n);
    const char *p = "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b";
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(cfg_glob_match(p, strlen(p), s, n, 0), 0);
    ck_assert_int_eq(cfg_glob_match("*a*a*a*a*a*a*", 13, s, n, 0), 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ck_assert_msg(secs < 2.0, "took %.2fs", secs);
    free(s);
}
END_TEST

Suite *cfg_class_suite(void)
{
    Suite *s = suite_create("cfg_class");
    cfg_test_add(s, "classes", class_lines_build_classes_in_file_order,
                 class_errors_are_reported_at_their_line,
                 validation_catches_cross_directive_mistakes);
    cfg_test_add(s, "glob", glob_matches_redis_semantics, glob_pathological_pattern_finishes_fast,
                 class_patterns_match_as_globs_whatever_their_shape);
    return s;
}
