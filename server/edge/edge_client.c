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
#include "server/edge/edge_auth.h"
#include "server/edge/edge_clients.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_subcmd.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_pause.h"
#include "server/edge/edge_op_int.h"
#include "server/edge/edge_track.h"

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
    free(sess_of(c)->name);
    sess_of(c)->name = name;
    clients_publish(c); /* other edges see the new name at once */
    return 0;
}

void client_gone(struct conn *c)
{
    free(sess_of(c)->name);
    sess_of(c)->name = NULL;
}

/* ---- CLIENT INFO / LIST lines ----------------------------------------------- */

/* One line, from a row of the clients board (this edge's clients are
 * rendered from a row filled just now, with the whole name). */
static void render(struct hkv_buf *b, const struct board_client *r, const char *name,
                   size_t name_len, uint64_t argv_mem, int64_t now)
{
    const char *cmd = r->cmd != 0xffff ? subcmd_stat_name(r->cmd) : NULL;
    char events[3] = {r->events[0], r->events[0] ? r->events[1] : '\0', '\0'};
    buf_printf(b,
               "id=%llu addr=%s laddr=%s fd=%d name=%.*s age=%lld idle=%lld flags=%s db=0 sub=%u "
               "psub=%u ssub=0 multi=-1 qbuf=%llu qbuf-free=%llu argv-mem=%llu multi-mem=0 "
               "rbs=%llu rbp=%llu obl=%llu oll=%llu omem=%llu tot-mem=%llu events=%s cmd=%s "
               "user=%s redir=-1 resp=%u\n",
               (unsigned long long)r->id, r->addr, r->laddr, (int)r->fd, (int)name_len, name,
               (long long)(now - r->created_ms) / 1000, (long long)(now - r->last_ms) / 1000,
               r->flags & BOARD_CLIENT_F_MONITOR  ? "O"
               : r->flags & BOARD_CLIENT_F_PUBSUB ? "P"
                                                  : "N",
               r->sub, r->psub, (unsigned long long)r->qbuf,
               (unsigned long long)r->qbuf_free, (unsigned long long)argv_mem,
               (unsigned long long)r->rbs, (unsigned long long)r->rbp,
               (unsigned long long)r->obl, (unsigned long long)r->oll,
               (unsigned long long)r->omem, (unsigned long long)(r->tot_mem + argv_mem), events,
               cmd != NULL ? cmd : "NULL", r->user, r->resp);
}

/* x's line, asked by c (whose own argv counts as its argv-mem). */
static void local_line(struct conn *c, struct conn *x, int argc, const struct resp_slice *argv,
                       struct hkv_buf *b, int64_t now)
{
    struct board_client r;
    memset(&r, 0, sizeof(r));
    clients_fill(x, &r);
    r.id = x->id;
    uint64_t argv_mem = 0;
    if (x == c)
        for (int i = 0; i < argc; i++)
            argv_mem += argv[i].len;
    render(b, &r, sess_of(x)->name ? sess_of(x)->name : "",
           sess_of(x)->name ? strlen(sess_of(x)->name) : 0, argv_mem, now);
}

void client_info_line(struct conn *c, int argc, const struct resp_slice *argv, struct hkv_buf *b)
{
    local_line(c, c, argc, argv, b, clock_mono_ms());
    if (buf_unread(b) > 0 && b->data[b->len - 1] == '\n')
        b->len--; /* Redis's catClientInfoString: no line end */
}

/* The lines of a listing, sorted by id (creation order, as Redis lists). */
struct listing {
    struct hkv_buf text;
    struct line { uint64_t id; size_t off, len; } *lines;
    size_t n, cap;
    int64_t now;
    uint64_t only_id;             /* 0: every client */
    int type;                     /* TYPE: 0 any, 1 normal, 2 pubsub (subscribed) */
};

static int type_ok(const struct listing *l, int pubsub)
{
    return l->type == 0 || (l->type == 2) == (pubsub != 0);
}

static void listing_mark(struct listing *l, uint64_t id, size_t off)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct line *p = realloc(l->lines, cap * sizeof(*p));
        if (p == NULL) {
            l->text.len = off; /* dropped: out of memory */
            return;
        }
        l->lines = p;
        l->cap = cap;
    }
    l->lines[l->n++] = (struct line){id, off, l->text.len - off};
}

static void listing_other(const struct board_client *r, uint32_t slot, uint32_t idx, void *arg)
{
    struct listing *l = arg;
    uint64_t id = atomic_load_explicit(&r->id, memory_order_relaxed);
    if ((l->only_id != 0 && id != l->only_id) ||
        !type_ok(l, (r->flags & BOARD_CLIENT_F_PUBSUB) != 0))
        return;
    size_t off = l->text.len;
    uint32_t n = r->name_len < BOARD_CLIENT_NAME ? r->name_len : BOARD_CLIENT_NAME;
    render(&l->text, r, r->name, n, 0, l->now);
    listing_mark(l, id, off);
}

static int by_id(const void *a, const void *b)
{
    const struct line *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Every client of the host (only_id 0) or the one with that id. */
static void listing_fill(struct listing *l, struct conn *c, int argc,
                         const struct resp_slice *argv)
{
    for (struct conn *x = c->e->conns->list; x != NULL; x = x->next) {
        const struct pubsub_sess *ps = sess_of(x)->pubsub;
        if ((l->only_id != 0 && x->id != l->only_id) ||
            !type_ok(l, ps != NULL && ps->nch + ps->npat > 0))
            continue;
        size_t off = l->text.len;
        local_line(c, x, argc, argv, &l->text, l->now);
        listing_mark(l, x->id, off);
    }
    clients_each_other(c->e, listing_other, l);
}

static void listing_reply(struct conn *c, struct listing *l)
{
    qsort(l->lines, l->n, sizeof(*l->lines), by_id);
    struct hkv_buf out = HKV_BUF_INIT;
    for (size_t i = 0; i < l->n; i++)
        buf_append(&out, l->text.data + l->lines[i].off, l->lines[i].len);
    resp_add_verbatim(&c->out, sess_of(c)->proto, buf_head(&out), buf_unread(&out));
    buf_deinit(&out);
    buf_deinit(&l->text);
    free(l->lines);
}

/* CLIENT LIST [TYPE type | ID id...]: the clients of every edge of the
 * host.  A hotkvd client is of type pubsub while subscribed (either
 * protocol, as Redis), else normal (no replicas or masters). */
static void client_list(struct conn *c, int argc, const struct resp_slice *argv)
{
    int all = 1, type = 0;
    if (argc == 4 && edge_arg_is(&argv[2], "type")) {
        const struct resp_slice *t = &argv[3];
        if (!edge_arg_is(t, "normal") && !edge_arg_is(t, "master") && !edge_arg_is(t, "replica") &&
            !edge_arg_is(t, "slave") && !edge_arg_is(t, "pubsub")) {
            resp_add_errorf(&c->out, "ERR Unknown client type '%.*s'", (int)t->len, t->p);
            return;
        }
        all = edge_arg_is(t, "normal") || edge_arg_is(t, "pubsub");
        type = edge_arg_is(t, "normal") ? 1 : edge_arg_is(t, "pubsub") ? 2 : 0;
    } else if (argc > 3 && edge_arg_is(&argv[2], "id")) {
        for (int j = 3; j < argc; j++) {
            long long id;
            if (edge_arg_ll(&argv[j], &id) != 0) {
                resp_add_error(&c->out, "ERR Invalid client ID");
                return;
            }
        }
    } else if (argc != 2) {
        resp_add_error(&c->out, "ERR syntax error");
        return;
    }
    struct listing l = {.text = HKV_BUF_INIT, .now = clock_mono_ms(), .type = type};
    if (argc > 3 && edge_arg_is(&argv[2], "id")) {
        /* in the order asked, as Redis */
        struct hkv_buf out = HKV_BUF_INIT;
        for (int j = 3; j < argc; j++) {
            long long id;
            edge_arg_ll(&argv[j], &id);
            l.only_id = (uint64_t)id;
            l.n = 0;
            buf_reset(&l.text);
            if (id > 0)
                listing_fill(&l, c, argc, argv);
            if (l.n > 0)
                buf_append(&out, l.text.data + l.lines[0].off, l.lines[0].len);
        }
        resp_add_verbatim(&c->out, sess_of(c)->proto, buf_head(&out), buf_unread(&out));
        buf_deinit(&out);
        buf_deinit(&l.text);
        free(l.lines);
        return;
    }
    if (all)
        listing_fill(&l, c, argc, argv);
    listing_reply(c, &l);
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
    char *dst = edge_arg_is(&argv[2], "lib-name")  ? sess_of(c)->lib_name
                : edge_arg_is(&argv[2], "lib-ver") ? sess_of(c)->lib_ver
                                                : NULL;
    size_t cap =
        dst == sess_of(c)->lib_name ? sizeof(sess_of(c)->lib_name) : sizeof(sess_of(c)->lib_ver);
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

/* CLIENT UNBLOCK id [TIMEOUT|ERROR]: no hotkvd client ever blocks, so 0. */
static void unblock(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (argc > 4) {
        resp_add_errorf(&c->out, "ERR unknown subcommand or wrong number of arguments for "
                                 "'%.*s'. Try CLIENT HELP.", (int)argv[1].len, argv[1].p);
        return;
    }
    if (argc == 4 && !edge_arg_is(&argv[3], "timeout") && !edge_arg_is(&argv[3], "error")) {
        resp_add_error(&c->out, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
        return;
    }
    long long id;
    if (edge_arg_ll(&argv[2], &id) != 0) {
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
    } else if (edge_arg_is(sub, "id")) {
        resp_add_int(&c->out, (int64_t)c->id);
    } else if (edge_arg_is(sub, "getname")) {
        if (sess_of(c)->name != NULL)
            resp_add_bulk_str(&c->out, sess_of(c)->name);
        else
            resp_add_null(&c->out, sess_of(c)->proto);
    } else if (edge_arg_is(sub, "setname")) {
        if (client_set_name(c, &argv[2]) == 0)
            resp_add_simple(&c->out, "OK");
    } else if (edge_arg_is(sub, "setinfo")) {
        setinfo(c, argv);
    } else if (edge_arg_is(sub, "meta")) {
        if (edge_arg_is(&argv[2], "on") || edge_arg_is(&argv[2], "off")) {
            sess_of(c)->meta = edge_arg_is(&argv[2], "on");
            resp_add_simple(&c->out, "OK");
        } else {
            resp_add_error(&c->out, "ERR syntax error");
        }
    } else if (edge_arg_is(sub, "info")) {
        struct hkv_buf b = HKV_BUF_INIT;
        local_line(c, c, argc, argv, &b, clock_mono_ms());
        resp_add_verbatim(&c->out, sess_of(c)->proto, buf_head(&b), buf_unread(&b));
        buf_deinit(&b);
    } else if (edge_arg_is(sub, "list")) {
        client_list(c, argc, argv);
    } else if (edge_arg_is(sub, "kill")) {
        client_kill_cmd(c, argc, argv);
    } else if (edge_arg_is(sub, "pause")) {
        edge_pause_cmd(c, argc, argv);
    } else if (edge_arg_is(sub, "unpause")) {
        edge_unpause_cmd(c);
    } else if (edge_arg_is(sub, "reply")) {
        if (edge_arg_is(&argv[2], "on"))
            conn_reply_mode(c, CONN_REPLY_ON), resp_add_simple(&c->out, "OK");
        else if (edge_arg_is(&argv[2], "off"))
            conn_reply_mode(c, CONN_REPLY_OFF);
        else if (edge_arg_is(&argv[2], "skip"))
            conn_reply_mode(c, CONN_REPLY_SKIP);
        else
            resp_add_error(&c->out, "ERR syntax error");
    } else if (edge_arg_is(sub, "no-evict")) {
        /* hotkvd never evicts clients for memory: on and off are both true */
        if (edge_arg_is(&argv[2], "on") || edge_arg_is(&argv[2], "off"))
            resp_add_simple(&c->out, "OK");
        else
            resp_add_error(&c->out, "ERR syntax error");
    } else if (edge_arg_is(sub, "getredir")) {
        edge_track_cmd_getredir(c);
    } else if (edge_arg_is(sub, "trackinginfo")) {
        edge_track_cmd_trackinginfo(c);
    } else if (edge_arg_is(sub, "tracking")) {
        edge_track_cmd_tracking(c, argc, argv);
    } else if (edge_arg_is(sub, "caching")) {
        edge_track_cmd_caching(c, argc, argv);
    } else if (edge_arg_is(sub, "unblock")) {
        unblock(c, argc, argv);
    } else if (edge_arg_is(sub, "help")) {
        simple_help(c);
    } else {
        resp_add_errorf(&c->out, "ERR CLIENT %.*s is not supported by hotkvd", (int)sub->len,
                        sub->p);
    }
}
