/*
 * persister_fixture.h - what the write-behind SQLite thread's suites share
 * (check_persister.c, check_persister_file.c): a mkdtemp directory per test
 * made and removed by the parent (an unchecked fixture), files read, written
 * and queried from separate SQLite connections to prove what is on disk, a
 * persister opened on it, one-row batches, waits for their completions, and
 * every row loaded back.
 */
#ifndef HKV_TESTS_PERSISTER_FIXTURE_H
#define HKV_TESTS_PERSISTER_FIXTURE_H

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

static inline void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/hkv-persister-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(dbpath, sizeof(dbpath), "%s/owner.db", dir);
}

static inline int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static inline void teardown(void)
{
    nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static inline int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- file helpers ---- */

static inline unsigned char *slurp(const char *path, size_t *len)
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

static inline void spit(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
}

static inline void sql(const char *path, const char *stmts)
{
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, stmts, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* Asserts that create refuses `path` with HKV_ECORRUPT and leaves it as it was. */
static inline void assert_refused_untouched(const char *path)
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

static inline struct persister *open_p(const struct persister_options *opt)
{
    struct persister *p = NULL;
    char why[256] = "";
    int rc = persister_create(&p, dbpath, opt, why, sizeof(why));
    ck_assert_msg(rc == HKV_OK, "create: %d %s", rc, why);
    ck_assert_ptr_nonnull(p);
    return p;
}

static inline struct persist_batch *batch1(int durable, const char *key, const char *val,
                                    hkv_stamp stamp, int tomb)
{
    struct persist_batch *b = persist_batch_new(durable);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(persist_batch_add(b, key, strlen(key), val, val ? strlen(val) : 0, stamp,
                                       0, 1, tomb),
                     HKV_OK);
    return b;
}

static inline void wait_fd(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    ck_assert_int_eq(poll(&pfd, 1, 15000), 1);
    uint64_t v;
    ssize_t n = read(fd, &v, sizeof(v));
    ck_assert(n == (ssize_t)sizeof(v) || (n < 0 && errno == EAGAIN));
}

/* Waits for `n` finished batches through the notify fd; checks each is
 * HKV_OK unless `expect` says otherwise; frees them. */
static inline void wait_done(struct persister *p, int n, int expect)
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

static inline int collect(void *arg, const struct persist_row *r)
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

static inline void loaded_free(struct loaded *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->rows[i].key);
        free(l->rows[i].val);
    }
    free(l);
}

/* Opens the file afresh and loads every row. */
static inline struct loaded *reload(void)
{
    struct loaded *l = calloc(1, sizeof(*l));
    struct persister *p = open_p(NULL);
    ck_assert_int_eq(persister_load(p, collect, l), HKV_OK);
    persister_destroy(&p);
    ck_assert_ptr_null(p);
    return l;
}

static inline const struct persist_row *find(const struct loaded *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->rows[i].klen == strlen(key) && memcmp(l->rows[i].key, key, l->rows[i].klen) == 0)
            return &l->rows[i];
    return NULL;
}


static inline TCase *tc(const char *name, const TTest *t)
{
    TCase *c = tcase_create(name);
    /* unchecked: the directory is made and removed by the parent, so a
     * failing (exiting) test still leaves nothing behind */
    tcase_add_unchecked_fixture(c, setup, teardown);
    tcase_set_timeout(c, TIMEOUT_S);
    tcase_add_test(c, t);
    return c;
}

#endif
