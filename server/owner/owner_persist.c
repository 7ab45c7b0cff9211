/*
 * owner_persist.c - the write-behind glue between the owner's loop, its
 * ledger and its persister thread.
 *
 * Ledger-class keys: every persist-interval the dirty ones (latest version of
 * each, never every write) go to the persister in one batch; while a batch is
 * in flight no other is cut, so a stalled disk grows the backlog by keys, not
 * by writes, and never delays an acknowledgment.
 *
 * Durable-class keys: the write is applied to the ledger and its reply is
 * held in a commit ticket (owner_int.h) that names every durable key the
 * write changed.  A zero-delay event cuts a durable batch (synchronous
 * =FULL) at the end of the loop iteration; while one is in flight, new
 * durable writes accumulate and share the next commit (group commit).  A
 * ticket is released only when *durable* batches have committed each of its
 * keys at its version or newer (a batch is capped, so a multi-key DEL may
 * need two), which is why the interval batches never take durable keys.
 *
 * A durable write is seen by nobody before its commit: its push to the
 * colos goes out when its ticket is done, and a read of the key while it is
 * dirty waits (owner_park_commit) for the next durable commit.  So a value
 * a reader saw can never vanish in a crash, and a write answered "outcome
 * unknown" is either seen after its commit or never.
 *
 * Which keys are durable is decided when they are written and stored with
 * them (the ledger's class tag: OWNER_TAG_DURABLE), never looked up again in
 * the live config: a reload that reorders or changes classes cannot make a
 * dirty key's persistence path change under it.
 *
 * A parked request (a key on disk only, a read of an uncommitted durable
 * key: owner_diskwait.c) is kept as its frame and run again, when its wait is over, through
 * the replay callback given to owner_persist_setup (the request executor):
 * this layer holds requests without knowing what they mean, and never calls
 * up into the executor.
 *
 * FLUSHALL: the ledger drops every key at once (ledger_flush) and a durable
 * batch carrying only the flush's floor (flush_below) makes it durable: the
 * persister deletes every older row and records the floor in the file, in
 * one transaction, after every batch submitted before it (so a row cut
 * before the flush cannot land after it).  Until that commit, a row older
 * than the floor that the reader brings back is a deleted key (the ledger's
 * flush floor); a failed flush batch is submitted again at the persist tick
 * until one commits; recovery reads the recorded floor back, so versions
 * issued after a restart stay newer than the flush.
 *
 * A failed fsync cannot be retried safely (the kernel may have dropped the
 * dirty pages), so on HKV_EIO nothing in the batch is acknowledged and the
 * owner exits: the master restarts it and it recovers from the file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/core/log.h"
#include "server/owner/owner.h"
#include "server/owner/owner_int.h"
#include "server/owner/owner_cut.h"
#include "server/owner/owner_notify.h"
#include "server/owner/owner_move_int.h"
#include "server/core/topo.h"

#define SWEEP_MS 100
#define RECOVERY_FLOOR_MARGIN_MS 10000
#define SWEEP_BUDGET 1024
#define DURABLE_TICK_MS 50

static int64_t mono_ms(void)
{
    return (int64_t)owner_clock().mono_ms;
}

static void submit(struct owner *o, int durable)
{
    static int short_logged; /* one line per run of failures, not one per tick */
    int st;
    struct persist_batch *b = owner_cut_batch(o->ledger, durable, o->opts.persist_batch_max,
                                              durable ? NULL : owner_ledger_class, o, &st);
    if (b == NULL && st != HKV_OK) {
        if (durable)
            o->durable_orphans = 1; /* the persist tick cuts it again */
        if (!short_logged)
            log_warning("persist: out of memory cutting a batch; its keys stay dirty and are "
                        "retried every persist-interval");
        short_logged = 1;
        return;
    }
    if (b == NULL)
        return;
    short_logged = 0;
    b->id = ++o->next_batch_id;
    if (persister_submit(o->persister, b) != HKV_OK) {
        b->status = HKV_EIO;
        ledger_batch_done(o->ledger, b);
        persist_batch_free(&b);
        return;
    }
    if (durable)
        o->durable_inflight++;
    else
        o->ledger_inflight++;
}

/* Submits the pending flush floor in a durable batch of its own. */
static void submit_flush(struct owner *o)
{
    struct persist_batch *b = persist_batch_new(1);
    if (b == NULL)
        return; /* o->flush_pending stays: the tick tries again */
    b->flush_below = o->flush_pending;
    b->id = ++o->next_batch_id;
    if (persister_submit(o->persister, b) != HKV_OK) {
        persist_batch_free(&b);
        return;
    }
    o->durable_inflight++;
    o->flush_inflight++;
}

void owner_persist_flush(struct owner *o, hkv_stamp floor)
{
    if (floor > o->flush_pending)
        o->flush_pending = floor;
    submit_flush(o);
}

static void on_persist_tick(evutil_socket_t fd, short what, void *arg)
{
    struct owner *o = arg;
    if (o->flush_pending != 0 && o->flush_inflight == 0)
        submit_flush(o); /* the last one failed */
    if (o->ledger_inflight == 0)
        submit(o, 0);
    /* Durable keys whose waiter gave up (timeout, failed commit) are still
     * dirty, and interval batches never take durable keys: commit them here,
     * at the interval's pace, so a failing disk is not retried in a loop. */
    if (o->durable_orphans && o->durable_inflight == 0) {
        o->durable_orphans = 0;
        submit(o, 1);
    }
}

static void submit_flush(struct owner *o);

static void on_flush_now(evutil_socket_t fd, short what, void *arg)
{
    struct owner *o = arg;
    if (o->flush_pending != 0 && o->flush_inflight == 0)
        submit_flush(o); /* a FLUSHALL's ticket waits for it, not for keys */
    else if ((o->tickets != NULL || o->commit_parked != NULL) && o->durable_inflight == 0)
        submit(o, 1);
}

static void on_notify(evutil_socket_t fd, short what, void *arg)
{
    struct owner *o = arg;
    uint64_t v;
    ssize_t n = read(fd, &v, sizeof(v));
    (void)n;
    struct persist_batch *b = persister_take_done(o->persister);
    int fatal = 0, durable_done = 0, durable_ok = 1;
    while (b != NULL) {
        struct persist_batch *next = b->next;
        if (b->id & OWNER_BATCH_MOVE) {
            /* a leaf's rows received from another owner (owner_recv.c);
             * a follow's fence took the ledger's dirty keys */
            if (b->id & OWNER_BATCH_DIRTY)
                ledger_batch_done(o->ledger, b);
            owner_recv_batch_done(o, b);
            fatal |= b->status == HKV_EIO;
            persist_batch_free(&b);
            b = next;
            continue;
        }
        ledger_batch_done(o->ledger, b);
        if (b->own != NULL)
            owner_own_saved(o, b->own, b->status); /* an ownership table, no rows */
        if (b->flush_below != 0) {
            o->flush_inflight--;
            if (b->status == HKV_OK && b->flush_below >= o->flush_pending)
                o->flush_pending = 0;
        }
        if (b->durable) {
            o->durable_inflight--;
            durable_done = 1;
            durable_ok &= b->status == HKV_OK;
            owner_tickets_settle(o, b);
            if (b->status != HKV_OK)
                o->durable_orphans = 1; /* its keys stay dirty: retried by the tick */
        } else if (b->own == NULL) {
            o->ledger_inflight--;
        }
        if (b->status == HKV_EIO)
            fatal = 1;
        else if (b->status != HKV_OK)
            log_warning("persist: batch of %zu rows failed: %s", b->n, hkv_strstatus(b->status));
        persist_batch_free(&b);
        b = next;
    }
    owner_diskwait_take_reads(o);
    persister_jobs_done(o->persister); /* their done callbacks: SCAN pages, a move's pages, purges */
    if (fatal) {
        log_warning("persist: I/O error on commit (fsync cannot be retried safely); exiting so "
                    "the master restarts this owner from its file");
        exit(70);
    }
    if (durable_done && durable_ok)
        owner_diskwait_commit_done(o);
    else if (durable_done)
        o->durable_orphans = 1; /* a failing disk: retried at the tick's pace */
    if (o->tickets != NULL && o->durable_inflight == 0)
        event_active(o->flush_now, EV_TIMEOUT, 0);
}

static void on_durable_tick(evutil_socket_t fd, short what, void *arg)
{
    owner_tickets_expire(arg);
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    struct owner *o = arg;
    ledger_sweep(o->ledger, owner_clock(), SWEEP_BUDGET);
}


int owner_backlog_full(struct owner *o)
{
    size_t keys, bytes;
    ledger_dirty(o->ledger, &keys, &bytes);
    return o->opts.persist_max_dirty > 0 && bytes > (size_t)o->opts.persist_max_dirty;
}

/* The ledger's expiry hook: "expired" for the keys this owner serves (a
 * follower's copy expires too; its primary tells). */
static void on_expired(void *arg, const char *key, size_t klen)
{
    struct owner *o = arg;
    if (o->opts.notify == 0 || ofollow_follows(o, router_place(key, klen)))
        return;
    owner_notify_expired(o, key, klen);
    owner_pushq_kick(o);
}

static int load_row(void *arg, const struct persist_row *row)
{
    struct owner *o = arg;
    int rc = ledger_load(o->ledger, row, owner_clock());
    return rc == HKV_ENOMEM ? HKV_ENOMEM : HKV_OK;
}

/* A schema migration of the file (storage/persister.h), before the owner
 * serves: for a large file a line as it starts, one a second while it
 * fills and one as the index is made; one at the end for any file. */
static void on_migrate(void *arg, const struct persist_migration *m)
{
    int64_t *last_ms = arg; /* -1 before the first line */
    int large = m->rows_total >= 10000;
    if (m->phase != PERSIST_MIG_DONE &&
        (!large || (m->phase == PERSIST_MIG_FILL && *last_ms >= 0 &&
                    m->elapsed_ms - *last_ms < 1000)))
        return;
    *last_ms = m->elapsed_ms;
    uint64_t run = m->rows_done - m->rows_resumed;
    log_notice("schema migration %u -> 2: %s, %llu of %llu rows (%llu by an earlier, interrupted "
               "run), %lld ms, %.0f rows/s",
               m->from_version,
               m->phase == PERSIST_MIG_FILL ? "positions" : m->phase == PERSIST_MIG_INDEX
                                                                ? "making the index" : "done",
               (unsigned long long)m->rows_done, (unsigned long long)m->rows_total,
               (unsigned long long)m->rows_resumed, (long long)m->elapsed_ms,
               m->elapsed_ms > 0 ? (double)run * 1000.0 / (double)m->elapsed_ms : 0.0);
}

static struct event *timer(struct owner *o, int64_t ms, event_callback_fn fn)
{
    struct event *ev = event_new(o->base, -1, EV_PERSIST, fn, o);
    if (ev != NULL) {
        struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
        event_add(ev, &tv);
    }
    return ev;
}

int owner_persist_setup(struct owner *o, owner_request_fn run_again)
{
    o->replay = run_again;
    const struct owner_opts *opts = &o->opts;
    const char *path = opts->db_path;
    char why[512] = "";
    struct ledger_options lo = {.maxmemory = opts->owner_maxmemory,
                                .tombstone_ttl_ms = opts->tombstone_ttl_ms,
                                .writer = owner_own_writer(o)};
    if (ledger_create(&lo, &o->ledger) != HKV_OK) {
        log_warning("cannot create the ledger");
        return -1;
    }
    ledger_on_expired(o->ledger, on_expired, o);
    int64_t mig_ms = -1;
    struct persister_options po = {.interval_ms = (uint32_t)opts->persist_interval_ms,
                                   .tomb_keep_ms = (uint32_t)opts->tombstone_ttl_ms,
                                   .migrate_progress = on_migrate, .migrate_arg = &mig_ms};
    int rc = persister_create(&o->persister, path, &po, why, sizeof(why));
    if (rc != HKV_OK) {
        log_warning("refusing to start on %s: %s (the file is left untouched)", path,
                    why[0] ? why : hkv_strstatus(rc));
        return -1;
    }
    hkv_stamp flushed = 0;
    rc = persister_flush_floor(o->persister, &flushed);
    if (rc != HKV_OK) {
        log_warning("cannot read the FLUSHALL floor of %s: %s", path, hkv_strstatus(rc));
        return -1;
    }
    if (flushed != 0) /* before the rows: versions from now on order after the flush */
        ledger_set_flush_floor(o->ledger, flushed);
    int64_t t0 = mono_ms();
    rc = persister_load(o->persister, load_row, o);
    if (rc != HKV_OK) {
        log_warning("recovery from %s failed: %s", path, hkv_strstatus(rc));
        return -1;
    }
    /* Answers of this run order after anything an earlier run acknowledged
     * from memory and lost (ledger.h ledger_set_floor).  The margin covers a
     * wall clock that stepped back across the restart by less than it. */
    ledger_set_floor(o->ledger, owner_clock(), RECOVERY_FLOOR_MARGIN_MS);
    ledger_mark_complete(o->ledger);
    if (owner_own_load(o) != 0) /* a cluster's ownership table, before the threads */
        return -1;
    struct ledger_stats ls;
    ledger_stats(o->ledger, &ls);
    log_notice("recovered %llu keys (%llu tombstones) from %s in %lld ms%s",
               (unsigned long long)ls.keys, (unsigned long long)ls.tombstones, path,
               (long long)(mono_ms() - t0), ls.complete ? "" : "; some stay on disk only");
    if (persister_start(o->persister) != HKV_OK) {
        log_warning("cannot start the persister threads");
        return -1;
    }
    o->notify = event_new(o->base, persister_notify_fd(o->persister), EV_READ | EV_PERSIST,
                          on_notify, o);
    o->flush_now = event_new(o->base, -1, 0, on_flush_now, o);
    o->persist_tick = timer(o, opts->persist_interval_ms, on_persist_tick);
    o->sweep_tick = timer(o, SWEEP_MS, on_sweep);
    o->durable_tick = timer(o, DURABLE_TICK_MS, on_durable_tick);
    if (o->notify == NULL || o->flush_now == NULL || o->persist_tick == NULL ||
        o->sweep_tick == NULL || o->durable_tick == NULL)
        return -1;
    event_add(o->notify, NULL);
    return 0;
}

void owner_persist_reload(struct owner *o, const struct owner_opts *next)
{
    /* o->opts are still the old options here: the interval the tick runs
     * at.  Re-arming restarts the period, so only a change re-arms it (a
     * stream of unrelated reloads must not postpone the tick forever). */
    int64_t ms = next->persist_interval_ms;
    if (ms == o->opts.persist_interval_ms || o->persist_tick == NULL)
        return;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_add(o->persist_tick, &tv);
    persister_set_interval(o->persister, (uint32_t)ms);
    log_notice("persist-interval is now %lld ms", (long long)ms);
}

void owner_persist_flush_all(struct owner *o)
{
    if (o->persister == NULL)
        return;
    int64_t t0 = mono_ms();
    size_t keys, bytes;
    ledger_dirty(o->ledger, &keys, &bytes);
    /* Everything dirty, in one durable batch: the persister commits what is
     * queued before it stops. */
    struct persist_batch *b = persist_batch_new(1);
    if (b != NULL) {
        b->flush_below = o->flush_pending; /* a FLUSHALL not committed yet goes first */
        ledger_collect_dirty(o->ledger, b, SIZE_MAX, NULL, NULL);
        if (persister_submit(o->persister, b) != HKV_OK)
            persist_batch_free(&b);
    }
    int rc = persister_stop(o->persister);
    on_notify(persister_notify_fd(o->persister), EV_READ, o);
    log_notice("flushed %zu dirty keys in %lld ms%s", keys, (long long)(mono_ms() - t0),
               rc == HKV_OK ? "" : " (with errors)");
}

void owner_persist_teardown(struct owner *o)
{
    struct event **evs[] = {&o->notify, &o->flush_now, &o->persist_tick, &o->sweep_tick,
                            &o->durable_tick};
    for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
        if (*evs[i] != NULL) {
            event_free(*evs[i]);
            *evs[i] = NULL;
        }
    owner_tickets_free(o);
    owner_diskwait_free(o);
    persister_destroy(&o->persister);
    ledger_destroy(&o->ledger);
}
