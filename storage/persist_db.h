/*
 * persist_db.h - the persister's SQLite layer (private to storage/persist*.c).
 *
 * Everything that knows SQL lives behind this header: the schema and its
 * markers, the check that refuses a file that is not ours and the schema
 * migration (persist_db_file.c, persist_db_migrate.c), the prepared
 * statements, the stamp-guarded upsert, the recovery scan, the point lookup,
 * tombstone purge and WAL checkpoint (persist_db.c).  A leaf's rows, by the
 * position column: persist_leaf.h.  Functions return raw SQLite result
 * codes unless they say otherwise; pdb_status() maps one to an hkv_status and
 * pdb_rc_fatal() says whether the connection may be trusted afterwards.
 *
 * A struct pdb is one connection and is used by one thread at a time
 * (connections are opened SQLITE_OPEN_NOMUTEX: SQLite's multi-thread mode).
 */
#ifndef HKV_PERSIST_DB_H
#define HKV_PERSIST_DB_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/stamp.h"
#include "storage/persist_row.h"
#include "storage/persister.h" /* struct persist_migration */

#define PDB_APPLICATION_ID 0x484b5644 /* "HKVD" */
#define PDB_SCHEMA_VERSION 2 /* 2: kv.hpos and its index (proto/place.h place_pos) */
#define PDB_SCHEMA_V1 1      /* no hpos: migrated in place by the first writer */

struct pdb {
    sqlite3 *db;
    sqlite3_stmt *upsert, *get, *scan, *purge;
    int sync_full;        /* current PRAGMA synchronous: 1 FULL, 0 NORMAL */
    int schema;           /* a writer's file: PDB_SCHEMA_VERSION, or PDB_SCHEMA_V1 when it
                           * was opened without migrating (rows get no position) */
};

/* Formats a reason into why (if not NULL) and returns status. */
int pdb_why(int status, char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Makes sure `path` is a hotkvd database: a missing file is created fresh
 * (atomically: built as "<path>.new" and hard-linked into place, so a crash
 * never leaves a half-made file under the real name); an existing one is
 * checked (SQLite header, application_id, user_version 1 or 2, meta marker,
 * tables, PRAGMA quick_check) over a read-only connection and never written.
 * HKV_OK; HKV_ECORRUPT (corrupt, truncated, foreign; `why` says which);
 * HKV_EIO (cannot read/create); HKV_ENOMEM.  `why` gets a reason on error. */
int pdb_prepare_file(const char *path, char *why, size_t whylen);

struct pdb_open_opts {
    int readonly;             /* SQLITE_OPEN_READONLY; no statement that writes */
    int busy_timeout_ms;
    uint64_t max_db_bytes;    /* writer: a max_page_count quota; 0 = none */
    int migrate;              /* writer: migrate a file of the previous schema first (the
                               * persister: its owner logs it); 0: write it as it is */
    persist_progress_fn progress; /* told how a migration goes (may be NULL) */
    void *progress_arg;
};

/* Opens a connection to a file pdb_prepare_file() accepted.  A writer gets
 * WAL mode, synchronous=FULL, the busy timeout, journal_size_limit and, when
 * max_db_bytes > 0, a max_page_count quota, and with o->migrate migrates a
 * file of the previous schema before anything else (pdb_migrate; without,
 * it writes such a file in its own schema, rows without positions, and the
 * owner's migration fills them later: the master's rehome does that, so
 * the migration runs in the owner that logs it); a reader is
 * SQLITE_OPEN_READONLY.  HKV_OK / HKV_EIO / HKV_ENOMEM / HKV_EFULL /
 * HKV_ECORRUPT (a failed migration) with `why`. */
int pdb_open_opts(struct pdb *d, const char *path, const struct pdb_open_opts *o, char *why,
                  size_t whylen);
/* pdb_open_opts without migrating and without a progress callback. */
int pdb_open(struct pdb *d, const char *path, int readonly, int busy_timeout_ms,
             uint64_t max_db_bytes, char *why, size_t whylen);

/* Brings a writer connection's file to PDB_SCHEMA_VERSION (nothing to do
 * at that version; HKV_ECORRUPT for an unknown one).  From version 1: adds
 * kv.hpos, fills it in batches of PDB_MIGRATE_BATCH rows in key order, one
 * transaction each that also records how far it got (meta
 * 'migrate_after'), then creates the index and sets user_version 2 in one
 * last transaction.  So a migration killed at any point resumes on the next
 * open where its last committed batch ended, and a file is version 2 only
 * with every row filled and the index made.  Runs where the writer is
 * opened: before its owner serves, never on an event loop.  HKV_OK, or an
 * hkv_status with why. */
#define PDB_MIGRATE_BATCH 20000
int pdb_migrate(struct pdb *d, persist_progress_fn fn, void *arg, char *why, size_t whylen);
/* The file's schema version (PRAGMA user_version) into *version: HKV_OK,
 * or HKV_ECORRUPT for one this build does not know. */
int pdb_schema(struct pdb *d, int *version);
/* TEST-ONLY: rows per migration batch from now on (0: the default). */
void pdb_migrate_test_batch(size_t rows);

/* Finalizes the statements and closes; safe on a zeroed or closed pdb. */
void pdb_close(struct pdb *d);

/* Sets PRAGMA synchronous (1 FULL, 0 NORMAL) if it differs; outside a txn. */
int pdb_set_sync(struct pdb *d, int full);
int pdb_begin(struct pdb *d);
int pdb_commit(struct pdb *d);
/* Rolls back whatever transaction is open (none is fine). */
void pdb_rollback(struct pdb *d);

/* The stamp-guarded upsert of one row inside a transaction.  *applied = 1 if
 * the row was written, 0 if the stored row has the same or a newer stamp. */
int pdb_upsert(struct pdb *d, const struct persist_row *r, int *applied);

/* Binds n bytes as a blob (a zero-length one as an empty blob, never NULL). */
int pdb_bind_bytes(sqlite3_stmt *s, int i, const void *p, size_t n);
/* Fills r from a row whose first six columns are k, v, stamp, expire_at,
 * class, tomb; r points into the statement (valid until its next step). */
void pdb_row_from(sqlite3_stmt *s, struct persist_row *r);

/* Streams every row (tombstones included) to `fn`.  The row's pointers are
 * SQLite's and valid only during the call.  Returns an hkv_status: HKV_OK, the
 * first non-OK value `fn` returned, HKV_ECORRUPT or HKV_EIO. */
typedef int (*pdb_row_fn)(void *arg, const struct persist_row *row);
int pdb_scan(struct pdb *d, pdb_row_fn fn, void *arg);

/* Point lookup.  On SQLITE_ROW *row holds SQLite's pointers, valid until
 * pdb_get_done(); SQLITE_DONE means not found.  Always call pdb_get_done(). */
int pdb_get(struct pdb *d, const void *key, size_t klen, struct persist_row *row);
void pdb_get_done(struct pdb *d);

/* DELETE tombstones with stamp < horizon, in its own transaction. */
int pdb_purge(struct pdb *d, hkv_stamp horizon, uint64_t *deleted);
/* FLUSHALL inside the open transaction: deletes every row whose stamp is
 * below `floor` and records the floor in meta (name 'flush_floor'), so a
 * reader or a recovery can refuse a row below it. */
int pdb_flush_below(struct pdb *d, hkv_stamp floor);
/* The recorded flush floor, 0 if none (a read on any connection). */
int pdb_flush_floor(struct pdb *d, hkv_stamp *floor);
/* PRAGMA wal_checkpoint(TRUNCATE); SQLITE_BUSY if a reader kept it from
 * finishing. */
int pdb_checkpoint(struct pdb *d);

/* The ownership table (persist_own.c; storage/persist_own.h): replaces the
 * stored table with o inside the open transaction; loads the rows of pool
 * and the meta rows into a new table (*out, an empty one when nothing was
 * stored).  SQLite result codes. */
struct persist_own;
int pdb_own_save(struct pdb *d, const struct persist_own *o);
int pdb_own_load(struct pdb *d, uint8_t pool, struct persist_own **out);

/* SQLite result code -> hkv_status: SQLITE_FULL -> HKV_EFULL, SQLITE_NOMEM ->
 * HKV_ENOMEM, CORRUPT/NOTADB -> HKV_ECORRUPT, anything else -> HKV_EIO. */
int pdb_status(int rc);
/* 1 if after `rc` the file's state is unknown (I/O error, failed fsync,
 * corruption): nothing more may be written or reported durable. */
int pdb_rc_fatal(int rc);

#endif
