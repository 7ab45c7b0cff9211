/*
 * persister_read.c - the persister's reader thread: point lookups of keys
 * the ledger does not hold, and reader jobs (persister_job.c), over a
 * read-only connection that sees committed rows only.
 *
 * The thread takes the whole queue of lookups at once, answers them
 * unlocked and appends them to the answered list before bumping the notify
 * fd, so the loop learns about a batch of answers from one wake-up.  Jobs
 * run after the lookups of the same wake-up: a lookup is what a client
 * waits for, a job (a page of a SCAN, of a hand-off) is bounded work that
 * can wait one lookup batch.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "storage/persist_db.h"
#include "storage/persister_int.h"

static void serve_read(struct persister *p, struct persister_read *q)
{
    struct persist_row row;
    int rc = pdb_get(&p->r, q->key, q->klen, &row);
    if (rc == SQLITE_ROW) {
        q->status = HKV_OK;
        q->stamp = row.stamp;
        q->expire_at_ms = row.expire_at_ms;
        q->class_id = row.class_id;
        q->tombstone = row.tombstone;
        if (!row.tombstone) {
            q->val = malloc(row.vlen ? row.vlen : 1);
            if (q->val == NULL) {
                q->status = HKV_ENOMEM;
            } else {
                memcpy(q->val, row.val, row.vlen);
                q->vlen = row.vlen;
            }
        }
    } else if (rc == SQLITE_DONE) {
        q->status = HKV_ENOENT;
    } else {
        q->status = pdb_status(rc);
    }
    pdb_get_done(&p->r);
}

void *persister_reader_main(void *arg)
{
    struct persister *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->rq_head != NULL) {
            struct persister_read *list = p->rq_head, *last = NULL;
            p->rq_head = p->rq_tail = NULL;
            p->rq_n = 0;
            pthread_mutex_unlock(&p->mu);
            uint64_t n = 0, found = 0, errs = 0;
            for (struct persister_read *q = list; q != NULL; q = q->next) {
                serve_read(p, q);
                n++;
                found += q->status == HKV_OK;
                errs += q->status != HKV_OK && q->status != HKV_ENOENT;
                last = q;
            }
            pthread_mutex_lock(&p->mu);
            if (p->rd_tail != NULL)
                p->rd_tail->next = list;
            else
                p->rd_head = list;
            p->rd_tail = last;
            p->st.reads += n;
            p->st.reads_found += found;
            p->st.read_errors += errs;
            pthread_mutex_unlock(&p->mu);
            persister_notify(p);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        if (p->jq[0][0] != NULL) {
            persister_jobs_run(p, 0);
            continue;
        }
        if (p->stopping)
            break;
        pthread_cond_wait(&p->rcond, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int persister_read_async(struct persister *p, const void *key, size_t klen, void *cookie)
{
    if (p == NULL || (key == NULL && klen > 0))
        return HKV_EINVAL;
    struct persister_read *q = calloc(1, sizeof(*q));
    if (q == NULL)
        return HKV_ENOMEM;
    q->key = malloc(klen ? klen : 1);
    if (q->key == NULL) {
        free(q);
        return HKV_ENOMEM;
    }
    if (klen)
        memcpy(q->key, key, klen);
    q->klen = klen;
    q->cookie = cookie;
    pthread_mutex_lock(&p->mu);
    if (p->stopping) {
        pthread_mutex_unlock(&p->mu);
        persister_read_free(&q);
        return HKV_EINVAL;
    }
    if (p->rq_tail != NULL)
        p->rq_tail->next = q;
    else
        p->rq_head = q;
    p->rq_tail = q;
    p->rq_n++;
    pthread_cond_signal(&p->rcond);
    pthread_mutex_unlock(&p->mu);
    return HKV_OK;
}

struct persister_read *persister_take_reads(struct persister *p)
{
    pthread_mutex_lock(&p->mu);
    struct persister_read *list = p->rd_head;
    p->rd_head = p->rd_tail = NULL;
    pthread_mutex_unlock(&p->mu);
    return list;
}

void persister_read_free(struct persister_read **r)
{
    if (r == NULL || *r == NULL)
        return;
    free((*r)->key);
    free((*r)->val);
    free(*r);
    *r = NULL;
}

void persister_reads_free(struct persister *p)
{
    for (struct persister_read *r = p->rd_head, *n; r != NULL; r = n) {
        n = r->next;
        persister_read_free(&r);
    }
    for (struct persister_read *r = p->rq_head, *n; r != NULL; r = n) {
        n = r->next;
        persister_read_free(&r);
    }
    p->rd_head = p->rd_tail = p->rq_head = p->rq_tail = NULL;
}
