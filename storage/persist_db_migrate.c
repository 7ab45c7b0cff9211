/*
 * persist_db_migrate.c - schema 1 -> 2 in place: the position column.
 *
 * Version 2 adds kv.hpos (proto/place.h place_pos of the key) and an index
 * on it.  The column is added with ALTER TABLE (a schema change only: old
 * rows read NULL), then filled in key order, PDB_MIGRATE_BATCH rows per
 * transaction, by an SQL function of the key (hkv_pos, registered on this
 * connection): one UPDATE over a primary-key range per batch, so SQLite
 * rewrites each page of the table once and no row travels through C.  The
 * batch's transaction also writes its last key to meta 'migrate_after',
 * which is where the next batch, or the next run after a kill -9, starts:
 * the file is never half-filled without knowing which half.  The index is
 * made once every row has its position (one sort, much cheaper than keeping
 * an index up to date through a million updates), in the same transaction
 * that sets user_version 2 and drops the marker: a file says 2 only when
 * it is complete, and a kill before that commit leaves a version 1 file
 * whose rows are filled, which the next open finishes in one batch.
 *
 * Batches commit with synchronous=NORMAL (WAL: survives a process crash;
 * a power cut can lose the last batches, and their marker with them, so it
 * only repeats work); the last transaction commits with FULL.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/hkv.h"
#include "proto/place.h"
#include "storage/persist_db.h"

static size_t test_batch; /* pdb_migrate_test_batch */

void pdb_migrate_test_batch(size_t rows)
{
    test_batch = rows;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* hkv_pos(k): the key's position (NULL for a NULL key). */
static void sql_pos(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    const void *k = sqlite3_value_blob(argv[0]);
    int n = sqlite3_value_bytes(argv[0]);
    sqlite3_result_int64(ctx, (sqlite3_int64)place_pos(k ? k : "", (size_t)n));
}

/* One integer from a query with at most one blob parameter (NULL: none). */
static int query_int(sqlite3 *db, const char *sql, const void *p, int plen, int64_t *out)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK && p != NULL)
        rc = pdb_bind_bytes(s, 1, p, (size_t)plen);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(s, 0);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            *out = 0;
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(s);
    return rc;
}

/* The recorded resume point: *has 0 = no marker; *started 0 = the marker
 * says "from the first key" (NULL value), else *key (malloc'd) is the last
 * key done. */
static int read_marker(sqlite3 *db, int *has, int *started, void **key, int *klen)
{
    sqlite3_stmt *s = NULL;
    *has = *started = 0;
    *key = NULL;
    *klen = 0;
    int rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE name='migrate_after'", -1, &s,
                                NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        *has = 1;
        if (sqlite3_column_type(s, 0) != SQLITE_NULL) {
            *started = 1;
            *klen = sqlite3_column_bytes(s, 0);
            *key = malloc((size_t)*klen + 1);
            if (*key == NULL)
                rc = SQLITE_NOMEM;
            else if (*klen > 0)
                memcpy(*key, sqlite3_column_blob(s, 0), (size_t)*klen);
        }
        if (rc == SQLITE_ROW)
            rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    return rc;
}

/* One batch in its own transaction: fills the rows after the marker up to
 * the batch's last key and moves the marker there.  *more = 0 when no row
 * was left after the marker. */
static int fill_batch(sqlite3 *db, size_t batch, uint64_t *filled, int *more)
{
    int has, started, klen, rc;
    void *after = NULL;
    sqlite3_stmt *last = NULL, *upd = NULL, *mark = NULL;
    *more = 0;
    *filled = 0;
    if ((rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL)) != SQLITE_OK)
        return rc;
    if ((rc = read_marker(db, &has, &started, &after, &klen)) != SQLITE_OK)
        goto out;
    /* the batch's last key: the batch-th key after the marker, or the
     * table's last when fewer are left */
    rc = sqlite3_prepare_v2(db,
                            started ? "SELECT k FROM kv WHERE k > ?1 ORDER BY k LIMIT 1 OFFSET ?2"
                                    : "SELECT k FROM kv ORDER BY k LIMIT 1 OFFSET ?2",
                            -1, &last, NULL);
    if (rc == SQLITE_OK && started)
        rc = pdb_bind_bytes(last, 1, after, (size_t)klen);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(last, 2, (sqlite3_int64)batch - 1);
    if (rc != SQLITE_OK)
        goto out;
    rc = sqlite3_step(last);
    if (rc == SQLITE_DONE) { /* fewer than batch left: up to the last key */
        sqlite3_finalize(last);
        last = NULL;
        rc = sqlite3_prepare_v2(db, started ? "SELECT max(k) FROM kv WHERE k > ?1"
                                            : "SELECT max(k) FROM kv",
                                -1, &last, NULL);
        if (rc == SQLITE_OK && started)
            rc = pdb_bind_bytes(last, 1, after, (size_t)klen);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(last);
    }
    if (rc != SQLITE_ROW)
        goto out;
    if (sqlite3_column_type(last, 0) == SQLITE_NULL) { /* nothing after the marker */
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        goto out;
    }
    rc = sqlite3_prepare_v2(db,
                            started ? "UPDATE kv SET hpos=hkv_pos(k) WHERE k > ?1 AND k <= ?2"
                                    : "UPDATE kv SET hpos=hkv_pos(k) WHERE k <= ?2",
                            -1, &upd, NULL);
    if (rc == SQLITE_OK && started)
        rc = pdb_bind_bytes(upd, 1, after, (size_t)klen);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_value(upd, 2, sqlite3_column_value(last, 0));
    if (rc == SQLITE_OK && (rc = sqlite3_step(upd)) == SQLITE_DONE)
        rc = SQLITE_OK;
    if (rc != SQLITE_OK)
        goto out;
    *filled = (uint64_t)sqlite3_changes(db);
    rc = sqlite3_prepare_v2(db,
                            "INSERT INTO meta(name, value) VALUES('migrate_after', ?1) "
                            "ON CONFLICT(name) DO UPDATE SET value=excluded.value",
                            -1, &mark, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_value(mark, 1, sqlite3_column_value(last, 0));
    if (rc == SQLITE_OK && (rc = sqlite3_step(mark)) == SQLITE_DONE)
        rc = SQLITE_OK;
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    *more = rc == SQLITE_OK;
out:
    sqlite3_finalize(mark);
    sqlite3_finalize(upd);
    sqlite3_finalize(last);
    free(after);
    if (rc != SQLITE_OK && !sqlite3_get_autocommit(db))
        (void)sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

static void tell(persist_progress_fn fn, void *arg, struct persist_migration *m, int64_t t0)
{
    m->elapsed_ms = mono_ms() - t0;
    if (fn != NULL)
        fn(arg, m);
}

int pdb_schema(struct pdb *d, int *version)
{
    int64_t v = -1;
    int rc = query_int(d->db, "PRAGMA user_version", NULL, 0, &v);
    if (rc != SQLITE_OK)
        return pdb_status(rc);
    if (v != PDB_SCHEMA_VERSION && v != PDB_SCHEMA_V1)
        return HKV_ECORRUPT;
    *version = (int)v;
    return HKV_OK;
}

int pdb_migrate(struct pdb *d, persist_progress_fn fn, void *arg, char *why, size_t whylen)
{
    sqlite3 *db = d->db;
    int64_t version = -1, t0 = mono_ms();
    int rc = query_int(db, "PRAGMA user_version", NULL, 0, &version);
    if (rc != SQLITE_OK)
        return pdb_why(pdb_status(rc), why, whylen, "cannot read the schema version: %s",
                       sqlite3_errmsg(db));
    if (version == PDB_SCHEMA_VERSION)
        return HKV_OK;
    if (version != PDB_SCHEMA_V1)
        return pdb_why(HKV_ECORRUPT, why, whylen, "unknown hotkvd schema version %lld",
                       (long long)version);

    struct persist_migration m = {.from_version = (uint32_t)version, .phase = PERSIST_MIG_FILL};
    size_t batch = test_batch ? test_batch : PDB_MIGRATE_BATCH;
    int has, started, klen, more = 1;
    void *after = NULL;
    int64_t total = 0, resumed = 0;
    rc = sqlite3_create_function(db, "hkv_pos", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                 sql_pos, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        goto fail;

    /* the column (a first run), with the marker "from the first key" */
    sqlite3_stmt *probe = NULL;
    if (sqlite3_prepare_v2(db, "SELECT hpos FROM kv LIMIT 0", -1, &probe, NULL) != SQLITE_OK) {
        rc = sqlite3_exec(db,
                          "BEGIN IMMEDIATE;"
                          "ALTER TABLE kv ADD COLUMN hpos INTEGER;"
                          "INSERT OR REPLACE INTO meta(name, value) VALUES('migrate_after', NULL);"
                          "COMMIT;",
                          NULL, NULL, NULL);
        if (rc != SQLITE_OK)
            goto fail;
    }
    sqlite3_finalize(probe);

    if ((rc = read_marker(db, &has, &started, &after, &klen)) != SQLITE_OK ||
        (rc = query_int(db, "SELECT count(*) FROM kv", NULL, 0, &total)) != SQLITE_OK)
        goto fail;
    if (has && started &&
        (rc = query_int(db, "SELECT count(*) FROM kv WHERE k <= ?1", after, klen, &resumed)) !=
            SQLITE_OK)
        goto fail;
    m.rows_total = (uint64_t)total;
    m.rows_done = m.rows_resumed = (uint64_t)resumed;
    tell(fn, arg, &m, t0);
    if (!has) { /* (the column but no marker: start again from the first key) */
        rc = sqlite3_exec(db, "INSERT INTO meta(name, value) VALUES('migrate_after', NULL)", NULL,
                          NULL, NULL);
        if (rc != SQLITE_OK)
            goto fail;
    }
    while (more) {
        uint64_t n = 0;
        if ((rc = fill_batch(db, batch, &n, &more)) != SQLITE_OK)
            goto fail;
        m.rows_done += n;
        if (more)
            tell(fn, arg, &m, t0);
    }

    m.phase = PERSIST_MIG_INDEX;
    tell(fn, arg, &m, t0);
    rc = sqlite3_exec(db,
                      "PRAGMA synchronous=FULL;"
                      "BEGIN IMMEDIATE;"
                      "CREATE INDEX IF NOT EXISTS kv_hpos ON kv(hpos);"
                      "UPDATE meta SET value=2 WHERE name='schema';"
                      "DELETE FROM meta WHERE name='migrate_after';"
                      "PRAGMA user_version=2;"
                      "COMMIT;",
                      NULL, NULL, NULL);
    _Static_assert(PDB_SCHEMA_VERSION == 2, "the migration's last step spells the version");
    if (rc != SQLITE_OK)
        goto fail;
    m.phase = PERSIST_MIG_DONE;
    tell(fn, arg, &m, t0);
    free(after);
    return HKV_OK;
fail:;
    int status = pdb_status(rc);
    pdb_why(status == HKV_OK ? HKV_EIO : status, why, whylen,
            "migrating to schema %d: %s", PDB_SCHEMA_VERSION, sqlite3_errmsg(db));
    if (!sqlite3_get_autocommit(db))
        (void)sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    (void)sqlite3_exec(db, "PRAGMA synchronous=FULL", NULL, NULL, NULL);
    free(after);
    return status == HKV_OK ? HKV_EIO : status;
}
