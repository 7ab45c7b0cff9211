/*
 * auth.c - users, password checks and ACL decisions (auth.h).
 *
 * The struct is a flat copy of the config's users with what the decision
 * path needs precomputed: the command flags a user's categories allow, and
 * whether it is unrestricted (then the edge skips the check entirely).  Key
 * patterns keep their lengths so a check is one cfg_glob_match per pattern.
 * The implicit default user (cfg.h) is materialised here, so the edge never
 * has to know the rule.  Nothing here logs: the edge counts and replies.
 */
#include "server/edge/auth.h"

#include <netinet/in.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

struct auth_user {
    char name[CFG_NAME_MAX];
    int on;
    int nopass;
    unsigned char (*digests)[CFG_DIGEST_LEN];
    size_t ndigests;
    char **keys;
    size_t *keylens;
    size_t nkeys;
    int allkeys;                  /* one pattern is "*" */
    uint32_t cmdmask;             /* CMD_F_READ|WRITE|ADMIN bits its categories allow */
    int allcmds;
};

struct auth {
    struct auth_user *users;
    size_t nusers;
    int default_id;
    int initial;                  /* auth_initial_user */
    int protected_mode;
};

static void user_free(struct auth_user *u)
{
    if (u->digests != NULL)
        OPENSSL_cleanse(u->digests, u->ndigests * CFG_DIGEST_LEN);
    free(u->digests);
    for (size_t i = 0; i < u->nkeys; i++)
        free(u->keys[i]);
    free(u->keys);
    free(u->keylens);
}

void auth_destroy(struct auth **ap)
{
    if (ap == NULL || *ap == NULL)
        return;
    struct auth *a = *ap;
    for (size_t i = 0; i < a->nusers; i++)
        user_free(&a->users[i]);
    free(a->users);
    free(a);
    *ap = NULL;
}

static int user_from_cfg(struct auth_user *u, const struct cfg_user *s)
{
    memcpy(u->name, s->name, sizeof(u->name));
    u->on = s->on;
    u->nopass = s->nopass;
    if (s->ndigests > 0) {
        if ((u->digests = malloc(s->ndigests * CFG_DIGEST_LEN)) == NULL)
            return -1;
        memcpy(u->digests, s->digests, s->ndigests * CFG_DIGEST_LEN);
        u->ndigests = s->ndigests;
    }
    if (s->nkeys > 0) {
        if ((u->keys = calloc(s->nkeys, sizeof(char *))) == NULL ||
            (u->keylens = calloc(s->nkeys, sizeof(size_t))) == NULL)
            return -1;
        for (size_t i = 0; i < s->nkeys; i++) {
            if ((u->keys[i] = strdup(s->keys[i])) == NULL)
                return -1;
            u->keylens[i] = strlen(s->keys[i]);
            u->nkeys++;
            if (strcmp(s->keys[i], "*") == 0)
                u->allkeys = 1;
        }
    }
    _Static_assert(CFG_ACL_ALL == 7, "map every category");
    u->cmdmask = ((s->cats & CFG_ACL_READ) ? CMD_F_READ : 0) |
                 ((s->cats & CFG_ACL_WRITE) ? CMD_F_WRITE : 0) |
                 ((s->cats & CFG_ACL_ADMIN) ? CMD_F_ADMIN : 0);
    u->allcmds = s->cats == CFG_ACL_ALL;
    return 0;
}

struct auth *auth_create(const struct cfg *cfg)
{
    struct auth *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return NULL;
    const struct cfg_user *d = cfg_user_named(cfg, "default");
    size_t n = cfg->nusers + (d == NULL);
    if ((a->users = calloc(n, sizeof(*a->users))) == NULL)
        goto fail;
    for (size_t i = 0; i < cfg->nusers; i++) {
        a->nusers++;
        if (user_from_cfg(&a->users[i], &cfg->users[i]) != 0)
            goto fail;
    }
    a->default_id = auth_user_find(a, "default", 7);
    if (a->default_id < 0) {
        /* the implicit default user (cfg.h): on nopass allkeys +@all when it
         * is alone, off when other users exist */
        static char star[] = "*";
        static char *allkeys[] = { star };
        struct cfg_user implicit = { .name = "default", .on = cfg->nusers == 0, .nopass = 1,
                                     .keys = allkeys, .nkeys = 1, .cats = CFG_ACL_ALL };
        a->nusers++;
        if (user_from_cfg(&a->users[n - 1], &implicit) != 0)
            goto fail;
        a->default_id = (int)(n - 1);
    }
    const struct auth_user *du = &a->users[a->default_id];
    a->initial = du->on && du->nopass ? a->default_id : -1;
    a->protected_mode = cfg->protected_mode;
    return a;
fail:
    auth_destroy(&a);
    return NULL;
}

int auth_initial_user(const struct auth *a)
{
    return a->initial;
}

int auth_default_nopass(const struct auth *a)
{
    return a->users[a->default_id].nopass;
}

int auth_user_find(const struct auth *a, const char *name, size_t len)
{
    for (size_t i = 0; i < a->nusers; i++)
        if (strlen(a->users[i].name) == len && memcmp(a->users[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

const char *auth_user_name(const struct auth *a, int id)
{
    return id >= 0 && (size_t)id < a->nusers ? a->users[id].name : "";
}

int auth_user_unrestricted(const struct auth *a, int id)
{
    const struct auth_user *u = &a->users[id];
    return u->allcmds && u->allkeys;
}

int auth_check_password(const struct auth *a, const char *user, size_t ulen, const char *pass,
                        size_t plen)
{
    static const unsigned char dummy[CFG_DIGEST_LEN];
    unsigned char d[CFG_DIGEST_LEN];
    cfg_password_digest(pass, plen, d);
    int id = auth_user_find(a, user, ulen);
    const struct auth_user *u = id >= 0 ? &a->users[id] : NULL;
    int match = 0;
    if (u != NULL && u->ndigests > 0) {
        for (size_t i = 0; i < u->ndigests; i++)
            match |= CRYPTO_memcmp(u->digests[i], d, CFG_DIGEST_LEN) == 0;
    } else {
        volatile int sink = CRYPTO_memcmp(dummy, d, CFG_DIGEST_LEN);
        (void)sink;
    }
    OPENSSL_cleanse(d, sizeof(d));
    if (u == NULL || !u->on)
        return -1;
    return u->nopass || match ? id : -1;
}

size_t auth_user_count(const struct auth *a)
{
    return a->nusers;
}

void auth_user_view(const struct auth *a, int id, struct auth_user_view *out)
{
    const struct auth_user *u = &a->users[id];
    unsigned cats = 0;
    if (u->allcmds)
        cats = CFG_ACL_ALL;
    else
        cats = ((u->cmdmask & CMD_F_READ) ? CFG_ACL_READ : 0) |
               ((u->cmdmask & CMD_F_WRITE) ? CFG_ACL_WRITE : 0) |
               ((u->cmdmask & CMD_F_ADMIN) ? CFG_ACL_ADMIN : 0);
    *out = (struct auth_user_view){.name = u->name, .on = u->on, .nopass = u->nopass,
                                   .digests = (const unsigned char(*)[CFG_DIGEST_LEN])u->digests,
                                   .ndigests = u->ndigests, .keys = u->keys,
                                   .keylens = u->keylens, .nkeys = u->nkeys, .cats = cats};
}

static int key_ok(const struct auth_user *u, const struct resp_slice *k);

int auth_key_allowed(const struct auth *a, int id, const char *key, size_t len)
{
    const struct auth_user *u = &a->users[id];
    struct resp_slice k = {key, len};
    return u->allkeys || key_ok(u, &k);
}

static int key_ok(const struct auth_user *u, const struct resp_slice *k)
{
    for (size_t i = 0; i < u->nkeys; i++)
        if (cfg_glob_match(u->keys[i], u->keylens[i], k->p, k->len, 0))
            return 1;
    return 0;
}

int auth_allowed(const struct auth *a, int id, const struct cmd_def *d, int argc,
                 const struct resp_slice *argv)
{
    const struct auth_user *u = &a->users[id];
    if (d->flags & CMD_F_CONN) /* HOTKEYS lists key names: like SCAN */
        return d->id != CMD_HOTKEYS || u->allkeys ? AUTH_OK : AUTH_NOPERM_KEY;
    uint32_t need = d->flags & (CMD_F_READ | CMD_F_WRITE | CMD_F_ADMIN);
    if (d->flags & CMD_F_THROTTLE)
        need = CMD_F_READ | CMD_F_WRITE; /* either will do */
    if (!u->allcmds && (need == 0 || (need & u->cmdmask) == 0))
        return AUTH_NOPERM_CMD;
    if (u->allkeys)
        return AUTH_OK;
    if (d->id == CMD_SCAN || d->id == CMD_KEYS || d->id == CMD_RANDOMKEY)
        return AUTH_NOPERM_KEY; /* they list keys: every key must be allowed */
    if (d->first_key <= 0 || d->step <= 0)
        return AUTH_OK;
    int last = d->last_key < 0 ? argc + d->last_key : d->last_key;
    for (int i = d->first_key; i <= last && i < argc; i += d->step)
        if (!key_ok(u, &argv[i]))
            return AUTH_NOPERM_KEY;
    return AUTH_OK;
}

int auth_is_loopback(const struct sockaddr *peer)
{
    if (peer->sa_family == AF_UNIX)
        return 1;
    if (peer->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)peer;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (peer->sa_family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)peer)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a6))
            return 1;
        return IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127;
    }
    return 0;
}

int auth_protected(const struct auth *a)
{
    return a->protected_mode && a->initial >= 0;
}

int auth_protected_refuses(const struct auth *a, const struct sockaddr *peer)
{
    return auth_protected(a) && !auth_is_loopback(peer);
}
