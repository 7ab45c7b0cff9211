/*
 * check_persister.c - the write-behind SQLite thread and its reader (the
 * file it is given, created, recovered or refused: check_persister_file.c).
 *
 * Every test works in its own mkdtemp directory under /tmp and removes it.
 * Batches submitted before persister_start() all wait in the queue, which
 * makes group commit deterministic without test hooks.  Files are inspected
 * from separate SQLite connections to prove what is really on disk.
 */
#include "tests/unit/persister_fixture.h"

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
    suite_add_tcase(s, tc("reader", reader_returns_row_and_not_found));
    suite_add_tcase(s, tc("stop", stop_drains_queue));
    suite_add_tcase(s, tc("disk_full", disk_full_reported_and_service_resumes));
    suite_add_tcase(s, tc("flush", flush_batch_deletes_older_rows_and_records_the_floor));
    suite_add_tcase(s, tc("kilobyte_rows", kilobyte_rows_take_no_overflow_page_each));
    return s;
}
