/*
 * check_gcra.c - CL.THROTTLE's arithmetic (server/colo/gcra.h) against
 * redis-cell's documented behaviour: its README's example (15 burst, 30 per
 * 60 s: limit 16, remaining 15, reset 2 s), draining a burst to a limited
 * request with its retry-after, refill over time, quantities (0 peeks,
 * more than the tolerance can never pass), and that no window admits more
 * than max_burst + 1 + elapsed / interval.
 */
#include <check.h>
#include <stdint.h>

#include "server/colo/gcra.h"

#define S INT64_C(1000000000)

START_TEST(readme_example)
{
    struct gcra_limit l = {15, 30, 60 * S, 1};
    struct gcra_result r;
    int64_t now = 1000 * S;
    gcra_apply(&l, 0, now, &r);
    ck_assert_int_eq(r.limited, 0);
    ck_assert_int_eq(r.limit, 16);
    ck_assert_int_eq(r.remaining, 15);
    ck_assert_int_eq(r.retry_after_s, -1);
    ck_assert_int_eq(r.reset_after_s, 2);
    ck_assert_int_eq(r.tat, now + 2 * S);
}
END_TEST

START_TEST(burst_then_limited_then_refilled)
{
    struct gcra_limit l = {4, 1, S, 1}; /* 5 at once, then 1 a second */
    struct gcra_result r;
    int64_t now = 50 * S, tat = 0;
    for (int i = 0; i < 5; i++) {
        gcra_apply(&l, tat, now, &r);
        ck_assert_int_eq(r.limited, 0);
        ck_assert_int_eq(r.remaining, 4 - i);
        ck_assert_int_eq(r.reset_after_s, i + 1);
        tat = r.tat;
    }
    gcra_apply(&l, tat, now, &r);
    ck_assert_int_eq(r.limited, 1);
    ck_assert_int_eq(r.remaining, 0);
    ck_assert_int_eq(r.retry_after_s, 1);
    ck_assert_int_eq(r.reset_after_s, 5);
    ck_assert_int_eq(r.tat, tat); /* a limited request takes nothing */
    /* half a second on: still limited, retry within the second (truncated) */
    gcra_apply(&l, tat, now + S / 2, &r);
    ck_assert_int_eq(r.limited, 1);
    ck_assert_int_eq(r.retry_after_s, 0);
    /* one interval on: one more passes */
    gcra_apply(&l, tat, now + S, &r);
    ck_assert_int_eq(r.limited, 0);
    ck_assert_int_eq(r.remaining, 0);
    /* long idle: full again, as a new key */
    gcra_apply(&l, tat, now + 100 * S, &r);
    ck_assert_int_eq(r.limited, 0);
    ck_assert_int_eq(r.remaining, 4);
}
END_TEST

START_TEST(quantities)
{
    struct gcra_limit l = {9, 10, S, 0}; /* quantity 0: a look, nothing taken */
    struct gcra_result r;
    gcra_apply(&l, 0, 5 * S, &r);
    ck_assert_int_eq(r.limited, 0);
    ck_assert_int_eq(r.remaining, 10);
    ck_assert_int_eq(r.tat, 5 * S);
    l.quantity = 10; /* the whole tolerance at once */
    gcra_apply(&l, 0, 5 * S, &r);
    ck_assert_int_eq(r.limited, 0);
    ck_assert_int_eq(r.remaining, 0);
    l.quantity = 11; /* more than it can ever hold: limited, no retry-after */
    gcra_apply(&l, 0, 5 * S, &r);
    ck_assert_int_eq(r.limited, 1);
    ck_assert_int_eq(r.retry_after_s, -1);
    /* the largest bounds do not overflow */
    struct gcra_limit big = {GCRA_MAX_BURST, 1, GCRA_MAX_PERIOD_S * S, GCRA_MAX_QUANTITY};
    gcra_apply(&big, 0, S, &r);
    ck_assert_int_eq(r.limited, 0);
    ck_assert_int_ge(r.tat, S);
}
END_TEST

START_TEST(no_window_admits_more_than_the_limit)
{
    struct gcra_limit l = {2, 5, S, 1}; /* 3 at once, then 5 a second */
    int64_t now = S, tat = 0, admitted = 0;
    /* a request every 10 ms for 3 s */
    for (int i = 0; i < 300; i++, now += S / 100) {
        struct gcra_result r;
        gcra_apply(&l, tat, now, &r);
        if (!r.limited) {
            admitted++;
            tat = r.tat;
        }
    }
    /* 3 up front, then one per 200 ms over the 2.99 s after the first */
    ck_assert_int_le(admitted, 3 + 15);
    ck_assert_int_ge(admitted, 3 + 14);
}
END_TEST

Suite *gcra_suite(void)
{
    Suite *s = suite_create("gcra");
    TCase *tc = tcase_create("gcra");
    tcase_add_test(tc, readme_example);
    tcase_add_test(tc, burst_then_limited_then_refilled);
    tcase_add_test(tc, quantities);
    tcase_add_test(tc, no_window_admits_more_than_the_limit);
    suite_add_tcase(s, tc);
    return s;
}
