/*
 * persist_db.c - the persister's SQLite layer: connections and statements.
 *
 * The file holds one table, kv(k PRIMARY KEY, v, stamp, expire_at, class,
 * tomb, hpos) with an index on (hpos, k) (a rowid table since files made
 * now; WITHOUT ROWID with an index on hpos before: persist_db_file.c), and
 * a meta table; PRAGMA
 * application_id ("HKVD") and user_version mark it as ours (the file check
 * and creation: persist_db_file.c; the migration from the previous schema:
 * persist_db_migrate.c).
 *
 * hpos is the key's position in the hash space (proto/place.h place_pos:
 * the placement hash's top 32 bits, then 31 bits of the identity hash), so
 * a leaf is a range of it and its rows are read, counted and deleted by the
 * index rather than by a scan of the table (persist_leaf.h).  It is
 * computed here, on the persister's thread, from the key of each row
 * written: the loop never hashes for the disk.
 *
 * The stamp guard is in the SQL: the upsert's DO UPDATE carries
 * `WHERE excluded.stamp > kv.stamp`, so a late or retried batch can never
 * replace a newer row, whatever order batches reach the disk in.  Tombstones
 * are rows with tomb=1 and their stamp, so recovery brings deletes back too.
 * (hpos is a function of the key, so the DO UPDATE leaves it alone.)
 */
#include "storage/persist_db.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "proto/place.h"

#define PDB_WAL_LIMIT (64 * 1024 * 1024) /* journal_size_limit: WAL trimmed to this on reset */

static const char SQL_UPSERT[] =
    "INSERT INTO kv(k, v, stamp, expire_at, class, tomb, hpos) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) "
    "ON CONFLICT(k) DO UPDATE SET v=excluded.v, stamp=excluded.stamp, "
    "expire_at=excluded.expire_at, class=excluded.class, tomb=excluded.tomb "
    "WHERE excluded.stamp > kv.stamp";
/* A file of schema 1 opened by a writer that does not migrate it (the
 * master's rehome, before the owners start): rows without a position; the
 * owner's migration fills them. */
static const char SQL_UPSERT_V1[] =
    "INSERT INTO kv(k, v, stamp, expire_at, class, tomb) VALUES(?1, ?2, ?3, ?4, ?5, ?6) "
    "ON CONFLICT(k) DO UPDATE SET v=excluded.v, stamp=excluded.stamp, "
    "expire_at=excluded.expire_at, class=excluded.class, tomb=excluded.tomb "
    "WHERE excluded.stamp > kv.stamp";
static const char SQL_GET[] = "SELECT k, v, stamp, expire_at, class, tomb FROM kv WHERE k=?1";
static const char SQL_SCAN[] = "SELECT k, v, stamp, expire_at, class, tomb FROM kv";
static const char SQL_PURGE[] = "DELETE FROM kv WHERE tomb=1 AND stamp < ?1";

int pdb_why(int status, char *why, size_t whylen, const char *fmt, ...)
{
    if (why != NULL && whylen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return status;
}

int pdb_open(struct pdb *d, const char *path, int readonly, int busy_timeout_ms,
             uint64_t max_db_bytes, char *why, size_t whylen)
{
    struct pdb_open_opts o = {readonly, busy_timeout_ms, max_db_bytes, 0, NULL, NULL};
    return pdb_open_opts(d, path, &o, why, whylen);
}

int pdb_open_opts(struct pdb *d, const char *path, const struct pdb_open_opts *o, char *why,
                  size_t whylen)
{
    int readonly = o->readonly, busy_timeout_ms = o->busy_timeout_ms;
    uint64_t max_db_bytes = o->max_db_bytes;
    memset(d, 0, sizeof(*d));
    int flags = (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(path, &d->db, flags, NULL);
    if (rc != SQLITE_OK)
        goto fail;
    sqlite3_extended_result_codes(d->db, 1);
    sqlite3_busy_timeout(d->db, busy_timeout_ms);
    if (!readonly) {
        sqlite3_stmt *s = NULL;
        rc = sqlite3_prepare_v2(d->db, "PRAGMA journal_mode=WAL", -1, &s, NULL);
        if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
            const unsigned char *m = sqlite3_column_text(s, 0);
            rc = m != NULL && strcmp((const char *)m, "wal") == 0 ? SQLITE_OK : SQLITE_CANTOPEN;
        }
        sqlite3_finalize(s);
        if (rc != SQLITE_OK)
            goto fail;
        d->sync_full = 1;
        rc = sqlite3_exec(d->db,
                          "PRAGMA synchronous=FULL;"
                          "PRAGMA journal_size_limit=" /* bytes */
                          "67108864;",
                          NULL, NULL, NULL);
        _Static_assert(PDB_WAL_LIMIT == 67108864, "journal_size_limit spelled above");
        if (rc != SQLITE_OK)
            goto fail;
        if (max_db_bytes > 0) {
            /* a quota: past it inserts fail with SQLITE_FULL like a full disk */
            sqlite3_stmt *m = NULL;
            rc = sqlite3_prepare_v2(d->db, "PRAGMA page_size", -1, &m, NULL);
            sqlite3_int64 psz = rc == SQLITE_OK && sqlite3_step(m) == SQLITE_ROW
                                    ? sqlite3_column_int64(m, 0) : 4096;
            sqlite3_finalize(m);
            char sql[64];
            uint64_t pages = max_db_bytes / (uint64_t)(psz > 0 ? psz : 4096);
            snprintf(sql, sizeof(sql), "PRAGMA max_page_count=%llu",
                     (unsigned long long)(pages ? pages : 1));
            m = NULL;
            rc = sqlite3_prepare_v2(d->db, sql, -1, &m, NULL);
            if (rc == SQLITE_OK && sqlite3_step(m) == SQLITE_ROW)
                rc = SQLITE_OK;
            sqlite3_finalize(m);
            if (rc != SQLITE_OK)
                goto fail;
        }
        /* a file of the previous schema is brought up to date before any
         * statement names the new column, or written as it is */
        int status = o->migrate ? pdb_migrate(d, o->progress, o->progress_arg, why, whylen)
                                : pdb_schema(d, &d->schema);
        if (status != HKV_OK) {
            if (!o->migrate)
                pdb_why(status, why, whylen, "cannot open %s: unknown or unreadable schema version",
                        path);
            pdb_close(d);
            return status;
        }
        if (o->migrate)
            d->schema = PDB_SCHEMA_VERSION;
        if ((rc = sqlite3_prepare_v3(d->db, d->schema == PDB_SCHEMA_V1 ? SQL_UPSERT_V1 : SQL_UPSERT,
                                     -1, SQLITE_PREPARE_PERSISTENT,
                                     &d->upsert, NULL)) != SQLITE_OK ||
            (rc = sqlite3_prepare_v3(d->db, SQL_PURGE, -1, SQLITE_PREPARE_PERSISTENT,
                                     &d->purge, NULL)) != SQLITE_OK)
            goto fail;
    }
    if ((rc = sqlite3_prepare_v3(d->db, SQL_GET, -1, SQLITE_PREPARE_PERSISTENT, &d->get,
                                 NULL)) != SQLITE_OK ||
        (rc = sqlite3_prepare_v3(d->db, SQL_SCAN, -1, SQLITE_PREPARE_PERSISTENT, &d->scan,
                                 NULL)) != SQLITE_OK)
        goto fail;
    return HKV_OK;
fail:;
    int status = pdb_status(rc);
    if (status == HKV_ECORRUPT)
        status = HKV_EIO;
    pdb_why(status, why, whylen, "cannot open %s: %s", path,
         d->db ? sqlite3_errmsg(d->db) : sqlite3_errstr(rc));
    pdb_close(d);
    return status;
}

void pdb_close(struct pdb *d)
{
    sqlite3_finalize(d->upsert);
    sqlite3_finalize(d->get);
    sqlite3_finalize(d->scan);
    sqlite3_finalize(d->purge);
    sqlite3_close(d->db);
    memset(d, 0, sizeof(*d));
}

int pdb_set_sync(struct pdb *d, int full)
{
    full = full ? 1 : 0;
    if (d->sync_full == full)
        return SQLITE_OK;
    int rc = sqlite3_exec(d->db, full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
                          NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        d->sync_full = full;
    return rc;
}

int pdb_begin(struct pdb *d)
{
    return sqlite3_exec(d->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
}

int pdb_commit(struct pdb *d)
{
    return sqlite3_exec(d->db, "COMMIT", NULL, NULL, NULL);
}

void pdb_rollback(struct pdb *d)
{
    if (!sqlite3_get_autocommit(d->db))
        (void)sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
}

int pdb_bind_bytes(sqlite3_stmt *s, int i, const void *p, size_t n)
{
    if (p == NULL || n == 0)
        return sqlite3_bind_zeroblob(s, i, 0);
    return sqlite3_bind_blob64(s, i, p, n, SQLITE_STATIC);
}

int pdb_upsert(struct pdb *d, const struct persist_row *r, int *applied)
{
    sqlite3_stmt *s = d->upsert;
    int rc;
    *applied = 0;
    if ((rc = pdb_bind_bytes(s, 1, r->key, r->klen)) != SQLITE_OK ||
        (rc = r->tombstone ? sqlite3_bind_null(s, 2) : pdb_bind_bytes(s, 2, r->val, r->vlen)) !=
            SQLITE_OK ||
        (rc = sqlite3_bind_int64(s, 3, (sqlite3_int64)r->stamp)) != SQLITE_OK ||
        (rc = sqlite3_bind_int64(s, 4, r->expire_at_ms)) != SQLITE_OK ||
        (rc = sqlite3_bind_int(s, 5, r->class_id)) != SQLITE_OK ||
        (rc = sqlite3_bind_int(s, 6, r->tombstone ? 1 : 0)) != SQLITE_OK ||
        (d->schema != PDB_SCHEMA_V1 &&
         (rc = sqlite3_bind_int64(s, 7, (sqlite3_int64)place_pos(r->key, r->klen))) != SQLITE_OK))
        goto out;
    rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) {
        *applied = sqlite3_changes(d->db) > 0;
        rc = SQLITE_OK;
    }
out:
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
}

void pdb_row_from(sqlite3_stmt *s, struct persist_row *r)
{
    memset(r, 0, sizeof(*r));
    r->key = (char *)sqlite3_column_blob(s, 0);
    r->klen = (size_t)sqlite3_column_bytes(s, 0);
    if (r->key == NULL)
        r->key = (char *)"";
    r->stamp = (hkv_stamp)sqlite3_column_int64(s, 2);
    r->expire_at_ms = sqlite3_column_int64(s, 3);
    r->class_id = (uint16_t)sqlite3_column_int(s, 4);
    r->tombstone = sqlite3_column_int(s, 5) ? 1 : 0;
    if (!r->tombstone) {
        r->val = (char *)sqlite3_column_blob(s, 1);
        r->vlen = (size_t)sqlite3_column_bytes(s, 1);
        if (r->val == NULL)
            r->val = (char *)"";
    }
}

int pdb_scan(struct pdb *d, pdb_row_fn fn, void *arg)
{
    int rc, status = HKV_OK;
    struct persist_row r;
    while ((rc = sqlite3_step(d->scan)) == SQLITE_ROW) {
        pdb_row_from(d->scan, &r);
        if ((status = fn(arg, &r)) != HKV_OK)
            break;
    }
    if (status == HKV_OK && rc != SQLITE_DONE)
        status = pdb_status(rc);
    sqlite3_reset(d->scan);
    return status;
}

int pdb_get(struct pdb *d, const void *key, size_t klen, struct persist_row *row)
{
    int rc = pdb_bind_bytes(d->get, 1, key, klen);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(d->get);
    if (rc == SQLITE_ROW)
        pdb_row_from(d->get, row);
    return rc;
}

void pdb_get_done(struct pdb *d)
{
    sqlite3_reset(d->get); /* ends the read transaction */
    sqlite3_clear_bindings(d->get);
}

int pdb_purge(struct pdb *d, hkv_stamp horizon, uint64_t *deleted)
{
    *deleted = 0;
    int rc = pdb_begin(d);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_int64(d->purge, 1, (sqlite3_int64)horizon);
    rc = sqlite3_step(d->purge);
    if (rc == SQLITE_DONE) {
        *deleted = (uint64_t)sqlite3_changes(d->db);
        rc = pdb_commit(d);
    }
    sqlite3_reset(d->purge);
    if (rc != SQLITE_OK) {
        *deleted = 0;
        pdb_rollback(d);
    }
    return rc;
}

int pdb_checkpoint(struct pdb *d)
{
    return sqlite3_wal_checkpoint_v2(d->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
}

int pdb_status(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
        return HKV_OK;
    case SQLITE_FULL:
        return HKV_EFULL;
    case SQLITE_NOMEM:
        return HKV_ENOMEM;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return HKV_ECORRUPT;
    default:
        return HKV_EIO;
    }
}

int pdb_rc_fatal(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
    case SQLITE_FULL:   /* nothing was written; space may come back */
    case SQLITE_NOMEM:
    case SQLITE_BUSY:   /* nothing was written; the lock may come free */
    case SQLITE_LOCKED:
    case SQLITE_TOOBIG:
    case SQLITE_CONSTRAINT:
        return 0;
    default:            /* IOERR (incl. a failed fsync), CORRUPT, NOTADB, ... */
        return 1;
    }
}

int pdb_flush_below(struct pdb *d, hkv_stamp floor)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(d->db, "DELETE FROM kv WHERE stamp < ?1", -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, (sqlite3_int64)floor);
        rc = sqlite3_step(s);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    sqlite3_finalize(s);
    s = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(d->db,
                                "INSERT INTO meta(name, value) VALUES('flush_floor', ?1) "
                                "ON CONFLICT(name) DO UPDATE SET value=max(value, excluded.value)",
                                -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, (sqlite3_int64)floor);
        rc = sqlite3_step(s);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    sqlite3_finalize(s);
    return rc;
}

int pdb_flush_floor(struct pdb *d, hkv_stamp *floor)
{
    sqlite3_stmt *s = NULL;
    *floor = 0;
    int rc = sqlite3_prepare_v2(d->db, "SELECT value FROM meta WHERE name='flush_floor'", -1, &s,
                                NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        *floor = (hkv_stamp)sqlite3_column_int64(s, 0);
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    sqlite3_finalize(s);
    return rc;
}
