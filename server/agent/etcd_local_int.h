/*
 * etcd_local_int.h - what the local store's files share (etcd_local.h is
 * the story).  Nobody else includes it.
 *
 *   storage/lstore.h   the engine's table, records, load and log writer
 *                      thread (no loop)
 *   etcd_local.c       the pump (answers and events released once
 *                      durable), create and destroy (the loop side)
 *   etcd_local_commit.c the answer queue; a change set made a revision
 *                      (history, writer, snapshots)
 *   etcd_local_txn.c   the calls: txns, ranges, leases
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
    struct etcd_result r;
    struct lkv *kvs;              /* owned copies */
    struct etcd_kv *ekvs;
    size_t nkvs;
};

struct hev {
    int64_t rev;
    struct lchange c;
};

struct lease {
    int64_t id, ttl;
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
    struct ltable t;
    struct lstore_log *w;
    int efd;
    struct event *ev_notify, *kick, *progress;
    int64_t durable;
    int failed;
    struct lans *head, **tail;
    struct hev *hist;
    size_t nhist, caphist;
    int64_t hist_base;            /* the history holds every revision after it */
    struct lease *leases;
    size_t nleases, capleases;
    int64_t next_lease;
    struct etcd_lwatch watches;   /* list head */
    uint64_t gen;
    int64_t progress_ms;
    int snapshot_pending;
    int64_t snapshot_rev;
    int *dead;
};

/* ---- etcd_local_commit.c ---- */
/* A new answer for cb (NULL: out of memory); etcd_local_ans_free frees one. */
struct lans *etcd_local_ans_new(etcd_cb cb, void *arg);
void etcd_local_ans_free(struct lans *a);
/* Queues a (its need and revision: the table's now) and schedules the pump;
 * the queue owns a. */
void etcd_local_ans_queue(struct etcd_local *l, struct lans *a);
/* Changes c[0..n), already applied to the table, become revision t.rev + 1:
 * kept and logged (the history takes c's contents).  HKV_OK or HKV_ENOMEM
 * (the store is then poisoned). */
int etcd_local_commit(struct etcd_local *l, struct lchange *c, size_t n);

/* ---- etcd_local_txn.c, for etcd_local.c ---- */
/* Deletes every key under lease id (0: under any lease, as at load); HKV_OK
 * or the failure. */
int etcd_local_drop_leased(struct etcd_local *l, int64_t id);

/* Delivers what each watch may hear now (progress: and a PROGRESS). */
void etcd_lw_pump(struct etcd_local *l, int progress);
/* Takes w out of its store's list. */
void etcd_lw_unlink(struct etcd_lwatch *w);

#endif
