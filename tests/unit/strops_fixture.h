/*
 * strops_fixture.h - what the proto/strops suites share (check_strops.c,
 * check_strops_bits.c): the command environment and its result, a one-key
 * model the writing tests keep (as the owner's ledger would), an argument
 * line split into slices, and the reply checks.  Each suite has its own
 * copy of the state (static).
 */
#ifndef HKV_TESTS_STROPS_FIXTURE_H
#define HKV_TESTS_STROPS_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/strops.h"

#define MB (1024 * 1024)

static struct hkv_buf work;
static struct strops_env env;
static struct strops_result res;

/* The one key: absent until a command stores into it. */
static char *kdata;
static size_t klen;
static int kpresent;
static struct resp_slice kslice;

static inline void setup(void)
{
    work = (struct hkv_buf)HKV_BUF_INIT;
    env.work = &work;
    env.max_len = STROPS_MAX_LEN_DEFAULT;
    memset(&res, 0, sizeof(res));
    kdata = NULL;
    klen = 0;
    kpresent = 0;
}

static inline void teardown(void)
{
    buf_deinit(&work);
    free(kdata);
    kdata = NULL;
}

static inline void key_set(const char *p, size_t n)
{
    free(kdata);
    kdata = malloc(n > 0 ? n : 1);
    ck_assert_ptr_nonnull(kdata);
    if (n > 0)
        memcpy(kdata, p, n);
    klen = n;
    kpresent = 1;
}

/* The key's value for the next command: NULL while absent. */
static inline const struct resp_slice *key(void)
{
    if (!kpresent)
        return NULL;
    kslice = (struct resp_slice){ kdata, klen };
    return &kslice;
}

/* Applies the last result to the key, as the owner would. */
static inline void keep(void)
{
    if (res.store)
        key_set(res.value, res.value_len);
}

#define SL(lit) ((struct resp_slice){ (lit), sizeof(lit) - 1 })
#define A(lit) (&(struct resp_slice){ (lit), sizeof(lit) - 1 })
#define KEY_SET(lit) key_set((lit), sizeof(lit) - 1)

/* Splits a space-separated argument line into slices (no binary needed). */
static char linebuf[256];
static inline int split(const char *line, struct resp_slice *out, int max)
{
    ck_assert_uint_lt(strlen(line), sizeof(linebuf));
    strcpy(linebuf, line);
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(linebuf, " ", &save); t != NULL; t = strtok_r(NULL, " ", &save)) {
        ck_assert_int_lt(n, max);
        out[n++] = (struct resp_slice){ t, strlen(t) };
    }
    return n;
}

#define CK_INT(call, want)                                              \
    do {                                                                \
        hkv_status st_ = (call);                                        \
        ck_assert_msg(res.reply.type == STROPS_R_INT, "%s: not an integer reply (%s)", \
                      #call, res.reply.type == STROPS_R_ERROR ? res.reply.str : "?"); \
        ck_assert_int_eq(st_, HKV_OK);                                  \
        ck_assert_int_eq(res.reply.integer, (want));                    \
    } while (0)

#define CK_BULK(call, lit)                                              \
    do {                                                                \
        hkv_status st_ = (call);                                        \
        ck_assert_msg(res.reply.type == STROPS_R_BULK, "%s: not a bulk reply (%s)", \
                      #call, res.reply.type == STROPS_R_ERROR ? res.reply.str : "?"); \
        ck_assert_int_eq(st_, HKV_OK);                                  \
        ck_assert_uint_eq(res.reply.len, sizeof(lit) - 1);              \
        ck_assert_mem_eq(res.reply.str, (lit), sizeof(lit) - 1);        \
    } while (0)

#define CK_ERR(call, want_st, text)                                     \
    do {                                                                \
        hkv_status st_ = (call);                                        \
        ck_assert_int_eq(st_, (want_st));                               \
        ck_assert_int_eq(res.reply.type, STROPS_R_ERROR);               \
        ck_assert_str_eq(res.reply.str, (text));                        \
        ck_assert_uint_eq(res.reply.len, strlen(text));                 \
        ck_assert_int_eq(res.store, 0);                                 \
    } while (0)

#define CK_STORED(lit)                                                  \
    do {                                                                \
        ck_assert_int_eq(res.store, 1);                                 \
        ck_assert_uint_eq(res.value_len, sizeof(lit) - 1);              \
        ck_assert_mem_eq(res.value, (lit), sizeof(lit) - 1);            \
    } while (0)

#define CK_KEY(lit)                                                     \
    do {                                                                \
        ck_assert_int_eq(kpresent, 1);                                  \
        ck_assert_uint_eq(klen, sizeof(lit) - 1);                       \
        ck_assert_mem_eq(kdata, (lit), sizeof(lit) - 1);                \
    } while (0)

#define E_INT     "ERR value is not an integer or out of range"
#define E_SYNTAX  "ERR syntax error"
#define E_TOOLONG "ERR string exceeds maximum allowed size (proto-max-bulk-len)"

#endif
