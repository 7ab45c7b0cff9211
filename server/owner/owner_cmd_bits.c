/*
 * owner_cmd_bits.c - the string commands whose Redis semantics live in
 * proto/strops.h: APPEND SETRANGE INCRBYFLOAT SETBIT (read-modify-write
 * through ledger_rmw, so the new value is computed from the value the
 * ledger holds at that instant) and GETRANGE SUBSTR GETBIT BITCOUNT BITPOS
 * LCS (reads).
 *
 * strops computes both the value to store and the typed reply; this file
 * only fetches the current value, lets the ledger store the result (with a
 * new version, the key's deadline kept, as Redis keeps the TTL) and encodes
 * the reply for the client's protocol.  The replies of the writes point
 * into c->work or are static, never into the old value, so they survive the
 * store.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/strops.h"
#include "server/owner/owner_cmd.h"

enum rmw_op { RMW_APPEND, RMW_SETRANGE, RMW_INCRBYFLOAT, RMW_SETBIT };

struct rmw {
    struct ocmd *c;
    enum rmw_op op;
    const struct wire_slice *argv;
    hkv_status st;               /* strops' status */
    int found;                   /* the key was live before */
    struct strops_result res;
};

static struct strops_env env_of(struct ocmd *c)
{
    return (struct strops_env){&c->work, c->max_len};
}

/* ledger_rmw's callback: runs the strops function on the live value. */
static int rmw_fn(void *arg, const char *cur, size_t curlen, int found, const char **val,
                  size_t *vlen)
{
    struct rmw *a = arg;
    a->found = found;
    struct strops_env env = env_of(a->c);
    struct resp_slice cs = {cur, curlen}, x = ocmd_rs(a->argv[2]);
    const struct resp_slice *cp = found ? &cs : NULL;
    struct resp_slice y = a->op == RMW_SETRANGE || a->op == RMW_SETBIT ? ocmd_rs(a->argv[3])
                                                                        : x;
    switch (a->op) {
    case RMW_APPEND: a->st = strops_append(&env, cp, &x, &a->res); break;
    case RMW_SETRANGE: a->st = strops_setrange(&env, cp, &x, &y, &a->res); break;
    case RMW_INCRBYFLOAT: a->st = strops_incrbyfloat(&env, cp, &x, &a->res); break;
    case RMW_SETBIT: a->st = strops_setbit(&env, cp, &x, &y, &a->res); break;
    }
    if (a->st != HKV_OK || !a->res.store)
        return 0;
    *val = a->res.value;
    *vlen = a->res.value_len;
    return 1;
}

static int run_rmw(struct ocmd *c, const struct wire_slice *argv, enum rmw_op op)
{
    struct rmw a = {.c = c, .op = op, .argv = argv, .st = HKV_OK};
    int changed = 0;
    int rc = ocmd_rmw(c, argv[1], rmw_fn, &a, &changed);
    if (rc != HKV_OK)
        return rc;
    if (a.st == HKV_ENOMEM)
        return HKV_ENOMEM;
    if (a.st == HKV_OK && a.res.reply.type != STROPS_R_ERROR) {
        /* How Redis holds the result (OBJECT ENCODING): APPEND to a key and
         * SETRANGE change the string in place, and SETBIT even when the bit
         * was already so (raw); INCRBYFLOAT stores a new string, never an
         * integer; APPEND to a missing key stores its argument as SET would
         * (AUTO, what every new value starts as). */
        int enc = -1;
        switch (op) {
        case RMW_APPEND: enc = a.found ? LEDGER_ENC_RAW : -1; break;
        case RMW_SETRANGE: enc = changed ? LEDGER_ENC_RAW : -1; break;
        case RMW_SETBIT: enc = a.found || changed ? LEDGER_ENC_RAW : -1; break;
        case RMW_INCRBYFLOAT: enc = changed ? LEDGER_ENC_STR : -1; break;
        }
        if (enc >= 0)
            ocmd_set_enc(c, argv[1], enc);
    }
    if (strops_reply_encode(c->out, c->proto, &a.res.reply) != HKV_OK)
        return HKV_ENOMEM;
    return ocmd_done(c);
}

int ocmd_append_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                    uint32_t argc)
{
    return run_rmw(c, argv, RMW_APPEND);
}

int ocmd_setrange_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                      uint32_t argc)
{
    return run_rmw(c, argv, RMW_SETRANGE);
}

int ocmd_incrbyfloat_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                         uint32_t argc)
{
    return run_rmw(c, argv, RMW_INCRBYFLOAT);
}

int ocmd_setbit_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                    uint32_t argc)
{
    return run_rmw(c, argv, RMW_SETBIT);
}

/* ---- reads ---- */

/* The current value of key as strops takes it: *cp NULL when absent.
 * HKV_OK or HKV_EAGAIN. */
static int current(struct ocmd *c, struct wire_slice key, struct resp_slice *cs,
                   const struct resp_slice **cp)
{
    struct ledger_view v;
    int rc = ocmd_get(c, key, &v);
    if (rc == HKV_EAGAIN)
        return rc;
    *cs = (struct resp_slice){v.val, v.vlen};
    *cp = rc == HKV_OK ? cs : NULL;
    return HKV_OK;
}

static int reply(struct ocmd *c, hkv_status st, const struct strops_result *res)
{
    if (st == HKV_ENOMEM || strops_reply_encode(c->out, c->proto, &res->reply) != HKV_OK)
        return HKV_ENOMEM;
    return ocmd_done(c);
}

/* argv[from..argc) as strops slices: into small when they fit, else a new
 * array (*heap, to free).  NULL on allocation failure. */
static struct resp_slice *slices(const struct wire_slice *argv, uint32_t from, uint32_t argc,
                                 struct resp_slice *small, size_t nsmall,
                                 struct resp_slice **heap)
{
    uint32_t n = argc - from;
    struct resp_slice *s = small;
    *heap = NULL;
    if (n > nsmall) {
        s = *heap = malloc(n * sizeof(*s));
        if (s == NULL)
            return NULL;
    }
    for (uint32_t i = 0; i < n; i++)
        s[i] = ocmd_rs(argv[from + i]);
    return s;
}

int ocmd_getrange_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                      uint32_t argc)
{
    struct resp_slice cs, a = ocmd_rs(argv[2]), b = ocmd_rs(argv[3]);
    const struct resp_slice *cp;
    if (current(c, argv[1], &cs, &cp) != HKV_OK)
        return HKV_EAGAIN;
    struct strops_env env = env_of(c);
    struct strops_result res;
    return reply(c, strops_getrange(&env, cp, &a, &b, &res), &res);
}

int ocmd_getbit_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                    uint32_t argc)
{
    struct resp_slice cs, a = ocmd_rs(argv[2]);
    const struct resp_slice *cp;
    if (current(c, argv[1], &cs, &cp) != HKV_OK)
        return HKV_EAGAIN;
    struct strops_env env = env_of(c);
    struct strops_result res;
    return reply(c, strops_getbit(&env, cp, &a, &res), &res);
}

/* BITCOUNT (bitpos 0) and BITPOS (bitpos 1): the args after the key. */
static int bits(struct ocmd *c, const struct wire_slice *argv, uint32_t argc, int bitpos)
{
    struct resp_slice cs, small[8], *heap;
    const struct resp_slice *cp;
    if (current(c, argv[1], &cs, &cp) != HKV_OK)
        return HKV_EAGAIN;
    struct resp_slice *args = slices(argv, 2, argc, small, 8, &heap);
    if (args == NULL)
        return HKV_ENOMEM;
    struct strops_env env = env_of(c);
    struct strops_result res;
    int n = (int)(argc - 2);
    hkv_status st = bitpos ? strops_bitpos(&env, cp, args, n, &res)
                           : strops_bitcount(&env, cp, args, n, &res);
    free(heap);
    return reply(c, st, &res);
}

int ocmd_bitcount_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                      uint32_t argc)
{
    return bits(c, argv, argc, 0);
}

int ocmd_bitpos_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                    uint32_t argc)
{
    return bits(c, argv, argc, 1);
}

int ocmd_lcs_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                 uint32_t argc)
{
    /* two reads: a view stays valid across reads (they move nothing) */
    struct resp_slice as, bs, small[8], *heap;
    const struct resp_slice *ap, *bp;
    if (current(c, argv[1], &as, &ap) != HKV_OK || current(c, argv[2], &bs, &bp) != HKV_OK)
        return HKV_EAGAIN;
    struct resp_slice *args = slices(argv, 3, argc, small, 8, &heap);
    if (args == NULL)
        return HKV_ENOMEM;
    struct strops_env env = env_of(c);
    struct strops_result res;
    hkv_status st = strops_lcs(&env, ap, bp, args, (int)(argc - 3), &res);
    free(heap);
    return reply(c, st, &res);
}
