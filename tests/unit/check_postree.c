/*
 * check_postree.c - the B+ tree of (position, pointer) pairs against a
 * plain sorted array: random inserts and removals (with many pairs on one
 * position, as hash tags make them), every invariant checked as it goes
 * (postree_check), walks from random seeks, and what it costs a key.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "storage/postree.h"

struct ref {
    uint64_t pos;
    uintptr_t p;
};

static int ref_cmp(const void *a, const void *b)
{
    const struct ref *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return x->p < y->p ? -1 : x->p > y->p ? 1 : 0;
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Every pair, by a walk from the first, equals the reference. */
static void assert_same(const struct postree *t, struct ref *r, size_t n)
{
    qsort(r, n, sizeof(*r), ref_cmp);
    struct postree_iter it;
    postree_seek(t, 0, &it);
    uint64_t pos;
    void *p;
    size_t i = 0;
    while (postree_get(&it, &pos, &p)) {
        ck_assert_uint_lt(i, n);
        ck_assert_uint_eq(pos, r[i].pos);
        ck_assert_uint_eq((uintptr_t)p, r[i].p);
        i++;
        postree_next(&it);
    }
    ck_assert_uint_eq(i, n);
    ck_assert_uint_eq(postree_count(t), n);
}

START_TEST(random_inserts_and_removals_match_a_sorted_array)
{
    enum { MAX = 60000 };
    static struct ref r[MAX];
    uint64_t bytes = 0;
    struct postree *t = postree_create(&bytes);
    ck_assert_ptr_nonnull(t);
    size_t n = 0;
    for (int round = 0; round < 6; round++) {
        /* grow to MAX, then shrink to a few: splits, then borrows and merges */
        while (n < MAX) {
            uint64_t pos = rnd() % 5 == 0 ? 777 : rnd() >> 1; /* a fifth on one position */
            uintptr_t p = (uintptr_t)(rnd() | 1);
            if (postree_insert(t, pos, (void *)p) == HKV_OK)
                r[n++] = (struct ref){pos, p};
        }
        ck_assert_int_eq(postree_check(t), 0);
        ck_assert_uint_eq(bytes, postree_bytes(t));
        assert_same(t, r, n);
        ck_assert_int_eq(postree_insert(t, r[5].pos, (void *)r[5].p), HKV_EEXIST);
        size_t keep = round % 2 ? 3 : 1000;
        while (n > keep) {
            size_t i = rnd() % n;
            ck_assert_int_eq(postree_remove(t, r[i].pos, (void *)r[i].p), 1);
            ck_assert_int_eq(postree_remove(t, r[i].pos, (void *)r[i].p), 0);
            r[i] = r[--n];
            if (n % 4999 == 0)
                ck_assert_int_eq(postree_check(t), 0);
        }
        ck_assert_int_eq(postree_check(t), 0);
        assert_same(t, r, n);
    }
    while (n > 0) {
        n--;
        ck_assert_int_eq(postree_remove(t, r[n].pos, (void *)r[n].p), 1);
    }
    ck_assert_int_eq(postree_check(t), 0);
    struct postree_iter it;
    ck_assert_int_eq(postree_seek(t, 0, &it), 0);
    postree_destroy(&t);
    ck_assert_ptr_null(t);
    ck_assert_uint_eq(bytes, 0);
}
END_TEST

START_TEST(seek_finds_the_first_pair_at_or_after_a_position)
{
    struct postree *t = postree_create(NULL);
    for (uint64_t i = 0; i < 5000; i++)
        for (uintptr_t k = 1; k <= 3; k++) /* three pairs a position, every 10th position */
            ck_assert_int_eq(postree_insert(t, i * 10, (void *)(k * 8)), HKV_OK);
    for (int j = 0; j < 2000; j++) {
        uint64_t q = rnd() % 50020;
        struct postree_iter it;
        int found = postree_seek(t, q, &it);
        uint64_t want = (q + 9) / 10 * 10, pos;
        void *p;
        if (want >= 50000) {
            ck_assert_int_eq(found, 0);
            ck_assert_int_eq(postree_get(&it, &pos, &p), 0);
            continue;
        }
        ck_assert_int_eq(found, 1);
        for (uintptr_t k = 1; k <= 3; k++) { /* ties in pointer order */
            ck_assert_int_eq(postree_get(&it, &pos, &p), 1);
            ck_assert_uint_eq(pos, want);
            ck_assert_uint_eq((uintptr_t)p, k * 8);
            postree_next(&it);
        }
    }
    postree_destroy(&t);
}
END_TEST

/* The figure in postree.h and the report: bytes a key after random
 * inserts, and after deleting most keys again (fill kept >= 1/4). */
START_TEST(memory_per_key)
{
    enum { N = 1000000 };
    static uint64_t pos[N];
    uint64_t bytes = 0;
    struct postree *t = postree_create(&bytes);
    for (size_t i = 0; i < N; i++) {
        pos[i] = rnd() >> 1;
        ck_assert_int_eq(postree_insert(t, pos[i], (void *)((i + 1) * 16)), HKV_OK);
    }
    double full = (double)bytes / N;
    /* three keys in four go (positions are random, so in random order) */
    for (size_t i = 0; i < N; i++)
        if (i % 4 != 0)
            ck_assert_int_eq(postree_remove(t, pos[i], (void *)((i + 1) * 16)), 1);
    size_t left = postree_count(t);
    ck_assert_uint_eq(left, N / 4);
    ck_assert_int_eq(postree_check(t), 0);
    double sparse = (double)bytes / (double)left;
    fprintf(stderr, "postree: %.1f bytes/key after %d random inserts; %.1f after deleting "
                    "three in four\n", full, N, sparse);
    ck_assert(full > 16 && full < 21.5); /* 16-byte pairs in leaves ~4/5 full (a full
                                          * leaf fills a sibling first; 24.1 without) */
    ck_assert(sparse < 16 * 4 + 8);      /* never under a quarter full */
    postree_destroy(&t);
}
END_TEST

Suite *postree_suite(void)
{
    Suite *s = suite_create("postree");
    TCase *c = tcase_create("random");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, random_inserts_and_removals_match_a_sorted_array);
    suite_add_tcase(s, c);
    c = tcase_create("seek");
    tcase_add_test(c, seek_finds_the_first_pair_at_or_after_a_position);
    suite_add_tcase(s, c);
    c = tcase_create("memory");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, memory_per_key);
    suite_add_tcase(s, c);
    return s;
}
