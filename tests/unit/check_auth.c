/*
 * check_auth.c - users and access: password digests (config/cfg_user.c), the
 * `user`/`requirepass` syntax and its errors, the implicit default user,
 * ACL decisions by category and key glob, protected mode's address test, and
 * that credentials can be neither read nor set through CONFIG GET/SET.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "config/cfg.h"
#include "proto/cmd.h"
#include "server/edge/auth.h"

/* SHA-256("foo") */
#define FOO_HEX "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"

static struct cfg *load(const char *text)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_ptr_nonnull(c);
    hkv_status st = cfg_load_text(c, text, strlen(text), "t.conf", &err);
    ck_assert_msg(st == HKV_OK, "%s", err.msg);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_OK);
    return c;
}

static void expect_error(const char *text, const char *want)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_int_eq(cfg_load_text(c, text, strlen(text), "t.conf", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, want);
    cfg_destroy(&c);
}

static void hex(const unsigned char *d, char *out)
{
    for (int i = 0; i < CFG_DIGEST_LEN; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static int check(const struct auth *a, const char *user, const char *pass)
{
    return auth_check_password(a, user, strlen(user), pass, strlen(pass));
}

/* auth_allowed for a command given as words. */
static int allowed(const struct auth *a, const char *user, int argc, const char **words)
{
    struct resp_slice argv[16];
    for (int i = 0; i < argc; i++)
        argv[i] = (struct resp_slice){ words[i], strlen(words[i]) };
    const struct cmd_def *d = cmd_lookup(words[0], strlen(words[0]));
    ck_assert_ptr_nonnull(d);
    int id = auth_user_find(a, user, strlen(user));
    ck_assert_int_ge(id, 0);
    return auth_allowed(a, id, d, argc, argv);
}
#define ALLOWED(a, user, ...)                                                                \
    allowed(a, user, (int)(sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *)), \
            (const char *[]){ __VA_ARGS__ })

/* ---- digests ---- */

START_TEST(passwords_are_stored_as_sha256_digests)
{
    unsigned char d[CFG_DIGEST_LEN];
    char h[2 * CFG_DIGEST_LEN + 1];
    cfg_password_digest("foo", 3, d);
    hex(d, h);
    ck_assert_str_eq(h, FOO_HEX);

    struct cfg *c = load("requirepass foo\n");
    const struct cfg_user *u = cfg_user_named(c, "default");
    ck_assert_ptr_nonnull(u);
    ck_assert_int_eq(u->on, 1);
    ck_assert_int_eq(u->nopass, 0);
    ck_assert_uint_eq(u->ndigests, 1);
    hex(u->digests[0], h);
    ck_assert_str_eq(h, FOO_HEX);
    ck_assert_uint_eq(u->cats, CFG_ACL_ALL);
    ck_assert_uint_eq(u->nkeys, 1);
    ck_assert_str_eq(u->keys[0], "*");

    /* the file form children get carries the digest, never the password */
    size_t len;
    char *text = cfg_serialize(c, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, "#" FOO_HEX));
    ck_assert_ptr_null(strstr(text, " >"));
    ck_assert_ptr_null(strstr(text, "requirepass"));
    struct cfg *back = load(text);
    ck_assert_int_eq(cfg_diff(c, back, NULL, NULL), 0);
    free(text);
    cfg_destroy(&back);

    /* #hex states the same user as >password */
    struct cfg *h2 = load("user default on #" FOO_HEX " ~* +@all\n");
    ck_assert_int_eq(cfg_diff(c, h2, NULL, NULL), 0);
    cfg_destroy(&h2);
    cfg_destroy(&c);
}
END_TEST

START_TEST(password_words_are_wiped_after_parsing)
{
    char name[] = "requirepass", pw[] = "s3cret";
    char *argv[] = { name, pw };
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_int_eq(cfg_apply(c, 2, argv, "cmdline", &err), HKV_OK);
    for (size_t i = 0; i < sizeof(pw) - 1; i++)
        ck_assert_int_eq(pw[i], 0);
    char uname[] = "user", n[] = "bob", on[] = "on", p2[] = ">hunter2", k[] = "allkeys";
    char *argv2[] = { uname, n, on, p2, k };
    ck_assert_int_eq(cfg_apply(c, 5, argv2, "cmdline", &err), HKV_OK);
    for (size_t i = 0; i < sizeof(p2) - 1; i++)
        ck_assert_int_eq(p2[i], 0);
    cfg_destroy(&c);
}
END_TEST

START_TEST(password_check_uses_a_constant_time_compare)
{
    /* auth_check_password compares digests only with CRYPTO_memcmp */
    FILE *f = fopen("server/edge/auth.c", "r");
    ck_assert_ptr_nonnull(f);
    static char src[64 * 1024];
    size_t n = fread(src, 1, sizeof(src) - 1, f);
    fclose(f);
    src[n] = '\0';
    char *body = strstr(src, "int auth_check_password(");
    ck_assert_ptr_nonnull(body);
    char *end = strstr(body, "\n}\n");
    ck_assert_ptr_nonnull(end);
    *end = '\0';
    int any = 0, ct = 0;
    for (char *p = body; (p = strstr(p, "memcmp(")) != NULL; p++) {
        any++;
        ct += p - body >= 7 && strncmp(p - 7, "CRYPTO_", 7) == 0;
    }
    ck_assert_int_ge(ct, 1);
    ck_assert_int_eq(any, ct);
    ck_assert_ptr_null(strstr(body, "strcmp("));
}
END_TEST

START_TEST(password_check_accepts_only_the_right_pair)
{
    struct cfg *c = load("requirepass foo\n"
                         "user alice on >a1 >a2 ~* +@all\n"
                         "user bob off >b1 ~* +@all\n"
                         "user any on nopass ~* +@read\n");
    struct auth *a = auth_create(c);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(check(a, "default", "foo"), auth_user_find(a, "default", 7));
    ck_assert_int_eq(check(a, "default", "fo"), -1);
    ck_assert_int_eq(check(a, "default", "foo "), -1);
    ck_assert_int_eq(check(a, "default", ""), -1);
    ck_assert_int_eq(check(a, "alice", "a1"), auth_user_find(a, "alice", 5));
    ck_assert_int_eq(check(a, "alice", "a2"), auth_user_find(a, "alice", 5));
    ck_assert_int_eq(check(a, "alice", "foo"), -1);
    ck_assert_int_eq(check(a, "bob", "b1"), -1);     /* off */
    ck_assert_int_eq(check(a, "nobody", "foo"), -1);
    ck_assert_int_eq(check(a, "any", "whatever"), auth_user_find(a, "any", 3));
    /* binary-safe: a NUL inside the password matters */
    ck_assert_int_eq(auth_check_password(a, "default", 7, "foo\0x", 5), -1);
    ck_assert_int_eq(auth_initial_user(a), -1);
    ck_assert_int_eq(auth_default_nopass(a), 0);
    auth_destroy(&a);
    ck_assert_ptr_null(a);
    auth_destroy(&a);
    cfg_destroy(&c);
}
END_TEST

/* ---- the `user` syntax ---- */

START_TEST(user_lines_build_users_with_redis_rules)
{
    struct cfg *c = load("user r on >pw ~app:* ~cfg:? +@read\n"
                         "user w off >pw allkeys +@read +@write -@read\n"
                         "user x on nopass >pw resetpass nopass allcommands -@admin resetkeys\n"
                         "user r on >pw2 ~other:* +@write\n");
    ck_assert_uint_eq(c->nusers, 3);
    const struct cfg_user *r = cfg_user_named(c, "r");
    ck_assert_ptr_eq(r, &c->users[0]);     /* replaced where it stood */
    ck_assert_uint_eq(r->nkeys, 1);
    ck_assert_str_eq(r->keys[0], "other:*");
    ck_assert_uint_eq(r->cats, CFG_ACL_WRITE);
    const struct cfg_user *w = cfg_user_named(c, "w");
    ck_assert_int_eq(w->on, 0);
    ck_assert_uint_eq(w->cats, CFG_ACL_WRITE);
    ck_assert_str_eq(w->keys[0], "*");
    const struct cfg_user *x = cfg_user_named(c, "x");
    ck_assert_int_eq(x->nopass, 1);
    ck_assert_uint_eq(x->ndigests, 0);
    ck_assert_uint_eq(x->cats, CFG_ACL_READ | CFG_ACL_WRITE);
    ck_assert_uint_eq(x->nkeys, 0);
    ck_assert_ptr_null(cfg_user_named(c, "default"));

    /* a round trip through the file form keeps every user */
    char *text = cfg_serialize(c, NULL);
    struct cfg *back = load(text);
    ck_assert_int_eq(cfg_diff(c, back, NULL, NULL), 0);
    free(text);
    cfg_destroy(&back);
    cfg_destroy(&c);
}
END_TEST

START_TEST(user_errors_name_the_file_line_and_reason)
{
    expect_error("port 1\nuser\n", "t.conf:2: 'user' needs a name");
    expect_error("user bad.name on nopass\n",
                 "t.conf:1: user name needs 1 to 63 characters of [A-Za-z0-9_-], got 'bad.name'");
    expect_error("\n\nuser a on\n",
                 "t.conf:3: user 'a' is on but has no password (>password, #sha256hex or nopass): "
                 "nobody could log in as it");
    expect_error("user a on >x +@foo\n",
                 "t.conf:1: user 'a': unknown category '+@foo' (@read, @write, @admin, @all)");
    expect_error("user a on #abc\n",
                 "t.conf:1: user 'a': '#' needs 64 hex digits (a SHA-256 digest)");
    expect_error("user a on #" FOO_HEX "0\n",
                 "t.conf:1: user 'a': '#' needs 64 hex digits (a SHA-256 digest)");
    expect_error("user a on #zc26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae\n",
                 "t.conf:1: user 'a': '#' needs 64 hex digits (a SHA-256 digest)");
    expect_error("user a on >x ~\n", "t.conf:1: user 'a': '~' needs a key pattern");
    expect_error("requirepass a b\n", "t.conf:1: 'requirepass' takes 1 argument, got 2");
    expect_error("requirepass\n", "t.conf:1: 'requirepass' takes 1 argument, got 0");
    /* an unknown rule may be a mistyped password: it is not echoed */
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    const char *t = "user a on >x hunter2\n";
    ck_assert_int_eq(cfg_load_text(c, t, strlen(t), "t.conf", &err), HKV_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "t.conf:1: user 'a': unknown rule"));
    ck_assert_ptr_null(strstr(err.msg, "hunter2"));
    /* a refused line changes nothing */
    ck_assert_uint_eq(c->nusers, 0);
    cfg_destroy(&c);
}
END_TEST

START_TEST(implicit_default_user_follows_the_other_users)
{
    struct cfg *none = load("");
    struct auth *a = auth_create(none);
    ck_assert_int_ge(auth_initial_user(a), 0);      /* no auth required */
    ck_assert_int_eq(auth_default_nopass(a), 1);
    ck_assert_str_eq(auth_user_name(a, auth_initial_user(a)), "default");
    ck_assert_int_eq(auth_user_unrestricted(a, auth_initial_user(a)), 1);
    auth_destroy(&a);

    /* written out, the implicit default equals no user lines at all */
    struct cfg *dflt = load("user default on nopass ~* +@all\n");
    ck_assert_int_eq(cfg_diff(none, dflt, NULL, NULL), 0);

    /* any other user turns the implicit default off: AUTH is required */
    struct cfg *alice = load("user alice on >pw ~* +@all\n");
    a = auth_create(alice);
    ck_assert_int_eq(auth_initial_user(a), -1);
    ck_assert_int_eq(check(a, "default", ""), -1);
    auth_destroy(&a);

    /* ... unless the default user is stated */
    struct cfg *both = load("user default on nopass ~* +@all\nuser alice on >pw ~* +@all\n");
    a = auth_create(both);
    ck_assert_int_ge(auth_initial_user(a), 0);
    auth_destroy(&a);

    /* requirepass "" makes a stated default user nopass again */
    struct cfg *rp = load("requirepass foo\nrequirepass \"\"\n");
    a = auth_create(rp);
    ck_assert_int_ge(auth_initial_user(a), 0);
    auth_destroy(&a);
    /* requirepass after a user default line keeps its rules */
    struct cfg *kept = load("user default on nopass ~k:* +@read\nrequirepass foo\n");
    const struct cfg_user *u = cfg_user_named(kept, "default");
    ck_assert_uint_eq(u->cats, CFG_ACL_READ);
    ck_assert_str_eq(u->keys[0], "k:*");
    ck_assert_int_eq(u->nopass, 0);
    ck_assert_uint_eq(u->ndigests, 1);
    cfg_destroy(&none);
    cfg_destroy(&dflt);
    cfg_destroy(&alice);
    cfg_destroy(&both);
    cfg_destroy(&rp);
    cfg_destroy(&kept);
}
END_TEST

/* ---- ACL decisions ---- */

START_TEST(categories_allow_commands_by_flag)
{
    struct cfg *c = load("user r on >pw allkeys +@read\n"
                         "user w on >pw allkeys +@write\n"
                         "user adm on >pw allkeys +@admin\n"
                         "user none on >pw allkeys\n");
    struct auth *a = auth_create(c);
    ck_assert_int_eq(ALLOWED(a, "r", "GET", "k"), AUTH_OK);
    ck_assert_int_eq(ALLOWED(a, "r", "mget", "k", "j"), AUTH_OK);
    ck_assert_int_eq(ALLOWED(a, "r", "SCAN", "0"), AUTH_OK);
    ck_assert_int_eq(ALLOWED(a, "r", "set", "k", "v"), AUTH_NOPERM_CMD);
    ck_assert_int_eq(ALLOWED(a, "r", "config", "get", "port"), AUTH_NOPERM_CMD);
    ck_assert_int_eq(ALLOWED(a, "w", "set", "k", "v"), AUTH_OK);
    ck_assert_int_eq(ALLOWED(a, "w", "incr", "k"), AUTH_OK);
    ck_assert_int_eq(ALLOWED(a, "w", "get", "k"), AUTH_NOPERM_CMD);
    ck_assert_int_eq(ALLOWED(a, "adm", "config", "get", "port"), AUTH_OK);
    ck_assert_int_eq(ALLOWED(a, "adm", "get", "k"), AUTH_NOPERM_CMD);
    /* connection commands need no category */
    static const char *const conn[] = { "ping", "echo", "hello", "auth", "select", "quit",
                                        "reset", "client", "command", "info", "time",
                                        "hotkeys" };
    for (size_t i = 0; i < sizeof(conn) / sizeof(conn[0]); i++)
        ck_assert_msg(ALLOWED(a, "none", conn[i], "x", "y") == AUTH_OK, "%s", conn[i]);
    ck_assert_int_eq(ALLOWED(a, "none", "get", "k"), AUTH_NOPERM_CMD);
    ck_assert_int_eq(auth_user_unrestricted(a, auth_user_find(a, "r", 1)), 0);
    /* AUTH carries its own flag for the rate limiter */
    ck_assert(cmd_lookup("auth", 4)->flags & CMD_F_AUTH);
    ck_assert(cmd_lookup("auth", 4)->flags & CMD_F_NOAUTH);
    auth_destroy(&a);
    cfg_destroy(&c);
}
END_TEST

START_TEST(key_globs_limit_every_key_of_a_command)
{
    struct cfg *c = load("user r on >pw ~app:* ~cfg:? +@read +@write\n"
                         "user all on >pw ~* +@all\n");
    struct auth *a = auth_create(c);
    ck_assert_int_eq(ALLOWED(a, "r", "get", "app:1"), AUTH_OK);
    ck_assert_int_eq(ALLOWED(a, "r", "get", "cfg:x"), AUTH_OK);
    ck_assert_int_eq(ALLOWED(a, "r", "get", "cfg:xy"), AUTH_NOPERM_KEY);
    ck_assert_int_eq(ALLOWED(a, "r", "get", "APP:1"), AUTH_NOPERM_KEY);   /* case-sensitive */
    ck_assert_int_eq(ALLOWED(a, "r", "get", "other"), AUTH_NOPERM_KEY);
    ck_assert_int_eq(ALLOWED(a, "r", "mget", "app:1", "app:2", "other"), AUTH_NOPERM_KEY);
    ck_assert_int_eq(ALLOWED(a, "r", "del", "app:1", "app:2"), AUTH_OK);
    /* MSET: keys at 1, 3, 5 ...; values are not keys */
    ck_assert_int_eq(ALLOWED(a, "r", "mset", "app:1", "other", "app:2", "other"), AUTH_OK);
    ck_assert_int_eq(ALLOWED(a, "r", "mset", "app:1", "v", "other", "v"), AUTH_NOPERM_KEY);
    ck_assert_int_eq(ALLOWED(a, "r", "set", "app:1", "v", "EX", "10"), AUTH_OK);
    ck_assert_int_eq(ALLOWED(a, "r", "set", "x", "app:1"), AUTH_NOPERM_KEY);
    /* SCAN and HOTKEYS list key names: they need every key */
    ck_assert_int_eq(ALLOWED(a, "r", "scan", "0"), AUTH_NOPERM_KEY);
    ck_assert_int_eq(ALLOWED(a, "r", "hotkeys"), AUTH_NOPERM_KEY);
    ck_assert_int_eq(ALLOWED(a, "all", "scan", "0"), AUTH_OK);
    ck_assert_int_eq(ALLOWED(a, "all", "hotkeys"), AUTH_OK);
    ck_assert_int_eq(auth_user_unrestricted(a, auth_user_find(a, "all", 3)), 1);
    /* a binary key */
    struct resp_slice argv[2] = { { "get", 3 }, { "app:\0x", 6 } };
    ck_assert_int_eq(auth_allowed(a, auth_user_find(a, "r", 1), cmd_lookup("get", 3), 2, argv),
                     AUTH_OK);
    auth_destroy(&a);
    cfg_destroy(&c);
}
END_TEST

/* ---- protected mode ---- */

static int refuses(const struct auth *a, int family, const char *addr)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    ss.ss_family = (sa_family_t)family;
    if (family == AF_INET)
        ck_assert_int_eq(inet_pton(AF_INET, addr, &((struct sockaddr_in *)&ss)->sin_addr), 1);
    else if (family == AF_INET6)
        ck_assert_int_eq(inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&ss)->sin6_addr), 1);
    return auth_protected_refuses(a, (struct sockaddr *)&ss);
}

START_TEST(protected_mode_serves_only_loopback_without_a_password)
{
    struct cfg *c = load("");
    ck_assert_int_eq(c->protected_mode, 1);
    struct auth *a = auth_create(c);
    ck_assert_int_eq(refuses(a, AF_INET, "127.0.0.1"), 0);
    ck_assert_int_eq(refuses(a, AF_INET, "127.9.8.7"), 0);
    ck_assert_int_eq(refuses(a, AF_INET6, "::1"), 0);
    ck_assert_int_eq(refuses(a, AF_INET6, "::ffff:127.0.0.1"), 0);
    ck_assert_int_eq(refuses(a, AF_UNIX, NULL), 0);
    ck_assert_int_eq(refuses(a, AF_INET, "10.0.0.1"), 1);
    ck_assert_int_eq(refuses(a, AF_INET, "128.0.0.1"), 1);
    ck_assert_int_eq(refuses(a, AF_INET, "0.0.0.0"), 1);
    ck_assert_int_eq(refuses(a, AF_INET6, "::2"), 1);
    ck_assert_int_eq(refuses(a, AF_INET6, "fe80::1"), 1);
    ck_assert_int_eq(refuses(a, AF_INET6, "::ffff:10.0.0.1"), 1);
    ck_assert_int_eq(refuses(a, AF_UNSPEC, NULL), 1);   /* unknown peer: refused */
    ck_assert_int_eq(auth_protected(a), 1);  /* for connections open at a reload */
    auth_destroy(&a);
    cfg_destroy(&c);

    static const char *const secured[] = { "protected-mode no\n", "requirepass foo\n",
                                        "user alice on >pw ~* +@all\n",
                                        "user default off\n" };
    for (size_t i = 0; i < sizeof(secured) / sizeof(secured[0]); i++) {
        c = load(secured[i]);
        a = auth_create(c);
        ck_assert_msg(refuses(a, AF_INET, "10.0.0.1") == 0, "%s", secured[i]);
        ck_assert_msg(auth_protected(a) == 0, "%s", secured[i]);
        auth_destroy(&a);
        cfg_destroy(&c);
    }
}
END_TEST

/* ---- CONFIG GET/SET ---- */

START_TEST(credentials_cannot_be_read_or_set_at_runtime)
{
    struct cfg *c = load("requirepass foo\nuser alice on >pw ~* +@all\n");
    struct cfg_error err = { "" };
    char buf[1024];
    ck_assert_int_eq(cfg_get(c, "requirepass", buf, sizeof(buf)), HKV_EINVAL);
    ck_assert_int_eq(cfg_get(c, "user", buf, sizeof(buf)), HKV_EINVAL);
    ck_assert_int_eq(cfg_set(c, "requirepass", "bar", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "'requirepass' holds credentials and cannot be set at runtime; "
                              "edit the config file and reload");
    ck_assert_int_eq(cfg_set(c, "user", "mallory on nopass ~* +@all", &err), HKV_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'user' holds credentials"));
    ck_assert_ptr_null(cfg_user_named(c, "mallory"));
    int secret = 0;
    for (size_t i = 0; i < cfg_option_count(); i++) {
        if (strcmp(cfg_option_name(i), "user") == 0) {
            ck_assert_int_eq(cfg_option_flags(i), CFG_F_RELOADABLE | CFG_F_MULTI | CFG_F_SECRET);
            secret++;
        }
        if (strcmp(cfg_option_name(i), "requirepass") == 0) {
            ck_assert_int_eq(cfg_option_flags(i), CFG_F_RELOADABLE | CFG_F_SECRET);
            secret++;
        }
    }
    ck_assert_int_eq(secret, 2);
    /* protected-mode is an ordinary reloadable directive */
    ck_assert_int_eq(cfg_get(c, "protected-mode", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "yes");
    ck_assert_int_eq(cfg_set(c, "protected-mode", "no", &err), HKV_OK);
    ck_assert_int_eq(c->protected_mode, 0);
    /* a reload may change users */
    struct cfg *next = load("requirepass bar\n");
    struct cfg *m = cfg_reload_merge(c, next);
    ck_assert_int_eq(cfg_diff(m, next, NULL, NULL), 0);
    cfg_destroy(&m);
    cfg_destroy(&next);
    cfg_destroy(&c);
}
END_TEST

Suite *auth_suite(void)
{
    Suite *s = suite_create("auth");
    TCase *tc = tcase_create("digests");
    tcase_add_test(tc, passwords_are_stored_as_sha256_digests);
    tcase_add_test(tc, password_words_are_wiped_after_parsing);
    tcase_add_test(tc, password_check_uses_a_constant_time_compare);
    tcase_add_test(tc, password_check_accepts_only_the_right_pair);
    suite_add_tcase(s, tc);
    tc = tcase_create("syntax");
    tcase_add_test(tc, user_lines_build_users_with_redis_rules);
    tcase_add_test(tc, user_errors_name_the_file_line_and_reason);
    tcase_add_test(tc, implicit_default_user_follows_the_other_users);
    suite_add_tcase(s, tc);
    tc = tcase_create("acl");
    tcase_add_test(tc, categories_allow_commands_by_flag);
    tcase_add_test(tc, key_globs_limit_every_key_of_a_command);
    suite_add_tcase(s, tc);
    tc = tcase_create("protected_mode");
    tcase_add_test(tc, protected_mode_serves_only_loopback_without_a_password);
    suite_add_tcase(s, tc);
    tc = tcase_create("config");
    tcase_add_test(tc, credentials_cannot_be_read_or_set_at_runtime);
    suite_add_tcase(s, tc);
    return s;
}
