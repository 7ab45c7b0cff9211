/* check_agent_replica.c - the agent's two replica rules as pure functions
 * (CLUSTER.md §7): where a leaf's next follower goes (afol_choose,
 * server/agent/agent_follow.h: another zone first, then another host, then
 * any other owner; the least loaded among equals; never the primary, a
 * member already, a dead or foreign-pool owner) and whom a leaf whose
 * primary is gone gets as its primary (apro_choose, agent_promote.h: the
 * first eligible in-sync member; the others that are eligible stay in the
 * set; nobody when no member is eligible or the leaf is mid-move). */
#include <check.h>
#include <string.h>

#include "server/agent/agent_follow.h"
#include "server/agent/agent_promote.h"
#include "server/core/cmap.h"

static struct cmap_leaf leaf_of(unsigned owner, unsigned nisr, const uint16_t *isr)
{
    struct cmap_leaf l = {.owner = (uint16_t)owner, .state = CMAP_SERVING, .nisr = (uint8_t)nisr,
                          .epoch = 9};
    for (unsigned i = 0; i < nisr; i++)
        l.isr[i] = isr[i];
    return l;
}

/* Owners 1..6 of the hot pool: 1, 2 on host 1 (zone a); 3, 4 on host 2
 * (zone a); 5, 6 on host 3 (zone b).  7 is cold, on host 3. */
static void cands(struct afol_cand *c)
{
    for (unsigned i = 0; i < 7; i++)
        c[i] = (struct afol_cand){.number = i + 1, .pool = CFG_POOL_HOT, .live = 1,
                                  .host = (int)(i / 2) + 1, .zone = i < 4 ? 1 : 2};
    c[6].pool = CFG_POOL_COLD;
}

START_TEST(a_follower_goes_to_another_zone_then_host_then_anywhere)
{
    struct afol_cand c[7];
    cands(c);
    struct cmap_leaf l = leaf_of(1, 0, NULL);
    ck_assert_uint_eq(afol_choose(c, 7, CFG_POOL_HOT, &l), 5); /* zone b, the lowest */
    c[4].following = 3;
    ck_assert_uint_eq(afol_choose(c, 7, CFG_POOL_HOT, &l), 6); /* zone b, fewer followed */
    uint16_t in[] = {5, 6};
    l = leaf_of(1, 2, in);
    ck_assert_uint_eq(afol_choose(c, 7, CFG_POOL_HOT, &l), 3); /* zone b used up: host 2 */
    c[2].live = 0;
    ck_assert_uint_eq(afol_choose(c, 7, CFG_POOL_HOT, &l), 4); /* 3 is down */
    c[3].live = 0;
    ck_assert_uint_eq(afol_choose(c, 7, CFG_POOL_HOT, &l), 2); /* only the primary's host */
    c[1].live = 0;
    ck_assert_uint_eq(afol_choose(c, 7, CFG_POOL_HOT, &l), 0); /* nobody (7 is cold) */
    /* no zones given: another host first, then the primary's */
    cands(c);
    for (int i = 0; i < 7; i++)
        c[i].zone = 0;
    l = leaf_of(3, 0, NULL);
    c[0].following = 1;
    ck_assert_uint_eq(afol_choose(c, 7, CFG_POOL_HOT, &l), 2); /* host 1, fewest followed */
    uint16_t most[] = {1, 2, 5};
    l = leaf_of(3, 3, most);
    ck_assert_uint_eq(afol_choose(c, 7, CFG_POOL_HOT, &l), 6);
    /* a moving leaf's target is not made its follower */
    l = leaf_of(3, 0, NULL);
    l.state = CMAP_MOVING;
    l.to = 2;
    c[0].following = 0;
    ck_assert_uint_eq(afol_choose(c, 7, CFG_POOL_HOT, &l), 1);
}
END_TEST

START_TEST(the_first_eligible_member_is_promoted)
{
    uint8_t ok[CMAP_MAX_OWNERS + 1];
    memset(ok, 1, sizeof(ok));
    ok[1] = 0; /* the dead primary */
    struct agent_leaf_v v;
    uint16_t in[] = {4, 2, 3};
    struct cmap_leaf l = leaf_of(1, 3, in);
    ck_assert(apro_choose(&l, ok, 0, &v));
    /* the other members followed the old stream: seeded again before they
     * count (replica.pml finding 1), so the new set is empty */
    ck_assert(v.owner == 4 && v.state == CMAP_SERVING && v.nisr == 0);
    ok[4] = 0; /* its host is gone too */
    ck_assert(apro_choose(&l, ok, 0, &v));
    ck_assert(v.owner == 2 && v.nisr == 0);
    ok[3] = 0;
    ck_assert(apro_choose(&l, ok, 0, &v));
    ck_assert(v.owner == 2 && v.nisr == 0);
    ok[2] = 0;
    ck_assert(!apro_choose(&l, ok, 0, &v)); /* no eligible member: the leaf waits */
    /* no set: nobody; mid-move: nobody (one host) */
    memset(ok, 1, sizeof(ok));
    l = leaf_of(1, 0, NULL);
    ck_assert(!apro_choose(&l, ok, 0, &v));
    l = leaf_of(1, 3, in);
    l.state = CMAP_MOVING;
    l.to = 5;
    ck_assert(!apro_choose(&l, ok, 0, &v));
    /* ... unless the dead primary's host lease took the move's keys with it */
    ck_assert(apro_choose(&l, ok, 1, &v));
    ck_assert(v.owner == 4 && v.state == CMAP_SERVING && v.to == 0 && v.nisr == 0);
    /* only members: an eligible owner outside the set is never chosen */
    l = leaf_of(1, 1, in);
    ok[4] = 0;
    ck_assert(!apro_choose(&l, ok, 0, &v));
}
END_TEST

Suite *agent_replica_suite(void)
{
    Suite *s = suite_create("agent_replica");
    TCase *tc = tcase_create("rules");
    tcase_add_test(tc, a_follower_goes_to_another_zone_then_host_then_anywhere);
    tcase_add_test(tc, the_first_eligible_member_is_promoted);
    suite_add_tcase(s, tc);
    return s;
}
