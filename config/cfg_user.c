/*
 * cfg_user.c - the `user` and `requirepass` directives: who may connect, with
 * which password, to which keys and command categories.
 *
 * `user NAME [rule]...`, a small subset of Redis's ACL rules:
 *   on | off                      may log in, or not
 *   >password | #<sha256 hex>     add a password (hashed at once) or a digest
 *   nopass | resetpass            any password works / forget the passwords
 *   ~glob | allkeys | resetkeys   keys the user may touch ("allkeys" = ~*)
 *   +@read +@write +@admin +@all  command categories (-@... removes one);
 *   allcommands | nocommands      +@all / -@all
 * Rules apply left to right, as ACL SETUSER does.  One line states a whole
 * user, starting from Redis's "off, no password, no keys, no commands"; a
 * line with a known name replaces that user (as `class` does), so a reader
 * sees a user's full meaning on one line.
 *
 * Passwords never outlive parsing: `>password` is hashed into a SHA-256
 * digest and the word holding it is wiped before apply returns.  The file
 * form (cfg_serialize, which is how children get the config) writes digests
 * as `#<hex>`, so plaintext never travels either.
 *
 * `requirepass PASS` is an alias: it sets the password of the user "default"
 * (creating `default on allkeys +@all` if no line names it); `requirepass ""`
 * makes an existing default user nopass.  It has no storage of its own, so
 * it renders nothing in the file form: the `user default` line carries it.
 *
 * Equality is over the effective users: a config with no "default" line has
 * the implicit one (cfg.h), so `user default on nopass ~* +@all` alone equals
 * a config with no user lines at all, and the example file can show it.
 */
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/cfg_internal.h"

#define USER_MAX 1024           /* users in one config */
#define USER_PASS_MAX 16        /* passwords (digests) of one user */
#define USER_KEYS_MAX 1024      /* key patterns of one user */

void cfg_password_digest(const void *p, size_t len, unsigned char out[CFG_DIGEST_LEN])
{
    SHA256(p, len, out);
}

static void wipe(char *s)
{
    OPENSSL_cleanse(s, strlen(s));
}

static void user_deinit(struct cfg_user *u)
{
    if (u->digests != NULL)
        OPENSSL_cleanse(u->digests, u->ndigests * CFG_DIGEST_LEN);
    free(u->digests);
    for (size_t i = 0; i < u->nkeys; i++)
        free(u->keys[i]);
    free(u->keys);
    u->digests = NULL;
    u->ndigests = 0;
    u->keys = NULL;
    u->nkeys = 0;
}

static hkv_status user_dup(struct cfg_user *dst, const struct cfg_user *src)
{
    *dst = *src;
    dst->digests = NULL;
    dst->keys = NULL;
    dst->ndigests = dst->nkeys = 0;
    if (src->ndigests > 0) {
        if ((dst->digests = malloc(src->ndigests * CFG_DIGEST_LEN)) == NULL)
            return HKV_ENOMEM;
        memcpy(dst->digests, src->digests, src->ndigests * CFG_DIGEST_LEN);
        dst->ndigests = src->ndigests;
    }
    if (src->nkeys > 0) {
        if ((dst->keys = calloc(src->nkeys, sizeof(char *))) == NULL)
            goto nomem;
        for (size_t i = 0; i < src->nkeys; i++) {
            if ((dst->keys[i] = strdup(src->keys[i])) == NULL)
                goto nomem;
            dst->nkeys++;
        }
    }
    return HKV_OK;
nomem:
    user_deinit(dst);
    return HKV_ENOMEM;
}

static hkv_status add_digest(struct cfg_user *u, const unsigned char d[CFG_DIGEST_LEN],
                             char *why)
{
    for (size_t i = 0; i < u->ndigests; i++)
        if (memcmp(u->digests[i], d, CFG_DIGEST_LEN) == 0)
            return HKV_OK;
    if (u->ndigests >= USER_PASS_MAX) {
        snprintf(why, CFG_WHY, "user '%s': more than %d passwords", u->name, USER_PASS_MAX);
        return HKV_EINVAL;
    }
    unsigned char (*nd)[CFG_DIGEST_LEN] = realloc(u->digests, (u->ndigests + 1) * CFG_DIGEST_LEN);
    if (nd == NULL)
        return HKV_ENOMEM;
    u->digests = nd;
    memcpy(nd[u->ndigests++], d, CFG_DIGEST_LEN);
    return HKV_OK;
}

static void clear_digests(struct cfg_user *u)
{
    if (u->digests != NULL)
        OPENSSL_cleanse(u->digests, u->ndigests * CFG_DIGEST_LEN);
    free(u->digests);
    u->digests = NULL;
    u->ndigests = 0;
}

static hkv_status add_key(struct cfg_user *u, const char *pat, char *why)
{
    for (size_t i = 0; i < u->nkeys; i++)
        if (strcmp(u->keys[i], pat) == 0)
            return HKV_OK;
    if (u->nkeys >= USER_KEYS_MAX) {
        snprintf(why, CFG_WHY, "user '%s': more than %d key patterns", u->name, USER_KEYS_MAX);
        return HKV_EINVAL;
    }
    char **nk = realloc(u->keys, (u->nkeys + 1) * sizeof(*nk));
    if (nk == NULL)
        return HKV_ENOMEM;
    u->keys = nk;
    if ((nk[u->nkeys] = strdup(pat)) == NULL)
        return HKV_ENOMEM;
    u->nkeys++;
    return HKV_OK;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static unsigned category(const char *s)
{
    if (strcasecmp(s, "read") == 0)
        return CFG_ACL_READ;
    if (strcasecmp(s, "write") == 0)
        return CFG_ACL_WRITE;
    if (strcasecmp(s, "admin") == 0)
        return CFG_ACL_ADMIN;
    if (strcasecmp(s, "all") == 0)
        return CFG_ACL_ALL;
    return 0;
}

/* Applies one rule to u.  Password words are wiped by the caller. */
static hkv_status user_rule(struct cfg_user *u, const char *r, char *why)
{
    char g[48];
    unsigned char d[CFG_DIGEST_LEN];
    if (strcasecmp(r, "on") == 0) {
        u->on = 1;
    } else if (strcasecmp(r, "off") == 0) {
        u->on = 0;
    } else if (r[0] == '>') {
        cfg_password_digest(r + 1, strlen(r + 1), d);
        u->nopass = 0;
        hkv_status st = add_digest(u, d, why);
        OPENSSL_cleanse(d, sizeof(d));
        return st;
    } else if (r[0] == '#') {
        if (strlen(r + 1) != 2 * CFG_DIGEST_LEN)
            goto bad_hex;
        for (int i = 0; i < CFG_DIGEST_LEN; i++) {
            int hi = hexval(r[1 + 2 * i]), lo = hexval(r[2 + 2 * i]);
            if (hi < 0 || lo < 0)
                goto bad_hex;
            d[i] = (unsigned char)(hi << 4 | lo);
        }
        u->nopass = 0;
        return add_digest(u, d, why);
    } else if (strcasecmp(r, "nopass") == 0) {
        clear_digests(u);
        u->nopass = 1;
    } else if (strcasecmp(r, "resetpass") == 0) {
        clear_digests(u);
        u->nopass = 0;
    } else if (r[0] == '~') {
        if (r[1] == '\0') {
            snprintf(why, CFG_WHY, "user '%s': '~' needs a key pattern", u->name);
            return HKV_EINVAL;
        }
        return add_key(u, r + 1, why);
    } else if (strcasecmp(r, "allkeys") == 0) {
        return add_key(u, "*", why);
    } else if (strcasecmp(r, "resetkeys") == 0) {
        for (size_t i = 0; i < u->nkeys; i++)
            free(u->keys[i]);
        free(u->keys);
        u->keys = NULL;
        u->nkeys = 0;
    } else if ((r[0] == '+' || r[0] == '-') && r[1] == '@') {
        unsigned cat = category(r + 2);
        if (cat == 0) {
            snprintf(why, CFG_WHY,
                     "user '%s': unknown category '%s' (@read, @write, @admin, @all)", u->name,
                     cfg_show(r, g, sizeof(g)));
            return HKV_EINVAL;
        }
        if (r[0] == '+')
            u->cats |= cat;
        else
            u->cats &= ~cat;
    } else if (strcasecmp(r, "allcommands") == 0) {
        u->cats = CFG_ACL_ALL;
    } else if (strcasecmp(r, "nocommands") == 0) {
        u->cats = 0;
    } else {
        /* never echo a rule that might be a mistyped password */
        snprintf(why, CFG_WHY,
                 "user '%s': unknown rule (on, off, >password, #sha256hex, nopass, resetpass, "
                 "~pattern, allkeys, resetkeys, +@read|+@write|+@admin|+@all, -@..., "
                 "allcommands, nocommands)", u->name);
        return HKV_EINVAL;
    }
    return HKV_OK;
bad_hex:
    snprintf(why, CFG_WHY, "user '%s': '#' needs %d hex digits (a SHA-256 digest)", u->name,
             2 * CFG_DIGEST_LEN);
    return HKV_EINVAL;
}

static struct cfg_user *find(struct cfg_user *users, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(users[i].name, name) == 0)
            return &users[i];
    return NULL;
}

const struct cfg_user *cfg_user_named(const struct cfg *c, const char *name)
{
    return find(c->users, c->nusers, name);
}

/* Adds u (taking its insides) or replaces the user of the same name. */
static hkv_status put_user(struct cfg *c, struct cfg_user *u, char *why)
{
    struct cfg_user *old = find(c->users, c->nusers, u->name);
    if (old != NULL) {
        user_deinit(old);
        *old = *u;
        return HKV_OK;
    }
    if (c->nusers >= USER_MAX) {
        snprintf(why, CFG_WHY, "more than %d users", USER_MAX);
        return HKV_EINVAL;
    }
    struct cfg_user *nu = realloc(c->users, (c->nusers + 1) * sizeof(*nu));
    if (nu == NULL)
        return HKV_ENOMEM;
    c->users = nu;
    nu[c->nusers++] = *u;
    return HKV_OK;
}

static hkv_status user_apply(struct cfg *c, int argc, char **argv, char *why)
{
    char g[48];
    hkv_status st = HKV_OK;
    if (argc < 1) {
        snprintf(why, CFG_WHY, "'user' needs a name");
        st = HKV_EINVAL;
        goto out;
    }
    if (!cfg_name_ok(argv[0], CFG_NAME_MAX - 1)) {
        snprintf(why, CFG_WHY, "user name needs 1 to %d characters of [A-Za-z0-9_-], got '%s'",
                 CFG_NAME_MAX - 1, cfg_show(argv[0], g, sizeof(g)));
        st = HKV_EINVAL;
        goto out;
    }
    struct cfg_user u = { .on = 0 };
    snprintf(u.name, sizeof(u.name), "%s", argv[0]);
    for (int i = 1; i < argc && st == HKV_OK; i++)
        st = user_rule(&u, argv[i], why);
    if (st == HKV_OK && u.on && !u.nopass && u.ndigests == 0) {
        snprintf(why, CFG_WHY,
                 "user '%s' is on but has no password (>password, #sha256hex or nopass): nobody "
                 "could log in as it", u.name);
        st = HKV_EINVAL;
    }
    if (st == HKV_OK)
        st = put_user(c, &u, why);
    if (st != HKV_OK)
        user_deinit(&u);
out:
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '>')
            wipe(argv[i]);
    return st;
}

static void user_render_one(const struct cfg_user *u, struct cfg_out *out)
{
    static const char *const hex = "0123456789abcdef";
    cfg_out_printf(out, "%s %s", u->name, u->on ? "on" : "off");
    if (u->nopass)
        cfg_out_puts(out, " nopass");
    for (size_t i = 0; i < u->ndigests; i++) {
        char h[2 * CFG_DIGEST_LEN + 2];
        h[0] = '#';
        for (int j = 0; j < CFG_DIGEST_LEN; j++) {
            h[1 + 2 * j] = hex[u->digests[i][j] >> 4];
            h[2 + 2 * j] = hex[u->digests[i][j] & 15];
        }
        h[sizeof(h) - 1] = '\0';
        cfg_out_putc(out, ' ');
        cfg_out_word(out, h);
    }
    for (size_t i = 0; i < u->nkeys; i++) {
        size_t n = strlen(u->keys[i]);
        char *w = malloc(n + 2);
        if (w == NULL) {
            out->st = HKV_ENOMEM;
            return;
        }
        w[0] = '~';
        memcpy(w + 1, u->keys[i], n + 1);
        cfg_out_putc(out, ' ');
        cfg_out_word(out, w);
        free(w);
    }
    if (u->cats == CFG_ACL_ALL)
        cfg_out_puts(out, " +@all");
    else {
        if (u->cats & CFG_ACL_READ)
            cfg_out_puts(out, " +@read");
        if (u->cats & CFG_ACL_WRITE)
            cfg_out_puts(out, " +@write");
        if (u->cats & CFG_ACL_ADMIN)
            cfg_out_puts(out, " +@admin");
    }
}

static void user_render(const struct cfg *c, const struct cfg_option *o, struct cfg_out *out,
                        enum cfg_render_mode mode)
{
    for (size_t i = 0; i < c->nusers; i++) {
        if (mode == CFG_R_FILE)
            cfg_out_printf(out, "%s ", o->name);
        else if (i > 0)
            cfg_out_putc(out, '\n');
        user_render_one(&c->users[i], out);
        if (mode == CFG_R_FILE)
            cfg_out_putc(out, '\n');
    }
}

static int user_eq(const struct cfg_user *a, const struct cfg_user *b)
{
    if (strcmp(a->name, b->name) != 0 || a->on != b->on || a->nopass != b->nopass ||
        a->cats != b->cats || a->ndigests != b->ndigests || a->nkeys != b->nkeys)
        return 0;
    if (a->ndigests > 0 && memcmp(a->digests, b->digests, a->ndigests * CFG_DIGEST_LEN) != 0)
        return 0;
    for (size_t i = 0; i < a->nkeys; i++)
        if (strcmp(a->keys[i], b->keys[i]) != 0)
            return 0;
    return 1;
}

/* The default user of c as it takes effect (cfg.h): its line, or the
 * implicit one written into *tmp. */
static const struct cfg_user *effective_default(const struct cfg *c, struct cfg_user *tmp)
{
    static char star[] = "*";
    static char *allkeys[] = { star };
    const struct cfg_user *d = cfg_user_named(c, "default");
    if (d != NULL)
        return d;
    *tmp = (struct cfg_user){ .name = "default", .on = c->nusers == 0, .nopass = 1,
                              .keys = allkeys, .nkeys = 1, .cats = CFG_ACL_ALL };
    return tmp;
}

static int user_equal(const struct cfg *a, const struct cfg *b)
{
    struct cfg_user ta, tb;
    if (!user_eq(effective_default(a, &ta), effective_default(b, &tb)))
        return 0;
    size_t na = 0, nb = 0;
    for (size_t i = 0; i < a->nusers; i++) {
        if (strcmp(a->users[i].name, "default") == 0)
            continue;
        na++;
        const struct cfg_user *o = cfg_user_named(b, a->users[i].name);
        if (o == NULL || !user_eq(&a->users[i], o))
            return 0;
    }
    for (size_t i = 0; i < b->nusers; i++)
        nb += strcmp(b->users[i].name, "default") != 0;
    return na == nb;
}

static void user_release(struct cfg *c)
{
    for (size_t i = 0; i < c->nusers; i++)
        user_deinit(&c->users[i]);
    free(c->users);
    c->users = NULL;
    c->nusers = 0;
}

static hkv_status user_copy(struct cfg *dst, const struct cfg *src)
{
    struct cfg tmp = { .users = NULL, .nusers = 0 };
    if (src->nusers > 0) {
        if ((tmp.users = calloc(src->nusers, sizeof(*tmp.users))) == NULL)
            return HKV_ENOMEM;
        for (size_t i = 0; i < src->nusers; i++) {
            if (user_dup(&tmp.users[i], &src->users[i]) != HKV_OK) {
                user_release(&tmp);
                return HKV_ENOMEM;
            }
            tmp.nusers++;
        }
    }
    user_release(dst);
    dst->users = tmp.users;
    dst->nusers = tmp.nusers;
    return HKV_OK;
}

const struct cfg_special cfg_user_special = {
    .apply = user_apply,
    .render = user_render,
    .equal = user_equal,
    .copy = user_copy,
    .release = user_release,
};

/* ---- requirepass: the default user's password ---------------------------- */

static hkv_status requirepass_apply(struct cfg *c, int argc, char **argv, char *why)
{
    hkv_status st = HKV_OK;
    if (argc != 1) {
        snprintf(why, CFG_WHY, "'requirepass' takes 1 argument, got %d", argc);
        st = HKV_EINVAL;
        goto out;
    }
    struct cfg_user *d = find(c->users, c->nusers, "default");
    if (argv[0][0] == '\0') {
        if (d != NULL) {
            clear_digests(d);
            d->nopass = 1;
        }
        goto out;
    }
    unsigned char dg[CFG_DIGEST_LEN];
    cfg_password_digest(argv[0], strlen(argv[0]), dg);
    if (d != NULL) {
        clear_digests(d);
        d->nopass = 0;
        st = add_digest(d, dg, why);
    } else {
        struct cfg_user u = { .name = "default", .on = 1, .cats = CFG_ACL_ALL };
        st = add_digest(&u, dg, why);
        if (st == HKV_OK)
            st = add_key(&u, "*", why);
        if (st == HKV_OK)
            st = put_user(c, &u, why);
        if (st != HKV_OK)
            user_deinit(&u);
    }
    OPENSSL_cleanse(dg, sizeof(dg));
out:
    for (int i = 0; i < argc; i++)
        wipe(argv[i]);
    return st;
}

static void requirepass_render(const struct cfg *c, const struct cfg_option *o,
                               struct cfg_out *out, enum cfg_render_mode mode)
{
    /* nothing: the `user default` line carries the digest */
}

static int requirepass_equal(const struct cfg *a, const struct cfg *b)
{
    struct cfg_user ta, tb;
    return user_eq(effective_default(a, &ta), effective_default(b, &tb));
}

static hkv_status requirepass_copy(struct cfg *dst, const struct cfg *src)
{
    const struct cfg_user *s = cfg_user_named(src, "default");
    struct cfg_user *d = find(dst->users, dst->nusers, "default");
    if (s == NULL) {
        if (d != NULL) {
            user_deinit(d);
            size_t at = (size_t)(d - dst->users);
            memmove(d, d + 1, (dst->nusers - at - 1) * sizeof(*d));
            dst->nusers--;
        }
        return HKV_OK;
    }
    struct cfg_user u;
    char why[CFG_WHY];
    if (user_dup(&u, s) != HKV_OK)
        return HKV_ENOMEM;
    hkv_status st = put_user(dst, &u, why);
    if (st != HKV_OK)
        user_deinit(&u);
    return st == HKV_OK ? HKV_OK : HKV_ENOMEM;
}

static void requirepass_release(struct cfg *c)
{
    /* nothing: `user` owns the storage */
}

const struct cfg_special cfg_requirepass_special = {
    .apply = requirepass_apply,
    .render = requirepass_render,
    .equal = requirepass_equal,
    .copy = requirepass_copy,
    .release = requirepass_release,
};
