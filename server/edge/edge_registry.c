/*
 * edge_registry.c - the command registry and the dispatch pipeline
 * (edge_registry.h).
 *
 * The table below is the one place that says who handles a command: one row
 * per command, indexed by proto/cmd.h's id, holding only its handler and its
 * family (naming the file of the handler); the name, arity, keys and flags
 * are proto/cmd.h's alone.  Adding a command is a line in proto/cmd.h, a row
 * here and its handler (the unit suite cmd_table fails on an id without a
 * row).  The pipeline runs the checks every command shares, in the order
 * Redis runs them (an unknown command or a wrong arity is answered before
 * the auth gate, and the rate limiter only charges commands that may run),
 * so handlers start with well-formed, permitted requests.
 */
#include "proto/syskey.h"
#include "server/edge/edge_registry.h"

#include <stdio.h>
#include <string.h>

#include "config/cfg.h"
#include "server/core/clock.h"

#include "server/edge/edge_acl.h"
#include "server/edge/edge_acllog.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_auth.h"
#include "server/edge/edge_call.h"
#include "server/edge/edge_client.h"
#include "server/edge/edge_command.h"
#include "server/edge/edge_cmd.h"
#include "server/edge/edge_config.h"
#include "server/edge/edge_exec.h"
#include "server/edge/edge_keys.h"
#include "server/edge/edge_keyspace.h"
#include "server/edge/edge_monitor.h"
#include "server/edge/edge_pause.h"
#include "server/edge/edge_pubsub.h"
#include "server/edge/edge_mread.h"
#include "server/edge/edge_read.h"
#include "server/edge/edge_rl.h"
#include "server/edge/edge_scan.h"
#include "server/edge/edge_stats.h"
#include "server/edge/edge_strread.h"
#include "server/edge/edge_subcmd.h"
#include "server/edge/edge_throttle.h"
#include "server/edge/edge_tx.h"
#include "server/edge/edge_ver.h"
#include "server/edge/edge_write.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_track.h"

#define ROW(ID, handler, family) [CMD_##ID] = {handler, EDGE_FAM_##family},

const struct edge_command edge_commands[CMD_COUNT] = {
    ROW(PING,      edge_cmd_ping,      CONN)
    ROW(ECHO,      edge_cmd_echo,      CONN)
    ROW(HELLO,     edge_cmd_hello,     CONN)
    ROW(AUTH,      edge_cmd_auth,      CONN)
    ROW(SELECT,    edge_cmd_select,    CONN)
    ROW(QUIT,      edge_cmd_quit,      CONN)
    ROW(RESET,     edge_tx_reset,      CONN)
    ROW(CLIENT,    edge_cmd_client,    CONN)
    ROW(TIME,      edge_cmd_time,      SERVER)
    ROW(LASTSAVE,  edge_cmd_lastsave,  SERVER)
    ROW(COMMAND,   edge_cmd_command,   SERVER)
    ROW(CONFIG,    edge_cmd_config,    SERVER)
    ROW(ACL,       edge_cmd_acl,       SERVER)
    ROW(INFO,      edge_cmd_info,      SERVER)
    ROW(HOTKEYS,   edge_cmd_hotkeys,   SERVER)
    ROW(CL_THROTTLE, edge_cmd_throttle, THROTTLE)
    ROW(GET,       edge_cmd_get,       READ)
    ROW(MGET,      edge_cmd_mget,      READ)
    ROW(EXISTS,    edge_cmd_exists,    READ)
    ROW(STRLEN,    edge_cmd_strlen,    READ)
    ROW(TYPE,      edge_cmd_type,      READ)
    ROW(TTL,       edge_cmd_ttl,       READ)
    ROW(PTTL,      edge_cmd_pttl,      READ)
    ROW(SET,       edge_cmd_set,       WRITE)
    ROW(SETEX,     edge_cmd_setex,     WRITE)
    ROW(PSETEX,    edge_cmd_psetex,    WRITE)
    ROW(SETNX,     edge_cmd_setnx,     WRITE)
    ROW(GETSET,    edge_cmd_getset,    WRITE)
    ROW(GETDEL,    edge_cmd_getdel,    WRITE)
    ROW(GETEX,     edge_cmd_getex,     WRITE)
    ROW(MSET,      edge_cmd_mset,      WRITE)
    ROW(DEL,       edge_cmd_del,       WRITE)
    ROW(UNLINK,    edge_cmd_unlink,    WRITE)
    ROW(EXPIRE,    edge_cmd_expire,    WRITE)
    ROW(PEXPIRE,   edge_cmd_pexpire,   WRITE)
    ROW(EXPIREAT,  edge_cmd_expireat,  WRITE)
    ROW(PEXPIREAT, edge_cmd_pexpireat, WRITE)
    ROW(PERSIST,   edge_cmd_persist,   WRITE)
    ROW(INCR,      edge_cmd_incr,      WRITE)
    ROW(DECR,      edge_cmd_decr,      WRITE)
    ROW(INCRBY,    edge_cmd_incrby,    WRITE)
    ROW(DECRBY,    edge_cmd_decrby,    WRITE)
    ROW(APPEND,    edge_cmd_call,      CALL)
    ROW(SETRANGE,  edge_cmd_call,      CALL)
    ROW(SETBIT,    edge_cmd_call,      CALL)
    ROW(INCRBYFLOAT, edge_cmd_call,    CALL)
    ROW(MSETNX,    edge_cmd_call,      CALL)
    ROW(BITOP,     edge_cmd_call,      CALL)
    ROW(RENAME,    edge_cmd_call,      CALL)
    ROW(RENAMENX,  edge_cmd_call,      CALL)
    ROW(COPY,      edge_cmd_call,      CALL)
    ROW(TOUCH,     edge_cmd_call,      CALL)
    ROW(EXPIRETIME, edge_cmd_call,     CALL)
    ROW(PEXPIRETIME, edge_cmd_call,    CALL)
    ROW(BITFIELD,  edge_cmd_call,      CALL)
    ROW(BITFIELD_RO, edge_cmd_call,    CALL)
    ROW(GETRANGE,  edge_cmd_getrange,  STRREAD)
    ROW(SUBSTR,    edge_cmd_substr,    STRREAD)
    ROW(GETBIT,    edge_cmd_getbit,    STRREAD)
    ROW(BITCOUNT,  edge_cmd_bitcount,  STRREAD)
    ROW(BITPOS,    edge_cmd_bitpos,    STRREAD)
    ROW(LCS,       edge_cmd_lcs,       STRREAD)
    ROW(MULTI,     edge_cmd_multi,     TX)
    ROW(EXEC,      edge_cmd_exec,      TX)
    ROW(DISCARD,   edge_cmd_discard,   TX)
    ROW(WATCH,     edge_cmd_watch,     TX)
    ROW(UNWATCH,   edge_cmd_unwatch,   TX)
    ROW(SCAN,      edge_cmd_scan,      KEYSPACE)
    ROW(DBSIZE,    edge_cmd_dbsize,    KEYSPACE)
    ROW(WAIT,      edge_cmd_wait,      SERVER)
    ROW(MONITOR,   edge_cmd_monitor,   SERVER)
    ROW(SUBSCRIBE, edge_cmd_subscribe, CONN)
    ROW(UNSUBSCRIBE, edge_cmd_unsubscribe, CONN)
    ROW(PSUBSCRIBE, edge_cmd_psubscribe, CONN)
    ROW(PUNSUBSCRIBE, edge_cmd_punsubscribe, CONN)
    ROW(PUBLISH,   edge_cmd_publish,   SERVER)
    ROW(PUBSUB,    edge_cmd_pubsub,    SERVER)
    ROW(GETMETA,   edge_cmd_getmeta,   READ)
    ROW(GETWITHETAG, edge_cmd_getwithetag, READ)
    ROW(GETIFNOTMATCH, edge_cmd_getifnotmatch, READ)
    ROW(SETIFMATCH, edge_cmd_setifmatch, CALL)
    ROW(FLUSHALL,  edge_cmd_flushall,  KEYSPACE)
    ROW(FLUSHDB,   edge_cmd_flushall,  KEYSPACE)
    ROW(KEYS,      edge_cmd_keys,      KEYSPACE)
    ROW(RANDOMKEY, edge_cmd_randomkey, KEYSPACE)
    ROW(OBJECT,    edge_cmd_object,    KEYSPACE)
};

#undef ROW

/* ---- the pipeline ------------------------------------------------------------ */

/* Redis's text: the name cut at 128 bytes, then the arguments, quoted,
 * while the list is under 128 bytes, each cut to what is left of the 128.
 * Both are printed as C strings (a NUL ends one), as Redis prints them. */
static void unknown_command(struct conn *c, int argc, const struct resp_slice *argv)
{
    char args[256] = "";
    size_t n = 0;
    for (int i = 1; i < argc && n < 128; i++) {
        size_t budget = 128 - n;
        int w = snprintf(args + n, sizeof(args) - n, "'%.*s' ",
                         (int)(argv[i].len < budget ? argv[i].len : budget), argv[i].p);
        if (w < 0 || (size_t)w >= sizeof(args) - n)
            break;
        n += strnlen(args + n, (size_t)w);
    }
    resp_add_errorf(&c->out, "ERR unknown command '%.*s', with args beginning with: %s",
                    (int)(argv[0].len > 128 ? 128 : argv[0].len), argv[0].p, args);
}

static void unknown_subcommand(struct conn *c, const struct cmd_def *d,
                               const struct resp_slice *sub)
{
    char upper[16];
    size_t i = 0;
    for (; d->name[i] && i < sizeof(upper) - 1; i++)
        upper[i] = (char)(d->name[i] >= 'a' && d->name[i] <= 'z' ? d->name[i] - 32 : d->name[i]);
    upper[i] = '\0';
    resp_add_errorf(&c->out, "ERR unknown subcommand '%.*s'. Try %s HELP.",
                    (int)(sub->len > 128 ? 128 : sub->len), sub->p, upper);
}

/* The error reply the pipeline just wrote (from `before` on), for the
 * stats. */
static void refused(struct conn *c, unsigned stat, size_t before)
{
    size_t n = buf_unread(&c->out) > before ? buf_unread(&c->out) - before : 0;
    stats_rejected(c->e, stat, buf_head(&c->out) + before, n);
}

/* A key of hotkvd's own (proto/syskey.h: Idempotency-Key records) named by
 * a client: refused, so no client reads, forges or deletes one.  One byte
 * compared per key unless it is 0xff. */
static int reserved_key(struct conn *c, const struct cmd_def *d, int argc,
                        const struct resp_slice *argv)
{
    int first, last, n = cmd_key_range(d, argc, &first, &last);
    for (int i = first; n > 0 && i <= last && i < argc; i += d->step > 0 ? d->step : 1)
        if (syskey_is(argv[i].p, argv[i].len)) {
            resp_add_error(&c->out, "ERR keys beginning with \\xff hkv \\0 are hotkvd's own "
                                    "(Idempotency-Key records)");
            return 1;
        }
    return 0;
}

int edge_park(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (edge_pause_mode(c->e) == 0)
        return 0;
    const struct cmd_def *d = cmd_lookup(argv[0].p, argv[0].len);
    if (d == NULL || !cmd_arity_ok(d, argc))
        return 0; /* answered now with its error, as Redis checks before pausing */
    if (d->id == CMD_CLIENT && (edge_arg_is(&argv[1], "unpause") || edge_arg_is(&argv[1], "pause")))
        return 0; /* the pause's own controls */
    int queued = edge_tx_queued(c) >= 0 && d->id != CMD_EXEC && d->id != CMD_DISCARD &&
                 d->id != CMD_MULTI && d->id != CMD_WATCH && d->id != CMD_RESET &&
                 d->id != CMD_QUIT;
    if (queued) /* queued as usual under WRITE; ALL holds it all the same */
        return edge_pause_mode(c->e) == 2 && edge_pause_hold(c, 0);
    int write = (d->flags & CMD_F_WRITE) || d->id == CMD_PUBLISH ||
                (d->id == CMD_EXEC && edge_tx_writes(c));
    return edge_pause_hold(c, write);
}

void edge_dispatch(struct conn *c, int argc, const struct resp_slice *argv)
{
    const struct cmd_def *d = cmd_lookup(argv[0].p, argv[0].len);
    edge_handler h = d != NULL ? edge_commands[d->id].handler : NULL;
    size_t before = buf_unread(&c->out);
    board_add(&c->e->stats->total_commands_processed, 1);
    sess_of(c)->ncmds++;
    if (h == NULL) {
        sess_of(c)->last_cmd = NULL; /* Redis: cmd=NULL after an unknown command */
        sess_of(c)->last_stat = STATS_NONE;
        unknown_command(c, argc, argv);
        refused(c, STATS_NONE, before);
        edge_tx_flag(c); /* inside MULTI: EXEC answers EXECABORT */
        return;
    }
    /* A container's subcommand is looked up and its arity checked here,
     * before the gates, as Redis does (edge_subcmd.h). */
    const char *name = d->name;
    unsigned stat = (unsigned)d->id;
    int admin = (d->flags & CMD_F_ADMIN) != 0;
    int arity_ok = cmd_arity_ok(d, argc);
    if (argc >= 2 && subcmd_is_container(d->id)) {
        const struct edge_subcmd *s = subcmd_lookup(d->id, &argv[1]);
        if (s == NULL) {
            sess_of(c)->last_cmd = NULL;
            sess_of(c)->last_stat = STATS_NONE;
            unknown_subcommand(c, d, &argv[1]);
            refused(c, STATS_NONE, before);
            edge_tx_flag(c);
            return;
        }
        name = s->fullname;
        stat = subcmd_stat_id(s);
        admin = s->admin;
        arity_ok = s->arity >= 0 ? argc == s->arity : argc >= -s->arity;
    }
    sess_of(c)->last_cmd = name;
    sess_of(c)->last_stat = (uint16_t)stat;
    if (!arity_ok) {
        if (d->id == CMD_EXEC) {
            /* Redis's execCommandAbort: the transaction ends, and says why */
            edge_tx_end(c);
            resp_add_errorf(&c->out, "EXECABORT Transaction discarded because of: wrong number "
                            "of arguments for 'exec' command");
        } else {
            resp_add_errorf(&c->out, "ERR wrong number of arguments for '%s' command", name);
            edge_tx_flag(c);
        }
        refused(c, stat, before);
        return;
    }
    if (reserved_key(c, d, argc, argv)) {
        refused(c, stat, before);
        edge_tx_flag(c);
        return;
    }
    int gate = sess_of(c)->gated ? edge_auth_gate(c, d, argc, argv) : 0; /* NOAUTH, NOPERM */
    if (gate == EDGE_AUTH_NOPERM_CMD || gate == EDGE_AUTH_NOPERM_KEY)
        edge_acllog_denied(c, d, argc, argv, gate == EDGE_AUTH_NOPERM_KEY, edge_tx_queued(c) >= 0);
    if (gate != 0 ||
        /* Rate limit (server/colo/ratelimit.h, edge_rl.c).  A command
         * without a limit costs this one branch; one over its limit is
         * answered "-RATELIMITED retry in N ms" and not run, and the
         * connection stays open. */
        (c->e->rl->map[d->id] != RL_CLS_NONE && edge_rl_refuse(c, d, argc, argv))) {
        refused(c, stat, before);
        edge_tx_flag(c);
        return;
    }
    /* RESP2's subscribed mode (Redis's processCommand, after the ACL check) */
    if (sess_of(c)->pubsub != NULL && pubsub_gate(c, name, strlen(name))) {
        refused(c, stat, before);
        edge_tx_flag(c);
        return;
    }
    if (sess_of(c)->monitor && (d->flags & (CMD_F_READ | CMD_F_WRITE))) {
        resp_add_error(&c->out, "ERR Replica can't interact with the keyspace");
        refused(c, stat, before);
        return;
    }
    if (monitor_on(c->e))
        monitor_feed(c, argc, argv, admin);
    /* A tracking client: invalidations due go out first, and the keys it
     * reads are remembered before the read runs (edge_track.h). */
    if (sess_of(c)->track != NULL)
        edge_track_before(c, d, argc, argv);
    /* Inside MULTI a command is queued instead (edge_tx.h). */
    if (sess_of(c)->tx != NULL && edge_tx_queue(c, d, argc, argv))
        return;
    /* INFO commandstats: an op the handler starts takes the count over
     * (op_new) and counts it when it answers. */
    sess_of(c)->cur_stat = (uint16_t)stat;
    sess_of(c)->cur_t0_ns = clock_mono_ns();
    sess_of(c)->stat_taken = 0;
    if (d->flags & (CMD_F_READ | CMD_F_WRITE)) /* the write lane (edge_conn.h) */
        conn_note_request(c, (d->flags & CMD_F_WRITE) != 0);
    h(c, argc, argv);
    if (!sess_of(c)->stat_taken) {
        size_t n = buf_unread(&c->out) > before ? buf_unread(&c->out) - before : 0;
        int first = 0, last = 0; /* the first key, for its class (edge_stats.h) */
        int nk = cmd_key_range(d, argc, &first, &last);
        stats_call_key(c->e, stat, clock_mono_ns() - sess_of(c)->cur_t0_ns,
                       buf_head(&c->out) + before, n, nk > 0 ? argv[first].p : NULL,
                       nk > 0 ? argv[first].len : 0);
    }
    sess_of(c)->cur_stat = STATS_NONE;
}

/* ---- COMMAND -------------------------------------------------------------- */

static int served(const struct cmd_def *d)
{
    return edge_commands[d->id].handler != NULL;
}

/* COMMAND GETKEYS cmd args...: Redis's checks, then the keys by the
 * command's first/last/step; GETKEYSANDFLAGS: the keys and their flags by
 * Redis's key specs (edge_keyspecs.c). */
static void command_getkeys(struct conn *c, int argc, const struct resp_slice *argv, int flags)
{
    const struct cmd_def *d = cmd_lookup(argv[2].p, argv[2].len);
    int n = argc - 2;
    if (d == NULL || !served(d)) {
        resp_add_error(&c->out, "ERR Invalid command specified");
        return;
    }
    if (d->first_key <= 0) {
        resp_add_error(&c->out, "ERR The command has no key arguments");
        return;
    }
    if (!cmd_arity_ok(d, n)) {
        resp_add_error(&c->out, "ERR Invalid number of arguments specified for command");
        return;
    }
    const struct resp_slice *w = argv + 2;
    if (flags) {
        int rc = command_keys_and_flags(&c->out, sess_of(c)->proto, d, n, w);
        if (rc == -1)
            resp_add_error(&c->out, "ERR Invalid arguments specified for command");
        if (rc != -2)
            return;
    }
    int last = d->last_key < 0 ? n + d->last_key : d->last_key;
    int count = 0;
    for (int i = d->first_key; i <= last && i < n; i += d->step)
        count++;
    resp_add_array(&c->out, count);
    for (int i = d->first_key; i <= last && i < n; i += d->step) {
        if (flags) /* hotkvd's own command: its flags by what it does */
            resp_add_array(&c->out, 2);
        resp_add_bulk(&c->out, w[i].p, w[i].len);
        if (flags && (d->flags & CMD_F_WRITE)) {
            resp_add_set(&c->out, sess_of(c)->proto, 2);
            resp_add_simple(&c->out, "RW");
            resp_add_simple(&c->out, "update");
        } else if (flags) {
            resp_add_set(&c->out, sess_of(c)->proto, 2);
            resp_add_simple(&c->out, "RO");
            resp_add_simple(&c->out, "access");
        }
    }
}

/* COMMAND LIST [FILTERBY MODULE name | ACLCAT cat | PATTERN glob]: every
 * served command and subcommand. */
static void command_list(struct conn *c, int argc, const struct resp_slice *argv)
{
    int by = 0; /* 0 all, 1 module, 2 aclcat, 3 pattern */
    if (argc == 5 && edge_arg_is(&argv[2], "filterby")) {
        by = edge_arg_is(&argv[3], "module") ? 1 : edge_arg_is(&argv[3], "aclcat") ? 2
             : edge_arg_is(&argv[3], "pattern") ? 3 : -1;
    } else if (argc != 2) {
        by = -1;
    }
    if (by < 0) {
        resp_add_error(&c->out, "ERR syntax error");
        return;
    }
    struct hkv_buf b = HKV_BUF_INIT;
    int n = 0;
    for (unsigned id = 0; id < EDGE_STAT_IDS && by != 1; id++) {
        const char *name = subcmd_stat_name(id);
        if (name == NULL)
            continue;
        const struct cmd_def *d = id < (unsigned)CMD_COUNT ? cmd_get((enum cmd_id)id)
                                  : cmd_get(edge_subcmds[id - CMD_COUNT].parent);
        if (!served(d) || (id >= (unsigned)CMD_COUNT && !edge_subcmds[id - CMD_COUNT].served))
            continue;
        if (by == 2 && !command_in_category(d, argv[4].p, argv[4].len))
            continue;
        if (by == 3 && !cfg_glob_match(argv[4].p, argv[4].len, name, strlen(name), 1))
            continue;
        resp_add_bulk_str(&b, name);
        n++;
    }
    resp_add_array(&c->out, n);
    buf_append(&c->out, buf_head(&b), buf_unread(&b));
    buf_deinit(&b);
}

static const char *const command_help[] = {
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all commands hotkvd serves.",
    "COUNT",
    "    Return the total number of commands hotkvd serves.",
    "LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]",
    "    Return a list of all commands hotkvd serves.",
    "INFO [<command-name> ...]",
    "    Return details about multiple commands (all of them with none).",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple commands (all of them with none).",
    "GETKEYS <full-command>",
    "    Return the keys from a full command.",
    "HELP",
    "    Prints this help.",
};

void edge_cmd_command(struct conn *c, int argc, const struct resp_slice *argv)
{
    int total = 0;
    for (int i = 0; i < CMD_COUNT; i++)
        total += served(cmd_get((enum cmd_id)i));
    if (argc == 1 || (edge_arg_is(&argv[1], "info") && argc == 2)) {
        resp_add_array(&c->out, total);
        for (int i = 0; i < CMD_COUNT; i++)
            if (served(cmd_get((enum cmd_id)i)))
                command_info_entry(&c->out, sess_of(c)->proto, cmd_get((enum cmd_id)i));
    } else if (edge_arg_is(&argv[1], "count")) {
        resp_add_int(&c->out, total);
    } else if (edge_arg_is(&argv[1], "info")) {
        resp_add_array(&c->out, argc - 2);
        for (int i = 2; i < argc; i++) {
            const struct cmd_def *d = cmd_lookup(argv[i].p, argv[i].len);
            if (d != NULL && served(d))
                command_info_entry(&c->out, sess_of(c)->proto, d);
            else
                resp_add_null(&c->out, sess_of(c)->proto);
        }
    } else if (edge_arg_is(&argv[1], "docs")) {
        /* a map of the names known (all served ones without names) */
        struct hkv_buf b = HKV_BUF_INIT;
        int n = 0;
        for (int i = 0; i < (argc == 2 ? CMD_COUNT : argc - 2); i++) {
            const struct cmd_def *d = argc == 2 ? cmd_get((enum cmd_id)i)
                                                : cmd_lookup(argv[i + 2].p, argv[i + 2].len);
            if (d == NULL || !served(d))
                continue;
            resp_add_bulk_str(&b, d->name);
            command_docs_entry(&b, sess_of(c)->proto, d);
            n++;
        }
        resp_add_map(&c->out, sess_of(c)->proto, n);
        buf_append(&c->out, buf_head(&b), buf_unread(&b));
        buf_deinit(&b);
    } else if (edge_arg_is(&argv[1], "list")) {
        command_list(c, argc, argv);
    } else if (edge_arg_is(&argv[1], "getkeys")) {
        command_getkeys(c, argc, argv, 0);
    } else if (edge_arg_is(&argv[1], "getkeysandflags")) {
        command_getkeys(c, argc, argv, 1);
    } else if (edge_arg_is(&argv[1], "help")) {
        resp_add_array(&c->out, (int64_t)(sizeof(command_help) / sizeof(command_help[0])));
        for (size_t i = 0; i < sizeof(command_help) / sizeof(command_help[0]); i++)
            resp_add_simple(&c->out, command_help[i]);
    } else {
        resp_add_errorf(&c->out, "ERR COMMAND %.*s is not supported by hotkvd",
                        (int)argv[1].len, argv[1].p);
    }
}
