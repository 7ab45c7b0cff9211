/*
 * persist_db_file.c - the persister's file: the check that refuses a file
 * that is not ours, and the atomic creation of a fresh one.
 *
 * A file is checked before SQLite is allowed to write to it: first its raw
 * header bytes (so garbage, a truncated file or another application's
 * database is refused without SQLite opening it at all), then, over a
 * read-only connection, the meta marker, the kv columns and PRAGMA
 * quick_check.  A refused file is never touched and never recreated over.
 * A missing file is built under "<path>.new" and hard-linked into place, so
 * the real name only ever names a complete database.  A file of the
 * previous schema (user_version 1) passes the check: the first writer
 * connection migrates it (persist_db_migrate.c).
 */
#include "storage/persist_db.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/hkv.h"

#define PDB_FORMAT "hotkvd"

static const char SQL_SCHEMA[] =
    "PRAGMA application_id=1212896836;" /* PDB_APPLICATION_ID */
    "PRAGMA user_version=2;"            /* PDB_SCHEMA_VERSION */
    "BEGIN;"
    "CREATE TABLE kv(k BLOB PRIMARY KEY NOT NULL, v BLOB, stamp INTEGER NOT NULL,"
    " expire_at INTEGER NOT NULL DEFAULT 0, class INTEGER NOT NULL,"
    " tomb INTEGER NOT NULL DEFAULT 0, hpos INTEGER);"
    "CREATE INDEX kv_hpos ON kv(hpos, k);"
    "CREATE TABLE meta(name TEXT PRIMARY KEY, value) WITHOUT ROWID;"
    "INSERT INTO meta(name, value) VALUES('format','" PDB_FORMAT "'),('schema',2);"
    "COMMIT;";

/* kv is a rowid table, not WITHOUT ROWID: SQLite keeps a WITHOUT ROWID
 * table's rows in an index b-tree, whose local payload on a 4 KiB page is at
 * most ~1000 bytes, so every row of a 1 KiB value spilled into an overflow
 * page of its own (a 4 KiB page write for each row, the file four times
 * the data) and bulk writes ran at 6-9k rows/s (8 MiB/s).  A rowid table
 * holds rows up to ~4 KiB on the page; the key's own index (the PRIMARY
 * KEY's) carries only the key.  Measured, 131,072 rows of 1 KiB in
 * transactions of 20,000, random key order, WAL, synchronous=FULL, on the
 * shared 2-vCPU VM: 6.9k rows/s WITHOUT ROWID, 61k rows/s as below.  The
 * kv_hpos index names k so that a leaf's rows come in (hpos, k) order from
 * the index alone (persist_leaf.c), as they did from the WITHOUT ROWID
 * table's (hpos) index, whose entries were (hpos, k).  Files made before
 * keep their WITHOUT ROWID table: every statement reads and writes both
 * layouts alike, and user_version does not tell them apart. */
_Static_assert(PDB_APPLICATION_ID == 1212896836, "SQL_SCHEMA spells the application id");
_Static_assert(PDB_SCHEMA_VERSION == 2, "SQL_SCHEMA spells the schema version");

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
        return pdb_why(HKV_EIO, why, whylen, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return pdb_why(HKV_EIO, why, whylen, "cannot stat %s: %s", path, strerror(e));
    }
    ssize_t n = S_ISREG(st.st_mode) ? pread(fd, h, sizeof(h), 0) : -2;
    int e = errno;
    close(fd);
    if (n == -2)
        return pdb_why(HKV_ECORRUPT, why, whylen, "%s is not a regular file", path);
    if (n < 0)
        return pdb_why(HKV_EIO, why, whylen, "cannot read %s: %s", path, strerror(e));
    if (n == 0)
        return pdb_why(HKV_ECORRUPT, why, whylen, "%s is empty (truncated)", path);
    if (n < (ssize_t)sizeof(h))
        return pdb_why(HKV_ECORRUPT, why, whylen, "%s is truncated: shorter than a header",
                    path);
    if (memcmp(h, "SQLite format 3", 16) != 0)
        return pdb_why(HKV_ECORRUPT, why, whylen, "%s is not an SQLite database", path);

    uint32_t psz = (uint32_t)h[16] << 8 | h[17];
    if (psz == 1)
        psz = 65536;
    if (psz < 512 || (psz & (psz - 1)) != 0)
        return pdb_why(HKV_ECORRUPT, why, whylen, "%s has a corrupt header (page size)", path);
    if (be32(h + 68) != PDB_APPLICATION_ID)
        return pdb_why(HKV_ECORRUPT, why, whylen,
                    "%s is a foreign SQLite database (application_id is not hotkvd's)", path);
    /* (with a WAL the header may lag behind a committed migration: 1 or 2) */
    if (be32(h + 60) != PDB_SCHEMA_VERSION && be32(h + 60) != PDB_SCHEMA_V1)
        return pdb_why(HKV_ECORRUPT, why, whylen,
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
            return pdb_why(HKV_ECORRUPT, why, whylen,
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
        status = pdb_why(pdb_status(rc), why, whylen, "cannot open %s: %s", path,
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
        status = pdb_why(st, why, whylen,
                      st == HKV_ECORRUPT ? "%s: cannot read a hotkvd meta table: %s"
                                         : "cannot read %s: %s",
                      path, sqlite3_errmsg(db));
        goto out;
    }
    const unsigned char *fmt = sqlite3_column_text(s, 0);
    if (fmt == NULL || strcmp((const char *)fmt, PDB_FORMAT) != 0) {
        status = pdb_why(HKV_ECORRUPT, why, whylen, "%s is not a hotkvd database (meta)", path);
        goto out;
    }
    sqlite3_finalize(s);
    s = NULL;

    rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL);
    int version = rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : -1;
    sqlite3_finalize(s);
    s = NULL;
    if (version != PDB_SCHEMA_VERSION && version != PDB_SCHEMA_V1) {
        status = pdb_why(HKV_ECORRUPT, why, whylen,
                         "%s has an unknown hotkvd schema version (user_version %d)", path,
                         version);
        goto out;
    }
    rc = sqlite3_prepare_v2(db,
                            version == PDB_SCHEMA_V1
                                ? "SELECT k, v, stamp, expire_at, class, tomb FROM kv LIMIT 0"
                                : "SELECT k, v, stamp, expire_at, class, tomb, hpos FROM kv LIMIT 0",
                            -1, &s, NULL);
    if (rc != SQLITE_OK) {
        status = pdb_why(HKV_ECORRUPT, why, whylen, "%s has no usable kv table: %s", path,
                      sqlite3_errmsg(db));
        goto out;
    }
    sqlite3_finalize(s);
    s = NULL;

    rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        status = pdb_why(pdb_status(rc) == HKV_EIO ? HKV_EIO : HKV_ECORRUPT, why, whylen,
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
        status = pdb_why(HKV_ECORRUPT, why, whylen, "%s failed quick_check: %s", path, res);
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
        return pdb_why(HKV_EINVAL, why, whylen, "path too long: %s", path);
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
        int status = pdb_why(pdb_status(rc) == HKV_ENOMEM ? HKV_ENOMEM : HKV_EIO, why, whylen,
                          "cannot create %s: %s", tmp,
                          db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        unlink_family(tmp);
        return status;
    }
    rc = sqlite3_close(db); /* checkpoints and removes the -wal */
    if (rc != SQLITE_OK) {
        unlink_family(tmp);
        return pdb_why(HKV_EIO, why, whylen, "cannot close %s: %s", tmp, sqlite3_errstr(rc));
    }
    fsync_path(tmp, O_RDONLY);
    if (link(tmp, path) != 0) {
        int e = errno;
        unlink_family(tmp);
        if (e == EEXIST)
            return HKV_EEXIST;
        return pdb_why(HKV_EIO, why, whylen, "cannot create %s: %s", path, strerror(e));
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
        return pdb_why(HKV_EINVAL, why, whylen, "bad database path");
    if (stat(path, &st) != 0) {
        if (errno != ENOENT)
            return pdb_why(HKV_EIO, why, whylen, "cannot stat %s: %s", path, strerror(errno));
        char wal[PATH_MAX];
        off_t walsz = 0;
        snprintf(wal, sizeof(wal), "%s-wal", path);
        if (file_size(wal, &walsz) == 0 && walsz > 0)
            return pdb_why(HKV_ECORRUPT, why, whylen,
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
