/*
 * edge_cmd.c - the connection and server commands an edge answers itself:
 * PING ECHO HELLO AUTH SELECT QUIT RESET TIME INFO HOTKEYS.  CLIENT and
 * CONFIG have their own files (edge_client.c, edge_config.c), data commands
 * live in edge_read.c, edge_write.c and edge_scan.c, COMMAND with the table
 * it describes (edge_registry.c); this file never talks to an owner.
 */
#include "server/edge/edge_cmd.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "server/colo/cache.h"
#include "server/core/clock.h"
#include "server/core/ctl.h"
#include "server/core/router_map.h"
#include "server/core/version.h"
#include "server/edge/edge_owners.h"
#include "server/edge/auth.h"
#include "server/edge/edge_acllog.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_cache.h"
#include "server/edge/edge_client.h"
#include "server/edge/edge_clients.h"
#include "server/edge/edge_monitor.h"
#include "server/edge/edge_pubsub.h"
#include "server/edge/info.h"
#include "server/edge/info_cluster.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_track.h"

void edge_cmd_ping(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (argc > 2) {
        resp_add_error(&c->out, "ERR wrong number of arguments for 'ping' command");
        return;
    }
    if (sess_of(c)->proto == 2 && pubsub_active(c)) {
        /* Redis's subscribed mode: ["pong", message or ""] */
        resp_add_array(&c->out, 2);
        resp_add_bulk(&c->out, "pong", 4);
        resp_add_bulk(&c->out, argc == 2 ? argv[1].p : "", argc == 2 ? argv[1].len : 0);
    } else if (argc == 2)
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

/* One database, 0, as a Redis with `databases 1`: Redis's errors for a
 * non-number, a number beyond an int, and another index. */
void edge_cmd_select(struct conn *c, int argc, const struct resp_slice *argv)
{
    long long id;
    if (edge_arg_ll(&argv[1], &id) != 0)
        resp_add_error(&c->out, "ERR value is not an integer or out of range");
    else if (id < INT_MIN || id > INT_MAX)
        resp_add_error(&c->out, "ERR value is out of range, value must between -2147483648 and "
                                "2147483647");
    else if (id != 0)
        resp_add_error(&c->out, "ERR DB index is out of range");
    else
        resp_add_simple(&c->out, "OK");
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

/* The newest commit of any owner this edge knows (their STATS), as Redis's
 * time of its last successful save; before any, when the daemon started
 * (Redis's lastsave starts at its start time too). */
void edge_cmd_lastsave(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    int64_t t = atomic_load_explicit(&e->ctx->board->start_unix_ms, memory_order_relaxed) / 1000;
    for (int g = 0; e->owners != NULL && g < e->owners->n; g++) {
        int64_t v = e->owners->ref[g].stats[CTR_OWNER_persist_last_save_time_seconds];
        if (v > t)
            t = v;
    }
    resp_add_int(&c->out, t);
}

static void hello_reply(struct conn *c)
{
    resp_add_map(&c->out, sess_of(c)->proto, 7);
    resp_add_bulk_str(&c->out, "server");
    resp_add_bulk_str(&c->out, "hotkvd");
    resp_add_bulk_str(&c->out, "version");
    resp_add_bulk_str(&c->out, HOTKVD_VERSION);
    resp_add_bulk_str(&c->out, "proto");
    resp_add_int(&c->out, sess_of(c)->proto);
    resp_add_bulk_str(&c->out, "id");
    resp_add_int(&c->out, (int64_t)c->id);
    resp_add_bulk_str(&c->out, "mode");
    resp_add_bulk_str(&c->out, "standalone");
    resp_add_bulk_str(&c->out, "role");
    resp_add_bulk_str(&c->out, "master");
    resp_add_bulk_str(&c->out, "modules");
    resp_add_array(&c->out, 0);
}

/* HELLO [protover [AUTH user pass] [SETNAME name]], as Redis 7.0 runs it:
 * the options in order, each taking effect as it is read (a bad password
 * before a bad option is WRONGPASS; a name set before a bad option stays
 * set), then the authentication check, then the protocol switch. */
void edge_cmd_hello(struct conn *c, int argc, const struct resp_slice *argv)
{
    long long ver = 0;
    if (argc >= 2) {
        if (edge_arg_ll(&argv[1], &ver) != 0) {
            resp_add_error(&c->out, "ERR Protocol version is not an integer or out of range");
            return;
        }
        if (ver < 2 || ver > 3) {
            resp_add_error(&c->out, "NOPROTO unsupported protocol version");
            return;
        }
    }
    for (int i = argc >= 2 ? 2 : 1; i < argc; i++) {
        int more = argc - 1 - i;
        if (edge_arg_is(&argv[i], "auth") && more >= 2) {
            if (edge_auth_login(c, &argv[i + 1], &argv[i + 2]) != 0) {
                edge_acllog_auth(c, argv[i + 1].p, argv[i + 1].len, argv[0].p, argv[0].len);
                return;
            }
            i += 2;
        } else if (edge_arg_is(&argv[i], "setname") && more >= 1) {
            if (client_set_name(c, &argv[++i]) != 0)
                return;
        } else {
            resp_add_errorf(&c->out, "ERR Syntax error in HELLO option '%.*s'", (int)argv[i].len,
                            argv[i].p);
            return;
        }
    }
    if (sess_of(c)->user < 0) {
        resp_add_error(&c->out, "NOAUTH HELLO must be called with the client already "
                                "authenticated, otherwise the HELLO <proto> AUTH <user> <pass> "
                                "option can be used to authenticate the client and select the "
                                "RESP protocol version at the same time");
        return;
    }
    if (ver != 0)
        sess_of(c)->proto = (int)ver;
    clients_publish(c);
    hello_reply(c);
}

void edge_cmd_reset(struct conn *c, int argc, const struct resp_slice *argv)
{
    sess_of(c)->proto = 2;
    sess_of(c)->meta = 0;
    monitor_stop(c);
    edge_track_reset(c);
    pubsub_conn_gone(c); /* Redis's RESET: out of every channel and pattern, no replies */
    client_set_name(c, &(struct resp_slice){"", 0});
    edge_auth_set_user(c, auth_initial_user(c->e->auth->users), 1); /* as Redis: logged out */
    clients_publish(c);
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
    if (argc == 2 && auth_default_nopass(c->e->auth->users)) {
        resp_add_error(&c->out, "ERR AUTH <password> called without any password configured "
                                "for the default user. Are you sure your configuration is "
                                "correct?");
        return;
    }
    const struct resp_slice *user = argc == 2 ? &dflt : &argv[1];
    if (edge_auth_login(c, user, &argv[argc - 1]) == 0) {
        clients_publish(c);
        resp_add_simple(&c->out, "OK");
    } else {
        edge_acllog_auth(c, user->p, user->len, argv[0].p, argv[0].len);
    }
}

/* WAIT numreplicas timeout: the number of in-sync followers (CLUSTER.md §7)
 * of the leaf of the client's last write, at once: a write is answered only
 * once every one of them holds it, and replies keep the order of requests,
 * so they all hold it by now.  0 with no followers, or before any write
 * (Redis, with none, makes a client asking for one or more wait out its
 * timeout).  Redis's argument errors. */
void edge_cmd_wait(struct conn *c, int argc, const struct resp_slice *argv)
{
    long long n;
    if (edge_arg_ll(&argv[1], &n) != 0) {
        resp_add_error(&c->out, "ERR value is not an integer or out of range");
        return;
    }
    if (edge_arg_ll(&argv[2], &n) != 0) {
        resp_add_error(&c->out, "ERR timeout is not an integer or out of range");
        return;
    }
    if (n < 0) {
        resp_add_error(&c->out, "ERR timeout is negative");
        return;
    }
    const struct sess *s = sess_of(c);
    long long held = 0;
    const struct rmap *m = router_map(c->e->owners->router);
    if (s->wrote && m != NULL) {
        const struct cmap_leaf *l = cmap_lookup(rmap_table(m), (enum cfg_pool)s->last_write_pool,
                                                s->last_write_place);
        held = l != NULL ? l->nisr : 0;
    }
    resp_add_int(&c->out, held);
}

void edge_cmd_info(struct conn *c, int argc, const struct resp_slice *argv)
{
    info_command(c, argc, argv);
}

/* HOTKEYS [COUNT n]: the hottest keys of the colo with their measured
 * reads/s, hottest first, as [key, rate] pairs. */
void edge_cmd_hotkeys(struct conn *c, int argc, const struct resp_slice *argv)
{
    long n = 10;
    if (argc == 2 && edge_arg_is(&argv[1], "refused")) {
        /* the last hot key automatic moves refused to split (agent_policy.h) */
        struct cluster_view v;
        if (info_cluster_view(c->e, &v) != 0 || v.h.auto_refused == 0) {
            resp_add_array(&c->out, 0);
            return;
        }
        size_t klen = v.h.auto_refused_key_len < 0 ? 0
                      : (size_t)v.h.auto_refused_key_len > sizeof(v.h.auto_refused_key)
                          ? sizeof(v.h.auto_refused_key)
                          : (size_t)v.h.auto_refused_key_len;
        resp_add_array(&c->out, 1);
        resp_add_array(&c->out, 2);
        resp_add_bulk(&c->out, v.h.auto_refused_key, klen);
        resp_add_int(&c->out, v.h.auto_refused);
        return;
    }
    if (argc == 3 && edge_arg_is(&argv[1], "count")) {
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
    if (c->e->cache->cache == NULL) {
        resp_add_array(&c->out, 0);
        return;
    }
    struct cache_hotkey *hk = calloc((size_t)n, sizeof(*hk));
    if (hk == NULL) {
        resp_add_error(&c->out, "ERR out of memory");
        return;
    }
    int got = cache_hotkeys(c->e->cache->cache, hk, (int)n, clock_mono_ms());
    resp_add_array(&c->out, got);
    for (int i = 0; i < got; i++) {
        resp_add_array(&c->out, 2);
        resp_add_bulk(&c->out, hk[i].key, hk[i].klen < sizeof(hk[i].key) ? hk[i].klen : sizeof(hk[i].key));
        resp_add_int(&c->out, (int64_t)hk[i].reads_per_sec);
    }
    free(hk);
}
