/*
 * persist_leaf.h - a leaf's rows in an owner's SQLite file, found by their
 * position (the kv.hpos column and its index), never by a scan of the table.
 *
 * Positions are proto/place.h's place_pos: a leaf of `bits` bits and prefix
 * p is the range [place_leaf_start(bits, p), place_leaf_end(bits, p)), and
 * any range [start, end) of positions works the same (a SCAN reads from a
 * cursor to a leaf's end).  Within a range rows come in (position, key)
 * order, which is total, so a walk in pages resumes exactly where it
 * stopped whatever was written in between: a row written behind the cursor
 * is not seen again, one written ahead of it is seen once.
 *
 * Who calls what.  These run on a persister thread, with its connection, as
 * the body of a job (storage/persister.h persister_job: `run` gets the
 * struct pdb *), or on a connection the caller opened itself before the
 * threads start.  Reads work on the reader's read-only connection (they see
 * committed rows); persist_leaf_delete needs the writer's.  Each call is
 * bounded by its row limit, so a job stays short and batches and lookups do
 * not wait long behind it.  Nothing here allocates what it returns, except
 * the cursor's copy of its key.
 *
 * Statuses: HKV_OK; HKV_EIO or HKV_ECORRUPT (the file failed: fatal on the
 * writer); HKV_EFULL (disk or quota full); HKV_ENOMEM; HKV_EAGAIN (the file
 * was locked past the busy timeout); HKV_EINVAL (bad arguments).
 */
#ifndef HKV_PERSIST_LEAF_H
#define HKV_PERSIST_LEAF_H

#include <stddef.h>
#include <stdint.h>

#include "storage/persist_row.h"

struct pdb;

/* Where a walk over a range is: after the row (pos, key) last handed out.
 * Zero it to start; free its key with persist_leaf_cursor_free. */
struct persist_leaf_cursor {
    uint64_t pos;             /* position of the last row handed out */
    char *key;                /* its key (a malloc'd copy) */
    size_t klen;
    int started;              /* a row was handed out: resume after (pos, key) */
    int done;                 /* the range has no row after the cursor (as of the last
                               * call: rows written later may come, if ahead of it) */
};
void persist_leaf_cursor_free(struct persist_leaf_cursor *c);

/* One row of a page: SQLite's memory, valid during the call only; pos is
 * its position.  Return HKV_OK to go on; anything else ends the page (the
 * row counts as handed out) and persist_leaf_page returns it. */
typedef int (*persist_leaf_fn)(void *arg, const struct persist_row *row, uint64_t pos);

/* Hands up to max_rows rows (tombstones too) with position in [start, end)
 * after cursor c to fn, in (position, key) order, and moves c past them;
 * sets c->done when no row of the range is left after c.  HKV_OK, fn's
 * status, or an error (c stays at the last row handed out). */
int persist_leaf_page(struct pdb *d, uint64_t start, uint64_t end, struct persist_leaf_cursor *c,
                      size_t max_rows, persist_leaf_fn fn, void *arg);

/* Rows with position in [start, end): *rows; *tombs (may be NULL: then only
 * the index is read) the tombstones among them. */
int persist_leaf_count(struct pdb *d, uint64_t start, uint64_t end, uint64_t *rows,
                       uint64_t *tombs);

/* Deletes up to max_rows rows with position in [start, end) (tombstones
 * too): *deleted how many, *more 1 if rows of the range are left.  Inside
 * the caller's transaction if one is open, else in one of its own,
 * committed with the connection's current synchronous setting (the
 * persister's writer: as its last batch).  Writer connection only. */
int persist_leaf_delete(struct pdb *d, uint64_t start, uint64_t end, size_t max_rows,
                        uint64_t *deleted, int *more);

#endif
