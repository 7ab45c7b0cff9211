/*
 * edge_write_op.h - the write ops: one per write command, its arguments
 * already read (edge_write.c), sent to the key's owner as a numbered
 * request, retried until write-deadline, answered in the client's reply
 * order.  Each function either starts the op or writes the error reply.
 */
#ifndef HKV_EDGE_WRITE_OP_H
#define HKV_EDGE_WRITE_OP_H

#include <stdint.h>

#include "proto/cmd.h"
#include "proto/resp.h"
#include "proto/wire.h"
#include "server/edge/edge_conn.h"
#include "server/edge/edge_op.h"

/* SET SETEX PSETEX SETNX GETSET: key = val with exp and WIRE_SET_* flags. */
void write_set(struct conn *c, enum cmd_id cmd, const struct resp_slice *key,
               const struct resp_slice *val, struct wire_expiry exp, uint32_t wflags);
/* MSET: npairs key/value pairs (one SET per distinct key, the last value). */
void write_mset(struct conn *c, int npairs, const struct resp_slice *pairs);
/* DEL / UNLINK of n keys: the number deleted. */
void write_del(struct conn *c, enum cmd_id cmd, int n, const struct resp_slice *keys);
/* One key, an INT answer: EXPIRE* (exp, WIRE_EXPIRE_* flags), PERSIST,
 * INCRBY (delta). */
void write_single(struct conn *c, enum cmd_id cmd, uint8_t type, const struct resp_slice *key,
                  struct wire_expiry exp, uint32_t wflags, int64_t delta);
/* GETDEL: the old value, the key deleted (one owner operation). */
void write_getdel(struct conn *c, const struct resp_slice *key);
/* GETEX with an option: GET, then EXPIRE (exp) or PERSIST (exp NONE).
 * bad_exp (static text, or NULL): the expiry was invalid; a missing key is
 * still nil, a present one gets this error and is not changed (Redis's
 * order). */
void write_getex(struct conn *c, const struct resp_slice *key, struct wire_expiry exp,
                 const char *bad_exp);

/* For another front door's write families (HTTP PUT and DELETE,
 * edge_http_write.c): the same requests, the same cache update, only the
 * reply in another protocol.  A family's args block begins with a struct
 * write_args. */
/* A write op's arguments and results (in the op's args block). */
struct write_args {
    enum cmd_id cmd;
    struct wire_expiry exp;
    uint32_t wflags;              /* WIRE_SET_* / WIRE_EXPIRE_* */
    int64_t delta;                /* INCRBY */
    int step;                     /* GETEX: 0 the read, 1 the write */
    int has_old;                  /* SET ... GET, GETDEL: the old value is in op->res */
    int64_t acc;                  /* applied (SET), the sum of INT answers, found (GETEX) */
    const char *bad_exp;          /* GETEX: the (static) error for an invalid expiry, or NULL */
};
_Static_assert(sizeof(struct write_args) <= OP_ARGS_MAX, "write_args too large for an op");
/* Encodes r's request (SET, DEL ... from its write_args); an op_family's encode. */
int write_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                 const struct wire_slice *keys, struct wire_rid rid);
/* The colo cache learns a numbered write's answer m (before the client
 * hears it: read-your-writes); every answer of a write family calls it. */
void write_wrote(struct op *op, struct oreq *r, const struct wire_msg *m);

#endif
