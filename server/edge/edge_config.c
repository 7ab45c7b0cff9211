/*
 * edge_config.c - CONFIG (edge_config.h).
 *
 * Redis's error texts come from the type Redis gives a directive, so the
 * directives both servers have are listed below with that type and Redis
 * 7.0's bounds.  A value hotkvd refuses is judged again as Redis would
 * judge it: Redis's reason if Redis refuses it too, else hotkvd's own (a
 * value only hotkvd takes, "timeout 1.5s", is simply taken).
 */
#include "server/edge/edge_config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/core/ctl.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_sess.h"
#include "server/edge/edge_op_int.h"

/* ---- Redis's view of a directive ----------------------------------------- */

enum redis_type { R_INT, R_MEM, R_BOOL, R_ENUM };

static const struct redis_opt {
    const char *name;
    enum redis_type type;
    long long lo, hi;             /* R_INT, R_MEM */
    const char *choices;          /* R_ENUM, as Redis lists them */
} redis_opts[] = {
    {"port", R_INT, 0, 65535, NULL},
    {"tls-port", R_INT, 0, 65535, NULL},
    {"maxclients", R_INT, 1, 4294967295LL, NULL},
    {"timeout", R_INT, 0, INT_MAX, NULL},
    {"tcp-keepalive", R_INT, 0, INT_MAX, NULL},
    {"shutdown-timeout", R_INT, 0, INT_MAX, NULL},
    {"proto-max-bulk-len", R_MEM, 1024 * 1024, LLONG_MAX, NULL},
    {"client-query-buffer-limit", R_MEM, 1024 * 1024, LLONG_MAX, NULL},
    {"protected-mode", R_BOOL, 0, 0, NULL},
    {"loglevel", R_ENUM, 0, 0, "debug, verbose, notice, warning"},
    {"tls-auth-clients", R_ENUM, 0, 0, "no, yes, optional"},
};

/* Redis's memtoull: digits and an optional unit (b k kb m mb g gb). */
static int redis_mem(const char *v, long long *out)
{
    static const struct { const char *unit; unsigned long long mul; } units[] = {
        {"", 1}, {"b", 1}, {"k", 1000}, {"kb", 1024}, {"m", 1000 * 1000},
        {"mb", 1024 * 1024}, {"g", 1000LL * 1000 * 1000}, {"gb", 1024LL * 1024 * 1024},
    };
    size_t d = 0;
    while (v[d] >= '0' && v[d] <= '9')
        d++;
    if (d == 0 || d > 20)
        return -1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(v + d, units[i].unit) != 0)
            continue;
        unsigned long long n = 0;
        for (size_t j = 0; j < d; j++) {
            if (n > (ULLONG_MAX - 9) / 10)
                return -1;
            n = n * 10 + (unsigned)(v[j] - '0');
        }
        if (n > ULLONG_MAX / units[i].mul)
            return -1;
        n *= units[i].mul;
        *out = n > LLONG_MAX ? LLONG_MAX : (long long)n;
        return 0;
    }
    return -1;
}

/* Redis's reason for refusing `value` for `name`, or NULL if Redis would
 * take it (or does not know the directive). */
static const char *redis_reason(const char *name, const char *value, char *buf, size_t len)
{
    for (size_t i = 0; i < sizeof(redis_opts) / sizeof(redis_opts[0]); i++) {
        const struct redis_opt *o = &redis_opts[i];
        if (strcmp(o->name, name) != 0)
            continue;
        long long n;
        switch (o->type) {
        case R_INT:
        case R_MEM:
            if (o->type == R_INT &&
                edge_arg_ll(&(struct resp_slice){value, strlen(value)}, &n) != 0)
                return "argument couldn't be parsed into an integer";
            if (o->type == R_MEM && redis_mem(value, &n) != 0)
                return "argument must be a memory value";
            if (n < o->lo || n > o->hi) {
                snprintf(buf, len, "argument must be between %lld and %lld inclusive", o->lo,
                         o->hi);
                return buf;
            }
            return NULL;
        case R_BOOL:
            return strcasecmp(value, "yes") == 0 || strcasecmp(value, "no") == 0
                       ? NULL : "argument must be 'yes' or 'no'";
        case R_ENUM: {
            const char *p = o->choices;
            size_t vl = strlen(value);
            while (*p) {
                size_t w = strcspn(p, ",");
                if (w == vl && strncasecmp(p, value, w) == 0)
                    return NULL;
                p += w;
                while (*p == ',' || *p == ' ')
                    p++;
            }
            snprintf(buf, len, "argument(s) must be one of the following: %s", o->choices);
            return buf;
        }
        }
    }
    return NULL;
}

/* The option table's index of `name` (any case), or -1. */
static long option_index(const char *p, size_t n)
{
    size_t count = cfg_option_count();
    for (size_t i = 0; i < count; i++) {
        const char *o = cfg_option_name(i);
        if (strlen(o) == n && strncasecmp(o, p, n) == 0)
            return (long)i;
    }
    return -1;
}

/* ---- GET --------------------------------------------------------------------- */

static int has_glob(const struct resp_slice *s)
{
    for (size_t i = 0; i < s->len; i++)
        if (s->p[i] == '*' || s->p[i] == '?' || s->p[i] == '[')
            return 1;
    return 0;
}

static void config_get(struct conn *c, int argc, const struct resp_slice *argv)
{
    const struct cfg *cfg = edge_config(c->e);
    size_t n = cfg_option_count();
    unsigned char *seen = calloc(n ? n : 1, 1);
    if (seen == NULL) {
        resp_add_error(&c->out, "ERR out of memory");
        return;
    }
    struct hkv_buf b = HKV_BUF_INIT;
    int pairs = 0;
    char val[4096];
    for (int a = 2; a < argc; a++) {
        if (!has_glob(&argv[a])) {
            long i = option_index(argv[a].p, argv[a].len);
            if (i < 0 || seen[i] || cfg_get(cfg, cfg_option_name((size_t)i), val, sizeof(val)) != HKV_OK)
                continue;
            seen[i] = 1;
            resp_add_bulk(&b, argv[a].p, argv[a].len); /* as asked, as Redis */
            resp_add_bulk_str(&b, val);
            pairs++;
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            const char *name = cfg_option_name(i);
            if (seen[i] || !cfg_glob_match(argv[a].p, argv[a].len, name, strlen(name), 1) ||
                cfg_get(cfg, name, val, sizeof(val)) != HKV_OK)
                continue;
            seen[i] = 1;
            resp_add_bulk_str(&b, name);
            resp_add_bulk_str(&b, val);
            pairs++;
        }
    }
    resp_add_map(&c->out, sess_of(c)->proto, pairs);
    buf_append(&c->out, buf_head(&b), buf_unread(&b));
    buf_deinit(&b);
    free(seen);
}

/* ---- SET --------------------------------------------------------------------- */

#define SET_FAILED "ERR CONFIG SET failed (possibly related to argument '%.*s') - %s"

/* Redis's first pass: every name is known, settable and given once.  0, or
 * -1 with the error written. */
static int set_names(struct conn *c, struct cfg *next, int argc, const struct resp_slice *argv,
                     long *idx)
{
    for (int i = 2; i + 1 < argc; i += 2) {
        const struct resp_slice *n = &argv[i];
        long o = memchr(n->p, '\0', n->len) ? -1 : option_index(n->p, n->len);
        if (o < 0) {
            resp_add_errorf(&c->out, "ERR Unknown option or number of arguments for CONFIG SET - "
                                     "'%.*s'", (int)n->len, n->p);
            return -1;
        }
        int flags = cfg_option_flags((size_t)o);
        const char *why = NULL;
        struct cfg_error err;
        /* credentials, paths, restart-only: cfg_set refuses them by name,
         * before reading any value, with its reason (what to do instead) */
        if (((flags & (CFG_F_SECRET | CFG_F_PATH)) || !(flags & CFG_F_RELOADABLE)) &&
            cfg_set(next, cfg_option_name((size_t)o), "", &err) != HKV_OK)
            why = err.msg;
        for (int j = 2; j < i && why == NULL; j += 2)
            if (idx[(j - 2) / 2] == o)
                why = "duplicate parameter";
        if (why != NULL) {
            resp_add_errorf(&c->out, SET_FAILED, (int)n->len, n->p, why);
            return -1;
        }
        idx[(i - 2) / 2] = o;
    }
    return 0;
}

static void config_set(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    if (argc % 2 != 0) {
        resp_add_error(&c->out, "ERR syntax error");
        return;
    }
    long *idx = calloc((size_t)argc / 2, sizeof(*idx));
    struct cfg *next = idx != NULL ? cfg_dup(edge_config(e)) : NULL;
    struct hkv_buf msg = HKV_BUF_INIT;
    struct cfg_error err = {"out of memory"};
    int ok = next != NULL; /* 1 go on, 0 failed (generic reply), -1 failed (replied) */
    if (ok && set_names(c, next, argc, argv, idx) != 0)
        ok = -1;
    for (int i = 2; ok == 1 && i + 1 < argc; i += 2) {
        const char *name = cfg_option_name((size_t)idx[(i - 2) / 2]);
        const struct resp_slice *v = &argv[i + 1];
        char value[4096], rbuf[160];
        const char *why = NULL;
        if (v->len < sizeof(value) && memchr(v->p, '\0', v->len) != NULL) {
            /* not text: Redis's own reason for a bad value of this option
             * where it has one (a NUL is no digit, no yes/no, no choice) */
            for (size_t k = 0; k < v->len; k++)
                value[k] = v->p[k] != '\0' ? v->p[k] : '\x01';
            value[v->len] = '\0';
            why = redis_reason(name, value, rbuf, sizeof(rbuf));
            if (why == NULL)
                why = "argument too long or not text";
        } else if (v->len >= sizeof(value)) {
            why = "argument too long or not text";
        } else {
            memcpy(value, v->p, v->len);
            value[v->len] = '\0';
            if (cfg_set(next, name, value, &err) != HKV_OK) {
                why = redis_reason(name, value, rbuf, sizeof(rbuf));
                if (why == NULL)
                    why = err.msg;
            }
        }
        if (why != NULL) {
            resp_add_errorf(&c->out, SET_FAILED, (int)strlen(name), name, why);
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
    free(idx);
}

/* ---- RESETSTAT ------------------------------------------------------------------ */

/* Daemon-wide, through the master, which has every process zero its
 * counters (this edge's too: edge_stats_reset) and zeroes the colo
 * segments' own.  The reply waits for the master's word that all of it is
 * done (edge_resetstat_done), so the OK means it.  The op waits on the
 * master, not on owners: its family has nothing to send. */
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
    if (e->ops->rs_tail != NULL)
        e->ops->rs_tail->next = op;
    else
        e->ops->rs_head = op;
    e->ops->rs_tail = op;
}

void edge_resetstat_done(void *arg)
{
    struct edge *e = arg;
    struct op *op = e->ops->rs_head;
    if (op == NULL)
        return;
    e->ops->rs_head = op->next;
    if (e->ops->rs_head == NULL)
        e->ops->rs_tail = NULL;
    op->next = NULL;
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        resp_add_simple(out, "OK");
    op_finish(op);
}

/* ---- the command --------------------------------------------------------------- */

static const char *const help[] = {
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value> in every process (until the next",
    "    reload or restart: the config file is not rewritten).",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "HELP",
    "    Prints this help.",
};

void edge_cmd_config(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (edge_arg_is(&argv[1], "get")) {
        config_get(c, argc, argv);
    } else if (edge_arg_is(&argv[1], "set")) {
        config_set(c, argc, argv);
    } else if (edge_arg_is(&argv[1], "resetstat")) {
        config_resetstat(c);
    } else if (edge_arg_is(&argv[1], "help")) {
        resp_add_array(&c->out, (int64_t)(sizeof(help) / sizeof(help[0])));
        for (size_t i = 0; i < sizeof(help) / sizeof(help[0]); i++)
            resp_add_simple(&c->out, help[i]);
    } else {
        resp_add_error(&c->out, "ERR CONFIG REWRITE is not supported by hotkvd: edit the config "
                                "file (CONFIG SET lasts until the next reload)");
    }
}
