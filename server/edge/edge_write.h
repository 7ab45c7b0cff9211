/*
 * edge_write.h - the write commands: SET SETEX PSETEX SETNX GETSET GETDEL
 * GETEX MSET DEL UNLINK EXPIRE PEXPIRE EXPIREAT PEXPIREAT PERSIST INCR DECR
 * INCRBY DECRBY.  Each becomes an op (edge_op.h) that the owner orders,
 * numbers and retries; the colo cache is updated from the owner's answer
 * before the client hears it.
 */
#ifndef HKV_EDGE_WRITE_H
#define HKV_EDGE_WRITE_H

#include "proto/resp.h"
#include "server/edge/edge_conn.h"

#define EDGE_WRITE_HANDLERS(X)                                            \
    X(set) X(setex) X(psetex) X(setnx) X(getset) X(getdel) X(getex)       \
    X(mset) X(del) X(unlink) X(expire) X(pexpire) X(expireat)             \
    X(pexpireat) X(persist) X(incr) X(decr) X(incrby) X(decrby)
#define X(fn) void edge_cmd_##fn(struct conn *c, int argc, const struct resp_slice *argv);
EDGE_WRITE_HANDLERS(X)
#undef X

#endif
