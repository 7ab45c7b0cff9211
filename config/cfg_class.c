/*
 * cfg_class.c - the `class` directive and the key -> class lookup.
 *
 * `class NAME [pattern GLOB]... [pool hot|cold] [fresh D] [keep D]
 *  [durability ledger|durable] [on-timeout degrade|error] [content-type TYPE]`
 * One line states a whole class: a field it omits takes the documented
 * default, never the value of an earlier line for that name, so a reader sees
 * a class's full meaning on one line.  A line with a new name adds a class; a
 * line with a known name replaces that class where it stands, so lookup order
 * (file order, first match wins) never changes behind the reader's back.  The
 * class "default" always exists (cfg_create makes it from the table's default
 * text "default") and always stays last: it has no patterns and catches every
 * key no other class matches.  content-type is what the HTTP front door
 * sends as Content-Type for the class's values (default
 * application/octet-stream); it is rendered only when it is not the default,
 * so a class line that never names it reads as it always did.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/syskey.h"
#include <strings.h>

#include "config/cfg_internal.h"

#define CLASS_MAX 1024          /* classes in one config */
#define PATTERN_MAX 1024        /* patterns in one class */
#define CLASS_DUR_MAX (365 * CFG_DAY)

int cfg_name_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-'))
            return 0;
    }
    return 1;
}

void cfg_class_deinit(struct cfg_class *k)
{
    for (size_t i = 0; i < k->npatterns; i++)
        free(k->patterns[i]);
    free(k->patterns);
    k->patterns = NULL;
    k->npatterns = 0;
}

static hkv_status class_dup(struct cfg_class *dst, const struct cfg_class *src)
{
    *dst = *src;
    dst->patterns = NULL;
    dst->npatterns = 0;
    if (src->npatterns == 0)
        return HKV_OK;
    if ((dst->patterns = calloc(src->npatterns, sizeof(char *))) == NULL)
        return HKV_ENOMEM;
    for (size_t i = 0; i < src->npatterns; i++) {
        if ((dst->patterns[i] = strdup(src->patterns[i])) == NULL) {
            cfg_class_deinit(dst);
            return HKV_ENOMEM;
        }
        dst->npatterns++;
    }
    return HKV_OK;
}

static int is_default(const char *name)
{
    return strcmp(name, "default") == 0;
}

/* A Content-Type value: printable ASCII (no CR, LF or other control that
 * could end a header line), a type/subtype slash, bounded. */
static int ctype_ok(const char *v)
{
    size_t n = strlen(v);
    if (n < 3 || n >= CFG_CTYPE_MAX || strchr(v, '/') == NULL || v[0] == ' ')
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e)
            return 0;
    return 1;
}

/* Parses the keyword/value pairs after the name into k (patterns malloc'd). */
static hkv_status class_parse(struct cfg_class *k, int argc, char **argv, char *why)
{
    char g[48];
    unsigned seen = 0;
    for (int i = 1; i < argc; i += 2) {
        const char *kw = argv[i];
        static const char *const kws[] = { "pattern", "pool", "fresh", "keep", "durability",
                                           "on-timeout", "content-type" };
        int which = -1;
        for (int j = 0; j < 7; j++)
            if (strcasecmp(kw, kws[j]) == 0)
                which = j;
        if (which < 0) {
            snprintf(why, CFG_WHY,
                     "class '%s': unknown keyword '%s' (pattern, pool, fresh, keep, durability, "
                     "on-timeout, content-type)", k->name, cfg_show(kw, g, sizeof(g)));
            return HKV_EINVAL;
        }
        if (i + 1 >= argc) {
            snprintf(why, CFG_WHY, "class '%s': '%s' needs a value", k->name, kws[which]);
            return HKV_EINVAL;
        }
        if (which > 0 && (seen & (1u << which))) {
            snprintf(why, CFG_WHY, "class '%s': '%s' given twice", k->name, kws[which]);
            return HKV_EINVAL;
        }
        seen |= 1u << which;
        const char *v = argv[i + 1];
        char what[CFG_NAME_MAX + 32];
        snprintf(what, sizeof(what), "class '%s': '%s'", k->name, kws[which]);
        switch (which) {
        case 0: {
            if (k->npatterns >= PATTERN_MAX) {
                snprintf(why, CFG_WHY, "class '%s': more than %d patterns", k->name, PATTERN_MAX);
                return HKV_EINVAL;
            }
            char **np = realloc(k->patterns, (k->npatterns + 1) * sizeof(*np));
            if (np == NULL)
                return HKV_ENOMEM;
            k->patterns = np;
            if ((np[k->npatterns] = strdup(v)) == NULL)
                return HKV_ENOMEM;
            k->npatterns++;
            break;
        }
        case 1:
            if (strcasecmp(v, "hot") == 0)
                k->pool = CFG_POOL_HOT;
            else if (strcasecmp(v, "cold") == 0)
                k->pool = CFG_POOL_COLD;
            else
                goto bad_enum;
            break;
        case 2:
        case 3: {
            int64_t ms;
            if (cfg_parse_duration(v, 0, CLASS_DUR_MAX, &ms) != HKV_OK) {
                cfg_why_duration(why, what, v, 0, CLASS_DUR_MAX);
                return HKV_EINVAL;
            }
            *(which == 2 ? &k->fresh_ms : &k->keep_ms) = ms;
            break;
        }
        case 4:
            if (strcasecmp(v, "ledger") == 0)
                k->durability = CFG_DUR_LEDGER;
            else if (strcasecmp(v, "durable") == 0)
                k->durability = CFG_DUR_DURABLE;
            else
                goto bad_enum;
            break;
        case 5:
            if (strcasecmp(v, "degrade") == 0)
                k->on_timeout = CFG_ONTO_DEGRADE;
            else if (strcasecmp(v, "error") == 0)
                k->on_timeout = CFG_ONTO_ERROR;
            else
                goto bad_enum;
            break;
        case 6:
            if (!ctype_ok(v)) {
                snprintf(why, CFG_WHY, "%s needs a media type of 3 to %d printable characters "
                         "with a '/' (text/plain; charset=utf-8), got '%s'", what,
                         CFG_CTYPE_MAX - 1, cfg_show(v, g, sizeof(g)));
                return HKV_EINVAL;
            }
            snprintf(k->content_type, sizeof(k->content_type), "%s", v);
            break;
        }
        continue;
bad_enum:
        snprintf(why, CFG_WHY, "%s needs %s, got '%s'", what,
                 which == 1 ? "hot or cold" : which == 4 ? "ledger or durable" : "degrade or error",
                 cfg_show(v, g, sizeof(g)));
        return HKV_EINVAL;
    }
    return HKV_OK;
}

static hkv_status class_apply(struct cfg *c, int argc, char **argv, char *why)
{
    char g[48];
    if (argc < 1) {
        snprintf(why, CFG_WHY, "'class' needs a name");
        return HKV_EINVAL;
    }
    if (!cfg_name_ok(argv[0], CFG_NAME_MAX - 1)) {
        snprintf(why, CFG_WHY, "class name needs 1 to %d characters of [A-Za-z0-9_-], got '%s'",
                 CFG_NAME_MAX - 1, cfg_show(argv[0], g, sizeof(g)));
        return HKV_EINVAL;
    }
    struct cfg_class k = { .pool = CFG_POOL_COLD, .fresh_ms = CFG_SEC, .keep_ms = 60 * CFG_SEC,
                           .durability = CFG_DUR_LEDGER, .on_timeout = CFG_ONTO_DEGRADE,
                           .content_type = CFG_CTYPE_DEFAULT };
    snprintf(k.name, sizeof(k.name), "%s", argv[0]);
    hkv_status st = class_parse(&k, argc, argv, why);
    if (st != HKV_OK)
        goto fail;
    if (is_default(k.name) && k.npatterns > 0) {
        snprintf(why, CFG_WHY,
                 "class 'default' cannot have patterns: it catches every key no other class "
                 "matches");
        st = HKV_EINVAL;
        goto fail;
    }
    if (!is_default(k.name) && k.npatterns == 0) {
        snprintf(why, CFG_WHY, "class '%s' has no pattern: no key could ever use it", k.name);
        st = HKV_EINVAL;
        goto fail;
    }
    for (size_t i = 0; i < c->nclasses; i++) {
        if (strcmp(c->classes[i].name, k.name) == 0) {
            cfg_class_deinit(&c->classes[i]);
            c->classes[i] = k;
            return HKV_OK;
        }
    }
    if (c->nclasses >= CLASS_MAX) {
        snprintf(why, CFG_WHY, "more than %d classes", CLASS_MAX);
        st = HKV_EINVAL;
        goto fail;
    }
    struct cfg_class *nk = realloc(c->classes, (c->nclasses + 1) * sizeof(*nk));
    if (nk == NULL) {
        st = HKV_ENOMEM;
        goto fail;
    }
    c->classes = nk;
    /* a new class goes before "default", which stays last */
    size_t at = c->nclasses;
    if (at > 0 && is_default(nk[at - 1].name))
        at--;
    memmove(&nk[at + 1], &nk[at], (c->nclasses - at) * sizeof(*nk));
    nk[at] = k;
    c->nclasses++;
    return HKV_OK;
fail:
    cfg_class_deinit(&k);
    return st;
}

static void class_render(const struct cfg *c, const struct cfg_option *o, struct cfg_out *out,
                         enum cfg_render_mode mode)
{
    static const char *const pools[] = { "hot", "cold" };
    static const char *const durs[] = { "ledger", "durable" };
    static const char *const ontos[] = { "degrade", "error" };
    for (size_t i = 0; i < c->nclasses; i++) {
        const struct cfg_class *k = &c->classes[i];
        char f[32], kp[32];
        if (mode == CFG_R_FILE)
            cfg_out_printf(out, "%s ", o->name);
        else if (i > 0)
            cfg_out_putc(out, '\n');
        cfg_out_puts(out, k->name);
        for (size_t j = 0; j < k->npatterns; j++) {
            cfg_out_puts(out, " pattern ");
            cfg_out_word(out, k->patterns[j]);
        }
        if (mode == CFG_R_FILE) {
            cfg_render_duration(k->fresh_ms, f, sizeof(f));
            cfg_render_duration(k->keep_ms, kp, sizeof(kp));
        } else {
            snprintf(f, sizeof(f), "%lldms", (long long)k->fresh_ms);
            snprintf(kp, sizeof(kp), "%lldms", (long long)k->keep_ms);
        }
        cfg_out_printf(out, " pool %s fresh %s keep %s durability %s on-timeout %s", pools[k->pool],
                       f, kp, durs[k->durability], ontos[k->on_timeout]);
        if (strcmp(k->content_type, CFG_CTYPE_DEFAULT) != 0) {
            cfg_out_puts(out, " content-type ");
            cfg_out_word(out, k->content_type);
        }
        if (mode == CFG_R_FILE)
            cfg_out_putc(out, '\n');
    }
}

static int class_eq(const struct cfg_class *a, const struct cfg_class *b)
{
    if (strcmp(a->name, b->name) != 0 || a->pool != b->pool || a->fresh_ms != b->fresh_ms ||
        a->keep_ms != b->keep_ms || a->durability != b->durability ||
        a->on_timeout != b->on_timeout || a->npatterns != b->npatterns ||
        strcmp(a->content_type, b->content_type) != 0)
        return 0;
    for (size_t i = 0; i < a->npatterns; i++)
        if (strcmp(a->patterns[i], b->patterns[i]) != 0)
            return 0;
    return 1;
}

static int class_equal(const struct cfg *a, const struct cfg *b)
{
    if (a->nclasses != b->nclasses)
        return 0;
    for (size_t i = 0; i < a->nclasses; i++)
        if (!class_eq(&a->classes[i], &b->classes[i]))
            return 0;
    return 1;
}

static void class_release(struct cfg *c)
{
    for (size_t i = 0; i < c->nclasses; i++)
        cfg_class_deinit(&c->classes[i]);
    free(c->classes);
    c->classes = NULL;
    c->nclasses = 0;
}

static hkv_status class_copy(struct cfg *dst, const struct cfg *src)
{
    struct cfg tmp = { .classes = NULL, .nclasses = 0 };
    if (src->nclasses > 0) {
        if ((tmp.classes = calloc(src->nclasses, sizeof(*tmp.classes))) == NULL)
            return HKV_ENOMEM;
        for (size_t i = 0; i < src->nclasses; i++) {
            if (class_dup(&tmp.classes[i], &src->classes[i]) != HKV_OK) {
                class_release(&tmp);
                return HKV_ENOMEM;
            }
            tmp.nclasses++;
        }
    }
    class_release(dst);
    dst->classes = tmp.classes;
    dst->nclasses = tmp.nclasses;
    return HKV_OK;
}

const struct cfg_special cfg_class_special = {
    .apply = class_apply,
    .render = class_render,
    .equal = class_equal,
    .copy = class_copy,
    .release = class_release,
};

const struct cfg_class *cfg_class_named(const struct cfg *c, const char *name)
{
    for (size_t i = 0; i < c->nclasses; i++)
        if (strcmp(c->classes[i].name, name) == 0)
            return &c->classes[i];
    return NULL;
}

/* pat against key, with the common shapes ("prefix*", a plain key)
 * compared directly: the general matcher walks the whole key through a
 * trailing star, and a SET asks for its key's class three times on the
 * edge (cfg_glob_match was 3-4% of the edge's cycles on SET -P16). */
static int pattern_match(const char *pat, const char *key, size_t keylen)
{
    /* The pattern's literal prefix (no wildcard before it) must be the
     * key's: the first byte that differs settles it. */
    size_t i = 0;
    for (; pat[i] != '\0'; i++) {
        char ch = pat[i];
        if (ch == '*' && pat[i + 1] == '\0')
            return 1;
        if (ch == '*' || ch == '?' || ch == '[' || ch == '\\')
            return cfg_glob_match(pat, i + strlen(pat + i), key, keylen, 0);
        if (i >= keylen || key[i] != ch)
            return 0;
    }
    return i == keylen;
}

const struct cfg_class *cfg_class_for(const struct cfg *c, const char *key, size_t keylen)
{
    size_t toff, tlen;
    if (keylen && (unsigned char)*key == 0xff && syskey_target(key, keylen, &toff, &tlen))
        return cfg_class_for(c, key + toff, tlen); /* its target's durability and pool */
    for (size_t i = 0; i < c->nclasses; i++) {
        const struct cfg_class *k = &c->classes[i];
        for (size_t j = 0; j < k->npatterns; j++)
            if (pattern_match(k->patterns[j], key, keylen))
                return k;
    }
    return cfg_class_named(c, "default");
}
