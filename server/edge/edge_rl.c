/*
 * edge_rl.c - how the edge uses the rate limiter (server/colo/ratelimit.h): the
 * colo's limiter segment attached once, its rules set from the config (and
 * again on every reload), and the check dispatch makes before it runs a
 * limited command.
 *
 * The dispatch pipeline (edge_registry.c) tests e->rl->map[command id]
 * first, so a command with no limit costs two loads and one branch; only a
 * limited command comes here.  The
 * client's key is its peer address (read once per connection, on its first
 * limited command) plus, once it authenticated with AUTH, its user name.
 * A HELLO is charged (to AUTH's limit) only when it carries AUTH.
 * Over the limit the command is answered "-RATELIMITED retry in N ms" and not
 * run; the connection stays open and later commands are checked afresh.
 */
#include "server/edge/edge_rl.h"

#include <stdlib.h>
#include <string.h>

#include "server/core/log.h"
#include "server/edge/auth.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_sess.h"

/* Where a process whose module could not be allocated points e->rl: no
 * limiter, every command unlimited (fail open, as a bad segment does). */
static struct edge_rl rl_off;

static void configure(struct edge_rl *r, const struct edge *e, const struct cfg *cfg)
{
    int unknown = rl_configure(r->lim, cfg);
    r->map = rl_class_map(r->lim);
    if (unknown > 0 && e->ectx->colo_index == 0 && e->ctx->index == 0)
        log_notice("%d ratelimit-command line(s) name no command of this build; they limit "
                   "nothing", unknown);
}

void edge_rl_setup(struct edge *e, const struct cfg *cfg)
{
    struct edge_rl *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        rl_off.map = rl_class_map(NULL);
        e->rl = &rl_off;
        return;
    }
    e->rl = r;
    r->lim = e->ectx->rl;
    r->map = rl_class_map(NULL);
    r->app = e->ectx->app_rl;
    if (r->app != NULL && rl_attach(r->app) != HKV_OK)
        log_warning("the CL.THROTTLE segment failed validation; every CL.THROTTLE is allowed "
                    "and counted in app_ratelimit_failopen");
    if (r->lim == NULL)
        return;
    if (rl_attach(r->lim) != HKV_OK)
        log_warning("the rate-limit segment failed validation; every limited command is let "
                    "through and counted in ratelimit_failopen");
    configure(r, e, cfg);
}

void edge_rl_reload(struct edge_rl *r, const struct edge *e, const struct cfg *next)
{
    if (r->lim != NULL)
        configure(r, e, next);
}

void edge_rl_teardown(struct edge_rl **rp)
{
    if (*rp != &rl_off)
        free(*rp);
    *rp = NULL;
}

int edge_rl_refuse(struct conn *c, const struct cmd_def *d, int argc,
                   const struct resp_slice *argv)
{
    if (d->id == CMD_HELLO) { /* charged to AUTH's limit only when it tries a password */
        int auth = 0;
        for (int i = 1; i < argc && !auth; i++)
            auth = edge_arg_is(&argv[i], "auth");
        if (!auth)
            return 0;
    }
    int64_t retry_ms = 0;
    if (!edge_rl_over(c, d, &retry_ms))
        return 0;
    resp_add_errorf(&c->out, "RATELIMITED retry in %lld ms", (long long)retry_ms);
    return 1;
}

int edge_rl_over(struct conn *c, const struct cmd_def *d, int64_t *retry_ms)
{
    struct edge *e = c->e;
    if (!sess_of(c)->rl_addr_ok) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (getpeername(c->fd, (struct sockaddr *)&ss, &sl) == 0)
            rl_key_addr(&sess_of(c)->rl_addr, (const struct sockaddr *)&ss, sl);
        else
            rl_key_addr(&sess_of(c)->rl_addr, NULL, 0); /* the shared key: still limited */
        sess_of(c)->rl_addr_ok = 1;
    }
    struct rl_key k = sess_of(c)->rl_addr;
    if (sess_of(c)->user >= 0 && !sess_of(c)->user_implicit && e->auth->users != NULL) {
        k.user = auth_user_name(e->auth->users, sess_of(c)->user);
        k.ulen = k.user != NULL ? strlen(k.user) : 0;
    }
    return rl_check(e->rl->lim, &k, e->rl->map[d->id], rl_now(), retry_ms) != RL_ALLOW;
}
