/*
 * cfg_diff.c - configs compared and exchanged: serialize, diff, the reload
 * merge, and CONFIG GET/SET.
 *
 * All of it walks the option table, so there is no second list of directives
 * to fall out of step.  cfg_serialize writes the file form (units, quoting)
 * that cfg_load_text reads back to an equal config; cfg_get writes the
 * CONFIG GET form (sizes in bytes, durations as "<n>ms", strings bare), chosen
 * so that CONFIG SET of what CONFIG GET returned sets the same value.  cfg_set
 * works on a copy and swaps it in only if the whole config still validates,
 * so a refused SET changes nothing.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg_internal.h"

char *cfg_serialize(const struct cfg *c, size_t *len)
{
    struct cfg_out out = { .b = HKV_BUF_INIT, .st = HKV_OK };
    for (size_t i = 0; i < cfg_noptions; i++)
        cfg_opt_render(c, &cfg_options[i], &out, CFG_R_FILE);
    cfg_out_putc(&out, '\0');
    if (out.st != HKV_OK) {
        buf_deinit(&out.b);
        return NULL;
    }
    if (len != NULL)
        *len = out.b.len - 1;
    return out.b.data;
}

int cfg_diff(const struct cfg *a, const struct cfg *b, cfg_diff_fn fn, void *arg)
{
    int n = 0;
    for (size_t i = 0; i < cfg_noptions; i++) {
        const struct cfg_option *o = &cfg_options[i];
        if (cfg_opt_equal(a, b, o))
            continue;
        n++;
        if (fn != NULL)
            fn(o->name, o->flags, arg);
    }
    return n;
}

struct cfg *cfg_reload_merge(const struct cfg *live, const struct cfg *next)
{
    struct cfg *m = cfg_dup(next);
    if (m == NULL)
        return NULL;
    for (size_t i = 0; i < cfg_noptions; i++) {
        const struct cfg_option *o = &cfg_options[i];
        if (o->flags & CFG_F_RELOADABLE)
            continue;
        if (cfg_opt_copy(m, live, o) != HKV_OK || cfg_origin_copy(m, live, o) != HKV_OK) {
            cfg_destroy(&m);
            return NULL;
        }
    }
    return m;
}

hkv_status cfg_get(const struct cfg *c, const char *name, char *buf, size_t buflen)
{
    const struct cfg_option *o = cfg_option_find(name);
    if (o == NULL)
        return HKV_ENOENT;
    if (o->flags & CFG_F_SECRET)
        return HKV_EINVAL;
    struct cfg_out out = { .b = HKV_BUF_INIT, .st = HKV_OK };
    cfg_opt_render(c, o, &out, CFG_R_GET);
    hkv_status st = out.st;
    if (st == HKV_OK && out.b.len + 1 > buflen)
        st = HKV_EFULL;
    if (st == HKV_OK) {
        if (out.b.len > 0)
            memcpy(buf, out.b.data, out.b.len);
        buf[out.b.len] = '\0';
    }
    buf_deinit(&out.b);
    return st;
}

static hkv_status refuse(struct cfg_error *err, hkv_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static hkv_status refuse(struct cfg_error *err, hkv_status st, const char *fmt, ...)
{
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return st;
}

hkv_status cfg_set(struct cfg *c, const char *name, const char *value, struct cfg_error *err)
{
    char why[CFG_WHY], g[48], **argv = NULL;
    int argc = 0;
    const struct cfg_option *o = cfg_option_find(name);
    if (o == NULL)
        return refuse(err, HKV_EINVAL, "unknown directive '%s'", cfg_show(name, g, sizeof(g)));
    if (o->flags & CFG_F_SECRET)
        return refuse(err, HKV_EINVAL,
                      "'%s' holds credentials and cannot be set at runtime; edit the config "
                      "file and reload", o->name);
    if (o->flags & CFG_F_PATH)
        return refuse(err, HKV_EINVAL,
                      "'%s' is a path and cannot be set at runtime; edit the config file and "
                      "reload", o->name);
    if (!(o->flags & CFG_F_RELOADABLE))
        return refuse(err, HKV_EINVAL,
                      "'%s' is restart-only; edit the config file and restart", o->name);
    hkv_status st = cfg_split(value, strlen(value), &argc, &argv, why);
    if (st != HKV_OK)
        return refuse(err, st, "%s", st == HKV_ENOMEM ? "out of memory" : why);
    struct cfg *t = cfg_dup(c);
    if (t == NULL) {
        cfg_words_free(argc, argv);
        return refuse(err, HKV_ENOMEM, "out of memory");
    }
    st = cfg_opt_apply(t, o, argc, argv, why);
    cfg_words_free(argc, argv);
    if (st == HKV_OK && cfg_origin_set(t, o, "CONFIG SET") != HKV_OK)
        st = HKV_ENOMEM;
    if (st != HKV_OK)
        refuse(err, st, "%s", st == HKV_ENOMEM ? "out of memory" : why);
    else if ((st = cfg_validate(t, err)) == HKV_OK) {
        struct cfg swap = *c;
        *c = *t;
        *t = swap;
        t->refs = c->refs; /* the references stay with the objects */
        c->refs = swap.refs;
    }
    cfg_destroy(&t);
    return st;
}
