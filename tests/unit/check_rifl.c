/* check_rifl.c - the owner's completion records (server/owner/owner_rifl.h): a
 * retry finds its result, acks and new incarnations forget, the bound
 * evicts only the flooding writer's oldest. */
#include <check.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/wire.h"
#include "server/owner/owner_rifl.h"

static struct rifl_result ok_result(hkv_stamp version, const char *old)
{
    struct rifl_result r = {.type = WIRE_OK, .applied = 1, .version = version};
    if (old != NULL) {
        r.has_old = 1;
        r.old = old;
        r.oldlen = strlen(old);
    }
    return r;
}

START_TEST(retry_finds_the_recorded_result)
{
    struct rifl *r = NULL;
    ck_assert_int_eq(rifl_create(100, &r), HKV_OK);
    char old[] = "previous";
    struct rifl_result res = ok_result(77, old);
    ck_assert_int_eq(rifl_put(r, 3, 9, 1, &res), HKV_OK);
    memset(old, 'x', sizeof(old) - 1); /* the record holds its own copy */
    const struct rifl_result *got = rifl_get(r, 3, 9, 1);
    ck_assert_ptr_nonnull(got);
    ck_assert_uint_eq(got->version, 77);
    ck_assert(got->applied && got->has_old);
    ck_assert_uint_eq(got->oldlen, 8);
    ck_assert_mem_eq(got->old, "previous", 8);
    /* another seq, writer or incarnation is another request */
    ck_assert_ptr_null(rifl_get(r, 3, 9, 2));
    ck_assert_ptr_null(rifl_get(r, 4, 9, 1));
    ck_assert_ptr_null(rifl_get(r, 3, 10, 1));
    rifl_destroy(&r);
    ck_assert_ptr_null(r);
}
END_TEST

START_TEST(ack_forgets_finished_requests_only)
{
    struct rifl *r = NULL;
    ck_assert_int_eq(rifl_create(100, &r), HKV_OK);
    for (uint64_t s = 1; s <= 10; s++) {
        struct rifl_result res = {.type = WIRE_INT, .value = (int64_t)s, .version = s};
        ck_assert_int_eq(rifl_put(r, 1, 5, s, &res), HKV_OK);
    }
    rifl_ack(r, 1, 5, 7); /* 1..6 finished */
    for (uint64_t s = 1; s <= 10; s++)
        ck_assert_msg((rifl_get(r, 1, 5, s) != NULL) == (s >= 7), "seq %llu",
                      (unsigned long long)s);
    struct rifl_stats st;
    rifl_stats(r, &st);
    ck_assert_uint_eq(st.records, 4);
    ck_assert_uint_eq(st.dropped, 0); /* acked records are not "dropped" */
    /* another writer's ack touches nothing of writer 1 */
    rifl_ack(r, 2, 5, 100);
    ck_assert_ptr_nonnull(rifl_get(r, 1, 5, 7));
    rifl_destroy(&r);
}
END_TEST

START_TEST(new_incarnation_forgets_the_old_process)
{
    struct rifl *r = NULL;
    ck_assert_int_eq(rifl_create(100, &r), HKV_OK);
    struct rifl_result res = ok_result(1, NULL);
    ck_assert_int_eq(rifl_put(r, 1, 5, 1, &res), HKV_OK);
    ck_assert_int_eq(rifl_put(r, 1, 6, 1, &res), HKV_OK); /* the restarted edge */
    ck_assert_ptr_null(rifl_get(r, 1, 5, 1));
    ck_assert_ptr_nonnull(rifl_get(r, 1, 6, 1));
    rifl_ack(r, 1, 7, 0);
    ck_assert_ptr_null(rifl_get(r, 1, 6, 1));
    rifl_destroy(&r);
}
END_TEST

/* In a cluster an edge id is host_number << 12 | slot: edges of two hosts
 * share the low bits.  One host's restarted edge must not take the other
 * host's records with it (its retry would then be applied twice), and
 * hundreds of writers each keep their own. */
START_TEST(writers_of_other_hosts_with_the_same_slot_are_apart)
{
    struct rifl *r = NULL;
    ck_assert_int_eq(rifl_create(100, &r), HKV_OK);
    struct rifl_result res = ok_result(1, NULL);
    uint32_t h1 = 1u << 12 | 1, h2 = 2u << 12 | 1;
    ck_assert_int_eq(rifl_put(r, h1, 5, 1, &res), HKV_OK);
    ck_assert_int_eq(rifl_put(r, h2, 9, 1, &res), HKV_OK);
    ck_assert_int_eq(rifl_put(r, h2, 10, 2, &res), HKV_OK); /* h2's edge restarted */
    ck_assert_ptr_nonnull(rifl_get(r, h1, 5, 1));
    rifl_ack(r, h2, 10, 100);
    ck_assert_ptr_nonnull(rifl_get(r, h1, 5, 1));
    for (uint32_t h = 1; h <= 300; h++)
        ck_assert_int_eq(rifl_put(r, h << 12 | 7, h, 1, &res), HKV_OK);
    for (uint32_t h = 1; h <= 300; h++)
        ck_assert_ptr_nonnull(rifl_get(r, h << 12 | 7, h, 1));
    ck_assert_ptr_nonnull(rifl_get(r, h1, 5, 1));
    rifl_destroy(&r);
}
END_TEST

START_TEST(bound_evicts_the_flooding_writers_oldest)
{
    struct rifl *r = NULL;
    ck_assert_int_eq(rifl_create(3, &r), HKV_OK);
    struct rifl_result res = ok_result(1, "v");
    ck_assert_int_eq(rifl_put(r, 2, 1, 1, &res), HKV_OK); /* a quiet writer */
    for (uint64_t s = 1; s <= 5; s++)
        ck_assert_int_eq(rifl_put(r, 1, 1, s, &res), HKV_OK);
    ck_assert_ptr_null(rifl_get(r, 1, 1, 1));
    ck_assert_ptr_null(rifl_get(r, 1, 1, 2));
    for (uint64_t s = 3; s <= 5; s++)
        ck_assert_ptr_nonnull(rifl_get(r, 1, 1, s));
    ck_assert_ptr_nonnull(rifl_get(r, 2, 1, 1));
    struct rifl_stats st;
    rifl_stats(r, &st);
    ck_assert_uint_eq(st.dropped, 2);
    ck_assert_uint_eq(st.records, 4);
    rifl_destroy(&r);
}
END_TEST

START_TEST(out_of_order_and_replaced_records)
{
    struct rifl *r = NULL;
    ck_assert_int_eq(rifl_create(1000, &r), HKV_OK);
    /* a retry whose first attempt was lost arrives after newer requests */
    struct rifl_result a = ok_result(10, NULL), b = ok_result(20, "x");
    ck_assert_int_eq(rifl_put(r, 1, 1, 5, &a), HKV_OK);
    ck_assert_int_eq(rifl_put(r, 1, 1, 2, &a), HKV_OK);
    rifl_ack(r, 1, 1, 3); /* seq 2 is finished, but sits behind 5 in arrival order */
    ck_assert_ptr_nonnull(rifl_get(r, 1, 1, 5));
    rifl_ack(r, 1, 1, 6);
    ck_assert_ptr_null(rifl_get(r, 1, 1, 5));
    ck_assert_ptr_null(rifl_get(r, 1, 1, 2));
    /* putting a request again replaces its result */
    ck_assert_int_eq(rifl_put(r, 1, 1, 9, &a), HKV_OK);
    ck_assert_int_eq(rifl_put(r, 1, 1, 9, &b), HKV_OK);
    ck_assert_uint_eq(rifl_get(r, 1, 1, 9)->version, 20);
    ck_assert(rifl_get(r, 1, 1, 9)->has_old);
    /* many records: the table grows and every one is found */
    for (uint64_t s = 100; s < 900; s++)
        ck_assert_int_eq(rifl_put(r, 7, 3, s, &a), HKV_OK);
    for (uint64_t s = 100; s < 900; s++)
        ck_assert_ptr_nonnull(rifl_get(r, 7, 3, s));
    rifl_destroy(&r);
}
END_TEST

Suite *rifl_suite(void)
{
    Suite *s = suite_create("rifl");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"retry", retry_finds_the_recorded_result},
        {"ack", ack_forgets_finished_requests_only},
        {"incarnation", new_incarnation_forgets_the_old_process},
        {"hosts", writers_of_other_hosts_with_the_same_slot_are_apart},
        {"bound", bound_evicts_the_flooding_writers_oldest},
        {"order", out_of_order_and_replaced_records},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
