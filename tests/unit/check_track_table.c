/* check_track_table.c - CLIENT TRACKING's table (server/edge/
 * edge_track_table.c) on its own: sessions found by id through adds and
 * deletes (the backward-shift deletion), a key's readers kept once each and
 * in order, a gone session's ids skipped and dropped (on growth, by the
 * sweep), the item count always the ids held, and a random run checked
 * against a model of live (session, key) pairs. */
#include <check.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/router.h"
#include "server/edge/edge_track_int.h"

static struct event_base *base;
static struct edge_track *T;

static void nop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static void setup(void)
{
    base = event_base_new();
    ck_assert_ptr_nonnull(base);
    T = calloc(1, sizeof(*T));
    ck_assert_ptr_nonnull(T);
    T->nbuckets = TRACK_BUCKETS_MIN;
    T->table = calloc(T->nbuckets, sizeof(*T->table));
    T->due_timer = evtimer_new(base, nop, NULL);
    ck_assert(T->table != NULL && T->due_timer != NULL);
}

static void teardown(void)
{
    track_table_free(T);
    event_free(T->due_timer);
    free(T);
    event_base_free(base);
}

static struct track_sess *sess_new(void)
{
    struct track_sess *s = calloc(1, sizeof(*s));
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(track_sess_add(T, s), 0);
    T->nsessions++;
    return s;
}

static void sess_gone(struct track_sess *s)
{
    track_sess_del(T, s);
    T->nsessions--;
    if (s->remembered)
        track_sweep_start(T);
    free(s);
}

static void remember(struct track_sess *s, const char *key)
{
    ck_assert_int_eq(track_remember(T, s, key, strlen(key)), 0);
}

static struct tkey *find(const char *key)
{
    return track_key_find(T, key, strlen(key), router_hash(key, strlen(key)));
}

/* The ids of key (count; copied into out). */
static uint32_t ids_of(const char *key, uint64_t *out, uint32_t cap)
{
    struct tkey *k = find(key);
    if (k == NULL)
        return 0;
    uint64_t one;
    uint32_t n;
    const uint64_t *ids = track_key_ids(k, &one, &n);
    for (uint32_t i = 0; i < n && i < cap; i++)
        out[i] = ids[i];
    return n;
}

/* Every id held, over the whole table. */
static uint64_t ids_held(void)
{
    uint64_t total = 0;
    for (size_t b = 0; b < T->nbuckets; b++)
        for (struct tkey *k = T->table[b]; k != NULL; k = k->bnext) {
            uint64_t one;
            uint32_t n;
            track_key_ids(k, &one, &n);
            total += n;
        }
    return total;
}

static void sweep_all(void)
{
    for (int i = 0; i < 100000 && track_sweep_step(T); i++)
        ;
    ck_assert_uint_eq(T->sweep_left, 0);
}

START_TEST(sessions_are_found_by_id_through_adds_and_deletes)
{
    enum { N = 3000 };
    static struct track_sess *s[N];
    for (int i = 0; i < N; i++)
        s[i] = sess_new();
    ck_assert_uint_ge(T->smap_cap, 2 * (size_t)N);
    uint64_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = s[i]->sid;
    /* every third and then every fifth go: chains broken in many places */
    for (int i = 0; i < N; i++)
        if (i % 3 == 0 || i % 5 == 0) {
            sess_gone(s[i]);
            s[i] = NULL;
        }
    for (int i = 0; i < N; i++) {
        struct track_sess *f = track_sess_find(T, ids[i]);
        if (s[i] != NULL)
            ck_assert_ptr_eq(f, s[i]);
        else
            ck_assert_ptr_null(f);
    }
    struct track_sess *x = sess_new(); /* ids are never reused */
    for (int i = 0; i < N; i++)
        ck_assert_uint_ne(x->sid, ids[i]);
    for (int i = 0; i < N; i++)
        if (s[i] != NULL)
            sess_gone(s[i]);
    sess_gone(x);
    for (int i = 0; i < N; i++)
        ck_assert_ptr_null(track_sess_find(T, ids[i]));
}
END_TEST

START_TEST(a_key_names_each_reader_once_in_order)
{
    struct track_sess *a = sess_new(), *b = sess_new(), *c = sess_new();
    remember(a, "k");
    remember(a, "k");
    ck_assert_uint_eq(T->nkeys, 1);
    ck_assert_uint_eq(T->nitems, 1);
    uint64_t ids[8];
    ck_assert_uint_eq(ids_of("k", ids, 8), 1);
    ck_assert_uint_eq(ids[0], a->sid);
    remember(b, "k");
    remember(c, "k");
    remember(b, "k");
    remember(a, "k");
    ck_assert_uint_eq(ids_of("k", ids, 8), 3);
    ck_assert(ids[0] == a->sid && ids[1] == b->sid && ids[2] == c->sid);
    ck_assert_uint_eq(T->nitems, 3);
    remember(c, "other");
    ck_assert_uint_eq(T->nkeys, 2);
    ck_assert_uint_eq(T->nitems, 4);
    ck_assert_ptr_null(find("nobody"));
    track_key_free(T, find("k"));
    ck_assert_uint_eq(T->nkeys, 1);
    ck_assert_uint_eq(T->nitems, 1);
    sess_gone(a);
    sess_gone(b);
    sess_gone(c);
}
END_TEST

START_TEST(a_gone_reader_is_skipped_replaced_and_swept)
{
    struct track_sess *a = sess_new(), *b = sess_new();
    remember(a, "solo");
    uint64_t gone = a->sid;
    sess_gone(a);
    uint64_t ids[8];
    ck_assert_uint_eq(ids_of("solo", ids, 8), 1);
    ck_assert_ptr_null(track_sess_find(T, ids[0])); /* skipped when told */
    ck_assert_uint_eq(ids[0], gone);
    remember(b, "solo"); /* takes the gone reader's place */
    ck_assert_uint_eq(ids_of("solo", ids, 8), 1);
    ck_assert_uint_eq(ids[0], b->sid);
    ck_assert_uint_eq(T->nitems, 1);
    /* four readers fill an array of four; with two gone, the next reader
     * compacts it instead of growing it */
    struct track_sess *r[4];
    for (int i = 0; i < 4; i++) {
        r[i] = sess_new();
        remember(r[i], "many");
    }
    sess_gone(r[0]);
    sess_gone(r[2]);
    struct track_sess *late = sess_new();
    remember(late, "many");
    ck_assert_uint_eq(ids_of("many", ids, 8), 3);
    ck_assert(ids[0] == r[1]->sid && ids[1] == r[3]->sid && ids[2] == late->sid);
    ck_assert_uint_eq(T->nitems, ids_held());
    /* the sweep: keys of gone readers only go, the others lose their gone ids */
    struct track_sess *d = sess_new();
    remember(d, "dead1");
    remember(d, "dead2");
    remember(d, "many");
    sess_gone(d);
    ck_assert_uint_gt(T->sweep_left, 0);
    ck_assert(evtimer_pending(T->due_timer, NULL)); /* the sweep ticks */
    sweep_all();
    ck_assert_ptr_null(find("dead1"));
    ck_assert_ptr_null(find("dead2"));
    ck_assert_uint_eq(ids_of("many", ids, 8), 3);
    ck_assert_ptr_nonnull(find("solo"));
    ck_assert_uint_eq(T->nkeys, 2);
    ck_assert_uint_eq(T->nitems, 4);
    ck_assert_uint_eq(T->nitems, ids_held());
    sess_gone(b);
    sess_gone(r[1]);
    sess_gone(r[3]);
    sess_gone(late);
    sweep_all();
    ck_assert_uint_eq(T->nkeys, 0);
    ck_assert_uint_eq(T->nitems, 0);
}
END_TEST

START_TEST(the_table_grows_and_clears)
{
    struct track_sess *a = sess_new();
    char key[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof(key), "key:%d", i);
        remember(a, key);
    }
    ck_assert_uint_ge(T->nbuckets, 16384);
    ck_assert_uint_eq(T->nkeys, 20000);
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof(key), "key:%d", i);
        ck_assert_ptr_nonnull(find(key));
    }
    track_table_clear(T);
    ck_assert_uint_eq(T->nkeys, 0);
    ck_assert_uint_eq(T->nitems, 0);
    ck_assert_ptr_null(find("key:7"));
    sess_gone(a);
}
END_TEST

/* Random sessions coming and going and reading 40 keys; after a full
 * sweep every key names exactly its live readers (the model), and a key
 * with none is gone. */
START_TEST(random_runs_match_the_model_of_live_pairs)
{
    enum { S = 64, K = 40 };
    struct track_sess *s[S] = {0};
    uint8_t model[S][K];
    memset(model, 0, sizeof(model));
    uint64_t rnd = 0x9E3779B97F4A7C15ULL ^ (uint64_t)_i;
    char key[16];
    for (int step = 0; step < 20000; step++) {
        rnd = rnd * 6364136223846793005ULL + 1442695040888963407ULL;
        int i = (int)((rnd >> 33) % S), k = (int)((rnd >> 45) % K), op = (int)((rnd >> 20) % 10);
        if (s[i] == NULL) {
            s[i] = sess_new();
        } else if (op == 0) {
            sess_gone(s[i]);
            s[i] = NULL;
            memset(model[i], 0, K);
        } else if (op == 1 && T->sweep_left > 0) {
            track_sweep_step(T);
        } else {
            snprintf(key, sizeof(key), "m:%d", k);
            remember(s[i], key);
            model[i][k] = 1;
        }
        ck_assert_uint_eq(T->nitems, ids_held());
    }
    sweep_all();
    for (int k = 0; k < K; k++) {
        snprintf(key, sizeof(key), "m:%d", k);
        uint64_t ids[S + 1];
        uint32_t n = ids_of(key, ids, S + 1), want = 0;
        for (int i = 0; i < S; i++)
            want += model[i][k];
        ck_assert_msg(n == want, "%s: %u ids, %u live readers", key, n, want);
        for (uint32_t j = 0; j < n; j++) {
            struct track_sess *f = track_sess_find(T, ids[j]);
            ck_assert_ptr_nonnull(f);
            int idx = -1;
            for (int i = 0; i < S; i++)
                if (s[i] == f)
                    idx = i;
            ck_assert_int_ge(idx, 0);
            ck_assert(model[idx][k]);
        }
    }
    for (int i = 0; i < S; i++)
        if (s[i] != NULL)
            sess_gone(s[i]);
}
END_TEST

Suite *track_table_suite(void)
{
    Suite *s = suite_create("track_table");
    TCase *tc = tcase_create("table");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, sessions_are_found_by_id_through_adds_and_deletes);
    tcase_add_test(tc, a_key_names_each_reader_once_in_order);
    tcase_add_test(tc, a_gone_reader_is_skipped_replaced_and_swept);
    tcase_add_test(tc, the_table_grows_and_clears);
    tcase_add_loop_test(tc, random_runs_match_the_model_of_live_pairs, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}
