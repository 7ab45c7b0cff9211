/*
 * cmd_opts.c - SET's, GETEX's and EXPIRE's option grammar (cmd_opts.h).
 * Each check is in Redis's order; the exclusions are one mask per option, so
 * the table below reads as Redis's if-chain in parseExtendedStringArguments.
 */
#include "proto/cmd_opts.h"

#include <string.h>
#include <strings.h>

#include "proto/num.h"

int cmd_opts_is(const char *p, size_t n, const char *lit)
{
    size_t m = n ? strnlen(p, n) : 0; /* Redis compares the C string: up to a NUL */
    return m == strlen(lit) && strncasecmp(p, lit, m) == 0;
}

/* One option: its word, its flag, the flags it cannot follow, whether SET
 * (1), GETEX (0) or both (-1) take it, whether a value follows it (1: an
 * expiry's, 2: IFEQ's comparison value). */
struct xopt {
    const char *word;
    unsigned flag, excludes;
    int set, valued;
};

static const struct xopt xopts[] = {
    {"nx", CMD_OPT_NX, CMD_OPT_XX | CMD_OPT_IFEQ, 1, 0},
    {"xx", CMD_OPT_XX, CMD_OPT_NX | CMD_OPT_IFEQ, 1, 0},
    /* Valkey 8.1: IFEQ excludes NX, XX and a second IFEQ */
    {"ifeq", CMD_OPT_IFEQ, CMD_OPT_NX | CMD_OPT_XX | CMD_OPT_IFEQ, 1, 2},
    {"get", CMD_OPT_GET, 0, 1, 0},
    {"keepttl", CMD_OPT_KEEPTTL, CMD_OPT_PERSIST | CMD_OPT_ANYEXP, 1, 0},
    {"persist", CMD_OPT_PERSIST, CMD_OPT_KEEPTTL | CMD_OPT_ANYEXP, 0, 0},
    {"ex", CMD_OPT_EX, CMD_OPT_KEEPTTL | CMD_OPT_PERSIST | (CMD_OPT_ANYEXP & ~CMD_OPT_EX), -1, 1},
    {"px", CMD_OPT_PX, CMD_OPT_KEEPTTL | CMD_OPT_PERSIST | (CMD_OPT_ANYEXP & ~CMD_OPT_PX), -1, 1},
    {"exat", CMD_OPT_EXAT, CMD_OPT_KEEPTTL | CMD_OPT_PERSIST | (CMD_OPT_ANYEXP & ~CMD_OPT_EXAT),
     -1, 1},
    {"pxat", CMD_OPT_PXAT, CMD_OPT_KEEPTTL | CMD_OPT_PERSIST | (CMD_OPT_ANYEXP & ~CMD_OPT_PXAT),
     -1, 1},
};

int cmd_xopts_word(struct cmd_xopts *o, const char *p, size_t n, int has_next, int is_set)
{
    for (size_t i = 0; i < sizeof(xopts) / sizeof(xopts[0]); i++) {
        const struct xopt *x = &xopts[i];
        if ((x->set >= 0 && x->set != (is_set != 0)) || !cmd_opts_is(p, n, x->word))
            continue;
        /* a word of the wrong kind, after an excluding one, or a valued
         * option without its value: Redis's chain falls through to its
         * syntax error */
        if ((o->flags & x->excludes) || (x->valued && !has_next))
            return -1;
        o->flags |= x->flag;
        if (!x->valued)
            return 0;
        if (x->valued == 2)
            return 2; /* IFEQ's comparison value, not an expiry */
        o->unit = x->flag;
        return 1;
    }
    return -1;
}

enum cmd_opts_rc cmd_xopts_expiry(const struct cmd_xopts *o, const char *p, size_t n,
                                  int64_t now_ms, int64_t *ms, int *absolute)
{
    int64_t v;
    if (!num_parse_ll(p, n, &v))
        return CMD_OPTS_NOT_INT;
    int seconds = o->unit == CMD_OPT_EX || o->unit == CMD_OPT_EXAT;
    int rel = o->unit == CMD_OPT_EX || o->unit == CMD_OPT_PX;
    if (v <= 0 || (seconds && v > INT64_MAX / 1000))
        return CMD_OPTS_BAD_TIME;
    if (seconds)
        v *= 1000;
    if (rel && v > INT64_MAX - now_ms)
        return CMD_OPTS_BAD_TIME; /* Redis: the sum overflows to <= 0 */
    *ms = v;
    *absolute = !rel;
    return CMD_OPTS_OK;
}

unsigned cmd_expire_word(const char *p, size_t n)
{
    return cmd_opts_is(p, n, "nx")   ? CMD_EXPIRE_NX
           : cmd_opts_is(p, n, "xx") ? CMD_EXPIRE_XX
           : cmd_opts_is(p, n, "gt") ? CMD_EXPIRE_GT
           : cmd_opts_is(p, n, "lt") ? CMD_EXPIRE_LT
                                     : 0;
}

const char *cmd_expire_conflict(unsigned f)
{
    if ((f & CMD_EXPIRE_NX) && (f & (CMD_EXPIRE_XX | CMD_EXPIRE_GT | CMD_EXPIRE_LT)))
        return "ERR NX and XX, GT or LT options at the same time are not compatible";
    if ((f & CMD_EXPIRE_GT) && (f & CMD_EXPIRE_LT))
        return "ERR GT and LT options at the same time are not compatible";
    return NULL;
}

int cmd_expire_applies(unsigned f, int64_t cur, int64_t want)
{
    return !((f & CMD_EXPIRE_NX) && cur != -1) && !((f & CMD_EXPIRE_XX) && cur == -1) &&
           !((f & CMD_EXPIRE_GT) && (cur == -1 || want <= cur)) &&
           !((f & CMD_EXPIRE_LT) && cur != -1 && want >= cur);
}

enum cmd_opts_rc cmd_expire_time(const char *p, size_t n, int seconds, int rel, int64_t now_ms,
                                 int64_t *ms)
{
    int64_t v;
    if (!num_parse_ll(p, n, &v))
        return CMD_OPTS_NOT_INT;
    if (seconds) {
        if (v > INT64_MAX / 1000 || v < INT64_MIN / 1000)
            return CMD_OPTS_BAD_TIME;
        v *= 1000;
    }
    if (rel && v > INT64_MAX - now_ms)
        return CMD_OPTS_BAD_TIME;
    *ms = v;
    return CMD_OPTS_OK;
}
