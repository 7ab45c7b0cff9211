/*
 * check_persist_migrate.c - schema 1 -> 2 (the position column and its
 * index), migrated in place when the file is opened.
 *
 * Old files are made here with the old schema's SQL, verbatim, so the test
 * does not depend on code that no longer writes them.  The kill test runs
 * the migration in a child process, is told through a pipe how far it got,
 * and kills it with SIGKILL in the middle of filling and again in the
 * middle of the index; the next open must finish the job and leave every
 * row with the right position.  HKV_MIGRATE_ROWS=N (e.g. 1000000) sizes the
 * file the rate test builds and prints rows/s for (default 100000).
 */
#include <check.h>
#include <ftw.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "proto/place.h"
#include "storage/persist_db.h"
#include "storage/persister.h"

static char dir[64];
static char dbpath[128];

/* The version 1 schema, as persist_db.c created it. */
static const char V1_SCHEMA[] =
    "PRAGMA application_id=1212896836;"
    "PRAGMA user_version=1;"
    "BEGIN;"
    "CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB, stamp INTEGER NOT NULL,"
    " expire_at INTEGER NOT NULL DEFAULT 0, class INTEGER NOT NULL,"
    " tomb INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
    "CREATE TABLE meta(name TEXT PRIMARY KEY, value) WITHOUT ROWID;"
    "INSERT INTO meta(name, value) VALUES('format','hotkvd'),('schema',1);"
    "COMMIT;";

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/hkv-migrate-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(dbpath, sizeof(dbpath), "%s/owner.db", dir);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void teardown(void)
{
    nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The key of row i: a mix of plain keys, hash-tagged keys (many on one
 * placement hash), keys with a NUL byte, and the empty key (i == 0). */
static size_t key_of(long i, char *k, size_t len)
{
    if (i == 0)
        return 0;
    if (i % 5 == 1)
        return (size_t)snprintf(k, len, "{tag%ld}:item:%ld", i % 7, i);
    if (i % 5 == 2) {
        int n = snprintf(k, len, "bin?%ld", i);
        k[3] = '\0';
        return (size_t)n;
    }
    return (size_t)snprintf(k, len, "key:%ld", i);
}

/* A version 1 file with rows 0..n-1 (every 10th a tombstone), WAL like the
 * persister makes them. */
static void make_v1(long n)
{
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, V1_SCHEMA, NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "PRAGMA journal_mode=WAL; BEGIN", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_stmt *s = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(db,
                                        "INSERT INTO kv(k, v, stamp, expire_at, class, tomb) "
                                        "VALUES(?1, ?2, ?3, 0, 1, ?4)",
                                        -1, &s, NULL),
                     SQLITE_OK);
    char k[64];
    for (long i = 0; i < n; i++) {
        size_t kl = key_of(i, k, sizeof(k));
        if (kl == 0)
            sqlite3_bind_zeroblob(s, 1, 0);
        else
            sqlite3_bind_blob(s, 1, k, (int)kl, SQLITE_TRANSIENT);
        if (i % 10 == 9)
            sqlite3_bind_null(s, 2);
        else
            sqlite3_bind_blob(s, 2, "value", 5, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, 1000 + i);
        sqlite3_bind_int(s, 4, i % 10 == 9);
        ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    ck_assert_int_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static int64_t q_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(db));
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* Every row of the file has hpos == place_pos(k), no row lacks one, the
 * file says version 2 and its marker is gone; returns the row count. */
static long assert_migrated(void)
{
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_int_eq(q_int(db, "PRAGMA user_version"), 2);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE name='schema'"), 2);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM meta WHERE name='migrate_after'"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM kv WHERE hpos IS NULL"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE name='kv_hpos'"), 1);
    sqlite3_stmt *s = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT k, hpos FROM kv", -1, &s, NULL), SQLITE_OK);
    long n = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        const void *k = sqlite3_column_blob(s, 0);
        size_t kl = (size_t)sqlite3_column_bytes(s, 0);
        ck_assert_uint_eq((uint64_t)sqlite3_column_int64(s, 1), place_pos(k ? k : "", kl));
        n++;
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return n;
}

struct seen {
    int phases[4];
    struct persist_migration first, last;
    int calls;
};

static void on_progress(void *arg, const struct persist_migration *m)
{
    struct seen *s = arg;
    if (s->calls++ == 0)
        s->first = *m;
    s->last = *m;
    s->phases[m->phase]++;
}

static struct persister *open_p(struct seen *seen)
{
    struct persister_options o = {.migrate_progress = on_progress, .migrate_arg = seen};
    struct persister *p = NULL;
    char why[256] = "";
    int rc = persister_create(&p, dbpath, &o, why, sizeof(why));
    ck_assert_msg(rc == HKV_OK, "create: %d %s", rc, why);
    return p;
}

static int count_row(void *arg, const struct persist_row *r)
{
    (void)r;
    (*(long *)arg)++;
    return HKV_OK;
}

START_TEST(v1_file_migrated_in_place_with_every_position_right)
{
    enum { N = 5000 };
    make_v1(N);
    pdb_migrate_test_batch(700); /* several batches, the last one short */
    struct seen seen = {0};
    struct persister *p = open_p(&seen);
    ck_assert_int_eq(seen.first.from_version, 1);
    ck_assert_uint_eq(seen.first.rows_total, N);
    ck_assert_uint_eq(seen.first.rows_resumed, 0);
    ck_assert_int_ge(seen.phases[PERSIST_MIG_FILL], N / 700);
    ck_assert_int_eq(seen.phases[PERSIST_MIG_INDEX], 1);
    ck_assert_int_eq(seen.phases[PERSIST_MIG_DONE], 1);
    ck_assert_int_eq(seen.last.phase, PERSIST_MIG_DONE);
    ck_assert_uint_eq(seen.last.rows_done, N);
    long loaded = 0;
    ck_assert_int_eq(persister_load(p, count_row, &loaded), HKV_OK);
    ck_assert_int_eq(loaded, N);
    /* a row written after the migration gets its position too */
    struct persist_batch *b = persist_batch_new(1);
    ck_assert_int_eq(persist_batch_add(b, "{tag3}:new", 10, "v", 1, 99999, 0, 1, 0), HKV_OK);
    ck_assert_int_eq(persister_submit(p, b), HKV_OK);
    ck_assert_int_eq(persister_stop(p), HKV_OK);
    persister_destroy(&p);
    ck_assert_int_eq(assert_migrated(), N + 1);

    /* a second open has nothing to do */
    struct seen again = {0};
    p = open_p(&again);
    ck_assert_int_eq(again.calls, 0);
    persister_destroy(&p);
}
END_TEST

/* A writer that does not migrate (the master's rehome, before the owners
 * start) writes a schema 1 file as it is; the owner's persister migrates it
 * later, rows written meanwhile included, and logs that, not the master. */
START_TEST(a_writer_that_does_not_migrate_writes_schema_1_and_the_persister_migrates_later)
{
    make_v1(100);
    char why[256] = "";
    ck_assert_msg(pdb_prepare_file(dbpath, why, sizeof(why)) == HKV_OK, "%s", why);
    struct pdb d;
    ck_assert_msg(pdb_open(&d, dbpath, 0, 1000, 0, why, sizeof(why)) == HKV_OK, "%s", why);
    ck_assert_int_eq(d.schema, PDB_SCHEMA_V1);
    struct persist_row r = {.key = "rehomed", .klen = 7, .val = "x", .vlen = 1, .stamp = 5};
    int applied = 0;
    ck_assert_int_eq(pdb_begin(&d), SQLITE_OK);
    ck_assert_int_eq(pdb_upsert(&d, &r, &applied), SQLITE_OK);
    ck_assert_int_eq(applied, 1);
    ck_assert_int_eq(pdb_commit(&d), SQLITE_OK);
    pdb_close(&d);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_int_eq(q_int(db, "PRAGMA user_version"), 1);
    sqlite3_close(db);
    struct seen seen = {0};
    struct persister *p = open_p(&seen);
    persister_destroy(&p);
    ck_assert_int_eq(seen.phases[PERSIST_MIG_DONE], 1);
    ck_assert_int_eq(assert_migrated(), 101);
}
END_TEST

/* EXPLAIN QUERY PLAN of a leaf's range, on the migrated file: the index. */
START_TEST(leaf_range_query_uses_the_index_after_migration)
{
    make_v1(2000);
    struct persister *p = open_p(&(struct seen){0});
    persister_destroy(&p);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    const char *qs[] = {
        "EXPLAIN QUERY PLAN SELECT k, v FROM kv WHERE hpos >= 1 AND hpos < 4611686018427387904 "
        "ORDER BY hpos, k",
        "EXPLAIN QUERY PLAN SELECT count(*) FROM kv WHERE hpos >= 1 AND hpos < 99",
        "EXPLAIN QUERY PLAN DELETE FROM kv WHERE k IN (SELECT k FROM kv WHERE hpos >= 1 AND "
        "hpos < 99 LIMIT 10)",
    };
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        sqlite3_stmt *s = NULL;
        ck_assert_int_eq(sqlite3_prepare_v2(db, qs[i], -1, &s, NULL), SQLITE_OK);
        char plan[1024] = "";
        while (sqlite3_step(s) == SQLITE_ROW) {
            size_t u = strlen(plan);
            snprintf(plan + u, sizeof(plan) - u, "%s; ", (const char *)sqlite3_column_text(s, 3));
        }
        sqlite3_finalize(s);
        ck_assert_msg(strstr(plan, "INDEX kv_hpos (hpos>? AND hpos<?)") != NULL, "%s: %s", qs[i],
                      plan);
        ck_assert_msg(strstr(plan, "SCAN kv") == NULL, "a full scan: %s", plan);
        ck_assert_msg(strstr(plan, "TEMP B-TREE") == NULL, "a sort: %s", plan);
    }
    sqlite3_close(db);
}
END_TEST

/* The child's end of the pipe it reports its progress through. */
static int report_fd = -1;

static void child_progress(void *arg, const struct persist_migration *m)
{
    (void)arg;
    char line[64];
    int n = snprintf(line, sizeof(line), "%d %llu %llu\n", (int)m->phase,
                     (unsigned long long)m->rows_done, (unsigned long long)m->rows_resumed);
    if (write(report_fd, line, (size_t)n) != n)
        _exit(3);
}

/* Starts a child migrating the file (batch rows a transaction) and kills
 * it with SIGKILL once it reports rows_done >= at_fill while filling (0:
 * never) or, with at_index, the start of the index phase.  1 if it was
 * killed mid-way, 0 if it finished first. */
static int migrate_and_kill(int at_fill, int at_index, size_t batch)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        report_fd = fds[1];
        pdb_migrate_test_batch(batch);
        struct persister_options o = {.migrate_progress = child_progress};
        struct persister *p = NULL;
        char why[256];
        int rc = persister_create(&p, dbpath, &o, why, sizeof(why));
        _exit(rc == HKV_OK ? 0 : 2);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[128];
    int killed = 0;
    int64_t t0 = now_ms();
    while (!killed && now_ms() - t0 < 60000 && fgets(line, sizeof(line), f) != NULL) {
        int phase;
        unsigned long long done, resumed;
        ck_assert_int_eq(sscanf(line, "%d %llu %llu", &phase, &done, &resumed), 3);
        if ((at_fill && phase == PERSIST_MIG_FILL && done >= (unsigned long long)at_fill) ||
            (at_index && phase == PERSIST_MIG_INDEX)) {
            kill(pid, SIGKILL);
            killed = 1;
        }
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    fclose(f);
    if (killed)
        ck_assert_msg(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) == 0),
                      "child status %d", st);
    else
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    return killed && WIFSIGNALED(st);
}

START_TEST(migration_killed_mid_way_resumes_on_the_next_open)
{
    enum { N = 200000 };
    make_v1(N);
    /* killed while filling: a version 1 file with part of its rows filled
     * and the marker where the last committed batch ended */
    ck_assert_int_eq(migrate_and_kill(N / 3, 0, 2000), 1);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_int_eq(q_int(db, "PRAGMA user_version"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM meta WHERE name='migrate_after'"), 1);
    int64_t filled = q_int(db, "SELECT count(*) FROM kv WHERE hpos IS NOT NULL");
    ck_assert_int_ge(filled, N / 3);
    ck_assert_int_lt(filled, N);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM kv WHERE hpos IS NOT NULL AND k > "
                               "(SELECT value FROM meta WHERE name='migrate_after')"),
                     0);
    sqlite3_close(db);

    /* killed again, while the index is being made: still version 1 */
    int killed = migrate_and_kill(0, 1, 2000);
    ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    if (killed)
        ck_assert_int_eq(q_int(db, "PRAGMA user_version"), 1);
    sqlite3_close(db);

    /* the next open finishes, from where the last run stopped */
    struct seen seen = {0};
    struct persister *p = open_p(&seen);
    if (killed)
        ck_assert_uint_eq(seen.first.rows_resumed, N);
    persister_destroy(&p);
    ck_assert_int_eq(assert_migrated(), N);
}
END_TEST

/* The figure for the report: rows/s of a migration of a large file. */
START_TEST(migration_rate_of_a_large_file)
{
    const char *env = getenv("HKV_MIGRATE_ROWS");
    long n = env != NULL ? atol(env) : 100000;
    if (n < 1000)
        n = 1000;
    int64_t t0 = now_ms();
    make_v1(n);
    int64_t t1 = now_ms();
    struct seen seen = {0};
    struct persister *p = open_p(&seen);
    int64_t t2 = now_ms();
    persister_destroy(&p);
    ck_assert_uint_eq(seen.last.rows_done, (uint64_t)n);
    ck_assert_int_eq(assert_migrated(), n);
    struct stat st;
    ck_assert_int_eq(stat(dbpath, &st), 0);
    fprintf(stderr,
            "migration: %ld rows (file %.1f MiB, built in %lld ms) migrated in %lld ms: "
            "%.0f rows/s\n",
            n, (double)st.st_size / (1 << 20), (long long)(t1 - t0), (long long)(t2 - t1),
            (double)n * 1000.0 / (double)(t2 - t1 > 0 ? t2 - t1 : 1));
}
END_TEST

static TCase *tc(const char *name, const TTest *t, int timeout_s)
{
    TCase *c = tcase_create(name);
    tcase_add_unchecked_fixture(c, setup, teardown);
    tcase_set_timeout(c, timeout_s);
    tcase_add_test(c, t);
    return c;
}

Suite *persist_migrate_suite(void)
{
    Suite *s = suite_create("persist_migrate");
    suite_add_tcase(s, tc("in_place", v1_file_migrated_in_place_with_every_position_right, 30));
    suite_add_tcase(s, tc("index_plan", leaf_range_query_uses_the_index_after_migration, 30));
    suite_add_tcase(s, tc("no_migrate", a_writer_that_does_not_migrate_writes_schema_1_and_the_persister_migrates_later, 30));
    suite_add_tcase(s, tc("kill9", migration_killed_mid_way_resumes_on_the_next_open, 120));
    suite_add_tcase(s, tc("rate", migration_rate_of_a_large_file, 600));
    return s;
}
