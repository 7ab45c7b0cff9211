/*
 * check_rifl_move.c - completion records travelling with a leaf
 * (server/owner/owner_rifl.h rifl_each, rifl_merge): every record is
 * walked; a merged record answers a retry at the receiver, without its
 * ticket; a record the receiver has is kept; of two incarnations of one
 * writer the live one (by the receiver's links) wins, and with no link
 * both are kept until a request of one arrives; lost marks travel.
 */
#include <check.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/owner/owner_rifl.h"

static struct rifl *a, *b;

static void setup(void)
{
    ck_assert_int_eq(rifl_create(100, &a), HKV_OK);
    ck_assert_int_eq(rifl_create(100, &b), HKV_OK);
}

static void teardown(void)
{
    rifl_destroy(&a);
    rifl_destroy(&b);
}

static void put(struct rifl *r, uint32_t w, uint64_t inc, uint64_t seq, int64_t value)
{
    struct rifl_result res = {.type = WIRE_INT, .value = value, .version = 10 + seq,
                              .ticket = 77};
    ck_assert_int_eq(rifl_put(r, w, inc, seq, &res), HKV_OK);
}

struct got {
    int n;
    uint32_t w[16];
    uint64_t seq[16];
};

static void each(void *arg, uint32_t w, uint64_t inc, uint64_t seq, const struct rifl_result *r)
{
    struct got *g = arg;
    if (g->n < 16) {
        g->w[g->n] = w;
        g->seq[g->n] = seq;
    }
    g->n++;
}

static void merge_all(void *arg, uint32_t w, uint64_t inc, uint64_t seq,
                      const struct rifl_result *r)
{
    rifl_merge(arg, w, inc, seq, r, 0);
}

START_TEST(every_record_is_walked_and_merged_records_answer_retries)
{
    put(a, 1, 100, 5, 50);
    put(a, 1, 100, 6, 60);
    put(a, 4097, 200, 9, 90); /* another host's edge: host 1 << 12 | 1 */
    struct got g = {0};
    rifl_each(a, each, &g);
    ck_assert_int_eq(g.n, 3);
    rifl_each(a, merge_all, b);
    const struct rifl_result *r = rifl_get(b, 1, 100, 6);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->value, 60);
    ck_assert_uint_eq(r->ticket, 0); /* committed at the receiver */
    ck_assert_ptr_nonnull(rifl_get(b, 4097, 200, 9));
}
END_TEST

START_TEST(a_record_the_receiver_has_is_kept)
{
    put(b, 1, 100, 5, 555);
    struct rifl_result res = {.type = WIRE_INT, .value = 50};
    ck_assert_int_eq(rifl_merge(b, 1, 100, 5, &res, 0), HKV_EEXIST);
    ck_assert_int_eq(rifl_get(b, 1, 100, 5)->value, 555);
}
END_TEST

START_TEST(the_live_incarnation_wins)
{
    put(b, 1, 100, 5, 1); /* the receiver knows incarnation 100 */
    struct rifl_result res = {.type = WIRE_INT, .value = 2};
    /* its link says 100 lives: the sender's 300 is a dead process's */
    ck_assert_int_eq(rifl_merge(b, 1, 300, 7, &res, 100), HKV_EEXIST);
    ck_assert_ptr_nonnull(rifl_get(b, 1, 100, 5));
    /* its link says 300 lives: taken, 100's records go */
    ck_assert_int_eq(rifl_merge(b, 1, 300, 7, &res, 300), HKV_OK);
    ck_assert_ptr_nonnull(rifl_get(b, 1, 300, 7));
    ck_assert_ptr_null(rifl_get(b, 1, 100, 5));
    /* no link: neither can be told dead, both are kept */
    ck_assert_int_eq(rifl_merge(b, 1, 400, 8, &res, 0), HKV_OK);
    ck_assert_ptr_nonnull(rifl_get(b, 1, 400, 8));
    ck_assert_ptr_nonnull(rifl_get(b, 1, 300, 7));
    /* a request of 400 proves 300 gone; 400's merged record is its own now */
    rifl_ack(b, 1, 400, 1);
    ck_assert_ptr_nonnull(rifl_get(b, 1, 400, 8));
    ck_assert_ptr_null(rifl_get(b, 1, 300, 7));
}
END_TEST

/* The review's case: the receiver holds the CURRENT process's records and
 * has no link from it just now; a record of an older process of the same
 * writer arrives with a leaf.  Nothing of the current one is forgotten. */
START_TEST(an_older_incarnations_record_forgets_nothing_of_the_current_one)
{
    put(b, 1, 500, 40, 4); /* current process, 500 */
    struct rifl_result res = {.type = WIRE_INT, .value = 1};
    ck_assert_int_eq(rifl_merge(b, 1, 100, 3, &res, 0), HKV_OK); /* old process 100 */
    ck_assert_int_eq(rifl_get(b, 1, 500, 40)->value, 4);
    rifl_ack(b, 1, 500, 1); /* 500 writes again: 100 is gone for good */
    ck_assert_int_eq(rifl_get(b, 1, 500, 40)->value, 4);
    ck_assert_ptr_null(rifl_get(b, 1, 100, 3));
    struct rifl_stats st;
    rifl_stats(b, &st);
    ck_assert_uint_eq(st.records, 1);
}
END_TEST

struct marks {
    int n;
    uint64_t mark;
};

static void each_mark(void *arg, uint32_t w, uint64_t inc, uint64_t seq,
                      const struct rifl_result *r)
{
    struct marks *m = arg;
    if (r == NULL) {
        m->n++;
        m->mark = seq;
    }
}

/* A record the source's bound evicted before the move: its mark travels,
 * so a retry of it at the receiver is "unknown", not applied again. */
START_TEST(a_lost_mark_travels_with_the_records)
{
    rifl_set_max(a, 2);
    for (uint64_t s = 1; s <= 4; s++)
        put(a, 1, 100, s, (int64_t)s); /* 1 and 2 evicted */
    struct marks m = {0};
    rifl_each(a, each_mark, &m);
    ck_assert_int_eq(m.n, 1);
    ck_assert_uint_eq(m.mark, 2);
    rifl_each(a, merge_all, b);
    ck_assert(rifl_unknown(b, 1, 100, 2));
    ck_assert(rifl_unknown(b, 1, 100, 1));
    ck_assert_ptr_nonnull(rifl_get(b, 1, 100, 3));
    ck_assert(!rifl_unknown(b, 1, 100, 5));
}
END_TEST

Suite *rifl_move_suite(void)
{
    Suite *s = suite_create("rifl_move");
    TCase *tc = tcase_create("merge");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, every_record_is_walked_and_merged_records_answer_retries);
    tcase_add_test(tc, a_record_the_receiver_has_is_kept);
    tcase_add_test(tc, the_live_incarnation_wins);
    tcase_add_test(tc, an_older_incarnations_record_forgets_nothing_of_the_current_one);
    tcase_add_test(tc, a_lost_mark_travels_with_the_records);
    suite_add_tcase(s, tc);
    return s;
}
