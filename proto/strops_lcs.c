/*
 * strops_lcs.c - LCS, the longest common subsequence of two values; see
 * strops.h.
 *
 * The classic dynamic-programming table, as Redis 7.0 builds it: cell (i, j)
 * holds the LCS length of a[0..i) and b[0..j).  The answer is then read by
 * walking back from the bottom-right corner with Redis's tie rule (step up
 * in a only when that keeps a strictly longer LCS, else step left in b):
 * other walks find other, equally long subsequences, and clients see which
 * one, so the rule is part of the contract.  A run of consecutive matches on
 * that walk is one IDX range; ranges come out from the ends of the strings
 * towards their starts, as Redis sends them.
 *
 * The table lives in env->work, followed by the answer (the LCS bytes or the
 * ranges).  Its size is refused past proto-max-bulk-len with Redis's text,
 * computed as Redis does (4 bytes a cell) whatever this code allocates:
 * LEN alone needs only the length, so it keeps two rows.
 */
#include "proto/strops_int.h"

#include <stdalign.h>
#include <string.h>
#include <strings.h>

#define ERR_LENIDX  "ERR If you want both the length and indexes, please just use IDX."
#define ERR_TOOLONG "ERR String too long for LCS"
#define ERR_TABLE   "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
#define ERR_ALLOC   "ERR Insufficient memory, failed allocating transient memory for LCS"

struct lcs_opts {
    int len, idx, withmatchlen;
    int64_t minmatchlen;
};

static int is_word(const struct resp_slice *a, const char *w)
{
    size_t n = strlen(w);
    return a->len == n && strncasecmp(a->p, w, n) == 0;
}

/* Options in order, the first bad one answering (as Redis's loop does). */
static hkv_status parse_opts(const struct resp_slice *args, int nargs, struct lcs_opts *o,
                             struct strops_result *res)
{
    *o = (struct lcs_opts){ 0 };
    for (int i = 0; i < nargs; i++) {
        const struct resp_slice *a = &args[i];
        if (is_word(a, "idx")) {
            o->idx = 1;
        } else if (is_word(a, "len")) {
            o->len = 1;
        } else if (is_word(a, "withmatchlen")) {
            o->withmatchlen = 1;
        } else if (is_word(a, "minmatchlen") && i + 1 < nargs) {
            i++;
            if (!strops_parse_ll(args[i].p, args[i].len, &o->minmatchlen))
                return strops_fail(res, HKV_EINVAL, STROPS_ERR_INT);
            if (o->minmatchlen < 0)
                o->minmatchlen = 0;
        } else {
            return strops_fail(res, HKV_EINVAL, STROPS_ERR_SYNTAX);
        }
    }
    if (o->len && o->idx)
        return strops_fail(res, HKV_EINVAL, ERR_LENIDX);
    return HKV_OK;
}

/* LEN: the last row of the table, two rows at a time. */
static uint32_t lcs_length(const char *a, uint32_t alen, const char *b, uint32_t blen,
                           uint32_t *rows)
{
    uint32_t *prev = rows, *row = rows + blen + 1;
    memset(prev, 0, (blen + 1) * sizeof(*prev));
    row[0] = 0;
    for (uint32_t i = 1; i <= alen; i++) {
        for (uint32_t j = 1; j <= blen; j++) {
            if (a[i - 1] == b[j - 1])
                row[j] = prev[j - 1] + 1;
            else
                row[j] = prev[j] > row[j - 1] ? prev[j] : row[j - 1];
        }
        uint32_t *t = prev;
        prev = row;
        row = t;
    }
    return prev[blen];
}

hkv_status strops_lcs(const struct strops_env *env, const struct resp_slice *a,
                      const struct resp_slice *b, const struct resp_slice *args, int nargs,
                      struct strops_result *res)
{
    strops_clear(res);
    struct lcs_opts o;
    hkv_status s = parse_opts(args, nargs, &o, res);
    if (s != HKV_OK)
        return s;
    const char *ap = a != NULL ? a->p : "", *bp = b != NULL ? b->p : "";
    size_t alen0 = a != NULL ? a->len : 0, blen0 = b != NULL ? b->len : 0;
    if (alen0 >= UINT32_MAX - 1 || blen0 >= UINT32_MAX - 1)
        return strops_fail(res, HKV_ETOOBIG, ERR_TOOLONG);
    uint32_t alen = (uint32_t)alen0, blen = (uint32_t)blen0;

    /* Redis's bound, on the table it would allocate. */
    uint64_t cells = (uint64_t)(alen + 1ULL) * (blen + 1ULL);
    uint64_t bytes = cells * sizeof(uint32_t);
    if (bytes / sizeof(uint32_t) != cells || bytes >= SIZE_MAX)
        return strops_fail(res, HKV_ENOMEM, ERR_ALLOC);
    if (bytes > (uint64_t)env->max_len)
        return strops_fail(res, HKV_ETOOBIG, ERR_TABLE);

    uint32_t shorter = alen < blen ? alen : blen;
    size_t table = o.len ? 2 * ((size_t)blen + 1) * sizeof(uint32_t) : (size_t)bytes;
    size_t at = (table + alignof(struct strops_match) - 1) &
                ~(alignof(struct strops_match) - 1);
    size_t answer = o.idx ? (size_t)shorter * sizeof(struct strops_match)
                          : (o.len ? 0 : shorter);
    buf_reset(env->work);
    if (buf_reserve(env->work, at + answer, 0) != HKV_OK)
        return strops_fail(res, HKV_ENOMEM, ERR_ALLOC);
    uint32_t *t = (uint32_t *)(void *)env->work->data;

    if (o.len)
        return strops_int(res, lcs_length(ap, alen, bp, blen, t));

    /* The full table: T(i, j) = t[i * (blen + 1) + j]. */
    const size_t w = (size_t)blen + 1;
    memset(t, 0, w * sizeof(*t));
    for (uint32_t i = 1; i <= alen; i++) {
        uint32_t *row = t + i * w, *up = row - w;
        row[0] = 0;
        for (uint32_t j = 1; j <= blen; j++) {
            if (ap[i - 1] == bp[j - 1])
                row[j] = up[j - 1] + 1;
            else
                row[j] = up[j] > row[j - 1] ? up[j] : row[j - 1];
        }
    }
    uint32_t total = t[(size_t)alen * w + blen];

    char *str = env->work->data + at;
    struct strops_match *m = (struct strops_match *)(void *)(env->work->data + at);
    size_t nm = 0;
    uint32_t k = total;            /* next LCS byte to fill, from the end */
    int run = 0;                   /* inside a run of matches */
    uint32_t a_end = 0, b_end = 0, a_start = 0, b_start = 0;
    uint32_t i = alen, j = blen;
    while (i > 0 && j > 0) {
        int close = 0;
        if (ap[i - 1] == bp[j - 1]) {
            if (!o.idx)
                str[--k] = ap[i - 1];
            if (!run) {
                run = 1;
                a_end = i - 1;
                b_end = j - 1;
            }
            a_start = --i;
            b_start = --j;
            close = i == 0 || j == 0;
        } else {
            close = run;
            if (t[(size_t)(i - 1) * w + j] > t[(size_t)i * w + j - 1])
                i--;
            else
                j--;
        }
        if (close && run) {
            uint32_t len = a_end - a_start + 1;
            if (o.idx && (o.minmatchlen == 0 || len >= o.minmatchlen))
                m[nm++] = (struct strops_match){ a_start, a_end, b_start, b_end, len };
            run = 0;
        }
    }
    if (!o.idx)
        return strops_bulk(res, str, total);
    res->reply.type = STROPS_R_LCS_IDX;
    res->reply.integer = total;
    res->reply.matches = m;
    res->reply.nmatches = nm;
    res->reply.withmatchlen = o.withmatchlen;
    return HKV_OK;
}
