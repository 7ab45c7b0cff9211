/* check_owner_persist.c - how the owner cuts the persister's batches from
 * its ledger (server/owner/owner_cut.c, owner_cut_batch): a batch cut short by
 * an allocation failure must not mark anything persisted. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/owner/owner_cut.h"
#include "server/owner/owner_int.h"
#include "storage/ledger.h"
#include "storage/persist_row.h"

#define NKEYS 5

static struct ledger *L;
static const struct ledger_clock NOW = {1000, 1700000000000LL};

static void setup(void)
{
    struct ledger_options o = {.tombstone_ttl_ms = 1000, .has_hash_key = 1};
    ck_assert_int_eq(ledger_create(&o, &L), HKV_OK);
    ck_assert_int_eq(ledger_mark_complete(L), HKV_OK);
    const struct ledger_expiry none = {LEDGER_EXP_NONE, 0};
    for (int i = 0; i < NKEYS; i++) {
        char k[16];
        snprintf(k, sizeof(k), "k%d", i);
        ck_assert_int_eq(ledger_set(L, k, strlen(k), "v", 1, 0, 0, none, NOW, NULL, NULL), HKV_OK);
    }
}

static void teardown(void)
{
    persist_batch_test_fail_after(-1);
    ledger_destroy(&L);
}

static size_t dirty_keys(void)
{
    size_t keys, bytes;
    ledger_dirty(L, &keys, &bytes);
    return keys;
}

/* Cuts a batch with the allocation failing after two rows, then checks the
 * five keys are all still dirty and that the next cut takes all five. */
static void cut_short_then_again(int durable)
{
    int st = HKV_OK;
    persist_batch_test_fail_after(2);
    struct persist_batch *b = owner_cut_batch(L, durable, 100, NULL, NULL, &st);
    persist_batch_test_fail_after(-1);
    ck_assert_msg(dirty_keys() == NKEYS, "%zu of %d keys still dirty: the others were "
                  "marked persisted but never written", dirty_keys(), NKEYS);
    ck_assert_msg(b == NULL, "a batch cut short was handed on with %zu of %d rows",
                  b != NULL ? b->n : 0, NKEYS);
    ck_assert_int_eq(st, HKV_ENOMEM);
    b = owner_cut_batch(L, durable, 100, NULL, NULL, &st);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(st, HKV_OK);
    ck_assert_uint_eq(b->n, NKEYS);
    /* and once that batch is stored, nothing is dirty */
    b->status = HKV_OK;
    ledger_batch_done(L, b);
    persist_batch_free(&b);
    ck_assert_uint_eq(dirty_keys(), 0);
}

START_TEST(ledger_batch_cut_short_by_enomem_leaves_every_key_dirty)
{
    cut_short_then_again(0);
}
END_TEST

START_TEST(durable_batch_cut_short_by_enomem_leaves_every_key_dirty)
{
    cut_short_then_again(1);
}
END_TEST

START_TEST(nothing_dirty_cuts_no_ledger_batch)
{
    int st = HKV_EINVAL;
    struct persist_batch *b = owner_cut_batch(L, 0, 100, NULL, NULL, &st);
    ck_assert_ptr_nonnull(b);
    b->status = HKV_OK;
    ledger_batch_done(L, b);
    persist_batch_free(&b);
    b = owner_cut_batch(L, 0, 100, NULL, NULL, &st);
    ck_assert_ptr_null(b);
    ck_assert_int_eq(st, HKV_OK);
}
END_TEST

Suite *owner_persist_suite(void)
{
    Suite *s = suite_create("owner_persist");
    TCase *tc = tcase_create("cut_short");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, ledger_batch_cut_short_by_enomem_leaves_every_key_dirty);
    tcase_add_test(tc, durable_batch_cut_short_by_enomem_leaves_every_key_dirty);
    suite_add_tcase(s, tc);
    tc = tcase_create("empty");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, nothing_dirty_cuts_no_ledger_batch);
    suite_add_tcase(s, tc);
    return s;
}
