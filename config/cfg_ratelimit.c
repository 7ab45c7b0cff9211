/*
 * cfg_ratelimit.c - the `ratelimit` and `ratelimit-command` directives.
 *
 *   ratelimit read|write|admin RATE/PERIOD [burst N]   |   ratelimit CLASS off
 *   ratelimit-command NAME RATE/PERIOD [burst N]       |   ratelimit-command NAME off
 *
 * RATE is a whole number of requests, PERIOD a duration ("10000/1s",
 * "600/1m", "5/250ms"; a unit alone means one of it: "100/s").  burst is how
 * many may come at once after a quiet spell; it defaults to RATE.  A line
 * states one limit whole and replaces what an earlier line said for the same
 * class or command, so a file can tighten or lift (`off`) a default.
 *
 * Class limits live in a fixed array (one slot per class, rate 0 = off).
 * Command limits are a list in file order, and a lifted one stays in it as
 * "NAME off": the list is what the text says, so a config rendered by
 * cfg_serialize and read back over the defaults (which limit "auth") is equal
 * to the one it came from.  Command names are not checked against the
 * command table here (config/ does not know which commands a build serves,
 * and the default names AUTH, which may not exist yet); the limiter ignores a
 * name no command has.
 *
 * Bounds keep the limiter's arithmetic exact: RATE 1..1e9, PERIOD 1ms..1d,
 * at most 1e9 requests per second (one per nanosecond), burst 1..1e9, and a
 * full burst may not take longer than 2^60 ns (36 years) to refill.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/cfg_internal.h"

#define RL_RATE_MAX 1000000000LL
#define RL_BURST_MAX 1000000000LL
#define RL_CMDS_MAX 256
#define RL_NS_MAX (1LL << 60)

static const char *const rl_class_names[CFG_RL_NCLASS] = { "read", "write", "admin" };

const char *cfg_rl_class_name(enum cfg_rl_class k)
{
    return (unsigned)k < CFG_RL_NCLASS ? rl_class_names[k] : "unknown";
}

/* Parses "RATE/PERIOD [burst N]" or "off" (argv[0..argc)) into *r.  `what`
 * names the limit in errors. */
static hkv_status parse_rate(const char *what, int argc, char **argv, struct cfg_rate *r,
                             char *why)
{
    char g[48];
    if (argc == 1 && strcasecmp(argv[0], "off") == 0) {
        *r = (struct cfg_rate){ 0, 0, 0 };
        return HKV_OK;
    }
    if (argc != 1 && argc != 3) {
        snprintf(why, CFG_WHY, "%s needs RATE/PERIOD [burst N] or off", what);
        return HKV_EINVAL;
    }
    const char *slash = strchr(argv[0], '/');
    char num[32], per[48];
    size_t nlen = slash ? (size_t)(slash - argv[0]) : 0;
    if (slash == NULL || nlen == 0 || nlen >= sizeof(num) || strlen(slash + 1) + 2 > sizeof(per)) {
        snprintf(why, CFG_WHY, "%s needs RATE/PERIOD (e.g. 10000/1s), got '%s'", what,
                 cfg_show(argv[0], g, sizeof(g)));
        return HKV_EINVAL;
    }
    memcpy(num, argv[0], nlen);
    num[nlen] = '\0';
    /* "100/s": a unit alone means one of it */
    snprintf(per, sizeof(per), "%s%s", isalpha((unsigned char)slash[1]) ? "1" : "", slash + 1);
    int64_t rate, period, burst;
    if (cfg_parse_int(num, 1, RL_RATE_MAX, &rate) != HKV_OK) {
        snprintf(why, CFG_WHY, "%s: RATE needs a whole number from 1 to %lld, got '%s'", what,
                 (long long)RL_RATE_MAX, cfg_show(num, g, sizeof(g)));
        return HKV_EINVAL;
    }
    if (cfg_parse_duration(per, 1, CFG_DAY, &period) != HKV_OK) {
        char w2[160];
        snprintf(w2, sizeof(w2), "%s: PERIOD", what);
        cfg_why_duration(why, w2, slash + 1, 1, CFG_DAY);
        return HKV_EINVAL;
    }
    burst = rate;
    if (argc == 3) {
        if (strcasecmp(argv[1], "burst") != 0) {
            snprintf(why, CFG_WHY, "%s: unknown keyword '%s' (burst)", what,
                     cfg_show(argv[1], g, sizeof(g)));
            return HKV_EINVAL;
        }
        if (cfg_parse_int(argv[2], 1, RL_BURST_MAX, &burst) != HKV_OK) {
            snprintf(why, CFG_WHY, "%s: burst needs a whole number from 1 to %lld, got '%s'",
                     what, (long long)RL_BURST_MAX, cfg_show(argv[2], g, sizeof(g)));
            return HKV_EINVAL;
        }
    }
    int64_t period_ns = period * 1000000LL; /* <= 8.64e13 */
    if (rate > period_ns) {
        snprintf(why, CFG_WHY, "%s: more than one request per nanosecond is not a limit", what);
        return HKV_EINVAL;
    }
    int64_t refill;
    if (__builtin_mul_overflow(period_ns / rate, burst, &refill) || refill > RL_NS_MAX) {
        snprintf(why, CFG_WHY, "%s: a burst of %lld would take over 36 years to refill", what,
                 (long long)burst);
        return HKV_EINVAL;
    }
    *r = (struct cfg_rate){ rate, period, burst };
    return HKV_OK;
}

static void render_rate(const struct cfg_rate *r, struct cfg_out *out, enum cfg_render_mode mode)
{
    if (r->rate == 0) {
        cfg_out_puts(out, "off");
        return;
    }
    char p[32];
    if (mode == CFG_R_FILE)
        cfg_render_duration(r->period_ms, p, sizeof(p));
    else
        snprintf(p, sizeof(p), "%lldms", (long long)r->period_ms);
    cfg_out_printf(out, "%lld/%s burst %lld", (long long)r->rate, p, (long long)r->burst);
}

static int rate_eq(const struct cfg_rate *a, const struct cfg_rate *b)
{
    return a->rate == b->rate && a->period_ms == b->period_ms && a->burst == b->burst;
}

/* ---- ratelimit read|write|admin ---- */

static hkv_status class_apply(struct cfg *c, int argc, char **argv, char *why)
{
    char g[48], what[64];
    if (argc < 1) {
        snprintf(why, CFG_WHY, "'ratelimit' needs read, write or admin, then RATE/PERIOD");
        return HKV_EINVAL;
    }
    int k = -1;
    for (int i = 0; i < CFG_RL_NCLASS; i++)
        if (strcasecmp(argv[0], rl_class_names[i]) == 0)
            k = i;
    if (k < 0) {
        snprintf(why, CFG_WHY, "'ratelimit' needs read, write or admin, got '%s'",
                 cfg_show(argv[0], g, sizeof(g)));
        return HKV_EINVAL;
    }
    snprintf(what, sizeof(what), "'ratelimit %s'", rl_class_names[k]);
    struct cfg_rate r;
    hkv_status st = parse_rate(what, argc - 1, argv + 1, &r, why);
    if (st == HKV_OK)
        c->ratelimit[k] = r;
    return st;
}

static void class_render(const struct cfg *c, const struct cfg_option *o, struct cfg_out *out,
                         enum cfg_render_mode mode)
{
    for (int k = 0; k < CFG_RL_NCLASS; k++) {
        if (mode == CFG_R_FILE)
            cfg_out_printf(out, "%s ", o->name);
        else if (k > 0)
            cfg_out_putc(out, '\n');
        cfg_out_printf(out, "%s ", rl_class_names[k]);
        render_rate(&c->ratelimit[k], out, mode);
        if (mode == CFG_R_FILE)
            cfg_out_putc(out, '\n');
    }
}

static int class_equal(const struct cfg *a, const struct cfg *b)
{
    for (int k = 0; k < CFG_RL_NCLASS; k++)
        if (!rate_eq(&a->ratelimit[k], &b->ratelimit[k]))
            return 0;
    return 1;
}

static hkv_status class_copy(struct cfg *dst, const struct cfg *src)
{
    memcpy(dst->ratelimit, src->ratelimit, sizeof(dst->ratelimit));
    return HKV_OK;
}

static void class_release(struct cfg *c)
{
    memset(c->ratelimit, 0, sizeof(c->ratelimit));
}

const struct cfg_special cfg_rl_class_special = {
    .apply = class_apply,
    .render = class_render,
    .equal = class_equal,
    .copy = class_copy,
    .release = class_release,
};

/* ---- ratelimit-command NAME ---- */

/* 1 if s is a plausible command name: 1..CFG_NAME_MAX-1 of [A-Za-z0-9_|-]. */
static int cmd_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= CFG_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '|')
            return 0;
    return 1;
}

static hkv_status cmd_apply(struct cfg *c, int argc, char **argv, char *why)
{
    char g[48], what[CFG_NAME_MAX + 32];
    if (argc < 1 || !cmd_name_ok(argv[0])) {
        snprintf(why, CFG_WHY, "'ratelimit-command' needs a command name, got '%s'",
                 argc < 1 ? "" : cfg_show(argv[0], g, sizeof(g)));
        return HKV_EINVAL;
    }
    struct cfg_rate_cmd e;
    memset(&e, 0, sizeof(e));
    for (size_t i = 0; argv[0][i] != '\0'; i++)
        e.name[i] = (char)tolower((unsigned char)argv[0][i]);
    snprintf(what, sizeof(what), "'ratelimit-command %s'", e.name);
    hkv_status st = parse_rate(what, argc - 1, argv + 1, &e.r, why);
    if (st != HKV_OK)
        return st;
    for (size_t i = 0; i < c->nratelimit_cmds; i++) {
        if (strcmp(c->ratelimit_cmds[i].name, e.name) == 0) {
            c->ratelimit_cmds[i] = e;
            return HKV_OK;
        }
    }
    if (c->nratelimit_cmds >= RL_CMDS_MAX) {
        snprintf(why, CFG_WHY, "more than %d 'ratelimit-command' lines", RL_CMDS_MAX);
        return HKV_EINVAL;
    }
    struct cfg_rate_cmd *n = realloc(c->ratelimit_cmds, (c->nratelimit_cmds + 1) * sizeof(*n));
    if (n == NULL)
        return HKV_ENOMEM;
    n[c->nratelimit_cmds++] = e;
    c->ratelimit_cmds = n;
    return HKV_OK;
}

static void cmd_render(const struct cfg *c, const struct cfg_option *o, struct cfg_out *out,
                       enum cfg_render_mode mode)
{
    for (size_t i = 0; i < c->nratelimit_cmds; i++) {
        if (mode == CFG_R_FILE)
            cfg_out_printf(out, "%s ", o->name);
        else if (i > 0)
            cfg_out_putc(out, '\n');
        cfg_out_printf(out, "%s ", c->ratelimit_cmds[i].name);
        render_rate(&c->ratelimit_cmds[i].r, out, mode);
        if (mode == CFG_R_FILE)
            cfg_out_putc(out, '\n');
    }
}

static int cmd_equal(const struct cfg *a, const struct cfg *b)
{
    if (a->nratelimit_cmds != b->nratelimit_cmds)
        return 0;
    for (size_t i = 0; i < a->nratelimit_cmds; i++)
        if (strcmp(a->ratelimit_cmds[i].name, b->ratelimit_cmds[i].name) != 0 ||
            !rate_eq(&a->ratelimit_cmds[i].r, &b->ratelimit_cmds[i].r))
            return 0;
    return 1;
}

static void cmd_release(struct cfg *c)
{
    free(c->ratelimit_cmds);
    c->ratelimit_cmds = NULL;
    c->nratelimit_cmds = 0;
}

static hkv_status cmd_copy(struct cfg *dst, const struct cfg *src)
{
    struct cfg_rate_cmd *n = NULL;
    if (src->nratelimit_cmds > 0) {
        if ((n = malloc(src->nratelimit_cmds * sizeof(*n))) == NULL)
            return HKV_ENOMEM;
        memcpy(n, src->ratelimit_cmds, src->nratelimit_cmds * sizeof(*n));
    }
    cmd_release(dst);
    dst->ratelimit_cmds = n;
    dst->nratelimit_cmds = src->nratelimit_cmds;
    return HKV_OK;
}

const struct cfg_special cfg_rl_cmd_special = {
    .apply = cmd_apply,
    .render = cmd_render,
    .equal = cmd_equal,
    .copy = cmd_copy,
    .release = cmd_release,
};

const struct cfg_rate *cfg_ratelimit_command(const struct cfg *c, const char *name)
{
    for (size_t i = 0; i < c->nratelimit_cmds; i++)
        if (strcasecmp(c->ratelimit_cmds[i].name, name) == 0)
            return &c->ratelimit_cmds[i].r;
    return NULL;
}
