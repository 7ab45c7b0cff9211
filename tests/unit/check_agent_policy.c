/*
 * check_agent_policy.c - the rule of automatic moves (agent_policy.h,
 * apol_decide) as a pure function: every rule with its boundary.
 *
 *   - switched off, or an owner under the threshold: nothing;
 *   - a persist backlog that grows counts as overloaded (from
 *     APOL_BACKLOG_MIN keys on);
 *   - one key with >= 50 % of the busiest leaf's work: refused, not split;
 *   - both halves with >= 25 %: split first, the busier half to move; less:
 *     the leaf moves whole; a leaf at CMAP_MAX_BITS is never split;
 *   - the target is the least busy live, known owner of the pool, under the
 *     threshold, with room; none: nothing;
 *   - an owner with a move under way sheds nothing more;
 *   - cool-downs: an owner cooling sheds nothing, a leaf cooling is passed
 *     over for the next busiest.
 */
#include <check.h>

#include "server/agent/agent_policy.h"
#include "server/core/cmap.h"

static const struct apol_cfg CFG = {.on = 1, .busy_pm = 700, .split_pct = 25, .hot_pct = 50};
#define NOW 1000000

/* owners 1 (busy, the source), 2 (idle), 3 (half busy), all hot, live, known */
static struct apol_owner ow[3];
static struct apol_leaf lv[3];

static void setup(void)
{
    for (int i = 0; i < 3; i++)
        ow[i] = (struct apol_owner){.number = (unsigned)i + 1, .pool = 0, .live = 1, .fresh = 1};
    ow[0].busy = 900;
    ow[1].busy = 100;
    ow[2].busy = 500;
    /* leaves of owner 1: 3-0 (busiest, halves 60/40), 3-1, 3-2 */
    for (int i = 0; i < 3; i++)
        lv[i] = (struct apol_leaf){.load = {.leaf = {0, 3, (uint32_t)i << 29}}};
    lv[0].load.work = 1000;
    lv[0].load.half[0] = 600;
    lv[0].load.half[1] = 400;
    lv[0].load.has_key = true;
    lv[0].load.key = wire_cstr("user:7");
    lv[0].load.topwork = 100;
    lv[1].load.work = 500;
    lv[1].load.half[0] = 500;
    lv[2].load.work = 10;
}

static struct apol_decision decide(void)
{
    struct apol_decision d;
    apol_decide(&CFG, ow, 3, 0, lv, 3, NOW, &d);
    return d;
}

START_TEST(switched_off_it_decides_nothing)
{
    struct apol_cfg off = CFG;
    off.on = 0;
    struct apol_decision d;
    apol_decide(&off, ow, 3, 0, lv, 3, NOW, &d);
    ck_assert_int_eq(d.kind, APOL_NONE);
    ck_assert_str_eq(d.why, "auto-moves is off");
    ck_assert_int_eq(decide().kind, APOL_SPLIT); /* the same inputs, switched on */
}
END_TEST

START_TEST(an_owner_at_or_under_the_threshold_sheds_nothing)
{
    ow[0].busy = 700;
    ck_assert_int_eq(decide().kind, APOL_NONE);
    ow[0].busy = 701;
    ck_assert_int_ne(decide().kind, APOL_NONE);
    ow[0].fresh = 0; /* no recent report: unknown, not busy */
    ck_assert_int_eq(decide().kind, APOL_NONE);
}
END_TEST

START_TEST(a_growing_persist_backlog_counts_as_overloaded)
{
    ow[0].busy = 100;
    ow[0].backlog = 5000;
    ow[0].backlog_prev = 4000;
    ck_assert(apol_overloaded(&CFG, &ow[0]));
    ck_assert_int_eq(decide().kind, APOL_SPLIT);
    ow[0].backlog_prev = 5000; /* not growing */
    ck_assert(!apol_overloaded(&CFG, &ow[0]));
    ow[0].backlog = APOL_BACKLOG_MIN - 1; /* growing but small */
    ow[0].backlog_prev = 0;
    ck_assert(!apol_overloaded(&CFG, &ow[0]));
    ck_assert_int_eq(decide().kind, APOL_NONE);
}
END_TEST

START_TEST(a_leaf_one_key_carries_half_of_is_refused_not_split)
{
    lv[0].load.topwork = 500; /* exactly 50 % */
    struct apol_decision d = decide();
    ck_assert_int_eq(d.kind, APOL_REFUSE);
    ck_assert_uint_eq(d.leaf.start, 0);
    ck_assert_uint_eq(d.leaf.bits, 3);
    ck_assert_uint_eq(d.share_pct, 50);
    lv[0].load.topwork = 499; /* under: the halves decide */
    ck_assert_int_eq(decide().kind, APOL_SPLIT);
    lv[0].load.topwork = 1000;
    lv[0].load.has_key = false; /* no key known: never refused */
    ck_assert_int_eq(decide().kind, APOL_SPLIT);
}
END_TEST

START_TEST(halves_of_25_percent_each_split_first_and_the_busier_half_moves)
{
    lv[0].load.half[0] = 250;
    lv[0].load.half[1] = 750;
    struct apol_decision d = decide();
    ck_assert_int_eq(d.kind, APOL_SPLIT);
    ck_assert_uint_eq(d.to, 2);
    ck_assert_uint_eq(d.half.bits, 4);
    ck_assert_uint_eq(d.half.start, 1u << 28); /* the second half, the busier */
    ck_assert_uint_eq(d.share_pct, 25);
    lv[0].load.half[0] = 700; /* first half busier */
    lv[0].load.half[1] = 300;
    d = decide();
    ck_assert_int_eq(d.kind, APOL_SPLIT);
    ck_assert_uint_eq(d.half.start, 0);
    lv[0].load.half[0] = 249; /* under 25 %: moved whole */
    lv[0].load.half[1] = 751;
    d = decide();
    ck_assert_int_eq(d.kind, APOL_MOVE);
    ck_assert_uint_eq(d.leaf.bits, 3);
    ck_assert_uint_eq(d.to, 2);
    lv[0].load.half[0] = lv[0].load.half[1] = 0; /* halves unknown (deep leaf) */
    ck_assert_int_eq(decide().kind, APOL_MOVE);
    lv[0].load.half[0] = lv[0].load.half[1] = 500;
    lv[0].load.leaf = (struct hand_leaf){0, CMAP_MAX_BITS, 0};
    ck_assert_int_eq(decide().kind, APOL_MOVE);
}
END_TEST

START_TEST(the_target_is_the_least_busy_owner_that_can_take_it)
{
    ck_assert_uint_eq(decide().to, 2);
    ow[1].live = 0;
    ck_assert_uint_eq(decide().to, 3);
    ow[1].live = 1;
    ow[1].fresh = 0;
    ck_assert_uint_eq(decide().to, 3);
    ow[1].fresh = 1;
    ow[1].incoming = 2; /* no free slot */
    ck_assert_uint_eq(decide().to, 3);
    ow[1].incoming = 0;
    ow[1].pool = 1; /* another pool */
    ck_assert_uint_eq(decide().to, 3);
    ow[1].pool = 0;
    ow[1].backlog = 9000; /* its disk falls behind */
    ow[1].backlog_prev = 8000;
    ck_assert_uint_eq(decide().to, 3);
    ow[1].backlog_prev = 9000;
    ow[2].busy = 100; /* a tie: the lower number */
    ck_assert_uint_eq(decide().to, 2);
    ow[1].busy = 700; /* at the threshold: not a target */
    ow[2].busy = 700;
    struct apol_decision d = decide();
    ck_assert_int_eq(d.kind, APOL_NONE);
    ck_assert_ptr_nonnull(d.why);
}
END_TEST

START_TEST(an_owner_with_a_move_under_way_sheds_nothing_more)
{
    ow[0].outgoing = 1;
    struct apol_decision d = decide();
    ck_assert_int_eq(d.kind, APOL_NONE);
    ck_assert_str_eq(d.why, "a move from the owner is under way");
}
END_TEST

START_TEST(cool_downs_hold_the_owner_and_pass_over_the_leaf)
{
    ow[0].cool_until = NOW + 1;
    ck_assert_int_eq(decide().kind, APOL_NONE);
    ow[0].cool_until = NOW; /* over */
    ck_assert_int_eq(decide().kind, APOL_SPLIT);
    lv[0].cool_until = NOW + 5000; /* the busiest leaf cools: the next one goes */
    struct apol_decision d = decide();
    ck_assert_int_eq(d.kind, APOL_MOVE); /* its halves are 100/0 */
    ck_assert_uint_eq(d.leaf.start, 1u << 29);
    lv[1].cool_until = lv[2].cool_until = NOW + 5000;
    ck_assert_int_eq(decide().kind, APOL_NONE);
}
END_TEST

Suite *agent_policy_suite(void)
{
    Suite *s = suite_create("agent_policy");
    TCase *tc = tcase_create("when");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, switched_off_it_decides_nothing);
    tcase_add_test(tc, an_owner_at_or_under_the_threshold_sheds_nothing);
    tcase_add_test(tc, a_growing_persist_backlog_counts_as_overloaded);
    suite_add_tcase(s, tc);
    tc = tcase_create("what");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, a_leaf_one_key_carries_half_of_is_refused_not_split);
    tcase_add_test(tc, halves_of_25_percent_each_split_first_and_the_busier_half_moves);
    suite_add_tcase(s, tc);
    tc = tcase_create("where");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, the_target_is_the_least_busy_owner_that_can_take_it);
    suite_add_tcase(s, tc);
    tc = tcase_create("how often");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, an_owner_with_a_move_under_way_sheds_nothing_more);
    tcase_add_test(tc, cool_downs_hold_the_owner_and_pass_over_the_leaf);
    suite_add_tcase(s, tc);
    return s;
}
