/* check_rifl.c - the owner's completion records (server/owner/owner_rifl.h): a
 * retry finds its result, acks and new incarnations forget, the bound
 * evicts only the flooding writer's oldest, and what may have been
 * forgotten makes a retry "unknown", never new. */
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

struct seen {
    uint64_t seq[64];
    size_t n;
};

static void note_seq(void *arg, uint32_t writer, uint64_t inc, uint64_t seq,
                     const struct rifl_result *res)
{
    struct seen *sn = arg;
    ck_assert_uint_eq(res->version, seq);
    if (sn->n < 64)
        sn->seq[sn->n] = seq;
    sn->n++;
}

/* One request unfinished (a slow commit) while the writer goes on: its seqs
 * span far more than a ring holds, and no record may be lost for it. */
START_TEST(wide_window_keeps_every_record_until_acked)
{
    struct rifl *r = NULL;
    ck_assert_int_eq(rifl_create(100000, &r), HKV_OK);
    rifl_ack(r, 1, 4, 1); /* seq 1 unfinished: the ack stays at 1 */
    size_t held = 0;
    for (uint64_t s = 2; s < 40000; s += 3, held++) {
        struct rifl_result res = {.type = WIRE_INT, .value = 1, .version = s};
        ck_assert_int_eq(rifl_put(r, 1, 4, s, &res), HKV_OK);
        rifl_ack(r, 1, 4, 1);
    }
    struct rifl_result late = {.type = WIRE_INT, .version = 1};
    ck_assert_int_eq(rifl_put(r, 1, 4, 1, &late), HKV_OK); /* the slow one, at last */
    held++;
    ck_assert_ptr_nonnull(rifl_get(r, 1, 4, 1));
    for (uint64_t s = 2; s < 40000; s += 3)
        ck_assert_msg(rifl_get(r, 1, 4, s) != NULL && rifl_get(r, 1, 4, s)->version == s,
                      "seq %llu", (unsigned long long)s);
    ck_assert_ptr_null(rifl_get(r, 1, 4, 3));
    struct rifl_stats st;
    rifl_stats(r, &st);
    ck_assert_uint_eq(st.records, held);
    ck_assert_uint_eq(st.dropped, 0);
    /* acks release from below, wherever the records sit */
    rifl_ack(r, 1, 4, 20000);
    for (uint64_t s = 1; s < 40000; s++)
        if (s == 1 || s % 3 == 2)
            ck_assert_msg((rifl_get(r, 1, 4, s) != NULL) == (s >= 20000), "seq %llu",
                          (unsigned long long)s);
    rifl_ack(r, 1, 4, 1u << 20);
    rifl_stats(r, &st);
    ck_assert_uint_eq(st.records, 0);
    ck_assert_uint_eq(st.dropped, 0);
    rifl_destroy(&r);
}
END_TEST

/* Records below the ring (late arrivals, a slid window) and in it are listed
 * in seq order, found, and bounded lowest first. */
START_TEST(late_records_listed_in_order_and_evicted_first)
{
    struct rifl *r = NULL;
    ck_assert_int_eq(rifl_create(20, &r), HKV_OK);
    uint64_t seqs[] = {5000, 5003, 9000, 9001, 12, 13, 4999, 20000};
    for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
        struct rifl_result res = {.type = WIRE_INT, .version = seqs[i]};
        ck_assert_int_eq(rifl_put(r, 3, 1, seqs[i], &res), HKV_OK);
    }
    for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++)
        ck_assert_ptr_nonnull(rifl_get(r, 3, 1, seqs[i]));
    ck_assert_ptr_null(rifl_get(r, 3, 1, 14));
    ck_assert_ptr_null(rifl_get(r, 3, 1, 9002));
    struct seen sn = {.n = 0};
    rifl_each(r, note_seq, &sn);
    uint64_t want[] = {12, 13, 4999, 5000, 5003, 9000, 9001, 20000};
    ck_assert_uint_eq(sn.n, 8);
    for (size_t i = 0; i < 8; i++)
        ck_assert_uint_eq(sn.seq[i], want[i]);
    /* the bound (20) takes the lowest seqs first */
    for (uint64_t s = 30000; s < 30015; s++) {
        struct rifl_result res = {.type = WIRE_INT, .version = s};
        ck_assert_int_eq(rifl_put(r, 3, 1, s, &res), HKV_OK);
    }
    struct rifl_stats st;
    rifl_stats(r, &st);
    ck_assert_uint_eq(st.records, 20);
    ck_assert_uint_eq(st.dropped, 3);
    ck_assert_ptr_null(rifl_get(r, 3, 1, 12));
    ck_assert_ptr_null(rifl_get(r, 3, 1, 4999));
    ck_assert_ptr_nonnull(rifl_get(r, 3, 1, 5000));
    rifl_destroy(&r);
}
END_TEST

/* The writer said it will not retry what is below its ack: not kept, and a
 * moved record of it is not taken. */
START_TEST(request_below_ack_is_not_kept)
{
    struct rifl *r = NULL;
    ck_assert_int_eq(rifl_create(100, &r), HKV_OK);
    rifl_ack(r, 1, 2, 50);
    struct rifl_result res = ok_result(1, "old");
    ck_assert_int_eq(rifl_put(r, 1, 2, 49, &res), HKV_OK);
    ck_assert_ptr_null(rifl_get(r, 1, 2, 49));
    ck_assert_int_eq(rifl_merge(r, 1, 2, 30, &res, 2), HKV_EEXIST);
    ck_assert_int_eq(rifl_merge(r, 1, 2, 50, &res, 2), HKV_OK);
    ck_assert_ptr_nonnull(rifl_get(r, 1, 2, 50));
    struct rifl_stats st;
    rifl_stats(r, &st);
    ck_assert_uint_eq(st.records, 1);
    rifl_destroy(&r);
}
END_TEST

/* owner_rifl.h R1, R2: a request with no record is provably new only at or
 * above the writer's ack and above its lost mark; the bound and a failed
 * record raise the mark; a new incarnation starts clean. */
START_TEST(a_request_whose_record_may_be_forgotten_is_unknown)
{
    struct rifl *r = NULL;
    ck_assert_int_eq(rifl_create(3, &r), HKV_OK);
    struct rifl_result res = ok_result(1, NULL);
    ck_assert(!rifl_unknown(r, 1, 7, 1)); /* a writer never seen: nothing forgotten */
    rifl_ack(r, 1, 7, 10);
    ck_assert(rifl_unknown(r, 1, 7, 9)); /* below ack: the writer said it finished */
    ck_assert(!rifl_unknown(r, 1, 7, 10));
    for (uint64_t s = 10; s <= 14; s++) /* the bound (3) evicts 10 and 11 */
        ck_assert_int_eq(rifl_put(r, 1, 7, s, &res), HKV_OK);
    ck_assert(rifl_unknown(r, 1, 7, 10));
    ck_assert(rifl_unknown(r, 1, 7, 11));
    ck_assert_ptr_nonnull(rifl_get(r, 1, 7, 12)); /* held: answered from its record */
    ck_assert(!rifl_unknown(r, 1, 7, 15));
    rifl_lost(r, 1, 7, 20); /* applied, not recorded */
    ck_assert(rifl_unknown(r, 1, 7, 20));
    ck_assert(rifl_unknown(r, 1, 7, 16));
    ck_assert(!rifl_unknown(r, 1, 7, 21));
    ck_assert(!rifl_unknown(r, 2, 7, 20)); /* another writer's mark is its own */
    rifl_ack(r, 1, 8, 1); /* a new process of the writer: nothing of its own forgotten */
    ck_assert(!rifl_unknown(r, 1, 8, 20));
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
        {"window", wide_window_keeps_every_record_until_acked},
        {"late", late_records_listed_in_order_and_evicted_first},
        {"below_ack", request_below_ack_is_not_kept},
        {"unknown", a_request_whose_record_may_be_forgotten_is_unknown},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
