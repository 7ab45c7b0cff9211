/*
 * etcd_local_int.h - what the local store's files share (etcd_local.h is
 * the story).  Nobody else includes it.
 *
 *   etcd_local_kv.c    the table: keys in order, the revision, one change
 *                      set applied (pure: no loop, no disk)
 *   etcd_local_file.c  records (encode, decode, load with a torn tail cut)
 *                      and the writer thread
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

/* One key.  key and val are owned, NUL-terminated beyond their lengths. */
struct lkv {
    char *key, *val;
    size_t klen, vlen;
    int64_t create, mod, version, lease;
};

/* Keys in byte order. */
struct ltable {
    struct lkv *v;
    size_t n, cap;
    int64_t rev;
};

/* One change of a revision: a put (kv is the new key, complete) or a delete
 * (kv.key only).  prev: what the key was before (for ranges at an older
 * revision); had_prev 0 if it was absent. */
struct lchange {
    int del;
    struct lkv kv;
    int had_prev;
    struct lkv prev;
};

/* ---- etcd_local_kv.c ---- */
int lkv_cmp_key(const char *a, size_t alen, const char *b, size_t blen);
/* The index of key, or where it would go (*found 0). */
size_t lt_find(const struct ltable *t, const char *key, size_t klen, int *found);
/* [*from, *to) of the keys in etcd's range (end NULL: key alone; end "\0"
 * of length 1: every key from key on). */
void lt_span(const struct ltable *t, const char *key, size_t klen, const char *end, size_t elen,
             size_t *from, size_t *to);
/* 1 if key is in the range. */
int lt_in_range(const char *k, size_t kl, const char *key, size_t klen, const char *end,
                size_t elen);
/* Applies c (the table takes copies): HKV_OK or HKV_ENOMEM. */
int lt_apply(struct ltable *t, const struct lchange *c);
int lkv_copy(struct lkv *dst, const struct lkv *src);
void lkv_free(struct lkv *kv);
void lt_free(struct ltable *t);
void lchange_free(struct lchange *c);

/* ---- etcd_local_file.c ---- */
#define LREC_SNAPSHOT 1
#define LREC_CHANGES 2

/* A record of revision rev: its changes, or (snapshot) every key of t. */
int lrec_encode_changes(struct hkv_buf *b, int64_t rev, const struct lchange *c, size_t n);
int lrec_encode_snapshot(struct hkv_buf *b, const struct ltable *t);
/* Reads the store at path into t (empty on entry).  HKV_OK (a torn or bad
 * tail was cut off: *cut says how many bytes), HKV_ENOENT (no file),
 * HKV_ECORRUPT (not a store), HKV_EIO, HKV_ENOMEM. */
int lfile_load(const char *path, struct ltable *t, size_t *cut, size_t *size);
/* Writes a new store at path holding t (temporary file, fsync, rename). */
int lfile_write_snapshot(const char *path, const struct ltable *t);

struct lwriter;
/* The thread appending to path (which exists); it writes to notify_fd (an
 * eventfd) after each group of records is durable. */
struct lwriter *lw_start(const char *path, size_t size, int notify_fd);
/* Hands a record over (b's bytes are taken; b is left empty).  snapshot:
 * the record replaces the whole file. */
void lw_post(struct lwriter *w, struct hkv_buf *b, int64_t rev, int snapshot);
/* The highest revision durable, 1 in *failed once a write failed (for good),
 * and the bytes appended since the last snapshot. */
int64_t lw_durable(struct lwriter *w, int *failed, size_t *since_snapshot, size_t *snapshot);
/* Writes what is waiting and stops. */
void lw_stop(struct lwriter **w);

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
    struct lwriter *w;
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
/* A new answer for cb (NULL: out of memory); lans_free frees one. */
struct lans *lans_new(etcd_cb cb, void *arg);
void lans_free(struct lans *a);
/* Queues a (its need and revision: the table's now) and schedules the pump;
 * the queue owns a. */
void lans_queue(struct etcd_local *l, struct lans *a);
/* Changes c[0..n), already applied to the table, become revision t.rev + 1:
 * kept and logged (the history takes c's contents).  HKV_OK or HKV_ENOMEM
 * (the store is then poisoned). */
int lstore_commit(struct etcd_local *l, struct lchange *c, size_t n);

/* ---- etcd_local_txn.c, for etcd_local.c ---- */
/* Deletes every key under lease id (0: under any lease, as at load); HKV_OK
 * or the failure. */
int lstore_drop_leased(struct etcd_local *l, int64_t id);

/* Delivers what each watch may hear now (progress: and a PROGRESS). */
void etcd_lw_pump(struct etcd_local *l, int progress);
/* Takes w out of its store's list. */
void etcd_lw_unlink(struct etcd_lwatch *w);

#endif
