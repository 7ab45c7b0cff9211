/*
 * check_persist_rehome.c - the move of rows between an owner pool's files
 * (storage/persist_rehome.h): rows go where owner_of says; a newer row in
 * the destination wins; a crash after the copy and before the delete (the
 * row in both files at one stamp) is settled by the next run; the layout
 * marker makes a settled pool a no-op.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "storage/persist_db.h"
#include "storage/persist_rehome.h"
#include "tests/harness.h"

static char paths[2][512];
static const char *pp[2] = {paths[0], paths[1]};

/* keys starting with 'b' belong in file 1, everything else in file 0 */
static int owner_of(void *arg, const char *key, size_t klen)
{
    (void)arg;
    return klen > 0 && key[0] == 'b' ? 1 : 0;
}

static void put(int f, const char *k, const char *v, hkv_stamp stamp)
{
    char why[256];
    ck_assert_msg(pdb_prepare_file(paths[f], why, sizeof(why)) == HKV_OK, "%s", why);
    struct pdb db = {0};
    ck_assert_msg(pdb_open(&db, paths[f], 0, 1000, 0, why, sizeof(why)) == HKV_OK, "%s", why);
    struct persist_row row = {.key = (char *)k, .klen = strlen(k), .val = (char *)v,
                              .vlen = strlen(v), .stamp = stamp};
    int applied;
    ck_assert_int_eq(pdb_begin(&db), SQLITE_OK);
    ck_assert_int_eq(pdb_upsert(&db, &row, &applied), SQLITE_OK);
    ck_assert_int_eq(pdb_commit(&db), SQLITE_OK);
    pdb_close(&db);
}

/* The value stored for k in file f, or "" if none. */
static void get(int f, const char *k, char *out, size_t len)
{
    char why[256];
    struct pdb db = {0};
    ck_assert_msg(pdb_open(&db, paths[f], 1, 1000, 0, why, sizeof(why)) == HKV_OK, "%s", why);
    struct persist_row row;
    out[0] = '\0';
    if (pdb_get(&db, k, strlen(k), &row) == SQLITE_ROW)
        snprintf(out, len, "%.*s", (int)row.vlen, row.val != NULL ? row.val : "");
    pdb_get_done(&db);
    pdb_close(&db);
}

static void setup(void)
{
    h_dir_setup();
    snprintf(paths[0], sizeof(paths[0]), "%s/owner-cold-0.db", h_fixture_dir);
    snprintf(paths[1], sizeof(paths[1]), "%s/owner-cold-1.db", h_fixture_dir);
}

START_TEST(rows_move_newer_wins_and_a_half_done_move_settles)
{
    put(0, "a1", "stays", 10);
    put(0, "b1", "moves", 10);
    put(0, "b2", "older", 10);
    put(1, "b2", "newer", 20);      /* the destination's newer row wins */
    put(0, "b3", "twice", 30);      /* a crash after the copy, before the delete */
    put(1, "b3", "twice", 30);
    struct persist_rehome_stats st;
    char why[256], v[64];
    ck_assert_msg(persist_rehome(pp, 2, 2, "L1", owner_of, NULL, &st, why, sizeof(why)) == HKV_OK,
                  "%s", why);
    ck_assert_uint_eq(st.files_scanned, 2);
    ck_assert_uint_eq(st.rows_moved, 1);
    ck_assert_uint_eq(st.rows_stale, 2);
    get(0, "a1", v, sizeof(v)); ck_assert_str_eq(v, "stays");
    get(0, "b1", v, sizeof(v)); ck_assert_str_eq(v, "");
    get(1, "b1", v, sizeof(v)); ck_assert_str_eq(v, "moves");
    get(0, "b2", v, sizeof(v)); ck_assert_str_eq(v, "");
    get(1, "b2", v, sizeof(v)); ck_assert_str_eq(v, "newer");
    get(0, "b3", v, sizeof(v)); ck_assert_str_eq(v, "");
    get(1, "b3", v, sizeof(v)); ck_assert_str_eq(v, "twice");

    /* settled: the same layout scans nothing; a new layout scans again */
    ck_assert_int_eq(persist_rehome(pp, 2, 2, "L1", owner_of, NULL, &st, why, sizeof(why)), HKV_OK);
    ck_assert_uint_eq(st.files_scanned, 0);
    ck_assert_int_eq(persist_rehome(pp, 2, 2, "L2", owner_of, NULL, &st, why, sizeof(why)), HKV_OK);
    ck_assert_uint_eq(st.files_scanned, 2);
    ck_assert_uint_eq(st.rows_moved + st.rows_stale, 0);
}
END_TEST

START_TEST(a_file_past_the_pool_is_emptied_and_removed)
{
    put(1, "a9", "from-the-old-second-owner", 5);
    put(0, "a0", "here", 5);
    struct persist_rehome_stats st;
    char why[256], v[64];
    /* the pool shrank to one owner: file 1 is a leftover */
    ck_assert_msg(persist_rehome(pp, 2, 1, "one", owner_of, NULL, &st, why, sizeof(why)) == HKV_OK,
                  "%s", why);
    ck_assert_uint_eq(st.rows_moved, 1);
    get(0, "a9", v, sizeof(v)); ck_assert_str_eq(v, "from-the-old-second-owner");
    ck_assert_int_ne(access(paths[1], F_OK), 0);
}
END_TEST

START_TEST(missing_files_are_skipped)
{
    struct persist_rehome_stats st;
    char why[256];
    ck_assert_int_eq(persist_rehome(pp, 2, 2, "L", owner_of, NULL, &st, why, sizeof(why)), HKV_OK);
    ck_assert_uint_eq(st.files_scanned, 0);
    ck_assert_int_ne(access(paths[0], F_OK), 0); /* nothing created */
}
END_TEST

START_TEST(a_corrupt_file_is_left_untouched_and_tried_again_later)
{
    put(0, "b1", "for-file-1", 7);
    put(0, "a1", "stays", 7);
    FILE *f = fopen(paths[1], "w");
    ck_assert_ptr_nonnull(f);
    fputs("not a database\n", f);
    fclose(f);
    struct persist_rehome_stats st;
    char why[256], v[64];
    ck_assert_int_eq(persist_rehome(pp, 2, 2, "L", owner_of, NULL, &st, why, sizeof(why)), HKV_OK);
    ck_assert_uint_eq(st.files_refused, 1);
    ck_assert_uint_eq(st.rows_kept, 1);
    ck_assert_ptr_nonnull(strstr(why, paths[1]));
    f = fopen(paths[1], "r");
    char line[64] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
    fclose(f);
    ck_assert_str_eq(line, "not a database\n");
    get(0, "b1", v, sizeof(v)); ck_assert_str_eq(v, "for-file-1");
    /* the file is repaired (here: removed): the next run moves the row */
    unlink(paths[1]);
    ck_assert_int_eq(persist_rehome(pp, 2, 2, "L", owner_of, NULL, &st, why, sizeof(why)), HKV_OK);
    ck_assert_uint_eq(st.rows_moved, 1);
    get(1, "b1", v, sizeof(v)); ck_assert_str_eq(v, "for-file-1");
}
END_TEST

Suite *persist_rehome_suite(void)
{
    Suite *s = suite_create("persist_rehome");
    const struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"move", rows_move_newer_wins_and_a_half_done_move_settles},
        {"shrink", a_file_past_the_pool_is_emptied_and_removed},
        {"missing", missing_files_are_skipped},
        {"corrupt", a_corrupt_file_is_left_untouched_and_tried_again_later},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        /* unchecked: one temp dir per case, made and removed by the runner */
        tcase_add_unchecked_fixture(tc, setup, h_dir_teardown);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
