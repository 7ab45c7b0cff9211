/*
 * cmap_file.c - the cluster map on disk (cmap_save, cmap_load; see cmap.h):
 * what lets a host that restarts while etcd is down route as it did.
 *
 * The file is written field by field in little-endian, never as a memory
 * image of struct cmap_table (whose padding and size a later build may
 * change): a magic, a format version and the body's length, the body (the
 * revision, each pool's leaves, the used owner rows with length-prefixed
 * names), and a SipHash of everything before it under a fixed public key
 * (it guards against torn and foreign files, not against an attacker who
 * can write `dir`).  A file is read whole, bounded by the largest table the
 * format can hold, and refused unless every check passes and the table it
 * holds validates: a bad file is as good as no file, never half a map.
 *
 * Writes replace the file whole (storage/durable.h: temporary, fsync,
 * rename, fsync of the directory), so a crash leaves the old file or the new.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "proto/siphash.h"
#include "server/core/cmap.h"
#include "storage/durable.h"

#define FILE_MAGIC "HKVCMAP\0"
#define FILE_VERSION 2                 /* 2: leaves carry their in-sync followers */
#define HEAD_LEN 16                    /* magic, version, body length */
#define LEAF_LEN (18 + 2 * CMAP_MAX_ISR) /* start, bits, state, owner, to, epoch, nisr, isr */
#define OWNER_FIXED 16                 /* number, pool, live, index, port, incarnation */
#define MAX_BODY (8 + 4 * CMAP_NPOOLS + (size_t)CMAP_NPOOLS * CMAP_MAX_LEAVES * LEAF_LEN + 2 + \
                  (size_t)CMAP_MAX_OWNERS * (OWNER_FIXED + 3 * CMAP_NAME_MAX))

static const uint8_t sum_key[SIPHASH_KEY_LEN] = "hotkvd-cmap-v1!";

/* ---- encoding ----------------------------------------------------------------- */

struct wr {
    uint8_t *p;
    size_t n;
};

static void put(struct wr *w, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        w->p[w->n++] = (uint8_t)(v >> (8 * i));
}

static void put_str(struct wr *w, const char *s, size_t cap)
{
    size_t len = strnlen(s, cap - 1);
    put(w, len, 1);
    memcpy(w->p + w->n, s, len);
    w->n += len;
}

static size_t encode(const struct cmap_table *t, uint8_t *p)
{
    struct wr w = {p, 0};
    memcpy(w.p, FILE_MAGIC, 8);
    w.n = 8;
    put(&w, FILE_VERSION, 4);
    put(&w, 0, 4); /* body length, below */
    put(&w, (uint64_t)t->revision, 8);
    for (int k = 0; k < CMAP_NPOOLS; k++)
        put(&w, t->nleaves[k], 4);
    for (int k = 0; k < CMAP_NPOOLS; k++)
        for (uint32_t i = 0; i < t->nleaves[k]; i++) {
            const struct cmap_leaf *l = &t->leaves[k][i];
            put(&w, l->start, 4);
            put(&w, l->bits, 1);
            put(&w, l->state, 1);
            put(&w, l->owner, 2);
            put(&w, l->to, 2);
            put(&w, (uint64_t)l->epoch, 8);
            put(&w, l->nisr, 1);
            for (int f = 0; f < CMAP_MAX_ISR; f++)
                put(&w, l->isr[f], 2);
        }
    uint16_t used = 0;
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++)
        used += t->owners[n].number != 0;
    put(&w, used, 2);
    for (unsigned n = 1; n <= CMAP_MAX_OWNERS; n++) {
        const struct cmap_owner *o = &t->owners[n];
        if (o->number == 0)
            continue;
        put(&w, o->number, 2);
        put(&w, o->pool, 1);
        put(&w, o->live, 1);
        put(&w, o->index, 2);
        put(&w, o->port, 2);
        put(&w, o->incarnation, 8);
        put_str(&w, o->id, sizeof(o->id));
        put_str(&w, o->host, sizeof(o->host));
        put_str(&w, o->addr, sizeof(o->addr));
    }
    struct wr len = {p + 12, 0};
    put(&len, w.n - HEAD_LEN, 4);
    put(&w, siphash24(sum_key, p, w.n), 8);
    return w.n;
}

/* ---- decoding ----------------------------------------------------------------- */

struct rd {
    const uint8_t *p;
    size_t n, off;
    int bad;
};

static uint64_t get(struct rd *r, int bytes)
{
    if (r->bad || r->n - r->off < (size_t)bytes) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)r->p[r->off++] << (8 * i);
    return v;
}

static void get_str(struct rd *r, char *out, size_t cap)
{
    size_t len = (size_t)get(r, 1);
    if (r->bad || len >= cap || r->n - r->off < len) {
        r->bad = 1;
        out[0] = '\0';
        return;
    }
    memcpy(out, r->p + r->off, len);
    out[len] = '\0';
    r->off += len;
}

static int decode(struct cmap_table *t, const uint8_t *p, size_t n)
{
    if (n < HEAD_LEN + 8 || memcmp(p, FILE_MAGIC, 8) != 0)
        return HKV_EINVAL;
    struct rd r = {p, n - 8, 8, 0};
    if (get(&r, 4) != FILE_VERSION || get(&r, 4) != n - 8 - HEAD_LEN)
        return HKV_EINVAL;
    struct rd sum = {p + n - 8, 8, 0, 0};
    if (get(&sum, 8) != siphash24(sum_key, p, n - 8))
        return HKV_EINVAL;
    memset(t, 0, offsetof(struct cmap_table, leaves));
    memset(t->owners, 0, sizeof(t->owners));
    t->revision = (int64_t)get(&r, 8);
    for (int k = 0; k < CMAP_NPOOLS; k++) {
        t->nleaves[k] = (uint32_t)get(&r, 4);
        if (t->nleaves[k] > CMAP_MAX_LEAVES)
            return HKV_EINVAL;
    }
    for (int k = 0; k < CMAP_NPOOLS; k++)
        for (uint32_t i = 0; i < t->nleaves[k] && !r.bad; i++) {
            struct cmap_leaf *l = &t->leaves[k][i];
            memset(l, 0, sizeof(*l));
            l->start = (uint32_t)get(&r, 4);
            l->bits = (uint8_t)get(&r, 1);
            l->state = (uint8_t)get(&r, 1);
            l->owner = (uint16_t)get(&r, 2);
            l->to = (uint16_t)get(&r, 2);
            l->epoch = (int64_t)get(&r, 8);
            l->nisr = (uint8_t)get(&r, 1);
            for (int f = 0; f < CMAP_MAX_ISR; f++)
                l->isr[f] = (uint16_t)get(&r, 2);
        }
    unsigned used = (unsigned)get(&r, 2);
    if (used > CMAP_MAX_OWNERS)
        return HKV_EINVAL;
    for (unsigned i = 0; i < used && !r.bad; i++) {
        unsigned num = (unsigned)get(&r, 2);
        if (num < 1 || num > CMAP_MAX_OWNERS || t->owners[num].number != 0)
            return HKV_EINVAL;
        struct cmap_owner *o = &t->owners[num];
        o->number = (uint16_t)num;
        o->pool = (uint8_t)get(&r, 1);
        o->live = (uint8_t)get(&r, 1);
        o->index = (uint16_t)get(&r, 2);
        o->port = (uint16_t)get(&r, 2);
        o->incarnation = get(&r, 8);
        get_str(&r, o->id, sizeof(o->id));
        get_str(&r, o->host, sizeof(o->host));
        get_str(&r, o->addr, sizeof(o->addr));
    }
    if (r.bad || r.off != r.n)
        return HKV_EINVAL;
    return cmap_validate(t, NULL, 0);
}

/* ---- files -------------------------------------------------------------------- */

int cmap_save(const struct cmap_table *t, const char *path)
{
    if (cmap_validate(t, NULL, 0) != HKV_OK)
        return HKV_EINVAL;
    uint8_t *p = malloc(HEAD_LEN + MAX_BODY + 8);
    if (p == NULL)
        return HKV_ENOMEM;
    size_t n = encode(t, p);
    /* a temporary per process: an agent still exiting and its successor may overlap */
    int rc = durable_replace_buf(path, p, n, DURABLE_TMP_PID);
    free(p);
    return rc;
}

int cmap_load(struct cmap_table *t, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? HKV_ENOENT : HKV_EIO;
    struct stat st;
    size_t cap = HEAD_LEN + MAX_BODY + 8;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return HKV_EIO;
    }
    if (st.st_size < 0 || (size_t)st.st_size > cap) {
        close(fd);
        return HKV_EINVAL;
    }
    size_t n = (size_t)st.st_size, got = 0;
    uint8_t *p = malloc(n > 0 ? n : 1);
    if (p == NULL) {
        close(fd);
        return HKV_ENOMEM;
    }
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    int rc = got == n ? decode(t, p, n) : HKV_EIO;
    free(p);
    return rc;
}
