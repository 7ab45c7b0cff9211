/*
 * cmd.h - the command table: the one place a client command is declared
 * (its name, arity, key positions and flags).
 *
 * Both protocols decode into a request (argc/argv) and dispatch through this
 * table by id; the handlers live with the process that runs them, in arrays
 * indexed by cmd_id that hold a handler and nothing this table says: the
 * edge's registry (server/edge/edge_registry.c: handler and family) and, for
 * commands an owner runs from their words (CALL, EXEC), the owner's handler
 * table (server/owner/owner_cmds.c, made from owner_cmd.h's OCMD_ROWS).  The
 * unit suite cmd_table checks that every id has an edge row and every
 * owner-run write an owner handler.
 *
 * Arity follows Redis: N means exactly N words including the name, -N means
 * at least N.  Keys are described by first/last/step as in Redis's COMMAND
 * reply (last -1 = the last argument).
 *
 * Adding a command: a row here, its edge handler in its family's file and a
 * row in edge_registry.c; a command an owner runs from its words (the CALL
 * family: edge_call.c needs nothing new) gets an OCMD_ROWS entry in
 * server/owner/owner_cmd.h and its handler in an owner_cmd_*.c file
 * (BITFIELD_RO was added so: 4 files, 3 of them one line).  Redis's COMMAND
 * INFO/DOCS entry comes from its name in scripts/gen_cmdinfo.py's NAMES (the
 * script regenerates server/edge/edge_cmdinfo.c), and the differential test
 * sends it once tests/diff/gen.py has a generator for it.
 */
#ifndef HKV_CMD_H
#define HKV_CMD_H

#include <stddef.h>
#include <stdint.h>

#define CMD_F_READ    0x01  /* reads keys: goes through the read path */
#define CMD_F_WRITE   0x02  /* writes keys: goes to the owner's write link */
#define CMD_F_ADMIN   0x04  /* server administration */
#define CMD_F_FAST    0x08  /* O(1), never waits */
#define CMD_F_NOAUTH  0x10  /* allowed before authentication */
#define CMD_F_CONN    0x20  /* about the connection itself */
#define CMD_F_AUTH    0x40  /* checks a password (AUTH): the rate limiter's target
                               for guessing; counts as a connection command */
#define CMD_F_THROTTLE 0x100 /* CL.THROTTLE: an application's rate limit, answered by
                                the edge; any user allowed +@read or +@write may run it */
#define CMD_F_ALLKEYS 0x80  /* about every key of every owner (FLUSHALL): the owner
                               runs it as a write of its own, never inside EXEC */

/* X(ID, name, arity, flags, first_key, last_key, step) */
#define CMD_LIST(X)                                                     \
    X(PING, "ping", -1, CMD_F_FAST | CMD_F_NOAUTH | CMD_F_CONN, 0, 0, 0) \
    X(ECHO, "echo", 2, CMD_F_FAST | CMD_F_CONN, 0, 0, 0)                 \
    X(HELLO, "hello", -1, CMD_F_FAST | CMD_F_NOAUTH | CMD_F_CONN, 0, 0, 0) \
    X(SELECT, "select", 2, CMD_F_FAST | CMD_F_CONN, 0, 0, 0)             \
    X(AUTH, "auth", -2, CMD_F_FAST | CMD_F_NOAUTH | CMD_F_CONN | CMD_F_AUTH, 0, 0, 0) \
    X(QUIT, "quit", -1, CMD_F_FAST | CMD_F_NOAUTH | CMD_F_CONN, 0, 0, 0) \
    X(RESET, "reset", 1, CMD_F_FAST | CMD_F_NOAUTH | CMD_F_CONN, 0, 0, 0) \
    X(COMMAND, "command", -1, CMD_F_CONN, 0, 0, 0)                       \
    X(CLIENT, "client", -2, CMD_F_CONN, 0, 0, 0)                         \
    X(CONFIG, "config", -2, CMD_F_ADMIN, 0, 0, 0)                        \
    X(ACL, "acl", -2, CMD_F_ADMIN, 0, 0, 0)                              \
    X(INFO, "info", -1, CMD_F_CONN, 0, 0, 0)                             \
    X(TIME, "time", 1, CMD_F_FAST | CMD_F_CONN, 0, 0, 0)                 \
    X(LASTSAVE, "lastsave", 1, CMD_F_FAST | CMD_F_ADMIN, 0, 0, 0)        \
    X(DBSIZE, "dbsize", 1, CMD_F_READ, 0, 0, 0)                          \
    X(HOTKEYS, "hotkeys", -1, CMD_F_CONN, 0, 0, 0)                       \
    X(CL_THROTTLE, "cl.throttle", -5, CMD_F_THROTTLE | CMD_F_FAST, 1, 1, 1) \
    /* data commands: answered by owners, asynchronously (edge_read.c,  \
     * edge_write.c, edge_scan.c); Redis's arity and key positions */    \
    X(GET, "get", 2, CMD_F_READ | CMD_F_FAST, 1, 1, 1)                   \
    X(MGET, "mget", -2, CMD_F_READ | CMD_F_FAST, 1, -1, 1)               \
    X(EXISTS, "exists", -2, CMD_F_READ | CMD_F_FAST, 1, -1, 1)           \
    X(STRLEN, "strlen", 2, CMD_F_READ | CMD_F_FAST, 1, 1, 1)             \
    X(TYPE, "type", 2, CMD_F_READ | CMD_F_FAST, 1, 1, 1)                 \
    X(TTL, "ttl", 2, CMD_F_READ | CMD_F_FAST, 1, 1, 1)                   \
    X(PTTL, "pttl", 2, CMD_F_READ | CMD_F_FAST, 1, 1, 1)                 \
    X(SCAN, "scan", -2, CMD_F_READ, 0, 0, 0)                             \
    X(SET, "set", -3, CMD_F_WRITE, 1, 1, 1)                              \
    X(SETEX, "setex", 4, CMD_F_WRITE, 1, 1, 1)                           \
    X(PSETEX, "psetex", 4, CMD_F_WRITE, 1, 1, 1)                         \
    X(SETNX, "setnx", 3, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)              \
    X(GETSET, "getset", 3, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)            \
    X(GETDEL, "getdel", 2, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)            \
    X(GETEX, "getex", -2, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)             \
    X(MSET, "mset", -3, CMD_F_WRITE, 1, -1, 2)                           \
    X(DEL, "del", -2, CMD_F_WRITE, 1, -1, 1)                             \
    X(UNLINK, "unlink", -2, CMD_F_WRITE | CMD_F_FAST, 1, -1, 1)          \
    X(EXPIRE, "expire", -3, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)           \
    X(PEXPIRE, "pexpire", -3, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)         \
    X(EXPIREAT, "expireat", -3, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)       \
    X(PEXPIREAT, "pexpireat", -3, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)     \
    X(PERSIST, "persist", 2, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)          \
    X(INCR, "incr", 2, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)                \
    X(DECR, "decr", 2, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)                \
    X(INCRBY, "incrby", 3, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)            \
    X(DECRBY, "decrby", 3, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)          \
    /* run by the key's owner from its own command table (WIRE_CALL,     \
     * edge_call.c); several keys must share an owner */                 \
    X(APPEND, "append", 3, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)            \
    X(SETRANGE, "setrange", 4, CMD_F_WRITE, 1, 1, 1)                     \
    X(SETBIT, "setbit", 4, CMD_F_WRITE, 1, 1, 1)                         \
    X(INCRBYFLOAT, "incrbyfloat", 3, CMD_F_WRITE | CMD_F_FAST, 1, 1, 1)  \
    X(MSETNX, "msetnx", -3, CMD_F_WRITE, 1, -1, 2)                       \
    X(RENAME, "rename", 3, CMD_F_WRITE, 1, 2, 1)                         \
    X(RENAMENX, "renamenx", 3, CMD_F_WRITE | CMD_F_FAST, 1, 2, 1)        \
    X(COPY, "copy", -3, CMD_F_WRITE, 1, 2, 1)                            \
    X(TOUCH, "touch", -2, CMD_F_READ | CMD_F_FAST, 1, -1, 1)             \
    X(EXPIRETIME, "expiretime", 2, CMD_F_READ | CMD_F_FAST, 1, 1, 1)     \
    X(PEXPIRETIME, "pexpiretime", 2, CMD_F_READ | CMD_F_FAST, 1, 1, 1)   \
    X(BITFIELD, "bitfield", -2, CMD_F_WRITE, 1, 1, 1)                    \
    X(BITFIELD_RO, "bitfield_ro", -2, CMD_F_READ | CMD_F_FAST, 1, 1, 1)  \
    X(BITOP, "bitop", -4, CMD_F_WRITE, 2, -1, 1)                         \
    /* computed at the edge over the value the read path returns         \
     * (edge_strread.c, proto/strops.h) */                               \
    X(GETRANGE, "getrange", 4, CMD_F_READ, 1, 1, 1)                      \
    X(SUBSTR, "substr", 4, CMD_F_READ, 1, 1, 1)                          \
    X(GETBIT, "getbit", 3, CMD_F_READ | CMD_F_FAST, 1, 1, 1)             \
    X(BITCOUNT, "bitcount", -2, CMD_F_READ, 1, 1, 1)                     \
    X(BITPOS, "bitpos", -3, CMD_F_READ, 1, 1, 1)                         \
    X(LCS, "lcs", -3, CMD_F_READ, 1, 2, 1)                               \
    /* transactions, queued at the edge (edge_tx.c, edge_exec.c); WATCH  \
     * reads its keys' versions */                                       \
    X(MULTI, "multi", 1, CMD_F_FAST | CMD_F_CONN, 0, 0, 0)               \
    X(EXEC, "exec", 1, CMD_F_CONN, 0, 0, 0)                              \
    X(DISCARD, "discard", 1, CMD_F_FAST | CMD_F_CONN, 0, 0, 0)           \
    X(WATCH, "watch", -2, CMD_F_READ | CMD_F_FAST, 1, -1, 1)             \
    X(UNWATCH, "unwatch", 1, CMD_F_FAST | CMD_F_CONN, 0, 0, 0) \
    /* server commands answered by the edge (edge_cmd.c, edge_monitor.c) \
     * and GETMETA, GET with the cache's facts (edge_read.c) */          \
    X(WAIT, "wait", 3, CMD_F_CONN, 0, 0, 0)                              \
    X(MONITOR, "monitor", 1, CMD_F_ADMIN, 0, 0, 0)                       \
    /* pub/sub (edge_pubsub.c) */                                        \
    X(SUBSCRIBE, "subscribe", -2, CMD_F_CONN, 0, 0, 0)                   \
    X(UNSUBSCRIBE, "unsubscribe", -1, CMD_F_CONN, 0, 0, 0)               \
    X(PSUBSCRIBE, "psubscribe", -2, CMD_F_CONN, 0, 0, 0)                 \
    X(PUNSUBSCRIBE, "punsubscribe", -1, CMD_F_CONN, 0, 0, 0)             \
    X(PUBLISH, "publish", 3, CMD_F_FAST, 0, 0, 0)                        \
    X(PUBSUB, "pubsub", -2, 0, 0, 0, 0)                                  \
    X(GETMETA, "getmeta", 2, CMD_F_READ | CMD_F_FAST, 1, 1, 1)         \
    /* versions (Garnet's etags: the owner's version of the key): reads  \
     * through the read path, SETIFMATCH run by the owner (edge_ver.c) */ \
    X(GETWITHETAG, "getwithetag", 2, CMD_F_READ | CMD_F_FAST, 1, 1, 1)   \
    X(GETIFNOTMATCH, "getifnotmatch", 3, CMD_F_READ | CMD_F_FAST, 1, 1, 1) \
    X(SETIFMATCH, "setifmatch", -4, CMD_F_WRITE, 1, 1, 1)                \
    /* keyspace administration (edge_keyspace.c, edge_keys.c) */         \
    X(FLUSHALL, "flushall", -1, CMD_F_ADMIN | CMD_F_ALLKEYS, 0, 0, 0)                    \
    X(FLUSHDB, "flushdb", -1, CMD_F_ADMIN | CMD_F_ALLKEYS, 0, 0, 0)                     \
    X(KEYS, "keys", 2, CMD_F_READ, 0, 0, 0)                              \
    X(RANDOMKEY, "randomkey", 1, CMD_F_READ, 0, 0, 0)                    \
    X(OBJECT, "object", -2, CMD_F_READ, 2, 2, 1)

enum cmd_id {
#define X(id, name, arity, flags, fk, lk, st) CMD_##id,
    CMD_LIST(X)
#undef X
    CMD_COUNT
};

struct cmd_def {
    enum cmd_id id;
    const char *name;   /* lower case */
    int arity;
    uint32_t flags;
    int first_key, last_key, step;
};

/* The command named by name[0..len) (any case), or NULL. */
const struct cmd_def *cmd_lookup(const char *name, size_t len);
/* The definition of id; id must be < CMD_COUNT. */
const struct cmd_def *cmd_get(enum cmd_id id);
/* 1 if argc words satisfy the command's arity. */
static inline int cmd_arity_ok(const struct cmd_def *c, int argc)
{
    return c->arity >= 0 ? argc == c->arity : argc >= -c->arity;
}
/* Where the keys of argc words (arity satisfied) are: argv[*first],
 * argv[*first + step] ... up to argv[*last] included.  Returns the number of
 * keys (0: none; then *first and *last are 0). */
static inline int cmd_key_range(const struct cmd_def *c, int argc, int *first, int *last)
{
    int l = c->last_key < 0 ? argc + c->last_key : c->last_key;
    if (l >= argc)
        l = argc - 1;
    if (c->first_key <= 0 || c->step <= 0 || l < c->first_key) {
        *first = *last = 0;
        return 0;
    }
    *first = c->first_key;
    *last = l;
    return (l - c->first_key) / c->step + 1;
}

#endif
