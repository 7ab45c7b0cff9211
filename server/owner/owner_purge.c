/*
 * owner_purge.c - dropping every row of a leaf: a target's leftovers before
 * it receives the leaf (else a deleted key whose tombstone the source has
 * already purged would come back, CLUSTER.md §5 step 2), a target's copy
 * when the move aborts, a source's copy once the move committed.
 *
 * Two steps, neither blocking the loop: the ledger's entries of the leaf
 * (ledger_walk, dirty ones too: they must never be written back),
 * OPURGE_BUCKETS buckets per loop turn (a zero timeout, not event_active:
 * that runs again before the loop polls); then the SQLite rows, by the
 * position index (storage/persist_leaf.h), OPURGE_ROWS rows per job on the
 * persister's writer thread, each job submitted when the one before is
 * done.  The ledger goes first: once it holds nothing of the leaf, no batch
 * cut later can carry a row of it, and batches submitted before run before
 * the writer's next job, so when the last job is done the file holds
 * nothing of the leaf.  The caller hears of it once (done).
 *
 * A source that gave a leaf away keeps the leaf's dirty entries (keep_dirty):
 * their commits are what its clients' durable acknowledgments wait for; the
 * rows they leave behind are leftovers a later target purges anyway.
 */
#include <stdlib.h>

#include "proto/place.h"
#include "server/core/router.h"
#include "server/owner/owner_move_int.h"
#include "storage/persist_leaf.h"

#define OPURGE_BUCKETS 4096
#define OPURGE_ROWS 20000

struct ptask {
    struct persister_job job;   /* first: the job's pointer is the task's */
    struct owner *o;
    uint32_t start;
    uint8_t bits;
    uint64_t cursor;
    int walking, orphan;
    int keep_dirty;             /* a source's clean-up: its unpersisted writes stay */
    uint64_t deleted, entries;
    opurge_done_fn done;
    void *arg;
    struct event *step;
    struct ptask *next;
};

struct opurge {
    struct ptask *tasks;
};

static void unlink_task(struct owner *o, struct ptask *t)
{
    for (struct ptask **pp = &o->purge->tasks; *pp != NULL; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            return;
        }
}

static void finish(struct ptask *t, int status)
{
    struct owner *o = t->o;
    unlink_task(o, t);
    event_free(t->step);
    opurge_done_fn done = t->done;
    void *arg = t->arg;
    uint64_t rows = t->deleted, entries = t->entries;
    free(t);
    if (done != NULL)
        done(o, arg, status, entries, rows);
}

static int job_run(struct persister_job *j, struct pdb *db)
{
    struct ptask *t = (struct ptask *)j;
    uint32_t prefix = t->bits ? t->start >> (32 - t->bits) : 0;
    uint64_t n = 0;
    int more = 0;
    int rc = persist_leaf_delete(db, place_leaf_start(t->bits, prefix),
                                 place_leaf_end(t->bits, prefix), OPURGE_ROWS, &n, &more);
    t->deleted += n;
    t->walking = more; /* reused: 1 = another job is needed */
    return rc;
}

static void job_done(struct persister_job *j)
{
    struct ptask *t = (struct ptask *)j;
    if (t->orphan || j->status == HKV_EINVAL) {
        if (!t->orphan)
            finish(t, HKV_EINVAL);
        else
            free(t);
        return;
    }
    if (j->status != HKV_OK) {
        finish(t, j->status);
        return;
    }
    if (t->walking && persister_job_submit(t->o->persister, &t->job) == HKV_OK)
        return;
    finish(t, HKV_OK);
}

static int in_leaf(void *arg, const struct ledger_item *it)
{
    struct ptask *t = arg;
    uint64_t place = router_place(it->key, it->klen);
    if ((uint64_t)(uint32_t)(place >> 32) - t->start >= (1ULL << (32 - t->bits)) ||
        (t->keep_dirty && it->dirty))
        return LEDGER_WALK_KEEP;
    t->entries++;
    return LEDGER_WALK_DROP;
}

static void on_step(evutil_socket_t fd, short what, void *arg)
{
    struct ptask *t = arg;
    t->cursor = ledger_walk(t->o->ledger, t->cursor, OPURGE_BUCKETS, in_leaf, t);
    if (t->cursor != 0) {
        /* The next slice after the loop has polled its sockets: an event
         * re-activated from its own callback runs again in the same pass,
         * and the whole leaf went before any request was read or answered. */
        static const struct timeval next_turn = {0, 0};
        event_add(t->step, &next_turn);
        return;
    }
    t->walking = 0;
    t->job = (struct persister_job){.run = job_run, .done = job_done, .writer = 1};
    if (persister_job_submit(t->o->persister, &t->job) != HKV_OK)
        finish(t, HKV_EINVAL);
}

int owner_purge_leaf(struct owner *o, uint32_t start, uint8_t bits, int keep_dirty,
                     opurge_done_fn done, void *arg)
{
    if (o->purge == NULL) {
        o->purge = calloc(1, sizeof(*o->purge));
        if (o->purge == NULL)
            return -1;
    }
    struct ptask *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return -1;
    t->o = o;
    t->start = start;
    t->bits = bits;
    t->done = done;
    t->arg = arg;
    t->keep_dirty = keep_dirty;
    t->walking = 1;
    t->step = event_new(o->base, -1, 0, on_step, t);
    if (t->step == NULL) {
        free(t);
        return -1;
    }
    t->next = o->purge->tasks;
    o->purge->tasks = t;
    event_active(t->step, EV_TIMEOUT, 0);
    return 0;
}

void owner_purge_cancel(struct owner *o, void *arg)
{
    for (struct ptask *t = o->purge != NULL ? o->purge->tasks : NULL; t != NULL; t = t->next)
        if (t->arg == arg)
            t->done = NULL; /* it runs to its end; nobody is told */
}

void owner_purge_teardown(struct owner *o)
{
    if (o->purge == NULL)
        return;
    while (o->purge->tasks != NULL) {
        struct ptask *t = o->purge->tasks;
        o->purge->tasks = t->next;
        event_free(t->step);
        if (t->walking && t->job.run == NULL)
            free(t); /* still in the ledger step: no job out */
        else
            t->orphan = 1; /* a job is out: its done frees the task */
    }
    free(o->purge);
    o->purge = NULL;
}
