/*
 * check_access.c - authentication against the real daemon: requirepass and
 * AUTH/HELLO AUTH with Redis's replies, users limited by category and key
 * glob, CONFIG GET/SET refusing credentials, a reload changing the password,
 * ACL's read side over the configured users (and what a reload changes in
 * it),
 * redis-cli -a and redis-py with a username, the pre-auth limits an
 * unauthenticated client hits (11 arguments, a 20 KB bulk, 1.1 MB without a
 * newline: each closes it while an authenticated client keeps being served),
 * and protected mode (loopback served with no password; another address,
 * 198.18.0.2 in a network namespace of the test's own, gets -DENIED and is
 * closed).
 *
 * With a password set, the harness's own INFO (h_children) gets -NOAUTH, so
 * each test stops its daemon with stop(), which reads the child pids over an
 * authenticated connection first and kills any the master left behind.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"

#define PASS "s3cret"
#define FIXTURE                                                                          \
    "edge-workers 1\nhot-owners 1\ncold-owners 1\n"                                       \
    "requirepass " PASS "\n"                                                              \
    "user reader on >rpw ~app:* +@read\n"                                                 \
    "user writer on >wpw ~* +@read +@write\n"                                             \
    "user gone off >gpw ~* +@all\n"

/* The raw reply as a new string ("" when none came: the caller frees it). */
static char *raw_of(struct h_reply *r)
{
    char *raw = strdup(r != NULL ? r->raw : "");
    h_free(r);
    return raw;
}

#define EXPECT(f, want, ...)                                                     \
    do {                                                                         \
        char *got_ = raw_of(h_cmdv(f, __VA_ARGS__, NULL));                       \
        ck_assert_msg(strcmp(got_, want) == 0, "%s: got '%s', want '%s'",        \
                      #__VA_ARGS__, got_, want);                                 \
        free(got_);                                                              \
    } while (0)
#define EXPECT_PREFIX(f, want, ...)                                              \
    do {                                                                         \
        char *got_ = raw_of(h_cmdv(f, __VA_ARGS__, NULL));                       \
        ck_assert_msg(strncmp(got_, want, strlen(want)) == 0, "%s: got '%s'",    \
                      #__VA_ARGS__, got_);                                       \
        free(got_);                                                              \
    } while (0)

static int authed(int port, const char *user, const char *pass)
{
    int f = h_connect(port);
    ck_assert_int_ge(f, 0);
    EXPECT(f, "+OK\r\n", "AUTH", user, pass);
    return f;
}

/* Stops d after reading its children's pids as an authenticated client. */
static int stop(struct daemon *dm, const char *user, const char *pass)
{
    pid_t kids[64];
    int nk = 0;
    int f = h_connect(dm->port);
    if (f >= 0) {
        free(raw_of(h_cmdv(f, "AUTH", user, pass, NULL)));
        char *info = raw_of(h_cmdv(f, "INFO", "processes", NULL));
        for (char *p = info; (p = strstr(p, "pid=")) != NULL && nk < 64; p += 4)
            if (atoi(p + 4) > 0)
                kids[nk++] = atoi(p + 4);
        free(info);
        close(f);
    }
    int st = h_stop(dm);
    for (int i = 0; i < nk; i++)
        if (h_alive(kids[i]))
            kill(kids[i], SIGKILL);
    return st;
}

/* 1 if the server closed f (EOF or reset) within 5 s, after any replies. */
static int closed_by_server(int f)
{
    char buf[4096];
    int64_t end = h_now_ms() + 5000;
    while (h_now_ms() < end) {
        ssize_t n = recv(f, buf, sizeof(buf), 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return 1;
        if (n < 0)
            return 0;   /* the 5 s receive timeout passed: still open */
    }
    return 0;
}

static struct daemon d;

START_TEST(requirepass_gates_every_command_until_auth)
{
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    int f = h_connect(d.port);
    ck_assert_int_ge(f, 0);
    EXPECT(f, "-NOAUTH Authentication required.\r\n", "GET", "k");
    EXPECT(f, "-NOAUTH Authentication required.\r\n", "SET", "k", "v");
    EXPECT(f, "-NOAUTH Authentication required.\r\n", "INFO");
    EXPECT(f, "-NOAUTH Authentication required.\r\n", "CONFIG", "GET", "port");
    EXPECT(f, "+PONG\r\n", "PING");
    /* unknown commands and arity are answered first, as Redis 7 */
    EXPECT_PREFIX(f, "-ERR unknown command 'NOPE'", "NOPE");
    EXPECT(f, "-ERR wrong number of arguments for 'auth' command\r\n", "AUTH");
    EXPECT(f, "-ERR syntax error\r\n", "AUTH", "a", "b", "c");
    EXPECT(f, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH",
           "wrong");
    EXPECT(f, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH",
           "default", "wrong");
    EXPECT(f, "+PONG\r\n", "PING");                 /* a wrong password keeps the connection */
    EXPECT(f, "-NOAUTH Authentication required.\r\n", "GET", "k");
    EXPECT(f, "+OK\r\n", "AUTH", PASS);
    EXPECT(f, "+OK\r\n", "SET", "k", "v");
    EXPECT(f, "$1\r\nv\r\n", "GET", "k");
    char *info = raw_of(h_cmdv(f, "INFO", "stats", NULL));
    ck_assert_msg(strstr(info, "auth_failures:2\r\n") != NULL, "%s", info);
    free(info);
    char *list = raw_of(h_cmdv(f, "CLIENT", "LIST", NULL));
    ck_assert_msg(strstr(list, "user=default") != NULL, "%s", list);
    free(list);
    /* a failed AUTH keeps the user it had */
    EXPECT(f, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH", "x");
    EXPECT(f, "$1\r\nv\r\n", "GET", "k");
    /* RESET logs out, as Redis */
    EXPECT(f, "+RESET\r\n", "RESET");
    EXPECT(f, "-NOAUTH Authentication required.\r\n", "GET", "k");
    /* HELLO: not without AUTH; with it, authenticates and switches to RESP3 */
    EXPECT_PREFIX(f, "-NOAUTH HELLO must be called with the client already authenticated",
                  "HELLO", "3");
    EXPECT(f, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "HELLO",
           "3", "AUTH", "default", "nope");
    EXPECT_PREFIX(f, "%7\r\n", "HELLO", "3", "AUTH", "default", PASS, "SETNAME", "me");
    EXPECT(f, "$1\r\nv\r\n", "GET", "k");
    EXPECT_PREFIX(f, "%7\r\n", "HELLO", "3");       /* authenticated now: plain HELLO works */
    close(f);
    ck_assert_int_eq(WEXITSTATUS(stop(&d, "default", PASS)), 0);
}
END_TEST

START_TEST(users_are_limited_by_category_and_key_pattern)
{
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    int w = authed(d.port, "writer", "wpw");
    EXPECT(w, "+OK\r\n", "SET", "app:1", "hello");
    EXPECT(w, "+OK\r\n", "SET", "other", "x");
    EXPECT(w, "-NOPERM User writer has no permissions to run the 'config' command\r\n",
           "CONFIG", "GET", "port");
    int r = authed(d.port, "reader", "rpw");
    EXPECT(r, "$5\r\nhello\r\n", "GET", "app:1");
    EXPECT(r, "*2\r\n$5\r\nhello\r\n$-1\r\n", "MGET", "app:1", "app:2");
    EXPECT(r, "-NOPERM User reader has no permissions to run the 'set' command\r\n", "SET",
           "app:1", "v");
    EXPECT(r, "-NOPERM No permissions to access a key\r\n", "GET", "other");
    EXPECT(r, "-NOPERM No permissions to access a key\r\n", "MGET", "app:1", "other");
    EXPECT(r, "-NOPERM No permissions to access a key\r\n", "SCAN", "0");
    EXPECT(r, "+PONG\r\n", "PING");
    /* a disabled user cannot log in, and the failure keeps the current user */
    EXPECT(r, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH",
           "gone", "gpw");
    EXPECT(r, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH",
           "nobody", "rpw");
    EXPECT(r, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH",
           "reader", "wpw");
    EXPECT(r, "$5\r\nhello\r\n", "GET", "app:1");
    char *list = raw_of(h_cmdv(r, "CLIENT", "LIST", NULL));
    ck_assert_msg(strstr(list, "user=reader") && strstr(list, "user=writer"), "%s", list);
    free(list);
    /* switching user on the same connection */
    EXPECT(r, "+OK\r\n", "AUTH", "writer", "wpw");
    EXPECT(r, "$1\r\nx\r\n", "GET", "other");
    close(r);
    close(w);
    ck_assert_int_eq(WEXITSTATUS(stop(&d, "default", PASS)), 0);
}
END_TEST

START_TEST(config_get_and_set_never_touch_credentials)
{
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    int f = authed(d.port, "default", PASS);
    EXPECT_PREFIX(f, "-ERR CONFIG SET failed (possibly related to argument 'requirepass') - "
                     "'requirepass' holds credentials", "CONFIG", "SET", "requirepass", "x");
    EXPECT_PREFIX(f, "-ERR CONFIG SET failed (possibly related to argument 'user') - 'user' "
                     "holds credentials", "CONFIG", "SET", "user", "mallory on nopass ~* +@all");
    EXPECT(f, "*0\r\n", "CONFIG", "GET", "requirepass");
    EXPECT(f, "*0\r\n", "CONFIG", "GET", "user");
    char *all = raw_of(h_cmdv(f, "CONFIG", "GET", "*", NULL));
    ck_assert_msg(strstr(all, "requirepass") == NULL && strstr(all, PASS) == NULL &&
                  strstr(all, "protected-mode") != NULL, "%s", all);
    free(all);
    int g = h_connect(d.port);
    EXPECT(g, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH",
           "mallory", "x");
    EXPECT(g, "+OK\r\n", "AUTH", PASS);    /* unchanged */
    close(g);
    close(f);
    /* the log never shows a password */
    FILE *lf = fopen(d.log, "r");
    ck_assert_ptr_nonnull(lf);
    static char logtext[1 << 20];
    size_t n = fread(logtext, 1, sizeof(logtext) - 1, lf);
    fclose(lf);
    logtext[n] = '\0';
    ck_assert_msg(strstr(logtext, PASS) == NULL && strstr(logtext, "rpw") == NULL, "%s",
                  logtext);
    ck_assert_int_eq(WEXITSTATUS(stop(&d, "default", PASS)), 0);
}
END_TEST

START_TEST(reload_changes_the_password)
{
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    int f = authed(d.port, "reader", "rpw");
    h_write_conf(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\nrequirepass n3w\n"
                     "user reader on >rpw ~app:* +@read\n");
    ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
    int ok = 0;
    for (int i = 0; i < 100 && !ok; i++) {
        int g = h_connect(d.port);
        char *rep = raw_of(h_cmdv(g, "AUTH", "n3w", NULL));
        ok = strcmp(rep, "+OK\r\n") == 0;
        free(rep);
        close(g);
        if (!ok)
            h_sleep_ms(50);
    }
    ck_assert_msg(ok, "the new password was not accepted within 5 s");
    int g = h_connect(d.port);
    EXPECT(g, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH", PASS);
    EXPECT(g, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH",
           "writer", "wpw");                       /* removed */
    close(g);
    /* an existing login survives a reload that keeps its user */
    EXPECT(f, "$-1\r\n", "GET", "app:1");
    close(f);
    ck_assert_int_eq(WEXITSTATUS(stop(&d, "default", "n3w")), 0);
}
END_TEST

/* ACL WHOAMI, USERS, LIST, GETUSER, DRYRUN over the file's users (Redis's
 * replies), +@admin only; the writing subcommands refused; a reload's new
 * rules are what ACL LIST shows. */
START_TEST(acl_shows_the_configured_users_and_what_a_reload_changes)
{
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    int a = authed(d.port, "default", PASS), r = authed(d.port, "reader", "rpw");
    EXPECT(a, "$7\r\ndefault\r\n", "ACL", "WHOAMI");
    EXPECT(r, "-NOPERM User reader has no permissions to run the 'acl' command\r\n", "ACL",
           "WHOAMI");
    EXPECT(a, "*4\r\n$7\r\ndefault\r\n$4\r\ngone\r\n$6\r\nreader\r\n$6\r\nwriter\r\n",
           "ACL", "USERS");
    /* the SHA-256 of "rpw", as Redis shows a password */
    static const char rpw[] = "6dde532e82159e351f3b9b685073aa8531b0f11d64a13d6c7947e66e0fb0ef5c";
    char *list = raw_of(h_cmdv(a, "ACL", "LIST", NULL));
    ck_assert_msg(strstr(list, "user reader on #") != NULL &&
                      strstr(list, " ~app:* &* -@all +@read\r\n") != NULL &&
                      strstr(list, "user gone off #") != NULL &&
                      strstr(list, "user writer on #") != NULL &&
                      strstr(list, " ~* &* -@all +@read +@write\r\n") != NULL,
                  "ACL LIST: %s", list);
    free(list);
    char *u = raw_of(h_cmdv(a, "ACL", "GETUSER", "reader", NULL));
    ck_assert_msg(strstr(u, "$5\r\nflags\r\n*1\r\n$2\r\non\r\n") != NULL &&
                      strstr(u, "$8\r\ncommands\r\n$12\r\n-@all +@read\r\n") != NULL &&
                      strstr(u, "$4\r\nkeys\r\n$6\r\n~app:*\r\n") != NULL,
                  "ACL GETUSER reader: %s", u);
    char *p64 = strstr(u, "$9\r\npasswords\r\n*1\r\n$64\r\n");
    ck_assert_msg(p64 != NULL && strncmp(p64 + 24, rpw, 64) == 0, "one password: %s", u);
    free(u);
    EXPECT(a, "$-1\r\n", "ACL", "GETUSER", "nobody");
    EXPECT(a, "+OK\r\n", "ACL", "DRYRUN", "reader", "GET", "app:1");
    EXPECT(a, "$53\r\nThis user has no permissions to run the 'set' command\r\n", "ACL",
           "DRYRUN", "reader", "SET", "app:1", "v");
    EXPECT(a, "$50\r\nThis user has no permissions to access the 'x' key\r\n", "ACL", "DRYRUN",
           "reader", "GET", "x");
    EXPECT(a, "-ERR User 'bob' not found\r\n", "ACL", "DRYRUN", "bob", "GET", "x");
    EXPECT_PREFIX(a, "-ERR ACL SETUSER is not supported by hotkvd", "ACL", "SETUSER", "x", "on");
    EXPECT_PREFIX(a, "*", "ACL", "LOG"); /* served: check_acl_log */
    /* a reload: reader may write now, writer is gone */
    h_write_conf(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\nrequirepass " PASS "\n"
                     "user reader on >rpw ~app:* +@read +@write\n");
    ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
    int ok = 0;
    for (int i = 0; i < 100 && !ok; i++) {
        char *l = raw_of(h_cmdv(a, "ACL", "LIST", NULL));
        ok = strstr(l, "~app:* &* -@all +@read +@write") != NULL && strstr(l, "writer") == NULL;
        free(l);
        if (!ok)
            h_sleep_ms(50);
    }
    ck_assert_msg(ok, "ACL LIST did not show the reload within 5 s");
    EXPECT(a, "+OK\r\n", "ACL", "DRYRUN", "reader", "SET", "app:1", "v");
    close(a);
    close(r);
    ck_assert_int_eq(WEXITSTATUS(stop(&d, "default", PASS)), 0);
}
END_TEST

/* ---- pre-auth limits ---- */

START_TEST(unauthenticated_clients_may_only_send_small_commands)
{
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    int ok = authed(d.port, "default", PASS);
    /* 11 arguments */
    int f = h_connect(d.port);
    char req[512] = "*11\r\n$4\r\nPING\r\n";
    for (int i = 1; i < 11; i++)
        strcat(req, "$1\r\nx\r\n");
    ck_assert_int_eq(h_send(f, req, strlen(req)), 0);
    ck_assert_msg(closed_by_server(f), "an 11-argument command left the connection open");
    close(f);
    EXPECT(ok, "+OK\r\n", "SET", "k", "v1");
    /* a 20 KB bulk */
    f = h_connect(d.port);
    static char big[1100 * 1024 + 64];
    int hn = snprintf(big, sizeof(big), "*2\r\n$4\r\nAUTH\r\n$%d\r\n", 20 * 1024);
    memset(big + hn, 'a', 20 * 1024);
    memcpy(big + hn + 20 * 1024, "\r\n", 2);
    h_send(f, big, (size_t)hn + 20 * 1024 + 2);     /* may fail once the server closed */
    ck_assert_msg(closed_by_server(f), "a 20 KB bulk left the connection open");
    close(f);
    EXPECT(ok, "$2\r\nv1\r\n", "GET", "k");
    /* 1.1 MB of query buffer (no newline: the 64 KB inline limit closes it
     * first; the 1 MB pre-auth query buffer cap is behind it) */
    f = h_connect(d.port);
    memset(big, 'a', sizeof(big));
    h_send(f, big, 1100 * 1024);
    ck_assert_msg(closed_by_server(f), "1.1 MB without a newline left the connection open");
    close(f);
    EXPECT(ok, "$2\r\nv1\r\n", "GET", "k");
    /* the limits are lifted by AUTH: 13 arguments and a 20 KB value */
    EXPECT(ok, "+OK\r\n", "MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6");
    big[20 * 1024] = '\0';
    EXPECT(ok, "+OK\r\n", "SET", "bigval", big);
    EXPECT(ok, ":20480\r\n", "STRLEN", "bigval");
    /* and a small pre-auth command is fine */
    f = h_connect(d.port);
    EXPECT(f, "+PONG\r\n", "PING");
    EXPECT(f, "+OK\r\n", "AUTH", PASS);
    close(f);
    close(ok);
    ck_assert_int_eq(WEXITSTATUS(stop(&d, "default", PASS)), 0);
}
END_TEST

/* ---- real clients ---- */

static int run(char *const argv[], char *out, size_t len, int ms)
{
    return h_run(argv, NULL, out, len, ms);
}

START_TEST(redis_cli_and_redis_py_authenticate)
{
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    char port[16], out[4096];
    snprintf(port, sizeof(port), "%d", d.port);
    if (access("/usr/bin/redis-cli", X_OK) == 0) {
        char *a1[] = {"/usr/bin/redis-cli", "--no-auth-warning", "-a", PASS, "-p", port, "ping",
                      NULL};
        ck_assert_int_eq(run(a1, out, sizeof(out), 10000), 0);
        ck_assert_str_eq(out, "PONG\n");
        char *a2[] = {"/usr/bin/redis-cli", "--no-auth-warning", "-a", PASS, "-p", port, "set",
                      "app:cli", "1", NULL};
        ck_assert_int_eq(run(a2, out, sizeof(out), 10000), 0);
        ck_assert_str_eq(out, "OK\n");
        char *a3[] = {"/usr/bin/redis-cli", "--no-auth-warning", "--user", "reader", "--pass",
                      "rpw", "-p", port, "get", "app:cli", NULL};
        ck_assert_int_eq(run(a3, out, sizeof(out), 10000), 0);
        ck_assert_str_eq(out, "1\n");
        char *a4[] = {"/usr/bin/redis-cli", "-p", port, "get", "app:cli", NULL};
        run(a4, out, sizeof(out), 10000);
        ck_assert_msg(strstr(out, "NOAUTH Authentication required.") != NULL, "%s", out);
        char *a5[] = {"/usr/bin/redis-cli", "--no-auth-warning", "-a", "bad", "-p", port, "ping",
                      NULL};
        run(a5, out, sizeof(out), 10000);
        ck_assert_msg(strstr(out, "WRONGPASS") != NULL, "%s", out);
    } else {
        fprintf(stderr, "SKIP redis-cli: not installed\n");
    }
    if (access("/usr/bin/python3", X_OK) == 0 &&
        system("/usr/bin/python3 -c 'import redis' >/dev/null 2>&1") == 0) {
        char script[1024];
        snprintf(script, sizeof(script),
                 "import redis\n"
                 "r = redis.Redis(host='127.0.0.1', port=%d, username='writer', password='wpw')\n"
                 "r.set('app:py', 'hi')\n"
                 "print(r.get('app:py').decode())\n"
                 "ro = redis.Redis(host='127.0.0.1', port=%d, username='reader', password='rpw')\n"
                 "print(ro.get('app:py').decode())\n"
                 "try:\n"
                 "    ro.set('app:py', 'x')\n"
                 "except redis.exceptions.NoPermissionError as e:\n"
                 "    print('noperm')\n"
                 "try:\n"
                 "    redis.Redis(host='127.0.0.1', port=%d, username='writer', "
                 "password='bad').ping()\n"
                 "except (redis.exceptions.AuthenticationError,\n"
                 "        redis.exceptions.ResponseError) as e:\n"
                 "    print('wrongpass' if 'WRONGPASS' in str(e) else e)\n"
                 "print(redis.Redis(host='127.0.0.1', port=%d, password='" PASS "').ping())\n",
                 d.port, d.port, d.port, d.port);
        char *py[] = {"/usr/bin/python3", "-c", script, NULL};
        int rc = run(py, out, sizeof(out), 20000);
        ck_assert_msg(rc == 0, "python3 exited %d: %s", rc, out);
        ck_assert_str_eq(out, "hi\nhi\nnoperm\nwrongpass\nTrue\n");
    } else {
        fprintf(stderr, "SKIP redis-py: /usr/bin/python3 with redis not installed\n");
    }
    ck_assert_int_eq(WEXITSTATUS(stop(&d, "default", PASS)), 0);
}
END_TEST

/* ---- protected mode ---- */

START_TEST(protected_mode_serves_loopback_and_denies_others)
{
    char addr[64];
    int outside = h_private_net(addr, sizeof(addr)) == 0; /* another address, in a namespace */
    ck_assert_int_eq(h_start(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\nbind 0.0.0.0\n"
                                 "protected-mode yes\n"), 0);
    int f = h_connect(d.port);
    EXPECT(f, "+OK\r\n", "SET", "k", "v");
    EXPECT(f, "$1\r\nv\r\n", "GET", "k");
    EXPECT(f, "-ERR AUTH <password> called without any password configured for the default "
              "user. Are you sure your configuration is correct?\r\n", "AUTH", "x");
    EXPECT(f, "+OK\r\n", "AUTH", "default", "anything");   /* nopass, as Redis */
    close(f);
    if (outside) {
        int g = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d.port)};
        inet_pton(AF_INET, addr, &in.sin_addr);
        struct timeval tv = {5, 0};
        setsockopt(g, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        ck_assert_int_eq(connect(g, (struct sockaddr *)&in, sizeof(in)), 0);
        struct h_reply *r = h_read(g);
        ck_assert_ptr_nonnull(r);
        ck_assert_msg(strncmp(r->raw, "-DENIED hotkvd is running in protected mode", 43) == 0,
                      "%s", r->raw);
        h_free(r);
        ck_assert(closed_by_server(g));
        close(g);
    } else {
        fprintf(stderr, "SKIP protected mode from outside: no network namespace\n");
    }
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

/* Named "access": tests/unit/check_auth.c is the auth suite (one runner
 * holds both, so suite names are unique across kinds). */
Suite *access_suite(void)
{
    Suite *s = suite_create("access");
    TCase *tc = tcase_create("access");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, requirepass_gates_every_command_until_auth);
    tcase_add_test(tc, users_are_limited_by_category_and_key_pattern);
    tcase_add_test(tc, config_get_and_set_never_touch_credentials);
    tcase_add_test(tc, reload_changes_the_password);
    tcase_add_test(tc, acl_shows_the_configured_users_and_what_a_reload_changes);
    tcase_add_test(tc, unauthenticated_clients_may_only_send_small_commands);
    tcase_add_test(tc, redis_cli_and_redis_py_authenticate);
    tcase_add_test(tc, protected_mode_serves_loopback_and_denies_others);
    suite_add_tcase(s, tc);
    return s;
}
