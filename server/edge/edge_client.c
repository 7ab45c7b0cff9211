/*
 * edge_client.c - CLIENT (edge_client.h).
 */
#include "server/edge/edge_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/edge/auth.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_subcmd.h"

#define ERR_NAME "ERR Client names cannot contain spaces, newlines or special characters."

int client_set_name(struct conn *c, const struct resp_slice *v)
{
    /* Redis checks the bytes as (signed) chars: anything outside '!'..'~'
     * would break CLIENT LIST's space-separated fields. */
    for (size_t i = 0; i < v->len; i++)
        if (v->p[i] < '!' || v->p[i] > '~') {
            resp_add_error(&c->out, ERR_NAME);
            return -1;
        }
    char *name = NULL;
    if (v->len > 0) {
        name = malloc(v->len + 1);
        if (name == NULL) {
            resp_add_error(&c->out, "ERR out of memory");
            return -1;
        }
        memcpy(name, v->p, v->len);
        name[v->len] = '\0';
    }
    free(c->name);
    c->name = name;
    return 0;
}

void client_gone(struct conn *c)
{
    free(c->name);
    c->name = NULL;
}

/* ---- CLIENT INFO / LIST lines ----------------------------------------------- */

/* One line of CLIENT LIST for x, asked by c (whose own argv is argv). */
static void line(struct conn *c, struct conn *x, int argc, const struct resp_slice *argv,
                 struct hkv_buf *b, int64_t now)
{
    size_t argv_mem = 0;
    if (x == c)
        for (int i = 0; i < argc; i++)
            argv_mem += argv[i].len;
    size_t omem = 0;
    uint32_t oll = 0;
    for (struct rslot *s = x->sq_head; s != NULL; s = s->next, oll++)
        omem += s->buf.cap;
    int writing = event_pending(x->wev, EV_WRITE, NULL) != 0;
    buf_printf(b,
               "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=N db=0 sub=0 "
               "psub=0 ssub=0 multi=-1 qbuf=%zu qbuf-free=%zu argv-mem=%zu multi-mem=0 rbs=%zu "
               "rbp=%zu obl=%zu oll=%u omem=%zu tot-mem=%zu events=%s cmd=%s user=%s redir=-1 "
               "resp=%d\n",
               (unsigned long long)x->id, x->addr, x->laddr, x->fd, x->name ? x->name : "",
               (long long)(now - x->created_ms) / 1000, (long long)(now - x->last_ms) / 1000,
               buf_unread(&x->in), x->in.cap - x->in.len, argv_mem, x->out.cap, x->out_peak,
               buf_unread(&x->out), oll, omem,
               sizeof(*x) + x->in.cap + x->out.cap + omem + argv_mem,
               x->paused ? (writing ? "w" : "") : (writing ? "rw" : "r"),
               x->last_cmd ? x->last_cmd : "NULL",
               x->user >= 0 ? auth_user_name(c->e->auth, x->user) : "default", x->proto);
}

/* CLIENT LIST [TYPE type | ID id...]: every hotkvd client is of type
 * normal (no replicas, masters or pub/sub). */
static void client_list(struct conn *c, int argc, const struct resp_slice *argv)
{
    int all = 1;
    if (argc == 4 && slice_is(&argv[2], "type")) {
        const struct resp_slice *t = &argv[3];
        if (!slice_is(t, "normal") && !slice_is(t, "master") && !slice_is(t, "replica") &&
            !slice_is(t, "slave") && !slice_is(t, "pubsub")) {
            resp_add_errorf(&c->out, "ERR Unknown client type '%.*s'", (int)t->len, t->p);
            return;
        }
        all = slice_is(t, "normal");
    } else if (argc > 3 && slice_is(&argv[2], "id")) {
        for (int j = 3; j < argc; j++) {
            long long id;
            if (arg_ll(&argv[j], &id) != 0) {
                resp_add_error(&c->out, "ERR Invalid client ID");
                return;
            }
        }
    } else if (argc != 2) {
        resp_add_error(&c->out, "ERR syntax error");
        return;
    }
    struct hkv_buf b = HKV_BUF_INIT;
    int64_t now = clock_mono_ms();
    if (argc > 3 && slice_is(&argv[2], "id")) {
        for (int j = 3; j < argc; j++) {
            long long id;
            arg_ll(&argv[j], &id);
            for (struct conn *x = c->e->conns; x != NULL; x = x->next)
                if ((long long)x->id == id)
                    line(c, x, argc, argv, &b, now);
        }
    } else if (all) {
        for (struct conn *x = c->e->conns; x != NULL; x = x->next)
            line(c, x, argc, argv, &b, now);
    }
    resp_add_verbatim(&c->out, c->proto, buf_head(&b), buf_unread(&b));
    buf_deinit(&b);
}

/* ---- the rest ------------------------------------------------------------------ */

static const char *const help[] = {
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections, on every edge of this host. Options are:",
    "    * ADDR <ip:port>",
    "      Kill connections made from the specified address",
    "    * LADDR <ip:port>",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * ID <client-id>",
    "      Kill the connection with that ID.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections on every edge of this host. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "    * ID <client-id> [<client-id> ...]",
    "      Return clients with the given IDs.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "META (ON|OFF)",
    "    RESP3: precede each read reply with an attribute (age_ms, stamp, stale, degraded).",
    "HELP",
    "    Prints this help.",
};

static void simple_help(struct conn *c)
{
    resp_add_array(&c->out, (int64_t)(sizeof(help) / sizeof(help[0])));
    for (size_t i = 0; i < sizeof(help) / sizeof(help[0]); i++)
        resp_add_simple(&c->out, help[i]);
}

static void setinfo(struct conn *c, const struct resp_slice *argv)
{
    char *dst = slice_is(&argv[2], "lib-name") ? c->lib_name
                : slice_is(&argv[2], "lib-ver") ? c->lib_ver : NULL;
    size_t cap = dst == c->lib_name ? sizeof(c->lib_name) : sizeof(c->lib_ver);
    int ok = dst != NULL && argv[3].len < cap;
    for (size_t i = 0; ok && i < argv[3].len; i++)
        ok = argv[3].p[i] >= '!' && argv[3].p[i] <= '~';
    if (!ok) {
        resp_add_errorf(&c->out, "ERR Unrecognized option '%.*s' or invalid value",
                        (int)argv[2].len, argv[2].p);
        return;
    }
    memcpy(dst, argv[3].p, argv[3].len);
    dst[argv[3].len] = '\0';
    resp_add_simple(&c->out, "OK");
}

static void trackinginfo(struct conn *c)
{
    resp_add_map(&c->out, c->proto, 3);
    resp_add_bulk_str(&c->out, "flags");
    resp_add_set(&c->out, c->proto, 1);
    resp_add_bulk_str(&c->out, "off");
    resp_add_bulk_str(&c->out, "redirect");
    resp_add_int(&c->out, -1);
    resp_add_bulk_str(&c->out, "prefixes");
    resp_add_array(&c->out, 0);
}

/* CLIENT UNBLOCK id [TIMEOUT|ERROR]: no hotkvd client ever blocks, so 0. */
static void unblock(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (argc > 4) {
        resp_add_errorf(&c->out, "ERR unknown subcommand or wrong number of arguments for "
                                 "'%.*s'. Try CLIENT HELP.", (int)argv[1].len, argv[1].p);
        return;
    }
    if (argc == 4 && !slice_is(&argv[3], "timeout") && !slice_is(&argv[3], "error")) {
        resp_add_error(&c->out, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
        return;
    }
    long long id;
    if (arg_ll(&argv[2], &id) != 0) {
        resp_add_error(&c->out, "ERR value is not an integer or out of range");
        return;
    }
    resp_add_int(&c->out, 0);
}

void edge_cmd_client(struct conn *c, int argc, const struct resp_slice *argv)
{
    const struct resp_slice *sub = &argv[1];
    const struct edge_subcmd *s = subcmd_lookup(CMD_CLIENT, sub);
    if (s != NULL && !s->served) {
        resp_add_errorf(&c->out, "ERR CLIENT %s is not supported by hotkvd", s->name);
    } else if (slice_is(sub, "id")) {
        resp_add_int(&c->out, (int64_t)c->id);
    } else if (slice_is(sub, "getname")) {
        if (c->name != NULL)
            resp_add_bulk_str(&c->out, c->name);
        else
            resp_add_null(&c->out, c->proto);
    } else if (slice_is(sub, "setname")) {
        if (client_set_name(c, &argv[2]) == 0)
            resp_add_simple(&c->out, "OK");
    } else if (slice_is(sub, "setinfo")) {
        setinfo(c, argv);
    } else if (slice_is(sub, "meta")) {
        if (slice_is(&argv[2], "on") || slice_is(&argv[2], "off")) {
            c->meta = slice_is(&argv[2], "on");
            resp_add_simple(&c->out, "OK");
        } else {
            resp_add_error(&c->out, "ERR syntax error");
        }
    } else if (slice_is(sub, "info")) {
        struct hkv_buf b = HKV_BUF_INIT;
        line(c, c, argc, argv, &b, clock_mono_ms());
        resp_add_verbatim(&c->out, c->proto, buf_head(&b), buf_unread(&b));
        buf_deinit(&b);
    } else if (slice_is(sub, "list")) {
        client_list(c, argc, argv);
    } else if (slice_is(sub, "no-evict")) {
        /* hotkvd never evicts clients for memory: on and off are both true */
        if (slice_is(&argv[2], "on") || slice_is(&argv[2], "off"))
            resp_add_simple(&c->out, "OK");
        else
            resp_add_error(&c->out, "ERR syntax error");
    } else if (slice_is(sub, "getredir")) {
        resp_add_int(&c->out, -1); /* no tracking */
    } else if (slice_is(sub, "trackinginfo")) {
        trackinginfo(c);
    } else if (slice_is(sub, "unblock")) {
        unblock(c, argc, argv);
    } else if (slice_is(sub, "help")) {
        simple_help(c);
    } else {
        resp_add_errorf(&c->out, "ERR CLIENT %.*s is not supported by hotkvd", (int)sub->len,
                        sub->p);
    }
}
