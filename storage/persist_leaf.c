/*
 * persist_leaf.c - a range of positions' rows, by the kv_hpos index
 * (persist_leaf.h).
 *
 * The index's entries are (hpos, k): a file's kv_hpos is on (hpos, k), or
 * (files made before kv became a rowid table, persist_db_file.c) on hpos of
 * a WITHOUT ROWID kv, whose entries carry the key.  ORDER BY hpos, k is the
 * index's own order, and a page resumes
 * with the row-value comparison (hpos, k) > (?, ?), which SQLite turns into
 * an index seek; no page reads a row of the table it does not hand out.
 * Statements are prepared per call: a page is hundreds of rows, against
 * which a prepare (tens of microseconds) is noise, and the connection stays
 * free of statements that only a move or a SCAN needs.
 */
#include "storage/persist_leaf.h"

#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "storage/persist_db.h"

static const char SQL_FIRST[] =
    "SELECT k, v, stamp, expire_at, class, tomb, hpos FROM kv "
    "WHERE hpos >= ?1 AND hpos < ?2 ORDER BY hpos, k LIMIT ?3";
static const char SQL_NEXT[] =
    "SELECT k, v, stamp, expire_at, class, tomb, hpos FROM kv "
    "WHERE (hpos, k) > (?4, ?5) AND hpos >= ?1 AND hpos < ?2 ORDER BY hpos, k LIMIT ?3";
static const char SQL_COUNT[] = "SELECT count(*) FROM kv WHERE hpos >= ?1 AND hpos < ?2";
static const char SQL_COUNT_TOMBS[] =
    "SELECT count(*), total(tomb) FROM kv WHERE hpos >= ?1 AND hpos < ?2";
static const char SQL_DELETE[] =
    "DELETE FROM kv WHERE k IN (SELECT k FROM kv WHERE hpos >= ?1 AND hpos < ?2 LIMIT ?3)";
static const char SQL_ANY[] =
    "SELECT EXISTS(SELECT 1 FROM kv WHERE hpos >= ?1 AND hpos < ?2)";

/* An SQLite result -> this header's statuses. */
static int leaf_status(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
        return HKV_OK;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return HKV_EAGAIN;
    case SQLITE_RANGE:
    case SQLITE_MISUSE:
        return HKV_EINVAL;
    default:
        return pdb_status(rc);
    }
}

static int bad_range(uint64_t start, uint64_t end)
{
    return start > end || end > (uint64_t)INT64_MAX + 1;
}

/* Binds ?1 start and ?2 end; an end of 2^63 (past every position) is
 * bound as INT64_MAX, which no position reaches. */
static int bind_range(sqlite3_stmt *s, uint64_t start, uint64_t end)
{
    int rc = sqlite3_bind_int64(s, 1, (sqlite3_int64)start);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(s, 2, end > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)end);
    return rc;
}

void persist_leaf_cursor_free(struct persist_leaf_cursor *c)
{
    free(c->key);
    c->key = NULL;
    c->klen = 0;
}

static int cursor_at(struct persist_leaf_cursor *c, const struct persist_row *r, uint64_t pos)
{
    if (r->klen > c->klen || c->key == NULL) {
        char *k = realloc(c->key, r->klen ? r->klen : 1);
        if (k == NULL)
            return HKV_ENOMEM;
        c->key = k;
    }
    if (r->klen)
        memcpy(c->key, r->key, r->klen);
    c->klen = r->klen;
    c->pos = pos;
    c->started = 1;
    return HKV_OK;
}

int persist_leaf_page(struct pdb *d, uint64_t start, uint64_t end, struct persist_leaf_cursor *c,
                      size_t max_rows, persist_leaf_fn fn, void *arg)
{
    if (d == NULL || c == NULL || fn == NULL || bad_range(start, end) || max_rows == 0)
        return HKV_EINVAL;
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(d->db, c->started ? SQL_NEXT : SQL_FIRST, -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = bind_range(s, start, end);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(s, 3, max_rows > INT64_MAX ? INT64_MAX : (sqlite3_int64)max_rows);
    if (rc == SQLITE_OK && c->started) {
        rc = sqlite3_bind_int64(s, 4, (sqlite3_int64)c->pos);
        if (rc == SQLITE_OK)
            rc = pdb_bind_bytes(s, 5, c->key, c->klen);
    }
    if (rc != SQLITE_OK) {
        sqlite3_finalize(s);
        return leaf_status(rc);
    }
    size_t n = 0;
    int status = HKV_OK;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct persist_row r;
        pdb_row_from(s, &r);
        uint64_t pos = (uint64_t)sqlite3_column_int64(s, 6);
        n++;
        if ((status = cursor_at(c, &r, pos)) != HKV_OK)
            break;
        if ((status = fn(arg, &r, pos)) != HKV_OK)
            break;
    }
    if (status == HKV_OK) {
        if (rc != SQLITE_DONE)
            status = leaf_status(rc);
        else
            c->done = n < max_rows; /* a full page: maybe more after it */
    }
    sqlite3_finalize(s); /* ends the read transaction */
    return status;
}

int persist_leaf_count(struct pdb *d, uint64_t start, uint64_t end, uint64_t *rows,
                       uint64_t *tombs)
{
    if (d == NULL || rows == NULL || bad_range(start, end))
        return HKV_EINVAL;
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(d->db, tombs ? SQL_COUNT_TOMBS : SQL_COUNT, -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = bind_range(s, start, end);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        *rows = (uint64_t)sqlite3_column_int64(s, 0);
        if (tombs != NULL)
            *tombs = (uint64_t)sqlite3_column_int64(s, 1);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    return leaf_status(rc);
}

int persist_leaf_delete(struct pdb *d, uint64_t start, uint64_t end, size_t max_rows,
                        uint64_t *deleted, int *more)
{
    if (d == NULL || deleted == NULL || more == NULL || bad_range(start, end) || max_rows == 0)
        return HKV_EINVAL;
    *deleted = 0;
    *more = 0;
    int own = sqlite3_get_autocommit(d->db); /* no transaction open: make one */
    sqlite3_stmt *del = NULL, *any = NULL;
    int rc = own ? pdb_begin(d) : SQLITE_OK;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(d->db, SQL_DELETE, -1, &del, NULL);
    if (rc == SQLITE_OK)
        rc = bind_range(del, start, end);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(del, 3, max_rows > INT64_MAX ? INT64_MAX : (sqlite3_int64)max_rows);
    if (rc == SQLITE_OK && (rc = sqlite3_step(del)) == SQLITE_DONE)
        rc = SQLITE_OK;
    uint64_t n = rc == SQLITE_OK ? (uint64_t)sqlite3_changes(d->db) : 0;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(d->db, SQL_ANY, -1, &any, NULL);
    if (rc == SQLITE_OK)
        rc = bind_range(any, start, end);
    if (rc == SQLITE_OK && (rc = sqlite3_step(any)) == SQLITE_ROW) {
        *more = sqlite3_column_int(any, 0) != 0;
        rc = SQLITE_OK;
    }
    sqlite3_finalize(del);
    sqlite3_finalize(any);
    if (rc == SQLITE_OK && own)
        rc = pdb_commit(d);
    if (rc != SQLITE_OK) {
        if (own)
            pdb_rollback(d);
        *more = 0;
        return leaf_status(rc);
    }
    *deleted = n;
    return HKV_OK;
}
