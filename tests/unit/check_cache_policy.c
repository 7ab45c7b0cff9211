/* check_cache_policy.c - the edge's cache policy (server/edge/edge_cache_policy.h)
 * as the pure functions it is: an entry's fresh and keep times from its
 * class, the hot-key exception of a fresh-0 class, the cap by the key's own
 * expiry, the fill horizon, negative caching, and how a read treats what it
 * finds (fresh, stale and served while one refresh runs, late: waited for
 * unless the owner is known not to answer).  The numbers are the class
 * options a config would give (fresh 1 s, keep 60 s, miss-wait 200 ms). */
#include <check.h>
#include <stdint.h>

#include "server/edge/edge_cache_policy.h"

#define NOW 1000000   /* mono ms */
#define UNIX 50000000 /* unix ms */
#define A 200         /* the refresh allowance (miss-wait) */

struct life {
    int ok;
    int64_t fresh_until, keep_until;
};

static struct life life(int64_t fresh, int64_t keep, int hot, int64_t base, int64_t expire_at)
{
    struct life l = {0, -1, -1};
    l.ok = edge_cache_lifetimes(fresh, keep, hot, base, NOW, expire_at, UNIX, &l.fresh_until,
                                &l.keep_until);
    return l;
}

START_TEST(fresh_counts_from_the_base_and_keep_from_now)
{
    /* a fill: base is the fetch's send time, 30 ms before the answer */
    struct life l = life(1000, 60000, 0, NOW - 30, 0);
    ck_assert(l.ok);
    ck_assert_int_eq(l.fresh_until, NOW - 30 + 1000);
    ck_assert_int_eq(l.keep_until, NOW + 60000);
    /* a push: base is its arrival */
    l = life(1000, 60000, 0, NOW, 0);
    ck_assert_int_eq(l.fresh_until, NOW + 1000);
}
END_TEST

START_TEST(no_keep_means_not_cached)
{
    struct life l = life(1000, 0, 0, NOW, 0);
    ck_assert(!l.ok);
    ck_assert_int_eq(l.fresh_until, -1); /* nothing written */
    ck_assert(!life(1000, -5, 1, NOW, 0).ok);
}
END_TEST

START_TEST(a_fresh_0_class_caches_only_hot_keys_and_them_already_stale)
{
    ck_assert(!life(0, 60000, 0, NOW - 10, 0).ok);
    struct life l = life(0, 60000, 1, NOW - 10, 0);
    ck_assert(l.ok);
    ck_assert_int_eq(l.fresh_until, NOW - 10); /* stale the moment it is stored */
    ck_assert_int_eq(l.keep_until, NOW + 60000);
    ck_assert_int_eq(edge_cache_age(l.fresh_until, NOW, A), EDGE_CACHE_STALE);
    /* hot does not matter for a class with a fresh time */
    struct life cold = life(1000, 60000, 0, NOW, 0), hot = life(1000, 60000, 1, NOW, 0);
    ck_assert(cold.ok && hot.ok);
    ck_assert_int_eq(cold.fresh_until, hot.fresh_until);
    ck_assert_int_eq(cold.keep_until, hot.keep_until);
}
END_TEST

START_TEST(the_keys_expiry_caps_keep_and_fresh)
{
    /* expires in 5 s: kept 5 s, fresh still 1 s */
    struct life l = life(1000, 60000, 0, NOW, UNIX + 5000);
    ck_assert(l.ok);
    ck_assert_int_eq(l.keep_until, NOW + 5000);
    ck_assert_int_eq(l.fresh_until, NOW + 1000);
    /* expires in 300 ms: both end then */
    l = life(1000, 60000, 0, NOW, UNIX + 300);
    ck_assert(l.ok);
    ck_assert_int_eq(l.keep_until, NOW + 300);
    ck_assert_int_eq(l.fresh_until, NOW + 300);
    /* an expiry further than keep changes nothing */
    l = life(1000, 60000, 0, NOW, UNIX + 3600000);
    ck_assert_int_eq(l.keep_until, NOW + 60000);
    ck_assert_int_eq(l.fresh_until, NOW + 1000);
}
END_TEST

START_TEST(an_already_expired_key_is_not_cached)
{
    ck_assert(!life(1000, 60000, 0, NOW, UNIX).ok);
    ck_assert(!life(1000, 60000, 0, NOW, UNIX - 1).ok);
    ck_assert(life(1000, 60000, 0, NOW, UNIX + 1).ok);
}
END_TEST

START_TEST(the_wall_clock_is_only_read_for_a_key_with_an_expiry)
{
    int64_t fu, ku;
    /* a unix_now of 0 (not read) is harmless without an expiry */
    ck_assert(edge_cache_lifetimes(1000, 60000, 0, NOW, NOW, 0, 0, &fu, &ku));
    ck_assert_int_eq(ku, NOW + 60000);
}
END_TEST

START_TEST(answers_to_fetches_older_than_the_horizon_are_not_stored)
{
    ck_assert(edge_cache_fill_in_horizon(NOW, NOW));
    ck_assert(edge_cache_fill_in_horizon(NOW - EDGE_FILL_HORIZON_MS + 1, NOW));
    ck_assert(!edge_cache_fill_in_horizon(NOW - EDGE_FILL_HORIZON_MS, NOW));
    ck_assert(!edge_cache_fill_in_horizon(NOW - 3 * EDGE_FILL_HORIZON_MS, NOW));
}
END_TEST

START_TEST(an_absence_is_cached_for_negative_ttl_from_the_send)
{
    int64_t until = -1;
    ck_assert(edge_cache_negative_until(5000, NOW - 100, NOW, &until));
    ck_assert_int_eq(until, NOW - 100 + 5000);
    /* its ttl already over when the answer came: not cached */
    until = -1;
    ck_assert(!edge_cache_negative_until(5000, NOW - 5000, NOW, &until));
    ck_assert(!edge_cache_negative_until(5000, NOW - 9000, NOW, &until));
    ck_assert_int_eq(until, -1);
    /* negative-ttl 0: never */
    ck_assert(!edge_cache_negative_until(0, NOW, NOW, &until));
    ck_assert_int_eq(until, -1);
}
END_TEST

START_TEST(a_read_before_fresh_until_is_fresh)
{
    ck_assert_int_eq(edge_cache_age(NOW + 1, NOW, A), EDGE_CACHE_FRESH);
    ck_assert_int_eq(edge_cache_age(NOW + 100000, NOW, A), EDGE_CACHE_FRESH);
    ck_assert(edge_cache_servable(NOW + 1, NOW, A));
}
END_TEST

START_TEST(stale_by_less_than_the_allowance_is_served_stale)
{
    ck_assert_int_eq(edge_cache_age(NOW, NOW, A), EDGE_CACHE_STALE); /* fresh_until is exclusive */
    ck_assert_int_eq(edge_cache_age(NOW - A + 1, NOW, A), EDGE_CACHE_STALE);
    ck_assert(edge_cache_servable(NOW - A + 1, NOW, A));
}
END_TEST

START_TEST(stale_by_the_allowance_or_more_must_be_refreshed)
{
    ck_assert_int_eq(edge_cache_age(NOW - A, NOW, A), EDGE_CACHE_LATE);
    ck_assert_int_eq(edge_cache_age(NOW - 60000, NOW, A), EDGE_CACHE_LATE);
    ck_assert(!edge_cache_servable(NOW - A, NOW, A));
    /* with no allowance, stale is late at once */
    ck_assert_int_eq(edge_cache_age(NOW, NOW, 0), EDGE_CACHE_LATE);
    ck_assert_int_eq(edge_cache_age(NOW + 1, NOW, 0), EDGE_CACHE_FRESH);
}
END_TEST

START_TEST(a_late_entry_waits_unless_the_owner_is_known_not_to_answer)
{
    /* no fetch out, owner answering: the reader waits */
    ck_assert(!edge_cache_late_serves(0, -1, A));
    /* a fetch out for less than A: still waits */
    ck_assert(!edge_cache_late_serves(0, 0, A));
    ck_assert(!edge_cache_late_serves(0, A - 1, A));
    /* out for A already: served stale at once */
    ck_assert(edge_cache_late_serves(0, A, A));
    ck_assert(edge_cache_late_serves(0, 10 * A, A));
    /* marked silent in the colo: served, fetch or not */
    ck_assert(edge_cache_late_serves(1, -1, A));
    ck_assert(edge_cache_late_serves(1, 0, A));
}
END_TEST

START_TEST(a_stored_value_goes_fresh_stale_late_as_time_passes)
{
    /* filled from a fetch sent 20 ms before the answer */
    struct life l = life(1000, 60000, 0, NOW - 20, 0);
    ck_assert(l.ok);
    int64_t t = NOW;
    ck_assert_int_eq(edge_cache_age(l.fresh_until, t, A), EDGE_CACHE_FRESH);
    t = NOW - 20 + 999;
    ck_assert_int_eq(edge_cache_age(l.fresh_until, t, A), EDGE_CACHE_FRESH);
    t = NOW - 20 + 1000;
    ck_assert_int_eq(edge_cache_age(l.fresh_until, t, A), EDGE_CACHE_STALE);
    t = NOW - 20 + 1000 + A;
    ck_assert_int_eq(edge_cache_age(l.fresh_until, t, A), EDGE_CACHE_LATE);
    /* the staleness bound: a value served at once is under fresh + A old */
    for (t = NOW; t < l.keep_until; t += 37)
        if (edge_cache_age(l.fresh_until, t, A) != EDGE_CACHE_LATE)
            ck_assert_int_lt(t - (NOW - 20), 1000 + A);
}
END_TEST

START_TEST(a_negative_entry_ages_by_the_same_rule)
{
    int64_t until;
    ck_assert(edge_cache_negative_until(500, NOW, NOW, &until));
    ck_assert_int_eq(edge_cache_age(until, NOW + 499, A), EDGE_CACHE_FRESH);
    ck_assert_int_eq(edge_cache_age(until, NOW + 500, A), EDGE_CACHE_STALE);
    ck_assert_int_eq(edge_cache_age(until, NOW + 500 + A, A), EDGE_CACHE_LATE);
}
END_TEST

Suite *cache_policy_suite(void)
{
    Suite *s = suite_create("cache_policy");
    TCase *tc = tcase_create("lifetimes");
    tcase_add_test(tc, fresh_counts_from_the_base_and_keep_from_now);
    tcase_add_test(tc, no_keep_means_not_cached);
    tcase_add_test(tc, a_fresh_0_class_caches_only_hot_keys_and_them_already_stale);
    tcase_add_test(tc, the_keys_expiry_caps_keep_and_fresh);
    tcase_add_test(tc, an_already_expired_key_is_not_cached);
    tcase_add_test(tc, the_wall_clock_is_only_read_for_a_key_with_an_expiry);
    suite_add_tcase(s, tc);
    tc = tcase_create("what is stored");
    tcase_add_test(tc, answers_to_fetches_older_than_the_horizon_are_not_stored);
    tcase_add_test(tc, an_absence_is_cached_for_negative_ttl_from_the_send);
    suite_add_tcase(s, tc);
    tc = tcase_create("staleness");
    tcase_add_test(tc, a_read_before_fresh_until_is_fresh);
    tcase_add_test(tc, stale_by_less_than_the_allowance_is_served_stale);
    tcase_add_test(tc, stale_by_the_allowance_or_more_must_be_refreshed);
    tcase_add_test(tc, a_late_entry_waits_unless_the_owner_is_known_not_to_answer);
    tcase_add_test(tc, a_stored_value_goes_fresh_stale_late_as_time_passes);
    tcase_add_test(tc, a_negative_entry_ages_by_the_same_rule);
    suite_add_tcase(s, tc);
    return s;
}
