/*
 * edge_auth.c - authentication on the edge: who each connection is, the gate
 * every command passes, protected mode at accept, and the pre-auth limits.
 *
 * The decisions live in auth.c; this file applies them to connections.  A
 * connection is "gated" when it is not authenticated or its user is
 * restricted; only then does the dispatch pipeline (edge_registry.c) call
 * edge_auth_gate, so with no authentication configured the whole cost on the
 * GET path is one branch on c->gated, and with it, a flag test plus one glob
 * per key.
 *
 * Until a connection is authenticated its parser accepts at most
 * EDGE_PREAUTH_MAX_ARGS arguments and EDGE_PREAUTH_MAX_BULK-byte bulks, and
 * its query buffer may hold EDGE_PREAUTH_QUERYBUF bytes: past any of them the
 * connection is closed (Redis's CVE-2021-32675 fix), so an unauthenticated
 * client can make the edge hold very little memory.
 *
 * Reload: a new struct auth is built from the new config, e->auth->gen is
 * bumped (a login cached elsewhere, HTTP's, is checked again by name when
 * its generation is not the current one: never by the table's address, which
 * a later reload may get back from malloc), and every connection finds its
 * user again by name, never by its old id (ids are positions in one table).
 * One that was logged in without AUTH (the default user had no password) is
 * logged out if the default user now needs one (stricter than Redis, which
 * keeps it: an operator who adds a password means it for everyone) and then
 * gets -NOAUTH until it authenticates.  One whose user is gone is closed, as
 * Redis closes the connections of a deleted user (ACL DELUSER, and ACL LOAD
 * since 7.2); a user whose password changed or who is now off keeps its
 * authenticated connections, as in Redis (a password is checked when a
 * client authenticates; HTTP authenticates every request, edge_http.c).
 * Protected mode applies to open connections too: a reload that turns it on
 * closes every open connection from a non-loopback peer, after -DENIED when
 * it owes no reply, as if it had connected now.  Connections are closed from
 * a zero-delay event (auth_sweep), never inside the reload, which may run in
 * the dispatch of CONFIG SET on one of them.
 */
#include "server/edge/edge_auth.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "server/core/log.h"
#include "server/edge/auth.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_sess.h"

static const char denied_msg[] =
    "DENIED hotkvd is running in protected mode because protected mode is enabled and no "
    "password is set for the default user. In this mode connections are only accepted from "
    "the loopback interface. If you want to connect from external computers to hotkvd you may "
    "adopt one of the following solutions: 1) Just disable protected mode sending the command "
    "'CONFIG SET protected-mode no' from the loopback interface by connecting to hotkvd from "
    "the same host the server is running, however MAKE SURE hotkvd is not publicly accessible "
    "from internet if you do so. Edit the configuration file too to make this change "
    "permanent. 2) Alternatively you can just disable the protected mode by editing the "
    "hotkvd configuration file, and setting the protected mode option to 'no', and then "
    "reloading (SIGHUP) or restarting the server. 3) If you started the server manually just "
    "for testing, restart it with the '--protected-mode no' option. 4) Set up an "
    "authentication password for the default user. NOTE: You only need to do one of the above "
    "things in order for the server to start accepting connections from the outside.";

/* c->parser.lim: the edge's limits, narrowed until c is authenticated, and
 * its query buffer bound (the connection layer applies both). */
/* The module's state: the head the gates read (edge_auth.h), then its own. */
struct auth_state {
    struct edge_auth pub;
    struct event *sweep;          /* closes the connections a reload revoked (auth_close) */
};

static inline struct auth_state *ast(const struct edge *e)
{
    return (struct auth_state *)e->auth;
}

static void apply_limits(struct conn *c)
{
    struct resp_limits lim = c->e->conns->opts.limits;
    if (sess_of(c)->user < 0) {
        if (lim.max_args <= 0 || lim.max_args > EDGE_PREAUTH_MAX_ARGS)
            lim.max_args = EDGE_PREAUTH_MAX_ARGS;
        if (lim.max_bulk <= 0 || lim.max_bulk > EDGE_PREAUTH_MAX_BULK)
            lim.max_bulk = EDGE_PREAUTH_MAX_BULK;
    }
    c->parser.lim = lim;
    c->query_cap = sess_of(c)->user < 0 ? EDGE_PREAUTH_QUERYBUF : 0;
}

void edge_auth_set_user(struct conn *c, int user, int implicit)
{
    sess_of(c)->user = user;
    sess_of(c)->user_implicit = user >= 0 && implicit;
    sess_of(c)->gated = user < 0 || !auth_user_unrestricted(c->e->auth->users, user);
    apply_limits(c);
}

void edge_auth_accepted(struct conn *c, const struct sockaddr *peer)
{
    edge_auth_set_user(c, auth_initial_user(c->e->auth->users), 1);
    sess_of(c)->remote = !auth_is_loopback(peer);
    if (sess_of(c)->remote && auth_protected(c->e->auth->users)) {
        resp_add_error(&c->out, denied_msg);
        c->close_after_write = 1;
    }
}

int edge_auth_gate(struct conn *c, const struct cmd_def *d, int argc,
                   const struct resp_slice *argv)
{
    if (sess_of(c)->user < 0) {
        if (d->flags & CMD_F_NOAUTH)
            return 0;
        resp_add_error(&c->out, "NOAUTH Authentication required.");
        return -1;
    }
    switch (auth_allowed(c->e->auth->users, sess_of(c)->user, d, argc, argv)) {
    case AUTH_OK:
        return 0;
    case AUTH_NOPERM_CMD:
        resp_add_errorf(&c->out, "NOPERM User %s has no permissions to run the '%s' command",
                        auth_user_name(c->e->auth->users, sess_of(c)->user), d->name);
        return EDGE_AUTH_NOPERM_CMD;
    default:
        resp_add_error(&c->out, "NOPERM No permissions to access a key");
        return EDGE_AUTH_NOPERM_KEY;
    }
}

int edge_auth_login(struct conn *c, const struct resp_slice *user, const struct resp_slice *pass)
{
    int id = auth_check_password(c->e->auth->users, user->p, user->len, pass->p, pass->len);
    if (id < 0) {
        board_add(&c->e->stats->auth_failures, 1);
        resp_add_error(&c->out, "WRONGPASS invalid username-password pair or user is disabled.");
        return -1;
    }
    edge_auth_set_user(c, id, 0);
    return 0;
}

/* The connections a reload revoked (auth_close), now that no dispatch is
 * under way: AUTH_CLOSE_DENIED gets -DENIED first when it owes no reply
 * (it cannot be put before replies still owed), the others are closed at
 * once (Redis frees a deleted user's clients). */
static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    struct edge *e = arg;
    struct conn *c = e->conns->list;
    int n = 0;
    while (c != NULL) {
        struct conn *next = c->next;
        if (sess_of(c)->auth_close && !c->in_process) {
            n++;
            if (sess_of(c)->auth_close == AUTH_CLOSE_DENIED && c->sq_head == NULL &&
                sess_of(c)->http == NULL && !c->close_after_write) {
                resp_add_error(&c->out, denied_msg);
                c->close_after_write = 1;
                conn_flush(c); /* closes c once written */
            } else {
                conn_close(c);
            }
        }
        c = next;
    }
    if (n > 0)
        log_notice("reload: %d connection%s closed (user removed, credentials revoked, or "
                   "refused by protected mode)", n, n == 1 ? "" : "s");
}

void edge_auth_close_later(struct conn *c, int how)
{
    if (sess_of(c)->auth_close == 0 || how == AUTH_CLOSE_NOW)
        sess_of(c)->auth_close = (uint8_t)how;
    if (ast(c->e)->sweep != NULL)
        event_active(ast(c->e)->sweep, 0, 1);
}

int edge_auth_setup(struct edge *e, const struct cfg *cfg)
{
    struct auth_state *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return -1;
    e->auth = &st->pub;
    st->pub.users = auth_create(cfg);
    st->pub.gen = 1;
    st->sweep = event_new(e->base, -1, 0, on_sweep, e);
    return st->pub.users != NULL && st->sweep != NULL ? 0 : -1;
}

void edge_auth_teardown(struct edge_auth **ap)
{
    struct auth_state *st = (struct auth_state *)*ap;
    if (st == NULL)
        return;
    auth_destroy(&st->pub.users);
    if (st->sweep != NULL)
        event_free(st->sweep);
    free(st);
    *ap = NULL;
}

void edge_auth_reload(struct edge *e, const struct cfg *next)
{
    struct auth *na = auth_create(next);
    if (na == NULL) {
        log_warning("reload: out of memory building the users; the old ones stay in force");
        return;
    }
    struct auth *old = e->auth->users;
    e->auth->users = na;
    e->auth->gen++;
    int initial = auth_initial_user(na);
    int protect = auth_protected(na);
    for (struct conn *c = e->conns->list; c != NULL; c = c->next) {
        int u = -1, implicit = 0;
        if (sess_of(c)->user < 0 || sess_of(c)->user_implicit) {
            u = initial;
            implicit = 1;
        } else {
            const char *name = auth_user_name(old, sess_of(c)->user);
            u = auth_user_find(na, name, strlen(name));
            /* HTTP logs in per request (edge_http.c checks its sessions) */
            if (u < 0 && sess_of(c)->http == NULL)
                edge_auth_close_later(c, AUTH_CLOSE_NOW);
        }
        edge_auth_set_user(c, u, implicit);
        if (protect && sess_of(c)->remote)
            edge_auth_close_later(c, AUTH_CLOSE_DENIED);
    }
    auth_destroy(&old);
}
