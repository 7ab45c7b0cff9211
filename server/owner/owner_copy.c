/*
 * owner_copy.c - the source's stream of a leaf to its target while it keeps
 * serving it (CLUSTER.md §5 step 3; owner_move_int.h).
 *
 * Three things travel on the hand-off link, each frame with the next
 * hand-off sequence number, taken when the frame's content is taken:
 *   - the leaf's ledger entries (ledger_walk, OCOPY_BUCKETS buckets a loop
 *     turn, tombstones included), then
 *   - its SQLite rows (storage/persist_leaf.h, OCOPY_PAGE rows a job on the
 *     persister's reader thread, by the position index), as HANDOFF_ROW,
 *     except the rows of keys resident in the ledger when the page reaches
 *     the loop (see below);
 *   - the result of every write applied to a key of the leaf from the
 *     moment the copy starts (owner_copy_applied, called where the write is
 *     applied, so its number is taken then), and of every row a read
 *     brought back from the file into the ledger meanwhile (the same call
 *     from the fill), as HANDOFF_WRITE;
 * and at the fence every completion record (HANDOFF_RECORD), then
 * HANDOFF_FENCE with the last number.  The target keeps, per key, the
 * higher version, so order and duplicates do not matter; what matters is
 * that nothing is missed:
 *   - the ledger is walked before the file is read: a key the walk did not
 *     meet was not resident for the whole walk, and an entry leaves the
 *     ledger only clean (persisted), so the file holds it by the time the
 *     pages are read (or a write put it back, and that write travels);
 *   - a key written after the copy started travels as the write's result;
 *   - a file row is skipped only for a key resident when its page is
 *     handled: such a key was resident for the whole walk (so the walk sent
 *     it, at a version no older than the file's), or it came back into the
 *     ledger after the copy started, by a write or a fill, and both travel.
 *     Without the skip every resident row went twice (ledger, then file),
 *     the second a stale upsert at the target.  A complete ledger
 *     (storage/ledger.h: nothing evicted since recovery) holds every key,
 *     so its file is not read at all: a 1 GiB leaf's pages took 8 s of a
 *     31 s move to read and skip.
 * The copy never blocks the loop: it pauses while the link's backlog is over
 * OHLINK_HIGH_WATER and goes on from owner_copy_drained.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/place.h"
#include "server/core/clock.h"
#include "server/core/router.h"
#include "server/owner/owner_move_int.h"
#include "storage/persist_leaf.h"

#define OCOPY_BUCKETS 512           /* ledger buckets walked per loop turn */
#define OCOPY_FRAME_ROWS 512        /* rows per HANDOFF_ROW frame */
#define OCOPY_FRAME_BYTES (256u << 10)
#define OCOPY_PAGE 2000             /* SQLite rows per reader job */

enum cphase { C_WALK, C_DISK, C_DONE, C_STOPPED };

struct cjob {
    struct persister_job job;       /* first: the job's pointer is this */
    struct ocopy *c;                /* NULL: the copy stopped, the done frees it */
    uint64_t start, end;            /* positions */
    struct persist_leaf_cursor cur;
    struct persist_batch *rows;     /* this page's rows, copied on the reader thread */
};

struct ocopy {
    struct owner *o;
    struct hlink *h;
    struct hand_leaf leaf;
    int64_t e1;
    enum cphase phase;
    uint64_t seq;                   /* the last number taken */
    uint64_t committed;             /* the target's last HANDOFF_PROGRESS */
    uint64_t cursor;                /* the ledger walk's */
    struct persist_batch *frame;    /* rows waiting for a frame */
    size_t frame_bytes;
    int oom;                        /* a row could not be copied: the copy fails */
    struct cjob *job;               /* the reader job out (or to submit) */
    int job_out, paused;
    struct event *step;
    ocopy_done_fn done;
    void *arg;
    struct ocopy_stats st;
};

static int in_leaf(const struct ocopy *c, const char *key, size_t klen)
{
    uint64_t place = router_place(key, klen);
    return (uint64_t)(uint32_t)(place >> 32) - c->leaf.start < (1ULL << (32 - c->leaf.bits));
}

/* Sends the rows of b as one HANDOFF_ROW (b is emptied). */
static int send_rows(struct ocopy *c, struct persist_batch *b)
{
    if (b == NULL || b->n == 0)
        return HKV_OK;
    struct hand_row small[64], *r = b->n <= 64 ? small : calloc(b->n, sizeof(*r));
    if (r == NULL)
        return HKV_ENOMEM;
    for (size_t i = 0; i < b->n; i++) {
        const struct persist_row *x = &b->rows[i];
        r[i] = (struct hand_row){wire_slice(x->key, x->klen), wire_slice(x->val, x->vlen),
                                 x->tombstone != 0, x->stamp, x->expire_at_ms, x->class_id};
        c->st.bytes += x->klen + x->vlen;
    }
    struct hand_msg m = {.type = HANDOFF_ROW, .id = 1, .u.row = {++c->seq, r, (uint32_t)b->n}};
    int rc = owner_hlink_send(c->h, &m);
    c->st.rows += b->n;
    c->st.frames++;
    if (r != small)
        free(r);
    for (size_t i = 0; i < b->n; i++) {
        free(b->rows[i].key);
        free(b->rows[i].val);
    }
    b->n = 0;
    return rc;
}

static int add(struct persist_batch *b, const char *key, size_t klen, const char *val,
               size_t vlen, hkv_stamp stamp, int64_t exp, uint16_t cls, int tomb)
{
    return persist_batch_add(b, key, klen, val, vlen, stamp, exp, cls, tomb);
}

static int walk_fn(void *arg, const struct ledger_item *it)
{
    struct ocopy *c = arg;
    if (in_leaf(c, it->key, it->klen)) {
        c->oom |= add(c->frame, it->key, it->klen, it->val, it->vlen, it->stamp, it->expire_at_ms,
                      it->class_id, it->tomb) != HKV_OK;
        c->frame_bytes += it->klen + it->vlen;
    }
    return LEDGER_WALK_KEEP;
}

static void fail(struct ocopy *c, int status)
{
    c->phase = C_STOPPED;
    c->done(c->o, c->arg, status);
}

/* ---- the file's rows, on the reader thread ---- */

static int page_row(void *arg, const struct persist_row *r, uint64_t pos)
{
    struct cjob *j = arg;
    return add(j->rows, r->key, r->klen, r->val, r->vlen, r->stamp, r->expire_at_ms, r->class_id,
               r->tombstone);
}

static int job_run(struct persister_job *pj, struct pdb *db)
{
    struct cjob *j = (struct cjob *)pj;
    return persist_leaf_page(db, j->start, j->end, &j->cur, OCOPY_PAGE, page_row, j);
}

static void job_free(struct cjob *j)
{
    persist_leaf_cursor_free(&j->cur);
    persist_batch_free(&j->rows);
    free(j);
}

static void next_step(struct ocopy *c);

/* Drops from a page the rows of keys the ledger holds (the header says why
 * they have travelled already). */
static void skip_resident(struct ocopy *c, struct persist_batch *b)
{
    size_t k = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct persist_row *r = &b->rows[i];
        if (ledger_resident(c->o->ledger, r->key, r->klen)) {
            free(r->key);
            free(r->val);
            c->st.skipped++;
            continue;
        }
        b->rows[k++] = *r;
    }
    b->n = k;
}

static void job_done(struct persister_job *pj)
{
    struct cjob *j = (struct cjob *)pj;
    struct ocopy *c = j->c;
    if (c == NULL) {
        job_free(j);
        return;
    }
    c->job_out = 0;
    if (pj->status != HKV_OK) {
        fail(c, pj->status);
        return;
    }
    skip_resident(c, j->rows);
    if (send_rows(c, j->rows) != HKV_OK) {
        fail(c, HKV_EIO);
        return;
    }
    if (j->cur.done) {
        c->phase = C_DONE;
        c->st.ended_ms = clock_mono_ms();
        c->done(c->o, c->arg, HKV_OK);
        return;
    }
    next_step(c);
}

static void submit_page(struct ocopy *c)
{
    struct cjob *j = c->job;
    j->job = (struct persister_job){.run = job_run, .done = job_done, .writer = 0};
    if (persister_job_submit(c->o->persister, &j->job) != HKV_OK) {
        fail(c, HKV_EIO);
        return;
    }
    c->job_out = 1;
}

/* ---- the loop's side ---- */

static void next_step(struct ocopy *c)
{
    if (owner_hlink_backlog(c->h) > OHLINK_HIGH_WATER) {
        c->paused = 1; /* owner_copy_drained goes on */
        return;
    }
    c->paused = 0;
    if (c->phase == C_WALK) {
        /* after the loop polled its sockets (event_active from on_step would
         * run again in the same pass: no request served until the link's
         * backlog filled) */
        static const struct timeval next_turn = {0, 0};
        event_add(c->step, &next_turn);
    }
    else if (c->phase == C_DISK && !c->job_out)
        submit_page(c);
}

static void on_step(evutil_socket_t fd, short what, void *arg)
{
    struct ocopy *c = arg;
    if (c->phase != C_WALK)
        return;
    c->cursor = ledger_walk(c->o->ledger, c->cursor, OCOPY_BUCKETS, walk_fn, c);
    if (c->oom) {
        fail(c, HKV_ENOMEM);
        return;
    }
    if (c->frame->n >= OCOPY_FRAME_ROWS || c->cursor == 0 || c->frame_bytes >= OCOPY_FRAME_BYTES) {
        c->frame_bytes = 0;
        if (send_rows(c, c->frame) != HKV_OK) {
            fail(c, HKV_EIO);
            return;
        }
    }
    if (c->cursor == 0) {
        c->st.walked_ms = clock_mono_ms();
        if (ledger_is_complete(c->o->ledger)) {
            /* every key is resident (nothing evicted since recovery): the
             * file holds no row the loop does not answer from memory
             * (SCAN reads such a ledger alone too), and the walk sent
             * every resident one, so its pages would all be skipped */
            c->phase = C_DONE;
            c->st.ended_ms = c->st.walked_ms;
            c->done(c->o, c->arg, HKV_OK);
            return;
        }
        c->phase = C_DISK;
    }
    next_step(c);
}

struct ocopy *owner_copy_start(struct owner *o, struct hlink *h, struct hand_leaf leaf,
                               int64_t e1, ocopy_done_fn done, void *arg)
{
    struct ocopy *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->o = o;
    c->h = h;
    c->leaf = leaf;
    c->e1 = e1;
    c->done = done;
    c->arg = arg;
    c->frame = persist_batch_new(0);
    c->job = calloc(1, sizeof(*c->job));
    c->step = event_new(o->base, -1, 0, on_step, c);
    if (c->frame == NULL || c->job == NULL || c->step == NULL ||
        (c->job->rows = persist_batch_new(0)) == NULL) {
        owner_copy_stop(&c);
        return NULL;
    }
    uint32_t prefix = leaf.bits ? leaf.start >> (32 - leaf.bits) : 0;
    c->job->c = c;
    c->job->start = place_leaf_start(leaf.bits, prefix);
    c->job->end = place_leaf_end(leaf.bits, prefix);
    c->st.started_ms = clock_mono_ms();
    event_active(c->step, EV_TIMEOUT, 0);
    return c;
}

void owner_copy_drained(struct ocopy *c)
{
    if (c != NULL && c->paused && (c->phase == C_WALK || c->phase == C_DISK))
        next_step(c);
}

void owner_copy_progress(struct ocopy *c, uint64_t seq)
{
    if (c != NULL && seq > c->committed)
        c->committed = seq;
}

int owner_copy_caught_up(const struct ocopy *c)
{
    return c->phase == C_DONE && c->committed + OCOPY_TAIL >= c->seq;
}

void owner_copy_applied(struct ocopy *c, const char *key, size_t klen)
{
    if (c == NULL || c->phase == C_STOPPED || !in_leaf(c, key, klen))
        return;
    struct ledger_view v;
    int rc = ledger_get(c->o->ledger, key, klen, owner_clock(), &v);
    if (rc == HKV_EAGAIN)
        return; /* not resident: cannot be right after a write */
    struct hand_msg m = {.type = HANDOFF_WRITE, .id = 1,
                         .u.write = {++c->seq, {wire_slice(key, klen), wire_slice(v.val, v.vlen),
                                                rc != HKV_OK, v.stamp, v.expire_at_ms,
                                                v.class_id}}};
    c->st.writes++;
    owner_hlink_send(c->h, &m);
}

static void send_record(void *arg, uint32_t writer, uint64_t inc, uint64_t seq,
                        const struct rifl_result *r)
{
    struct ocopy *c = arg;
    if (r == NULL) { /* the writer's lost mark (owner_rifl.h R2) */
        struct hand_msg m = {.type = HANDOFF_RECORD, .id = 1,
                             .u.record = {.seq = ++c->seq, .writer = writer, .inc = inc,
                                          .rseq = seq, .rtype = HAND_RECORD_LOST}};
        owner_hlink_send(c->h, &m);
        return;
    }
    struct hand_msg m = {.type = HANDOFF_RECORD, .id = 1,
                         .u.record = {++c->seq, writer, inc, seq, r->type, r->applied,
                                      r->has_old, r->type == WIRE_RESP, r->value, r->version,
                                      wire_slice(r->old, r->oldlen), wire_slice(r->resp, r->resplen),
                                      r->changes, r->nchanges}};
    c->st.records++;
    owner_hlink_send(c->h, &m);
}

uint64_t owner_copy_seq(const struct ocopy *c)
{
    return c->seq;
}

int owner_copy_walked(const struct ocopy *c)
{
    return c->phase == C_DONE;
}

void owner_copy_record(struct ocopy *c, uint32_t writer, uint64_t inc, uint64_t seq,
                       const struct rifl_result *r)
{
    if (c != NULL && c->phase != C_STOPPED)
        send_record(c, writer, inc, seq, r);
}

void owner_copy_records(struct ocopy *c)
{
    rifl_each(c->o->rifl, send_record, c);
}

uint64_t owner_copy_fence(struct ocopy *c)
{
    rifl_each(c->o->rifl, send_record, c);
    struct hand_msg m = {.type = HANDOFF_FENCE, .id = 1, .u.fence = {c->e1, c->seq}};
    owner_hlink_send(c->h, &m);
    c->phase = C_STOPPED; /* writes are parked from now on: nothing more travels */
    return c->seq;
}

void owner_copy_stats(const struct ocopy *c, struct ocopy_stats *out)
{
    *out = c->st;
}

void owner_copy_stop(struct ocopy **cp)
{
    struct ocopy *c = *cp;
    if (c == NULL)
        return;
    if (c->job != NULL) {
        if (c->job_out)
            c->job->c = NULL; /* its done frees it */
        else
            job_free(c->job);
    }
    if (c->frame != NULL) {
        for (size_t i = 0; i < c->frame->n; i++) {
            free(c->frame->rows[i].key);
            free(c->frame->rows[i].val);
        }
        c->frame->n = 0;
        persist_batch_free(&c->frame);
    }
    if (c->step != NULL)
        event_free(c->step);
    free(c);
    *cp = NULL;
}
