/*
 * check_persist_leaf.c - a leaf's rows by position (storage/persist_leaf.h),
 * and the persister's jobs that run them on its threads.
 *
 * Rows are written through the persister (so their positions come from the
 * code that writes them in production) and read back with separate SQLite
 * connections.  Every statement persist_leaf.c runs is captured with a
 * trace callback and explained: each must search the kv_hpos index, none
 * may scan the table or sort.  Ties (two keys of one position) are made by
 * overwriting positions in SQL: a 63-bit collision is otherwise too rare to
 * meet in a test, and a page must still never stop between them.
 */
#include <check.h>
#include <ftw.h>
#include <poll.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "proto/place.h"
#include "storage/persist_db.h"
#include "storage/persist_leaf.h"
#include "storage/persister.h"

static char dir[64];
static char dbpath[128];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/hkv-leaf-XXXXXX");
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

static size_t key_of(int i, char *k, size_t len)
{
    if (i % 4 == 1) /* several keys on one placement hash */
        return (size_t)snprintf(k, len, "{t%d}:%d", i % 3, i);
    return (size_t)snprintf(k, len, "k:%d", i);
}

/* n rows through a persister (row i a tombstone when i % 9 == 8), stopped. */
static void write_rows(int from, int n)
{
    struct persister *p = NULL;
    char why[256] = "";
    ck_assert_msg(persister_create(&p, dbpath, NULL, why, sizeof(why)) == HKV_OK, "%s", why);
    struct persist_batch *b = persist_batch_new(0);
    char k[32];
    for (int i = from; i < from + n; i++) {
        size_t kl = key_of(i, k, sizeof(k));
        ck_assert_int_eq(persist_batch_add(b, k, kl, "v", 1, 100 + (hkv_stamp)i, 0, 0, i % 9 == 8),
                         HKV_OK);
    }
    ck_assert_int_eq(persister_submit(p, b), HKV_OK);
    ck_assert_int_eq(persister_stop(p), HKV_OK);
    persister_destroy(&p);
}

static void open_db(struct pdb *d, int readonly)
{
    char why[256] = "";
    ck_assert_msg(pdb_open(d, dbpath, readonly, 1000, 0, why, sizeof(why)) == HKV_OK, "%s", why);
}

/* ---- statements explained -------------------------------------------------- */

struct traced {
    char sql[16][512];
    int n;
};

static int on_trace(unsigned type, void *ctx, void *p, void *x)
{
    (void)type, (void)x;
    struct traced *t = ctx;
    const char *sql = sqlite3_sql((sqlite3_stmt *)p);
    if (sql == NULL || strstr(sql, "hpos") == NULL || t->n >= 16)
        return 0;
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->sql[i], sql) == 0)
            return 0;
    snprintf(t->sql[t->n++], sizeof(t->sql[0]), "%s", sql);
    return 0;
}

/* Every traced statement's plan searches kv_hpos; none scans kv or sorts. */
static void assert_plans_use_the_index(sqlite3 *db, const struct traced *t)
{
    ck_assert_int_ge(t->n, 1);
    for (int i = 0; i < t->n; i++) {
        char q[600], plan[1024] = "";
        snprintf(q, sizeof(q), "EXPLAIN QUERY PLAN %s", t->sql[i]);
        sqlite3_stmt *s = NULL;
        ck_assert_msg(sqlite3_prepare_v2(db, q, -1, &s, NULL) == SQLITE_OK, "%s", q);
        for (int b = 1; b <= sqlite3_bind_parameter_count(s); b++)
            sqlite3_bind_int64(s, b, 1); /* (?5, a key, compares as a number here) */
        while (sqlite3_step(s) == SQLITE_ROW) {
            size_t u = strlen(plan);
            snprintf(plan + u, sizeof(plan) - u, "%s; ", (const char *)sqlite3_column_text(s, 3));
        }
        sqlite3_finalize(s);
        ck_assert_msg(strstr(plan, "INDEX kv_hpos") != NULL, "%s -> %s", t->sql[i], plan);
        ck_assert_msg(strstr(plan, "SCAN kv") == NULL, "a full scan: %s -> %s", t->sql[i], plan);
        ck_assert_msg(strstr(plan, "TEMP B-TREE") == NULL, "a sort: %s -> %s", t->sql[i], plan);
    }
}

/* ---- pages ------------------------------------------------------------------- */

struct got {
    char keys[4096][32];
    uint64_t pos[4096];
    int tomb[4096];
    int n;
    int ties;             /* positions were overwritten: do not check them */
};

static int take(void *arg, const struct persist_row *r, uint64_t pos)
{
    struct got *g = arg;
    ck_assert_int_lt(g->n, 4096);
    ck_assert_uint_lt(r->klen, 32);
    memcpy(g->keys[g->n], r->key, r->klen);
    g->keys[g->n][r->klen] = '\0';
    if (!g->ties)
        ck_assert_uint_eq(pos, place_pos(r->key, r->klen));
    g->pos[g->n] = pos;
    g->tomb[g->n] = r->tombstone;
    g->n++;
    return HKV_OK;
}

/* How many of rows 0..n-1 have their position in [start, end). */
static int expected_in(int n, uint64_t start, uint64_t end, int *tombs)
{
    char k[32];
    int c = 0;
    *tombs = 0;
    for (int i = 0; i < n; i++) {
        uint64_t p = place_pos(k, key_of(i, k, sizeof(k)));
        if (p >= start && p < end) {
            c++;
            *tombs += i % 9 == 8;
        }
    }
    return c;
}

static void assert_ordered_once(const struct got *g)
{
    for (int i = 1; i < g->n; i++) {
        int c = g->pos[i - 1] < g->pos[i] ? -1 : g->pos[i - 1] > g->pos[i] ? 1 : 0;
        if (c == 0)
            c = strcmp(g->keys[i - 1], g->keys[i]) < 0 ? -1 : 1;
        ck_assert_msg(c < 0, "rows %d and %d out of order or twice: %s %s", i - 1, i,
                      g->keys[i - 1], g->keys[i]);
    }
}

START_TEST(pages_hand_out_a_leafs_rows_once_in_position_order)
{
    enum { N = 3000 };
    write_rows(0, N);
    struct pdb d;
    open_db(&d, 1);
    struct traced t = {0};
    sqlite3_trace_v2(d.db, SQLITE_TRACE_STMT, on_trace, &t);
    for (uint8_t bits = 0; bits <= 4; bits += 2) {
        for (uint32_t prefix = 0; prefix < (1u << bits); prefix += bits ? 3 : 1) {
            uint64_t start = place_leaf_start(bits, prefix), end = place_leaf_end(bits, prefix);
            static struct got g;
            memset(&g, 0, sizeof(g));
            struct persist_leaf_cursor c = {0};
            int pages = 0;
            while (!c.done) {
                ck_assert_int_eq(persist_leaf_page(&d, start, end, &c, 97, take, &g), HKV_OK);
                ck_assert_int_lt(++pages, 1000);
            }
            persist_leaf_cursor_free(&c);
            int tombs = 0, want = expected_in(N, start, end, &tombs), gt = 0;
            ck_assert_int_eq(g.n, want);
            for (int i = 0; i < g.n; i++) {
                ck_assert(g.pos[i] >= start && g.pos[i] < end);
                gt += g.tomb[i];
            }
            ck_assert_int_eq(gt, tombs);
            assert_ordered_once(&g);
            uint64_t rows = 0, tb = 0;
            ck_assert_int_eq(persist_leaf_count(&d, start, end, &rows, &tb), HKV_OK);
            ck_assert_uint_eq(rows, (uint64_t)want);
            ck_assert_uint_eq(tb, (uint64_t)tombs);
            ck_assert_int_eq(persist_leaf_count(&d, start, end, &rows, NULL), HKV_OK);
            ck_assert_uint_eq(rows, (uint64_t)want);
        }
    }
    assert_plans_use_the_index(d.db, &t);
    pdb_close(&d);
}
END_TEST

/* Rows written between two pages: behind the cursor they are not seen,
 * ahead of it they are seen once; rows of one position are never split. */
START_TEST(a_walk_resumes_exactly_across_writes_and_ties)
{
    write_rows(0, 400);
    /* five keys on one position, in the middle of the hash space */
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    uint64_t tie = PLACE_POS_END / 2 + 12345;
    char sql[256];
    snprintf(sql, sizeof(sql),
             "UPDATE kv SET hpos=%llu WHERE k IN (CAST('k:2' AS BLOB), CAST('k:3' AS BLOB), "
             "CAST('k:4' AS BLOB), CAST('k:6' AS BLOB), CAST('k:7' AS BLOB))",
             (unsigned long long)tie);
    ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_changes(db), 5);
    sqlite3_close(db);

    struct pdb d;
    open_db(&d, 1);
    static struct got g;
    memset(&g, 0, sizeof(g));
    g.ties = 1;
    struct persist_leaf_cursor c = {0};
    int pages = 0, wrote = 0;
    while (!c.done) {
        ck_assert_int_eq(persist_leaf_page(&d, 0, PLACE_POS_END, &c, 2, take, &g), HKV_OK);
        if (!wrote && c.pos > PLACE_POS_END / 4) {
            write_rows(400, 400); /* half ahead of the cursor, half behind */
            wrote = 1;
        }
        ck_assert_int_lt(++pages, 2000);
    }
    persist_leaf_cursor_free(&c);
    pdb_close(&d);
    assert_ordered_once(&g);
    int ties = 0, ahead = 0, want_ahead = 0;
    for (int i = 0; i < g.n; i++)
        ties += g.pos[i] == tie;
    ck_assert_int_eq(ties, 5);
    char k[32];
    for (int i = 400; i < 800; i++) {
        uint64_t p = place_pos(k, key_of(i, k, sizeof(k)));
        want_ahead += p > PLACE_POS_END / 4 + (PLACE_POS_END / 4) / 2; /* surely ahead */
    }
    for (int i = 0; i < g.n; i++)
        ahead += atoi(g.keys[i] + (g.keys[i][0] == '{' ? 5 : 2)) >= 400;
    ck_assert_int_ge(ahead, want_ahead);
    ck_assert_int_le(ahead, 400);
    ck_assert_int_eq(g.n - ahead, 400);
}
END_TEST

START_TEST(delete_removes_only_the_range_in_bounded_batches)
{
    enum { N = 2000 };
    write_rows(0, N);
    struct pdb d;
    open_db(&d, 0);
    struct traced t = {0};
    sqlite3_trace_v2(d.db, SQLITE_TRACE_STMT, on_trace, &t);
    uint64_t start = place_leaf_start(2, 1), end = place_leaf_end(2, 1);
    int tombs, want = expected_in(N, start, end, &tombs);
    ck_assert_int_gt(want, 100);
    uint64_t total = 0, del = 0;
    int more = 1, calls = 0;
    while (more) {
        ck_assert_int_eq(persist_leaf_delete(&d, start, end, 100, &del, &more), HKV_OK);
        ck_assert_uint_le(del, 100);
        total += del;
        ck_assert_int_lt(++calls, 100);
    }
    ck_assert_uint_eq(total, (uint64_t)want);
    ck_assert_int_eq(calls, (want + 99) / 100);
    uint64_t rows;
    ck_assert_int_eq(persist_leaf_count(&d, start, end, &rows, NULL), HKV_OK);
    ck_assert_uint_eq(rows, 0);
    ck_assert_int_eq(persist_leaf_count(&d, 0, PLACE_POS_END, &rows, NULL), HKV_OK);
    ck_assert_uint_eq(rows, (uint64_t)(N - want));

    /* inside the caller's transaction: rolled back with it */
    uint64_t s2 = place_leaf_start(2, 2), e2 = place_leaf_end(2, 2), before;
    ck_assert_int_eq(persist_leaf_count(&d, s2, e2, &before, NULL), HKV_OK);
    ck_assert_int_eq(pdb_begin(&d), SQLITE_OK);
    ck_assert_int_eq(persist_leaf_delete(&d, s2, e2, 1000000, &del, &more), HKV_OK);
    ck_assert_uint_eq(del, before);
    ck_assert_int_eq(more, 0);
    pdb_rollback(&d);
    ck_assert_int_eq(persist_leaf_count(&d, s2, e2, &rows, NULL), HKV_OK);
    ck_assert_uint_eq(rows, before);
    assert_plans_use_the_index(d.db, &t);
    pdb_close(&d);

    ck_assert_int_eq(persist_leaf_delete(NULL, 0, 1, 1, &del, &more), HKV_EINVAL);
    ck_assert_int_eq(persist_leaf_count(&d, 5, 4, &rows, NULL), HKV_EINVAL);
}
END_TEST

/* ---- jobs on the persister's threads ------------------------------------------ */

struct leaf_job {
    struct persister_job job;
    uint64_t start, end;
    struct persist_leaf_cursor c;
    struct got *g;
    uint64_t deleted;
    int more, pages, finished;
    struct persister *p;
};

static int run_page(struct persister_job *j, struct pdb *db)
{
    struct leaf_job *lj = (struct leaf_job *)j;
    return persist_leaf_page(db, lj->start, lj->end, &lj->c, 50, take, lj->g);
}

static int run_delete(struct persister_job *j, struct pdb *db)
{
    struct leaf_job *lj = (struct leaf_job *)j;
    return persist_leaf_delete(db, lj->start, lj->end, 64, &lj->deleted, &lj->more);
}

/* A chain: each done submits the next page until the walk is over. */
static void page_done(struct persister_job *j)
{
    struct leaf_job *lj = (struct leaf_job *)j;
    ck_assert_int_eq(j->status, HKV_OK);
    lj->pages++;
    if (lj->c.done)
        lj->finished = 1;
    else
        ck_assert_int_eq(persister_job_submit(lj->p, j), HKV_OK);
}

static void delete_done(struct persister_job *j)
{
    struct leaf_job *lj = (struct leaf_job *)j;
    ck_assert_int_eq(j->status, HKV_OK);
    lj->pages++;
    if (!lj->more)
        lj->finished = 1;
    else
        ck_assert_int_eq(persister_job_submit(lj->p, j), HKV_OK);
}

static void run_until(struct persister *p, const int *finished)
{
    for (int i = 0; i < 2000 && !*finished; i++) {
        struct pollfd pfd = {persister_notify_fd(p), POLLIN, 0};
        ck_assert_int_ge(poll(&pfd, 1, 5000), 1);
        uint64_t v;
        ssize_t n = read(pfd.fd, &v, sizeof(v)); /* EAGAIN: a spurious wake */
        (void)n;
        persister_jobs_done(p);
    }
    ck_assert(*finished);
}

START_TEST(jobs_page_a_leaf_on_the_reader_and_purge_it_on_the_writer)
{
    enum { N = 1500 };
    write_rows(0, N);
    struct persister *p = NULL;
    char why[256] = "";
    ck_assert_msg(persister_create(&p, dbpath, NULL, why, sizeof(why)) == HKV_OK, "%s", why);
    ck_assert_int_eq(persister_start(p), HKV_OK);
    static struct got g;
    memset(&g, 0, sizeof(g));
    struct leaf_job r = {.job = {run_page, page_done, 0, 0, NULL}, .g = &g, .p = p};
    r.start = place_leaf_start(1, 0);
    r.end = place_leaf_end(1, 0);
    ck_assert_int_eq(persister_job_submit(p, &r.job), HKV_OK);
    run_until(p, &r.finished);
    int tombs, want = expected_in(N, r.start, r.end, &tombs);
    ck_assert_int_eq(g.n, want);
    ck_assert_int_ge(r.pages, want / 50);
    assert_ordered_once(&g);
    persist_leaf_cursor_free(&r.c);

    struct leaf_job w = {.job = {run_delete, delete_done, 1, 0, NULL}, .p = p};
    w.start = r.start;
    w.end = r.end;
    ck_assert_int_eq(persister_job_submit(p, &w.job), HKV_OK);
    run_until(p, &w.finished);
    ck_assert_int_ge(w.pages, want / 64);
    ck_assert_int_eq(persister_stop(p), HKV_OK);
    persister_destroy(&p);

    struct pdb d;
    open_db(&d, 1);
    uint64_t rows;
    ck_assert_int_eq(persist_leaf_count(&d, r.start, r.end, &rows, NULL), HKV_OK);
    ck_assert_uint_eq(rows, 0);
    ck_assert_int_eq(persist_leaf_count(&d, r.end, PLACE_POS_END, &rows, NULL), HKV_OK);
    ck_assert_uint_eq(rows, (uint64_t)(N - want));
    pdb_close(&d);
}
END_TEST

static int handed_back;
static void count_back(struct persister_job *j)
{
    /* run by the stop's drain (OK), or not run at all (EINVAL) */
    ck_assert(j->status == HKV_OK || j->status == HKV_EINVAL);
    handed_back++;
}

/* A job still queued when the persister goes is handed back, not lost; one
 * submitted to a stopped persister is refused (the caller keeps it). */
START_TEST(jobs_held_at_destroy_are_handed_back)
{
    struct persister *p = NULL;
    char why[256] = "";
    ck_assert_msg(persister_create(&p, dbpath, NULL, why, sizeof(why)) == HKV_OK, "%s", why);
    static struct got g;
    struct leaf_job a = {.job = {run_page, count_back, 0, 0, NULL}, .g = &g};
    ck_assert_int_eq(persister_job_submit(p, &a.job), HKV_OK); /* before start: waits */
    handed_back = 0;
    persister_destroy(&p); /* never started: the stop runs what is queued */
    ck_assert_int_eq(handed_back, 1);
    persist_leaf_cursor_free(&a.c);
    ck_assert_msg(persister_create(&p, dbpath, NULL, why, sizeof(why)) == HKV_OK, "%s", why);
    ck_assert_int_eq(persister_stop(p), HKV_OK);
    ck_assert_int_eq(persister_job_submit(p, &a.job), HKV_EINVAL);
    struct persister_job bad = {0};
    ck_assert_int_eq(persister_job_submit(p, &bad), HKV_EINVAL);
    persister_destroy(&p);
}
END_TEST

static TCase *tc(const char *name, const TTest *t)
{
    TCase *c = tcase_create(name);
    tcase_add_unchecked_fixture(c, setup, teardown);
    tcase_set_timeout(c, 30);
    tcase_add_test(c, t);
    return c;
}

Suite *persist_leaf_suite(void)
{
    Suite *s = suite_create("persist_leaf");
    suite_add_tcase(s, tc("pages", pages_hand_out_a_leafs_rows_once_in_position_order));
    suite_add_tcase(s, tc("resume", a_walk_resumes_exactly_across_writes_and_ties));
    suite_add_tcase(s, tc("delete", delete_removes_only_the_range_in_bounded_batches));
    suite_add_tcase(s, tc("jobs", jobs_page_a_leaf_on_the_reader_and_purge_it_on_the_writer));
    suite_add_tcase(s, tc("jobs_destroy", jobs_held_at_destroy_are_handed_back));
    return s;
}
