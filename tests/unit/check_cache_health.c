/*
 * check_cache_health.c - owners' health words in the colo segment
 * (server/colo/cache_health.h): a request unanswered past the allowance
 * marks the owner silent once per episode, unless an answer came since it
 * was sent; any answer clears the mark; a mark is trusted only while a
 * probe was claimed within the trust window; one probe claim per interval;
 * a scribbled word reads as "answering" and is replaced by the next writer.
 */
#include <check.h>
#include <stdint.h>

#include "server/colo/cache.h"
#include "server/colo/cache_health.h"
#include "server/colo/cache_test.h"

static struct cache *mk(void)
{
    struct cache_opts o = {.bytes = 2 << 20, .max_value = 4096, .hot_sample = 1};
    struct cache *c = NULL;
    ck_assert_int_eq(cache_create(&o, &c), HKV_OK);
    ck_assert_int_eq(cache_attach(c), HKV_OK);
    return c;
}

static uint64_t marks(struct cache *c)
{
    struct cache_stats st;
    cache_stats(c, &st);
    return st.counters[CACHE_CTR_owner_silent_marks];
}

START_TEST(unanswered_request_marks_once_and_an_answer_clears)
{
    struct cache *c = mk();
    int64_t now = 5000000;
    struct cache_health_view v;
    cache_health_get(c, 3, now, &v);
    ck_assert_int_eq(v.marked, 0); /* a new segment: answering */
    ck_assert_int_eq(cache_health_silent(c, 3, now, 300), 0);
    ck_assert_int_eq(cache_health_unanswered(c, 3, now - 1200, now), 1);
    ck_assert_int_eq(cache_health_unanswered(c, 3, now - 1000, now + 5), 0); /* same episode */
    ck_assert_uint_eq(marks(c), 1);
    cache_health_get(c, 3, now, &v);
    ck_assert(v.marked && v.since == now && v.episode == 1 && v.probed == now);
    ck_assert_int_eq(cache_health_silent(c, 3, now + 100, 300), 1);
    ck_assert_int_eq(cache_health_silent(c, 2, now + 100, 300), 0); /* only that owner */
    /* nobody probes: the mark stops being believed */
    ck_assert_int_eq(cache_health_silent(c, 3, now + 301, 300), 0);
    ck_assert_int_eq(cache_health_probe_claim(c, 3, now + 50, 100), 0);
    ck_assert_int_eq(cache_health_probe_claim(c, 3, now + 301, 100), 1);
    ck_assert_int_eq(cache_health_probe_claim(c, 3, now + 302, 100), 0); /* one per interval */
    ck_assert_int_eq(cache_health_silent(c, 3, now + 400, 300), 1);
    /* any answer clears it */
    ck_assert_int_eq(cache_health_answered(c, 3, now + 500), 1);
    ck_assert_int_eq(cache_health_answered(c, 3, now + 501), 0);
    ck_assert_int_eq(cache_health_silent(c, 3, now + 502, 300), 0);
    /* a request sent before that answer does not mark it again */
    ck_assert_int_eq(cache_health_unanswered(c, 3, now + 490, now + 1700), 0);
    /* one sent after it, unanswered, does: a second episode */
    ck_assert_int_eq(cache_health_unanswered(c, 3, now + 600, now + 1800), 1);
    cache_health_get(c, 3, now + 1800, &v);
    ck_assert(v.marked && v.episode == 2);
    ck_assert_uint_eq(marks(c), 2);
    /* out of range, or no segment: answering, nothing written */
    ck_assert_int_eq(cache_health_unanswered(c, CACHE_HEALTH_OWNERS, 0, now), 0);
    ck_assert_int_eq(cache_health_silent(NULL, 0, now, 300), 0);
    cache_destroy(&c);
}
END_TEST

START_TEST(scribbled_words_read_as_answering_and_are_replaced)
{
    struct cache *c = mk();
    int64_t now = 7000000;
    ck_assert_int_eq(cache_health_unanswered(c, 1, now - 2000, now), 1);
    uint64_t *w = cache_test_health_words(c, 1);
    w[0] ^= 1ULL << 40; /* one bit of the time */
    ck_assert_int_eq(cache_health_silent(c, 1, now, 300), 0);
    struct cache_health_view v;
    cache_health_get(c, 1, now, &v);
    ck_assert_int_eq(v.marked, 0);
    ck_assert_int_eq(cache_health_unanswered(c, 1, now - 1500, now + 1), 1);
    ck_assert_int_eq(cache_health_silent(c, 1, now + 1, 300), 1);
    w[1] = 0x1234; /* the probe word: no claim known, the mark not believed */
    ck_assert_int_eq(cache_health_silent(c, 1, now + 2, 300), 0);
    ck_assert_int_eq(cache_health_probe_claim(c, 1, now + 2, 100), 1);
    ck_assert_int_eq(cache_health_silent(c, 1, now + 3, 300), 1);
    /* a time far in the future is not believed either */
    ck_assert_int_eq(cache_health_answered(c, 1, now + 100000), 1);
    cache_health_get(c, 1, now, &v);
    ck_assert(!v.marked && v.since == 0);
    cache_destroy(&c);
}
END_TEST

Suite *cache_health_suite(void)
{
    Suite *s = suite_create("cache_health");
    TCase *tc = tcase_create("marks");
    tcase_add_test(tc, unanswered_request_marks_once_and_an_answer_clears);
    tcase_add_test(tc, scribbled_words_read_as_answering_and_are_replaced);
    suite_add_tcase(s, tc);
    return s;
}
