/* check_agent_watch.c - the agent's view of the cluster's keys
 * (server/agent/agent_watch.c: one full read, then one watch; agent_core.c's
 * commit) on a minimal agent in this process, over the local etcd store and
 * a real map segment, with its real map and saver.  The full read publishes
 * the map at the read's revision and hands it to the saver; a leaf put
 * afterwards arrives by the watch and is published at its revision; a
 * change of registrations only moves the watch's revision, not the map; a
 * bad leaf value refuses the map (counted) and routing stays on the last
 * good one, until the leaf is repaired. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/etcd_msg.h"
#include "proto/hkv.h"
#include "server/agent/agent_int.h"
#include "server/agent/agent_keys.h"
#include "server/core/clock.h"
#include "server/core/cmap.h"
#include "tests/harness.h"
#include "tests/unit/agent_fixture.h"

static struct {
    struct agent_fixture f;
    char mapfile[320], statefile[320];
} T;

static void put(const char *key_tail, const char *val)
{
    af_put(&T.f, key_tail, val);
}

static void put_leaf(const char *pool, unsigned prefix, unsigned owner)
{
    char tail[64], val[128];
    snprintf(tail, sizeof(tail), "map/%s/2-%08x", pool, prefix);
    struct agent_leaf_v lv = {.owner = owner, .state = CMAP_SERVING};
    ck_assert_int_gt(agent_val_leaf(val, sizeof(val), &lv), 0);
    put(tail, val);
}

static void put_member(const char *id, unsigned n, const char *pool, int port)
{
    char tail[64], val[512];
    snprintf(tail, sizeof(tail), "members/%s", id);
    snprintf(val, sizeof(val), "{\"number\":%u,\"addr\":\"10.0.0.1\",\"port\":%d,\"pool\":\"%s\","
             "\"incarnation\":\"5\",\"host\":\"h1\"}", n, port, pool);
    put(tail, val);
}

/* What --cluster-init and one host leave: owners 1 (hot), 2 and 3 (cold),
 * four leaves a pool, both pools ready, the host registered. */
static void initialise(void)
{
    put("cluster", "{\"format\":1,\"created\":\"1700000000000\"}");
    put("owners/1", "{\"id\":\"h1/hot/0\"}");
    put("owners/2", "{\"id\":\"h1/cold/0\"}");
    put("owners/3", "{\"id\":\"h1/cold/1\"}");
    for (unsigned i = 0; i < 4; i++) {
        put_leaf("hot", i, 1);
        put_leaf("cold", i, 2 + i % 2);
    }
    put("pools/hot", "{\"min_bits\":2,\"ready\":true}");
    put("pools/cold", "{\"min_bits\":2,\"ready\":true}");
    put("hostnums/1", "{\"host\":\"h1\"}");
    put("hosts/h1", "{\"addr\":\"10.0.0.1\",\"number\":1,\"version\":\"0.1.0\"}");
    put_member("h1/hot/0", 1, "hot", 7100);
    put_member("h1/cold/0", 2, "cold", 7101);
    put_member("h1/cold/1", 3, "cold", 7102);
}

static void setup(void)
{
    memset(&T, 0, sizeof(T));
    af_start(&T.f);
    snprintf(T.mapfile, sizeof(T.mapfile), "%s/cluster.map", T.f.dir);
    snprintf(T.statefile, sizeof(T.statefile), "%s/agent.state", T.f.dir);
    struct agent *a = &T.f.a;
    a->map = agent_map_create("c1");
    ck_assert_ptr_nonnull(a->map);
    a->saver = agent_saver_start(T.mapfile, T.statefile);
    ck_assert_ptr_nonnull(a->saver);
    a->scratch = calloc(1, sizeof(*a->scratch));
    ck_assert_ptr_nonnull(a->scratch);
    a->plen = (size_t)agent_key(a->prefix, sizeof(a->prefix), "c1", "%s", "");
    a->elen = etcd_prefix_end(a->prefix, a->plen, a->prefix_end);
    a->reading = 1; /* as the agent starts: a full read first */
}

static void teardown(void)
{
    struct agent *a = &T.f.a;
    agent_watch_stop(a);
    agent_saver_stop(&a->saver);
    agent_map_destroy(&a->map);
    af_stop(&T.f);
    free(a->scratch);
}

/* Ticks the agent and runs the loop until cond() (at most ms). */
static int run_until(int (*cond)(void), int ms)
{
    int64_t end = h_now_ms() + ms;
    while (!cond() && h_now_ms() < end) {
        agent_watch_tick(&T.f.a, clock_mono_ms());
        event_base_loop(T.f.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        if (!cond())
            h_sleep_ms(1);
    }
    return cond();
}

static int64_t want_rev;
static int published(void) { return cmap_revision(T.f.ctx.cmap) > 0; }
static int published_at_want(void) { return cmap_revision(T.f.ctx.cmap) >= want_rev; }
static int watch_at_want(void) { return T.f.a.h.watch_revision >= want_rev; }
static int refused_one(void) { return T.f.a.h.refused_maps >= 1; }
static int watching(void) { return T.f.a.watch != NULL; }

START_TEST(the_full_read_publishes_the_map_and_saves_it)
{
    initialise();
    ck_assert_int_eq(cmap_revision(T.f.ctx.cmap), 0);
    ck_assert(run_until(published, 3000));
    ck_assert(T.f.a.have_read);
    int64_t rev = cmap_snapshot(T.f.ctx.cmap, T.f.t);
    ck_assert_int_gt(rev, 0);
    ck_assert_uint_eq(T.f.t->nleaves[CFG_POOL_HOT], 4);
    ck_assert_uint_eq(T.f.t->nleaves[CFG_POOL_COLD], 4);
    ck_assert_uint_eq(T.f.t->leaves[CFG_POOL_COLD][1].owner, 3);
    ck_assert_str_eq(T.f.t->owners[2].id, "h1/cold/0");
    ck_assert_uint_eq(T.f.t->owners[2].port, 7101);
    ck_assert_int_eq(T.f.a.h.watch_revision, rev);
    ck_assert_int_eq(T.f.a.h.from_disk, 0);
    /* and the saver wrote it */
    agent_saver_stop(&T.f.a.saver);
    struct cmap_table *back = calloc(1, sizeof(*back));
    ck_assert_int_eq(cmap_load(back, T.mapfile), HKV_OK);
    ck_assert_int_eq(back->revision, rev);
    free(back);
}
END_TEST

START_TEST(a_leaf_put_arrives_by_the_watch)
{
    initialise();
    ck_assert(run_until(published, 3000));
    int64_t first = cmap_revision(T.f.ctx.cmap);
    ck_assert(run_until(watching, 3000));
    put_leaf("cold", 1, 2); /* cold leaf 1: owner 3 -> 2 */
    want_rev = first + 1;
    ck_assert(run_until(published_at_want, 3000));
    int64_t rev = cmap_snapshot(T.f.ctx.cmap, T.f.t);
    ck_assert_int_gt(rev, first);
    ck_assert_uint_eq(T.f.t->leaves[CFG_POOL_COLD][1].owner, 2);
    ck_assert_int_eq(T.f.t->leaves[CFG_POOL_COLD][1].epoch, rev); /* its epoch: the put's */
    ck_assert_int_eq(T.f.a.applied_rev, rev);
}
END_TEST

START_TEST(registrations_alone_publish_no_new_map)
{
    initialise();
    ck_assert(run_until(published, 3000));
    ck_assert(run_until(watching, 3000));
    int64_t first = cmap_revision(T.f.ctx.cmap);
    put("hosts/h1", "{\"addr\":\"10.0.0.9\",\"number\":1,\"version\":\"0.1.0\"}");
    put("writers/4099", "{\"host\":\"h1\",\"incarnation\":\"77\"}");
    want_rev = first + 2;
    ck_assert(run_until(watch_at_want, 3000));
    ck_assert_int_eq(cmap_revision(T.f.ctx.cmap), first); /* the same map */
    ck_assert_int_ge(T.f.a.applied_rev, first + 2);
}
END_TEST

START_TEST(a_bad_leaf_refuses_the_map_until_repaired)
{
    initialise();
    ck_assert(run_until(published, 3000));
    ck_assert(run_until(watching, 3000));
    int64_t good = cmap_revision(T.f.ctx.cmap);
    put("map/cold/2-00000001", "{\"owner\":\"nobody\"}");
    ck_assert(run_until(refused_one, 3000));
    ck_assert_int_eq(cmap_revision(T.f.ctx.cmap), good); /* routing stays on the good map */
    cmap_snapshot(T.f.ctx.cmap, T.f.t);
    ck_assert_uint_eq(T.f.t->leaves[CFG_POOL_COLD][1].owner, 3);
    put_leaf("cold", 1, 3); /* repaired */
    want_rev = good + 2;
    ck_assert(run_until(published_at_want, 3000));
    ck_assert_int_eq(T.f.a.h.refused_maps, 1);
}
END_TEST

START_TEST(a_split_half_done_is_refused_and_the_whole_published)
{
    initialise();
    ck_assert(run_until(published, 3000));
    ck_assert(run_until(watching, 3000));
    int64_t good = cmap_revision(T.f.ctx.cmap);
    /* cold 2-00000003 into 3-00000006 and 3-00000007, one key at a time */
    put("map/cold/3-00000006", "{\"owner\":3,\"state\":\"serving\"}"); /* overlaps its parent */
    ck_assert(run_until(refused_one, 3000));
    ck_assert_int_eq(cmap_revision(T.f.ctx.cmap), good);
    put("map/cold/3-00000007", "{\"owner\":2,\"state\":\"serving\"}");
    char k[AGENT_KEY_MAX];
    int n = agent_key(k, sizeof(k), "c1", "map/cold/2-00000003");
    T.f.done = 0;
    ck_assert_int_eq(etcd_delete(T.f.a.etcd, k, (size_t)n, NULL, 0, af_on_sync, &T.f), HKV_OK);
    want_rev = good + 3;
    ck_assert(run_until(published_at_want, 3000));
    cmap_snapshot(T.f.ctx.cmap, T.f.t);
    ck_assert_uint_eq(T.f.t->nleaves[CFG_POOL_COLD], 5);
    ck_assert_uint_eq(T.f.t->leaves[CFG_POOL_COLD][4].owner, 2);
    ck_assert_uint_eq(T.f.t->leaves[CFG_POOL_COLD][4].bits, 3);
}
END_TEST

Suite *agent_watch_suite(void)
{
    Suite *s = suite_create("agent_watch");
    TCase *tc = tcase_create("read and watch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, the_full_read_publishes_the_map_and_saves_it);
    tcase_add_test(tc, a_leaf_put_arrives_by_the_watch);
    tcase_add_test(tc, registrations_alone_publish_no_new_map);
    tcase_add_test(tc, a_bad_leaf_refuses_the_map_until_repaired);
    tcase_add_test(tc, a_split_half_done_is_refused_and_the_whole_published);
    suite_add_tcase(s, tc);
    return s;
}
