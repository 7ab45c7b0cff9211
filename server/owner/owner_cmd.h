/*
 * owner_cmd.h - the owner's Redis command handlers and the context they run
 * in.  Private to server/owner (and the owner's unit tests).
 *
 * A CALL or an EXEC (proto/wire.h) carries Redis commands as the client sent
 * them; the owner runs each against its ledger and answers the RESP bytes
 * Redis 7.0 would, for the client's protocol (2 or 3).  A command is declared
 * once, in proto/cmd.h (name, arity, key positions, flags: CMD_F_WRITE and
 * CMD_F_ALLKEYS make it a write here); the owner's table (owner_cmds.c) is
 * indexed by its id and holds only the handler.  owner_call.c does
 * everything around a handler (routing, residency, retries, commits,
 * pushes); a handler only reads and writes its keys through the helpers
 * below and appends its reply.
 *
 * Contract of a handler (the table's, and the edge's view of it):
 *   - argv[0] is the name as sent; arity has been checked (Redis's
 *     "wrong number of arguments" is the caller's); every key named by the
 *     row's key positions routes to this owner and is resident.
 *   - it appends exactly one RESP reply to c->out (Redis's error replies
 *     included: "ERR syntax error", "ERR value is not an integer or out of
 *     range" ... byte-identical to Redis 7.0) and returns HKV_OK;
 *   - every key it changes goes through an ocmd_* write helper, which notes
 *     the key and the version the ledger gave it (c->changes); a command
 *     that changes nothing (SET NX refused, DEL of a missing key, RENAME k k)
 *     notes nothing, as Redis signals no modification;
 *   - it returns HKV_ENOMEM, HKV_ETOOBIG (its reply would pass c->max_reply:
 *     a reply must fit in one owner-link frame), or HKV_EAGAIN with
 *     c->missing set when a key it
 *     needs has left memory meanwhile (only possible under maxmemory,
 *     evicted by a write of the same command or transaction): then whatever
 *     it appended is dropped by the caller, and what it wrote stays written.
 *   - values read (struct ledger_view) are valid until its next write
 *     helper call: encode them first, as Redis replies before it changes.
 * All handlers of one command or one transaction see one clock reading
 * (c->now), as Redis's commands see one time snapshot.
 */
#ifndef HKV_OWNER_CMD_H
#define HKV_OWNER_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/cmd.h"
#include "proto/resp.h"
#include "proto/wire.h"
#include "storage/ledger.h"

struct owner;
struct ocmd;

/* A handler: d is the command's declaration (d->id tells the commands that
 * share a handler apart, d->name is Redis's name in its error texts). */
typedef int (*ocmd_fn)(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv,
                       uint32_t argc);

/* The owner's row of a command: nothing proto/cmd.h says. */
struct ocmd_row {
    ocmd_fn fn;              /* NULL: the owner does not run this command */
};

/* Indexed by cmd_id. */
extern const struct ocmd_row ocmd_table[CMD_COUNT];

/* 1 if the owner treats d as a write (recorded, retried once). */
static inline int ocmd_writes(const struct cmd_def *d)
{
    return (d->flags & (CMD_F_WRITE | CMD_F_ALLKEYS)) != 0;
}

/* The context of one command or one transaction.  Embed it; ocmd_init and
 * ocmd_deinit. */
struct ocmd {
    struct owner *o;
    struct ledger *ledger;
    struct ledger_clock now;
    int proto;                   /* 2 or 3 */
    int64_t max_len;             /* proto-max-bulk-len */
    struct hkv_buf *out;         /* replies are appended here (the caller's) */
    size_t max_reply;            /* ocmd_bulk refuses to grow out past it (HKV_ETOOBIG) */
    struct hkv_buf work;         /* strops scratch: new values, LCS tables */
    struct wire_watch *changes;  /* each key changed and the version it holds now, in
                                    the order made (keys into the request, valid for
                                    the loop turn); ocmd_changes_final dedupes */
    uint32_t nchanges, cap;
    int status;                  /* HKV_OK, or the first failure of a reply helper:
                                    HKV_ENOMEM, HKV_ETOOBIG (past max_reply) */
    struct wire_slice missing;   /* HKV_EAGAIN: the key that is not resident */
    hkv_stamp flushed;           /* ocmd_flush: the flush's version (0: none) */
};

/* ---- owner_notify_cmd.c ---- */
/* The keyspace events of command d (argv, argc), which changed the n keys
 * of ch (its part of the job's change list): noted with owner_notify. */
void owner_notify_cmd(struct owner *o, const struct cmd_def *d, const struct wire_slice *argv,
                      uint32_t argc, const struct wire_watch *ch, uint32_t n);

/* ---- owner_idem.c: an HTTP write's Idempotency-Key record ---- */
/* 1 if cmd is the edge's "hkv.idem record-key fingerprint ttl-ms" word. */
int owner_idem_is(const struct wire_cmd *cmd);
/* The key the record is of (inside idem's record key). */
struct wire_slice owner_idem_target(const struct wire_cmd *idem);
/* Before the job runs (its keys resident): 1 with the reply appended to
 * reply (the record's, or the refusal of another request's), 0 (no record:
 * run it), or an HKV_ error. */
int owner_idem_replay(struct ocmd *c, const struct wire_cmd *idem, struct hkv_buf *reply);
/* Element 0 of a first run's reply: [0, the version the target holds now]. */
int owner_idem_head(struct ocmd *c, const struct wire_cmd *idem, struct hkv_buf *reply);
/* The whole reply kept under the record key with its TTL (noted in c's
 * change list).  HKV_OK or an HKV_ error (the job's writes stay applied). */
int owner_idem_keep(struct ocmd *c, const struct wire_cmd *idem, const struct hkv_buf *reply);

/* ---- owner_cmds.c: the table ---- */

/* The command named name[0..len) (any case) if the owner runs it, or NULL. */
const struct cmd_def *ocmd_lookup(const char *name, size_t len);
/* 1 if argc words (the name included) satisfy d's arity. */
static inline int ocmd_arity_ok(const struct cmd_def *d, uint32_t argc)
{
    return cmd_arity_ok(d, (int)argc);
}
/* The number of keys of argv under d (arity already satisfied); key i is
 * argv[ocmd_key_pos(d, argc, i)]. */
static inline uint32_t ocmd_key_count(const struct cmd_def *d, uint32_t argc)
{
    int first, last;
    return (uint32_t)cmd_key_range(d, (int)argc, &first, &last);
}
static inline uint32_t ocmd_key_pos(const struct cmd_def *d, uint32_t argc, uint32_t i)
{
    (void)argc;
    return (uint32_t)d->first_key + i * (uint32_t)d->step;
}
/* Appends Redis's unknown-command error for argv ("ERR unknown command
 * 'x', with args beginning with: 'a' 'b' "), or its arity error for d
 * ("ERR wrong number of arguments for 'get' command"). */
void ocmd_reply_unknown(struct hkv_buf *out, const struct wire_slice *argv, uint32_t argc);
void ocmd_reply_arity(struct hkv_buf *out, const struct cmd_def *d);

/* ---- owner_cmd_util.c: the context and the helpers handlers use ---- */

void ocmd_init(struct ocmd *c, struct owner *o, int proto, struct hkv_buf *out);
void ocmd_deinit(struct ocmd *c);
/* Sorts the change list and keeps one entry per key, its newest version. */
void ocmd_changes_final(struct ocmd *c);

/* 1 if a and b are the same bytes. */
int ocmd_same(struct wire_slice a, struct wire_slice b);
/* Reads key: HKV_OK (v filled, live), HKV_ENOENT (missing), HKV_EAGAIN (not
 * resident: c->missing set). */
int ocmd_get(struct ocmd *c, struct wire_slice key, struct ledger_view *v);
/* SET: flags LEDGER_NX/XX/GET, exp as ledger_set.  *applied 1 if written
 * (noted); with LEDGER_GET, *old as ledger_set.  HKV_OK (also when NX/XX
 * refused it), HKV_EAGAIN, HKV_ENOMEM, HKV_EINVAL (a bad expiry: the
 * handler's mistake). */
int ocmd_set(struct ocmd *c, struct wire_slice key, struct wire_slice val, unsigned flags,
             struct ledger_expiry exp, struct ledger_view *old, int *applied);
/* DEL of one key: a live key is deleted (noted, *existed 1, *old its value
 * when old is not NULL); a missing one is left alone.  HKV_OK, HKV_EAGAIN,
 * HKV_ENOMEM. */
int ocmd_del(struct ocmd *c, struct wire_slice key, int *existed, struct ledger_view *old);
/* Sets a live key's deadline to unix ms `when` (deletes it when that is not
 * after now).  HKV_OK (*applied 0: no live key), HKV_EAGAIN. */
int ocmd_expire_at(struct ocmd *c, struct wire_slice key, int64_t when, int *applied);
/* PERSIST: HKV_OK with *changed, HKV_EAGAIN. */
int ocmd_persist(struct ocmd *c, struct wire_slice key, int *changed);
/* INCRBY: HKV_OK (*result), HKV_EINVAL (not an integer or overflow: nothing
 * applied), HKV_EAGAIN, HKV_ENOMEM. */
int ocmd_incrby(struct ocmd *c, struct wire_slice key, int64_t delta, int64_t *result);
/* ledger_rmw on key with fn (see ledger.h), noting the change.  HKV_OK with
 * *changed, HKV_EAGAIN, HKV_ENOMEM, or fn's negative status. */
int ocmd_rmw(struct ocmd *c, struct wire_slice key, ledger_rmw_fn fn, void *arg, int *changed);
/* ledger_move src -> dst (LEDGER_MOVE_NX, LEDGER_MOVE_COPY), noting both
 * keys when applied.  As ledger_move: HKV_OK with *applied, HKV_ENOENT (no
 * src), HKV_EINVAL (COPY k k), HKV_EAGAIN, HKV_ENOMEM. */
int ocmd_move(struct ocmd *c, struct wire_slice src, struct wire_slice dst, unsigned flags,
              int *applied);

/* How a live key's value was made, for OBJECT (storage/ledger.h enum
 * ledger_enc); not a write: no version, nothing noted. */
void ocmd_set_enc(struct ocmd *c, struct wire_slice key, int enc);

/* FLUSHALL: every key of the owner goes (ledger_flush) and the flush is
 * handed to the persister (owner_persist_flush); c->flushed is its version,
 * which the caller answers with (the change list's one entry: the empty key
 * at that version, which every key now reports) once the flush committed.
 * HKV_OK. */
int ocmd_flush(struct ocmd *c);

/* Reply helpers: append to c->out in c->proto's form; an allocation
 * failure is kept in c->status (handlers return ocmd_done(c)). */
void ocmd_ok(struct ocmd *c);
void ocmd_simple(struct ocmd *c, const char *s);
void ocmd_error(struct ocmd *c, const char *text);   /* without '-' and CRLF */
void ocmd_errorf(struct ocmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ocmd_int(struct ocmd *c, int64_t v);
void ocmd_bulk(struct ocmd *c, const void *p, size_t n);
void ocmd_null(struct ocmd *c);
void ocmd_array(struct ocmd *c, int64_t n);
static inline int ocmd_done(const struct ocmd *c) { return c->status; }

/* Redis's errors shared by several commands. */
#define OCMD_ERR_INT "ERR value is not an integer or out of range"
#define OCMD_ERR_SYNTAX "ERR syntax error"
/* "ERR invalid expire time in '<name>' command" */
void ocmd_error_expire(struct ocmd *c, const struct cmd_def *d);

/* Why an INCRBY the ledger refused (HKV_EINVAL) was refused, as Redis tells
 * it: v the key's value (NULL: none), not an integer, or else the sum would
 * overflow.  The typed INCRBY (owner_ops.c) answers with the same text. */
const char *ocmd_incr_refusal(const struct ledger_view *v);

/* Argument parsing as Redis: an int64 by string2ll (1 and *out, or 0); an
 * option word compared as Redis's strcasecmp on a C string (the bytes up to
 * a NUL). */
int ocmd_ll(struct wire_slice s, int64_t *out);
int ocmd_is(struct wire_slice s, const char *word);
static inline struct resp_slice ocmd_rs(struct wire_slice s)
{
    return (struct resp_slice){s.p, s.len};
}

/* ---- handlers, by family ---- */

/* Which handler runs each command the owner runs: X(cmd id, handler) for
 * the handler ocmd_<handler>_cmd, one line per command (a handler shared by
 * several commands tells them apart by d->id).  This one list makes both
 * the prototypes below and the table (owner_cmds.c), so a new command the
 * owner runs is a line here and its handler in its family's file. */
#define OCMD_ROWS(X)                                                          \
    /* owner_cmd_str.c: plain strings */                                     \
    X(GET, get) X(SET, set) X(SETNX, setnx) X(SETEX, setex) X(PSETEX, setex)  \
    X(GETSET, getset) X(GETDEL, getdel) X(GETEX, getex) X(MGET, mget)         \
    X(MSET, mset) X(MSETNX, mset) X(STRLEN, strlen) X(INCR, incr)             \
    X(DECR, incr) X(INCRBY, incr) X(DECRBY, incr)                             \
    /* owner_cmd_bits.c: strings computed by proto/strops */                \
    X(APPEND, append) X(SETRANGE, setrange) X(GETRANGE, getrange)             \
    X(SUBSTR, getrange) X(INCRBYFLOAT, incrbyfloat) X(SETBIT, setbit)         \
    X(GETBIT, getbit) X(BITCOUNT, bitcount) X(BITPOS, bitpos) X(LCS, lcs)     \
    /* owner_cmd_bitfield.c */                                               \
    X(BITFIELD, bitfield) X(BITFIELD_RO, bitfield_ro)                         \
    /* owner_cmd_bitop.c */                                                  \
    X(BITOP, bitop)                                                           \
    /* owner_cmd_key.c: the keyspace */                                      \
    X(DEL, del) X(UNLINK, del) X(EXISTS, exists) X(TOUCH, exists)             \
    X(TYPE, type) X(EXPIRE, expire) X(PEXPIRE, expire) X(EXPIREAT, expire)    \
    X(PEXPIREAT, expire) X(PERSIST, persist) X(TTL, ttl) X(PTTL, ttl)         \
    X(EXPIRETIME, ttl) X(PEXPIRETIME, ttl) X(RENAME, rename)                  \
    X(RENAMENX, rename) X(COPY, copy) X(FLUSHALL, flushall)                   \
    X(FLUSHDB, flushall)                                                      \
    /* owner_cmd_obj.c */                                                    \
    X(OBJECT, object)                                                         \
    /* owner_cmd_ver.c: versions (Garnet's etags) */                         \
    X(GETWITHETAG, getwithetag) X(GETIFNOTMATCH, getifnotmatch)               \
    X(SETIFMATCH, setifmatch)

/* A handler shared by several commands is declared once per command: the
 * same prototype again, which C allows. */
#define OCMD_PROTO(id, fn)                                                     \
    int ocmd_##fn##_cmd(struct ocmd *c, const struct cmd_def *d, const struct wire_slice *argv, \
                        uint32_t argc);
OCMD_ROWS(OCMD_PROTO)
#undef OCMD_PROTO

#endif
