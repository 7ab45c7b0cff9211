/*
 * check_persister.c - the write-behind SQLite thread and its reader.
 *
 * Every test works in its own mkdtemp directory under /tmp and removes it.
 * Batches submitted before persister_start() all wait in the queue, which
 * makes group commit deterministic without test hooks.  Files are inspected
 * from separate SQLite connections to prove what is really on disk.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "storage/persist_row.h"
#include "storage/persister.h"

#define TIMEOUT_S 20
#define HKVD_APP_ID 0x484b5644

static char dir[64];
static char dbpath[128];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/hkv-persister-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(dbpath, sizeof(dbpath), "%s/owner.db", dir);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void teardown(void)
{
    nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- file helpers ---- */

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void spit(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
}

static void sql(const char *path, const char *stmts)
{
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, stmts, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* Asserts that create refuses `path` with HKV_ECORRUPT and leaves it as it was. */
static void assert_refused_untouched(const char *path)
{
    size_t before_len, after_len;
    unsigned char *before = slurp(path, &before_len);
    struct persister *p = (struct persister *)0x1;
    char why[256] = "";
    char wal[256], shm[256];
    snprintf(wal, sizeof(wal), "%s-wal", path);
    snprintf(shm, sizeof(shm), "%s-shm", path);
    int had_wal = exists(wal), had_shm = exists(shm);

    ck_assert_int_eq(persister_create(&p, path, NULL, why, sizeof(why)), HKV_ECORRUPT);
    ck_assert_ptr_null(p);
    ck_assert_msg(why[0] != '\0', "a reason is given");

    unsigned char *after = slurp(path, &after_len);
    ck_assert_uint_eq(after_len, before_len);
    ck_assert_int_eq(memcmp(before, after, before_len), 0);
    ck_assert_int_eq(exists(wal), had_wal);
    ck_assert_int_eq(exists(shm), had_shm);
    free(before);
    free(after);
}

/* ---- persister helpers ---- */

static struct persister *open_p(const struct persister_options *opt)
{
    struct persister *p = NULL;
    char why[256] = "";
    int rc = persister_create(&p, dbpath, opt, why, sizeof(why));
    ck_assert_msg(rc == HKV_OK, "create: %d %s", rc, why);
    ck_assert_ptr_nonnull(p);
    return p;
}

static struct persist_batch *batch1(int durable, const char *key, const char *val,
                                    hkv_stamp stamp, int tomb)
{
    struct persist_batch *b = persist_batch_new(durable);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(persist_batch_add(b, key, strlen(key), val, val ? strlen(val) : 0, stamp,
                                       0, 1, tomb),
                     HKV_OK);
    return b;
}

static void wait_fd(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    ck_assert_int_eq(poll(&pfd, 1, 15000), 1);
    uint64_t v;
    ssize_t n = read(fd, &v, sizeof(v));
    ck_assert(n == (ssize_t)sizeof(v) || (n < 0 && errno == EAGAIN));
}

/* Waits for `n` finished batches through the notify fd; checks each is
 * HKV_OK unless `expect` says otherwise; frees them. */
static void wait_done(struct persister *p, int n, int expect)
{
    int got = 0;
    while (got < n) {
        wait_fd(persister_notify_fd(p));
        struct persist_batch *b = persister_take_done(p), *next;
        for (; b != NULL; b = next) {
            next = b->next;
            ck_assert_int_eq(b->status, expect);
            ck_assert_int_ge(b->commit_ms, 0);
            persist_batch_free(&b);
            got++;
        }
    }
    ck_assert_int_eq(got, n);
}

struct loaded {
    size_t n;
    struct persist_row rows[2048];
};

static int collect(void *arg, const struct persist_row *r)
{
    struct loaded *l = arg;
    ck_assert_uint_lt(l->n, 2048);
    struct persist_row *c = &l->rows[l->n++];
    *c = *r;
    c->key = malloc(r->klen + 1);
    memcpy(c->key, r->key, r->klen);
    c->key[r->klen] = '\0';
    c->val = NULL;
    if (r->val != NULL) {
        c->val = malloc(r->vlen + 1);
        memcpy(c->val, r->val, r->vlen);
        c->val[r->vlen] = '\0';
    }
    return HKV_OK;
}

static void loaded_free(struct loaded *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->rows[i].key);
        free(l->rows[i].val);
    }
    free(l);
}

/* Opens the file afresh and loads every row. */
static struct loaded *reload(void)
{
    struct loaded *l = calloc(1, sizeof(*l));
    struct persister *p = open_p(NULL);
    ck_assert_int_eq(persister_load(p, collect, l), HKV_OK);
    persister_destroy(&p);
    ck_assert_ptr_null(p);
    return l;
}

static const struct persist_row *find(const struct loaded *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->rows[i].klen == strlen(key) && memcmp(l->rows[i].key, key, l->rows[i].klen) == 0)
            return &l->rows[i];
    return NULL;
}

/* ---- tests ---- */

START_TEST(guarded_upsert_keeps_newer_row)
{
    struct persister *p = open_p(NULL);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    /* newer first, then older and an equal-stamp retry, each its own transaction */
    ck_assert_int_eq(persister_submit(p, batch1(0, "k", "new", 200, 0)), HKV_OK);
    wait_done(p, 1, HKV_OK);
    ck_assert_int_eq(persister_submit(p, batch1(0, "k", "old", 100, 0)), HKV_OK);
    wait_done(p, 1, HKV_OK);
    ck_assert_int_eq(persister_submit(p, batch1(1, "k", "retry", 200, 0)), HKV_OK);
    wait_done(p, 1, HKV_OK);
    /* in one transaction, an older tombstone cannot hide the newer row either */
    ck_assert_int_eq(persister_submit(p, batch1(0, "k", NULL, 150, 1)), HKV_OK);
    wait_done(p, 1, HKV_OK);

    struct persister_stats st;
    persister_stats(p, &st);
    ck_assert_uint_eq(st.rows, 1);
    ck_assert_uint_eq(st.rows_stale, 3);
    ck_assert_uint_eq(st.transactions, 4);
    ck_assert_int_eq(persister_stop(p), HKV_OK);
    persister_destroy(&p);

    struct loaded *l = reload();
    ck_assert_uint_eq(l->n, 1);
    ck_assert_uint_eq(l->rows[0].stamp, 200);
    ck_assert_uint_eq(l->rows[0].tombstone, 0);
    ck_assert_uint_eq(l->rows[0].vlen, 3);
    ck_assert_int_eq(memcmp(l->rows[0].val, "new", 3), 0);
    loaded_free(l);

    /* and older-then-newer: the newer one wins */
    p = open_p(NULL);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    ck_assert_int_eq(persister_submit(p, batch1(0, "k", "newest", 300, 0)), HKV_OK);
    wait_done(p, 1, HKV_OK);
    persister_destroy(&p);
    l = reload();
    ck_assert_uint_eq(l->n, 1);
    ck_assert_uint_eq(l->rows[0].stamp, 300);
    ck_assert_int_eq(memcmp(l->rows[0].val, "newest", 6), 0);
    loaded_free(l);
}
END_TEST

START_TEST(tombstone_rows_recovered)
{
    struct persister *p = open_p(NULL);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    ck_assert_int_eq(persister_submit(p, batch1(0, "k1", "v1", 100, 0)), HKV_OK);
    wait_done(p, 1, HKV_OK);
    ck_assert_int_eq(persister_submit(p, batch1(0, "k1", NULL, 200, 1)), HKV_OK);
    ck_assert_int_eq(persister_submit(p, batch1(0, "k2", NULL, 300, 1)), HKV_OK);
    ck_assert_int_eq(persister_submit(p, batch1(0, "k3", "v3", 400, 0)), HKV_OK);
    wait_done(p, 3, HKV_OK);
    persister_destroy(&p);

    struct loaded *l = reload();
    ck_assert_uint_eq(l->n, 3);
    const struct persist_row *r = find(l, "k1");
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->tombstone, 1);
    ck_assert_uint_eq(r->stamp, 200);
    ck_assert_ptr_null(r->val);
    r = find(l, "k2");
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->tombstone, 1);
    ck_assert_uint_eq(r->stamp, 300);
    r = find(l, "k3");
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->tombstone, 0);
    loaded_free(l);
}
END_TEST

START_TEST(tombstone_purge_removes_only_older_tombstones)
{
    struct persister_options o = {.idle_ms = 50};
    struct persister *p = open_p(&o);
    ck_assert_int_eq(persister_submit(p, batch1(0, "old-tomb", NULL, 100, 1)), HKV_OK);
    ck_assert_int_eq(persister_submit(p, batch1(0, "new-tomb", NULL, 300, 1)), HKV_OK);
    ck_assert_int_eq(persister_submit(p, batch1(0, "old-live", "v", 50, 0)), HKV_OK);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    wait_done(p, 3, HKV_OK);
    ck_assert_int_eq(persister_purge_tombstones(p, 250), HKV_OK);

    struct persister_stats st;
    for (int i = 0; i < 1000; i++) {
        persister_stats(p, &st);
        if (st.tombs_purged > 0 && st.checkpoints > 0)
            break;
        usleep(10000);
    }
    ck_assert_uint_eq(st.tombs_purged, 1);
    ck_assert_uint_ge(st.checkpoints, 1);
    persister_destroy(&p);

    struct loaded *l = reload();
    ck_assert_uint_eq(l->n, 2);
    ck_assert_ptr_null(find(l, "old-tomb"));
    ck_assert_ptr_nonnull(find(l, "new-tomb"));
    ck_assert_ptr_nonnull(find(l, "old-live"));
    loaded_free(l);
}
END_TEST

START_TEST(group_commit_batches_share_one_transaction)
{
    struct persister *p = open_p(NULL);
    char key[32];
    for (int i = 0; i < 20; i++) {
        struct persist_batch *b = persist_batch_new(i % 4 == 0);
        for (int j = 0; j < 5; j++) {
            int n = snprintf(key, sizeof(key), "b%d-r%d", i, j);
            ck_assert_int_eq(persist_batch_add(b, key, (size_t)n, "v", 1, 1000 + i, 0, 0, 0),
                             HKV_OK);
        }
        b->id = (uint64_t)i;
        ck_assert_int_eq(persister_submit(p, b), HKV_OK);
    }
    struct persister_stats st;
    persister_stats(p, &st);
    ck_assert_uint_eq(st.queued_batches, 20);
    ck_assert_uint_eq(st.queued_rows, 100);

    ck_assert_int_eq(persister_start(p), HKV_OK);
    /* done in submission order, all from one transaction */
    uint64_t want = 0;
    while (want < 20) {
        wait_fd(persister_notify_fd(p));
        for (struct persist_batch *b = persister_take_done(p), *n; b != NULL; b = n) {
            n = b->next;
            ck_assert_uint_eq(b->id, want++);
            ck_assert_int_eq(b->status, HKV_OK);
            persist_batch_free(&b);
        }
    }
    persister_stats(p, &st);
    ck_assert_uint_eq(st.batches, 20);
    ck_assert_uint_eq(st.rows, 100);
    ck_assert_uint_eq(st.transactions, 1);
    ck_assert_uint_eq(st.fsync_commits, 1);
    ck_assert_uint_eq(st.queued_batches, 0);
    ck_assert_uint_eq(st.backlog_age_ms, 0);
    ck_assert_int_eq(st.sticky_error, HKV_OK);
    persister_destroy(&p);
}
END_TEST

START_TEST(durable_batch_reported_done_after_commit)
{
    struct persister *p = open_p(NULL);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    ck_assert_int_eq(persister_submit(p, batch1(1, "dk", "dv", 777, 0)), HKV_OK);
    wait_done(p, 1, HKV_OK);

    /* the persister is still open: another connection must already see it */
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT v, stamp, tomb FROM kv WHERE k=x'646b'", -1,
                                        &s, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_bytes(s, 0), 2);
    ck_assert_int_eq(memcmp(sqlite3_column_blob(s, 0), "dv", 2), 0);
    ck_assert_int_eq(sqlite3_column_int64(s, 1), 777);
    ck_assert_int_eq(sqlite3_column_int(s, 2), 0);
    sqlite3_finalize(s);
    sqlite3_close(db);

    struct persister_stats st;
    persister_stats(p, &st);
    ck_assert_uint_eq(st.fsync_commits, 1);
    ck_assert_int_ge(st.last_commit_at_ms, 1);
    persister_destroy(&p);
}
END_TEST

START_TEST(recovery_loads_every_row)
{
    struct persister *p = open_p(NULL);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    char key[32], val[64];
    int nb = 0;
    for (int i = 0; i < 1000; i += 100, nb++) {
        struct persist_batch *b = persist_batch_new(0);
        for (int j = i; j < i + 100; j++) {
            memcpy(key, "key\0-", 5); /* an embedded NUL */
            int kn = 5 + snprintf(key + 5, sizeof(key) - 5, "%04d", j);
            int vn = snprintf(val, sizeof(val), "value-%d", j * 7);
            ck_assert_int_eq(persist_batch_add(b, key, (size_t)kn, val,
                                               j % 10 == 0 ? 0 : (size_t)vn, (hkv_stamp)j + 1,
                                               j % 3 ? 0 : 1700000000000 + j, (uint16_t)(j % 5),
                                               j % 50 == 7),
                             HKV_OK);
        }
        ck_assert_int_eq(persister_submit(p, b), HKV_OK);
    }
    wait_done(p, nb, HKV_OK);
    ck_assert_int_eq(persister_stop(p), HKV_OK);
    persister_destroy(&p);

    struct loaded *l = calloc(1, sizeof(*l));
    p = open_p(NULL);
    ck_assert_int_eq(persister_load(p, collect, l), HKV_OK);
    ck_assert_uint_eq(l->n, 1000);
    int seen[1000] = {0};
    for (size_t i = 0; i < l->n; i++) {
        const struct persist_row *r = &l->rows[i];
        ck_assert_uint_eq(r->klen, 9);
        ck_assert_int_eq(memcmp(r->key, "key\0-", 5), 0);
        int j = atoi(r->key + 5);
        ck_assert(j >= 0 && j < 1000);
        ck_assert_int_eq(seen[j]++, 0);
        ck_assert_uint_eq(r->stamp, (hkv_stamp)j + 1);
        ck_assert_int_eq(r->expire_at_ms, j % 3 ? 0 : 1700000000000 + j);
        ck_assert_uint_eq(r->class_id, j % 5);
        ck_assert_uint_eq(r->tombstone, j % 50 == 7);
        if (r->tombstone) {
            ck_assert_ptr_null(r->val);
        } else if (j % 10 == 0) {
            ck_assert_ptr_nonnull(r->val); /* an empty value is not a tombstone */
            ck_assert_uint_eq(r->vlen, 0);
        } else {
            int vn = snprintf(val, sizeof(val), "value-%d", j * 7);
            ck_assert_uint_eq(r->vlen, (size_t)vn);
            ck_assert_int_eq(memcmp(r->val, val, (size_t)vn), 0);
        }
    }
    loaded_free(l);
    /* load is for before start only */
    ck_assert_int_eq(persister_start(p), HKV_OK);
    ck_assert_int_eq(persister_load(p, collect, NULL), HKV_EINVAL);
    persister_destroy(&p);
}
END_TEST

static int stop_at_three(void *arg, const struct persist_row *r)
{
    (void)r;
    return ++*(int *)arg == 3 ? HKV_EFULL : HKV_OK;
}

START_TEST(load_callback_can_stop_the_scan)
{
    struct persister *p = open_p(NULL);
    struct persist_batch *b = persist_batch_new(0);
    char key[8];
    for (int i = 0; i < 10; i++) {
        int n = snprintf(key, sizeof(key), "k%d", i);
        ck_assert_int_eq(persist_batch_add(b, key, (size_t)n, "v", 1, 5, 0, 0, 0), HKV_OK);
    }
    ck_assert_int_eq(persister_submit(p, b), HKV_OK);
    ck_assert_int_eq(persister_stop(p), HKV_OK); /* never started: stop drains anyway */
    wait_done(p, 1, HKV_OK);
    persister_destroy(&p);

    p = open_p(NULL);
    int calls = 0;
    ck_assert_int_eq(persister_load(p, stop_at_three, &calls), HKV_EFULL);
    ck_assert_int_eq(calls, 3);
    persister_destroy(&p);
}
END_TEST

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

static struct persister_read *find_read(struct persister_read *l, void *cookie)
{
    for (; l != NULL; l = l->next)
        if (l->cookie == cookie)
            return l;
    return NULL;
}

START_TEST(reader_returns_row_and_not_found)
{
    struct persister *p = open_p(NULL);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    struct persist_batch *b = persist_batch_new(1);
    ck_assert_int_eq(persist_batch_add(b, "k1", 2, "value1", 6, 11, 1800000000000, 3, 0),
                     HKV_OK);
    ck_assert_int_eq(persist_batch_add(b, "k2", 2, NULL, 0, 12, 0, 2, 1), HKV_OK);
    ck_assert_int_eq(persister_submit(p, b), HKV_OK);
    wait_done(p, 1, HKV_OK);

    ck_assert_int_eq(persister_read_async(p, "k1", 2, (void *)1), HKV_OK);
    ck_assert_int_eq(persister_read_async(p, "nope", 4, (void *)2), HKV_OK);
    ck_assert_int_eq(persister_read_async(p, "k2", 2, (void *)3), HKV_OK);

    struct persister_read *all = NULL, **tail = &all;
    int got = 0;
    while (got < 3) {
        wait_fd(persister_notify_fd(p));
        struct persister_read *r = persister_take_reads(p);
        *tail = r;
        for (; r != NULL; r = r->next, got++)
            tail = &r->next;
    }
    ck_assert_int_eq(got, 3);
    ck_assert_ptr_eq(all->cookie, (void *)1); /* answered in request order */

    struct persister_read *r = find_read(all, (void *)1);
    ck_assert_int_eq(r->status, HKV_OK);
    ck_assert_uint_eq(r->klen, 2);
    ck_assert_int_eq(memcmp(r->key, "k1", 2), 0);
    ck_assert_uint_eq(r->vlen, 6);
    ck_assert_int_eq(memcmp(r->val, "value1", 6), 0);
    ck_assert_uint_eq(r->stamp, 11);
    ck_assert_int_eq(r->expire_at_ms, 1800000000000);
    ck_assert_uint_eq(r->class_id, 3);
    ck_assert_uint_eq(r->tombstone, 0);

    r = find_read(all, (void *)2);
    ck_assert_int_eq(r->status, HKV_ENOENT);
    ck_assert_ptr_null(r->val);

    r = find_read(all, (void *)3);
    ck_assert_int_eq(r->status, HKV_OK);
    ck_assert_uint_eq(r->tombstone, 1);
    ck_assert_uint_eq(r->stamp, 12);
    ck_assert_ptr_null(r->val);

    struct persister_stats st;
    persister_stats(p, &st);
    ck_assert_uint_eq(st.reads, 3);
    ck_assert_uint_eq(st.reads_found, 2);
    ck_assert_uint_eq(st.read_errors, 0);

    for (struct persister_read *n; all != NULL; all = n) {
        n = all->next;
        persister_read_free(&all);
    }
    persister_destroy(&p);
}
END_TEST

START_TEST(stop_drains_queue)
{
    struct persister *p = open_p(NULL);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    char key[16];
    for (int i = 0; i < 50; i++) {
        struct persist_batch *b = persist_batch_new(i % 2);
        int n = snprintf(key, sizeof(key), "s%d", i);
        ck_assert_int_eq(persist_batch_add(b, key, (size_t)n, "v", 1, 10 + i, 0, 0, 0), HKV_OK);
        ck_assert_int_eq(persister_submit(p, b), HKV_OK);
    }
    ck_assert_int_eq(persister_read_async(p, "s1", 2, NULL), HKV_OK);
    ck_assert_int_eq(persister_stop(p), HKV_OK);
    ck_assert_int_eq(persister_stop(p), HKV_OK); /* idempotent */

    /* everything is done and takeable without waiting */
    int done = 0;
    for (struct persist_batch *b = persister_take_done(p), *n; b != NULL; b = n, done++) {
        n = b->next;
        ck_assert_int_eq(b->status, HKV_OK);
        persist_batch_free(&b);
    }
    ck_assert_int_eq(done, 50);
    struct persister_read *r = persister_take_reads(p);
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_null(r->next);
    persister_read_free(&r);

    struct persister_stats st;
    persister_stats(p, &st);
    ck_assert_uint_eq(st.batches, 50);
    ck_assert_uint_eq(st.queued_batches, 0);

    struct persist_batch *late = batch1(0, "late", "v", 1, 0);
    ck_assert_int_eq(persister_submit(p, late), HKV_EINVAL);
    persist_batch_free(&late);
    ck_assert_int_eq(persister_read_async(p, "s1", 2, NULL), HKV_EINVAL);
    persister_destroy(&p);

    struct loaded *l = reload();
    ck_assert_uint_eq(l->n, 50);
    loaded_free(l);
}
END_TEST

START_TEST(disk_full_reported_and_service_resumes)
{
    struct persister_options o = {.max_db_bytes = 64 * 1024};
    struct persister *p = open_p(&o);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    struct persist_batch *big = persist_batch_new(1);
    char key[16], val[1024];
    memset(val, 'z', sizeof(val));
    for (int i = 0; i < 200; i++) {
        int n = snprintf(key, sizeof(key), "big%d", i);
        ck_assert_int_eq(persist_batch_add(big, key, (size_t)n, val, sizeof(val), 5, 0, 0, 0),
                         HKV_OK);
    }
    ck_assert_int_eq(persister_submit(p, big), HKV_OK);
    wait_done(p, 1, HKV_EFULL);
    ck_assert_int_eq(persister_submit(p, batch1(1, "small", "ok", 6, 0)), HKV_OK);
    wait_done(p, 1, HKV_OK);

    struct persister_stats st;
    persister_stats(p, &st);
    ck_assert_uint_eq(st.errors, 1);
    ck_assert_uint_eq(st.errors_full, 1);
    ck_assert_int_eq(st.sticky_error, HKV_OK);
    ck_assert_uint_eq(st.rows, 1);
    ck_assert_int_eq(persister_stop(p), HKV_OK);
    persister_destroy(&p);

    struct loaded *l = reload(); /* nothing of the failed transaction is there */
    ck_assert_uint_eq(l->n, 1);
    ck_assert_ptr_nonnull(find(l, "small"));
    loaded_free(l);
}
END_TEST

/* FLUSHALL on disk: a batch with flush_below deletes every older row and
 * records the floor in the same transaction; its own rows (newer) stay;
 * the floor survives a reopen. */
START_TEST(flush_batch_deletes_older_rows_and_records_the_floor)
{
    struct persister *p = open_p(NULL);
    hkv_stamp floor = 1;
    ck_assert_int_eq(persister_flush_floor(p, &floor), HKV_OK);
    ck_assert_uint_eq(floor, 0);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    ck_assert_int_eq(persister_submit(p, batch1(0, "a", "1", 100, 0)), HKV_OK);
    ck_assert_int_eq(persister_submit(p, batch1(0, "b", NULL, 150, 1)), HKV_OK);
    wait_done(p, 2, HKV_OK);
    struct persist_batch *f = batch1(0, "c", "after", 300, 0);
    f->flush_below = 200;
    ck_assert_int_eq(persister_submit(p, f), HKV_OK);
    wait_done(p, 1, HKV_OK);
    struct persister_stats st;
    persister_stats(p, &st);
    ck_assert_uint_ge(st.fsync_commits, 1); /* a flush is durable */
    persister_destroy(&p);

    struct loaded *l = reload();
    ck_assert_uint_eq(l->n, 1);
    ck_assert_ptr_nonnull(find(l, "c"));
    loaded_free(l);
    p = open_p(NULL);
    ck_assert_int_eq(persister_flush_floor(p, &floor), HKV_OK);
    ck_assert_uint_eq(floor, 200);
    persister_destroy(&p);
}
END_TEST

/* A row of a 1 KiB value lives on the table's page, not on an overflow page
 * of its own (a WITHOUT ROWID kv spilled every such row: a 4 KiB page write
 * per row, the file four times the data, bulk writes at 8 MiB/s; see
 * persist_db_file.c).  The file's size tells: the data plus the b-trees'
 * slack and the two indexes, not four times the data. */
START_TEST(kilobyte_rows_take_no_overflow_page_each)
{
    enum { N = 2000, VLEN = 1024 };
    static char val[VLEN];
    memset(val, 'v', sizeof(val));
    struct persister *p = open_p(NULL);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    struct persist_batch *b = persist_batch_new(0);
    char key[32];
    for (int i = 0; i < N; i++) {
        int kn = snprintf(key, sizeof(key), "mb:{t}:%d", (i * 7919) % N); /* not in key order */
        ck_assert_int_eq(persist_batch_add(b, key, (size_t)kn, val, VLEN, (hkv_stamp)i + 1, 0, 1,
                                           0), HKV_OK);
    }
    ck_assert_int_eq(persister_submit(p, b), HKV_OK);
    wait_done(p, 1, HKV_OK);
    persister_destroy(&p); /* the last connection checkpoints the WAL into the file */
    struct stat st;
    ck_assert_int_eq(stat(dbpath, &st), 0);
    double ratio = (double)st.st_size / (double)(N * VLEN);
    ck_assert_msg(ratio < 2.0, "%d rows of %d B: file of %lld B, %.2f times the values", N, VLEN,
                  (long long)st.st_size, ratio);
}
END_TEST

static TCase *tc(const char *name, const TTest *t)
{
    TCase *c = tcase_create(name);
    /* unchecked: the directory is made and removed by the parent, so a
     * failing (exiting) test still leaves nothing behind */
    tcase_add_unchecked_fixture(c, setup, teardown);
    tcase_set_timeout(c, TIMEOUT_S);
    tcase_add_test(c, t);
    return c;
}

Suite *persister_suite(void)
{
    Suite *s = suite_create("persister");
    suite_add_tcase(s, tc("guarded_upsert", guarded_upsert_keeps_newer_row));
    suite_add_tcase(s, tc("tombstones", tombstone_rows_recovered));
    suite_add_tcase(s, tc("tombstone_purge", tombstone_purge_removes_only_older_tombstones));
    suite_add_tcase(s, tc("group_commit", group_commit_batches_share_one_transaction));
    suite_add_tcase(s, tc("durable", durable_batch_reported_done_after_commit));
    suite_add_tcase(s, tc("recovery", recovery_loads_every_row));
    suite_add_tcase(s, tc("load_stop", load_callback_can_stop_the_scan));
    suite_add_tcase(s, tc("create", missing_file_created_with_markers));
    suite_add_tcase(s, tc("crash_image", crash_image_with_wal_recovers));
    suite_add_tcase(s, tc("corrupt", corrupt_file_refused_and_untouched));
    suite_add_tcase(s, tc("foreign", foreign_sqlite_file_refused));
    suite_add_tcase(s, tc("truncated", truncated_file_refused));
    suite_add_tcase(s, tc("reader", reader_returns_row_and_not_found));
    suite_add_tcase(s, tc("stop", stop_drains_queue));
    suite_add_tcase(s, tc("disk_full", disk_full_reported_and_service_resumes));
    suite_add_tcase(s, tc("flush", flush_batch_deletes_older_rows_and_records_the_floor));
    suite_add_tcase(s, tc("kilobyte_rows", kilobyte_rows_take_no_overflow_page_each));
    return s;
}
