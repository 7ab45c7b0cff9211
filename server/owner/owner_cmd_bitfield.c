/*
 * owner_cmd_bitfield.c - BITFIELD and BITFIELD_RO, after Redis 7.0's
 * bitfieldGeneric: every subcommand is parsed (and any error answered)
 * before the key is touched; a command with a SET or INCRBY is one
 * read-modify-write through ledger_rmw (the string grown with zeros to its
 * highest written bit, stored even when an OVERFLOW FAIL left every field
 * as it was, as Redis counts the change), one with GETs only a read.  The
 * arithmetic is proto/bitfield.h's.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/bitfield.h"
#include "server/owner/owner_cmd.h"

#define ERR_BFTYPE "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is " \
                   "not supported but i64 is."
#define ERR_BFOFFSET "ERR bit offset is not an integer or out of range"
#define ERR_TOOLONG "ERR string exceeds maximum allowed size (proto-max-bulk-len)"

enum bf_op_kind { BF_GET, BF_SET, BF_INCRBY };

struct bf_op {
    enum bf_op_kind kind;
    enum bf_overflow ow;         /* the OVERFLOW in force when it was read */
    struct bf_type t;
    uint64_t offset;
    int64_t arg;
    int64_t reply;
    int null;                    /* FAIL refused the write: a nil reply */
};

struct bf_cmd {
    struct ocmd *c;
    struct bf_op *ops;
    uint32_t n;
    int writes;
    uint64_t top;                /* the highest bit a write touches */
};

/* Redis's getBitOffsetFromArgument with '#': "#N" is N fields of nbits. */
static int parse_offset(struct ocmd *c, struct wire_slice w, int nbits, uint64_t *out)
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

/* The subcommands into b->ops (argc / 3 + 1 of them bound their count).  0, or -1 with
 * the error answered. */
static int parse(struct bf_cmd *b, const struct wire_slice *argv, uint32_t argc, int ro)
{
    struct ocmd *c = b->c;
    enum bf_overflow ow = BF_WRAP;
    for (uint32_t j = 2; j < argc; j++) {
        uint32_t rem = argc - j - 1;
        struct bf_op op = {.ow = ow};
        if (ocmd_is(argv[j], "get") && rem >= 2) {
            op.kind = BF_GET;
        } else if (ocmd_is(argv[j], "set") && rem >= 3) {
            op.kind = BF_SET;
        } else if (ocmd_is(argv[j], "incrby") && rem >= 3) {
            op.kind = BF_INCRBY;
        } else if (ocmd_is(argv[j], "overflow") && rem >= 1) {
            j++;
            if (ocmd_is(argv[j], "wrap"))
                ow = BF_WRAP;
            else if (ocmd_is(argv[j], "sat"))
                ow = BF_SAT;
            else if (ocmd_is(argv[j], "fail"))
                ow = BF_FAIL;
            else
                return ocmd_error(c, "ERR Invalid OVERFLOW type specified"), -1;
            continue;
        } else {
            return ocmd_error(c, OCMD_ERR_SYNTAX), -1;
        }
        if (bf_parse_type(argv[j + 1].p, argv[j + 1].len, &op.t) != 0)
            return ocmd_error(c, ERR_BFTYPE), -1;
        if (parse_offset(c, argv[j + 2], op.t.bits, &op.offset) != 0)
            return ocmd_error(c, ERR_BFOFFSET), -1;
        if (op.kind != BF_GET) {
            b->writes = 1;
            if (op.offset + (uint64_t)op.t.bits - 1 > b->top)
                b->top = op.offset + (uint64_t)op.t.bits - 1;
            if (!ocmd_ll(argv[j + 3], &op.arg))
                return ocmd_error(c, OCMD_ERR_INT), -1;
        }
        b->ops[b->n++] = op;
        j += op.kind == BF_GET ? 2 : 3;
    }
    if (ro && b->writes)
        return ocmd_error(c, "ERR BITFIELD_RO only supports the GET subcommand"), -1;
    return 0;
}

/* Every op over p[0..len) in order, the writes applied in place. */
static void run(struct bf_cmd *b, unsigned char *p, size_t len)
{
    for (uint32_t i = 0; i < b->n; i++) {
        struct bf_op *op = &b->ops[i];
        int64_t old = bf_read(p, len, op->offset, op->t), v = 0;
        if (op->kind == BF_GET) {
            op->reply = old;
            continue;
        }
        int over = op->kind == BF_SET ? bf_add(op->t, op->arg, 0, op->ow, &v)
                                      : bf_add(op->t, old, op->arg, op->ow, &v);
        if (over && op->ow == BF_FAIL) {
            op->null = 1;
            continue;
        }
        bf_write(p, op->offset, op->t, v);
        op->reply = op->kind == BF_SET ? old : v;
    }
}

static int reply(struct bf_cmd *b)
{
    ocmd_array(b->c, b->n);
    for (uint32_t i = 0; i < b->n; i++) {
        if (b->ops[i].null)
            ocmd_null(b->c);
        else
            ocmd_int(b->c, b->ops[i].reply);
    }
    return ocmd_done(b->c);
}

/* ledger_rmw's callback: the grown copy in c->work, the ops run over it. */
static int rmw_fn(void *arg, const char *cur, size_t curlen, int found, const char **val,
                  size_t *vlen)
{
    struct bf_cmd *b = arg;
    size_t need = (size_t)(b->top >> 3) + 1, len = found && curlen > need ? curlen : need;
    if ((int64_t)len > b->c->max_len)
        return HKV_ETOOBIG;
    buf_reset(&b->c->work);
    if (buf_reserve(&b->c->work, len, 0) != HKV_OK)
        return HKV_ENOMEM;
    unsigned char *p = (unsigned char *)b->c->work.data;
    size_t have = found ? curlen : 0;
    if (have > 0)
        memcpy(p, cur, have);
    memset(p + have, 0, len - have);
    run(b, p, len);
    *val = (const char *)p;
    *vlen = len;
    return 1;
}

static int bitfield(struct ocmd *c, const struct wire_slice *argv, uint32_t argc, int ro)
{
    struct bf_cmd b = {.c = c, .ops = calloc(argc / 3 + 1, sizeof(*b.ops))};
    int rc = HKV_OK;
    if (b.ops == NULL) {
        rc = HKV_ENOMEM;
    } else if (parse(&b, argv, argc, ro) != 0) {
        rc = ocmd_done(c);
    } else if (!b.writes) {
        struct ledger_view v;
        rc = ocmd_get(c, argv[1], &v);
        if (rc != HKV_EAGAIN) {
            int found = rc == HKV_OK;
            run(&b, (unsigned char *)(found ? v.val : ""), found ? v.vlen : 0);
            rc = reply(&b);
        }
    } else {
        int changed = 0;
        rc = ocmd_rmw(c, argv[1], rmw_fn, &b, &changed);
        if (rc == HKV_ETOOBIG) {
            ocmd_error(c, ERR_TOOLONG);
            rc = ocmd_done(c);
        } else if (rc == HKV_OK) {
            if (changed) /* a string Redis grew or changed in place: "raw" */
                ocmd_set_enc(c, argv[1], LEDGER_ENC_RAW);
            rc = reply(&b);
        }
    }
    free(b.ops);
    return rc;
}

int ocmd_bitfield_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                      uint32_t argc)
{
    return bitfield(c, argv, argc, 0);
}

int ocmd_bitfield_ro_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                         uint32_t argc)
{
    return bitfield(c, argv, argc, 1);
}
