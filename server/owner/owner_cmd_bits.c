/*
 * owner_cmd_bits.c - the string commands whose Redis semantics live in
 * proto/strops.h: APPEND SETRANGE INCRBYFLOAT SETBIT (read-modify-write
 * through ledger_rmw, so the new value is computed from the value the
 * ledger holds at that instant) and GETRANGE SUBSTR GETBIT BITCOUNT BITPOS
 * LCS (reads); BITFIELD_RO (a read) is computed here, after Redis's
 * bitfieldGeneric.
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

/* ---- BITFIELD_RO ---- */

#define ERR_BFTYPE "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is " \
                   "not supported but i64 is."
#define ERR_BFOFFSET "ERR bit offset is not an integer or out of range"

/* Redis's getBitfieldTypeFromArgument: i1..i64 or u1..u63 (the word as a C
 * string).  0, or -1. */
static int bf_type(struct wire_slice w, int *sign, int *nbits)
{
    size_t n = w.len ? strnlen(w.p, w.len) : 0;
    int64_t v;
    if (n == 0 || (w.p[0] != 'i' && w.p[0] != 'u') || !ocmd_ll(wire_slice(w.p + 1, n - 1), &v))
        return -1;
    *sign = w.p[0] == 'i';
    if (v < 1 || v > (*sign ? 64 : 63))
        return -1;
    *nbits = (int)v;
    return 0;
}

/* Redis's getBitOffsetFromArgument with '#': "#N" is N fields of nbits. */
static int bf_offset(struct ocmd *c, struct wire_slice w, int nbits, uint64_t *out)
{
    int hash = w.len > 0 && w.p[0] == '#';
    int64_t v;
    if (!ocmd_ll(wire_slice(w.p + hash, w.len - (size_t)hash), &v))
        return -1;
    if (hash)
        v = (int64_t)((uint64_t)v * (uint64_t)nbits); /* wraps, as Redis's multiply does */
    if (v < 0 || (v >> 3) >= c->max_len)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* The nbits bits at offset of p[0..len), bits past the end read as 0. */
static uint64_t bf_get(const unsigned char *p, size_t len, uint64_t offset, int nbits)
{
    uint64_t v = 0;
    for (int i = 0; i < nbits; i++, offset++) {
        uint64_t byte = offset >> 3;
        v = (v << 1) | (byte < len ? (uint64_t)((p[byte] >> (7 - (offset & 7))) & 1) : 0);
    }
    return v;
}

/* One pass over the subcommands, as Redis's bitfieldGeneric reads them:
 * parse only (p == NULL: 0 or -1 with the error appended, *ngets counted),
 * or answer each GET over p[0..len). */
static int bf_walk(struct ocmd *c, const struct wire_slice *argv, uint32_t argc,
                   const unsigned char *p, size_t len, int64_t *ngets)
{
    int readonly = 1;
    for (uint32_t j = 2; j < argc; j++) {
        uint32_t rem = argc - j - 1;
        int get = ocmd_is(argv[j], "get") && rem >= 2;
        int write = (ocmd_is(argv[j], "set") || ocmd_is(argv[j], "incrby")) && rem >= 3;
        if (!get && !write) {
            if (ocmd_is(argv[j], "overflow") && rem >= 1) {
                j++;
                if (!ocmd_is(argv[j], "wrap") && !ocmd_is(argv[j], "sat") &&
                    !ocmd_is(argv[j], "fail")) {
                    ocmd_error(c, "ERR Invalid OVERFLOW type specified");
                    return -1;
                }
                continue;
            }
            ocmd_error(c, OCMD_ERR_SYNTAX);
            return -1;
        }
        int sign, nbits;
        uint64_t offset;
        int64_t value;
        if (bf_type(argv[j + 1], &sign, &nbits) != 0) {
            ocmd_error(c, ERR_BFTYPE);
            return -1;
        }
        if (bf_offset(c, argv[j + 2], nbits, &offset) != 0) {
            ocmd_error(c, ERR_BFOFFSET);
            return -1;
        }
        if (write && !ocmd_ll(argv[j + 3], &value)) {
            ocmd_error(c, OCMD_ERR_INT);
            return -1;
        }
        readonly &= !write;
        j += write ? 3 : 2;
        if (p == NULL) {
            *ngets += get;
            continue;
        }
        uint64_t v = bf_get(p, len, offset, nbits);
        if (sign && nbits < 64 && (v >> (nbits - 1)) & 1)
            v |= UINT64_MAX << nbits; /* sign-extended */
        ocmd_int(c, (int64_t)v); /* a u63 fits too */
    }
    if (!readonly) {
        ocmd_error(c, "ERR BITFIELD_RO only supports the GET subcommand");
        return -1;
    }
    return 0;
}

/* BITFIELD_RO key [GET type offset ...]: every subcommand checked before
 * the key is read, as Redis does; a missing key reads as zeros. */
int ocmd_bitfield_ro_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                         uint32_t argc)
{
    int64_t ngets = 0;
    if (bf_walk(c, argv, argc, NULL, 0, &ngets) != 0)
        return ocmd_done(c);
    struct resp_slice cs;
    const struct resp_slice *cp;
    if (current(c, argv[1], &cs, &cp) != HKV_OK)
        return HKV_EAGAIN;
    ocmd_array(c, ngets);
    const unsigned char *p = (const unsigned char *)(cp != NULL ? cp->p : "");
    bf_walk(c, argv, argc, p, cp != NULL ? cp->len : 0, &ngets);
    return ocmd_done(c);
}
