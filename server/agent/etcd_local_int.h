/*
 * etcd_local_int.h - what the local store's files share (etcd_local.h is
 * the story).  Nobody else includes it.
 *
 *   storage/lstore.h   the engine's table, records, load and log writer
 *                      thread (no loop)
 *   etcd_local.c       the pump (answers and events released once
 *                      durable), create and destroy (the loop side)
 *   etcd_local_commit.c the answer queue
 *   etcd_local_txn.c   the calls: arguments checked, run on the engine
 *                      (storage/lstore_txn.c), the answer queued
 *   etcd_local_watch.c watches
 */
#ifndef HKV_ETCD_LOCAL_INT_H
#define HKV_ETCD_LOCAL_INT_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "proto/buf.h"
#include "server/agent/etcd.h"
#include "storage/lstore.h"

/* ---- the store (etcd_local.c and the files below it) ---- */
/* An answer waiting for the file. */
struct lans {
    struct lans *next;
    int64_t need;                 /* the revision the file must hold first */
    etcd_cb cb;
    void *arg;
    struct lstore_ans res;
};

struct etcd_lwatch {
    struct etcd_lwatch *next, *prev;
    struct etcd_local *l;         /* NULL once the store is gone */
    char *key, *end;
    size_t klen, elen;
    int64_t next_rev;             /* the next revision to deliver */
    int created, over;
    uint64_t gen;                 /* the pump pass that last visited it */
    etcd_watch_cb cb;
    void *arg;
    int *dead;
};

struct etcd_local {
    struct event_base *base;
    char *path;
    struct lstore s;              /* the engine: table, history, leases, log */
    int efd;
    struct event *ev_notify, *kick, *progress;
    struct lans *head, **tail;
    struct etcd_lwatch watches;   /* list head */
    uint64_t gen;
    int64_t progress_ms;
    int *dead;
};

/* ---- etcd_local_commit.c ---- */
/* A new answer for cb (NULL: out of memory); etcd_local_ans_free frees one. */
struct lans *etcd_local_ans_new(etcd_cb cb, void *arg);
void etcd_local_ans_free(struct lans *a);
/* Queues a (its need and revision: the table's now) and schedules the pump;
 * the queue owns a. */
void etcd_local_ans_queue(struct etcd_local *l, struct lans *a);

/* Delivers what each watch may hear now (progress: and a PROGRESS). */
void etcd_lw_pump(struct etcd_local *l, int progress);
/* Takes w out of its store's list. */
void etcd_lw_unlink(struct etcd_lwatch *w);

#endif
