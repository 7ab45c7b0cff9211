/*
 * check_rifl_move.c - completion records travelling with a leaf
 * (server/owner/owner_rifl.h rifl_each, rifl_merge): every record is
 * walked; a merged record answers a retry at the receiver, without its
 * ticket; a record the receiver has is kept; of two incarnations of one
 * writer the live one (by the receiver's links) wins, and with no link the
 * sender's does.
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
    /* no link: the sender's wins */
    ck_assert_int_eq(rifl_merge(b, 1, 400, 8, &res, 0), HKV_OK);
    ck_assert_ptr_nonnull(rifl_get(b, 1, 400, 8));
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
    suite_add_tcase(s, tc);
    return s;
}
