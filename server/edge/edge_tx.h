/*
 * edge_tx.h - a connection's transaction: MULTI, DISCARD, WATCH, UNWATCH,
 * and the queue that EXEC (edge_exec.h) sends to the owner.  Redis 7.0's
 * replies and errors.
 *
 * Queue.  Inside MULTI, every command but EXEC DISCARD MULTI WATCH QUIT
 * RESET is copied into the connection's queue and answered +QUEUED
 * (edge_tx_queue, from the dispatch pipeline, after its arity, auth and
 * rate gates).  A transaction runs atomically on one owner, so the queue
 * takes the commands the owner runs (those with keys) and the key-less
 * ones the edge answers itself at EXEC (PING ECHO TIME UNWATCH); any other
 * command is refused with an error naming it.  A refused command (that one,
 * an unknown command, a wrong arity, NOAUTH/NOPERM, a rate limit, a
 * multi-key command whose keys span owners: -CROSSSLOT) flags the
 * transaction, and EXEC answers EXECABORT, as Redis does.  The queue is
 * bounded by multi-max-commands and multi-max-bytes (the bytes of the
 * queued words); past a bound the command gets an error, the queue is
 * dropped, and EXEC answers EXECABORT (later commands are answered +QUEUED
 * and not kept).
 *
 * WATCH k ...  asks each key's owner for the version the key holds now (a
 * GET on the read link, around the colo cache; NOTFOUND carries the version
 * of the key's absence) and keeps (key, version) on the connection; EXEC
 * hands the list to the owner, which runs the transaction only if no
 * version changed, else EXEC answers nil.  WATCH answers OK once the
 * versions are known, and the connection's next requests are read only
 * then, so a pipelined "WATCH k; MULTI; ...; EXEC" sees them.  As in Redis
 * 7.0, a watched key whose deadline (read with its version) has passed by
 * EXEC fails the EXEC too: it expired, or was written since.  A WATCH
 * whose version could not be read (owner unreachable) is answered with the
 * error, and the next EXEC fails (nil): a transaction never commits over a
 * version it does not know.  While a connection watches keys its reads go
 * to the owners, not the colo cache (c->watching, edge_read.c): a cached
 * value may be older than the version WATCH read, and a read-modify-write
 * over it would commit over a write it never saw.  Keys watched together
 * must live on one owner (-CROSSSLOT), as must everything an EXEC touches.
 * EXEC, DISCARD, RESET, UNWATCH and the connection's end forget the list.
 *
 * The state lives in c->tx, made at the connection's first MULTI or WATCH
 * and freed with it (edge_tx_conn_gone).  Its fields are this module's;
 * edge_exec.c reads them to build the owner's request.
 */
#ifndef HKV_EDGE_TX_H
#define HKV_EDGE_TX_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/cmd.h"
#include "proto/resp.h"
#include "server/edge/edge_conn.h"

/* A queued word: tx->bytes[off .. off+len). */
struct tx_word {
    size_t off, len;
};

/* A queued command: words[w0 .. w0+n). */
struct tx_cmd {
    enum cmd_id id;
    uint32_t w0, n;
    int local;                    /* answered by the edge at EXEC (PING ECHO TIME UNWATCH) */
};

/* A watched key: tx->wbytes[off .. off+len), and the version the owner
 * gave for it. */
struct tx_watch {
    size_t off, len;
    uint64_t version;
    int64_t expire_at;            /* its deadline when watched (unix ms), 0 = none or absent */
    int known;                    /* the version was read */
};

struct edge_tx {
    int multi;                    /* inside MULTI */
    int dirty;                    /* a command was refused: EXEC answers EXECABORT */
    int full;                     /* a bound was passed: nothing more is kept */
    struct hkv_buf bytes;         /* the queued words, back to back */
    struct tx_word *words;
    uint32_t nwords, words_cap;
    struct tx_cmd *cmds;
    uint32_t ncmds, cmds_cap, nlocal;
    /* WATCH */
    struct hkv_buf wbytes;        /* the watched keys, back to back */
    struct tx_watch *watch;
    uint32_t nwatch, watch_cap;
    uint32_t watch_pending;       /* WATCH requests of this generation not answered */
    int watch_failed;             /* a version could not be read: the next EXEC is nil */
    uint64_t gen;                 /* the watch list's generation: every clear bumps it */
};

#define EDGE_TX_HANDLERS(X) X(multi) X(discard) X(watch) X(unwatch)
#define X(fn) void edge_cmd_##fn(struct conn *c, int argc, const struct resp_slice *argv);
EDGE_TX_HANDLERS(X)
#undef X
/* RESET: forgets the transaction and the watched keys, then edge_cmd_reset. */
void edge_tx_reset(struct conn *c, int argc, const struct resp_slice *argv);

/* The dispatch pipeline's part, for a well-formed permitted command d:
 * inside MULTI it is queued (+QUEUED) or refused (its error, the
 * transaction flagged); returns 1 then, or 0 when the command runs now
 * (outside MULTI, or EXEC DISCARD MULTI WATCH QUIT RESET). */
int edge_tx_queue(struct conn *c, const struct cmd_def *d, int argc, const struct resp_slice *argv);
/* The pipeline refused a command (unknown, arity, auth, rate gate): inside
 * MULTI the transaction is flagged (EXEC answers EXECABORT). */
void edge_tx_flag(struct conn *c);
/* Ends the transaction: out of MULTI, the queue and the watched keys
 * forgotten (EXEC's and DISCARD's end).  Nothing if c has no state. */
void edge_tx_end(struct conn *c);
/* The closing hook's part: frees c->tx. */
void edge_tx_conn_gone(struct conn *c);
/* Commands queued, or -1 outside MULTI (CLIENT LIST's multi=). */
int edge_tx_queued(const struct conn *c);
/* 1 when a queued command writes (CLIENT PAUSE WRITE parks such an EXEC). */
int edge_tx_writes(const struct conn *c);

#endif
