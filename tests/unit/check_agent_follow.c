/* check_agent_follow.c - follow orders (server/agent/agent_follow.h) on a
 * minimal agent in this process (host h1, a real map segment): with
 * replicas 1 each serving leaf of a local primary without a follower gets
 * one LEAF_ORDER FOLLOW to its primary, once while it is out; a failed
 * order is asked again only after the cool-down, a silent one counts as
 * failed past its bound, one whose follower shows in the map ends; at most
 * AFOL_MAX_OUT are out; replicas 0 orders nothing.  The clock is the
 * tick's argument, so the bounds are crossed without waiting. */
#include <check.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/agent/agent_follow.h"
#include "server/agent/agent_int.h"
#include "server/core/clock.h"
#include "tests/harness.h"
#include "tests/unit/agent_fixture.h"

#define MAXO 64

static struct {
    struct agent_fixture f;
    struct agent_follow *fo;
    struct hand_msg orders[MAXO];
    int pools[MAXO], index[MAXO];
    int n;
} T;

static int on_order(void *arg, int pool, int index, const struct hand_msg *m)
{
    ck_assert_int_lt(T.n, MAXO);
    T.orders[T.n] = *m;
    T.pools[T.n] = pool;
    T.index[T.n] = index;
    T.n++;
    return 0;
}

static void owner(unsigned n, const char *host, int k)
{
    struct cmap_owner *o = &T.f.t->owners[n];
    o->number = (uint16_t)n;
    o->pool = CFG_POOL_HOT;
    o->live = 1;
    o->index = (uint16_t)k;
    snprintf(o->host, sizeof(o->host), "%s", host);
    snprintf(o->id, sizeof(o->id), "%s/hot/%d", host, k);
}

/* Owners 1 h1/hot/0, 2 h1/hot/1, 3 h2/hot/0; hot in `leaves` leaves of 4
 * bits, owner 1 serving the first `mine`, owner 3 the others. */
static void publish(int64_t rev, uint32_t mine)
{
    memset(T.f.t, 0, sizeof(*T.f.t));
    T.f.t->revision = rev;
    owner(1, "h1", 0);
    owner(2, "h1", 1);
    owner(3, "h2", 0);
    T.f.t->nleaves[CFG_POOL_HOT] = 16;
    for (uint32_t i = 0; i < 16; i++) {
        struct cmap_leaf *l = &T.f.t->leaves[CFG_POOL_HOT][i];
        l->bits = 4;
        l->start = i << 28;
        l->owner = i < mine ? 1 : 3;
        l->epoch = rev;
    }
    ck_assert_int_eq(cmap_publish(T.f.ctx.cmap, T.f.t), HKV_OK);
}

static void setup(void)
{
    memset(&T, 0, sizeof(T));
    af_start(&T.f);
    T.f.a.have_read = 1;
    T.f.a.opt.replicas = 1;
    T.fo = agent_follow_create(&T.f.a, on_order, NULL);
    ck_assert_ptr_nonnull(T.fo);
}

static void teardown(void)
{
    agent_follow_destroy(&T.fo);
    af_stop(&T.f);
}

START_TEST(each_leaf_of_a_local_primary_gets_one_order_to_another_host)
{
    publish(5, 2);
    int64_t now = clock_mono_ms();
    agent_follow_tick(T.fo, now);
    ck_assert_int_eq(T.n, 2);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(T.orders[i].type, LEAF_ORDER);
        ck_assert_uint_eq(T.orders[i].u.order.kind, LEAF_ORDER_FOLLOW);
        ck_assert_uint_eq(T.orders[i].u.order.to, 3); /* another host first */
        ck_assert(T.orders[i].id & AGENT_FOLLOW_ORDER_BIT);
        ck_assert(T.pools[i] == CFG_POOL_HOT && T.index[i] == 0); /* to the primary, hot/0 */
    }
    ck_assert_uint_eq(T.orders[1].u.order.leaf.start, 1u << 28);
    ck_assert_int_eq(T.f.a.h.repl_follow_sent, 2);
    agent_follow_tick(T.fo, now + 100);
    ck_assert_int_eq(T.n, 2); /* out already: not again */
    /* the first refused: again only after the cool-down */
    ck_assert(agent_follow_done(T.fo, T.orders[0].id, LEAF_ST_REFUSED));
    ck_assert_int_eq(T.f.a.h.repl_follow_failed, 1);
    agent_follow_tick(T.fo, now + 200);
    ck_assert_int_eq(T.n, 2);
    agent_follow_tick(T.fo, clock_mono_ms() + AFOL_COOL_MS + 100);
    ck_assert_int_eq(T.n, 3);
    ck_assert_uint_eq(T.orders[2].u.order.leaf.start, 0);
    /* the second's follower shows in the map: it ended, nothing more */
    T.f.t->leaves[CFG_POOL_HOT][1].nisr = 1;
    T.f.t->leaves[CFG_POOL_HOT][1].isr[0] = 3;
    T.f.t->revision = 6;
    ck_assert_int_eq(cmap_publish(T.f.ctx.cmap, T.f.t), HKV_OK);
    agent_follow_tick(T.fo, clock_mono_ms() + AFOL_COOL_MS + 200);
    ck_assert_int_eq(T.n, 3);
    /* the third is silent past its bound: failed, then asked again */
    agent_follow_tick(T.fo, clock_mono_ms() + AFOL_SILENT_MS + AFOL_COOL_MS + 1000);
    ck_assert_int_eq(T.f.a.h.repl_follow_failed, 2);
    agent_follow_tick(T.fo, clock_mono_ms() + AFOL_SILENT_MS + 2 * AFOL_COOL_MS + 2000);
    ck_assert_int_eq(T.n, 4);
    ck_assert_int_eq(agent_follow_done(T.fo, 7, LEAF_ST_OK), 0); /* not a follow order's id */
}
END_TEST

START_TEST(at_most_max_out_and_none_with_replicas_0)
{
    T.f.a.opt.replicas = 0;
    publish(5, 16);
    agent_follow_tick(T.fo, clock_mono_ms());
    ck_assert_int_eq(T.n, 0);
    T.f.a.opt.replicas = 2; /* a reload */
    agent_follow_tick(T.fo, clock_mono_ms());
    ck_assert_int_eq(T.n, AFOL_MAX_OUT);
    /* leaves of another host's primary are its agent's */
    for (int i = 0; i < T.n; i++)
        ck_assert_int_eq(T.index[i], 0);
}
END_TEST

Suite *agent_follow_suite(void)
{
    Suite *s = suite_create("agent_follow");
    TCase *tc = tcase_create("orders");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, each_leaf_of_a_local_primary_gets_one_order_to_another_host);
    tcase_add_test(tc, at_most_max_out_and_none_with_replicas_0);
    suite_add_tcase(s, tc);
    return s;
}
