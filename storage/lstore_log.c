/*
 * lstore_log.c - the local store's file and its writer thread (see
 * server/agent/etcd_local.h for the promises, lstore.h for the calls).
 *
 * File: "HKVLMAP1", then records: u32 payload length, u64 checksum
 * (SipHash-2-4 of the payload under a fixed key: it catches a torn or
 * scribbled record, not an adversary), payload.  A payload is u8 type, i64
 * revision, u32 count, then per key: u8 deleted, i64 create, mod, version,
 * lease, u32 key length, key, u32 value length, value (little endian).  A
 * snapshot record holds every key and starts a file; change records follow.
 * Loading stops at the first record that is short or fails its checksum:
 * a crash can only tear the last one (records are appended in order and
 * fsync'd before anyone hears of them), so nothing acknowledged is lost.
 *
 * The thread (storage/bgwriter.h) owns the descriptor.  It takes everything
 * posted so far, appends it with one write each, fsyncs once (group commit),
 * then publishes the highest revision written and pokes the loop's eventfd.  A
 * snapshot in the queue is written to path.tmp, fsync'd, renamed over the
 * store (and the directory fsync'd); later records append to the new file.
 */
#include "storage/lstore.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "proto/siphash.h"
#include "storage/bgwriter.h"
#include "storage/durable.h"

#define MAGIC "HKVLMAP1"
#define MAGIC_LEN 8
#define HEAD_LEN 12                     /* u32 length + u64 checksum */
#define MAX_RECORD (256u << 20)

static const uint8_t sum_key[SIPHASH_KEY_LEN] = "hotkvd-leaf-map";

/* ---- encoding ---- */

static int put_u(struct hkv_buf *b, uint64_t v, int bytes)
{
    unsigned char x[8];
    for (int i = 0; i < bytes; i++)
        x[i] = (unsigned char)(v >> (8 * i));
    return buf_append(b, x, (size_t)bytes);
}

static uint64_t get_u(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static int put_kv(struct hkv_buf *b, int del, const struct lkv *kv)
{
    int rc = put_u(b, (uint64_t)del, 1);
    rc = rc ? rc : put_u(b, (uint64_t)kv->create, 8);
    rc = rc ? rc : put_u(b, (uint64_t)kv->mod, 8);
    rc = rc ? rc : put_u(b, (uint64_t)kv->version, 8);
    rc = rc ? rc : put_u(b, (uint64_t)kv->lease, 8);
    rc = rc ? rc : put_u(b, kv->klen, 4);
    rc = rc ? rc : buf_append(b, kv->key, kv->klen);
    size_t vlen = del ? 0 : kv->vlen;
    rc = rc ? rc : put_u(b, vlen, 4);
    return rc ? rc : buf_append(b, kv->val, vlen);
}

/* Starts a record (header room) and writes its type, revision, count. */
static size_t begin(struct hkv_buf *b, int type, int64_t rev, size_t n, int *rc)
{
    size_t at = buf_unread(b);
    *rc = buf_append(b, "\0\0\0\0\0\0\0\0\0\0\0\0", HEAD_LEN);
    *rc = *rc ? *rc : put_u(b, (uint64_t)type, 1);
    *rc = *rc ? *rc : put_u(b, (uint64_t)rev, 8);
    *rc = *rc ? *rc : put_u(b, n, 4);
    return at;
}

static int finish(struct hkv_buf *b, size_t at, int rc)
{
    if (rc != HKV_OK)
        return rc;
    unsigned char *p = (unsigned char *)buf_head(b) + at;
    size_t len = buf_unread(b) - at - HEAD_LEN;
    if (len > MAX_RECORD)
        return HKV_ETOOBIG;
    uint64_t sum = siphash24(sum_key, p + HEAD_LEN, len);
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(len >> (8 * i));
    for (int i = 0; i < 8; i++)
        p[4 + i] = (unsigned char)(sum >> (8 * i));
    return HKV_OK;
}

int lstore_rec_changes(struct hkv_buf *b, int64_t rev, const struct lchange *c, size_t n)
{
    int rc;
    size_t at = begin(b, LREC_CHANGES, rev, n, &rc);
    for (size_t i = 0; i < n && rc == HKV_OK; i++)
        rc = put_kv(b, c[i].del, &c[i].kv);
    return finish(b, at, rc);
}

int lstore_rec_snapshot(struct hkv_buf *b, const struct ltable *t)
{
    int rc;
    size_t at = begin(b, LREC_SNAPSHOT, t->rev, t->n, &rc);
    for (size_t i = 0; i < t->n && rc == HKV_OK; i++)
        rc = put_kv(b, 0, &t->v[i]);
    return finish(b, at, rc);
}

/* ---- decoding ---- */

/* Applies one payload to t: HKV_OK, HKV_ECORRUPT, HKV_ENOMEM. */
static int apply_payload(struct ltable *t, const unsigned char *p, size_t len)
{
    if (len < 13)
        return HKV_ECORRUPT;
    int type = p[0];
    int64_t rev = (int64_t)get_u(p + 1, 8);
    uint32_t n = (uint32_t)get_u(p + 9, 4);
    if ((type != LREC_SNAPSHOT && type != LREC_CHANGES) || rev < t->rev)
        return HKV_ECORRUPT;
    if (type == LREC_SNAPSHOT)
        lstore_table_free(t);
    size_t off = 13;
    for (uint32_t i = 0; i < n; i++) {
        if (len - off < 1 + 32 + 4)
            return HKV_ECORRUPT;
        struct lchange c;
        memset(&c, 0, sizeof(c));
        c.del = p[off];
        c.kv.create = (int64_t)get_u(p + off + 1, 8);
        c.kv.mod = (int64_t)get_u(p + off + 9, 8);
        c.kv.version = (int64_t)get_u(p + off + 17, 8);
        c.kv.lease = (int64_t)get_u(p + off + 25, 8);
        c.kv.klen = get_u(p + off + 33, 4);
        off += 37;
        if (len - off < c.kv.klen + 4)
            return HKV_ECORRUPT;
        c.kv.key = (char *)(p + off);
        off += c.kv.klen;
        c.kv.vlen = get_u(p + off, 4);
        off += 4;
        if (len - off < c.kv.vlen)
            return HKV_ECORRUPT;
        c.kv.val = (char *)(p + off);
        off += c.kv.vlen;
        if (lstore_apply(t, &c) != HKV_OK) /* copies: c points into p */
            return HKV_ENOMEM;
    }
    if (off != len)
        return HKV_ECORRUPT;
    t->rev = rev;
    return HKV_OK;
}

int lstore_load(const char *path, struct ltable *t, size_t *cut, size_t *size)
{
    *cut = *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? HKV_ENOENT : HKV_EIO;
    struct stat st;
    unsigned char *data = NULL;
    int rc = HKV_EIO;
    if (fstat(fd, &st) != 0)
        goto out;
    size_t len = (size_t)st.st_size;
    data = malloc(len + 1);
    if (data == NULL) {
        rc = HKV_ENOMEM;
        goto out;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, data + got, len - got);
        if (r <= 0)
            goto out;
        got += (size_t)r;
    }
    rc = HKV_ECORRUPT;
    if (len < MAGIC_LEN || memcmp(data, MAGIC, MAGIC_LEN) != 0)
        goto out;
    size_t off = MAGIC_LEN;
    int first = 1;
    while (len - off >= HEAD_LEN) {
        size_t plen = get_u(data + off, 4);
        uint64_t sum = get_u(data + off + 4, 8);
        if (plen > len - off - HEAD_LEN || siphash24(sum_key, data + off + HEAD_LEN, plen) != sum)
            break;
        if (first && (plen < 1 || data[off + HEAD_LEN] != LREC_SNAPSHOT))
            break; /* a file starts with its snapshot */
        int arc = apply_payload(t, data + off + HEAD_LEN, plen);
        if (arc == HKV_ENOMEM) {
            rc = arc;
            goto out;
        }
        if (arc != HKV_OK)
            break;
        first = 0;
        off += HEAD_LEN + plen;
    }
    if (first)
        goto out; /* not even the snapshot: not a store */
    *cut = len - off;
    *size = off;
    rc = HKV_OK;
out:
    free(data);
    close(fd);
    return rc;
}

/* A new file at path holding the record in b. */
static int replace_file(const char *path, const struct hkv_buf *b)
{
    struct iovec parts[2] = {{.iov_base = (void *)MAGIC, .iov_len = MAGIC_LEN},
                             {.iov_base = (void *)buf_head(b), .iov_len = buf_unread(b)}};
    return durable_replace(path, parts, 2, DURABLE_DIR_LAX);
}

int lstore_write_snapshot(const char *path, const struct ltable *t)
{
    struct hkv_buf b = HKV_BUF_INIT;
    int rc = lstore_rec_snapshot(&b, t);
    if (rc == HKV_OK)
        rc = replace_file(path, &b);
    buf_deinit(&b);
    return rc;
}

/* ---- the writer thread ---- */

struct lrec {
    struct lrec *next;
    struct hkv_buf b;
    int64_t rev;
    int snapshot;
};

struct lstore_log {
    struct bgw *thread;
    char *path;
    int fd;
    struct lrec *head, **tail;
    int64_t durable;
    int failed;
    size_t size, snapshot_size;
    /* the thread's round: the records it took and what writing them did */
    struct lrec *batch;
    int batch_failed;
    size_t batch_size, batch_snap;
    int64_t batch_rev;
};

static void free_list(struct lrec *r)
{
    while (r != NULL) {
        struct lrec *next = r->next;
        buf_deinit(&r->b);
        free(r);
        r = next;
    }
}

/* Writes the list (the mutex not held): the revision it made durable, or
 * -1 on failure. */
static int64_t write_list(struct lstore_log *w, struct lrec *r, size_t *size, size_t *snap)
{
    int64_t rev = -1;
    int dirty = 0;
    for (; r != NULL; r = r->next) {
        if (r->snapshot) {
            if (dirty && durable_sync(w->fd) != HKV_OK)
                return -1;
            dirty = 0;
            if (replace_file(w->path, &r->b) != HKV_OK)
                return -1;
            int fd = open(w->path, O_WRONLY | O_APPEND | O_CLOEXEC);
            if (fd < 0)
                return -1;
            close(w->fd);
            w->fd = fd;
            *size = MAGIC_LEN + buf_unread(&r->b);
            *snap = *size;
        } else {
            if (durable_write_all(w->fd, buf_head(&r->b), buf_unread(&r->b)) != HKV_OK)
                return -1;
            *size += buf_unread(&r->b);
            dirty = 1;
        }
        rev = r->rev;
    }
    if (dirty && durable_sync(w->fd) != HKV_OK)
        return -1;
    return rev;
}

static int writer_take(void *arg)
{
    struct lstore_log *w = arg;
    if (w->head == NULL)
        return 0;
    w->batch = w->head;
    w->head = NULL;
    w->tail = &w->head;
    w->batch_size = w->size;
    w->batch_snap = w->snapshot_size;
    w->batch_failed = w->failed;
    return 1;
}

static void writer_work(void *arg)
{
    struct lstore_log *w = arg;
    w->batch_rev = w->batch_failed ? -1 : write_list(w, w->batch, &w->batch_size, &w->batch_snap);
    free_list(w->batch);
    w->batch = NULL;
}

/* Then the skeleton pokes the loop's eventfd: it finds the news at its next
 * call anyway if the poke is lost. */
static void writer_done(void *arg)
{
    struct lstore_log *w = arg;
    if (w->batch_rev < 0) {
        w->failed = 1;
    } else {
        if (w->batch_rev > w->durable)
            w->durable = w->batch_rev;
        w->size = w->batch_size;
        w->snapshot_size = w->batch_snap;
    }
}

struct lstore_log *lstore_log_start(const char *path, size_t size, int notify_fd)
{
    static const struct bgw_ops ops = {writer_take, writer_work, writer_done};
    struct lstore_log *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    w->path = strdup(path);
    w->fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    w->tail = &w->head;
    w->size = w->snapshot_size = size;
    if (w->path == NULL || w->fd < 0 || bgw_start(&w->thread, &ops, w, notify_fd) != HKV_OK) {
        if (w->fd >= 0)
            close(w->fd);
        free(w->path);
        free(w);
        return NULL;
    }
    return w;
}

void lstore_log_post(struct lstore_log *w, struct hkv_buf *b, int64_t rev, int snapshot)
{
    struct lrec *r = calloc(1, sizeof(*r));
    bgw_lock(w->thread);
    if (r == NULL) {
        w->failed = 1; /* the record cannot be kept: the store stops here */
    } else {
        r->b = *b;
        r->rev = rev;
        r->snapshot = snapshot;
        *w->tail = r;
        w->tail = &r->next;
        bgw_signal(w->thread);
    }
    bgw_unlock(w->thread);
    if (r == NULL)
        buf_deinit(b);
    *b = (struct hkv_buf)HKV_BUF_INIT;
}

int64_t lstore_log_durable(struct lstore_log *w, int *failed, size_t *since_snapshot,
                           size_t *snapshot)
{
    bgw_lock(w->thread);
    int64_t rev = w->durable;
    *failed = w->failed;
    *since_snapshot = w->size - w->snapshot_size;
    *snapshot = w->snapshot_size;
    bgw_unlock(w->thread);
    return rev;
}

void lstore_log_stop(struct lstore_log **wp)
{
    struct lstore_log *w = *wp;
    if (w == NULL)
        return;
    *wp = NULL;
    bgw_stop(&w->thread); /* writes everything posted first */
    free_list(w->head);
    close(w->fd);
    free(w->path);
    free(w);
}
