/*
 * owner_cmd_bitop.c - BITOP AND|OR|XOR|NOT destkey key [key ...] in the
 * owner's table (owner_cmd.h), Redis 7.0's bitopCommand: a missing key is
 * a zero-filled string as long as the longest source, the result is that
 * long and replaces destkey (its deadline goes, as SET's); when every
 * source is missing, destkey is deleted and the reply is 0.  The keys
 * share an owner (the edge answers CROSSSLOT otherwise), so the reads and
 * the write are one step of the owner's loop.
 */
#include <stdlib.h>
#include <string.h>

#include "server/owner/owner_cmd.h"

enum bitop { BITOP_AND, BITOP_OR, BITOP_XOR, BITOP_NOT };

static int op_of(struct wire_slice w, enum bitop *op)
{
    static const char *const names[] = {"and", "or", "xor", "not"};
    for (int i = 0; i < 4; i++)
        if (ocmd_is(w, names[i])) {
            *op = (enum bitop)i;
            return 0;
        }
    return -1;
}

/* dst[0..n) = op over the sources (each src[i] of len[i] bytes, zero past its end). */
static void compute(unsigned char *dst, size_t n, enum bitop op, const struct ledger_view *src,
                    uint32_t nsrc)
{
    for (size_t j = 0; j < n; j++) {
        const struct ledger_view *s = &src[0];
        unsigned char acc = j < s->vlen ? (unsigned char)s->val[j] : 0;
        if (op == BITOP_NOT) {
            dst[j] = (unsigned char)~acc;
            continue;
        }
        for (uint32_t i = 1; i < nsrc; i++) {
            unsigned char b = j < src[i].vlen ? (unsigned char)src[i].val[j] : 0;
            acc = op == BITOP_AND ? acc & b : op == BITOP_OR ? acc | b : acc ^ b;
        }
        dst[j] = acc;
    }
}

int ocmd_bitop_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                   uint32_t argc)
{
    enum bitop op;
    if (op_of(argv[1], &op) != 0) {
        ocmd_error(c, OCMD_ERR_SYNTAX);
        return ocmd_done(c);
    }
    uint32_t nsrc = argc - 3;
    if (op == BITOP_NOT && nsrc != 1) {
        ocmd_error(c, "ERR BITOP NOT must be called with a single source key.");
        return ocmd_done(c);
    }
    /* every source read before the write: a view stays valid across reads */
    struct ledger_view small[8], *src = nsrc <= 8 ? small : calloc(nsrc, sizeof(*src));
    if (src == NULL)
        return HKV_ENOMEM;
    size_t maxlen = 0;
    int rc = HKV_OK;
    for (uint32_t i = 0; i < nsrc && rc != HKV_EAGAIN; i++) {
        rc = ocmd_get(c, argv[3 + i], &src[i]);
        if (rc == HKV_ENOENT)
            src[i].vlen = 0;
        else if (rc == HKV_OK && src[i].vlen > maxlen)
            maxlen = src[i].vlen;
    }
    unsigned char *res = rc != HKV_EAGAIN && maxlen > 0 ? malloc(maxlen) : NULL;
    if (rc != HKV_EAGAIN && maxlen > 0 && res == NULL)
        rc = HKV_ENOMEM;
    else if (res != NULL)
        compute(res, maxlen, op, src, nsrc);
    if (src != small)
        free(src);
    if (rc == HKV_EAGAIN || rc == HKV_ENOMEM)
        return rc;
    int done;
    if (maxlen == 0) {
        rc = ocmd_del(c, argv[2], &done, NULL);
    } else {
        rc = ocmd_set(c, argv[2], wire_slice((const char *)res, maxlen), 0,
                      (struct ledger_expiry){LEDGER_EXP_NONE, 0}, NULL, &done);
        free(res);
        if (rc == HKV_OK)
            ocmd_set_enc(c, argv[2], LEDGER_ENC_RAW); /* Redis builds it as a raw string */
    }
    if (rc != HKV_OK)
        return rc;
    ocmd_int(c, (int64_t)maxlen);
    return ocmd_done(c);
}
