/*
 * edge_sess.h - a client's session: what the layers above the connection
 * keep per client (its login, protocol, command stats, board row, name, ops,
 * MULTI state, HTTP session).  The connection layer knows none of it: the
 * edge's hooks reserve sizeof(struct sess) bytes after each struct conn
 * (conn_hooks.sess_size), zeroed at accept, and sess_of() finds them at a
 * fixed offset from the connection.
 *
 * Why one struct in the connection's own allocation rather than nginx's
 * array of per-module pointers (r->ctx[module.ctx_index]): the session is
 * read on every command (the auth gate's user, the proto every reply is
 * rendered in, the stat ids, the ops list), so it must cost no pointer
 * chase and no allocation of its own: sess_of(c) is c plus a constant, as
 * c->user was.  The fields are grouped by the module that keeps them; the
 * cold ones (MULTI's state, the HTTP session, the client name) are pointers
 * their module allocates on first use and frees when the client goes.
 */
#ifndef HKV_EDGE_SESS_H
#define HKV_EDGE_SESS_H

#include <stdint.h>

#include "server/colo/ratelimit.h"
#include "server/edge/edge_conn.h"

struct edge_tx;
struct track_sess;
struct http_sess;
struct op;

/* A client's channels and patterns, in the order it subscribed
 * (edge_pubsub.c keeps them; CLIENT LIST reads the counts). */
struct ps_name {
    char *p;
    size_t n;
};
struct pubsub_sess {
    struct ps_name *ch, *pat;
    size_t nch, npat, capch, cappat;
};

struct sess {
    /* the login (edge_auth.c) */
    int user;                     /* auth user id; -1 = not authenticated */
    int gated;                    /* run the auth gate before each command */
    int user_implicit;            /* logged in without AUTH (default user, nopass) */
    uint8_t remote;               /* its peer is not loopback (protected mode) */
    uint8_t auth_close;           /* a reload revoked its login: closed soon */
    /* the rate gate (edge_rl.c) */
    struct rl_key rl_addr;        /* rate-limit key: the peer address part */
    int rl_addr_ok;               /* rl_addr is set (on the first limited command) */
    /* the protocol (edge_cmd.c: HELLO; edge_client.c: CLIENT META) */
    int proto;                    /* 2 or 3 (HELLO) */
    int meta;                     /* CLIENT META ON: RESP3 attributes on reads */
    /* command stats (edge_registry.c, edge_op.c) */
    uint64_t ncmds;               /* commands run */
    const char *last_cmd;         /* full name ("client|info"); NULL after an unknown one */
    uint16_t last_stat;           /* its command stat id (edge_subcmd.h); 0xffff: none */
    uint16_t cur_stat;            /* the request being dispatched: its stat id, when it */
    int64_t cur_t0_ns;            /* began, and whether an op took over its stats */
    int stat_taken;
    /* MONITOR (edge_monitor.c) */
    int monitor;                  /* gets the host's commands */
    /* the clients board (edge_clients.c) */
    int32_t board_row;            /* its row; -1: none */
    uint64_t board_ncmds;         /* ncmds when the row was last written */
    /* CLIENT SETNAME, HELLO SETNAME, CLIENT SETINFO (edge_client.c) */
    char *name;                   /* NULL = none */
    char lib_name[64];
    char lib_ver[32];
    /* the op engine (edge_op.c) */
    struct op *ops;               /* ops answering this client */
    uint32_t writes_inflight;     /* its write ops not finished */
    uint64_t last_write_place;    /* its last write's first key (WAIT: whose followers) */
    uint8_t last_write_pool, wrote; /* ... its pool; a write was made */
    /* CLIENT TRACKING (edge_track.c) */
    struct track_sess *track;     /* NULL: never tracked */
    uint8_t track_dirty;          /* invalidations written: flushed this turn */
    uint8_t track_target;         /* some tracking client redirects to it */
    /* MULTI and WATCH (edge_tx.c) */
    struct edge_tx *tx;           /* NULL until used */
    int watching;                 /* it WATCHes keys: its reads ask the owner */
    /* pub/sub (edge_pubsub.c) */
    struct pubsub_sess *pubsub;   /* its channels and patterns; NULL until it subscribes */
    /* HTTP (edge_http.c) */
    struct http_sess *http;       /* an HTTP connection's session; NULL: RESP */
};

static inline struct sess *sess_rw(struct conn *c)
{
    return (struct sess *)(void *)c->above;
}

static inline const struct sess *sess_ro(const struct conn *c)
{
    return (const struct sess *)(const void *)c->above;
}

/* The session of c (a connection accepted with hooks whose sess_size is
 * sizeof(struct sess)); const when c is. */
#define sess_of(c) _Generic((c), const struct conn *: sess_ro, default: sess_rw)(c)

#endif
