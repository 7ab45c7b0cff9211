/* check_handover_cas.c - the pure parts of a planned hand-over (CLUSTER.md §7):
 * the operator's request value (server/agent/agent_handover.h), the agent's
 * check and CAS of LEAF_HANDOVER written out as etcd txn lines, and the
 * owner's verdict on the CAS's answer or a read's truth
 * (server/owner/owner_handover.h): when the parked writes go as MOVED,
 * when they go on here, when the leaf stays fenced. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "config/cfg.h"
#include "proto/hkv.h"
#include "proto/wire_hand.h"
#include "server/agent/agent_handover.h"
#include "server/core/cmap.h"
#include "server/owner/owner_handover.h"

#define P "/hotkvd/c1/"

START_TEST(a_handover_request_round_trips_and_a_move_request_still_reads_as_one)
{
    char buf[64];
    int kind = 0;
    unsigned to = 99;
    int n = agent_val_handover(buf, sizeof(buf), 0);
    ck_assert_str_eq(buf, "{\"handover\":true,\"to\":0}");
    ck_assert_int_eq(agent_parse_order(buf, (size_t)n, &kind, &to), HKV_OK);
    ck_assert_int_eq(kind, LEAF_ORDER_HANDOVER);
    ck_assert_uint_eq(to, 0);
    n = agent_val_handover(buf, sizeof(buf), 7);
    ck_assert_int_eq(agent_parse_order(buf, (size_t)n, &kind, &to), HKV_OK);
    ck_assert_uint_eq(to, 7);
    ck_assert_int_eq(agent_parse_order("{\"to\":3}", 8, &kind, &to), HKV_OK);
    ck_assert_int_eq(kind, LEAF_ORDER_MOVE);
    ck_assert_uint_eq(to, 3);
    /* a move needs a target; a hand-over's "handover" must be a boolean */
    ck_assert_int_eq(agent_parse_order("{\"to\":0}", 8, &kind, &to), HKV_EINVAL);
    ck_assert_int_eq(agent_parse_order("{\"handover\":1,\"to\":0}", 22, &kind, &to), HKV_EINVAL);
    ck_assert_int_eq(agent_parse_order("{\"handover\":true}", 17, &kind, &to), HKV_EINVAL);
    ck_assert_int_eq(agent_val_handover(buf, 8, 1), -1);
}
END_TEST

START_TEST(only_the_primary_hands_to_a_live_member_of_its_in_sync_set)
{
    const uint16_t isr[] = {4, 9};
    ck_assert_ptr_null(agent_handover_check(2, CMAP_SERVING, isr, 2, 2, 9, 1));
    ck_assert_str_eq(agent_handover_check(2, CMAP_MOVING, isr, 2, 2, 9, 1), "the leaf is moving");
    ck_assert_str_eq(agent_handover_check(2, CMAP_SERVING, isr, 2, 3, 9, 1),
                     "the asking owner is not the leaf's primary");
    ck_assert_str_eq(agent_handover_check(2, CMAP_SERVING, isr, 2, 2, 5, 1),
                     "the follower is not in the in-sync set");
    ck_assert_str_eq(agent_handover_check(2, CMAP_SERVING, isr, 2, 2, 9, 0),
                     "the follower is no other live owner of the pool");
    ck_assert_str_eq(agent_handover_check(2, CMAP_SERVING, isr, 2, 2, 2, 1),
                     "the follower is no other live owner of the pool");
    ck_assert_str_eq(agent_handover_check(2, CMAP_SERVING, NULL, 0, 2, 9, 1),
                     "the follower is not in the in-sync set");
}
END_TEST

START_TEST(the_new_in_sync_set_is_the_old_less_the_new_primary_in_order)
{
    const uint16_t isr[] = {4, 9, 6};
    uint16_t out[CMAP_MAX_ISR];
    ck_assert_uint_eq(agent_handover_isr(isr, 3, 9, out), 2);
    ck_assert_uint_eq(out[0], 4);
    ck_assert_uint_eq(out[1], 6);
    ck_assert_uint_eq(agent_handover_isr(isr, 1, 4, out), 0);
}
END_TEST

static void line(const char *k, size_t n, char *out, size_t cap)
{
    ck_assert_int_eq(strncmp(k, P, strlen(P)), 0);
    snprintf(out, cap, "%.*s", (int)(n - strlen(P)), k + strlen(P));
}

START_TEST(the_cas_compares_the_epoch_and_the_followers_membership)
{
    struct agent_txn t;
    char k[256];
    const uint16_t rest[] = {4, 6};
    ck_assert_int_eq(agent_txn_handover(&t, "c1", CFG_POOL_HOT, 0x40000000u, 2, 17, 9, "h1/hot/3",
                                        rest, 2), HKV_OK);
    ck_assert_uint_eq(t.ncmp, 2);
    line(t.cmp[0].key, t.cmp[0].klen, k, sizeof(k));
    ck_assert_str_eq(k, "map/hot/2-00000001");
    ck_assert_int_eq(t.cmp[0].target, ETCD_MOD);
    ck_assert_int_eq(t.cmp[0].result, ETCD_EQUAL);
    ck_assert_int_eq(t.cmp[0].n, 17);
    line(t.cmp[1].key, t.cmp[1].klen, k, sizeof(k));
    ck_assert_str_eq(k, "members/h1/hot/3");
    ck_assert_int_eq(t.cmp[1].target, ETCD_VERSION);
    ck_assert_int_eq(t.cmp[1].result, ETCD_GREATER);
    ck_assert_uint_eq(t.nok, 1);
    ck_assert_int_eq(t.ok[0].kind, ETCD_OP_PUT);
    ck_assert_int_eq(t.ok[0].lease, 0);
    ck_assert_str_eq(t.ok[0].value, "{\"owner\":9,\"state\":\"serving\",\"isr\":[4,6]}");
    ck_assert_uint_eq(t.ok[0].vlen, strlen(t.ok[0].value));
    ck_assert_uint_eq(t.nfail, 1);
    ck_assert_int_eq(t.fail[0].kind, ETCD_OP_RANGE);
    /* the last follower promoted: no isr at all (the map's own form) */
    ck_assert_int_eq(agent_txn_handover(&t, "c1", CFG_POOL_HOT, 0, 0, 17, 9, "h1/hot/3", NULL, 0),
                     HKV_OK);
    ck_assert_str_eq(t.ok[0].value, "{\"owner\":9,\"state\":\"serving\"}");
    ck_assert_int_eq(agent_txn_handover(&t, "c1", CFG_POOL_HOT, 0, 0, 0, 9, "h1/hot/3", NULL, 0),
                     HKV_EINVAL);
    ck_assert_int_eq(agent_txn_handover(&t, "c1", CFG_POOL_HOT, 0, 0, 17, 9, NULL, NULL, 0),
                     HKV_EINVAL);
    ck_assert_int_eq(agent_txn_handover(&t, "c1", CFG_POOL_HOT, 1, 1, 17, 9, "h1/hot/3", NULL, 0),
                     HKV_EINVAL);
}
END_TEST

static struct hand_msg reply(int status, int exists, unsigned owner, int64_t at)
{
    struct hand_msg m = {.type = LEAF_REPLY, .id = 1,
                         .u.reply = {.status = status, .epoch = status == LEAF_ST_OK ? at : 0,
                                     .exists = exists, .owner = owner,
                                     .state = CMAP_SERVING, .at = at}};
    return m;
}

START_TEST(the_cas_answer_decides_release_unfence_or_stay_fenced)
{
    struct hand_msg r = reply(LEAF_ST_OK, 1, 9, 20);
    ck_assert_int_eq(ohandover_verdict(&r, 1, 2, 9, 17), OHV_DONE);
    r = reply(LEAF_ST_REFUSED, 0, 0, 0);
    ck_assert_int_eq(ohandover_verdict(&r, 1, 2, 9, 17), OHV_BACK);
    r = reply(LEAF_ST_UNKNOWN, 0, 0, 0);
    ck_assert_int_eq(ohandover_verdict(&r, 1, 2, 9, 17), OHV_AGAIN);
    /* lost: an in-sync CAS came first (still ours), or someone promoted it */
    r = reply(LEAF_ST_LOST, 1, 2, 18);
    ck_assert_int_eq(ohandover_verdict(&r, 1, 2, 9, 17), OHV_BACK);
    r = reply(LEAF_ST_LOST, 1, 9, 18);
    ck_assert_int_eq(ohandover_verdict(&r, 1, 2, 9, 17), OHV_DONE);
    r = reply(LEAF_ST_LOST, 1, 5, 18);
    ck_assert_int_eq(ohandover_verdict(&r, 1, 2, 9, 17), OHV_MOVED_ON);
    r = reply(LEAF_ST_LOST, 0, 0, 0);
    ck_assert_int_eq(ohandover_verdict(&r, 1, 2, 9, 17), OHV_MOVED_ON);
}
END_TEST

START_TEST(an_in_doubt_cas_is_settled_by_the_truth_only)
{
    struct hand_msg r = reply(LEAF_ST_UNKNOWN, 0, 0, 0);
    ck_assert_int_eq(ohandover_verdict(&r, 0, 2, 9, 17), OHV_AGAIN);
    r = reply(LEAF_ST_REFUSED, 0, 0, 0);
    ck_assert_int_eq(ohandover_verdict(&r, 0, 2, 9, 17), OHV_AGAIN);
    r = reply(LEAF_ST_OK, 1, 9, 21);
    ck_assert_int_eq(ohandover_verdict(&r, 0, 2, 9, 17), OHV_DONE);
    r = reply(LEAF_ST_OK, 1, 2, 17);
    ck_assert_int_eq(ohandover_verdict(&r, 0, 2, 9, 17), OHV_BACK);
    /* the follower at an epoch not after ours is not our CAS's doing */
    r = reply(LEAF_ST_OK, 1, 9, 17);
    ck_assert_int_eq(ohandover_verdict(&r, 0, 2, 9, 17), OHV_MOVED_ON);
}
END_TEST

Suite *handover_cas_suite(void)
{
    Suite *s = suite_create("handover_cas");
    TCase *tc = tcase_create("agent");
    tcase_add_test(tc, a_handover_request_round_trips_and_a_move_request_still_reads_as_one);
    tcase_add_test(tc, only_the_primary_hands_to_a_live_member_of_its_in_sync_set);
    tcase_add_test(tc, the_new_in_sync_set_is_the_old_less_the_new_primary_in_order);
    tcase_add_test(tc, the_cas_compares_the_epoch_and_the_followers_membership);
    suite_add_tcase(s, tc);
    tc = tcase_create("owner");
    tcase_add_test(tc, the_cas_answer_decides_release_unfence_or_stay_fenced);
    tcase_add_test(tc, an_in_doubt_cas_is_settled_by_the_truth_only);
    suite_add_tcase(s, tc);
    return s;
}
