/*
 * persister.h - an owner's write-behind SQLite thread and its reader thread.
 *
 * One persister per owner, one SQLite file per persister.  The owner's event
 * loop never touches the disk: it hands dirty rows over in batches
 * (persister_submit, O(1), never blocks on I/O), asks for non-resident keys
 * (persister_read_async), and learns about finished work through one notify
 * fd.  Two threads do the I/O, each with its own connection:
 *
 *   writer  takes ALL queued batches and commits them in ONE transaction
 *           (group commit), with the stamp guard in the SQL so a late batch
 *           never overwrites a newer row; when idle it purges old tombstones
 *           and runs wal_checkpoint(TRUNCATE).
 *   reader  serves point lookups over a read-only connection; it sees
 *           committed rows only.
 *
 * Lifecycle (all calls below from the owner's thread unless marked):
 *
 *   persister_create   open/check or create the file (refuses a bad one)
 *   persister_load     stream every row for recovery (before start)
 *   persister_start    start both threads
 *   ... submit / read_async / notify fd / take_done / take_reads / stats ...
 *   persister_stop     commit everything still queued, answer every queued
 *                      read, join both threads
 *   persister_destroy  stop if needed, close, free
 *
 * Notify-fd protocol: persister_notify_fd() is a non-blocking, close-on-exec
 * eventfd that becomes readable whenever batches are done or reads are
 * answered.  On readable, the loop reads 8 bytes from it (EAGAIN is fine: a
 * spurious wake) and THEN calls persister_take_done() and
 * persister_take_reads(); anything finished after the read re-arms the fd,
 * so nothing is ever missed.  The fd belongs to the persister: do not close
 * it; it stays valid until persister_destroy().
 *
 * Durability: a transaction that holds any durable batch commits with
 * PRAGMA synchronous=FULL (the WAL is fsynced before the batch is reported
 * done).  A transaction of ledger batches only commits with NORMAL (no fsync:
 * survives a process crash, not a power cut) unless the WAL has not been
 * fsynced for interval_ms, in which case it uses FULL; so a power cut loses
 * at most about one interval of ledger writes, and bursts of ledger batches
 * share one fsync.  A FULL commit also makes every earlier NORMAL commit
 * durable (they precede it in the WAL).
 *
 * Failure: if a transaction fails, no batch in it is reported HKV_OK.
 *   HKV_EFULL  SQLITE_FULL (disk or max_db_bytes quota full): rolled back,
 *              the persister keeps running; resubmit later.
 *   HKV_EIO    an I/O error or a failed fsync: rolled back and STICKY: every
 *              later batch is reported HKV_EIO without touching the file
 *              (after a failed fsync the file's state is unknown and cannot
 *              be retried safely); the owner should exit and recover.
 *   HKV_ENOMEM SQLite ran out of memory (not sticky).
 * No function prints; errors are returned, create's as a reason string too.
 */
#ifndef HKV_PERSISTER_H
#define HKV_PERSISTER_H

#include <stddef.h>
#include <stdint.h>

#include "proto/stamp.h"
#include "storage/persist_row.h"

struct persister;

/* Progress of a schema migration, handed to persister_options.migrate_progress
 * (storage/persist_db.h pdb_migrate) after the count, after every batch of
 * rows, when the index is begun and at the end. */
enum persist_mig_phase { PERSIST_MIG_FILL = 1, PERSIST_MIG_INDEX, PERSIST_MIG_DONE };
struct persist_migration {
    uint32_t from_version;    /* the schema the file had when opened */
    enum persist_mig_phase phase;
    uint64_t rows_total;      /* rows of kv (counted at the start) */
    uint64_t rows_done;       /* rows with their position: this run's and an earlier one's */
    uint64_t rows_resumed;    /* of which an earlier, interrupted run did */
    int64_t elapsed_ms;       /* since this run started */
};
typedef void (*persist_progress_fn)(void *arg, const struct persist_migration *m);

struct persister_options {
    uint32_t interval_ms;     /* the owner's persist_interval (ledger batch cadence);
                                 bounds how long ledger commits skip fsync and sets
                                 the idle threshold.  0 = 1000 */
    uint32_t idle_ms;         /* no batch for this long = idle: purge tombstones
                                 (if due) and wal_checkpoint(TRUNCATE).
                                 0 = 2 * interval_ms (at least 50) */
    uint32_t busy_timeout_ms; /* sqlite3_busy_timeout for both connections; 0 = 5000 */
    uint32_t tomb_keep_ms;    /* when idle, purge tombstones whose stamp is older than
                                 now - tomb_keep_ms; 0 = only persister_purge_tombstones */
    uint64_t max_db_bytes;    /* quota (PRAGMA max_page_count); past it batches are
                                 reported HKV_EFULL like a full disk.  0 = none */
    /* told how a schema migration of the file goes (struct persist_migration),
       on persister_create's thread; NULL = not told */
    persist_progress_fn migrate_progress;
    void *migrate_arg;
};

/* A finished lookup (persister_read_async).  Owned by the loop once taken;
 * free each record with persister_read_free(). */
struct persister_read {
    char *key;                /* malloc'd copy of the requested key */
    size_t klen;
    void *cookie;             /* echoed from persister_read_async */
    int status;               /* HKV_OK: row found; HKV_ENOENT: no row;
                                 HKV_EIO / HKV_ECORRUPT / HKV_ENOMEM: lookup failed */
    char *val;                /* malloc'd value (status OK, not a tombstone), else NULL */
    size_t vlen;
    hkv_stamp stamp;          /* the fields below are valid when status == HKV_OK */
    int64_t expire_at_ms;     /* wall-clock unix ms, 0 = none; expiry is the loop's
                                 business (an expired row is still returned) */
    uint16_t class_id;
    uint8_t tombstone;        /* 1: the key was deleted at `stamp` */
    struct persister_read *next; /* list link */
};

struct persister_stats {
    uint64_t batches;         /* batches reported done (any status) */
    uint64_t rows;            /* rows written (stamp guard passed) */
    uint64_t rows_stale;      /* rows the stamp guard skipped (an equal or newer row held) */
    uint64_t rows_rejected;   /* rows with an invalid stamp (top bit set), not written */
    uint64_t transactions;    /* transactions attempted (group commits) */
    uint64_t fsync_commits;   /* of which committed with synchronous=FULL */
    uint64_t errors;          /* failed transactions */
    uint64_t errors_full;     /* of which SQLITE_FULL */
    int sticky_error;         /* hkv_status of a sticky failure, HKV_OK if none */
    int64_t last_commit_ms;   /* duration of the last transaction */
    int64_t last_commit_at_ms;/* CLOCK_REALTIME ms when it ended, 0 = never */
    int64_t last_ok_at_ms;    /* ... the last one that committed (LASTSAVE), 0 = never */
    int64_t max_commit_ms;    /* longest transaction */
    int64_t max_stall_ms;     /* longest a batch waited queued before its transaction */
    uint64_t queued_batches;  /* submitted, not yet taken by the writer */
    uint64_t queued_rows;
    uint64_t inflight_batches;/* taken, transaction running */
    int64_t backlog_age_ms;   /* age of the oldest submitted, not yet done batch; 0 = none */
    uint64_t reads;           /* lookups answered */
    uint64_t reads_found;
    uint64_t read_errors;
    uint64_t reads_queued;    /* lookups waiting for the reader */
    uint64_t checkpoints;     /* wal_checkpoint(TRUNCATE) completed */
    uint64_t checkpoints_busy;/* checkpoints a reader kept from completing */
    uint64_t tombs_purged;    /* tombstone rows deleted */
};

/* Opens (or creates) the database at `path` and both connections; call it in
 * the process that will use the persister (after fork).  An existing file is
 * checked first (header, application_id, user_version, schema, PRAGMA
 * quick_check) and a corrupt, truncated or foreign file is refused untouched;
 * a missing file is created fresh; a file of the previous schema is
 * migrated in place before this returns (persist_db.h pdb_migrate: it can
 * take a while for a large file, crash-safe, progress told to
 * opt->migrate_progress).  `opt` may be NULL (defaults).
 * HKV_OK (*out set); HKV_ECORRUPT (bad file); HKV_EIO (cannot open or create,
 * e.g. permissions); HKV_ENOMEM; HKV_EINVAL (bad arguments).  On error `why`
 * (if not NULL) holds a one-line reason and *out is NULL. */
int persister_create(struct persister **out, const char *path,
                     const struct persister_options *opt, char *why, size_t whylen);

/* Recovery: calls fn(arg, row) for every stored row, tombstones included, in
 * no particular order.  The row and its key/value are valid only during the
 * call (copy what you keep) and must not be modified.  fn returns HKV_OK to go
 * on; any other value stops the scan and is returned.  Only before
 * persister_start (HKV_EINVAL after).  HKV_OK / HKV_EIO / HKV_ECORRUPT. */
typedef int (*persister_load_fn)(void *arg, const struct persist_row *row);
int persister_load(struct persister *p, persister_load_fn fn, void *arg);

/* The floor of the last FLUSHALL committed to this file (a batch's
 * flush_below), 0 if none: rows below it are gone, and a row a reader
 * returns below it is a deleted key.  Only before persister_start.
 * HKV_OK / HKV_EIO / HKV_EINVAL. */
int persister_flush_floor(struct persister *p, hkv_stamp *floor);
/* A cluster owner's ownership table of `pool` as last saved (a batch's
 * `own`, storage/persist_own.h): *out is a new table (n == 0 and number 0
 * when none was saved; free it with persist_own_free).  Only before
 * persister_start.  HKV_OK / HKV_EIO / HKV_ECORRUPT / HKV_ENOMEM / HKV_EINVAL. */
struct persist_own;
int persister_own_load(struct persister *p, uint8_t pool, struct persist_own **out);
/* Starts the writer and reader threads (they block every signal, so
 * handlers run on the caller's threads).  HKV_OK; HKV_EINVAL if already
 * started or stopped; HKV_ENOMEM if a thread cannot be created (then the
 * persister is stopped: anything queued was drained, see persister_stop). */
int persister_start(struct persister *p);

/* Hands batch `b` (b->next is overwritten) to the writer; the persister owns it
 * until persister_take_done() returns it with b->status and b->commit_ms set.
 * O(1), never blocks on disk; batches may be submitted before start (they wait
 * and share the first transaction).  HKV_OK; HKV_EINVAL if `b` is NULL or the
 * persister is stopping/stopped (the caller keeps `b`).  An empty batch is
 * fine (reported done with the next transaction). */
int persister_submit(struct persister *p, struct persist_batch *b);

/* Queues a lookup of `key` (copied) for the reader; the answer comes back as a
 * struct persister_read carrying `cookie`.  Works before start too.  HKV_OK;
 * HKV_ENOMEM; HKV_EINVAL if stopping/stopped. */
int persister_read_async(struct persister *p, const void *key, size_t klen, void *cookie);

/* The eventfd described at the top.  Valid until persister_destroy(). */
int persister_notify_fd(const struct persister *p);

/* Takes every finished batch, oldest first, as a list linked by ->next (NULL
 * if none).  The caller owns them: persist_batch_free() each. */
struct persist_batch *persister_take_done(struct persister *p);

/* Takes every answered lookup, oldest first, linked by ->next (NULL if none).
 * The caller owns them: persister_read_free() each. */
struct persister_read *persister_take_reads(struct persister *p);

/* Frees one read record (not its ->next) and sets *r = NULL.  NULL-safe. */
void persister_read_free(struct persister_read **r);

/* ---- jobs: a caller's own work on a persister thread's connection ----
 *
 * For what is more than rows and point lookups: a leaf's rows read in
 * pages for a hand-off, a purge of a leaf's leftovers (storage/
 * persist_leaf.h), a SCAN's page of keys that live only on disk.  A job is
 * a struct the caller embeds in its own and owns; the persister holds it
 * from submit until persister_jobs_done hands it back.  `run` runs on the
 * persister's thread with that thread's connection: the reader's
 * (read-only, sees committed rows) or the writer's (between the
 * transactions of batches; it may write, in transactions of its own, which
 * it must leave closed: one left open is rolled back).  Bounded work per
 * job, since batches wait behind a writer job and lookups behind a reader
 * one: a long task is a chain of jobs, each submitted from the previous
 * one's done.  `run` must not touch anything of the loop's. */
struct pdb;
struct persister_job;
/* Returns an hkv_status (persist_leaf.h's calls return what it needs).
 * HKV_EIO or HKV_ECORRUPT from a writer job makes the persister's error
 * sticky, as a failed batch does: the file is not written again. */
typedef int (*persister_job_run_fn)(struct persister_job *j, struct pdb *db);
/* On the loop, from persister_jobs_done; status says how run went. */
typedef void (*persister_job_done_fn)(struct persister_job *j);
struct persister_job {
    persister_job_run_fn run;
    persister_job_done_fn done;
    int writer;               /* 1: the writer thread; 0: the reader thread */
    int status;               /* set by the persister: what run returned, HKV_EIO
                               * without running (a writer job after a
                               * sticky error) or HKV_EINVAL (not run: the persister
                               * was destroyed first; touch nothing of the loop) */
    struct persister_job *next; /* the persister's while it holds the job */
};
/* Queues j for its thread (before start too).  HKV_OK; HKV_EINVAL if j has
 * no run or done, or the persister is stopping (the caller keeps j). */
int persister_job_submit(struct persister *p, struct persister_job *j);
/* Hands back every job run since the last call, oldest first, through its
 * done callback (call it when the notify fd is readable, like
 * persister_take_done).  Returns how many. */
size_t persister_jobs_done(struct persister *p);

/* Asks the writer to delete tombstones with stamp < horizon the next time it
 * is idle (the latest request wins).  Only safe once no batch with an older
 * stamp for those keys can still arrive.  HKV_OK. */
int persister_purge_tombstones(struct persister *p, hkv_stamp horizon);

/* A new persist interval (a config reload): the fsync bound and the idle
 * threshold follow it from the next transaction on.  0 = 1000.  Callable from
 * any thread. */
void persister_set_interval(struct persister *p, uint32_t interval_ms);

/* A consistent snapshot of the counters; callable from any thread. */
void persister_stats(struct persister *p, struct persister_stats *st);

/* Stops taking work, commits every queued batch (they end up on the done
 * list), answers every queued read, joins both threads.  A persister never
 * started is started first if anything is queued, so the same drain happens.  Idempotent; later
 * submits and reads get HKV_EINVAL.  Returns the sticky error (HKV_EIO) if
 * one happened (or a start failure), else HKV_OK.  Done batches and answered
 * reads stay takeable until destroy. */
int persister_stop(struct persister *p);

/* Stops (if running), closes both connections (the last close checkpoints
 * and removes the WAL), frees every batch and read it still holds (done
 * but not taken), hands every job it still holds to its done callback with
 * HKV_EINVAL, closes the notify fd; sets *pp = NULL.
 * NULL-safe. */
void persister_destroy(struct persister **pp);

#endif
