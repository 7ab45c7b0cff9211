/*
 * edge_acl.c - ACL's read side over the config file's users (server/edge/
 * auth.h): WHOAMI, USERS, LIST, GETUSER, DRYRUN, CAT, GENPASS, HELP, with
 * Redis 7.0's replies and texts.  Users are the config's `user` lines and
 * change by reload, so the writing subcommands (SETUSER, DELUSER, LOAD,
 * SAVE) are refused with that said; LOG is edge_acllog.c's.
 *
 * hotkvd's categories are read, write and admin (+@all is the three); a
 * user's rules are shown as Redis writes them: "+@all" or "-@all +@read
 * ...", "~pattern" per key pattern, "&*" (no channel rules: every user may
 * use every channel), passwords as the SHA-256 hex digests Redis shows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "server/edge/auth.h"
#include "server/edge/edge_acllog.h"
#include "server/edge/edge_acl.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_sess.h"

static const struct auth *users_of(const struct conn *c)
{
    return c->e->auth->users;
}

/* The ids of the users, sorted by name (as Redis's rax lists them). */
static int *sorted_ids(const struct auth *a, size_t *n)
{
    *n = auth_user_count(a);
    int *ids = malloc((*n ? *n : 1) * sizeof(*ids));
    if (ids == NULL)
        return NULL;
    for (size_t i = 0; i < *n; i++)
        ids[i] = (int)i;
    for (size_t i = 1; i < *n; i++) /* a handful of users: insertion sort */
        for (size_t j = i; j > 0 && strcmp(auth_user_name(a, ids[j - 1]),
                                           auth_user_name(a, ids[j])) > 0; j--) {
            int t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    return ids;
}

/* "+@all", or "-@all" and the categories allowed. */
static void commands_text(unsigned cats, char *out, size_t cap)
{
    if (cats == CFG_ACL_ALL) {
        snprintf(out, cap, "+@all");
        return;
    }
    snprintf(out, cap, "-@all%s%s%s", (cats & CFG_ACL_READ) ? " +@read" : "",
             (cats & CFG_ACL_WRITE) ? " +@write" : "", (cats & CFG_ACL_ADMIN) ? " +@admin" : "");
}

static void hex(const unsigned char *d, char out[2 * CFG_DIGEST_LEN + 1])
{
    for (int i = 0; i < CFG_DIGEST_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* "~a ~b" into b (appended). */
static void keys_text(struct hkv_buf *b, const struct auth_user_view *v)
{
    for (size_t i = 0; i < v->nkeys; i++) {
        if (i > 0)
            buf_append(b, " ", 1);
        buf_append(b, "~", 1);
        buf_append(b, v->keys[i], v->keylens[i]);
    }
}

static void acl_list(struct conn *c)
{
    const struct auth *a = users_of(c);
    size_t n;
    int *ids = sorted_ids(a, &n);
    if (ids == NULL) {
        resp_add_error(&c->out, "ERR out of memory");
        return;
    }
    resp_add_array(&c->out, (int64_t)n);
    struct hkv_buf line = HKV_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        struct auth_user_view v;
        auth_user_view(a, ids[i], &v);
        buf_reset(&line);
        buf_printf(&line, "user %s %s", v.name, v.on ? "on" : "off");
        if (v.nopass)
            buf_append_str(&line, " nopass");
        for (size_t k = 0; k < v.ndigests; k++) {
            char h[2 * CFG_DIGEST_LEN + 1];
            hex(v.digests[k], h);
            buf_printf(&line, " #%s", h);
        }
        if (v.nkeys > 0) {
            buf_append(&line, " ", 1);
            keys_text(&line, &v);
        }
        char cmds[64];
        commands_text(v.cats, cmds, sizeof(cmds));
        buf_printf(&line, " &* %s", cmds);
        resp_add_bulk(&c->out, buf_head(&line), buf_unread(&line));
    }
    buf_deinit(&line);
    free(ids);
}

static void acl_getuser(struct conn *c, const struct resp_slice *name)
{
    const struct auth *a = users_of(c);
    int id = auth_user_find(a, name->p, name->len);
    int proto = sess_of(c)->proto;
    if (id < 0) {
        resp_add_null(&c->out, proto);
        return;
    }
    struct auth_user_view v;
    auth_user_view(a, id, &v);
    resp_add_map(&c->out, proto, 6);
    resp_add_bulk_str(&c->out, "flags");
    resp_add_set(&c->out, proto, v.nopass ? 2 : 1); /* a set under RESP3, as Redis's */
    resp_add_bulk_str(&c->out, v.on ? "on" : "off");
    if (v.nopass)
        resp_add_bulk_str(&c->out, "nopass");
    resp_add_bulk_str(&c->out, "passwords");
    resp_add_array(&c->out, (int64_t)v.ndigests);
    for (size_t k = 0; k < v.ndigests; k++) {
        char h[2 * CFG_DIGEST_LEN + 1];
        hex(v.digests[k], h);
        resp_add_bulk_str(&c->out, h);
    }
    char cmds[64];
    commands_text(v.cats, cmds, sizeof(cmds));
    resp_add_bulk_str(&c->out, "commands");
    resp_add_bulk_str(&c->out, cmds);
    struct hkv_buf k = HKV_BUF_INIT;
    keys_text(&k, &v);
    resp_add_bulk_str(&c->out, "keys");
    resp_add_bulk(&c->out, buf_head(&k), buf_unread(&k));
    buf_deinit(&k);
    resp_add_bulk_str(&c->out, "channels");
    resp_add_bulk_str(&c->out, "&*");
    resp_add_bulk_str(&c->out, "selectors");
    resp_add_array(&c->out, 0);
}

/* ACL DRYRUN user command [arg ...]: what the auth gate would say. */
static void acl_dryrun(struct conn *c, int argc, const struct resp_slice *argv)
{
    const struct auth *a = users_of(c);
    int id = auth_user_find(a, argv[2].p, argv[2].len);
    if (id < 0) {
        resp_add_errorf(&c->out, "ERR User '%.*s' not found", (int)argv[2].len, argv[2].p);
        return;
    }
    const struct cmd_def *d = cmd_lookup(argv[3].p, argv[3].len);
    if (d == NULL) {
        resp_add_errorf(&c->out, "ERR Command '%.*s' not found", (int)argv[3].len, argv[3].p);
        return;
    }
    int n = argc - 3;
    if (!cmd_arity_ok(d, n)) {
        resp_add_errorf(&c->out, "ERR wrong number of arguments for '%s' command", d->name);
        return;
    }
    const struct resp_slice *cargv = &argv[3];
    switch (auth_allowed(a, id, d, n, cargv)) {
    case AUTH_OK:
        resp_add_simple(&c->out, "OK");
        return;
    case AUTH_NOPERM_CMD: {
        char msg[160];
        int len = snprintf(msg, sizeof(msg), "This user has no permissions to run the '%s' "
                                             "command", d->name);
        resp_add_bulk(&c->out, msg, (size_t)len);
        return;
    }
    default: {
        int first, last;
        int nk = cmd_key_range(d, n, &first, &last);
        for (int i = first; nk > 0 && i <= last; i += d->step)
            if (!auth_key_allowed(a, id, cargv[i].p, cargv[i].len)) {
                struct hkv_buf m = HKV_BUF_INIT;
                buf_append_str(&m, "This user has no permissions to access the '");
                buf_append(&m, cargv[i].p, cargv[i].len);
                buf_append_str(&m, "' key");
                resp_add_bulk(&c->out, buf_head(&m), buf_unread(&m));
                buf_deinit(&m);
                return;
            }
        resp_add_bulk_str(&c->out, "This user has no permissions to access one of the keys");
    }
    }
}

static const char *const CATEGORIES[] = {"read", "write", "admin"};

/* ACL CAT [category]: hotkvd's categories, or the commands of one. */
static void acl_cat(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (argc == 2) {
        resp_add_array(&c->out, 3);
        for (int i = 0; i < 3; i++)
            resp_add_bulk_str(&c->out, CATEGORIES[i]);
        return;
    }
    static const unsigned flag[] = {CMD_F_READ, CMD_F_WRITE, CMD_F_ADMIN};
    int which = -1;
    for (int i = 0; i < 3; i++)
        if (edge_arg_is(&argv[2], CATEGORIES[i]))
            which = i;
    if (which < 0) {
        resp_add_errorf(&c->out, "ERR Unknown category '%.*s'", (int)argv[2].len, argv[2].p);
        return;
    }
    int64_t n = 0;
    for (int id = 0; id < CMD_COUNT; id++)
        n += (cmd_get((enum cmd_id)id)->flags & flag[which]) != 0;
    resp_add_array(&c->out, n);
    for (int id = 0; id < CMD_COUNT; id++)
        if (cmd_get((enum cmd_id)id)->flags & flag[which])
            resp_add_bulk_str(&c->out, cmd_get((enum cmd_id)id)->name);
}

/* ACL GENPASS [bits]: Redis's random hex (256 bits unless told; rounded up to 4). */
static void acl_genpass(struct conn *c, int argc, const struct resp_slice *argv)
{
    long long bits = 256;
    if (argc == 3 && edge_arg_ll(&argv[2], &bits) != 0) {
        resp_add_error(&c->out, "ERR value is not an integer or out of range");
        return;
    }
    if (bits <= 0 || bits > 4096) {
        resp_add_error(&c->out, "ERR ACL GENPASS argument must be the number of bits for the "
                                "output password, a positive number up to 4096");
        return;
    }
    size_t chars = (size_t)((bits + 3) / 4), bytes = (chars + 1) / 2;
    unsigned char r[512];
    char out[1025];
    if (getrandom(r, bytes, 0) != (ssize_t)bytes) {
        resp_add_error(&c->out, "ERR no random bytes available");
        return;
    }
    for (size_t i = 0; i < bytes; i++)
        snprintf(out + 2 * i, 3, "%02x", r[i]);
    resp_add_bulk(&c->out, out, chars);
}

static const char *const help[] = {
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List hotkvd's command categories (read, write, admin), or the commands of one.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing it.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "Users are the config file's `user` lines, changed by a reload (SIGHUP):",
    "SETUSER, DELUSER, LOAD, SAVE and LOG are not supported.",
    "HELP",
    "    Print this help.",
};

void edge_cmd_acl(struct conn *c, int argc, const struct resp_slice *argv)
{
    const struct resp_slice *sub = &argv[1];
    if (edge_arg_is(sub, "whoami")) {
        resp_add_bulk_str(&c->out, auth_user_name(users_of(c), sess_of(c)->user));
    } else if (edge_arg_is(sub, "users")) {
        size_t n;
        int *ids = sorted_ids(users_of(c), &n);
        if (ids == NULL) {
            resp_add_error(&c->out, "ERR out of memory");
            return;
        }
        resp_add_array(&c->out, (int64_t)n);
        for (size_t i = 0; i < n; i++)
            resp_add_bulk_str(&c->out, auth_user_name(users_of(c), ids[i]));
        free(ids);
    } else if (edge_arg_is(sub, "list")) {
        acl_list(c);
    } else if (edge_arg_is(sub, "getuser")) {
        acl_getuser(c, &argv[2]);
    } else if (edge_arg_is(sub, "dryrun")) {
        acl_dryrun(c, argc, argv);
    } else if ((edge_arg_is(sub, "cat") || edge_arg_is(sub, "genpass")) && argc > 3) {
        resp_add_errorf(&c->out, "ERR unknown subcommand or wrong number of arguments for "
                        "'%.*s'. Try ACL HELP.", (int)sub->len, sub->p);
    } else if (edge_arg_is(sub, "cat")) {
        acl_cat(c, argc, argv);
    } else if (edge_arg_is(sub, "genpass")) {
        acl_genpass(c, argc, argv);
    } else if (edge_arg_is(sub, "log")) {
        edge_acllog_cmd(c, argc, argv);
    } else if (edge_arg_is(sub, "help")) {
        resp_add_array(&c->out, (int64_t)(sizeof(help) / sizeof(help[0])));
        for (size_t i = 0; i < sizeof(help) / sizeof(help[0]); i++)
            resp_add_simple(&c->out, help[i]);
    } else {
        resp_add_errorf(&c->out, "ERR ACL %.*s is not supported by hotkvd: users are the config "
                        "file's `user` lines, changed by a reload", (int)sub->len, sub->p);
    }
}
