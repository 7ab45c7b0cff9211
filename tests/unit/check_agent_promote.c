/* check_agent_promote.c - failover CASes (server/agent/agent_promote.h) on
 * a minimal agent in this process (host h1 of cluster c1, its etcd client
 * over the local store, a real map segment).  Owners: 1 h2/hot/0, 2
 * h1/hot/0 (local), 3 h3/hot/0.  One hot leaf, the whole space.
 *   - another host's primary gone from the map: the agent of the first live
 *     in-sync member's host makes it primary, compared on the old primary's
 *     registration being absent (it came back: nothing changes); a member
 *     on a third host is that host's agent's to promote;
 *   - a local owner's death (CTL_OWNER_DIED): its leaf goes to its first
 *     live follower at once; a leaf it followed loses it from its set;
 *   - primary and follower both dead: nothing until the primary runs
 *     again, then the dead follower leaves the set (the primary serves);
 *   - a whole cluster host's start: its owners count as restarted, so a
 *     live follower elsewhere takes their leaves. */
#include <check.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/agent/agent_int.h"
#include "server/agent/agent_promote.h"
#include "server/core/clock.h"
#include "tests/harness.h"
#include "tests/unit/agent_fixture.h"

#define LEAF "map/hot/0-00000000"

static struct {
    struct agent_fixture f;
    struct agent_promote *p;
    char val[256];
    int64_t mod;
    int done;
} T;

static void on_get(void *arg, const struct etcd_result *r)
{
    T.val[0] = '\0';
    if (r->status == HKV_OK && r->nkvs > 0) {
        snprintf(T.val, sizeof(T.val), "%.*s", (int)r->kvs[0].value_len, r->kvs[0].value);
        T.mod = r->kvs[0].mod_revision;
    }
    T.done = 1;
}

static const char *get(void)
{
    char k[AGENT_KEY_MAX];
    int n = agent_key(k, sizeof(k), "c1", "%s", LEAF);
    T.done = 0;
    ck_assert_int_eq(etcd_range(T.f.a.etcd, k, (size_t)n, NULL, 0, 0, 0, on_get, NULL), HKV_OK);
    af_wait(&T.f, &T.done);
    return T.val;
}

static void owner(unsigned n, const char *host, int live)
{
    struct cmap_owner *o = &T.f.t->owners[n];
    o->number = (uint16_t)n;
    o->pool = CFG_POOL_HOT;
    o->live = (uint8_t)live;
    snprintf(o->host, sizeof(o->host), "%s", host);
    snprintf(o->id, sizeof(o->id), "%s/hot/0", host);
}

/* The leaf {owner, isr} in the store and in the published map, at the
 * store's epoch; owner 1 live or not. */
static void leaf(unsigned primary, const char *val, int one_live)
{
    memset(T.f.t, 0, sizeof(*T.f.t));
    owner(1, "h2", one_live);
    owner(2, "h1", 1);
    owner(3, "h3", 1);
    owner(4, "h1", 1);
    T.f.t->owners[4].index = 1;
    snprintf(T.f.t->owners[4].id, sizeof(T.f.t->owners[4].id), "h1/hot/1");
    af_put(&T.f, LEAF, val);
    get();
    struct agent_leaf_v v;
    ck_assert_int_eq(agent_parse_leaf(T.val, strlen(T.val), &v), HKV_OK);
    ck_assert_uint_eq(v.owner, primary);
    T.f.t->revision = T.mod;
    T.f.t->nleaves[CFG_POOL_HOT] = 1;
    struct cmap_leaf *l = &T.f.t->leaves[CFG_POOL_HOT][0];
    l->owner = (uint16_t)v.owner;
    l->nisr = (uint8_t)v.nisr;
    memcpy(l->isr, v.isr, sizeof(l->isr));
    l->epoch = T.mod;
    ck_assert_int_eq(cmap_publish(T.f.ctx.cmap, T.f.t), HKV_OK);
}

/* Runs the loop (and the module's tick) for ms, or until the leaf's value is want. */
static void run_until(const char *want, int ms)
{
    for (int64_t end = h_now_ms() + ms; h_now_ms() < end;) {
        agent_promote_tick(T.p, clock_mono_ms());
        for (int i = 0; i < 20; i++)
            event_base_loop(T.f.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        if (want != NULL && strcmp(get(), want) == 0)
            return;
        h_sleep_ms(5);
    }
}

static void setup(void)
{
    memset(&T, 0, sizeof(T));
    af_start(&T.f);
    T.f.a.have_read = 1;
    T.p = agent_promote_create(&T.f.a);
    ck_assert_ptr_nonnull(T.p);
    T.f.a.promote = T.p;
}

static void teardown(void)
{
    agent_promote_destroy(&T.p);
    af_stop(&T.f);
}

START_TEST(a_gone_hosts_leaf_goes_to_the_first_live_member_here)
{
    af_put(&T.f, "members/h3/hot/0", "{}");
    leaf(1, "{\"owner\":1,\"isr\":[2,3]}", 0);
    /* 3 followed the old primary's stream: out of the set until seeded again */
    run_until("{\"owner\":2,\"state\":\"serving\"}", 3000);
    ck_assert_str_eq(get(), "{\"owner\":2,\"state\":\"serving\"}");
    ck_assert_int_eq(T.f.a.h.repl_promotions, 1);
}
END_TEST

START_TEST(a_primary_registered_again_keeps_its_leaf)
{
    af_put(&T.f, "members/h2/hot/0", "{}"); /* etcd has it; this host's map not yet */
    leaf(1, "{\"owner\":1,\"isr\":[2]}", 0);
    run_until(NULL, 500);
    ck_assert_str_eq(get(), "{\"owner\":1,\"isr\":[2]}");
    ck_assert_int_eq(T.f.a.h.repl_promotions, 0);
}
END_TEST

START_TEST(a_member_on_another_host_is_its_agents_to_promote)
{
    leaf(1, "{\"owner\":1,\"isr\":[3,2]}", 0);
    run_until(NULL, 500);
    ck_assert_str_eq(get(), "{\"owner\":1,\"isr\":[3,2]}");
    /* and a live primary is never replaced */
    leaf(1, "{\"owner\":1,\"isr\":[2]}", 1);
    run_until(NULL, 500);
    ck_assert_str_eq(get(), "{\"owner\":1,\"isr\":[2]}");
}
END_TEST

START_TEST(a_local_owners_death_promotes_at_once_and_empties_its_memberships)
{
    af_put(&T.f, "members/h3/hot/0", "{}");
    leaf(2, "{\"owner\":2,\"isr\":[3]}", 1);
    int64_t t0 = h_now_ms();
    agent_promote_owner_died(T.p, CFG_POOL_HOT, 0); /* owner 2, h1/hot/0 */
    ck_assert(agent_promote_dead(T.p, 2));
    run_until("{\"owner\":3,\"state\":\"serving\"}", 3000);
    ck_assert_str_eq(get(), "{\"owner\":3,\"state\":\"serving\"}");
    ck_assert_int_lt(h_now_ms() - t0, 3000);
    ck_assert_int_eq(T.f.a.h.repl_promotions, 1);
    /* a leaf the dead owner follows: it leaves the set */
    leaf(3, "{\"owner\":3,\"isr\":[1,2]}", 1);
    run_until("{\"owner\":3,\"state\":\"serving\",\"isr\":[1]}", 3000);
    ck_assert_str_eq(get(), "{\"owner\":3,\"state\":\"serving\",\"isr\":[1]}");
    ck_assert_int_eq(T.f.a.h.repl_isr_removals, 1);
    /* once it runs again and follows nothing, it is no longer dead */
    agent_promote_owner_hello(T.p, CFG_POOL_HOT, 0);
    leaf(3, "{\"owner\":3,\"isr\":[1]}", 1);
    run_until(NULL, 200);
    ck_assert(!agent_promote_dead(T.p, 2));
}
END_TEST

START_TEST(both_dead_the_leaf_waits_for_its_primary)
{
    /* the primary first: its follower's promotion does not apply (members/
     * h1/hot/1 is not in the store), then the follower dies too */
    leaf(2, "{\"owner\":2,\"isr\":[4]}", 1);
    agent_promote_owner_died(T.p, CFG_POOL_HOT, 0); /* owner 2, the primary */
    run_until(NULL, 100);
    agent_promote_owner_died(T.p, CFG_POOL_HOT, 1); /* owner 4, the follower */
    run_until(NULL, 300);
    ck_assert_str_eq(get(), "{\"owner\":2,\"isr\":[4]}"); /* nobody eligible */
    ck_assert_int_eq(T.f.a.h.repl_promotions, 0);
    agent_promote_owner_hello(T.p, CFG_POOL_HOT, 1); /* the follower back: still not eligible */
    run_until(NULL, 300);
    ck_assert_str_eq(get(), "{\"owner\":2,\"isr\":[4]}");
    agent_promote_owner_hello(T.p, CFG_POOL_HOT, 0); /* the primary back */
    run_until("{\"owner\":2,\"state\":\"serving\"}", 3000);
    ck_assert_str_eq(get(), "{\"owner\":2,\"state\":\"serving\"}");
}
END_TEST

START_TEST(a_whole_cluster_hosts_start_promotes_live_followers_elsewhere)
{
    agent_promote_destroy(&T.p);
    T.f.a.fresh_start = 1;
    T.p = T.f.a.promote = agent_promote_create(&T.f.a);
    ck_assert_ptr_nonnull(T.p);
    af_put(&T.f, "members/h3/hot/0", "{}");
    leaf(2, "{\"owner\":2,\"isr\":[3]}", 1);
    run_until("{\"owner\":3,\"state\":\"serving\"}", 3000);
    ck_assert_str_eq(get(), "{\"owner\":3,\"state\":\"serving\"}");
}
END_TEST

Suite *agent_promote_suite(void)
{
    Suite *s = suite_create("agent_promote");
    TCase *tc = tcase_create("failover");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_gone_hosts_leaf_goes_to_the_first_live_member_here);
    tcase_add_test(tc, a_primary_registered_again_keeps_its_leaf);
    tcase_add_test(tc, a_member_on_another_host_is_its_agents_to_promote);
    tcase_add_test(tc, a_local_owners_death_promotes_at_once_and_empties_its_memberships);
    tcase_add_test(tc, both_dead_the_leaf_waits_for_its_primary);
    tcase_add_test(tc, a_whole_cluster_hosts_start_promotes_live_followers_elsewhere);
    suite_add_tcase(s, tc);
    return s;
}
