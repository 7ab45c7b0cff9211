/*
 * strops_int.h - private to proto/strops*.c: the error texts they share and
 * the helpers that fill a struct strops_result.  Not for other modules.
 */
#ifndef HKV_STROPS_INT_H
#define HKV_STROPS_INT_H

#include "proto/strops.h"

#define STROPS_ERR_INT    "ERR value is not an integer or out of range"
#define STROPS_ERR_SYNTAX "ERR syntax error"
#define STROPS_ERR_NOMEM  "ERR out of memory"

static inline void strops_clear(struct strops_result *res)
{
    *res = (struct strops_result){ 0 };
}

/* A refused command: nothing stored, the reply is Redis's error text. */
static inline hkv_status strops_fail(struct strops_result *res, hkv_status st,
                                     const char *text)
{
    strops_clear(res);
    res->reply.type = STROPS_R_ERROR;
    res->reply.str = text;
    res->reply.len = __builtin_strlen(text);
    return st;
}

static inline hkv_status strops_int(struct strops_result *res, int64_t v)
{
    res->reply.type = STROPS_R_INT;
    res->reply.integer = v;
    return HKV_OK;
}

static inline hkv_status strops_bulk(struct strops_result *res, const char *p, size_t n)
{
    res->reply.type = STROPS_R_BULK;
    res->reply.str = n > 0 ? p : "";
    res->reply.len = n;
    return HKV_OK;
}

/* Resolves Redis's start/end pair over a length: negative counts from the
 * end, then both are clamped into [0, len-1].  start > end afterwards means
 * an empty range (always so when len is 0). */
static inline void strops_range(int64_t len, int64_t *start, int64_t *end)
{
    if (*start < 0)
        *start += len;
    if (*end < 0)
        *end += len;
    if (*start < 0)
        *start = 0;
    if (*end < 0)
        *end = 0;
    if (*end >= len)
        *end = len - 1;
}

#endif
