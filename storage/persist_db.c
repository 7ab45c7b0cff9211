/*
 * persist_db.c - the persister's SQLite layer: schema, file check, statements.
 *
 * The file holds one table, kv(k PRIMARY KEY, v, stamp, expire_at, class,
 * tomb) WITHOUT ROWID, and a meta table; PRAGMA application_id ("HKVD") and
 * user_version mark it as ours.  A file is checked before SQLite is allowed to
 * write to it: first its raw header bytes (so garbage, a truncated file or
 * another application's database is refused without SQLite opening it at
 * all), then, over a read-only connection, the meta marker, the kv columns
 * and PRAGMA quick_check.  A refused file is never touched and never
 * recreated over.  A missing file is built under "<path>.new" and hard-linked
 * into place, so the real name only ever names a complete database.
 *
 * The stamp guard is in the SQL: the upsert's DO UPDATE carries
 * `WHERE excluded.stamp > kv.stamp`, so a late or retried batch can never
 * replace a newer row, whatever order batches reach the disk in.  Tombstones
 * are rows with tomb=1 and their stamp, so recovery brings deletes back too.
 */
#include "storage/persist_db.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/hkv.h"

#define PDB_FORMAT "hotkvd"
#define PDB_WAL_LIMIT (64 * 1024 * 1024) /* journal_size_limit: WAL trimmed to this on reset */

static const char SQL_SCHEMA[] =
    "PRAGMA application_id=1212896836;" /* PDB_APPLICATION_ID */
    "PRAGMA user_version=1;"            /* PDB_SCHEMA_VERSION */
    "BEGIN;"
    "CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB, stamp INTEGER NOT NULL,"
    " expire_at INTEGER NOT NULL DEFAULT 0, class INTEGER NOT NULL,"
    " tomb INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
    "CREATE TABLE meta(name TEXT PRIMARY KEY, value) WITHOUT ROWID;"
    "INSERT INTO meta(name, value) VALUES('format','" PDB_FORMAT "'),('schema',1);"
    "COMMIT;";

static const char SQL_UPSERT[] =
    "INSERT INTO kv(k, v, stamp, expire_at, class, tomb) VALUES(?1, ?2, ?3, ?4, ?5, ?6) "
    "ON CONFLICT(k) DO UPDATE SET v=excluded.v, stamp=excluded.stamp, "
    "expire_at=excluded.expire_at, class=excluded.class, tomb=excluded.tomb "
    "WHERE excluded.stamp > kv.stamp";
static const char SQL_GET[] = "SELECT k, v, stamp, expire_at, class, tomb FROM kv WHERE k=?1";
static const char SQL_SCAN[] = "SELECT k, v, stamp, expire_at, class, tomb FROM kv";
static const char SQL_PURGE[] = "DELETE FROM kv WHERE tomb=1 AND stamp < ?1";

_Static_assert(PDB_APPLICATION_ID == 1212896836, "SQL_SCHEMA spells the application id");
_Static_assert(PDB_SCHEMA_VERSION == 1, "SQL_SCHEMA spells the schema version");

static int fail(int status, char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(int status, char *why, size_t whylen, const char *fmt, ...)
{
    if (why != NULL && whylen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return status;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int file_size(const char *path, off_t *size)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    *size = st.st_size;
    return 0;
}

static void fsync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* The raw-byte half of the check: SQLite never sees a file that fails it. */
static int check_header(const char *path, char *why, size_t whylen)
{
    unsigned char h[100];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(HKV_EIO, why, whylen, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fail(HKV_EIO, why, whylen, "cannot stat %s: %s", path, strerror(e));
    }
    ssize_t n = S_ISREG(st.st_mode) ? pread(fd, h, sizeof(h), 0) : -2;
    int e = errno;
    close(fd);
    if (n == -2)
        return fail(HKV_ECORRUPT, why, whylen, "%s is not a regular file", path);
    if (n < 0)
        return fail(HKV_EIO, why, whylen, "cannot read %s: %s", path, strerror(e));
    if (n == 0)
        return fail(HKV_ECORRUPT, why, whylen, "%s is empty (truncated)", path);
    if (n < (ssize_t)sizeof(h))
        return fail(HKV_ECORRUPT, why, whylen, "%s is truncated: shorter than a header",
                    path);
    if (memcmp(h, "SQLite format 3", 16) != 0)
        return fail(HKV_ECORRUPT, why, whylen, "%s is not an SQLite database", path);

    uint32_t psz = (uint32_t)h[16] << 8 | h[17];
    if (psz == 1)
        psz = 65536;
    if (psz < 512 || (psz & (psz - 1)) != 0)
        return fail(HKV_ECORRUPT, why, whylen, "%s has a corrupt header (page size)", path);
    if (be32(h + 68) != PDB_APPLICATION_ID)
        return fail(HKV_ECORRUPT, why, whylen,
                    "%s is a foreign SQLite database (application_id is not hotkvd's)", path);
    if (be32(h + 60) != PDB_SCHEMA_VERSION)
        return fail(HKV_ECORRUPT, why, whylen,
                    "%s has an unknown hotkvd schema version (user_version)", path);

    /* With a non-empty WAL the main file may legitimately lag behind (pages
     * not yet checkpointed); without one its size must match the header. */
    char wal[PATH_MAX];
    off_t walsz = 0;
    snprintf(wal, sizeof(wal), "%s-wal", path);
    if (file_size(wal, &walsz) != 0)
        walsz = 0;
    if (walsz == 0) {
        uint64_t pages = be32(h + 28);
        int header_size_valid = be32(h + 24) == be32(h + 92) && pages > 0;
        if (st.st_size % psz != 0 ||
            (header_size_valid && (uint64_t)st.st_size < pages * psz))
            return fail(HKV_ECORRUPT, why, whylen,
                        "%s is truncated (file shorter than its header says)", path);
    }
    return HKV_OK;
}

/* "file:<path>?immutable=1" with the URI's special characters escaped. */
static int immutable_uri(char *out, size_t outlen, const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    const char *pre = "file:", *post = "?immutable=1";
    if (strlen(pre) + strlen(post) + 3 * strlen(path) + 1 > outlen)
        return -1;
    o += (size_t)sprintf(out, "%s", pre);
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if (*c == '%' || *c == '?' || *c == '#' || *c < 0x20 || *c >= 0x7f) {
            out[o++] = '%';
            out[o++] = hex[*c >> 4];
            out[o++] = hex[*c & 15];
        } else {
            out[o++] = (char)*c;
        }
    }
    sprintf(out + o, "%s", post);
    return 0;
}

/* The SQLite half of the check, over a read-only connection.  Without a WAL
 * the main file is the whole truth and is opened immutable (no locks, no -shm
 * or -wal created next to a file we may refuse); with one, SQLite must read
 * the WAL too, so it is opened read-only the ordinary way. */
static int check_contents(const char *path, char *why, size_t whylen)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    int status = HKV_OK, rc;
    char wal[PATH_MAX], uri[3 * PATH_MAX + 32];
    off_t walsz = 0;
    snprintf(wal, sizeof(wal), "%s-wal", path);
    if (file_size(wal, &walsz) != 0)
        walsz = 0;
    if (walsz == 0 && immutable_uri(uri, sizeof(uri), path) == 0)
        rc = sqlite3_open_v2(uri, &db,
                             SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, NULL);
    else
        rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        status = fail(pdb_status(rc), why, whylen, "cannot open %s: %s", path,
                      db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        goto out;
    }
    sqlite3_busy_timeout(db, 5000);

    rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE name='format'", -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        int st = pdb_status(rc);
        if (st == HKV_EIO && (rc & 0xff) == SQLITE_ERROR) /* no such table */
            st = HKV_ECORRUPT;
        status = fail(st, why, whylen,
                      st == HKV_ECORRUPT ? "%s: cannot read a hotkvd meta table: %s"
                                         : "cannot read %s: %s",
                      path, sqlite3_errmsg(db));
        goto out;
    }
    const unsigned char *fmt = sqlite3_column_text(s, 0);
    if (fmt == NULL || strcmp((const char *)fmt, PDB_FORMAT) != 0) {
        status = fail(HKV_ECORRUPT, why, whylen, "%s is not a hotkvd database (meta)", path);
        goto out;
    }
    sqlite3_finalize(s);
    s = NULL;

    rc = sqlite3_prepare_v2(db, "SELECT k, v, stamp, expire_at, class, tomb FROM kv LIMIT 0",
                            -1, &s, NULL);
    if (rc != SQLITE_OK) {
        status = fail(HKV_ECORRUPT, why, whylen, "%s has no usable kv table: %s", path,
                      sqlite3_errmsg(db));
        goto out;
    }
    sqlite3_finalize(s);
    s = NULL;

    rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        status = fail(pdb_status(rc) == HKV_EIO ? HKV_EIO : HKV_ECORRUPT, why, whylen,
                      "%s failed quick_check: %s", path, sqlite3_errmsg(db));
        goto out;
    }
    char res[200];
    const unsigned char *t = sqlite3_column_text(s, 0);
    snprintf(res, sizeof(res), "%s", t ? (const char *)t : "?");
    if (strncmp(res, "***", 3) == 0 && sqlite3_step(s) == SQLITE_ROW && /* a heading */
        (t = sqlite3_column_text(s, 0)) != NULL)
        snprintf(res, sizeof(res), "%s", (const char *)t);
    if (strcmp(res, "ok") != 0)
        status = fail(HKV_ECORRUPT, why, whylen, "%s failed quick_check: %s", path, res);
out:
    sqlite3_finalize(s);
    sqlite3_close(db);
    return status;
}

static void unlink_family(const char *base)
{
    static const char *const sfx[] = {"", "-journal", "-wal", "-shm"};
    char p[PATH_MAX];
    for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
        snprintf(p, sizeof(p), "%s%s", base, sfx[i]);
        (void)unlink(p);
    }
}

/* Builds a fresh database at "<path>.new" and links it to `path`.  HKV_EEXIST
 * if `path` appeared meanwhile (the caller then checks it like any file). */
static int create_fresh(const char *path, char *why, size_t whylen)
{
    char tmp[PATH_MAX], dir[PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp))
        return fail(HKV_EINVAL, why, whylen, "path too long: %s", path);
    unlink_family(tmp);

    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(tmp, &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, SQL_SCHEMA, NULL, NULL, NULL);
    if (rc == SQLITE_OK) /* persistent: stored in the header */
        rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        int status = fail(pdb_status(rc) == HKV_ENOMEM ? HKV_ENOMEM : HKV_EIO, why, whylen,
                          "cannot create %s: %s", tmp,
                          db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        unlink_family(tmp);
        return status;
    }
    rc = sqlite3_close(db); /* checkpoints and removes the -wal */
    if (rc != SQLITE_OK) {
        unlink_family(tmp);
        return fail(HKV_EIO, why, whylen, "cannot close %s: %s", tmp, sqlite3_errstr(rc));
    }
    fsync_path(tmp, O_RDONLY);
    if (link(tmp, path) != 0) {
        int e = errno;
        unlink_family(tmp);
        if (e == EEXIST)
            return HKV_EEXIST;
        return fail(HKV_EIO, why, whylen, "cannot create %s: %s", path, strerror(e));
    }
    unlink_family(tmp);
    snprintf(dir, sizeof(dir), "%s", path);
    fsync_path(dirname(dir), O_RDONLY | O_DIRECTORY);
    return HKV_OK;
}

int pdb_prepare_file(const char *path, char *why, size_t whylen)
{
    struct stat st;
    if (why != NULL && whylen > 0)
        why[0] = '\0';
    if (path == NULL || path[0] == '\0' || strlen(path) + 16 > PATH_MAX)
        return fail(HKV_EINVAL, why, whylen, "bad database path");
    if (stat(path, &st) != 0) {
        if (errno != ENOENT)
            return fail(HKV_EIO, why, whylen, "cannot stat %s: %s", path, strerror(errno));
        char wal[PATH_MAX];
        off_t walsz = 0;
        snprintf(wal, sizeof(wal), "%s-wal", path);
        if (file_size(wal, &walsz) == 0 && walsz > 0)
            return fail(HKV_ECORRUPT, why, whylen,
                        "%s is missing but its WAL %s is not: refusing to guess", path, wal);
        int status = create_fresh(path, why, whylen);
        if (status != HKV_EEXIST)
            return status;
    }
    int status = check_header(path, why, whylen);
    if (status == HKV_OK)
        status = check_contents(path, why, whylen);
    return status;
}

int pdb_open(struct pdb *d, const char *path, int readonly, int busy_timeout_ms,
             uint64_t max_db_bytes, char *why, size_t whylen)
{
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
        if ((rc = sqlite3_prepare_v3(d->db, SQL_UPSERT, -1, SQLITE_PREPARE_PERSISTENT,
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
    fail(status, why, whylen, "cannot open %s: %s", path,
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

/* A zero-length blob must not be bound through a NULL pointer (that is NULL). */
static int bind_bytes(sqlite3_stmt *s, int i, const void *p, size_t n)
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
    if ((rc = bind_bytes(s, 1, r->key, r->klen)) != SQLITE_OK ||
        (rc = r->tombstone ? sqlite3_bind_null(s, 2) : bind_bytes(s, 2, r->val, r->vlen)) !=
            SQLITE_OK ||
        (rc = sqlite3_bind_int64(s, 3, (sqlite3_int64)r->stamp)) != SQLITE_OK ||
        (rc = sqlite3_bind_int64(s, 4, r->expire_at_ms)) != SQLITE_OK ||
        (rc = sqlite3_bind_int(s, 5, r->class_id)) != SQLITE_OK ||
        (rc = sqlite3_bind_int(s, 6, r->tombstone ? 1 : 0)) != SQLITE_OK)
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

static void row_from(sqlite3_stmt *s, struct persist_row *r)
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
        row_from(d->scan, &r);
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
    int rc = bind_bytes(d->get, 1, key, klen);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(d->get);
    if (rc == SQLITE_ROW)
        row_from(d->get, row);
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
