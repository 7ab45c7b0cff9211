/*
 * persist_rehome.h - puts every stored key in the file of the owner that
 * serves it, before the owners start.
 *
 * A pool's keys are spread over one SQLite file per owner, by the router's
 * placement hash.  When placement changes for keys already stored - hash tags
 * ("{user:1}:a" now places by "user:1"), or a different number of owners in
 * the pool - rows sit in a file whose owner no longer serves them, and would
 * silently vanish from view.  The master calls persist_rehome() once per pool
 * at start, while no owner runs: rows whose owner differs are copied into the
 * right file (stamp-guarded, so a newer row there wins), that file is
 * committed with synchronous=FULL, and only then are they deleted from the
 * file they left (only if still the same stamp).  A crash between the two
 * leaves a row in both files with one stamp, which the next run settles, so
 * the move is idempotent and nothing is lost.  Each file then gets a
 * `layout` marker in its meta table; while every file of the pool carries
 * the current layout, the scan is skipped.
 */
#ifndef HKV_PERSIST_REHOME_H
#define HKV_PERSIST_REHOME_H

#include <stddef.h>
#include <stdint.h>

/* Which file (owner index, 0..n-1) key belongs in. */
typedef int (*persist_owner_fn)(void *arg, const char *key, size_t klen);

struct persist_rehome_stats {
    uint64_t files_scanned;  /* files whose marker was missing or different */
    uint64_t rows_scanned;
    uint64_t rows_moved;     /* copied to their owner's file and deleted here */
    uint64_t rows_stale;     /* the destination already had a newer row: deleted here */
    uint64_t files_refused;  /* corrupt or foreign: left untouched (the owner refuses
                              * it too); rows bound for one stay where they are */
    uint64_t rows_kept;      /* rows left in place because their file was refused */
};

/* Rehomes the rows of paths[0..nfiles-1] (missing files are skipped: an
 * owner that never ran has nothing) under placement `layout` (a short string
 * that changes whenever placement does, e.g. "tags=1 owners=2").  Files
 * 0..n-1 belong to the pool's owners; files n.. are left from a larger pool:
 * all their rows move, and each is removed once empty.  HKV_OK with
 * *st filled (a corrupt or foreign file is not an error here: it is counted
 * in files_refused, named in `why`, and never written; a file whose rows could
 * not all move keeps its old marker, so the next start tries again);
 * HKV_EIO / HKV_ENOMEM / HKV_EFULL with `why`: then the pool must not start
 * (a key could be served by the wrong owner). */
int persist_rehome(const char *const *paths, int nfiles, int n, const char *layout,
                   persist_owner_fn owner_of,
                   void *arg, struct persist_rehome_stats *st, char *why, size_t whylen);

#endif
