/*
 * buf.h - a growable byte buffer with a read offset.
 *
 * The connection buffers of the edge and the owner links: bytes are appended
 * at the tail and consumed from the head; buf_compact() moves the unread bytes
 * to the front when that is cheap, so a long-lived connection does not grow.
 * A buffer never grows past the `max` its owner gives buf_reserve: limits are
 * the caller's, enforced here so no caller can forget.
 */
#ifndef HKV_BUF_H
#define HKV_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "proto/hkv.h"

struct hkv_buf {
    char *data;
    size_t off;   /* first unread byte */
    size_t len;   /* end of written bytes */
    size_t cap;
};

#define HKV_BUF_INIT { NULL, 0, 0, 0 }

static inline size_t buf_unread(const struct hkv_buf *b) { return b->len - b->off; }
static inline const char *buf_head(const struct hkv_buf *b) { return b->data + b->off; }
static inline char *buf_tail(struct hkv_buf *b) { return b->data + b->len; }
static inline size_t buf_room(const struct hkv_buf *b) { return b->cap - b->len; }

/* Frees the storage; the buffer is empty and reusable afterwards. */
void buf_deinit(struct hkv_buf *b);
/* Makes room for at least `n` more bytes at the tail without the total
 * allocation passing `max` (0 = no limit).  HKV_EFULL past max, HKV_ENOMEM. */
hkv_status buf_reserve(struct hkv_buf *b, size_t n, size_t max);
/* Appends n bytes (growing without limit: for replies the caller bounds). */
hkv_status buf_append(struct hkv_buf *b, const void *p, size_t n);
hkv_status buf_append_str(struct hkv_buf *b, const char *s);
hkv_status buf_printf(struct hkv_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Marks n unread bytes consumed; resets to empty when everything is read. */
void buf_consume(struct hkv_buf *b, size_t n);
/* Moves unread bytes to the front (invalidates pointers into the buffer). */
void buf_compact(struct hkv_buf *b);
/* Drops everything, keeps the storage. */
static inline void buf_reset(struct hkv_buf *b) { b->off = b->len = 0; }
/* Shrinks storage back to `keep` bytes when it is empty and larger, so one
 * large request does not pin memory for a connection's life. */
void buf_shrink(struct hkv_buf *b, size_t keep);

#endif
