/*
 * edge_acllog.c - ACL LOG and the denials reported into the host's log;
 * see edge_acllog.h.  Replies are Redis 7.0's: an array of 7-field maps
 * (count, reason, context, object, username, age-seconds, client-info),
 * newest first, 10 by default.
 */
#include "server/edge/edge_acllog.h"

#include <stdlib.h>
#include <string.h>

#include "server/core/acllog.h"
#include "server/core/board.h"
#include "server/core/clock.h"
#include "server/edge/auth.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_client.h"
#include "server/edge/edge_conn.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_subcmd.h"

static struct acllog *log_of(struct conn *c)
{
    return board_acllog(c->e->ctx->board);
}

static uint32_t max_len(struct conn *c)
{
    return (uint32_t)edge_config(c->e)->acllog_max_len;
}

static void add(struct conn *c, enum acllog_reason reason, int multi, const char *object,
                size_t olen, const char *user, size_t ulen, int argc, const struct resp_slice *argv)
{
    if (max_len(c) == 0)
        return;
    struct hkv_buf info = HKV_BUF_INIT;
    if (sess_of(c)->http == NULL)
        client_info_line(c, argc, argv, &info);
    struct acllog_in in = {
        .reason = reason,
        .context = sess_of(c)->http != NULL ? ACLLOG_HTTP
                   : multi ? ACLLOG_MULTI : ACLLOG_TOPLEVEL,
        .object = object, .object_len = olen, .user = user, .user_len = ulen,
        .info = info.data != NULL ? buf_head(&info) : "", .info_len = buf_unread(&info),
    };
    if (sess_of(c)->http != NULL) { /* no CLIENT LIST line: the peer says who */
        in.info = c->addr;
        in.info_len = strlen(c->addr);
    }
    acllog_add(log_of(c), &in, clock_mono_ms(), max_len(c));
    buf_deinit(&info);
}

void edge_acllog_auth(struct conn *c, const char *user, size_t ulen, const char *word,
                      size_t wlen)
{
    struct resp_slice w = {word, wlen};
    add(c, ACLLOG_AUTH, 0, word, wlen, user, ulen, 1, &w);
}

void edge_acllog_denied(struct conn *c, const struct cmd_def *d, int argc,
                        const struct resp_slice *argv, int key, int multi)
{
    const struct auth *a = c->e->auth->users;
    const char *name = auth_user_name(a, sess_of(c)->user);
    const char *object = d->name; /* a subcommand by its full name ("acl|log"), as Redis */
    const struct edge_subcmd *sc = argc >= 2 && subcmd_is_container(d->id)
                                       ? subcmd_lookup(d->id, &argv[1]) : NULL;
    if (sc != NULL)
        object = sc->fullname;
    size_t olen = strlen(object);
    int first, last;
    if (key && cmd_key_range(d, argc, &first, &last)) {
        for (int i = first; i <= last && i < argc; i += d->step > 0 ? d->step : 1)
            if (!auth_key_allowed(a, sess_of(c)->user, argv[i].p, argv[i].len)) {
                object = argv[i].p;
                olen = argv[i].len;
                break;
            }
    }
    add(c, key ? ACLLOG_KEY : ACLLOG_COMMAND, multi, object, olen, name, strlen(name), argc,
        argv);
}

void edge_acllog_cmd(struct conn *c, int argc, const struct resp_slice *argv)
{
    long long count = 10;
    if (argc > 3) {
        resp_add_errorf(&c->out, "ERR unknown subcommand or wrong number of arguments for "
                        "'%.*s'. Try ACL HELP.", (int)argv[1].len, argv[1].p);
        return;
    }
    if (argc == 3) {
        if (edge_arg_is(&argv[2], "reset")) {
            if (acllog_reset(log_of(c)) != 0)
                resp_add_error(&c->out, "ERR the ACL log is busy, try again");
            else
                resp_add_simple(&c->out, "OK");
            return;
        }
        if (edge_arg_ll(&argv[2], &count) != 0) {
            resp_add_error(&c->out, "ERR value is not an integer or out of range");
            return;
        }
        if (count < 0)
            count = 0;
    }
    uint32_t want = count > ACLLOG_CAP ? ACLLOG_CAP : (uint32_t)count;
    struct acllog_entry *e = want > 0 ? malloc(want * sizeof(*e)) : NULL;
    int n = want == 0 ? 0 : e == NULL ? -2 : acllog_read(log_of(c), e, want, max_len(c));
    if (n < 0) {
        resp_add_error(&c->out, n == -2 ? "ERR out of memory" : "ERR the ACL log is busy, try again");
        free(e);
        return;
    }
    int proto = sess_of(c)->proto;
    int64_t now = clock_mono_ms();
    resp_add_array(&c->out, n);
    for (int i = 0; i < n; i++) {
        resp_add_map(&c->out, proto, 7);
        resp_add_bulk_str(&c->out, "count");
        resp_add_int(&c->out, (int64_t)e[i].count);
        resp_add_bulk_str(&c->out, "reason");
        resp_add_bulk_str(&c->out, acllog_reason_name(e[i].reason));
        resp_add_bulk_str(&c->out, "context");
        resp_add_bulk_str(&c->out, acllog_context_name(e[i].context));
        resp_add_bulk_str(&c->out, "object");
        resp_add_bulk(&c->out, e[i].object, e[i].object_len);
        resp_add_bulk_str(&c->out, "username");
        resp_add_bulk(&c->out, e[i].user, e[i].user_len);
        resp_add_bulk_str(&c->out, "age-seconds");
        resp_add_double(&c->out, proto, (double)(now - e[i].updated_ms) / 1000);
        resp_add_bulk_str(&c->out, "client-info");
        resp_add_bulk(&c->out, e[i].info, e[i].info_len);
    }
    free(e);
}
