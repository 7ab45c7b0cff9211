/*
 * etcd_local_file.c - the local store's file and its writer thread (see
 * etcd_local.h for the promises, etcd_local_int.h for the calls).
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
 * The thread owns the descriptor.  It takes everything posted so far,
 * appends it with one write each, fsyncs once (group commit), then
 * publishes the highest revision written and pokes the loop's eventfd.  A
 * snapshot in the queue is written to path.tmp, fsync'd, renamed over the
 * store (and the directory fsync'd); later records append to the new file.
 */
#include "server/agent/etcd_local_int.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "proto/siphash.h"

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

int lrec_encode_changes(struct hkv_buf *b, int64_t rev, const struct lchange *c, size_t n)
{
    int rc;
    size_t at = begin(b, LREC_CHANGES, rev, n, &rc);
    for (size_t i = 0; i < n && rc == HKV_OK; i++)
        rc = put_kv(b, c[i].del, &c[i].kv);
    return finish(b, at, rc);
}

int lrec_encode_snapshot(struct hkv_buf *b, const struct ltable *t)
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
        lt_free(t);
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
        if (lt_apply(t, &c) != HKV_OK) /* copies: c points into p */
            return HKV_ENOMEM;
    }
    if (off != len)
        return HKV_ECORRUPT;
    t->rev = rev;
    return HKV_OK;
}

int lfile_load(const char *path, struct ltable *t, size_t *cut, size_t *size)
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

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return HKV_EIO;
        p += w;
        n -= (size_t)w;
    }
    return HKV_OK;
}

static void sync_dir(const char *path)
{
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s", path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
}

/* A new file at path holding the record in b (temporary, fsync, rename). */
static int replace_file(const char *path, const struct hkv_buf *b)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return HKV_EINVAL;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return HKV_EIO;
    int rc = write_all(fd, MAGIC, MAGIC_LEN);
    rc = rc ? rc : write_all(fd, buf_head(b), buf_unread(b));
    if (rc == HKV_OK && fsync(fd) != 0)
        rc = HKV_EIO;
    if (close(fd) != 0)
        rc = HKV_EIO;
    if (rc == HKV_OK && rename(tmp, path) != 0)
        rc = HKV_EIO;
    if (rc != HKV_OK) {
        unlink(tmp);
        return rc;
    }
    sync_dir(path);
    return HKV_OK;
}

int lfile_write_snapshot(const char *path, const struct ltable *t)
{
    struct hkv_buf b = HKV_BUF_INIT;
    int rc = lrec_encode_snapshot(&b, t);
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

struct lwriter {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    char *path;
    int fd, notify_fd;
    struct lrec *head, **tail;
    int64_t durable;
    int failed;
    size_t size, snapshot_size;
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
static int64_t write_list(struct lwriter *w, struct lrec *r, size_t *size, size_t *snap)
{
    int64_t rev = -1;
    int dirty = 0;
    for (; r != NULL; r = r->next) {
        if (r->snapshot) {
            if (dirty && fdatasync(w->fd) != 0)
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
            if (write_all(w->fd, buf_head(&r->b), buf_unread(&r->b)) != HKV_OK)
                return -1;
            *size += buf_unread(&r->b);
            dirty = 1;
        }
        rev = r->rev;
    }
    if (dirty && fdatasync(w->fd) != 0)
        return -1;
    return rev;
}

static void *writer_main(void *arg)
{
    struct lwriter *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && w->head == NULL)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->head == NULL)
            break;
        struct lrec *list = w->head;
        w->head = NULL;
        w->tail = &w->head;
        size_t size = w->size, snap = w->snapshot_size;
        int failed = w->failed;
        pthread_mutex_unlock(&w->mu);
        int64_t rev = failed ? -1 : write_list(w, list, &size, &snap);
        free_list(list);
        pthread_mutex_lock(&w->mu);
        if (rev < 0) {
            w->failed = 1;
        } else {
            if (rev > w->durable)
                w->durable = rev;
            w->size = size;
            w->snapshot_size = snap;
        }
        uint64_t one = 1;
        if (write(w->notify_fd, &one, sizeof(one)) < 0) {
            /* the loop finds the news at its next call anyway */
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

struct lwriter *lw_start(const char *path, size_t size, int notify_fd)
{
    struct lwriter *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    w->path = strdup(path);
    w->fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    w->notify_fd = notify_fd;
    w->tail = &w->head;
    w->size = w->snapshot_size = size;
    if (w->path == NULL || w->fd < 0)
        goto fail;
    if (pthread_mutex_init(&w->mu, NULL) != 0)
        goto fail;
    if (pthread_cond_init(&w->cv, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        goto fail;
    }
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        goto fail;
    }
    return w;
fail:
    if (w->fd >= 0)
        close(w->fd);
    free(w->path);
    free(w);
    return NULL;
}

void lw_post(struct lwriter *w, struct hkv_buf *b, int64_t rev, int snapshot)
{
    struct lrec *r = calloc(1, sizeof(*r));
    pthread_mutex_lock(&w->mu);
    if (r == NULL) {
        w->failed = 1; /* the record cannot be kept: the store stops here */
    } else {
        r->b = *b;
        r->rev = rev;
        r->snapshot = snapshot;
        *w->tail = r;
        w->tail = &r->next;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    if (r == NULL)
        buf_deinit(b);
    *b = (struct hkv_buf)HKV_BUF_INIT;
}

int64_t lw_durable(struct lwriter *w, int *failed, size_t *since_snapshot, size_t *snapshot)
{
    pthread_mutex_lock(&w->mu);
    int64_t rev = w->durable;
    *failed = w->failed;
    *since_snapshot = w->size - w->snapshot_size;
    *snapshot = w->snapshot_size;
    pthread_mutex_unlock(&w->mu);
    return rev;
}

void lw_stop(struct lwriter **wp)
{
    struct lwriter *w = *wp;
    if (w == NULL)
        return;
    *wp = NULL;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    free_list(w->head);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    close(w->fd);
    free(w->path);
    free(w);
}
