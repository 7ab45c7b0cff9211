/*
 * check_creds.c - credentials and protected mode across reloads, against the
 * real daemon (issue 25, item 2):
 * - a keep-alive HTTP session whose password a reload changed gets 401 for
 *   the old one on every request, across 150 more reloads that rebuild the
 *   users table each time (the cached login was keyed by the table's
 *   address, which malloc hands back), and a restricted user's session
 *   never acts as another user while reloads reorder the users;
 * - a watch stream whose password is revoked is closed at the reload;
 * - a RESP connection of a user a reload removed is closed (as Redis does);
 *   one whose password changed stays logged in (as Redis);
 * - protected mode turned on by a reload applies to open connections from a
 *   non-loopback address: a keep-alive HTTP session and a RESP connection
 *   are no longer served (skipped when the host has no such address).
 * Every loop and wait is bounded; daemons are stopped by pid (h_stop).
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/http_test.h"

#define BASE "edge-workers 1\nhot-owners 1\ncold-owners 1\n"
#define B64_APP_P1 "YXBwOlAx" /* app:P1 */
#define B64_BOB_B1 "Ym9iOkIx" /* bob:B1 */

static struct hr R;


/* Writes the config (BASE + extra), SIGHUPs, and waits (up to 10 s) until
 * every edge runs generation gen. */
static void reload_to(struct daemon *d, const char *extra, long long gen)
{
    char conf[4096];
    snprintf(conf, sizeof(conf), BASE "%s", extra);
    h_write_conf(d, conf);
    ck_assert_int_eq(kill(d->pid, SIGHUP), 0);
    int64_t end = h_now_ms() + 10000;
    long long g = -1;
    while (h_now_ms() < end && (g = h_edges_generation(d)) < gen)
        h_sleep_ms(10);
    ck_assert_msg(g >= gen, "the edges run generation %lld, not %lld", g, gen);
}

/* One GET on keep-alive connection fd with an Authorization line (or
 * none); the status, or -1 when no response came (closed). */
static int ka_get(int fd, const char *path, const char *b64)
{
    char req[512];
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\n%s%s%s\r\n", path,
             b64 != NULL ? "Authorization: Basic " : "", b64 != NULL ? b64 : "",
             b64 != NULL ? "\r\n" : "");
    if (hx_send(fd, req) != 0)
        return -1;
    memset(&R, 0, offsetof(struct hr, in));
    R.inlen = 0;
    return hx_read(fd, &R, 0, 10000) == 0 ? R.status : -1;
}

static void resp_set(int port, const char *k, const char *v)
{
    int fd = h_connect(port);
    ck_assert_int_ge(fd, 0);
    struct h_reply *r = h_cmdv(fd, "SET", k, v, NULL);
    ck_assert_msg(r != NULL && r->raw[0] == '+', "SET %s failed", k);
    h_free(r);
    close(fd);
}

/* 1 if the server closes fd within 5 s (what it sends first is dropped). */
static int closed_by_server(int fd)
{
    return hx_eof(fd, 5000);
}

/* ---- HTTP: a revoked password, reload after reload ------------------------------ */

/* Basic credentials user:pass in base64 into out. */
static void basic(char *out, size_t len, const char *user, const char *pass)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char in[128];
    int n = snprintf(in, sizeof(in), "%s:%s", user, pass);
    size_t o = 0;
    for (int i = 0; i < n && o + 5 < len; i += 3) {
        unsigned v = (unsigned)(unsigned char)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)(unsigned char)in[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)in[i + 2];
        out[o++] = t[(v >> 18) & 63];
        out[o++] = t[(v >> 12) & 63];
        out[o++] = i + 1 < n ? t[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? t[v & 63] : '=';
    }
    out[o] = '\0';
}

/* The users, in one of three orders (so a user's position in the table
 * changes from one reload to the next), app's password pw. */
static void users_conf(char *out, size_t len, int hp, int order, const char *pw, int i)
{
    char app[64], bob[64];
    const char *dflt = "user default on nopass ~* +@all\n";
    snprintf(app, sizeof(app), "user app on >%s ~* +@all\n", pw);
    snprintf(bob, sizeof(bob), "user bob on >B1 ~b:* +@read\n");
    const char *a = dflt, *b = app, *c = bob;
    if (order == 1) {
        b = bob;
        c = app;
    } else if (order == 2) {
        a = bob;
        b = dflt;
        c = app;
    }
    snprintf(out, len, "http-port %d\nmaxclients %d\n%s%s%s", hp, 5000 + i, a, b, c);
}

#define RELOADS 150

/* Reload i sets app's password to "P<i>" (P1 first).  Three keep-alive
 * sessions: `first` logged in with P1 before any reload and sends it after
 * every one; two others take turns logging in with the password of the
 * reload, so each reload finds one of them holding credentials checked two
 * tables ago: the table the reload before freed, whose memory this one may
 * get back (the likeliest reuse).  Every revoked password must get 401.
 * bob (reads b:* only) must never read k while the users' order changes. */
START_TEST(a_revoked_password_is_refused_on_a_keep_alive_session_across_reloads)
{
    struct daemon d;
    int hp = h_free_port();
    char conf[2048], extra[1024], pw[32], b64[128];
    users_conf(extra, sizeof(extra), hp, 0, "P1", 0);
    snprintf(conf, sizeof(conf), BASE "%s", extra);
    ck_assert_int_eq(h_start(&d, conf), 0);
    resp_set(d.port, "k", "v");
    resp_set(d.port, "b:1", "bv");
    int first = h_connect(hp), bob = h_connect(hp), turn[2] = {h_connect(hp), h_connect(hp)};
    ck_assert(first >= 0 && bob >= 0 && turn[0] >= 0 && turn[1] >= 0);
    ck_assert_int_eq(ka_get(first, "/v1/kv/k", B64_APP_P1), 200);
    ck_assert_int_eq(ka_get(bob, "/v1/kv/b:1", B64_BOB_B1), 200);
    ck_assert_int_eq(ka_get(bob, "/v1/kv/k", B64_BOB_B1), 403);
    char held[2][128] = {"", ""}; /* the password each turn session logged in with */
    long long gen = h_edges_generation(&d);
    int accepted = 0, refused = 0, other = 0, as_other = 0, bob_ok = 0, fresh_ok = 0, n = 0;
    int64_t t0 = h_now_ms();
    for (int i = 2; i <= RELOADS + 1 && h_now_ms() - t0 < 150000; i++, n++) {
        snprintf(pw, sizeof(pw), "P%d", i);
        users_conf(extra, sizeof(extra), hp, i % 3, pw, i);
        reload_to(&d, extra, ++gen);
        int st = ka_get(first, "/v1/kv/k", B64_APP_P1);
        ck_assert_msg(st != -1, "reload %d: the keep-alive session was closed", i);
        accepted += st == 200;
        refused += st == 401;
        other += st != 200 && st != 401;
        for (int t = 0; t < 2; t++) {
            if (held[t][0] == '\0')
                continue;
            st = ka_get(turn[t], "/v1/kv/k", held[t]); /* revoked one or two reloads ago */
            ck_assert_msg(st != -1, "reload %d: a keep-alive session was closed", i);
            accepted += st == 200;
            refused += st == 401;
            other += st != 200 && st != 401;
        }
        int t = i % 2;
        basic(b64, sizeof(b64), "app", pw);
        fresh_ok += ka_get(turn[t], "/v1/kv/k", b64) == 200;
        snprintf(held[t], sizeof(held[t]), "%s", b64);
        st = ka_get(bob, "/v1/kv/k", B64_BOB_B1); /* bob may read b:* only */
        as_other += st != 403;
        bob_ok += ka_get(bob, "/v1/kv/b:1", B64_BOB_B1) == 200;
    }
    fprintf(stderr, "creds: %d reloads: revoked passwords sent %d times: accepted %d, 401 %d, "
                    "other %d; the current password accepted %d times; bob read k %d times, "
                    "b:1 %d times\n",
            n, accepted + refused + other, accepted, refused, other, fresh_ok, as_other, bob_ok);
    ck_assert_msg(accepted == 0 && other == 0,
                  "a revoked password was accepted %d times (another status %d times) in %d "
                  "reloads", accepted, other, n);
    ck_assert_int_eq(n, RELOADS);
    ck_assert_int_eq(fresh_ok, RELOADS);
    ck_assert_msg(as_other == 0, "bob's session acted as another user %d times", as_other);
    ck_assert_int_eq(bob_ok, RELOADS);
    close(first);
    close(bob);
    close(turn[0]);
    close(turn[1]);
    h_stop(&d);
}
END_TEST

/* ---- HTTP: a held stream whose password is revoked ----------------------------- */

START_TEST(a_watch_stream_ends_when_a_reload_revokes_its_password)
{
    struct daemon d;
    int hp = h_free_port();
    char conf[1024], extra[512];
    snprintf(extra, sizeof(extra), "http-port %d\nuser default on nopass ~* +@all\n"
                                   "user app on >P1 ~* +@all\n", hp);
    snprintf(conf, sizeof(conf), BASE "%s", extra);
    ck_assert_int_eq(h_start(&d, conf), 0);
    resp_set(d.port, "w", "1");
    int revoked = h_connect(hp), kept = h_connect(hp);
    ck_assert(revoked >= 0 && kept >= 0);
    ck_assert_int_eq(hx_send(revoked, "GET /v1/watch/w HTTP/1.1\r\nHost: t\r\n"
                                      "Authorization: Basic " B64_APP_P1 "\r\n\r\n"), 0);
    ck_assert_int_eq(hx_send(kept, "GET /v1/watch/w HTTP/1.1\r\nHost: t\r\n\r\n"), 0);
    static struct hr h1, h2;
    ck_assert_int_eq(hx_read(revoked, &h1, 1, 10000), 0);
    ck_assert_int_eq(hx_read(kept, &h2, 1, 10000), 0);
    ck_assert_msg(h1.status == 200 && h2.status == 200, "%s / %s", h1.head, h2.head);
    long long gen = h_edges_generation(&d);
    snprintf(extra, sizeof(extra), "http-port %d\nuser default on nopass ~* +@all\n"
                                   "user app on >P2 ~* +@all\n", hp);
    reload_to(&d, extra, gen + 1);
    ck_assert_msg(closed_by_server(revoked), "the stream of a revoked password stays open");
    /* the other stream (no credentials: the default user, unchanged) goes on */
    resp_set(d.port, "w", "2");
    int64_t end = h_now_ms() + 5000;
    const char *want = "\"value\":\"2\"";
    while (h_now_ms() < end && memmem(h2.in, h2.inlen, want, strlen(want)) == NULL)
        if (hx_fill(kept, &h2, 200) == 0)
            break; /* closed */
    ck_assert_msg(memmem(h2.in, h2.inlen, want, strlen(want)) != NULL,
                  "the default user's stream got no change: %.*s", (int)h2.inlen, h2.in);
    close(revoked);
    close(kept);
    h_stop(&d);
}
END_TEST

/* ---- RESP: a removed user ---------------------------------------------------------- */

static int authed(int port, const char *user, const char *pass)
{
    int f = h_connect(port);
    ck_assert_int_ge(f, 0);
    struct h_reply *r = h_cmdv(f, "AUTH", user, pass, NULL);
    ck_assert_msg(r != NULL && strcmp(r->raw, "+OK\r\n") == 0, "AUTH %s", user);
    h_free(r);
    return f;
}

START_TEST(a_resp_connection_of_a_removed_user_is_closed)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, BASE "user default on nopass ~* +@all\n"
                                      "user gone on >G1 ~* +@all\nuser stays on >S1 ~* +@all\n"),
                     0);
    int gone = authed(d.port, "gone", "G1"), stays = authed(d.port, "stays", "S1");
    long long gen = h_edges_generation(&d);
    /* gone is removed; stays gets another password */
    reload_to(&d, "user default on nopass ~* +@all\nuser stays on >S2 ~* +@all\n", gen + 1);
    ck_assert_msg(closed_by_server(gone), "the removed user's connection stays open");
    struct h_reply *r = h_cmdv(stays, "SET", "s", "1", NULL);
    ck_assert_msg(r != NULL && strcmp(r->raw, "+OK\r\n") == 0,
                  "a user whose password changed was logged out: %s", r != NULL ? r->raw : "");
    h_free(r);
    r = h_cmdv(stays, "AUTH", "stays", "S1", NULL);
    ck_assert_msg(r != NULL && strncmp(r->raw, "-WRONGPASS", 10) == 0, "%s",
                  r != NULL ? r->raw : "");
    h_free(r);
    close(gone);
    close(stays);
    h_stop(&d);
}
END_TEST

/* ---- protected mode by reload -------------------------------------------------------- */

static int connect_from_outside(const char *ip, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, ip, &to.sin_addr);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
    return fd;
}

START_TEST(protected_mode_turned_on_by_reload_applies_to_open_connections)
{
    char ip[64];
    if (h_private_net(ip, sizeof(ip)) != 0) { /* clients "from elsewhere", in a namespace */
        fprintf(stderr, "SKIP creds protected_mode: no network namespace\n");
        return;
    }
    struct daemon d;
    int hp = h_free_port();
    char conf[1024], extra[512];
    snprintf(extra, sizeof(extra), "http-port %d\nbind 127.0.0.1 %s\nprotected-mode no\n", hp,
             ip);
    snprintf(conf, sizeof(conf), BASE "%s", extra);
    ck_assert_int_eq(h_start(&d, conf), 0);
    resp_set(d.port, "k", "v");
    int http = connect_from_outside(ip, hp), resp = connect_from_outside(ip, d.port);
    ck_assert_int_eq(ka_get(http, "/v1/kv/k", NULL), 200);
    struct h_reply *r = h_cmdv(resp, "PING", NULL);
    ck_assert_msg(r != NULL && strcmp(r->raw, "+PONG\r\n") == 0, "PING from %s", ip);
    h_free(r);
    long long gen = h_edges_generation(&d);
    snprintf(extra, sizeof(extra), "http-port %d\nbind 127.0.0.1 %s\nprotected-mode yes\n", hp,
             ip);
    reload_to(&d, extra, gen + 1);
    /* HTTP: the next request is refused (403, then close) or the session is
     * closed already; never served */
    int st = ka_get(http, "/v1/kv/k", NULL);
    int http_refused = (st == -1 || (st == 403 && strstr(R.body, "protected mode"))) &&
                       closed_by_server(http);
    /* RESP: -DENIED (sent when the reload closed it) or closed; never PONG */
    int sent = h_send(resp, "*1\r\n$4\r\nPING\r\n", 14);
    r = sent == 0 ? h_read(resp) : NULL;
    char got[64];
    snprintf(got, sizeof(got), "%.40s", r != NULL ? r->raw : "(closed)");
    int resp_refused = (r == NULL || strncmp(r->raw, "-DENIED", 7) == 0) && closed_by_server(resp);
    h_free(r);
    ck_assert_msg(http_refused && resp_refused,
                  "after protected mode went on, open connections from %s: a keep-alive HTTP "
                  "session got %d (%s), a RESP connection got %s (%s)", ip, st,
                  http_refused ? "refused" : "served", got, resp_refused ? "refused" : "served");
    /* loopback is still served */
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/k", NULL, &R), 0);
    ck_assert_int_eq(R.status, 200);
    close(http);
    close(resp);
    h_stop(&d);
}
END_TEST

Suite *creds_suite(void)
{
    Suite *s = suite_create("creds");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"revoked_http", a_revoked_password_is_refused_on_a_keep_alive_session_across_reloads},
        {"revoked_watch", a_watch_stream_ends_when_a_reload_revokes_its_password},
        {"removed_resp", a_resp_connection_of_a_removed_user_is_closed},
        {"protected_mode", protected_mode_turned_on_by_reload_applies_to_open_connections},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 180);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
