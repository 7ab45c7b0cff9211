/*
 * persister_int.h - the persister's insides, shared by its own files only
 * (persister.c: lifecycle, batches and the writer thread; persister_read.c:
 * the reader thread and point lookups; persister_job.c: jobs, work a caller
 * runs on either thread's connection).  Nothing outside storage/persister*.c
 * includes this.
 */
#ifndef HKV_PERSISTER_INT_H
#define HKV_PERSISTER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "storage/persist_db.h"
#include "storage/persister.h"

struct persister {
    struct pdb w;                 /* writer's connection: writer thread (or caller before start) */
    struct pdb r;                 /* reader's connection: reader thread only */
    struct persister_options opt;
    _Atomic uint32_t interval_ms; /* opt.interval_ms; persister_set_interval changes it */
    int efd;

    pthread_mutex_t mu;           /* guards everything below */
    pthread_cond_t wcond;         /* writer: a batch, a job, a purge request, or stop */
    pthread_cond_t rcond;         /* reader: a lookup, a job, or stop */
    int started, stopping, stopped;
    pthread_t wthr, rthr;

    struct persist_batch *q_head, *q_tail;      /* submitted */
    uint64_t q_batches, q_rows;
    int64_t q_since_ms;           /* monotonic: when the oldest queued batch came */
    uint64_t inflight;            /* batches in the running transaction */
    int64_t inflight_since_ms;
    struct persist_batch *d_head, *d_tail;      /* done, not yet taken */

    struct persister_read *rq_head, *rq_tail;   /* lookups waiting */
    uint64_t rq_n;
    struct persister_read *rd_head, *rd_tail;   /* answered, not yet taken */

    struct persister_job *jq[2][2];             /* [writer?][head, tail]: jobs waiting */
    struct persister_job *jd_head, *jd_tail;    /* jobs run, not yet taken */

    int purge_requested;
    hkv_stamp purge_horizon;
    struct persister_stats st;    /* queued_*, backlog_age filled by snapshot */

    /* writer thread only */
    int sticky;                   /* HKV_EIO once a fatal error happened */
    int64_t last_sync_ms;         /* monotonic: last FULL commit or checkpoint */
    int64_t last_work_ms;         /* monotonic: last transaction ended */
    int dirty;                    /* written since the last checkpoint */
};

int64_t persister_mono_ms(void);
/* Makes the notify fd readable. */
void persister_notify(struct persister *p);

/* The reader thread (persister_read.c): lookups and reader jobs until stop
 * with both queues empty. */
void *persister_reader_main(void *arg);
/* Frees every lookup the persister still holds (destroy). */
void persister_reads_free(struct persister *p);

/* Called by a thread with p->mu held when jobs of its kind wait: detaches
 * them, runs them unlocked on the thread's connection, puts them on the
 * done list, notifies; returns with p->mu held.  A writer job does not run
 * once the file had a fatal error (status HKV_EIO), and a fatal result of
 * one makes the error sticky. */
void persister_jobs_run(struct persister *p, int writer);
/* Jobs still held at destroy go to their done callbacks with HKV_EINVAL. */
void persister_jobs_cancel(struct persister *p);

#endif
