/*
 * strops.h - Redis 7.0's string commands as pure functions of a value.
 *
 * APPEND, SETRANGE, GETRANGE (and SUBSTR), INCRBYFLOAT, SETBIT, GETBIT,
 * BITCOUNT, BITPOS and LCS, computed from the key's current value and the
 * arguments exactly as the client sent them, so the owner (which writes) and
 * the edge (which reads cached values) give the same answers as Redis 7.0:
 * the same replies, the same error texts, the same edge cases (negative
 * indexes, clamping, empty strings, BITPOS's "bit after the end").
 *
 * Inputs.  `cur` is the key's current value, or NULL when the key is absent
 * (missing or expired).  Arguments are slices as the client sent them
 * (struct resp_slice); integers are parsed as Redis's string2ll does.  Type
 * checks (WRONGTYPE) and arity are the caller's: this module only knows
 * strings.  `cur` and the arguments must not point into env->work.
 *
 * Outputs.  Every call fills a struct strops_result: `store` says whether the
 * key's value becomes `value` (created when absent) - exactly when Redis
 * signals the key modified, so WATCH and versions follow Redis - and `reply`
 * is what the client gets, as a small typed tree the caller encodes in RESP2
 * or RESP3 (strops_reply_encode does it with proto/resp).  Nothing is
 * allocated per call except by growing env->work, which the caller keeps
 * and reuses (buf_shrink it after a large LCS if memory matters).  `value`
 * and the reply's strings point into env->work, into `cur` or into an
 * argument, and are valid until the next call with the same env->work or
 * until those inputs change.
 *
 * Bounds.  env->max_len is Redis's proto-max-bulk-len (512 MB by default):
 * no command makes a value longer than it (APPEND, SETRANGE), bit offsets
 * address bytes below it (SETBIT, GETBIT) and LCS's transient table may not
 * be larger than it, as in Redis.  env->work grows to at most the new value
 * (INCRBYFLOAT: 5 KB, Redis's longest float text; LCS: its table plus its
 * answer).
 *
 * Return codes.  Every function returns:
 *   HKV_OK       the command succeeded; reply is not an error.
 *   HKV_EINVAL   the client's arguments or the stored value were refused
 *                (not an integer, syntax error, NaN result ...).
 *   HKV_ETOOBIG  a size bound refused the command (proto-max-bulk-len).
 *   HKV_ENOMEM   env->work could not grow.
 * On anything but HKV_OK, store is 0 and reply is an error whose text is
 * byte-identical to Redis 7.0's (without the leading '-' and CRLF).
 */
#ifndef HKV_STROPS_H
#define HKV_STROPS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/hkv.h"
#include "proto/resp.h"

/* Redis 7.0's default proto-max-bulk-len. */
#define STROPS_MAX_LEN_DEFAULT (512LL * 1024 * 1024)

struct strops_env {
    struct hkv_buf *work;  /* new values and built replies; reset by each call
                              that uses it; may be NULL for the read commands
                              that never need it (GETRANGE, GETBIT, BITCOUNT,
                              BITPOS) */
    int64_t max_len;       /* proto-max-bulk-len, > 0 */
};

enum strops_rtype {
    STROPS_R_INT,       /* integer */
    STROPS_R_BULK,      /* bulk string str[0..len) */
    STROPS_R_ERROR,     /* error line: str is NUL-terminated, static */
    STROPS_R_LCS_IDX,   /* LCS ... IDX: map {"matches": [...], "len": integer} */
};

/* One range pair of LCS IDX, inclusive positions in the first and second
 * string; len = a_end - a_start + 1 (sent when WITHMATCHLEN was given). */
struct strops_match {
    uint32_t a_start, a_end;
    uint32_t b_start, b_end;
    uint32_t len;
};

struct strops_reply {
    enum strops_rtype type;
    int64_t integer;                     /* INT; LCS_IDX: the "len" field */
    const char *str;                     /* BULK, ERROR */
    size_t len;
    const struct strops_match *matches;  /* LCS_IDX, in Redis's order (from the ends) */
    size_t nmatches;
    int withmatchlen;                    /* LCS_IDX: each match carries its len */
};

struct strops_result {
    int store;           /* 1: the key's value becomes value[0..value_len) */
    const char *value;   /* NULL when store is 0 */
    size_t value_len;
    struct strops_reply reply;
};

/* APPEND key value: reply the new length. */
hkv_status strops_append(const struct strops_env *env, const struct resp_slice *cur,
                         const struct resp_slice *value, struct strops_result *res);
/* SETRANGE key offset value: reply the new length (the old one, and nothing
 * stored, when value is empty; 0 and nothing created for an absent key). */
hkv_status strops_setrange(const struct strops_env *env, const struct resp_slice *cur,
                           const struct resp_slice *offset, const struct resp_slice *value,
                           struct strops_result *res);
/* GETRANGE key start end, and SUBSTR (the same command): a bulk string that
 * points into cur (empty for an absent key).  Never stores. */
hkv_status strops_getrange(const struct strops_env *env, const struct resp_slice *cur,
                           const struct resp_slice *start, const struct resp_slice *end,
                           struct strops_result *res);
/* INCRBYFLOAT key increment: the new value, formatted as Redis does (long
 * double, %.17Lf without trailing zeros), is both stored and the bulk reply. */
hkv_status strops_incrbyfloat(const struct strops_env *env, const struct resp_slice *cur,
                              const struct resp_slice *incr, struct strops_result *res);
/* SETBIT key offset 0|1: reply the bit's old value; stores when the key is
 * created, grows, or the bit changes. */
hkv_status strops_setbit(const struct strops_env *env, const struct resp_slice *cur,
                         const struct resp_slice *offset, const struct resp_slice *bit,
                         struct strops_result *res);
/* GETBIT key offset. */
hkv_status strops_getbit(const struct strops_env *env, const struct resp_slice *cur,
                         const struct resp_slice *offset, struct strops_result *res);
/* BITCOUNT key [start end [BYTE|BIT]]: args are those after the key. */
hkv_status strops_bitcount(const struct strops_env *env, const struct resp_slice *cur,
                           const struct resp_slice *args, int nargs,
                           struct strops_result *res);
/* BITPOS key bit [start [end [BYTE|BIT]]]: args are those after the key
 * (nargs >= 1; fewer is the arity error, HKV_EINVAL). */
hkv_status strops_bitpos(const struct strops_env *env, const struct resp_slice *cur,
                         const struct resp_slice *args, int nargs,
                         struct strops_result *res);
/* LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]: a and b are the
 * two values (NULL = absent = empty), args those after the keys.  Reply: the
 * LCS as a bulk string, its length (LEN) or the IDX map.  O(len(a)*len(b))
 * time, as Redis; memory: the table (4 bytes a cell) unless LEN, which needs
 * two rows. */
hkv_status strops_lcs(const struct strops_env *env, const struct resp_slice *a,
                      const struct resp_slice *b, const struct resp_slice *args, int nargs,
                      struct strops_result *res);

/* Appends the reply to `out` in RESP2 or RESP3 (proto 2 or 3), as Redis 7.0
 * writes it (LCS IDX: a map in RESP3, a flat array of 4 in RESP2).
 * HKV_OK or HKV_ENOMEM. */
hkv_status strops_reply_encode(struct hkv_buf *out, int proto, const struct strops_reply *r);

/* Redis's string2ll: an optional '-', digits without a leading zero ("0"
 * alone is fine), no '+', no spaces, at most 20 bytes, no overflow.  1 and
 * *out set when s[0..n) is such an integer, else 0. */
int strops_parse_ll(const char *s, size_t n, int64_t *out);

#endif
