/*
 * check_ledger_dirty.c - the order in which the persister collects dirty
 * keys (storage/ledger_dirty.c): pending keys oldest first by when they
 * last became pending (first write after clean, or a write / failed batch
 * after a collect), a collected key in flight until persisted or failed, a
 * dropped key (leaf purge, FLUSHALL) never collected; and the memory of the
 * order back to nothing once every key is clean.  A random sequence of
 * writes, deletes, filtered collects, persisted and failed rows and drops is
 * checked step by step against a model of that order (two lists, as the
 * ledger kept it before it was an array), through growth, compaction and
 * shrinking of the array.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "storage/ledger.h"

#define NKEYS 600
#define STEPS 30000

static struct ledger *L;
static struct ledger_clock NOW = {1000, 1700000000000LL};
static const struct ledger_expiry NOEXP = {LEDGER_EXP_NONE, 0};

/* the model: each key's state and, while dirty, its place in its list */
enum { M_CLEAN, M_PENDING, M_INFLIGHT };
static int mstate[NKEYS];
static long mseq[NKEYS];     /* pending: when it last became pending */
static hkv_stamp mstamp[NKEYS];
static int mres[NKEYS];      /* resident */
static long seq;
static long rows_landed, rows_failed, rows_collected;
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static int key_of(const char *k, size_t klen)
{
    char buf[16];
    ck_assert_uint_lt(klen, sizeof(buf));
    memcpy(buf, k, klen);
    buf[klen] = '\0';
    return atoi(buf + 1);
}

static size_t keyname(int i, char *buf) { return (size_t)sprintf(buf, "k%d", i); }

static void setup(void)
{
    struct ledger_options o = {.tombstone_ttl_ms = 1000, .writer = 3, .has_hash_key = 1};
    for (int i = 0; i < SIPHASH_KEY_LEN; i++)
        o.hash_key[i] = (uint8_t)(0x40 + i);
    ck_assert_int_eq(ledger_create(&o, &L), HKV_OK);
    ck_assert_int_eq(ledger_mark_complete(L), HKV_OK);
    memset(mstate, 0, sizeof(mstate));
    memset(mres, 0, sizeof(mres));
    seq = 0;
}

static void teardown(void) { ledger_destroy(&L); }

static void model_write(int i, hkv_stamp v)
{
    if (mstate[i] != M_PENDING) /* clean or in flight: to the end of pending */
        mseq[i] = seq++;
    mstate[i] = M_PENDING;
    mstamp[i] = v;
    mres[i] = 1;
}

static void do_write(int i)
{
    char k[16];
    size_t kl = keyname(i, k);
    hkv_stamp v = 0;
    if (rnd(4) == 0) {
        ck_assert_int_eq(ledger_del(L, k, kl, (uint16_t)(i % 3), NOW, NULL, NULL, &v), HKV_OK);
    } else {
        char val[64];
        int n = snprintf(val, sizeof(val), "%u", rnd(1000000));
        ck_assert_int_eq(ledger_set(L, k, kl, val, (size_t)n, (uint16_t)(i % 3), 0, NOEXP, NOW,
                                    NULL, &v),
                         HKV_OK);
    }
    model_write(i, v);
}

static int class_is(uint16_t class_id, void *arg) { return class_id == *(uint16_t *)arg; }

/* Collects, checks the rows are the model's pending keys of that class
 * oldest first, then persists or fails some of them (or leaves them). */
static void do_collect(void)
{
    size_t max = 1 + rnd(40);
    uint16_t cls = (uint16_t)rnd(3);
    int filtered = rnd(2);
    struct persist_batch *b = persist_batch_new(0);
    ck_assert_ptr_nonnull(b);
    int n = ledger_collect_dirty(L, b, max, filtered ? class_is : NULL, &cls);
    ck_assert_int_ge(n, 0);
    /* the model's expectation: pending, class ok, by seq, up to max */
    static int want[NKEYS];
    int nw = 0;
    for (;;) {
        int best = -1;
        for (int i = 0; i < NKEYS; i++)
            if (mstate[i] == M_PENDING && (!filtered || i % 3 == cls) &&
                (best < 0 || mseq[i] < mseq[best])) {
                int taken = 0;
                for (int j = 0; j < nw && !taken; j++)
                    taken = want[j] == i;
                if (!taken)
                    best = i;
            }
        if (best < 0 || (size_t)nw == max)
            break;
        want[nw++] = best;
    }
    ck_assert_int_eq(n, nw);
    rows_collected += n;
    for (int r = 0; r < n; r++) {
        int i = key_of(b->rows[r].key, b->rows[r].klen);
        ck_assert_int_eq(i, want[r]);
        ck_assert_uint_eq(b->rows[r].stamp, mstamp[i]);
        mstate[i] = M_INFLIGHT;
    }
    /* the batch lands now, fails now, or lands after more writes */
    int outcome = (int)rnd(3);
    for (int r = 0; r < n && outcome != 2; r++) {
        int i = key_of(b->rows[r].key, b->rows[r].klen);
        if (outcome == 0) {
            ck_assert_int_eq(ledger_persisted(L, b->rows[r].key, b->rows[r].klen,
                                              b->rows[r].stamp), HKV_OK);
            mstate[i] = M_CLEAN;
            rows_landed++;
        } else {
            ck_assert_int_eq(ledger_persist_failed(L, b->rows[r].key, b->rows[r].klen,
                                                   b->rows[r].stamp), HKV_OK);
            model_write(i, mstamp[i]);
            rows_failed++;
        }
    }
    persist_batch_free(&b);
}

/* Lands (or fails) the current stamp of a random in-flight key. */
static void do_land(void)
{
    int i = (int)rnd(NKEYS);
    if (mstate[i] != M_INFLIGHT)
        return;
    char k[16];
    size_t kl = keyname(i, k);
    if (rnd(2)) {
        ck_assert_int_eq(ledger_persisted(L, k, kl, mstamp[i]), HKV_OK);
        mstate[i] = M_CLEAN;
    } else {
        ck_assert_int_eq(ledger_persist_failed(L, k, kl, mstamp[i]), HKV_OK);
        model_write(i, mstamp[i]);
    }
}

static int drop_mod;
static int drop_some(void *arg, const struct ledger_item *it)
{
    int i = key_of(it->key, it->klen);
    if (i % 7 != drop_mod)
        return LEDGER_WALK_KEEP;
    mstate[i] = M_CLEAN;
    mres[i] = 0;
    return LEDGER_WALK_DROP;
}

static void check_counts(void)
{
    size_t dk = 0;
    ledger_dirty(L, &dk, NULL);
    size_t want = 0;
    for (int i = 0; i < NKEYS; i++)
        want += mstate[i] != M_CLEAN;
    ck_assert_uint_eq(dk, want);
}

START_TEST(collect_order_matches_the_pending_list_model)
{
    for (int s = 0; s < STEPS; s++) {
        uint32_t op = rnd(100);
        if (op < 55)
            do_write((int)rnd(op < 20 ? 40 : NKEYS)); /* some keys hot */
        else if (op < 80)
            do_collect();
        else if (op < 97)
            do_land();
        else if (op < 99) {
            drop_mod = (int)rnd(7);
            uint64_t c = 0;
            int guard = 0;
            do
                c = ledger_walk(L, c, 16, drop_some, NULL);
            while (c != 0 && ++guard < 100000);
            ck_assert_uint_eq(c, 0);
        } else {
            hkv_stamp v;
            ck_assert_int_eq(ledger_flush(L, NOW, &v), HKV_OK);
            for (int i = 0; i < NKEYS; i++)
                mstate[i] = M_CLEAN, mres[i] = 0;
        }
        check_counts();
    }
    /* the sequence did what it is for */
    ck_assert_int_gt(rows_collected, 20000);
    ck_assert_int_gt(rows_landed, 5000);
    ck_assert_int_gt(rows_failed, 5000);
}
END_TEST

/* Many keys dirty at once (the array grows), then clean again in an order
 * that leaves holes everywhere (it compacts and shrinks): the order's memory
 * stays within twice a slot per dirty key and goes back to zero. */
START_TEST(dirty_order_memory_returns_to_nothing)
{
    struct ledger_stats s0, s;
    ledger_stats(L, &s0);
    ck_assert_uint_eq(s0.dirty_order_bytes, 0);
    for (int i = 0; i < 20000; i++) {
        char k[16];
        size_t kl = keyname(i, k);
        ck_assert_int_eq(ledger_set(L, k, kl, "v", 1, 0, 0, NOEXP, NOW, NULL, NULL), HKV_OK);
    }
    ledger_stats(L, &s);
    ck_assert_uint_ge(s.dirty_order_bytes, 20000 * sizeof(void *));
    ck_assert_uint_le(s.dirty_order_bytes, 2 * 20000 * sizeof(void *) + 4096);
    struct persist_batch *b = persist_batch_new(0);
    ck_assert_int_eq(ledger_collect_dirty(L, b, 100000, NULL, NULL), 20000);
    /* odd rows first, then even ones backwards */
    for (size_t r = 1; r < b->n; r += 2)
        ck_assert_int_eq(ledger_persisted(L, b->rows[r].key, b->rows[r].klen, b->rows[r].stamp),
                         HKV_OK);
    ledger_stats(L, &s);
    ck_assert_uint_le(s.dirty_order_bytes, 10000 * sizeof(void *) * 4);
    for (size_t r = b->n; r >= 2; r -= 2)
        ck_assert_int_eq(ledger_persisted(L, b->rows[r - 2].key, b->rows[r - 2].klen,
                                          b->rows[r - 2].stamp),
                         HKV_OK);
    persist_batch_free(&b);
    ledger_stats(L, &s);
    ck_assert_uint_eq(s.dirty_keys, 0);
    ck_assert_uint_eq(s.dirty_order_bytes, 0);
    ck_assert_uint_eq(s.dirty_bytes, 0);
}
END_TEST

Suite *ledger_dirty_suite(void)
{
    Suite *s = suite_create("ledger_dirty");
    TCase *tc = tcase_create("order");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, collect_order_matches_the_pending_list_model);
    tcase_add_test(tc, dirty_order_memory_returns_to_nothing);
    suite_add_tcase(s, tc);
    return s;
}
