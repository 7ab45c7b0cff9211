/*
 * check_router_map.c - routing in a cluster (server/core/router_map.h and
 * the router in cluster mode): a key goes to the owner number its leaf names
 * in the process's copy of the map; a MOVED newer than everything held for
 * its range overrides the copy there until the copy's revision reaches its
 * epoch, an older or equal one is ignored; a newer override replaces those
 * it overlaps; a MOVED naming an owner the copy does not have is refused;
 * the copy is taken from the shared segment only when its revision moves.
 */
#include <check.h>
#include <string.h>

#include "config/cfg.h"
#include "server/core/router.h"
#include "server/core/router_map.h"
#include "tests/unit/cluster_fixture.h"

static const unsigned HOT[] = {1, 2, 3};
static const unsigned COLD[] = {4};

/* Revision rev: hot in 2^6 leaves dealt to owners 1..3 (h1, h1, h2) at
 * epoch rev, cold in one leaf of owner 4. */
static struct cmap_table *table(int64_t rev)
{
    struct cmap_table *t = cf_new(rev);
    cf_owner(t, 1, CFG_POOL_HOT, 0, "h1", "10.0.0.1", 7000);
    cf_owner(t, 2, CFG_POOL_HOT, 1, "h1", "10.0.0.1", 7001);
    cf_owner(t, 3, CFG_POOL_HOT, 0, "h2", "10.0.0.2", 7000);
    cf_owner(t, 4, CFG_POOL_COLD, 0, "h2", "10.0.0.2", 7001);
    cf_deal(t, CFG_POOL_HOT, 6, HOT, 3, rev);
    cf_deal(t, CFG_POOL_COLD, 0, COLD, 1, rev);
    cf_valid(t);
    return t;
}

/* A placement hash in leaf i of a 6-bit pool. */
static uint64_t in_leaf6(uint32_t i, uint32_t low)
{
    return ((uint64_t)(i << 26) | low) << 32;
}

START_TEST(keys_route_to_the_owner_number_their_leaf_names)
{
    struct rmap *m = rmap_create();
    ck_assert_ptr_nonnull(m);
    struct rmap_route rr;
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, 123, &rr), 0); /* no map yet */
    struct cmap_table *t = table(10);
    ck_assert_int_eq(rmap_set_table(m, t), HKV_OK);
    ck_assert_int_eq(rmap_revision(m), 10);
    for (uint32_t i = 0; i < 64; i++) {
        ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(i, 77), &rr), HOT[i % 3]);
        ck_assert_uint_eq(rr.leaf, i);
        ck_assert_uint_eq(rr.bits, 6);
        ck_assert_int_eq(rr.epoch, 10);
    }
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_COLD, UINT64_MAX, &rr), 4);
    ck_assert_uint_eq(rr.bits, 0);
    for (unsigned n = 1; n <= 4; n++)
        ck_assert(rmap_serves(m, n));
    ck_assert(!rmap_serves(m, 5));
    ck_assert(!rmap_serves(m, 0));
    free(t);
    rmap_destroy(&m);
    ck_assert_ptr_null(m);
}
END_TEST

START_TEST(an_invalid_table_is_refused_and_the_old_copy_stays)
{
    struct rmap *m = rmap_create();
    struct cmap_table *t = table(10);
    ck_assert_int_eq(rmap_set_table(m, t), HKV_OK);
    struct cmap_table *bad = table(11);
    bad->leaves[CFG_POOL_HOT][5].start += 1; /* no longer fits its bits */
    ck_assert_int_eq(rmap_set_table(m, bad), HKV_EINVAL);
    ck_assert_int_eq(rmap_revision(m), 10);
    struct rmap_route rr;
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(5, 0), &rr), HOT[5 % 3]);
    free(t);
    free(bad);
    rmap_destroy(&m);
}
END_TEST

START_TEST(newer_moved_overrides_its_leaf_older_or_equal_is_ignored)
{
    struct rmap *m = rmap_create();
    struct cmap_table *t = table(10);
    ck_assert_int_eq(rmap_set_table(m, t), HKV_OK);
    struct rmap_route rr;
    /* leaf 7 is owner 2's; a MOVED at the copy's own epoch or older says
     * nothing new */
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 7, 6, 10, 3), 0);
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 7, 6, 4, 3), 0);
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(7, 1), &rr), 2);
    /* newer: leaf 7 goes to owner 3, its neighbours stay */
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 7, 6, 15, 3), 1);
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(7, 1), &rr), 3);
    ck_assert_int_eq(rr.epoch, 15);
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(7, 0x3ffffff), &rr), 3);
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(6, 0x3ffffff), &rr), HOT[6 % 3]);
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(8, 0), &rr), HOT[8 % 3]);
    /* an older claim about the overridden leaf is ignored ... */
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 7, 6, 12, 1), 0);
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(7, 1), &rr), 3);
    /* ... a newer one wins */
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 7, 6, 16, 1), 1);
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(7, 1), &rr), 1);
    ck_assert_uint_eq(rmap_overrides(m, CFG_POOL_HOT), 1);
    free(t);
    rmap_destroy(&m);
}
END_TEST

START_TEST(override_kept_until_the_copy_reaches_its_epoch)
{
    struct rmap *m = rmap_create();
    struct cmap_table *t = table(10);
    ck_assert_int_eq(rmap_set_table(m, t), HKV_OK);
    struct rmap_route rr;
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 9, 6, 20, 2), 1); /* leaf 9 is owner 1's */
    /* a copy at revision 15 does not know the move yet: the override stays */
    struct cmap_table *t15 = table(15);
    ck_assert_int_eq(rmap_set_table(m, t15), HKV_OK);
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(9, 5), &rr), 2);
    ck_assert_uint_eq(rmap_overrides(m, CFG_POOL_HOT), 1);
    /* the copy at revision 20 does: the override goes and the copy rules,
     * whatever it says (here: the leaf went on to owner 3) */
    struct cmap_table *t20 = table(20);
    t20->leaves[CFG_POOL_HOT][9].owner = 3;
    t20->leaves[CFG_POOL_HOT][9].epoch = 20;
    ck_assert_int_eq(rmap_set_table(m, t20), HKV_OK);
    ck_assert_uint_eq(rmap_overrides(m, CFG_POOL_HOT), 0);
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(9, 5), &rr), 3);
    /* and a MOVED older than the copy's revision changes nothing */
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 9, 6, 19, 1), 0);
    free(t);
    free(t15);
    free(t20);
    rmap_destroy(&m);
}
END_TEST

START_TEST(a_wider_newer_moved_replaces_the_overrides_it_covers)
{
    struct rmap *m = rmap_create();
    struct cmap_table *t = table(10);
    ck_assert_int_eq(rmap_set_table(m, t), HKV_OK);
    struct rmap_route rr;
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 8, 6, 12, 3), 1);  /* leaf 8 of 6 bits */
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 11, 6, 13, 3), 1); /* leaf 11 */
    ck_assert_uint_eq(rmap_overrides(m, CFG_POOL_HOT), 2);
    /* leaf 2 of 4 bits covers 6-bit leaves 8..11; epoch 12 is not newer than
     * what is held there (13) */
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 2, 4, 12, 1), 0);
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 2, 4, 14, 1), 1);
    ck_assert_uint_eq(rmap_overrides(m, CFG_POOL_HOT), 1);
    for (uint32_t i = 8; i <= 11; i++)
        ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(i, 3), &rr), 1);
    ck_assert_uint_eq(rr.bits, 4);
    ck_assert_uint_eq(rr.leaf, 2);
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(12, 3), &rr), HOT[12 % 3]);
    /* a narrower, newer one inside it splits nothing but wins its range */
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 10, 6, 15, 2), 1);
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(10, 3), &rr), 2);
    free(t);
    rmap_destroy(&m);
}
END_TEST

START_TEST(moved_to_an_unknown_owner_or_a_bad_leaf_is_refused)
{
    struct rmap *m = rmap_create();
    struct cmap_table *t = table(10);
    ck_assert_int_eq(rmap_set_table(m, t), HKV_OK);
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 1, 6, 99, 9), HKV_EINVAL);  /* no owner 9 */
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 1, 6, 99, 4), HKV_EINVAL);  /* 4 is cold */
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 64, 6, 99, 1), HKV_EINVAL); /* 64 > 6 bits */
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 1, 33, 99, 1), HKV_EINVAL);
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 1, 6, 99, 0), HKV_EINVAL);
    ck_assert_uint_eq(rmap_overrides(m, CFG_POOL_HOT), 0);
    free(t);
    rmap_destroy(&m);
}
END_TEST

START_TEST(copy_taken_from_the_segment_only_when_its_revision_moves)
{
    struct cmap *seg = cmap_create();
    ck_assert_ptr_nonnull(seg);
    struct rmap *m = rmap_create();
    ck_assert_int_eq(rmap_sync(m, seg), 0); /* nothing published */
    ck_assert_int_eq(rmap_sync(m, NULL), 0);
    struct cmap_table *t = table(30);
    ck_assert_int_eq(cmap_publish(seg, t), HKV_OK);
    ck_assert_int_eq(rmap_sync(m, seg), 1);
    ck_assert_int_eq(rmap_revision(m), 30);
    ck_assert_int_eq(rmap_sync(m, seg), 0);
    ck_assert_int_eq(rmap_moved(m, CFG_POOL_HOT, 0, 6, 31, 2), 1);
    struct cmap_table *t31 = table(31);
    t31->leaves[CFG_POOL_HOT][0].owner = 2;
    ck_assert_int_eq(cmap_publish(seg, t31), HKV_OK);
    ck_assert_int_eq(rmap_sync(m, seg), 1);
    ck_assert_uint_eq(rmap_overrides(m, CFG_POOL_HOT), 0);
    struct rmap_route rr;
    ck_assert_uint_eq(rmap_owner(m, CFG_POOL_HOT, in_leaf6(0, 1), &rr), 2);
    free(t);
    free(t31);
    rmap_destroy(&m);
    cmap_destroy(&seg);
}
END_TEST

START_TEST(router_in_cluster_mode_routes_and_follows_moved_by_epoch)
{
    struct cfg *c = cfg_create();
    struct cfg_error err;
    const char *text = "cluster prod\nhost h1\nhot-owners 0\ncold-owners 0\n"
                       "class cold pattern \"c:*\" pool cold\nclass default pool hot\n";
    ck_assert_ptr_nonnull(c);
    ck_assert_msg(cfg_load_text(c, text, strlen(text), "test", &err) == HKV_OK, "%s", err.msg);
    ck_assert_msg(cfg_validate(c, &err) == HKV_OK, "%s", err.msg);
    struct router *r = router_create(c);
    struct rmap *m = rmap_create();
    struct cmap_table *t = table(10);
    ck_assert_int_eq(rmap_set_table(m, t), HKV_OK);
    router_use_map(r, m);
    ck_assert_ptr_eq(router_map(r), m);
    struct route rt;
    router_route(r, "c:1", 3, &rt);
    ck_assert_int_eq(rt.pool, CFG_POOL_COLD);
    ck_assert_int_eq(rt.owner, 4);
    router_route(r, "k", 1, &rt);
    ck_assert_int_eq(rt.pool, CFG_POOL_HOT);
    uint32_t i = (uint32_t)(rt.place >> 58);
    ck_assert_int_eq(rt.owner, (int)HOT[i % 3]);
    ck_assert_uint_eq(rt.leaf, i);
    ck_assert_uint_eq(rt.bits, 6);
    ck_assert_uint_eq(router_generation(r, CFG_POOL_HOT), 10);
    int other = (int)HOT[(i + 1) % 3];
    ck_assert_int_eq(router_moved(r, CFG_POOL_HOT, i, 6, other, 9), 0);
    ck_assert_int_eq(router_moved(r, CFG_POOL_HOT, i, 6, other, 11), 1);
    router_route(r, "k", 1, &rt);
    ck_assert_int_eq(rt.owner, other);
    ck_assert_int_eq(router_owner(r, CFG_POOL_HOT, rt.place), other);
    ck_assert_int_eq(router_moved(r, CFG_POOL_HOT, i, 6, -1, 12), HKV_EINVAL);
    free(t);
    router_destroy(&r); /* frees the map */
    cfg_destroy(&c);
}
END_TEST

Suite *router_map_suite(void)
{
    Suite *s = suite_create("router_map");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"route", keys_route_to_the_owner_number_their_leaf_names},
        {"refuse_table", an_invalid_table_is_refused_and_the_old_copy_stays},
        {"moved_epoch", newer_moved_overrides_its_leaf_older_or_equal_is_ignored},
        {"override_life", override_kept_until_the_copy_reaches_its_epoch},
        {"override_overlap", a_wider_newer_moved_replaces_the_overrides_it_covers},
        {"moved_refused", moved_to_an_unknown_owner_or_a_bad_leaf_is_refused},
        {"segment", copy_taken_from_the_segment_only_when_its_revision_moves},
        {"router", router_in_cluster_mode_routes_and_follows_moved_by_epoch},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
