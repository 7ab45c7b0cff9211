/*
 * edge_http_sess.c - what an HTTP session keeps across its requests and
 * across reloads: who it logs in as, whether protected mode refuses it, and
 * what a reload changes for the polls and streams it holds.
 *
 * Every request authenticates (Basic credentials, or none: the initial
 * user).  A keep-alive client's last good credentials are remembered so it
 * is not hashed on every request; they are valid only under the users table
 * they were checked against, named by its generation (e->auth->gen, bumped at
 * each rebuild, edge_auth.c), never by its address: a reload frees the
 * table and a later one can get the same address back from malloc, which
 * once let a revoked password through on 3 of 150 reloads, with a cached
 * user id that could name another user by then.  Under another generation
 * the credentials are checked again, the user found by name.
 *
 * Protected mode is decided per request from the users in force (two flag
 * tests), not once at accept, so a reload that turns it on refuses the next
 * request of an open keep-alive session (edge_auth.c closes such sessions at
 * the reload too).
 *
 * A held poll or stream authenticated once, when it began.  The session
 * notes how the requests since it last held nothing logged in (logins: the
 * initial user, the remembered credentials, or credentials it no longer
 * has); a reload checks those logins again and closes the connection when
 * one no longer logs in, or may no longer read a held key, as Redis closes
 * a deleted user's clients and a subscriber to a channel it lost.  A session
 * whose credentials it cannot check again (over 256 bytes, or replaced by
 * other ones while a request was held) is closed at a reload: rare, and the
 * client reconnects.
 *
 * A reload that lowers http-poll-max-wait or http-heartbeat re-arms the held
 * requests' timers, so the new, earlier deadline applies at once rather than
 * after the old one.
 */
#include <string.h>

#include "server/core/clock.h"
#include "server/edge/auth.h"
#include "server/edge/edge_acllog.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_http_int.h"
#include "server/edge/edge_sess.h"

int edge_http_sess_holds(const struct http_sess *hs)
{
    for (struct hreq *r = hs != NULL ? hs->reqs : NULL; r != NULL; r = r->cnext)
        if (r->kind != HREQ_GET)
            return 1;
    return 0;
}

int edge_http_sess_denied(const struct conn *c)
{
    return sess_of(c)->remote && auth_protected(c->e->auth->users);
}

static int cred_is(const struct http_sess *hs, struct http_slice a)
{
    return a.len == hs->cred_len && a.len <= sizeof(hs->cred) && memcmp(a.p, hs->cred, a.len) == 0;
}

int edge_http_sess_login(struct conn *c, const struct http_req *q)
{
    struct edge *e = c->e;
    struct http_sess *hs = sess_of(c)->http;
    if (!edge_http_sess_holds(hs))
        hs->logins = 0; /* nothing held: no earlier login to check at a reload */
    char cred[512];
    struct http_slice u, p;
    int rc = http_req_basic(q, cred, sizeof(cred), &u, &p);
    if (rc == HKV_ENOENT && q->authorization.p == NULL) {
        sess_of(c)->user_implicit = 1;
        hs->logins |= HTTP_LOGIN_IMPLICIT;
        return auth_initial_user(e->auth->users);
    }
    if (rc != HKV_OK) {
        board_add(&e->stats->auth_failures, 1);
        return -1;
    }
    struct http_slice a = q->authorization;
    if (hs->cred_gen == e->auth->gen && cred_is(hs, a)) {
        sess_of(c)->user_implicit = 0;
        hs->logins |= HTTP_LOGIN_CACHED;
        return hs->cred_user;
    }
    int id = auth_check_password(e->auth->users, u.p, u.len, p.p, p.len);
    if (id < 0) {
        board_add(&e->stats->auth_failures, 1);
        edge_acllog_auth(c, u.p, u.len, "Authorization", 13);
        return -1;
    }
    if (!cred_is(hs, a) && (hs->logins & HTTP_LOGIN_CACHED))
        hs->logins |= HTTP_LOGIN_OTHER; /* a held request's credentials are replaced */
    if (a.len <= sizeof(hs->cred)) {
        memcpy(hs->cred, a.p, a.len);
        hs->cred_len = a.len;
        hs->cred_gen = e->auth->gen;
        hs->cred_user = id;
        hs->logins |= HTTP_LOGIN_CACHED;
    } else {
        hs->cred_len = 0;
        hs->cred_gen = 0;
        hs->logins |= HTTP_LOGIN_OTHER;
    }
    sess_of(c)->user_implicit = 0;
    return id;
}

/* May user id read r's key under the users in force? */
static int may_read(struct edge *e, int id, const struct hreq *r)
{
    if (id < 0)
        return 0;
    if (auth_user_unrestricted(e->auth->users, id))
        return 1;
    struct resp_slice argv[2] = {{"GET", 3}, {r->key, r->klen}};
    return auth_allowed(e->auth->users, id, cmd_get(CMD_GET), 2, argv) == AUTH_OK;
}

/* The users were rebuilt: 1 if every login c's held requests may have used
 * still logs in, and may still read each held key.  The remembered
 * credentials are checked again (one hash per session that holds a poll or
 * a stream) and carry the new generation when they pass. */
static int still_allowed(struct conn *c)
{
    struct edge *e = c->e;
    struct http_sess *hs = sess_of(c)->http;
    int users[2], n = 0;
    if (hs->logins & HTTP_LOGIN_OTHER)
        return 0;
    if (hs->logins & HTTP_LOGIN_IMPLICIT)
        users[n++] = auth_initial_user(e->auth->users);
    if (hs->logins & HTTP_LOGIN_CACHED) {
        char cred[512];
        struct http_slice u, p;
        struct http_req q;
        memset(&q, 0, sizeof(q));
        q.authorization = (struct http_slice){hs->cred, hs->cred_len};
        int id = hs->cred_len > 0 && http_req_basic(&q, cred, sizeof(cred), &u, &p) == HKV_OK
                     ? auth_check_password(e->auth->users, u.p, u.len, p.p, p.len)
                     : -1;
        hs->cred_gen = id >= 0 ? e->auth->gen : 0;
        hs->cred_user = id;
        users[n++] = id;
    }
    for (struct hreq *r = hs->reqs; r != NULL; r = r->cnext)
        for (int i = 0; i < n && r->kind != HREQ_GET; i++)
            if (!may_read(e, users[i], r))
                return 0;
    return n > 0 || hs->logins == 0;
}

/* Timers a reload made earlier: a held poll's wait is capped by
 * http-poll-max-wait from when it began, and a stream's next heartbeat
 * comes within http-heartbeat, as they are in next (e->http->opts still
 * holds the old ones). */
static void rearm_held(struct edge *e, const struct http_opts *next)
{
    const struct http_opts *old = &e->http->opts;
    int64_t now = clock_mono_ms();
    int cap_lower = next->poll_max_wait_ms < old->poll_max_wait_ms;
    int hb_lower = next->heartbeat_ms < old->heartbeat_ms;
    if (!cap_lower && !hb_lower)
        return;
    for (struct conn *c = e->conns->list; c != NULL; c = c->next)
        for (struct hreq *r = sess_of(c)->http != NULL ? sess_of(c)->http->reqs : NULL; r != NULL;
             r = r->cnext) {
            if (r->final)
                continue;
            if (r->kind == HREQ_POLL && cap_lower &&
                r->deadline_ms > r->start_ms + next->poll_max_wait_ms) {
                r->deadline_ms = r->start_ms + next->poll_max_wait_ms;
                if (r->held) /* else its wait is armed when it begins to wait */
                    hreq_timer(r, r->deadline_ms - now);
            } else if (r->kind == HREQ_WATCH && hb_lower) {
                hreq_timer(r, next->heartbeat_ms);
            }
        }
}

void edge_http_sess_reload(struct edge *e, const struct http_opts *next)
{
    /* edge_auth_reload ran first: e->auth->users holds the users in force */
    for (struct conn *c = e->conns->list; c != NULL; c = c->next)
        if (sess_of(c)->http != NULL && !sess_of(c)->auth_close &&
            edge_http_sess_holds(sess_of(c)->http) && !still_allowed(c))
            edge_auth_close_later(c, AUTH_CLOSE_NOW);
    rearm_held(e, next);
}
