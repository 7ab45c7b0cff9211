/*
 * persist_own.c - the ownership table in SQL (see persist_own.h): table
 * own(pool, start, bits, epoch) and three meta rows (own_cluster,
 * own_number, own_revision).  Saving replaces the whole table inside the
 * caller's transaction (the persister's), so a crash leaves either the old
 * table or the new one, never a mix; the table is small (at most a few
 * thousand leaves per owner), so a replace is cheaper to reason about than
 * a diff.  `CREATE TABLE IF NOT EXISTS` on first use keeps files of a single
 * host (and files written before this table existed) valid as they are.
 */
#include "storage/persist_own.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "storage/persist_db.h"

static const char SQL_OWN_TABLE[] =
    "CREATE TABLE IF NOT EXISTS own(pool INTEGER NOT NULL, start INTEGER NOT NULL,"
    " bits INTEGER NOT NULL, epoch INTEGER NOT NULL, PRIMARY KEY(pool, start, bits))"
    " WITHOUT ROWID";

struct persist_own *persist_own_new(size_t n)
{
    struct persist_own *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return NULL;
    o->leaves = calloc(n ? n : 1, sizeof(*o->leaves));
    if (o->leaves == NULL) {
        free(o);
        return NULL;
    }
    o->n = n;
    return o;
}

void persist_own_free(struct persist_own **op)
{
    if (op == NULL || *op == NULL)
        return;
    free((*op)->leaves);
    free(*op);
    *op = NULL;
}

struct persist_own *persist_own_copy(const struct persist_own *o)
{
    struct persist_own *c = persist_own_new(o->n);
    if (c == NULL)
        return NULL;
    struct persist_own_leaf *l = c->leaves;
    *c = *o;
    c->leaves = l;
    if (o->n > 0)
        memcpy(c->leaves, o->leaves, o->n * sizeof(*o->leaves));
    return c;
}

static int exec_meta(sqlite3 *db, const char *name, sqlite3_int64 iv, const char *tv)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta(name, value) VALUES(?1, ?2)", -1,
                                &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = tv != NULL ? sqlite3_bind_text(s, 2, tv, -1, SQLITE_TRANSIENT)
                        : sqlite3_bind_int64(s, 2, iv);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
    sqlite3_finalize(s);
    return rc;
}

int pdb_own_save(struct pdb *d, const struct persist_own *o)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_exec(d->db, SQL_OWN_TABLE, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(d->db, "DELETE FROM own", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(d->db, "INSERT INTO own(pool, start, bits, epoch) "
                                       "VALUES(?1, ?2, ?3, ?4)", -1, &s, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < o->n; i++) {
        const struct persist_own_leaf *l = &o->leaves[i];
        sqlite3_bind_int64(s, 1, o->pool);
        sqlite3_bind_int64(s, 2, l->start);
        sqlite3_bind_int64(s, 3, l->bits);
        sqlite3_bind_int64(s, 4, l->epoch);
        rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(d->db);
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_OK)
        rc = exec_meta(d->db, "own_cluster", 0, o->cluster);
    if (rc == SQLITE_OK)
        rc = exec_meta(d->db, "own_number", o->number, NULL);
    if (rc == SQLITE_OK)
        rc = exec_meta(d->db, "own_revision", o->revision, NULL);
    return rc;
}

static int read_meta(sqlite3 *db, struct persist_own *o)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT name, value FROM meta WHERE name LIKE 'own_%'", -1,
                                &s, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        const char *name = (const char *)sqlite3_column_text(s, 0);
        if (name == NULL)
            continue;
        if (strcmp(name, "own_cluster") == 0) {
            const char *v = (const char *)sqlite3_column_text(s, 1);
            snprintf(o->cluster, sizeof(o->cluster), "%s", v != NULL ? v : "");
        } else if (strcmp(name, "own_number") == 0) {
            sqlite3_int64 v = sqlite3_column_int64(s, 1);
            o->number = v > 0 && v <= UINT32_MAX ? (uint32_t)v : 0;
        } else if (strcmp(name, "own_revision") == 0) {
            o->revision = sqlite3_column_int64(s, 1);
        }
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int pdb_own_load(struct pdb *d, uint8_t pool, struct persist_own **out)
{
    *out = NULL;
    sqlite3_stmt *s = NULL;
    size_t n = 0;
    int rc = sqlite3_exec(d->db, SQL_OWN_TABLE, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(d->db, "SELECT count(*) FROM own WHERE pool=?1", -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, pool);
        rc = sqlite3_step(s) == SQLITE_ROW ? SQLITE_OK : sqlite3_errcode(d->db);
        n = rc == SQLITE_OK ? (size_t)sqlite3_column_int64(s, 0) : 0;
    }
    sqlite3_finalize(s);
    s = NULL;
    if (rc != SQLITE_OK)
        return rc;
    struct persist_own *o = persist_own_new(n);
    if (o == NULL)
        return SQLITE_NOMEM;
    o->pool = pool;
    rc = sqlite3_prepare_v2(d->db, "SELECT start, bits, epoch FROM own WHERE pool=?1 "
                                   "ORDER BY start", -1, &s, NULL);
    size_t i = 0;
    if (rc == SQLITE_OK)
        sqlite3_bind_int64(s, 1, pool);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        sqlite3_int64 start = sqlite3_column_int64(s, 0), bits = sqlite3_column_int64(s, 1);
        if (i == n || start < 0 || start > UINT32_MAX || bits < 0 || bits > 32) {
            rc = SQLITE_CORRUPT; /* a row the saver never writes */
            break;
        }
        o->leaves[i++] = (struct persist_own_leaf){(uint32_t)start, (uint8_t)bits,
                                                   sqlite3_column_int64(s, 2)};
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    o->n = i;
    if (rc == SQLITE_OK)
        rc = read_meta(d->db, o);
    if (rc != SQLITE_OK) {
        persist_own_free(&o);
        return rc;
    }
    *out = o;
    return SQLITE_OK;
}
