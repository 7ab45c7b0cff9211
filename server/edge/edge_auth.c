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
 * Reload: a new struct auth is built from the new config and every
 * connection finds its user again by name.  One that was logged in without
 * AUTH (the default user had no password) is logged out if the default user
 * now needs one (stricter than Redis, which keeps it: an operator who adds a
 * password means it for everyone); one whose user is gone is logged out too
 * (Redis disconnects it).  Either then gets -NOAUTH until it authenticates.
 */
#include "server/edge/edge_auth.h"

#include <string.h>

#include "server/core/log.h"
#include "server/edge/auth.h"

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
static void apply_limits(struct conn *c)
{
    struct resp_limits lim = c->e->limits;
    if (c->user < 0) {
        if (lim.max_args <= 0 || lim.max_args > EDGE_PREAUTH_MAX_ARGS)
            lim.max_args = EDGE_PREAUTH_MAX_ARGS;
        if (lim.max_bulk <= 0 || lim.max_bulk > EDGE_PREAUTH_MAX_BULK)
            lim.max_bulk = EDGE_PREAUTH_MAX_BULK;
    }
    c->parser.lim = lim;
    c->query_cap = c->user < 0 ? EDGE_PREAUTH_QUERYBUF : 0;
}

void edge_auth_set_user(struct conn *c, int user, int implicit)
{
    c->user = user;
    c->user_implicit = user >= 0 && implicit;
    c->gated = user < 0 || !auth_user_unrestricted(c->e->auth, user);
    apply_limits(c);
}

void edge_auth_accepted(struct conn *c, const struct sockaddr *peer)
{
    edge_auth_set_user(c, auth_initial_user(c->e->auth), 1);
    if (auth_protected_refuses(c->e->auth, peer)) {
        resp_add_error(&c->out, denied_msg);
        c->close_after_write = 1;
    }
}

int edge_auth_gate(struct conn *c, const struct cmd_def *d, int argc,
                   const struct resp_slice *argv)
{
    if (c->user < 0) {
        if (d->flags & CMD_F_NOAUTH)
            return 0;
        resp_add_error(&c->out, "NOAUTH Authentication required.");
        return -1;
    }
    switch (auth_allowed(c->e->auth, c->user, d, argc, argv)) {
    case AUTH_OK:
        return 0;
    case AUTH_NOPERM_CMD:
        resp_add_errorf(&c->out, "NOPERM User %s has no permissions to run the '%s' command",
                        auth_user_name(c->e->auth, c->user), d->name);
        return -1;
    default:
        resp_add_error(&c->out, "NOPERM No permissions to access a key");
        return -1;
    }
}

int edge_auth_login(struct conn *c, const struct resp_slice *user, const struct resp_slice *pass)
{
    int id = auth_check_password(c->e->auth, user->p, user->len, pass->p, pass->len);
    if (id < 0) {
        board_add(&c->e->stats->auth_failures, 1);
        resp_add_error(&c->out, "WRONGPASS invalid username-password pair or user is disabled.");
        return -1;
    }
    edge_auth_set_user(c, id, 0);
    return 0;
}

int edge_auth_setup(struct edge *e)
{
    e->auth = auth_create(e->ctx->cfg);
    return e->auth != NULL ? 0 : -1;
}

void edge_auth_teardown(struct edge *e)
{
    auth_destroy(&e->auth);
}

void edge_auth_reload(struct edge *e, const struct cfg *next)
{
    struct auth *na = auth_create(next);
    if (na == NULL) {
        log_warning("reload: out of memory building the users; the old ones stay in force");
        return;
    }
    struct auth *old = e->auth;
    e->auth = na;
    int initial = auth_initial_user(na);
    for (struct conn *c = e->conns; c != NULL; c = c->next) {
        int u = -1, implicit = 0;
        if (c->user < 0 || c->user_implicit) {
            u = initial;
            implicit = 1;
        } else {
            const char *name = auth_user_name(old, c->user);
            u = auth_user_find(na, name, strlen(name));
        }
        edge_auth_set_user(c, u, implicit);
    }
    auth_destroy(&old);
}
