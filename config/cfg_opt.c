/*
 * cfg_opt.c - one option's value, by type: set it from words, render it,
 * compare, copy and free it.
 *
 * Everything here is driven by the table row (offset, size, bounds), so a new
 * directive of an existing type needs no code.  An apply parses every word
 * into temporaries first and only then replaces the old value, so a bad value
 * leaves the config exactly as it was.  Integer fields are either int or
 * int64_t; the row's size says which.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/cfg_internal.h"

#define FIELD(c, o, T) ((T *)((char *)(c) + (o)->off))
#define CFIELD(c, o, T) ((T const *)((const char *)(c) + (o)->off))
#define COUNT(c, o) ((size_t *)((char *)(c) + (o)->noff))
#define CCOUNT(c, o) ((const size_t *)((const char *)(c) + (o)->noff))

static int64_t get_int(const struct cfg *c, const struct cfg_option *o)
{
    if (o->size == sizeof(int64_t))
        return *CFIELD(c, o, int64_t);
    return *CFIELD(c, o, int);
}

static void put_int(struct cfg *c, const struct cfg_option *o, int64_t v)
{
    if (o->size == sizeof(int64_t))
        *FIELD(c, o, int64_t) = v;
    else
        *FIELD(c, o, int) = (int)v;
}

static void free_strlist(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static char **dup_strlist(char *const *v, size_t n)
{
    char **d = calloc(n ? n : 1, sizeof(*d));
    if (d == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if ((d[i] = strdup(v[i])) == NULL) {
            free_strlist(d, i);
            return NULL;
        }
    }
    return d;
}

/* CONFIG GET's form of a duration: whole seconds as a bare number, as Redis
 * prints timeout and tcp-keepalive (and as the file reads a bare number);
 * anything finer as "<n>ms". */
static void out_get_duration(struct cfg_out *out, int64_t ms)
{
    if (ms % 1000 == 0)
        cfg_out_printf(out, "%lld", (long long)(ms / 1000));
    else
        cfg_out_printf(out, "%lldms", (long long)ms);
}

static hkv_status apply_scalar(struct cfg *c, const struct cfg_option *o, const char *arg,
                               char *why)
{
    char g[48], what[80];
    int64_t v;
    snprintf(what, sizeof(what), "'%s'", o->name);
    switch (o->type) {
    case CFG_T_INT:
        if (cfg_parse_int(arg, o->min, o->max, &v) != HKV_OK) {
            snprintf(why, CFG_WHY, "'%s' needs an integer between %lld and %lld, got '%s'",
                     o->name, (long long)o->min, (long long)o->max, cfg_show(arg, g, sizeof(g)));
            return HKV_EINVAL;
        }
        put_int(c, o, v);
        return HKV_OK;
    case CFG_T_SIZE:
        if (cfg_parse_size(arg, o->min, o->max, &v) != HKV_OK) {
            cfg_why_size(why, what, arg, o->min, o->max);
            return HKV_EINVAL;
        }
        put_int(c, o, v);
        return HKV_OK;
    case CFG_T_DURATION:
        if (cfg_parse_duration(arg, o->min, o->max, &v) != HKV_OK) {
            cfg_why_duration(why, what, arg, o->min, o->max);
            return HKV_EINVAL;
        }
        put_int(c, o, v);
        return HKV_OK;
    case CFG_T_RATIO:
        if (cfg_parse_ratio(arg, o->min, o->max, &v) != HKV_OK) {
            char lo[16], hi[16];
            cfg_render_ratio(o->min, lo, sizeof(lo));
            cfg_render_ratio(o->max, hi, sizeof(hi));
            snprintf(why, CFG_WHY, "'%s' needs a fraction between %s and %s (like 0.7), got '%s'",
                     o->name, lo, hi, cfg_show(arg, g, sizeof(g)));
            return HKV_EINVAL;
        }
        put_int(c, o, v);
        return HKV_OK;
    case CFG_T_BOOL:
        if ((v = cfg_parse_bool(arg)) < 0) {
            snprintf(why, CFG_WHY, "'%s' needs yes or no, got '%s'", o->name,
                     cfg_show(arg, g, sizeof(g)));
            return HKV_EINVAL;
        }
        put_int(c, o, v);
        return HKV_OK;
    case CFG_T_ENUM:
        for (int i = 0; o->enums[i] != NULL; i++) {
            if (strcasecmp(arg, o->enums[i]) == 0) {
                put_int(c, o, i);
                return HKV_OK;
            }
        }
        {
            char list[160] = "";
            for (int i = 0; o->enums[i] != NULL; i++)
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
                         i ? "|" : "", o->enums[i]);
            snprintf(why, CFG_WHY, "'%s' needs one of %s, got '%s'", o->name, list,
                     cfg_show(arg, g, sizeof(g)));
        }
        return HKV_EINVAL;
    case CFG_T_STRING:
    case CFG_T_PATH: {
        const char *inner = o->check != NULL ? o->check(arg) : NULL;
        if (inner != NULL) {
            snprintf(why, CFG_WHY, "'%s' %s, got '%s'", o->name, inner,
                     cfg_show(arg, g, sizeof(g)));
            return HKV_EINVAL;
        }
        char *s = strdup(arg);
        if (s == NULL)
            return HKV_ENOMEM;
        free(*FIELD(c, o, char *));
        *FIELD(c, o, char *) = s;
        return HKV_OK;
    }
    default:
        snprintf(why, CFG_WHY, "'%s' has no scalar form", o->name);
        return HKV_EINVAL;
    }
}

static hkv_status apply_list(struct cfg *c, const struct cfg_option *o, int argc, char **argv,
                             char *why)
{
    char g[48];
    size_t n = (size_t)argc;
    if (o->type == CFG_T_STRLIST) {
        for (int i = 0; i < argc; i++) {
            const char *inner = o->check != NULL ? o->check(argv[i]) : NULL;
            if (inner != NULL) {
                snprintf(why, CFG_WHY, "'%s' %s, got '%s'", o->name, inner,
                         cfg_show(argv[i], g, sizeof(g)));
                return HKV_EINVAL;
            }
        }
        char **v = dup_strlist(argv, n);
        if (v == NULL)
            return HKV_ENOMEM;
        free_strlist(*FIELD(c, o, char **), *COUNT(c, o));
        *FIELD(c, o, char **) = v;
        *COUNT(c, o) = n;
        return HKV_OK;
    }
    int64_t *v = NULL;
    if (n > 0 && (v = calloc(n, sizeof(*v))) == NULL)
        return HKV_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (cfg_parse_duration(argv[i], 0, CFG_HOUR, &v[i]) != HKV_OK) {
            char what[96];
            snprintf(what, sizeof(what), "each of '%s'", o->name);
            cfg_why_duration(why, what, argv[i], 0, CFG_HOUR);
            free(v);
            return HKV_EINVAL;
        }
    }
    free(*FIELD(c, o, int64_t *));
    *FIELD(c, o, int64_t *) = v;
    *COUNT(c, o) = n;
    return HKV_OK;
}

hkv_status cfg_opt_apply(struct cfg *c, const struct cfg_option *o, int argc, char **argv,
                         char *why)
{
    switch (o->type) {
    case CFG_T_SPECIAL:
        return o->special->apply(c, argc, argv, why);
    case CFG_T_STRLIST:
    case CFG_T_DURLIST:
        if (argc < o->min || argc > o->max) {
            snprintf(why, CFG_WHY, "'%s' takes %lld to %lld arguments, got %d", o->name,
                     (long long)o->min, (long long)o->max, argc);
            return HKV_EINVAL;
        }
        return apply_list(c, o, argc, argv, why);
    default:
        if (argc != 1) {
            snprintf(why, CFG_WHY, "'%s' takes 1 argument, got %d", o->name, argc);
            return HKV_EINVAL;
        }
        return apply_scalar(c, o, argv[0], why);
    }
}

/* One scalar value as a word: file form uses units, GET form bytes and ms. */
static void render_value(const struct cfg *c, const struct cfg_option *o, struct cfg_out *out,
                         enum cfg_render_mode mode)
{
    char tmp[48];
    int64_t v;
    switch (o->type) {
    case CFG_T_INT:
        cfg_out_printf(out, "%lld", (long long)get_int(c, o));
        break;
    case CFG_T_SIZE:
        v = get_int(c, o);
        if (mode == CFG_R_GET)
            cfg_out_printf(out, "%lld", (long long)v);
        else {
            cfg_render_size(v, tmp, sizeof(tmp));
            cfg_out_puts(out, tmp);
        }
        break;
    case CFG_T_DURATION:
        v = get_int(c, o);
        if (mode == CFG_R_GET)
            out_get_duration(out, v);
        else {
            cfg_render_duration(v, tmp, sizeof(tmp));
            cfg_out_puts(out, tmp);
        }
        break;
    case CFG_T_BOOL:
        cfg_out_puts(out, get_int(c, o) ? "yes" : "no");
        break;
    case CFG_T_RATIO:
        cfg_render_ratio(get_int(c, o), tmp, sizeof(tmp));
        cfg_out_puts(out, tmp);
        break;
    case CFG_T_ENUM:
        cfg_out_puts(out, o->enums[get_int(c, o)]);
        break;
    case CFG_T_STRING:
    case CFG_T_PATH: {
        const char *s = *CFIELD(c, o, char *);
        if (mode == CFG_R_GET)
            cfg_out_puts(out, s ? s : "");
        else
            cfg_out_word(out, s ? s : "");
        break;
    }
    case CFG_T_STRLIST: {
        char *const *l = *CFIELD(c, o, char **);
        for (size_t i = 0; i < *CCOUNT(c, o); i++) {
            if (i > 0)
                cfg_out_putc(out, ' ');
            if (mode == CFG_R_GET)
                cfg_out_puts(out, l[i]);
            else
                cfg_out_word(out, l[i]);
        }
        break;
    }
    case CFG_T_DURLIST: {
        const int64_t *l = *CFIELD(c, o, int64_t *);
        for (size_t i = 0; i < *CCOUNT(c, o); i++) {
            if (i > 0)
                cfg_out_putc(out, ' ');
            if (mode == CFG_R_GET)
                cfg_out_printf(out, "%lldms", (long long)l[i]); /* hotkvd's own: one unit for all */
            else {
                cfg_render_duration(l[i], tmp, sizeof(tmp));
                cfg_out_puts(out, tmp);
            }
        }
        break;
    }
    case CFG_T_SPECIAL:
        break;
    }
}

void cfg_opt_render(const struct cfg *c, const struct cfg_option *o, struct cfg_out *out,
                    enum cfg_render_mode mode)
{
    if (o->type == CFG_T_SPECIAL) {
        o->special->render(c, o, out, mode);
        return;
    }
    if (mode == CFG_R_FILE) {
        cfg_out_puts(out, o->name);
        int empty = (o->type == CFG_T_STRLIST || o->type == CFG_T_DURLIST) && *CCOUNT(c, o) == 0;
        if (!empty)
            cfg_out_putc(out, ' ');
    }
    render_value(c, o, out, mode);
    if (mode == CFG_R_FILE)
        cfg_out_putc(out, '\n');
}

int cfg_opt_equal(const struct cfg *a, const struct cfg *b, const struct cfg_option *o)
{
    switch (o->type) {
    case CFG_T_SPECIAL:
        return o->special->equal(a, b);
    case CFG_T_STRING:
    case CFG_T_PATH: {
        const char *x = *CFIELD(a, o, char *), *y = *CFIELD(b, o, char *);
        return strcmp(x ? x : "", y ? y : "") == 0;
    }
    case CFG_T_STRLIST: {
        size_t n = *CCOUNT(a, o);
        if (n != *CCOUNT(b, o))
            return 0;
        for (size_t i = 0; i < n; i++)
            if (strcmp((*CFIELD(a, o, char **))[i], (*CFIELD(b, o, char **))[i]) != 0)
                return 0;
        return 1;
    }
    case CFG_T_DURLIST: {
        size_t n = *CCOUNT(a, o);
        return n == *CCOUNT(b, o) &&
               (n == 0 || memcmp(*CFIELD(a, o, int64_t *), *CFIELD(b, o, int64_t *),
                                 n * sizeof(int64_t)) == 0);
    }
    default:
        return get_int(a, o) == get_int(b, o);
    }
}

hkv_status cfg_opt_copy(struct cfg *dst, const struct cfg *src, const struct cfg_option *o)
{
    if (dst == src)
        return HKV_OK;
    switch (o->type) {
    case CFG_T_SPECIAL:
        return o->special->copy(dst, src);
    case CFG_T_STRING:
    case CFG_T_PATH: {
        const char *s = *CFIELD(src, o, char *);
        char *d = s ? strdup(s) : NULL;
        if (s != NULL && d == NULL)
            return HKV_ENOMEM;
        free(*FIELD(dst, o, char *));
        *FIELD(dst, o, char *) = d;
        return HKV_OK;
    }
    case CFG_T_STRLIST: {
        char **d = dup_strlist(*CFIELD(src, o, char **), *CCOUNT(src, o));
        if (d == NULL)
            return HKV_ENOMEM;
        free_strlist(*FIELD(dst, o, char **), *COUNT(dst, o));
        *FIELD(dst, o, char **) = d;
        *COUNT(dst, o) = *CCOUNT(src, o);
        return HKV_OK;
    }
    case CFG_T_DURLIST: {
        size_t n = *CCOUNT(src, o);
        int64_t *d = NULL;
        if (n > 0) {
            if ((d = malloc(n * sizeof(*d))) == NULL)
                return HKV_ENOMEM;
            memcpy(d, *CFIELD(src, o, int64_t *), n * sizeof(*d));
        }
        free(*FIELD(dst, o, int64_t *));
        *FIELD(dst, o, int64_t *) = d;
        *COUNT(dst, o) = n;
        return HKV_OK;
    }
    default:
        put_int(dst, o, get_int(src, o));
        return HKV_OK;
    }
}

void cfg_opt_release(struct cfg *c, const struct cfg_option *o)
{
    switch (o->type) {
    case CFG_T_SPECIAL:
        o->special->release(c);
        break;
    case CFG_T_STRING:
    case CFG_T_PATH:
        free(*FIELD(c, o, char *));
        *FIELD(c, o, char *) = NULL;
        break;
    case CFG_T_STRLIST:
        free_strlist(*FIELD(c, o, char **), *COUNT(c, o));
        *FIELD(c, o, char **) = NULL;
        *COUNT(c, o) = 0;
        break;
    case CFG_T_DURLIST:
        free(*FIELD(c, o, int64_t *));
        *FIELD(c, o, int64_t *) = NULL;
        *COUNT(c, o) = 0;
        break;
    default:
        break;
    }
}
