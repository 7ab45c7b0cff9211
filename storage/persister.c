/*
 * persister.c - the owner's write-behind thread: lifecycle, batches, group
 * commit and the idle housekeeping (the reader thread is persister_read.c,
 * jobs persister_job.c; persister_int.h is what they share).
 *
 * The loop and the two threads share one mutex that guards only list links
 * and counters: submit and read_async append to a queue and signal a condvar
 * (O(1), no I/O under the lock), the threads detach the whole queue, do the
 * SQLite work unlocked, append the results to a done list and bump an
 * eventfd.  Taking the WHOLE queue is the group commit: every batch that
 * arrived while the previous transaction was being fsynced shares the next
 * one, so a slow disk makes transactions bigger, not more numerous.
 *
 * The synchronous choice (measured on the dev VM, WAL, 100-byte values, see
 * also LIBRARIES.md 3): per transaction FULL cost p50 0.21 ms vs 0.01 ms for 1
 * row, 0.25 vs 0.11 ms for 10 rows, 1.3 vs 0.8 ms for 100 rows, equal at 1000
 * rows (~25 ms); real disks without a write cache make the fsync 2-10 ms.  So
 * a transaction holding a durable batch always uses FULL (the promise), and
 * ledger-only transactions use NORMAL unless no fsync happened for
 * interval_ms, which bounds what a power cut loses to about one interval while
 * a burst of small ledger batches (a backlog draining, or an owner flushing
 * more often than the interval) pays for one fsync, not one each.  Switching
 * is a PRAGMA on the writer's own connection between transactions: no I/O.
 *
 * A failed fsync is never retried: SQLite reports SQLITE_IOERR, the batches
 * of that transaction are reported HKV_EIO, and so is every later one
 * (sticky), because after a failed fsync nobody knows what is on disk.
 */
#include "storage/persister.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "storage/bgwriter.h"
#include "storage/persist_db.h"
#include "storage/persister_int.h"

#define DEFAULT_INTERVAL_MS 1000
#define DEFAULT_BUSY_TIMEOUT_MS 5000
#define MIN_IDLE_MS 50


int64_t persister_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void persister_notify(struct persister *p)
{
    bgw_wake(p->efd);
}

static uint32_t idle_ms(const struct persister *p)
{
    uint32_t ms = p->opt.idle_ms ? p->opt.idle_ms
                                 : 2 * atomic_load_explicit(&p->interval_ms, memory_order_relaxed);
    return ms < MIN_IDLE_MS ? MIN_IDLE_MS : ms;
}

/* ---- writer ------------------------------------------------------------ */

/* One transaction for the whole list; sets every batch's status/commit_ms. */
static void commit_list(struct persister *p, struct persist_batch *list)
{
    int64_t t0 = persister_mono_ms();
    uint64_t rows = 0, stale = 0, rejected = 0;
    int full = 0, rc = SQLITE_OK, status, attempted = 0;

    for (struct persist_batch *b = list; b != NULL; b = b->next)
        full |= b->durable || b->flush_below != 0 || b->own != NULL;
    if (!full &&
        t0 - p->last_sync_ms >= (int64_t)atomic_load_explicit(&p->interval_ms, memory_order_relaxed))
        full = 1;

    if (p->sticky != HKV_OK) {
        status = p->sticky; /* the file is not touched again */
        goto report;
    }
    attempted = 1;
    if ((rc = pdb_set_sync(&p->w, full)) != SQLITE_OK || (rc = pdb_begin(&p->w)) != SQLITE_OK)
        goto failed;
    for (struct persist_batch *b = list; b != NULL; b = b->next) {
        if (b->flush_below != 0 && (rc = pdb_flush_below(&p->w, b->flush_below)) != SQLITE_OK)
            goto failed;
        if (b->own != NULL && (rc = pdb_own_save(&p->w, b->own)) != SQLITE_OK)
            goto failed;
        for (size_t i = 0; i < b->n; i++) {
            const struct persist_row *r = &b->rows[i];
            int applied;
            if (r->stamp > (hkv_stamp)INT64_MAX) { /* would compare as negative */
                rejected++;
                continue;
            }
            if ((rc = pdb_upsert(&p->w, r, &applied)) != SQLITE_OK)
                goto failed;
            if (applied)
                rows++;
            else
                stale++;
        }
    }
    if ((rc = pdb_commit(&p->w)) != SQLITE_OK)
        goto failed;
    status = HKV_OK;
    p->dirty = 1;
    if (full)
        p->last_sync_ms = persister_mono_ms();
    goto report;
failed:
    pdb_rollback(&p->w);
    if (pdb_rc_fatal(rc)) {
        p->sticky = HKV_EIO;
        status = HKV_EIO;
    } else {
        status = pdb_status(rc);
        if (status == HKV_ECORRUPT || status == HKV_OK)
            status = HKV_EIO;
    }
report:;
    int64_t t1 = persister_mono_ms();
    int64_t took = t1 - t0;
    uint64_t nb = 0;
    for (struct persist_batch *b = list; b != NULL; b = b->next) {
        b->status = status;
        b->commit_ms = took;
        nb++;
    }
    p->last_work_ms = t1;

    pthread_mutex_lock(&p->mu);
    struct persister_stats *st = &p->st;
    st->batches += nb;
    st->transactions += attempted;
    if (status == HKV_OK) {
        st->rows += rows;
        st->rows_stale += stale;
        st->rows_rejected += rejected;
        st->fsync_commits += full ? 1 : 0;
        st->last_ok_at_ms = wall_ms();
    } else if (rc != SQLITE_OK) {
        st->errors++;
        st->errors_full += status == HKV_EFULL ? 1 : 0;
    }
    st->sticky_error = p->sticky;
    st->last_commit_ms = took;
    st->last_commit_at_ms = wall_ms();
    if (took > st->max_commit_ms)
        st->max_commit_ms = took;
    p->inflight = 0;
    if (p->d_tail != NULL)
        p->d_tail->next = list;
    else
        p->d_head = list;
    struct persist_batch *last = list;
    while (last->next != NULL)
        last = last->next;
    p->d_tail = last;
    pthread_mutex_unlock(&p->mu);
    persister_notify(p);
}

/* Idle work: tombstone purge (if asked or due), then checkpoint. */
static void housekeep(struct persister *p, int purge, hkv_stamp horizon)
{
    uint64_t purged = 0;
    int ckpt = 0, busy = 0;
    if (p->sticky != HKV_OK) {
        p->dirty = 0;
        return;
    }
    if (purge && pdb_purge(&p->w, horizon, &purged) == SQLITE_OK && purged > 0)
        p->dirty = 1;
    if (p->dirty) {
        int rc = pdb_checkpoint(&p->w);
        if (rc == SQLITE_OK) {
            ckpt = 1;
            p->dirty = 0;
            p->last_sync_ms = persister_mono_ms(); /* a checkpoint syncs WAL and database */
        } else if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) {
            busy = 1;
        } else if (pdb_rc_fatal(rc)) {
            p->sticky = HKV_EIO;
        }
    }
    pthread_mutex_lock(&p->mu);
    p->st.tombs_purged += purged;
    p->st.checkpoints += (uint64_t)ckpt;
    p->st.checkpoints_busy += (uint64_t)busy;
    p->st.sticky_error = p->sticky;
    pthread_mutex_unlock(&p->mu);
}

static hkv_stamp auto_horizon(const struct persister *p)
{
    int64_t cut = wall_ms() - (int64_t)p->opt.tomb_keep_ms - (int64_t)STAMP_EPOCH_MS;
    return cut > 0 ? stamp_make((uint64_t)cut, 0, 0) : 0;
}

static void *writer_main(void *arg)
{
    struct persister *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->q_head != NULL) {
            struct persist_batch *list = p->q_head;
            int64_t now = persister_mono_ms();
            if (now - p->q_since_ms > p->st.max_stall_ms)
                p->st.max_stall_ms = now - p->q_since_ms;
            p->inflight = p->q_batches;
            p->inflight_since_ms = p->q_since_ms;
            p->q_head = p->q_tail = NULL;
            p->q_batches = p->q_rows = 0;
            pthread_mutex_unlock(&p->mu);
            commit_list(p, list);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        if (p->jq[1][0] != NULL) { /* between transactions of batches */
            persister_jobs_run(p, 1);
            continue;
        }
        if (p->stopping)
            break;
        int want = p->purge_requested || p->dirty;
        if (!want) {
            pthread_cond_wait(&p->wcond, &p->mu);
            continue;
        }
        int64_t due = p->last_work_ms + idle_ms(p);
        int64_t now = persister_mono_ms();
        if (now < due) {
            struct timespec ts = {.tv_sec = due / 1000, .tv_nsec = (due % 1000) * 1000000};
            pthread_cond_timedwait(&p->wcond, &p->mu, &ts);
            continue;
        }
        int purge = p->purge_requested || p->opt.tomb_keep_ms > 0;
        hkv_stamp horizon = p->purge_requested ? p->purge_horizon : auto_horizon(p);
        if (p->purge_requested && p->opt.tomb_keep_ms > 0 && auto_horizon(p) > horizon)
            horizon = auto_horizon(p);
        p->purge_requested = 0;
        pthread_mutex_unlock(&p->mu);
        housekeep(p, purge, horizon);
        p->last_work_ms = persister_mono_ms();
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- API ----------------------------------------------------------------- */

int persister_create(struct persister **out, const char *path,
                     const struct persister_options *opt, char *why, size_t whylen)
{
    pthread_condattr_t ca;
    int status;
    if (why != NULL && whylen > 0)
        why[0] = '\0';
    if (out == NULL || path == NULL)
        return HKV_EINVAL;
    *out = NULL;
    struct persister *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return HKV_ENOMEM;
    p->efd = -1;
    if (opt != NULL)
        p->opt = *opt;
    if (p->opt.interval_ms == 0)
        p->opt.interval_ms = DEFAULT_INTERVAL_MS;
    atomic_init(&p->interval_ms, p->opt.interval_ms);
    if (p->opt.busy_timeout_ms == 0)
        p->opt.busy_timeout_ms = DEFAULT_BUSY_TIMEOUT_MS;
    if (p->opt.busy_timeout_ms > INT32_MAX)
        p->opt.busy_timeout_ms = INT32_MAX;

    p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->efd < 0) {
        status = errno == ENOMEM ? HKV_ENOMEM : HKV_EIO;
        goto fail;
    }
    struct pdb_open_opts wo = {0, (int)p->opt.busy_timeout_ms, p->opt.max_db_bytes, 1,
                               p->opt.migrate_progress, p->opt.migrate_arg};
    if ((status = pdb_prepare_file(path, why, whylen)) != HKV_OK ||
        (status = pdb_open_opts(&p->w, path, &wo, why, whylen)) != HKV_OK ||
        (status = pdb_open(&p->r, path, 1, (int)p->opt.busy_timeout_ms, 0, why, whylen)) !=
            HKV_OK)
        goto fail;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wcond, &ca);
    pthread_cond_init(&p->rcond, &ca);
    pthread_condattr_destroy(&ca);
    p->st.sticky_error = HKV_OK;
    p->last_sync_ms = p->last_work_ms = persister_mono_ms();
    *out = p;
    return HKV_OK;
fail:
    pdb_close(&p->r);
    pdb_close(&p->w);
    if (p->efd >= 0)
        close(p->efd);
    free(p);
    return status;
}

int persister_load(struct persister *p, persister_load_fn fn, void *arg)
{
    if (p == NULL || fn == NULL)
        return HKV_EINVAL;
    pthread_mutex_lock(&p->mu);
    int started = p->started || p->stopping;
    pthread_mutex_unlock(&p->mu);
    if (started)
        return HKV_EINVAL;
    /* Make what this run recovers durable before anyone reads it: a commit
     * whose fsync failed may have left frames in the WAL that this open
     * replays but that are not on stable storage, and a later run could
     * recover without them (a write seen, then gone).  The checkpoint syncs
     * the WAL and the database; if it cannot, this run must not serve. */
    int ck = pdb_checkpoint(&p->w);
    if (ck != SQLITE_OK && ck != SQLITE_BUSY && ck != SQLITE_LOCKED)
        return HKV_EIO;
    return pdb_scan(&p->w, fn, arg);
}

int persister_flush_floor(struct persister *p, hkv_stamp *floor)
{
    pthread_mutex_lock(&p->mu);
    int started = p->started || p->stopping;
    pthread_mutex_unlock(&p->mu);
    if (started)
        return HKV_EINVAL;
    return pdb_status(pdb_flush_floor(&p->w, floor));
}

int persister_own_load(struct persister *p, uint8_t pool, struct persist_own **out)
{
    pthread_mutex_lock(&p->mu);
    int started = p->started || p->stopping;
    pthread_mutex_unlock(&p->mu);
    if (started)
        return HKV_EINVAL;
    return pdb_status(pdb_own_load(&p->w, pool, out));
}

int persister_start(struct persister *p)
{
    int rc;
    pthread_mutex_lock(&p->mu);
    if (p->started || p->stopping) {
        pthread_mutex_unlock(&p->mu);
        return HKV_EINVAL;
    }
    p->started = 1;
    pthread_mutex_unlock(&p->mu);

    /* signals are the owner loop's: both threads start with every one blocked */
    rc = bgw_spawn(&p->wthr, writer_main, p);
    if (rc == 0 && (rc = bgw_spawn(&p->rthr, persister_reader_main, p)) != 0) {
        pthread_mutex_lock(&p->mu);
        p->stopping = 1;
        pthread_cond_broadcast(&p->wcond);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->wthr, NULL);
    }
    if (rc != 0) {
        pthread_mutex_lock(&p->mu);
        p->stopping = p->stopped = 1;
        pthread_mutex_unlock(&p->mu);
        return HKV_ENOMEM;
    }
    return HKV_OK;
}

int persister_submit(struct persister *p, struct persist_batch *b)
{
    if (p == NULL || b == NULL)
        return HKV_EINVAL;
    pthread_mutex_lock(&p->mu);
    if (p->stopping) {
        pthread_mutex_unlock(&p->mu);
        return HKV_EINVAL;
    }
    b->next = NULL;
    if (p->q_tail != NULL) {
        p->q_tail->next = b;
    } else {
        p->q_head = b;
        p->q_since_ms = persister_mono_ms();
    }
    p->q_tail = b;
    p->q_batches++;
    p->q_rows += b->n;
    pthread_cond_signal(&p->wcond);
    pthread_mutex_unlock(&p->mu);
    return HKV_OK;
}

int persister_notify_fd(const struct persister *p)
{
    return p->efd;
}

struct persist_batch *persister_take_done(struct persister *p)
{
    pthread_mutex_lock(&p->mu);
    struct persist_batch *list = p->d_head;
    p->d_head = p->d_tail = NULL;
    pthread_mutex_unlock(&p->mu);
    return list;
}

int persister_purge_tombstones(struct persister *p, hkv_stamp horizon)
{
    pthread_mutex_lock(&p->mu);
    p->purge_requested = 1;
    p->purge_horizon = horizon;
    pthread_cond_signal(&p->wcond);
    pthread_mutex_unlock(&p->mu);
    return HKV_OK;
}

void persister_stats(struct persister *p, struct persister_stats *st)
{
    pthread_mutex_lock(&p->mu);
    *st = p->st;
    int64_t now = persister_mono_ms(), oldest = 0;
    st->queued_batches = p->q_batches;
    st->queued_rows = p->q_rows;
    st->inflight_batches = p->inflight;
    st->reads_queued = p->rq_n;
    if (p->inflight > 0)
        oldest = p->inflight_since_ms;
    else if (p->q_head != NULL)
        oldest = p->q_since_ms;
    st->backlog_age_ms = oldest ? now - oldest : 0;
    pthread_mutex_unlock(&p->mu);
}

int persister_stop(struct persister *p)
{
    if (p == NULL)
        return HKV_EINVAL;
    pthread_mutex_lock(&p->mu);
    int started = p->started, stopped = p->stopped;
    if (!started && !stopped && p->q_head == NULL && p->rq_head == NULL &&
        p->jq[0][0] == NULL && p->jq[1][0] == NULL) {
        p->stopping = p->stopped = 1; /* nothing to drain: no threads needed */
        stopped = 1;
    }
    pthread_mutex_unlock(&p->mu);
    if (!stopped && !started) {
        int rc = persister_start(p);
        if (rc != HKV_OK)
            return rc;
    }
    pthread_mutex_lock(&p->mu);
    if (p->stopped) {
        int sticky = p->st.sticky_error;
        pthread_mutex_unlock(&p->mu);
        return sticky;
    }
    p->stopping = 1;
    pthread_cond_broadcast(&p->wcond);
    pthread_cond_broadcast(&p->rcond);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->wthr, NULL);
    pthread_join(p->rthr, NULL);
    pthread_mutex_lock(&p->mu);
    p->stopped = 1;
    int sticky = p->st.sticky_error;
    pthread_mutex_unlock(&p->mu);
    return sticky;
}

void persister_destroy(struct persister **pp)
{
    if (pp == NULL || *pp == NULL)
        return;
    struct persister *p = *pp;
    persister_stop(p);
    for (struct persist_batch *b = p->d_head, *n; b != NULL; b = n) {
        n = b->next;
        persist_batch_free(&b);
    }
    for (struct persist_batch *b = p->q_head, *n; b != NULL; b = n) { /* only if start failed */
        n = b->next;
        persist_batch_free(&b);
    }
    persister_reads_free(p);
    persister_jobs_cancel(p);
    pdb_close(&p->r);
    pdb_close(&p->w); /* last connection: checkpoints and removes the WAL */
    close(p->efd);
    pthread_cond_destroy(&p->rcond);
    pthread_cond_destroy(&p->wcond);
    pthread_mutex_destroy(&p->mu);
    free(p);
    *pp = NULL;
}

void persister_set_interval(struct persister *p, uint32_t interval_ms)
{
    atomic_store_explicit(&p->interval_ms, interval_ms ? interval_ms : DEFAULT_INTERVAL_MS,
                          memory_order_relaxed);
}
