/*
 * check_persister_file.c - the write-behind SQLite thread and the file it
 * is given: a missing file is created with hotkvd's markers; a crash image
 * with its WAL recovers; a corrupt, foreign or truncated file is refused and
 * left untouched (the rest: check_persister.c).
 */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/persister_fixture.h"

START_TEST(missing_file_created_with_markers)
{
    struct persister *p = open_p(NULL);
    persister_destroy(&p);
    ck_assert(exists(dbpath));
    char tmp[256];
    snprintf(tmp, sizeof(tmp), "%s.new", dbpath);
    ck_assert(!exists(tmp));

    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db,
                                        "SELECT (SELECT application_id FROM pragma_application_id),"
                                        " (SELECT user_version FROM pragma_user_version),"
                                        " (SELECT journal_mode FROM pragma_journal_mode),"
                                        " (SELECT value FROM meta WHERE name='format')",
                                        -1, &s, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int64(s, 0), HKVD_APP_ID);
    ck_assert_int_eq(sqlite3_column_int(s, 1), 2); /* schema 2: kv.hpos */
    ck_assert_str_eq((const char *)sqlite3_column_text(s, 2), "wal");
    ck_assert_str_eq((const char *)sqlite3_column_text(s, 3), "hotkvd");
    sqlite3_finalize(s);
    sqlite3_close(db);

    /* reopening our own file works, and a stray WAL without its file is refused */
    p = open_p(NULL);
    persister_destroy(&p);
    char wal[256], other[200];
    snprintf(other, sizeof(other), "%s/gone.db", dir);
    snprintf(wal, sizeof(wal), "%s-wal", other);
    spit(wal, "not empty", 9);
    char why[256] = "";
    ck_assert_int_eq(persister_create(&p, other, NULL, why, sizeof(why)), HKV_ECORRUPT);
    ck_assert(!exists(other));
}
END_TEST

static void copy_file(const char *from, const char *to)
{
    size_t len;
    unsigned char *b = slurp(from, &len);
    spit(to, b, len);
    free(b);
}

START_TEST(crash_image_with_wal_recovers)
{
    /* copy the database and its WAL while the persister runs: what a kill -9
     * leaves behind (committed rows live only in the WAL) */
    struct persister *p = open_p(NULL);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    ck_assert_int_eq(persister_submit(p, batch1(1, "walrow", "w", 42, 0)), HKV_OK);
    wait_done(p, 1, HKV_OK);
    char wal[256], crash[200], crashwal[256];
    snprintf(wal, sizeof(wal), "%s-wal", dbpath);
    snprintf(crash, sizeof(crash), "%s/crash.db", dir);
    snprintf(crashwal, sizeof(crashwal), "%s-wal", crash);
    struct stat st;
    ck_assert_int_eq(stat(wal, &st), 0);
    ck_assert_int_gt(st.st_size, 0);
    copy_file(dbpath, crash);
    copy_file(wal, crashwal);
    persister_destroy(&p);

    char why[256] = "";
    struct loaded *l = calloc(1, sizeof(*l));
    ck_assert_int_eq(persister_create(&p, crash, NULL, why, sizeof(why)), HKV_OK);
    ck_assert_int_eq(persister_load(p, collect, l), HKV_OK);
    ck_assert_uint_eq(l->n, 1);
    ck_assert_ptr_nonnull(find(l, "walrow"));
    loaded_free(l);
    persister_destroy(&p);
}
END_TEST

START_TEST(corrupt_file_refused_and_untouched)
{
    unsigned char junk[8192];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)(i * 131 + 7);
    spit(dbpath, junk, sizeof(junk));
    assert_refused_untouched(dbpath);

    /* one of ours with a damaged b-tree page: caught by the contents check */
    unlink(dbpath);
    struct persister *p = open_p(NULL);
    struct persist_batch *b = persist_batch_new(0);
    char key[16], val[200];
    memset(val, 'x', sizeof(val));
    for (int i = 0; i < 300; i++) {
        int n = snprintf(key, sizeof(key), "key%d", i);
        ck_assert_int_eq(persist_batch_add(b, key, (size_t)n, val, sizeof(val), 9, 0, 0, 0),
                         HKV_OK);
    }
    ck_assert_int_eq(persister_submit(p, b), HKV_OK);
    ck_assert_int_eq(persister_stop(p), HKV_OK);
    persister_destroy(&p); /* checkpointed: everything is in the main file */

    size_t len;
    unsigned char *img = slurp(dbpath, &len);
    ck_assert_uint_ge(len, 4096 * 6);
    unsigned char *orig = malloc(len);
    memcpy(orig, img, len);
    for (size_t i = len - 4096 + 100; i < len; i++) /* the body of a kv leaf page */
        img[i] = 0xA5;
    spit(dbpath, img, len);
    assert_refused_untouched(dbpath); /* PRAGMA quick_check */
    memcpy(img, orig, len);
    for (size_t i = 4096; i < 4096 * 5; i++) /* pages 2..5: the schema's tables */
        img[i] = 0xA5;
    spit(dbpath, img, len);
    assert_refused_untouched(dbpath);
    free(orig);
    free(img);
}
END_TEST

START_TEST(foreign_sqlite_file_refused)
{
    sql(dbpath, "PRAGMA application_id=42; CREATE TABLE t(x); INSERT INTO t VALUES(1);");
    assert_refused_untouched(dbpath);

    /* no application_id at all, but the right table names */
    unlink(dbpath);
    sql(dbpath, "CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB);"
                "CREATE TABLE meta(name, value);");
    assert_refused_untouched(dbpath);

    /* our application_id, someone else's schema version */
    unlink(dbpath);
    struct persister *p = open_p(NULL);
    persister_destroy(&p);
    sql(dbpath, "PRAGMA user_version=99;");
    assert_refused_untouched(dbpath);
}
END_TEST

START_TEST(truncated_file_refused)
{
    struct persister *p = open_p(NULL);
    struct persist_batch *b = persist_batch_new(0);
    char key[16], val[300];
    memset(val, 'y', sizeof(val));
    for (int i = 0; i < 200; i++) {
        int n = snprintf(key, sizeof(key), "key%d", i);
        ck_assert_int_eq(persist_batch_add(b, key, (size_t)n, val, sizeof(val), 9, 0, 0, 0),
                         HKV_OK);
    }
    ck_assert_int_eq(persister_submit(p, b), HKV_OK);
    ck_assert_int_eq(persister_stop(p), HKV_OK);
    persister_destroy(&p);

    size_t len;
    unsigned char *img = slurp(dbpath, &len);
    ck_assert_uint_ge(len, 4096 * 8);
    spit(dbpath, img, (len / 2) & ~(size_t)4095); /* whole pages missing */
    assert_refused_untouched(dbpath);
    spit(dbpath, img, len / 2 + 1000); /* cut mid-page */
    assert_refused_untouched(dbpath);
    spit(dbpath, img, 60); /* shorter than the header */
    assert_refused_untouched(dbpath);
    spit(dbpath, img, 0); /* empty */
    assert_refused_untouched(dbpath);
    free(img);
}
END_TEST

Suite *persister_file_suite(void)
{
    Suite *s = suite_create("persister_file");
    suite_add_tcase(s, tc("create", missing_file_created_with_markers));
    suite_add_tcase(s, tc("crash_image", crash_image_with_wal_recovers));
    suite_add_tcase(s, tc("corrupt", corrupt_file_refused_and_untouched));
    suite_add_tcase(s, tc("foreign", foreign_sqlite_file_refused));
    suite_add_tcase(s, tc("truncated", truncated_file_refused));
    return s;
}
