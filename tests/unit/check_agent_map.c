/*
 * check_agent_map.c - the agent's pure logic (server/agent/agent_map.h and
 * agent_keys.h), fed the keys and values etcd holds after `hotkvd
 * --cluster-init` and the events a watch then delivers: a full read makes a
 * valid map; a leaf's owner changed by a put moves it at that revision's
 * epoch; a split applied halfway is refused (gap, overlap) and accepted
 * once whole; a pool is published only when pools/<pool> says ready; a bad
 * leaf value refuses the map while a bad member is only not live; a member
 * whose lease expired leaves its owner known but not live; numbers are
 * found and the free ones are the lowest; keys of another cluster or in
 * another spelling are ignored; values round-trip through the writers and
 * the parsers.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/agent/agent_keys.h"
#include "server/agent/agent_map.h"

#define P "/hotkvd/t/"

static void put(struct agent_map *m, const char *key, const char *val, int64_t rev)
{
    agent_map_apply(m, key, strlen(key), val, strlen(val), rev);
}

static void del(struct agent_map *m, const char *key, int64_t rev)
{
    agent_map_apply(m, key, strlen(key), NULL, 0, rev);
}

static void put_leaf(struct agent_map *m, const char *pool, int bits, unsigned prefix,
                     unsigned owner, int64_t rev)
{
    char key[128], val[128];
    snprintf(key, sizeof(key), P "map/%s/%d-%08x", pool, bits, prefix);
    struct agent_leaf_v lv = {.owner = owner, .state = CMAP_SERVING};
    ck_assert_int_gt(agent_val_leaf(val, sizeof(val), &lv), 0);
    put(m, key, val, rev);
}

static void put_member(struct agent_map *m, const char *id, unsigned n, const char *pool, int port,
                       int64_t rev)
{
    char key[128], val[512];
    snprintf(key, sizeof(key), P "members/%s", id);
    /* as the agent writes it (numbers bare, the incarnation a u64 string) */
    snprintf(val, sizeof(val), "{\"number\":%u,\"addr\":\"10.0.0.1\",\"port\":%d,\"pool\":\"%s\","
             "\"incarnation\":\"18446744073709551615\",\"host\":\"h1\"}", n, port, pool);
    put(m, key, val, rev);
}

/* What --cluster-init and one running host leave in etcd: owners 1, 2 (hot)
 * and 3 (cold) of host h1, 64 leaves per pool dealt round-robin, both pools
 * ready, h1 registered with its members and one writer. */
static struct agent_map *initialised(void)
{
    struct agent_map *m = agent_map_create("t");
    ck_assert_ptr_nonnull(m);
    put(m, P "cluster", "{\"format\":1,\"created\":\"1700000000000\"}", 2);
    put(m, P "owners/1", "{\"id\":\"h1/hot/0\"}", 2);
    put(m, P "owners/2", "{\"id\":\"h1/hot/1\"}", 2);
    put(m, P "owners/3", "{\"id\":\"h1/cold/0\"}", 2);
    for (unsigned i = 0; i < 64; i++) {
        put_leaf(m, "hot", 6, i, 1 + i % 2, 2);
        put_leaf(m, "cold", 6, i, 3, 2);
    }
    put(m, P "pools/hot", "{\"min_bits\":6,\"ready\":true}", 3);
    put(m, P "pools/cold", "{\"min_bits\":6,\"ready\":true}", 3);
    put(m, P "hostnums/1", "{\"host\":\"h1\"}", 4);
    put(m, P "hosts/h1", "{\"addr\":\"10.0.0.1\",\"number\":1,\"version\":\"0.1.0\"}", 5);
    put_member(m, "h1/hot/0", 1, "hot", 7100, 5);
    put_member(m, "h1/hot/1", 2, "hot", 7101, 5);
    put_member(m, "h1/cold/0", 3, "cold", 7102, 5);
    put(m, P "writers/4099", "{\"host\":\"h1\",\"incarnation\":\"77\"}", 5);
    return m;
}

static const struct cmap_table *commit_ok(struct agent_map *m, int64_t rev)
{
    const struct cmap_table *t = NULL;
    char why[256];
    ck_assert_msg(agent_map_commit(m, rev, &t, why, sizeof(why)) == HKV_OK, "refused: %s", why);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->revision, rev);
    return t;
}

static void commit_refused(struct agent_map *m, int64_t rev, const char *word)
{
    const struct cmap_table *t = NULL;
    char why[256];
    ck_assert_int_eq(agent_map_commit(m, rev, &t, why, sizeof(why)), HKV_EINVAL);
    ck_assert_msg(strstr(why, word) != NULL, "reason '%s' does not say '%s'", why, word);
}

static uint64_t place_of_leaf(int bits, unsigned prefix)
{
    return ((uint64_t)prefix << (64 - bits)) | 12345;
}

START_TEST(full_read_of_an_initialised_cluster_makes_a_valid_map)
{
    struct agent_map *m = initialised();
    const struct cmap_table *t = commit_ok(m, 5);
    ck_assert_uint_eq(t->nleaves[CFG_POOL_HOT], 64);
    ck_assert_uint_eq(t->nleaves[CFG_POOL_COLD], 64);
    for (unsigned i = 0; i < 64; i++) {
        const struct cmap_leaf *l = cmap_lookup(t, CFG_POOL_HOT, place_of_leaf(6, i));
        ck_assert_uint_eq(l->owner, 1 + i % 2);
        ck_assert_int_eq(l->epoch, 2);
    }
    const struct cmap_owner *o = cmap_owner(t, 2);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(o->id, "h1/hot/1");
    ck_assert_str_eq(o->host, "h1");
    ck_assert_str_eq(o->addr, "10.0.0.1");
    ck_assert_uint_eq(o->port, 7101);
    ck_assert_uint_eq(o->index, 1);
    ck_assert_uint_eq(o->live, 1);
    ck_assert_uint_eq(o->incarnation, UINT64_MAX);
    ck_assert_uint_eq(cmap_owner_by_id(t, "h1", CFG_POOL_COLD, 0), 3);
    ck_assert_uint_eq(agent_map_host_number(m, "h1"), 1);
    ck_assert_uint_eq(agent_map_host_number(m, "h2"), 0);
    ck_assert_uint_eq(agent_map_free_host_number(m), 2);
    ck_assert_uint_eq(agent_map_owner_number(m, "h1/cold/0"), 3);
    ck_assert_uint_eq(agent_map_owner_number(m, "h2/hot/0"), 0);
    ck_assert_uint_eq(agent_map_free_owner_number(m, 0), 4);
    ck_assert_uint_eq(agent_map_free_owner_number(m, 10), 11);
    agent_map_destroy(&m);
    ck_assert_ptr_null(m);
}
END_TEST

START_TEST(pool_is_published_only_once_ready)
{
    struct agent_map *m = agent_map_create("t");
    put(m, P "owners/1", "{\"id\":\"h1/hot/0\"}", 2);
    for (unsigned i = 0; i < 40; i++) /* a half-done init: 40 of 64 leaves */
        put_leaf(m, "hot", 6, i, 1, 2);
    const struct cmap_table *t = commit_ok(m, 2);
    ck_assert_uint_eq(t->nleaves[CFG_POOL_HOT], 0);
    ck_assert_ptr_null(cmap_lookup(t, CFG_POOL_HOT, 99));
    for (unsigned i = 40; i < 64; i++)
        put_leaf(m, "hot", 6, i, 1, 3);
    put(m, P "pools/hot", "{\"min_bits\":6,\"ready\":true}", 3);
    t = commit_ok(m, 3);
    ck_assert_uint_eq(t->nleaves[CFG_POOL_HOT], 64);
    del(m, P "pools/hot", 4);
    t = commit_ok(m, 4);
    ck_assert_uint_eq(t->nleaves[CFG_POOL_HOT], 0);
    agent_map_destroy(&m);
}
END_TEST

START_TEST(put_of_a_leaf_moves_it_at_its_revision)
{
    struct agent_map *m = initialised();
    commit_ok(m, 5);
    /* etcdctl put /hotkvd/t/map/hot/6-0000002a '{"owner":2,"state":"serving"}' */
    put(m, P "map/hot/6-0000002a", "{\"owner\":2,\"state\":\"serving\"}", 9);
    const struct cmap_table *t = commit_ok(m, 9);
    const struct cmap_leaf *l = cmap_lookup(t, CFG_POOL_HOT, place_of_leaf(6, 42));
    ck_assert_uint_eq(l->owner, 2);
    ck_assert_int_eq(l->epoch, 9);
    ck_assert_int_eq(cmap_lookup(t, CFG_POOL_HOT, place_of_leaf(6, 41))->epoch, 2);
    /* moving, then done */
    put(m, P "map/hot/6-0000002a", "{\"owner\":2,\"state\":\"moving\",\"to\":1}", 10);
    l = cmap_lookup(commit_ok(m, 10), CFG_POOL_HOT, place_of_leaf(6, 42));
    ck_assert_uint_eq(l->state, CMAP_MOVING);
    ck_assert_uint_eq(l->to, 1);
    agent_map_destroy(&m);
}
END_TEST

START_TEST(half_a_split_is_refused_and_the_whole_accepted)
{
    struct agent_map *m = initialised();
    commit_ok(m, 5);
    del(m, P "map/hot/6-00000005", 6); /* one revision: only the delete */
    commit_refused(m, 6, "gap");
    put_leaf(m, "hot", 7, 10, 1, 7); /* the next revision: both halves */
    put_leaf(m, "hot", 7, 11, 2, 7);
    const struct cmap_table *t = commit_ok(m, 7);
    ck_assert_uint_eq(t->nleaves[CFG_POOL_HOT], 65);
    ck_assert_uint_eq(cmap_lookup(t, CFG_POOL_HOT, place_of_leaf(7, 11))->owner, 2);
    ck_assert_uint_eq(cmap_lookup(t, CFG_POOL_HOT, place_of_leaf(7, 11))->bits, 7);
    /* a half that is added while its parent stays */
    put_leaf(m, "hot", 7, 20, 1, 8);
    commit_refused(m, 8, "overlaps");
    del(m, P "map/hot/7-00000014", 9);
    commit_ok(m, 9);
    agent_map_destroy(&m);
}
END_TEST

START_TEST(bad_leaf_refuses_bad_member_is_not_live)
{
    struct agent_map *m = initialised();
    commit_ok(m, 5);
    struct agent_map_stats st;
    put(m, P "map/hot/6-00000003", "{\"owner\":\"x\"}", 6);
    commit_refused(m, 6, "owner 0");
    put(m, P "map/hot/6-00000003", "{\"owner\":2,\"state\":\"moving\"}", 7); /* no target */
    commit_refused(m, 7, "owner 0");
    put(m, P "map/hot/6-00000003", "{\"owner\":9}", 8); /* no such owner */
    commit_refused(m, 8, "not an owner of the pool");
    put(m, P "map/hot/6-00000003", "{\"owner\":2}", 9);
    commit_ok(m, 9);
    put(m, P "members/h1/hot/1", "{\"number\":2", 10); /* torn JSON */
    const struct cmap_table *t = commit_ok(m, 10);
    ck_assert_uint_eq(cmap_owner(t, 2)->live, 0);
    agent_map_stats(m, &st);
    ck_assert_uint_eq(st.bad_values, 3);
    agent_map_destroy(&m);
}
END_TEST

START_TEST(member_gone_leaves_its_owner_known_not_live)
{
    struct agent_map *m = initialised();
    commit_ok(m, 5);
    del(m, P "members/h1/hot/0", 6); /* h1's lease expired */
    const struct cmap_table *t = commit_ok(m, 6);
    const struct cmap_owner *o = cmap_owner(t, 1);
    ck_assert_ptr_nonnull(o);
    ck_assert_uint_eq(o->live, 0);
    ck_assert_uint_eq(o->incarnation, 0);
    ck_assert_str_eq(o->addr, "10.0.0.1"); /* links made stay in use */
    ck_assert_uint_eq(cmap_lookup(t, CFG_POOL_HOT, place_of_leaf(6, 0))->owner, 1);
    put_member(m, "h1/hot/0", 1, "hot", 7200, 7); /* back, another port */
    t = commit_ok(m, 7);
    ck_assert_uint_eq(cmap_owner(t, 1)->live, 1);
    ck_assert_uint_eq(cmap_owner(t, 1)->port, 7200);
    /* a member claiming a number owners/<n> gives another id does not count */
    put_member(m, "h9/hot/0", 2, "hot", 7300, 8);
    t = commit_ok(m, 8);
    ck_assert_uint_eq(cmap_owner(t, 2)->live, 0);
    agent_map_destroy(&m);
}
END_TEST

START_TEST(reset_then_full_read_forgets_what_is_gone)
{
    struct agent_map *m = initialised();
    commit_ok(m, 5);
    agent_map_reset(m);
    put(m, P "owners/1", "{\"id\":\"h1/hot/0\"}", 2);
    put_leaf(m, "hot", 0, 0, 1, 20); /* one leaf: the whole space */
    put(m, P "pools/hot", "{\"min_bits\":0,\"ready\":true}", 20);
    const struct cmap_table *t = commit_ok(m, 30);
    ck_assert_uint_eq(t->nleaves[CFG_POOL_HOT], 1);
    ck_assert_uint_eq(t->nleaves[CFG_POOL_COLD], 0);
    ck_assert_ptr_null(cmap_owner(t, 3));
    ck_assert_uint_eq(cmap_owner(t, 1)->live, 0);
    ck_assert_uint_eq(agent_map_host_number(m, "h1"), 0);
    agent_map_destroy(&m);
}
END_TEST

START_TEST(foreign_and_misspelt_keys_are_ignored)
{
    struct agent_map *m = initialised();
    const char *keys[] = {
        "/hotkvd/other/map/hot/6-00000005", "/hotkvd/tt/owners/1", P "foo",
        P "map/hot/06-00000005",  /* leading zero */
        P "map/hot/6-0000000A",   /* upper-case hex */
        P "map/hot/6-5",          /* not 8 digits */
        P "map/hot/2-00000004",   /* prefix wider than its bits */
        P "map/hot/25-00000000",  /* deeper than CMAP_MAX_BITS */
        P "map/warm/6-00000001", P "owners/0", P "owners/257", P "owners/01",
        P "hostnums/4096", P "members/h1/hot", P "members/h1/warm/0", P "pools/warm",
    };
    struct agent_key_info k;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        ck_assert_msg(agent_key_parse(keys[i], strlen(keys[i]), P, strlen(P), &k) == AGENT_K_OTHER,
                      "%s was taken", keys[i]);
        ck_assert_int_eq(agent_map_apply(m, keys[i], strlen(keys[i]), "{\"owner\":1}", 11, 6),
                         AGENT_K_OTHER);
    }
    const struct cmap_table *t = commit_ok(m, 6);
    ck_assert_uint_eq(t->nleaves[CFG_POOL_HOT], 64);
    ck_assert_int_eq(agent_key_parse(P "map/cold/24-00abcdef", strlen(P "map/cold/24-00abcdef"),
                                     P, strlen(P), &k), AGENT_K_LEAF);
    ck_assert_uint_eq(k.prefix, 0xabcdef);
    ck_assert_int_eq(k.bits, 24);
    ck_assert_int_eq(k.pool, CFG_POOL_COLD);
    ck_assert_int_eq(agent_key_parse(P "writers/4097", strlen(P "writers/4097"), P, strlen(P), &k),
                     AGENT_K_WRITER);
    ck_assert_uint_eq(k.number, 4097);
    agent_map_destroy(&m);
}
END_TEST

START_TEST(values_round_trip)
{
    char buf[AGENT_VAL_MAX], id[CMAP_NAME_MAX], host[CMAP_NAME_MAX];
    unsigned number;
    int bits, ready, pool, k;
    struct agent_leaf_v lv = {.owner = 7, .state = CMAP_MOVING, .to = 9}, got;
    ck_assert_int_gt(agent_val_leaf(buf, sizeof(buf), &lv), 0);
    ck_assert_str_eq(buf, "{\"owner\":7,\"state\":\"moving\",\"to\":9}"); /* no isr: none */
    ck_assert_int_eq(agent_parse_leaf(buf, strlen(buf), &got), HKV_OK);
    ck_assert(got.owner == 7 && got.state == CMAP_MOVING && got.to == 9 && got.nisr == 0);
    /* the in-sync followers, in order */
    lv = (struct agent_leaf_v){.owner = 3, .state = CMAP_SERVING, .nisr = 3, .isr = {256, 1, 9}};
    ck_assert_int_gt(agent_val_leaf(buf, sizeof(buf), &lv), 0);
    ck_assert_str_eq(buf, "{\"owner\":3,\"state\":\"serving\",\"isr\":[256,1,9]}");
    ck_assert_int_eq(agent_parse_leaf(buf, strlen(buf), &got), HKV_OK);
    ck_assert_int_eq(memcmp(&lv, &got, sizeof(lv)), 0);
    ck_assert(agent_isr_has(&got, 1) && !agent_isr_has(&got, 3));
    agent_isr_without(&got, 1);
    ck_assert(got.nisr == 2 && got.isr[0] == 256 && got.isr[1] == 9);
    agent_isr_with(&got, 4);
    agent_isr_with(&got, 4); /* there already: once */
    agent_isr_with(&got, 5); /* full: not added */
    ck_assert(got.nisr == 3 && got.isr[2] == 4);
    const char *empty = "{\"owner\":3,\"isr\":[]}";
    ck_assert_int_eq(agent_parse_leaf(empty, strlen(empty), &got), HKV_OK);
    ck_assert(got.nisr == 0 && got.state == CMAP_SERVING);
    lv.nisr = CMAP_MAX_ISR + 1;
    ck_assert_int_eq(agent_val_leaf(buf, sizeof(buf), &lv), -1);
    ck_assert_int_gt(agent_val_pool(buf, sizeof(buf), 6), 0);
    ck_assert_int_eq(agent_parse_pool(buf, strlen(buf), &bits, &ready), HKV_OK);
    ck_assert(bits == 6 && ready == 1);
    ck_assert_int_gt(agent_val_owner(buf, sizeof(buf), "h\"1\\x/cold/3"), 0);
    ck_assert_int_eq(agent_parse_owner(buf, strlen(buf), id, sizeof(id)), HKV_OK);
    ck_assert_str_eq(id, "h\"1\\x/cold/3");
    ck_assert_int_eq(agent_owner_id_parse(id, host, sizeof(host), &pool, &k), HKV_OK);
    ck_assert(strcmp(host, "h\"1\\x") == 0 && pool == CFG_POOL_COLD && k == 3);
    char zone[CMAP_NAME_MAX];
    ck_assert_int_gt(agent_val_host(buf, sizeof(buf), "192.0.2.7", 4095, "0.1.0", NULL), 0);
    ck_assert_ptr_null(strstr(buf, "zone"));
    ck_assert_int_eq(agent_parse_host(buf, strlen(buf), host, sizeof(host), &number, zone,
                                      sizeof(zone)), HKV_OK);
    ck_assert(strcmp(host, "192.0.2.7") == 0 && number == 4095 && zone[0] == '\0');
    ck_assert_int_gt(agent_val_host(buf, sizeof(buf), "192.0.2.7", 2, "0.1.0", "eu-\"1"), 0);
    ck_assert_int_eq(agent_parse_host(buf, strlen(buf), host, sizeof(host), &number, zone,
                                      sizeof(zone)), HKV_OK);
    ck_assert(number == 2 && strcmp(zone, "eu-\"1") == 0);
    struct agent_member a = {.number = 256, .port = 65535, .pool = CFG_POOL_COLD,
                             .incarnation = 0x8000000000000001ULL}, b;
    snprintf(a.addr, sizeof(a.addr), "::1");
    snprintf(a.host, sizeof(a.host), "host-2");
    ck_assert_int_gt(agent_val_member(buf, sizeof(buf), &a), 0);
    ck_assert_int_eq(agent_parse_member(buf, strlen(buf), &b), HKV_OK);
    ck_assert_int_eq(memcmp(&a, &b, sizeof(a)), 0);
    /* etcd's own int64 style (numbers as strings) is read as well */
    const char *s = "{\"number\":\"3\",\"port\":\"0\",\"pool\":\"hot\",\"incarnation\":\"1\",\"host\":\"h\"}";
    ck_assert_int_eq(agent_parse_member(s, strlen(s), &b), HKV_OK);
    ck_assert(b.number == 3 && b.port == 0 && b.addr[0] == '\0');
    /* out of range, wrong types, not an object */
    const char *bad[] = {"{\"owner\":0}", "{\"owner\":257}", "{\"owner\":1.5}", "[1]", "",
                         "{\"owner\":1,\"state\":\"gone\"}", "{\"owner\":1,\"state\":\"moving\",\"to\":0}",
                         /* isr: bounded, in range, no repeat, not the owner, numbers only */
                         "{\"owner\":1,\"isr\":[2,3,4,5]}", "{\"owner\":1,\"isr\":[0]}",
                         "{\"owner\":1,\"isr\":[257]}", "{\"owner\":1,\"isr\":[2,2]}",
                         "{\"owner\":1,\"isr\":[1]}", "{\"owner\":1,\"isr\":[\"2\"]}",
                         "{\"owner\":1,\"isr\":2}", "{\"owner\":1,\"isr\":[2.5]}",
                         "{\"owner\":1,\"isr\":[[2]]}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(agent_parse_leaf(bad[i], strlen(bad[i]), &got) == HKV_EINVAL,
                      "'%s' was taken", bad[i]);
    ck_assert_int_eq(agent_val_owner(buf, 8, "h1/hot/0"), -1); /* does not fit */
    char key[AGENT_KEY_MAX];
    ck_assert_int_eq(agent_key(key, sizeof(key), "t", "map/%s/%d-%08x", "hot", 6, 42u),
                     (int)strlen(P "map/hot/6-0000002a"));
    ck_assert_str_eq(key, P "map/hot/6-0000002a");
}
END_TEST

Suite *agent_map_suite(void)
{
    Suite *s = suite_create("agent_map");
    TCase *tc = tcase_create("map");
    tcase_add_test(tc, full_read_of_an_initialised_cluster_makes_a_valid_map);
    tcase_add_test(tc, pool_is_published_only_once_ready);
    tcase_add_test(tc, put_of_a_leaf_moves_it_at_its_revision);
    tcase_add_test(tc, half_a_split_is_refused_and_the_whole_accepted);
    tcase_add_test(tc, bad_leaf_refuses_bad_member_is_not_live);
    tcase_add_test(tc, member_gone_leaves_its_owner_known_not_live);
    tcase_add_test(tc, reset_then_full_read_forgets_what_is_gone);
    suite_add_tcase(s, tc);
    tc = tcase_create("keys");
    tcase_add_test(tc, foreign_and_misspelt_keys_are_ignored);
    tcase_add_test(tc, values_round_trip);
    suite_add_tcase(s, tc);
    return s;
}
