/*
 * persist_rehome.c - moves rows to the file of the owner that serves them;
 * see persist_rehome.h for the protocol and why it is crash-safe.
 *
 * Rows are read with a plain SELECT over a read-only connection and written
 * to the destinations through their own writer connections, so no file is
 * written while it is being scanned; the keys that left a file are kept (key
 * and stamp only) and deleted afterwards in one transaction.  Destinations
 * are committed every REHOME_CHUNK rows to bound a transaction's size.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "storage/persist_db.h"
#include "storage/persist_rehome.h"

#define REHOME_CHUNK 1000
#define REHOME_BUSY_MS 5000

struct gone {
    char *key;
    size_t klen;
    hkv_stamp stamp;
};

struct rehome {
    const char *const *paths;
    int n, self;
    persist_owner_fn owner_of;
    void *arg;
    struct pdb *dst;          /* [n] writer connections, opened on first use */
    char *refused;            /* [nfiles] 1: corrupt or foreign, never touched */
    int kept;                 /* rows of the file being scanned that could not move */
    int *pending;             /* [n] rows written in the open transaction */
    struct gone *gone;
    size_t ngone, capgone;
    struct persist_rehome_stats *st;
    char *why;
    size_t whylen;
};

static int fail(struct rehome *r, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, r->whylen, fmt, ap);
    va_end(ap);
    return status;
}

static int meta_layout(struct pdb *d, char *buf, size_t len)
{
    sqlite3_stmt *s = NULL;
    buf[0] = '\0';
    int rc = sqlite3_prepare_v2(d->db, "SELECT value FROM meta WHERE name='layout'", -1, &s, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const unsigned char *v = sqlite3_column_text(s, 0);
        snprintf(buf, len, "%s", v != NULL ? (const char *)v : "");
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    sqlite3_finalize(s);
    return rc;
}

static int set_layout(struct pdb *d, const char *layout)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(d->db, "INSERT OR REPLACE INTO meta(name, value) VALUES('layout', ?1)",
                                -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(s, 1, layout, -1, SQLITE_STATIC);
        rc = sqlite3_step(s);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    sqlite3_finalize(s);
    return rc;
}

static void refuse(struct rehome *r, int i, const char *why)
{
    r->refused[i] = 1;
    r->st->files_refused++;
    snprintf(r->why, r->whylen, "%s", why); /* the last one, for the log */
}

static int open_dst(struct rehome *r, int j)
{
    if (r->dst[j].db != NULL || r->refused[j])
        return HKV_OK;
    char why[256] = "";
    int st = pdb_prepare_file(r->paths[j], why, sizeof(why));
    if (st == HKV_ECORRUPT) {
        refuse(r, j, why);
        return HKV_OK;
    }
    if (st == HKV_OK)
        st = pdb_open(&r->dst[j], r->paths[j], 0, REHOME_BUSY_MS, 0, why, sizeof(why));
    if (st != HKV_OK)
        return fail(r, st, "%s", why);
    return HKV_OK;
}

static int flush_dst(struct rehome *r, int j)
{
    if (r->pending[j] == 0)
        return HKV_OK;
    int rc = pdb_commit(&r->dst[j]);
    r->pending[j] = 0;
    if (rc != SQLITE_OK) {
        pdb_rollback(&r->dst[j]);
        return fail(r, pdb_status(rc), "%s: commit: %s", r->paths[j], sqlite3_errstr(rc));
    }
    return HKV_OK;
}

static int on_row(void *arg, const struct persist_row *row)
{
    struct rehome *r = arg;
    r->st->rows_scanned++;
    int j = r->owner_of(r->arg, row->key, row->klen);
    if (j == r->self || j < 0 || j >= r->n)
        return HKV_OK;
    int st = open_dst(r, j);
    if (st != HKV_OK)
        return st;
    if (r->refused[j]) {
        r->kept = 1;
        r->st->rows_kept++;
        return HKV_OK;
    }
    if (r->pending[j] == 0) {
        int rc = pdb_begin(&r->dst[j]);
        if (rc != SQLITE_OK)
            return fail(r, pdb_status(rc), "%s: begin: %s", r->paths[j], sqlite3_errstr(rc));
    }
    int applied = 0;
    int rc = pdb_upsert(&r->dst[j], row, &applied);
    if (rc != SQLITE_OK)
        return fail(r, pdb_status(rc), "%s: write: %s", r->paths[j], sqlite3_errstr(rc));
    r->pending[j]++;
    if (applied)
        r->st->rows_moved++;
    else
        r->st->rows_stale++;
    if (r->ngone == r->capgone) {
        size_t cap = r->capgone ? r->capgone * 2 : 256;
        struct gone *g = realloc(r->gone, cap * sizeof(*g));
        if (g == NULL)
            return fail(r, HKV_ENOMEM, "out of memory");
        r->gone = g;
        r->capgone = cap;
    }
    struct gone *g = &r->gone[r->ngone];
    g->key = malloc(row->klen ? row->klen : 1);
    if (g->key == NULL)
        return fail(r, HKV_ENOMEM, "out of memory");
    memcpy(g->key, row->key, row->klen);
    g->klen = row->klen;
    g->stamp = row->stamp;
    r->ngone++;
    return r->pending[j] >= REHOME_CHUNK ? flush_dst(r, j) : HKV_OK;
}

/* Deletes what left file `self` (only rows still at the stamp that was
 * copied) and marks the file with the layout, in one transaction. */
static int settle_source(struct rehome *r, struct pdb *d, const char *layout)
{
    sqlite3_stmt *del = NULL;
    int rc = pdb_begin(d);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(d->db, "DELETE FROM kv WHERE k=?1 AND stamp=?2", -1, &del, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < r->ngone; i++) {
        sqlite3_bind_blob(del, 1, r->gone[i].key, (int)r->gone[i].klen, SQLITE_STATIC);
        sqlite3_bind_int64(del, 2, (sqlite3_int64)r->gone[i].stamp);
        rc = sqlite3_step(del);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        sqlite3_reset(del);
    }
    sqlite3_finalize(del);
    if (rc == SQLITE_OK && !r->kept)
        rc = set_layout(d, layout);
    if (rc == SQLITE_OK)
        rc = pdb_commit(d);
    if (rc != SQLITE_OK) {
        pdb_rollback(d);
        return fail(r, pdb_status(rc), "%s: %s", r->paths[r->self], sqlite3_errstr(rc));
    }
    return HKV_OK;
}

/* A file past the pool's owners, now empty, is removed with its WAL and
 * shared-memory index, so it is not scanned at every start. */
static int retire(struct rehome *r, struct pdb *src, int i)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(src->db, "SELECT count(*) FROM kv", -1, &s, NULL);
    int64_t rows = -1;
    if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        rows = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (rows != 0)
        return HKV_OK; /* rows whose owner said "none": kept, never dropped */
    pdb_close(src);
    const char *sfx[] = {"-wal", "-shm", ""};
    for (size_t k = 0; k < sizeof(sfx) / sizeof(sfx[0]); k++) {
        char p[4300];
        snprintf(p, sizeof(p), "%s%s", r->paths[i], sfx[k]);
        if (unlink(p) != 0 && errno != ENOENT)
            return fail(r, HKV_EIO, "cannot remove %s: %s", p, strerror(errno));
    }
    return HKV_OK;
}

static void forget_gone(struct rehome *r)
{
    for (size_t i = 0; i < r->ngone; i++)
        free(r->gone[i].key);
    r->ngone = 0;
}

static int rehome_file(struct rehome *r, int i, const char *layout)
{
    struct pdb src = {0};
    char why[256] = "", have[128];
    r->self = i;
    r->kept = 0;
    if (r->refused[i])
        return HKV_OK;
    int st = pdb_prepare_file(r->paths[i], why, sizeof(why));
    if (st == HKV_ECORRUPT) {
        refuse(r, i, why);
        return HKV_OK;
    }
    if (st == HKV_OK)
        st = pdb_open(&src, r->paths[i], 0, REHOME_BUSY_MS, 0, why, sizeof(why));
    if (st != HKV_OK)
        return fail(r, st, "%s", why);
    int rc = meta_layout(&src, have, sizeof(have));
    if (rc != SQLITE_OK) {
        pdb_close(&src);
        return fail(r, pdb_status(rc), "%s: meta: %s", r->paths[i], sqlite3_errstr(rc));
    }
    if (i < r->n && strcmp(have, layout) == 0) {
        pdb_close(&src);
        return HKV_OK;
    }
    r->st->files_scanned++;
    st = pdb_scan(&src, on_row, r);
    for (int j = 0; st == HKV_OK && j < r->n; j++)
        st = flush_dst(r, j);
    if (st == HKV_OK)
        st = settle_source(r, &src, layout);
    else if (r->why[0] == '\0')
        fail(r, st, "%s: cannot read its rows", r->paths[i]);
    forget_gone(r);
    if (st == HKV_OK && i >= r->n && !r->kept)
        st = retire(r, &src, i);
    pdb_close(&src);
    return st;
}

int persist_rehome(const char *const *paths, int nfiles, int n, const char *layout,
                   persist_owner_fn owner_of, void *arg, struct persist_rehome_stats *st, char *why, size_t whylen)
{
    memset(st, 0, sizeof(*st));
    if (whylen > 0)
        why[0] = '\0';
    struct rehome r = {.paths = paths, .n = n, .owner_of = owner_of, .arg = arg, .st = st,
                       .why = why, .whylen = whylen};
    r.dst = calloc((size_t)(n > 0 ? n : 1), sizeof(*r.dst));
    r.pending = calloc((size_t)(n > 0 ? n : 1), sizeof(*r.pending));
    r.refused = calloc((size_t)(nfiles > 0 ? nfiles : 1), 1);
    int status = HKV_OK;
    if (r.dst == NULL || r.pending == NULL || r.refused == NULL)
        status = fail(&r, HKV_ENOMEM, "out of memory");
    for (int i = 0; status == HKV_OK && i < nfiles; i++) {
        if (access(paths[i], F_OK) != 0 && errno == ENOENT)
            continue;
        /* A destination connection must not be open on the file being
         * scanned and settled: close them all between files. */
        for (int j = 0; j < n; j++)
            pdb_close(&r.dst[j]);
        status = rehome_file(&r, i, layout);
    }
    for (int j = 0; r.dst != NULL && j < n; j++) {
        if (r.pending[j] > 0)
            pdb_rollback(&r.dst[j]);
        pdb_close(&r.dst[j]);
    }
    free(r.gone);
    free(r.refused);
    free(r.dst);
    free(r.pending);
    return status;
}
