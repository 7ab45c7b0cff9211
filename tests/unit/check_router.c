/*
 * check_router.c - key routing: the hash is frozen (any change would send
 * keys to owners that do not hold them), classes match in file order, hot
 * and cold pools never share an owner, leaves are dealt round-robin, and a
 * MOVED answer updates the map only when it is newer and valid.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "config/cfg.h"
#include "server/core/router.h"

static struct cfg *load(const char *text)
{
    struct cfg *c = cfg_create();
    struct cfg_error err;
    ck_assert_ptr_nonnull(c);
    ck_assert_msg(cfg_load_text(c, text, strlen(text), "test", &err) == HKV_OK, "%s", err.msg);
    ck_assert_msg(cfg_validate(c, &err) == HKV_OK, "%s", err.msg);
    return c;
}

START_TEST(hash_vectors_never_change)
{
    /* Computed once with the first router and frozen here. */
    static const struct {
        const char *key;
        size_t len;
        uint64_t hash;
    } v[] = {
        {"", 0, 0x10414b16bd95b8f3ULL},
        {"a", 1, 0xb9bc1186d970e3fbULL},
        {"foo", 3, 0x54c44f8f696886afULL},
        {"user:1000", 9, 0xe0a2cfabba4bcac2ULL},
        {"hot:score", 9, 0x56b250fb4c34547fULL},
        {"\x00\x01\xff\n", 4, 0x1a208e9da2441dd4ULL},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        ck_assert_msg(router_hash(v[i].key, v[i].len) == v[i].hash, "hash of vector %zu changed", i);
}
END_TEST

START_TEST(first_matching_class_wins_then_default)
{
    struct cfg *c = load("hot-owners 2\ncold-owners 2\n"
                         "class live pattern draw:* pattern score:* pool hot\n"
                         "class archive pattern draw:old:* pattern arch:* pool cold\n"
                         "class default pool cold\n");
    struct router *r = router_create(c);
    ck_assert_ptr_nonnull(r);
    struct route rt;
    router_route(r, "draw:old:1", 10, &rt); /* both match: the first class wins */
    ck_assert_str_eq(rt.cls->name, "live");
    ck_assert_int_eq(rt.pool, CFG_POOL_HOT);
    router_route(r, "arch:7", 6, &rt);
    ck_assert_str_eq(rt.cls->name, "archive");
    ck_assert_int_eq(rt.pool, CFG_POOL_COLD);
    router_route(r, "other", 5, &rt);
    ck_assert_str_eq(rt.cls->name, "default");
    ck_assert_int_eq(rt.pool, CFG_POOL_COLD);
    ck_assert_uint_eq(rt.class_id, (uint32_t)(rt.cls - c->classes));
    router_destroy(&r);
    ck_assert_ptr_null(r);
    cfg_destroy(&c);
}
END_TEST

START_TEST(hot_and_cold_keys_never_share_an_owner)
{
    struct cfg *c = load("hot-owners 2\ncold-owners 3\n"
                         "class live pattern h:* pool hot\nclass default pool cold\n");
    struct router *r = router_create(c);
    char key[32];
    int hot_seen[2] = {0}, cold_seen[3] = {0};
    for (int i = 0; i < 2000; i++) {
        struct route rt;
        int n = snprintf(key, sizeof(key), "%s%d", i % 2 ? "h:" : "c:", i);
        router_route(r, key, (size_t)n, &rt);
        ck_assert_int_eq(rt.pool, i % 2 ? CFG_POOL_HOT : CFG_POOL_COLD);
        if (rt.pool == CFG_POOL_HOT) {
            ck_assert(rt.owner >= 0 && rt.owner < 2);
            hot_seen[rt.owner]++;
        } else {
            ck_assert(rt.owner >= 0 && rt.owner < 3);
            cold_seen[rt.owner]++;
        }
        /* The same key routes the same way every time. */
        struct route again;
        router_route(r, key, (size_t)n, &again);
        ck_assert_int_eq(again.owner, rt.owner);
        ck_assert(again.hash == rt.hash);
    }
    for (int i = 0; i < 2; i++)
        ck_assert_int_gt(hot_seen[i], 300);
    for (int i = 0; i < 3; i++)
        ck_assert_int_gt(cold_seen[i], 200);
    router_destroy(&r);
    cfg_destroy(&c);
}
END_TEST

START_TEST(leaves_are_dealt_round_robin)
{
    struct cfg *c = load("hot-owners 3\ncold-owners 1\n");
    struct router *r = router_create(c);
    for (uint64_t leaf = 0; leaf < (1u << ROUTER_LEAF_BITS); leaf += 37) {
        uint64_t hash = leaf << (64 - ROUTER_LEAF_BITS) | 12345;
        ck_assert_int_eq(router_owner(r, CFG_POOL_HOT, hash), (int)(leaf % 3));
        ck_assert_int_eq(router_owner(r, CFG_POOL_COLD, hash), 0);
        uint32_t l;
        uint8_t bits;
        router_leaf(r, CFG_POOL_HOT, hash, &l, &bits);
        ck_assert_uint_eq(l, leaf);
        ck_assert_uint_eq(bits, ROUTER_LEAF_BITS);
    }
    router_destroy(&r);
    cfg_destroy(&c);
}
END_TEST

START_TEST(moved_applies_only_newer_valid_maps)
{
    struct cfg *c = load("hot-owners 3\ncold-owners 1\n");
    struct router *r = router_create(c);
    uint64_t hash = (uint64_t)5 << (64 - ROUTER_LEAF_BITS);
    uint64_t gen = router_generation(r, CFG_POOL_HOT);
    ck_assert_int_eq(router_owner(r, CFG_POOL_HOT, hash), 5 % 3);
    /* Not newer: ignored. */
    ck_assert_int_eq(router_moved(r, CFG_POOL_HOT, 5, ROUTER_LEAF_BITS, 0, gen), 0);
    ck_assert_int_eq(router_owner(r, CFG_POOL_HOT, hash), 5 % 3);
    /* Bad owner, bad leaf: refused, nothing changes. */
    ck_assert_int_eq(router_moved(r, CFG_POOL_HOT, 5, ROUTER_LEAF_BITS, 3, gen + 1), HKV_EINVAL);
    ck_assert_int_eq(router_moved(r, CFG_POOL_HOT, 1u << ROUTER_LEAF_BITS, ROUTER_LEAF_BITS, 0,
                                  gen + 1), HKV_EINVAL);
    ck_assert_int_eq(router_moved(r, CFG_POOL_HOT, 0, ROUTER_LEAF_BITS + 1, 0, gen + 1), HKV_EINVAL);
    ck_assert(router_generation(r, CFG_POOL_HOT) == gen);
    /* Newer: applied. */
    ck_assert_int_eq(router_moved(r, CFG_POOL_HOT, 5, ROUTER_LEAF_BITS, 0, gen + 1), 1);
    ck_assert_int_eq(router_owner(r, CFG_POOL_HOT, hash), 0);
    ck_assert(router_generation(r, CFG_POOL_HOT) == gen + 1);
    /* A shorter leaf covers a run of directory entries. */
    ck_assert_int_eq(router_moved(r, CFG_POOL_HOT, 0, ROUTER_LEAF_BITS - 2, 1, gen + 2), 1);
    for (uint64_t l = 0; l < 4; l++)
        ck_assert_int_eq(router_owner(r, CFG_POOL_HOT, l << (64 - ROUTER_LEAF_BITS)), 1);
    ck_assert_int_eq(router_owner(r, CFG_POOL_HOT, (uint64_t)4 << (64 - ROUTER_LEAF_BITS)), 4 % 3);
    /* The other pool is untouched. */
    ck_assert_int_eq(router_owner(r, CFG_POOL_COLD, hash), 0);
    router_destroy(&r);
    cfg_destroy(&c);
}
END_TEST

START_TEST(hash_tags_place_like_redis_cluster)
{
    /* {tag}: only the tag is hashed for placement; the identity hash stays
     * the whole key's. */
    const char *k = "{user:1}:a";
    ck_assert(router_place(k, strlen(k)) == router_hash("user:1", 6));
    ck_assert(router_hash(k, strlen(k)) != router_hash("user:1", 6));
    ck_assert(router_place("x{user:1}y", 10) == router_place("{user:1}:b", 10));
    /* the first '{' and the first '}' after it: "{a}{b}" places by "a" */
    ck_assert(router_place("{a}{b}", 6) == router_hash("a", 1));
    /* "{}" and a '{' without '}' mean no tag: the whole key is hashed */
    ck_assert(router_place("{}x", 3) == router_hash("{}x", 3));
    ck_assert(router_place("{}{x}", 5) == router_hash("{}{x}", 5));
    ck_assert(router_place("ab{cd", 5) == router_hash("ab{cd", 5));
    ck_assert(router_place("plain", 5) == router_hash("plain", 5));
    /* binary-safe: a tag may hold NUL bytes */
    ck_assert(router_place("{\0z}q", 5) == router_hash("\0z", 2));
    size_t off, n;
    ck_assert_int_eq(router_hash_tag("a{bc}d", 6, &off, &n), 1);
    ck_assert_uint_eq(off, 2);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(router_hash_tag("a}{b", 4, &off, &n), 0);

    /* keys of one tag route to one owner, whatever the rest says */
    struct cfg *c = load("hot-owners 4\ncold-owners 4\nclass default pool cold\n");
    struct router *r = router_create(c);
    ck_assert_ptr_nonnull(r);
    struct route a, b;
    int spread = 0;
    for (int i = 0; i < 64; i++) {
        char k1[32], k2[32];
        int n1 = snprintf(k1, sizeof(k1), "{t%d}:left", i), n2 = snprintf(k2, sizeof(k2), "{t%d}:r", i);
        router_route(r, k1, (size_t)n1, &a);
        router_route(r, k2, (size_t)n2, &b);
        ck_assert_int_eq(a.owner, b.owner);
        ck_assert_uint_eq(a.leaf, b.leaf);
        ck_assert(a.hash != b.hash);
        spread |= 1 << a.owner;
    }
    ck_assert_int_eq(spread, 0xf); /* tags still spread over every owner */
    router_destroy(&r);
    cfg_destroy(&c);
}
END_TEST

START_TEST(reload_changes_classes_not_maps)
{
    struct cfg *c = load("hot-owners 2\ncold-owners 1\nclass default pool hot\n");
    struct cfg *c2 = load("hot-owners 2\ncold-owners 1\nclass default pool cold\n");
    struct router *r = router_create(c);
    struct route rt;
    router_route(r, "k", 1, &rt);
    ck_assert_int_eq(rt.pool, CFG_POOL_HOT);
    router_set_config(r, c2);
    router_route(r, "k", 1, &rt);
    ck_assert_int_eq(rt.pool, CFG_POOL_COLD);
    ck_assert_int_eq(rt.owner, 0);
    router_destroy(&r);
    cfg_destroy(&c);
    cfg_destroy(&c2);
}
END_TEST

Suite *router_suite(void)
{
    Suite *s = suite_create("router");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"hash", hash_vectors_never_change},
        {"classes", first_matching_class_wins_then_default},
        {"pools", hot_and_cold_keys_never_share_an_owner},
        {"leaves", leaves_are_dealt_round_robin},
        {"moved", moved_applies_only_newer_valid_maps},
        {"hashtags", hash_tags_place_like_redis_cluster},
        {"reload", reload_changes_classes_not_maps},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
