/*
 * check_persist_own.c - the ownership table's move states (storage/
 * persist_own.h): HANDING_OFF, RECEIVING and GONE rows with their epochs and
 * peer survive a save and a reopen, and a table written before the move
 * columns existed reads back as OWNED and takes them on its next save.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "proto/hkv.h"
#include "storage/persist_own.h"
#include "storage/persister.h"
#include "tests/harness.h"

static char dir[256], path[320];

static void setup(void)
{
    h_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/own.db", dir);
}

static void teardown(void)
{
    h_rmtree(dir);
}

static void save(struct persist_own *t)
{
    struct persister *p;
    char why[256];
    ck_assert_int_eq(persister_create(&p, path, NULL, why, sizeof(why)), HKV_OK);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    struct persist_batch *b = persist_batch_new(0);
    b->own = t;
    ck_assert_int_eq(persister_submit(p, b), HKV_OK);
    ck_assert_int_eq(persister_stop(p), HKV_OK);
    struct persist_batch *done = persister_take_done(p);
    ck_assert_ptr_nonnull(done);
    ck_assert_int_eq(done->status, HKV_OK);
    persist_batch_free(&done);
    persister_destroy(&p);
}

static struct persist_own *load(uint8_t pool)
{
    struct persister *p;
    struct persist_own *t = NULL;
    char why[256];
    ck_assert_int_eq(persister_create(&p, path, NULL, why, sizeof(why)), HKV_OK);
    ck_assert_int_eq(persister_own_load(p, pool, &t), HKV_OK);
    persister_destroy(&p);
    ck_assert_ptr_nonnull(t);
    return t;
}

START_TEST(move_states_survive_a_reopen)
{
    struct persist_own *t = persist_own_new(4);
    snprintf(t->cluster, sizeof(t->cluster), "test");
    t->number = 3;
    t->pool = 0;
    t->revision = 99;
    t->leaves[0] = (struct persist_own_leaf){.start = 0, .bits = 2, .epoch = 5};
    t->leaves[1] = (struct persist_own_leaf){.start = 1u << 30, .bits = 2, .epoch = 40,
                                             .state = PERSIST_HANDING_OFF, .e1 = 41, .peer = 7};
    t->leaves[2] = (struct persist_own_leaf){.start = 2u << 30, .bits = 3, .epoch = 42,
                                             .state = PERSIST_RECEIVING, .e1 = 42, .peer = 2};
    t->leaves[3] = (struct persist_own_leaf){.start = 3u << 30, .bits = 2, .epoch = 43,
                                             .state = PERSIST_GONE, .e1 = 43, .e2 = 44,
                                             .peer = 9};
    save(t);
    struct persist_own *r = load(0);
    ck_assert_uint_eq(r->n, 4);
    ck_assert_str_eq(r->cluster, "test");
    ck_assert_uint_eq(r->number, 3);
    ck_assert_int_eq(r->revision, 99);
    ck_assert_uint_eq(r->leaves[0].state, PERSIST_OWNED);
    ck_assert_uint_eq(r->leaves[1].state, PERSIST_HANDING_OFF);
    ck_assert_int_eq(r->leaves[1].e1, 41);
    ck_assert_uint_eq(r->leaves[1].peer, 7);
    ck_assert_uint_eq(r->leaves[2].state, PERSIST_RECEIVING);
    ck_assert_uint_eq(r->leaves[2].bits, 3);
    ck_assert_uint_eq(r->leaves[3].state, PERSIST_GONE);
    ck_assert_int_eq(r->leaves[3].e2, 44);
    ck_assert_uint_eq(r->leaves[3].peer, 9);
    persist_own_free(&r);
    /* another pool's rows are not this pool's */
    r = load(1);
    ck_assert_uint_eq(r->n, 0);
    persist_own_free(&r);
}
END_TEST

START_TEST(a_table_from_before_moves_reads_as_owned_and_takes_the_columns)
{
    struct persist_own *t = persist_own_new(0);
    save(t); /* makes the file */
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "DROP TABLE own; CREATE TABLE own(pool INTEGER NOT NULL,"
                                      " start INTEGER NOT NULL, bits INTEGER NOT NULL, epoch "
                                      "INTEGER NOT NULL, PRIMARY KEY(pool, start, bits)) WITHOUT "
                                      "ROWID; INSERT INTO own VALUES(0, 0, 1, 7), (0, 2147483648,"
                                      " 1, 8);", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    struct persist_own *r = load(0);
    ck_assert_uint_eq(r->n, 2);
    ck_assert_uint_eq(r->leaves[0].state, PERSIST_OWNED);
    ck_assert_uint_eq(r->leaves[1].state, PERSIST_OWNED);
    ck_assert_int_eq(r->leaves[1].epoch, 8);
    r->leaves[1].state = PERSIST_GONE;
    r->leaves[1].e2 = 12;
    save(r);
    r = load(0);
    ck_assert_uint_eq(r->leaves[1].state, PERSIST_GONE);
    ck_assert_int_eq(r->leaves[1].e2, 12);
    persist_own_free(&r);
}
END_TEST

Suite *persist_own_suite(void)
{
    Suite *s = suite_create("persist_own");
    TCase *tc = tcase_create("states");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, move_states_survive_a_reopen);
    tcase_add_test(tc, a_table_from_before_moves_reads_as_owned_and_takes_the_columns);
    suite_add_tcase(s, tc);
    return s;
}
