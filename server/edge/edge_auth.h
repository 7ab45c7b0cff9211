/*
 * edge_auth.h - authentication on the edge: who each connection is, the gate
 * a command passes before it runs, protected mode (at accept and at a
 * reload, for the connections open then), and the limits
 * an unauthenticated client gets.  The decisions are auth.h's; this applies
 * them to connections (the session half of struct conn: user, gated,
 * user_implicit, and the parser's limits and query_cap).
 *
 * Until a connection is authenticated its parser accepts at most
 * EDGE_PREAUTH_MAX_ARGS arguments and EDGE_PREAUTH_MAX_BULK-byte bulks, and
 * its query buffer may hold EDGE_PREAUTH_QUERYBUF bytes (Redis's limits).
 */
#ifndef HKV_EDGE_AUTH_H
#define HKV_EDGE_AUTH_H

#include <sys/socket.h>

#include "config/cfg.h"
#include "proto/cmd.h"
#include "proto/resp.h"
#include "server/edge/edge_conn.h"

#define EDGE_PREAUTH_MAX_ARGS 10
#define EDGE_PREAUTH_MAX_BULK (16 * 1024)
#define EDGE_PREAUTH_QUERYBUF (1024 * 1024)

/* e->auth: the users in force and their generation, which the gates read
 * (the module's own state lies behind this head, edge_auth.c). */
struct edge_auth {
    struct auth *users;           /* users and ACLs (auth.h), rebuilt on reload */
    uint64_t gen;                 /* bumped each time users is rebuilt: a login cached
                                   * under another generation is checked again by name */
};

/* e->auth from the users and rules of cfg (the process hands it down);
 * -1 on allocation failure. */
int edge_auth_setup(struct edge *e, const struct cfg *cfg);
void edge_auth_teardown(struct edge_auth **a);
/* New users from next (e->auth->gen bumped); every connection re-finds
 * its user by name (and its parser limits); one whose user is gone, or that
 * protected mode now refuses, is closed soon (edge_auth_close_later).  Keeps
 * the old one on allocation failure. */
void edge_auth_reload(struct edge *e, const struct cfg *next);
/* A new connection's user and limits.  When protected mode refuses the
 * peer, writes -DENIED and sets close_after_write. */
void edge_auth_accepted(struct conn *c, const struct sockaddr *peer);
/* The gate, for a gated connection (c->gated): 0 = run the command, else
 * refused with the reply written: -1 -NOAUTH, EDGE_AUTH_NOPERM_CMD or
 * EDGE_AUTH_NOPERM_KEY -NOPERM (the denials ACL LOG keeps). */
#define EDGE_AUTH_NOPERM_CMD (-2)
#define EDGE_AUTH_NOPERM_KEY (-3)
int edge_auth_gate(struct conn *c, const struct cmd_def *d, int argc,
                   const struct resp_slice *argv);
/* AUTH / HELLO AUTH: 0 logged in as user, -1 -WRONGPASS written (counted
 * in auth_failures; the caller logs it in ACL LOG; the connection keeps its
 * previous user). */
int edge_auth_login(struct conn *c, const struct resp_slice *user, const struct resp_slice *pass);
/* Logs c in as user (-1: out); implicit = without AUTH. */
void edge_auth_set_user(struct conn *c, int user, int implicit);
/* A reload revoked c's login or protected mode now refuses it: c is closed
 * from a zero-delay event, not now (the reload may run inside a dispatch of
 * c).  AUTH_CLOSE_DENIED: after -DENIED if it owes no reply (RESP). */
#define AUTH_CLOSE_NOW 1
#define AUTH_CLOSE_DENIED 2
void edge_auth_close_later(struct conn *c, int how);

#endif
