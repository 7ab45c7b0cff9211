/* check_agent_keys.c - the agent's names for the cluster's etcd keys
 * (server/agent/agent_keys.h) and its retry clock (agent_int.h,
 * agent_core.c), without etcd.  Every key kind of CLUSTER.md §2 is
 * recognised with its fields, and everything near it is not: numbers out of
 * range or not canonical, unknown pools, leaves whose prefix is wider than
 * their bits, names that do not fit; owner ids split into host, pool and
 * index; a key that does not fit is refused, not cut.  The retry clock
 * doubles from 200 ms to 5 s and starts over after a success. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/agent/agent_int.h"
#include "server/agent/agent_keys.h"
#include "server/core/clock.h"

#define P "/hotkvd/c1/"
#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct agent_key_info K;

static enum agent_key_kind kind(const char *key)
{
    return agent_key_parse(key, strlen(key), P, strlen(P), &K);
}

START_TEST(keys_are_made_under_the_clusters_prefix)
{
    char buf[AGENT_KEY_MAX];
    ck_assert_int_eq(agent_key(buf, sizeof(buf), "c1", "owners/%u", 7u),
                     (int)strlen(P "owners/7"));
    ck_assert_str_eq(buf, P "owners/7");
    ck_assert_int_eq(agent_key(buf, sizeof(buf), "c1", "cluster"), (int)strlen(P "cluster"));
    /* a key that does not fit is refused whole */
    ck_assert_int_eq(agent_key(buf, 12, "c1", "owners/%u", 7u), -1);
    ck_assert_int_eq(agent_key(buf, 5, "c1", "x"), -1); /* not even the prefix */
    ck_assert_int_eq(agent_key(buf, strlen(P "owners/7") + 1, "c1", "owners/%u", 7u),
                     (int)strlen(P "owners/7")); /* exactly */
}
END_TEST

START_TEST(each_kind_is_recognised_with_its_fields)
{
    ck_assert_int_eq(kind(P "cluster"), AGENT_K_CLUSTER);
    ck_assert_int_eq(kind(P "pools/hot"), AGENT_K_POOL);
    ck_assert_int_eq(K.pool, CFG_POOL_HOT);
    ck_assert_int_eq(kind(P "pools/cold"), AGENT_K_POOL);
    ck_assert_int_eq(K.pool, CFG_POOL_COLD);
    ck_assert_int_eq(kind(P "owners/12"), AGENT_K_OWNER);
    ck_assert_uint_eq(K.number, 12);
    ck_assert_int_eq(kind(P "hostnums/4095"), AGENT_K_HOSTNUM);
    ck_assert_uint_eq(K.number, 4095);
    ck_assert_int_eq(kind(P "hosts/web-1"), AGENT_K_HOST);
    ck_assert_str_eq(K.name, "web-1");
    ck_assert_int_eq(kind(P "members/web-1/cold/3"), AGENT_K_MEMBER);
    ck_assert_str_eq(K.name, "web-1/cold/3");
    ck_assert_int_eq(K.pool, CFG_POOL_COLD);
    ck_assert_int_eq(kind(P "writers/4194305"), AGENT_K_WRITER);
    ck_assert_uint_eq(K.number, 4194305);
    ck_assert_int_eq(kind(P "map/cold/2-00000001"), AGENT_K_LEAF);
    ck_assert_int_eq(K.pool, CFG_POOL_COLD);
    ck_assert_int_eq(K.bits, 2);
    ck_assert_uint_eq(K.prefix, 1);
    ck_assert_int_eq(kind(P "map/hot/0-00000000"), AGENT_K_LEAF);
    ck_assert_int_eq(K.bits, 0);
}
END_TEST

START_TEST(numbers_must_be_canonical_and_in_range)
{
    static const char *const bad[] = {
        P "owners/0", P "owners/257", P "owners/07", P "owners/", P "owners/1x", P "owners/-1",
        P "hostnums/0", P "hostnums/4096", P "writers/4294967296", P "writers/",
        P "owners/99999999999999999999999",
    };
    for (size_t i = 0; i < N(bad); i++)
        ck_assert_msg(kind(bad[i]) == AGENT_K_OTHER, "took %s", bad[i]);
    ck_assert_int_eq(kind(P "owners/256"), AGENT_K_OWNER); /* the last one */
    ck_assert_int_eq(kind(P "writers/0"), AGENT_K_WRITER);
}
END_TEST

START_TEST(leaves_must_fit_their_bits)
{
    static const char *const bad[] = {
        P "map/cold/2-00000004",  /* 3 bits of prefix in a 2-bit leaf */
        P "map/cold/25-00000000", /* deeper than CMAP_MAX_BITS */
        P "map/cold/2-0000001",   /* 7 digits */
        P "map/cold/2-000000001", P "map/cold/2-0000000G", P "map/cold/2-0000000A",
        P "map/warm/2-00000001",  /* no such pool */
        P "map/cold-2-00000001", P "map/cold/x-00000001", P "map/cold/200000001",
    };
    for (size_t i = 0; i < N(bad); i++)
        ck_assert_msg(kind(bad[i]) == AGENT_K_OTHER, "took %s", bad[i]);
    ck_assert_int_eq(kind(P "map/cold/24-00ffffff"), AGENT_K_LEAF);
    ck_assert_uint_eq(K.prefix, 0xffffff);
}
END_TEST

START_TEST(keys_outside_the_prefix_or_unknown_are_other)
{
    static const char *const bad[] = {
        "/hotkvd/c2/cluster", "/hotkvd/c1", "cluster", P "clusters", P "cluster/x",
        P "pools/warm", P "pools/", P "nothing/1", P "", P "members/web-1",
        P "members/web-1/cold/x", P "members/web-1/tepid/1",
    };
    for (size_t i = 0; i < N(bad); i++) {
        K.kind = AGENT_K_HOST;
        ck_assert_msg(kind(bad[i]) == AGENT_K_OTHER, "took %s", bad[i]);
        ck_assert_int_eq(K.kind, AGENT_K_OTHER); /* the info is cleared too */
    }
}
END_TEST

START_TEST(a_name_that_does_not_fit_is_other)
{
    char key[AGENT_KEY_MAX];
    char name[CMAP_NAME_MAX + 8];
    memset(name, 'h', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    snprintf(key, sizeof(key), P "hosts/%s", name);
    ck_assert_int_eq(kind(key), AGENT_K_OTHER);
    name[CMAP_NAME_MAX - 1] = '\0'; /* the longest that fits with its NUL */
    snprintf(key, sizeof(key), P "hosts/%s", name);
    ck_assert_int_eq(kind(key), AGENT_K_HOST);
    ck_assert_uint_eq(strlen(K.name), CMAP_NAME_MAX - 1);
}
END_TEST

START_TEST(an_owner_id_splits_into_host_pool_and_index)
{
    char host[CMAP_NAME_MAX];
    int pool = -1, k = -1;
    ck_assert_int_eq(agent_owner_id_parse("db-2/hot/11", host, sizeof(host), &pool, &k), HKV_OK);
    ck_assert_str_eq(host, "db-2");
    ck_assert_int_eq(pool, CFG_POOL_HOT);
    ck_assert_int_eq(k, 11);
    static const char *const bad[] = {
        "db-2/hot", "/hot/1", "db-2//1", "db-2/hot/", "db-2/lukewarm/1", "db-2/hot/x",
        "db-2/hot/65536", "hot/1", "", "db-2/hot/01",
    };
    for (size_t i = 0; i < N(bad); i++)
        ck_assert_msg(agent_owner_id_parse(bad[i], host, sizeof(host), &pool, &k) == HKV_EINVAL,
                      "took '%s'", bad[i]);
    ck_assert_int_eq(agent_owner_id_parse("db-2/hot/11", host, 4, &pool, &k), HKV_EINVAL);
}
END_TEST

START_TEST(the_retry_clock_doubles_up_to_5_s)
{
    struct agent_retry r = {0};
    int64_t now = clock_mono_ms();
    ck_assert(agent_retry_due(&r, now)); /* at once the first time */
    const int64_t want[] = {200, 400, 800, 1600, 3200, 5000, 5000};
    for (size_t i = 0; i < N(want); i++) {
        r.inflight = 1;
        ck_assert(!agent_retry_due(&r, now)); /* a call is out */
        agent_retry_failed(&r);
        ck_assert_int_eq(r.backoff_ms, want[i]);
        ck_assert_int_eq(r.inflight, 0);
        int64_t t = clock_mono_ms();
        ck_assert_int_ge(r.due_ms, now + want[i]);
        ck_assert_int_le(r.due_ms, t + want[i]);
        ck_assert(!agent_retry_due(&r, r.due_ms - 1));
        ck_assert(agent_retry_due(&r, r.due_ms));
    }
}
END_TEST

START_TEST(a_success_starts_the_retry_clock_over)
{
    struct agent_retry r = {0};
    agent_retry_failed(&r);
    agent_retry_failed(&r);
    ck_assert_int_eq(r.backoff_ms, 400);
    r.inflight = 1;
    agent_retry_ok(&r);
    ck_assert_int_eq(r.backoff_ms, 0);
    ck_assert(agent_retry_due(&r, 0));
    agent_retry_failed(&r);
    ck_assert_int_eq(r.backoff_ms, 200);
}
END_TEST

Suite *agent_keys_suite(void)
{
    Suite *s = suite_create("agent_keys");
    TCase *tc = tcase_create("keys");
    tcase_add_test(tc, keys_are_made_under_the_clusters_prefix);
    tcase_add_test(tc, each_kind_is_recognised_with_its_fields);
    tcase_add_test(tc, numbers_must_be_canonical_and_in_range);
    tcase_add_test(tc, leaves_must_fit_their_bits);
    tcase_add_test(tc, keys_outside_the_prefix_or_unknown_are_other);
    tcase_add_test(tc, a_name_that_does_not_fit_is_other);
    tcase_add_test(tc, an_owner_id_splits_into_host_pool_and_index);
    suite_add_tcase(s, tc);
    tc = tcase_create("retry");
    tcase_add_test(tc, the_retry_clock_doubles_up_to_5_s);
    tcase_add_test(tc, a_success_starts_the_retry_clock_over);
    suite_add_tcase(s, tc);
    return s;
}
