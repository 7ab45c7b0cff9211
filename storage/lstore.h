/*
 * lstore.h - the engine of the agent's local store (server/agent/etcd_local.h
 * tells what the store promises): the keys in order with etcd's revisions,
 * the records that log each revision's changes, the load that cuts a torn
 * tail, and the writer thread that appends and fsyncs them (group commit)
 * off the loop, and the calls' logic (txns, ranges, leases).  No event loop
 * here: the agent's side (etcd_local*.c) holds each answer until the file
 * holds its revision, and runs the watches.
 *
 *   lstore_table.c  the table: keys in order, the revision, one change set
 *                   applied (pure: no loop, no disk)
 *   lstore_log.c    records (encode, decode, load with a torn tail cut) and
 *                   the writer thread (storage/bgwriter.h, storage/durable.h)
 *   lstore_txn.c    the calls: txns, ranges (now or at an older revision),
 *                   leases, each into an answer; a change set made a revision
 */
#ifndef HKV_LSTORE_H
#define HKV_LSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/etcd_types.h"

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

/* ---- the table (lstore_table.c) ---- */
int lstore_key_cmp(const char *a, size_t alen, const char *b, size_t blen);
/* The index of key, or where it would go (*found 0). */
size_t lstore_find(const struct ltable *t, const char *key, size_t klen, int *found);
/* [*from, *to) of the keys in etcd's range (end NULL: key alone; end "\0"
 * of length 1: every key from key on). */
void lstore_span(const struct ltable *t, const char *key, size_t klen, const char *end,
                 size_t elen, size_t *from, size_t *to);
/* 1 if key is in the range. */
int lstore_in_range(const char *k, size_t kl, const char *key, size_t klen, const char *end,
                    size_t elen);
/* Applies c (the table takes copies): HKV_OK or HKV_ENOMEM. */
int lstore_apply(struct ltable *t, const struct lchange *c);
/* n bytes of p and a NUL after them, malloc'd (the caller frees); NULL when
 * memory runs out.  p may be NULL when n is 0. */
char *lstore_bytes_dup(const char *p, size_t n);
int lstore_kv_copy(struct lkv *dst, const struct lkv *src);
void lstore_kv_free(struct lkv *kv);
void lstore_table_free(struct ltable *t);
void lstore_change_free(struct lchange *c);

/* ---- the file (lstore_log.c) ---- */
#define LREC_SNAPSHOT 1
#define LREC_CHANGES 2

/* A record of revision rev: its changes, or (snapshot) every key of t. */
int lstore_rec_changes(struct hkv_buf *b, int64_t rev, const struct lchange *c, size_t n);
int lstore_rec_snapshot(struct hkv_buf *b, const struct ltable *t);
/* Reads the store at path into t (empty on entry).  HKV_OK (a torn or bad
 * tail was cut off: *cut says how many bytes), HKV_ENOENT (no file),
 * HKV_ECORRUPT (not a store), HKV_EIO, HKV_ENOMEM. */
int lstore_load(const char *path, struct ltable *t, size_t *cut, size_t *size);
/* Writes a new store at path holding t (temporary file, fsync, rename). */
int lstore_write_snapshot(const char *path, const struct ltable *t);

struct lstore_log;
/* The thread appending to path (which exists); it writes to notify_fd (an
 * eventfd) after each group of records is durable. */
struct lstore_log *lstore_log_start(const char *path, size_t size, int notify_fd);
/* Hands a record over (b's bytes are taken; b is left empty).  snapshot:
 * the record replaces the whole file. */
void lstore_log_post(struct lstore_log *w, struct hkv_buf *b, int64_t rev, int snapshot);
/* The highest revision durable, 1 in *failed once a write failed (for good),
 * and the bytes appended since the last snapshot. */
int64_t lstore_log_durable(struct lstore_log *w, int *failed, size_t *since_snapshot,
                           size_t *snapshot);
/* Writes what is waiting and stops. */
void lstore_log_stop(struct lstore_log **w);

/* ---- the engine (lstore_txn.c) ---- */
#define LSTORE_HISTORY 20000            /* changes kept for watches and old ranges */

/* A call's outcome: the result and the key copies it points into (owned). */
struct lstore_ans {
    struct etcd_result r;
    struct lkv *kvs;
    struct etcd_kv *ekvs;
    size_t nkvs;
};
void lstore_ans_free(struct lstore_ans *a);

struct lstore_hev {
    int64_t rev;
    struct lchange c;
};

struct lstore_lease {
    int64_t id, ttl;
};

/* The store's state; the caller owns it (and starts the log w). */
struct lstore {
    struct ltable t;
    struct lstore_log *w;
    int64_t durable;              /* the revision the file holds (the caller's to update) */
    int failed;                   /* a write failed: every later call answers HKV_EIO */
    struct lstore_hev *hist;
    size_t nhist, caphist;
    int64_t hist_base;            /* the history holds every revision after it */
    struct lstore_lease *leases;
    size_t nleases, capleases;
    int64_t next_lease;
    int snapshot_pending;
    int64_t snapshot_rev;
};

/* The calls, as etcd.h's, each into a (status, revision set by the caller
 * when it answers).  HKV_OK, or HKV_ENOMEM before anything changed (a is
 * then unused). */
int lstore_txn(struct lstore *l, const struct etcd_cmp *cmp, size_t ncmp,
               const struct etcd_op *ok, size_t nok, const struct etcd_op *fail, size_t nfail,
               struct lstore_ans *a);
void lstore_range(struct lstore *l, const char *key, size_t klen, const char *end, size_t elen,
                  int64_t revision, int64_t limit, struct lstore_ans *a);
/* 1 (a says HKV_EIO) if the store failed: a lease call is not run then (a
 * keepalive that succeeded would say the store works again). */
int lstore_poisoned(const struct lstore *l, struct lstore_ans *a);
int lstore_lease_grant(struct lstore *l, int64_t ttl_s, struct lstore_ans *a);
void lstore_lease_keepalive(const struct lstore *l, int64_t id, struct lstore_ans *a);
void lstore_lease_revoke(struct lstore *l, int64_t id, struct lstore_ans *a);
/* Deletes every key under lease id (0: under any lease, as at load); HKV_OK
 * or the failure. */
int lstore_drop_leased(struct lstore *l, int64_t id);

#endif
