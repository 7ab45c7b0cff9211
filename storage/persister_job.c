/*
 * persister_job.c - jobs: a caller's bounded work on one of the persister's
 * threads, with that thread's connection (persister.h).
 *
 * Each thread has its own queue; a thread that finds jobs waiting takes the
 * whole queue, runs it unlocked and appends the jobs to one done list that
 * the loop takes back through persister_jobs_done, like batches and
 * lookups.  The writer runs its jobs between batch transactions, never in
 * one, so a job's writes are its own transactions and a failed job cannot
 * take a batch down with it; what a job leaves open is rolled back.
 */
#include <stdlib.h>

#include "proto/hkv.h"
#include "storage/persist_db.h"
#include "storage/persister_int.h"

int persister_job_submit(struct persister *p, struct persister_job *j)
{
    if (p == NULL || j == NULL || j->run == NULL || j->done == NULL)
        return HKV_EINVAL;
    int w = j->writer ? 1 : 0;
    pthread_mutex_lock(&p->mu);
    if (p->stopping) {
        pthread_mutex_unlock(&p->mu);
        return HKV_EINVAL;
    }
    j->next = NULL;
    j->status = HKV_OK;
    if (p->jq[w][1] != NULL)
        p->jq[w][1]->next = j;
    else
        p->jq[w][0] = j;
    p->jq[w][1] = j;
    pthread_cond_signal(w ? &p->wcond : &p->rcond);
    pthread_mutex_unlock(&p->mu);
    return HKV_OK;
}

void persister_jobs_run(struct persister *p, int writer)
{
    int w = writer ? 1 : 0;
    struct persister_job *list = p->jq[w][0], *last = NULL;
    p->jq[w][0] = p->jq[w][1] = NULL;
    pthread_mutex_unlock(&p->mu);
    struct pdb *db = w ? &p->w : &p->r;
    for (struct persister_job *j = list; j != NULL; j = j->next) {
        last = j;
        if (w && p->sticky != HKV_OK) {
            j->status = p->sticky; /* the file is not touched again */
            continue;
        }
        j->status = j->run(j, db);
        pdb_rollback(db); /* whatever the job left open */
        if (w && (j->status == HKV_EIO || j->status == HKV_ECORRUPT))
            p->sticky = HKV_EIO;
    }
    if (w) {
        p->dirty = 1; /* a checkpoint when idle */
        p->last_work_ms = persister_mono_ms();
    }
    pthread_mutex_lock(&p->mu);
    if (w)
        p->st.sticky_error = p->sticky;
    if (p->jd_tail != NULL)
        p->jd_tail->next = list;
    else
        p->jd_head = list;
    p->jd_tail = last;
    pthread_mutex_unlock(&p->mu);
    persister_notify(p);
    pthread_mutex_lock(&p->mu);
}

size_t persister_jobs_done(struct persister *p)
{
    pthread_mutex_lock(&p->mu);
    struct persister_job *list = p->jd_head;
    p->jd_head = p->jd_tail = NULL;
    pthread_mutex_unlock(&p->mu);
    size_t n = 0;
    while (list != NULL) {
        struct persister_job *next = list->next;
        list->next = NULL;
        list->done(list); /* may free it, or submit it again */
        list = next;
        n++;
    }
    return n;
}

void persister_jobs_cancel(struct persister *p)
{
    persister_jobs_done(p);
    for (int w = 0; w < 2; w++) {
        struct persister_job *j = p->jq[w][0];
        p->jq[w][0] = p->jq[w][1] = NULL;
        while (j != NULL) {
            struct persister_job *next = j->next;
            j->next = NULL;
            j->status = HKV_EINVAL;
            j->done(j);
            j = next;
        }
    }
}
