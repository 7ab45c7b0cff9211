/*
 * edge_cmd.c - the connection and server commands an edge answers itself:
 * PING ECHO HELLO AUTH SELECT QUIT RESET TIME CLIENT CONFIG INFO HOTKEYS.
 * Data commands live in edge_read.c, edge_write.c and edge_scan.c, COMMAND
 * with the table it describes (edge_registry.c); this file never talks to
 * an owner.
 */
#include "server/edge/edge_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "server/core/clock.h"
#include "server/core/ctl.h"
#include "server/core/version.h"
#include "server/edge/auth.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_op.h"
#include "server/edge/info.h"

void edge_cmd_ping(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (argc > 2) {
        resp_add_error(&c->out, "ERR wrong number of arguments for 'ping' command");
        return;
    }
    if (argc == 2)
        resp_add_bulk(&c->out, argv[1].p, argv[1].len);
    else
        resp_add_simple(&c->out, "PONG");
}

void edge_cmd_echo(struct conn *c, int argc, const struct resp_slice *argv)
{
    resp_add_bulk(&c->out, argv[1].p, argv[1].len);
}

void edge_cmd_quit(struct conn *c, int argc, const struct resp_slice *argv)
{
    resp_add_simple(&c->out, "OK");
    c->close_after_write = 1;
}

void edge_cmd_select(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (argv[1].len == 1 && argv[1].p[0] == '0')
        resp_add_simple(&c->out, "OK");
    else
        resp_add_error(&c->out, "ERR DB index is out of range");
}

void edge_cmd_time(struct conn *c, int argc, const struct resp_slice *argv)
{
    int64_t now = clock_unix_us();
    char s[32], us[16];
    int n1 = snprintf(s, sizeof(s), "%lld", (long long)(now / 1000000));
    int n2 = snprintf(us, sizeof(us), "%ld", (long)(now % 1000000));
    resp_add_array(&c->out, 2);
    resp_add_bulk(&c->out, s, (size_t)n1);
    resp_add_bulk(&c->out, us, (size_t)n2);
}

static void set_name(struct conn *c, const struct resp_slice *v)
{
    size_t n = v->len < sizeof(c->name) - 1 ? v->len : sizeof(c->name) - 1;
    memcpy(c->name, v->p, n);
    c->name[n] = '\0';
}

/* Redis refuses names with spaces or non-printable bytes. */
static int name_ok(const struct resp_slice *v)
{
    if (v->len >= 128)
        return 0;
    for (size_t i = 0; i < v->len; i++)
        if (v->p[i] < '!' || v->p[i] > '~')
            return 0;
    return 1;
}

static void hello_reply(struct conn *c)
{
    resp_add_map(&c->out, c->proto, 7);
    resp_add_bulk_str(&c->out, "server");
    resp_add_bulk_str(&c->out, "hotkvd");
    resp_add_bulk_str(&c->out, "version");
    resp_add_bulk_str(&c->out, HOTKVD_VERSION);
    resp_add_bulk_str(&c->out, "proto");
    resp_add_int(&c->out, c->proto);
    resp_add_bulk_str(&c->out, "id");
    resp_add_int(&c->out, (int64_t)c->id);
    resp_add_bulk_str(&c->out, "mode");
    resp_add_bulk_str(&c->out, "standalone");
    resp_add_bulk_str(&c->out, "role");
    resp_add_bulk_str(&c->out, "master");
    resp_add_bulk_str(&c->out, "modules");
    resp_add_array(&c->out, 0);
}

void edge_cmd_hello(struct conn *c, int argc, const struct resp_slice *argv)
{
    int proto = c->proto;
    int i = 1;
    if (argc >= 2) {
        if (argv[1].len == 1 && (argv[1].p[0] == '2' || argv[1].p[0] == '3')) {
            proto = argv[1].p[0] - '0';
        } else {
            resp_add_error(&c->out, "NOPROTO unsupported protocol version");
            return;
        }
        i = 2;
    }
    const struct resp_slice *name = NULL, *user = NULL, *pass = NULL;
    for (; i < argc; i++) {
        if (slice_is(&argv[i], "auth") && i + 2 < argc) {
            user = &argv[i + 1];
            pass = &argv[i + 2];
            i += 2;
        } else if (slice_is(&argv[i], "setname") && i + 1 < argc) {
            name = &argv[++i];
            if (!name_ok(name)) {
                resp_add_error(&c->out, "ERR Client names cannot contain spaces, newlines or special characters.");
                return;
            }
        } else {
            resp_add_errorf(&c->out, "ERR Syntax error in HELLO option '%.*s'",
                            (int)(argv[i].len > 64 ? 64 : argv[i].len), argv[i].p);
            return;
        }
    }
    if (user != NULL && edge_auth_login(c, user, pass) != 0)
        return;
    if (c->user < 0) {
        resp_add_error(&c->out, "NOAUTH HELLO must be called with the client already "
                                "authenticated, otherwise the HELLO <proto> AUTH <user> <pass> "
                                "option can be used to authenticate the client and select the "
                                "RESP protocol version at the same time");
        return;
    }
    c->proto = proto;
    if (name != NULL)
        set_name(c, name);
    hello_reply(c);
}

void edge_cmd_reset(struct conn *c, int argc, const struct resp_slice *argv)
{
    c->proto = 2;
    c->meta = 0;
    c->name[0] = '\0';
    edge_auth_set_user(c, auth_initial_user(c->e->auth), 1); /* as Redis: logged out */
    resp_add_simple(&c->out, "RESET");
}

/* AUTH [username] password, as Redis 7. */
void edge_cmd_auth(struct conn *c, int argc, const struct resp_slice *argv)
{
    static const struct resp_slice dflt = {"default", 7};
    if (argc > 3) {
        resp_add_error(&c->out, "ERR syntax error");
        return;
    }
    if (argc == 2 && auth_default_nopass(c->e->auth)) {
        resp_add_error(&c->out, "ERR AUTH <password> called without any password configured "
                                "for the default user. Are you sure your configuration is "
                                "correct?");
        return;
    }
    if (edge_auth_login(c, argc == 2 ? &dflt : &argv[1], &argv[argc - 1]) == 0)
        resp_add_simple(&c->out, "OK");
}

/* ---- CLIENT --------------------------------------------------------------- */

static void client_line(struct conn *c, struct conn *x, struct hkv_buf *b, int64_t now)
{
    buf_printf(b,
               "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=N db=0 sub=0 "
               "psub=0 ssub=0 multi=-1 qbuf=%zu qbuf-free=%zu argv-mem=0 multi-mem=0 obl=0 "
               "oll=0 omem=%zu tot-mem=%zu events=r cmd=%s user=%s redir=-1 resp=%d "
               "lib-name=%s lib-ver=%s\n",
               (unsigned long long)x->id, x->addr, x->laddr, x->fd, x->name,
               (long long)(now - x->created_ms) / 1000, (long long)(now - x->last_ms) / 1000,
               buf_unread(&x->in), x->in.cap - x->in.len, buf_unread(&x->out),
               x->in.cap + x->out.cap, x == c ? "client|list" : (x->last_cmd ? x->last_cmd : "NULL"),
               x->user >= 0 ? auth_user_name(c->e->auth, x->user) : "default", x->proto, x->lib_name, x->lib_ver);
}

void edge_cmd_client(struct conn *c, int argc, const struct resp_slice *argv)
{
    const struct resp_slice *sub = &argv[1];
    if (slice_is(sub, "id") && argc == 2) {
        resp_add_int(&c->out, (int64_t)c->id);
    } else if (slice_is(sub, "getname") && argc == 2) {
        if (c->name[0])
            resp_add_bulk_str(&c->out, c->name);
        else
            resp_add_null(&c->out, c->proto);
    } else if (slice_is(sub, "setname") && argc == 3) {
        if (!name_ok(&argv[2])) {
            resp_add_error(&c->out, "ERR Client names cannot contain spaces, newlines or special characters.");
            return;
        }
        set_name(c, &argv[2]);
        resp_add_simple(&c->out, "OK");
    } else if (slice_is(sub, "setinfo") && argc == 4) {
        char *dst = slice_is(&argv[2], "lib-name") ? c->lib_name
                    : slice_is(&argv[2], "lib-ver") ? c->lib_ver : NULL;
        size_t cap = dst == c->lib_name ? sizeof(c->lib_name) : sizeof(c->lib_ver);
        if (dst == NULL || !name_ok(&argv[3]) || argv[3].len >= cap) {
            resp_add_errorf(&c->out, "ERR Unrecognized option '%.*s' or invalid value",
                            (int)(argv[2].len > 32 ? 32 : argv[2].len), argv[2].p);
            return;
        }
        memcpy(dst, argv[3].p, argv[3].len);
        dst[argv[3].len] = '\0';
        resp_add_simple(&c->out, "OK");
    } else if (slice_is(sub, "meta") && argc == 3 &&
               (slice_is(&argv[2], "on") || slice_is(&argv[2], "off"))) {
        c->meta = slice_is(&argv[2], "on");
        resp_add_simple(&c->out, "OK");
    } else if ((slice_is(sub, "list") && argc == 2) || (slice_is(sub, "info") && argc == 2)) {
        struct hkv_buf b = HKV_BUF_INIT;
        int64_t now = clock_mono_ms();
        if (slice_is(sub, "info"))
            client_line(c, c, &b, now);
        else
            for (struct conn *x = c->e->conns; x != NULL; x = x->next)
                client_line(c, x, &b, now);
        resp_add_verbatim(&c->out, c->proto, buf_head(&b), buf_unread(&b));
        buf_deinit(&b);
    } else {
        resp_add_errorf(&c->out, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try CLIENT HELP.",
                        (int)(sub->len > 32 ? 32 : sub->len), sub->p);
    }
}

/* ---- CONFIG --------------------------------------------------------------- */

/* CONFIG SET name value [name value ...]: validated here (the same table
 * and checks as a file: paths and restart-only directives are refused), in
 * effect in this edge before it answers OK, and sent to the master, which
 * applies it daemon-wide as a new config generation. */
static void config_set(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    struct cfg *next = cfg_dup(e->ctx->cfg);
    struct hkv_buf msg = HKV_BUF_INIT;
    struct cfg_error err = {"out of memory"};
    int ok = next != NULL; /* 1 go on, 0 failed (generic reply), -1 failed (replied) */
    for (int i = 2; ok && i + 1 < argc; i += 2) {
        char name[128], value[4096];
        if (argv[i].len >= sizeof(name) || argv[i + 1].len >= sizeof(value) ||
            memchr(argv[i + 1].p, '\0', argv[i + 1].len) != NULL) {
            snprintf(err.msg, sizeof(err.msg), "argument too long or not text");
            ok = 0;
            break;
        }
        memcpy(name, argv[i].p, argv[i].len);
        name[argv[i].len] = '\0';
        memcpy(value, argv[i + 1].p, argv[i + 1].len);
        value[argv[i + 1].len] = '\0';
        for (char *q = name; *q; q++)
            *q = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
        if (cfg_set(next, name, value, &err) != HKV_OK) {
            resp_add_errorf(&c->out, "ERR CONFIG SET failed (possibly related to argument '%s') - %s",
                            name, err.msg);
            ok = -1;
            break;
        }
        buf_append(&msg, name, strlen(name) + 1);
        buf_append(&msg, value, strlen(value) + 1);
    }
    if (ok == 1 && cfg_validate(next, &err) != HKV_OK)
        ok = 0;
    if (ok == 1 && worker_send(e->worker, CTL_SET, buf_head(&msg), buf_unread(&msg)) != HKV_OK) {
        snprintf(err.msg, sizeof(err.msg), "the master cannot be reached");
        ok = 0;
    }
    if (ok == 1) {
        worker_install(e->worker, next);
        next = NULL;
        resp_add_simple(&c->out, "OK");
    } else if (ok == 0) {
        resp_add_errorf(&c->out, "ERR CONFIG SET failed - %s", err.msg);
    }
    cfg_destroy(&next);
    buf_deinit(&msg);
}

/* CONFIG RESETSTAT: daemon-wide, through the master, which has every
 * process zero its counters (this edge's too: edge_stats_reset) and zeroes
 * the colo segments' own.  The reply waits for the master's word that all
 * of it is done (edge_resetstat_done), so the OK means it.  The op waits on
 * the master, not on owners: its family has nothing to send. */
static const struct op_family resetstat_family = {0};

static void config_resetstat(struct conn *c)
{
    struct edge *e = c->e;
    struct op *op = op_new(c, &resetstat_family, "config|resetstat");
    if (op == NULL)
        return;
    if (worker_send(e->worker, CTL_RESETSTAT, NULL, 0) != HKV_OK) {
        op_error(op, "ERR CONFIG RESETSTAT failed - the master cannot be reached");
        op_finish_error(op);
        return;
    }
    op->next = NULL;
    if (e->rs_tail != NULL)
        e->rs_tail->next = op;
    else
        e->rs_head = op;
    e->rs_tail = op;
}

void edge_resetstat_done(void *arg)
{
    struct edge *e = arg;
    struct op *op = e->rs_head;
    if (op == NULL)
        return;
    e->rs_head = op->next;
    if (e->rs_head == NULL)
        e->rs_tail = NULL;
    op->next = NULL;
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        resp_add_simple(out, "OK");
    op_finish(op);
}

void edge_cmd_config(struct conn *c, int argc, const struct resp_slice *argv)
{
    const struct cfg *cfg = c->e->ctx->cfg;
    if (slice_is(&argv[1], "get") && argc >= 3) {
        size_t n = cfg_option_count();
        struct hkv_buf b = HKV_BUF_INIT;
        int pairs = 0;
        char val[4096];
        for (size_t i = 0; i < n; i++) {
            const char *name = cfg_option_name(i);
            int match = 0;
            for (int a = 2; a < argc && !match; a++)
                match = cfg_glob_match(argv[a].p, argv[a].len, name, strlen(name), 1);
            if (!match || cfg_get(cfg, name, val, sizeof(val)) != HKV_OK)
                continue;
            resp_add_bulk_str(&b, name);
            resp_add_bulk_str(&b, val);
            pairs++;
        }
        resp_add_map(&c->out, c->proto, pairs);
        buf_append(&c->out, buf_head(&b), buf_unread(&b));
        buf_deinit(&b);
    } else if (slice_is(&argv[1], "resetstat") && argc == 2) {
        config_resetstat(c);
    } else if (slice_is(&argv[1], "set") && argc >= 4 && argc % 2 == 0) {
        config_set(c, argc, argv);
    } else {
        resp_add_errorf(&c->out, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try CONFIG HELP.",
                        (int)(argv[1].len > 32 ? 32 : argv[1].len), argv[1].p);
    }
}

void edge_cmd_info(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct hkv_buf b = HKV_BUF_INIT;
    info_render(&b, c->e, argc - 1, argv + 1);
    resp_add_verbatim(&c->out, c->proto, buf_head(&b), buf_unread(&b));
    buf_deinit(&b);
}

/* HOTKEYS [COUNT n]: the hottest keys of the colo with their measured
 * reads/s, hottest first, as [key, rate] pairs. */
void edge_cmd_hotkeys(struct conn *c, int argc, const struct resp_slice *argv)
{
    long n = 10;
    if (argc == 3 && slice_is(&argv[1], "count")) {
        char num[16] = "";
        memcpy(num, argv[2].p, argv[2].len < 15 ? argv[2].len : 15);
        char *end;
        n = strtol(num, &end, 10);
        if (*end != '\0' || n < 1 || n > 1000) {
            resp_add_error(&c->out, "ERR COUNT must be between 1 and 1000");
            return;
        }
    } else if (argc != 1) {
        resp_add_error(&c->out, "ERR syntax error");
        return;
    }
    if (c->e->cache == NULL) {
        resp_add_array(&c->out, 0);
        return;
    }
    struct cache_hotkey *hk = calloc((size_t)n, sizeof(*hk));
    if (hk == NULL) {
        resp_add_error(&c->out, "ERR out of memory");
        return;
    }
    int got = cache_hotkeys(c->e->cache, hk, (int)n, clock_mono_ms());
    resp_add_array(&c->out, got);
    for (int i = 0; i < got; i++) {
        resp_add_array(&c->out, 2);
        resp_add_bulk(&c->out, hk[i].key, hk[i].klen < sizeof(hk[i].key) ? hk[i].klen : sizeof(hk[i].key));
        resp_add_int(&c->out, (int64_t)hk[i].reads_per_sec);
    }
    free(hk);
}
