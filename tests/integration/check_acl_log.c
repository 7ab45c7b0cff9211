/*
 * check_acl_log.c - ACL LOG against the real daemon: the host's denied
 * attempts in Redis 7.0's entry format, whichever edge denied them and
 * whichever edge is asked:
 * - a wrong password (AUTH, HELLO AUTH; the object is the command as sent),
 *   a command and a key outside the user's rules (object: the full command
 *   name, or the first refused key), inside MULTI ("multi"), and the HTTP
 *   door's wrong Basic credentials (context "http", object Authorization);
 * - equal denials grouped (count), newest first, ACL LOG N, RESET for the
 *   whole host, the log trimmed to acllog-max-len; NOAUTH and ACL DRYRUN
 *   are not logged; errors as Redis's.
 * Every wait is bounded; the daemon is stopped by pid.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/http_test.h"

static struct daemon D;

static void cleanup(void)
{
    if (D.pid > 0)
        h_stop(&D);
}

/* reader:bad, base64 */
#define BAD_BASIC "Authorization: Basic cmVhZGVyOmJhZA==\r\n"

static int start(int *hp, const char *extra)
{
    char conf[1024];
    *hp = h_free_port();
    snprintf(conf, sizeof(conf),
             "edge-workers 2\nhot-owners 1\ncold-owners 1\nhttp-port %d\n"
             "user default on nopass ~* +@all\nuser ro on >ro ~app:* +@read\n"
             "user reader on >rpw ~* +@read\n%s", *hp, extra);
    h_on_fail(cleanup);
    return h_start(&D, conf);
}

/* The value after `name` in an entry (a RESP2 flat array). */
static const struct resp_value *field(const struct resp_value *e, const char *name)
{
    for (size_t i = 0; i + 1 < e->n; i += 2)
        if (h_str_is(&e->elems[i], name))
            return &e->elems[i + 1];
    return NULL;
}

static int is(const struct resp_value *e, const char *name, const char *want)
{
    const struct resp_value *v = field(e, name);
    return v != NULL && h_str_is(v, want);
}

/* The entries as "reason/context/object/username ..." (failure messages). */
static const char *summary(const struct resp_value *v)
{
    static char buf[2048];
    buf[0] = '\0';
    for (size_t i = 0; i < v->n; i++) {
        const char *names[] = {"reason", "context", "object", "username"};
        for (int k = 0; k < 4; k++) {
            const struct resp_value *f = field(&v->elems[i], names[k]);
            size_t n = strlen(buf);
            snprintf(buf + n, sizeof(buf) - n, "%.*s%s", f != NULL ? (int)f->len : 1,
                     f != NULL ? f->str : "?", k < 3 ? "/" : " ");
        }
    }
    return buf;
}

static struct h_reply *acl_log(int fd, const char *count)
{
    struct h_reply *r = count != NULL ? h_call(fd, "ACL", "LOG", count, NULL)
                                      : h_call(fd, "ACL", "LOG", NULL);
    H_EXPECT(cleanup, r->v->type == RESP_ARRAY, "ACL LOG: %s", r->raw);
    return r;
}

START_TEST(denials_of_every_edge_in_one_log)
{
    int hp;
    ck_assert_int_eq(start(&hp, ""), 0);
    int a, b;
    ck_assert_int_eq(h_edge_pair(&D, &a, &b), 0);
    struct h_reply *r = h_call(a, "auth", "nobody", "bad", NULL);
    ck_assert_str_eq(r->raw, "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    h_free(r);
    h_free(h_call(a, "AUTH", "nobody", "bad", NULL)); /* another object: "AUTH" */
    h_free(h_call(a, "auth", "nobody", "bad", NULL)); /* grouped with the first */
    h_free(h_call(b, "HELLO", "2", "AUTH", "ro", "nope", NULL));
    h_free(h_call(b, "AUTH", "ro", "ro", NULL));
    h_free(h_call(b, "SET", "app:1", "v", NULL));         /* command */
    h_free(h_call(b, "GET", "secret", NULL));             /* key */
    h_free(h_call(b, "MGET", "app:1", "other", NULL));    /* the first refused key */
    h_free(h_call(b, "CONFIG", "GET", "x", NULL));        /* a subcommand, full name */
    h_free(h_call(b, "MULTI", NULL));
    h_free(h_call(b, "SET", "app:2", "v", NULL));
    h_free(h_call(b, "DISCARD", NULL));
    struct hr g;
    ck_assert_int_eq(hx_get(hp, "GET", "/v1/kv/app:x", BAD_BASIC, &g), 0);
    ck_assert_int_eq(g.status, 401);

    int c = h_connect(D.port);
    r = h_call(c, "ACL", "DRYRUN", "ro", "SET", "k", "v", NULL); /* an answer, not a denial */
    H_EXPECT(cleanup, strstr(r->raw, "no permissions") != NULL, "DRYRUN: %s", r->raw);
    h_free(r);
    r = acl_log(c, "100");
    const struct resp_value *v = r->v;
    H_EXPECT(cleanup, v->n == 9, "entries: %zu (%s)", v->n, summary(v));
    const struct resp_value *e = v->elems;
    /* newest first */
    H_EXPECT(cleanup, is(&e[0], "reason", "auth") && is(&e[0], "context", "http") &&
             is(&e[0], "object", "Authorization") && is(&e[0], "username", "reader"),
             "the HTTP entry: %s", r->raw);
    H_EXPECT(cleanup, is(&e[1], "reason", "command") && is(&e[1], "context", "multi") &&
             is(&e[1], "object", "set") && is(&e[1], "username", "ro"), "multi: %s", summary(r->v));
    H_EXPECT(cleanup, is(&e[2], "object", "config|get") && is(&e[2], "reason", "command"),
             "subcommand: %s", summary(v));
    H_EXPECT(cleanup, is(&e[3], "reason", "key") && is(&e[3], "object", "other"), "MGET");
    H_EXPECT(cleanup, is(&e[4], "reason", "key") && is(&e[4], "object", "secret") &&
             is(&e[4], "context", "toplevel"), "GET secret");
    H_EXPECT(cleanup, is(&e[5], "reason", "command") && is(&e[5], "object", "set"), "SET");
    H_EXPECT(cleanup, is(&e[6], "object", "HELLO") && is(&e[6], "username", "ro"), "HELLO");
    /* the third "auth" counted into the first, which moved to the front */
    const struct resp_value *cnt = field(&e[7], "count");
    H_EXPECT(cleanup, is(&e[7], "object", "auth") && cnt != NULL && cnt->integer == 2,
             "grouped: %s", summary(v));
    H_EXPECT(cleanup, is(&e[8], "object", "AUTH") && is(&e[8], "username", "nobody"), "AUTH");
    /* every Redis 7.0 field; the client-info of the client that was denied */
    const struct resp_value *info = field(&e[5], "client-info"), *age = field(&e[5], "age-seconds");
    H_EXPECT(cleanup, info != NULL && info->len > 0 && memmem(info->str, info->len, "cmd=set", 7),
             "client-info");
    H_EXPECT(cleanup, age != NULL && atof(age->str) >= 0 && atof(age->str) < 30, "age-seconds");
    H_EXPECT(cleanup, e[5].n == 14, "fields: %zu", e[5].n);
    h_free(r);
    H_EXPECT(cleanup, h_info_int(D.port, "acl_log_entries") == 9 &&
                          h_info_int(D.port, "acl_log_dropped") == 0, "INFO acl_log_*");

    r = acl_log(a, "1");
    H_EXPECT(cleanup, r->v->n == 1 && is(&r->v->elems[0], "context", "http"), "ACL LOG 1");
    h_free(r);
    r = acl_log(a, "-3");
    H_EXPECT(cleanup, r->v->n == 0, "ACL LOG -3");
    h_free(r);
    r = h_call(a, "ACL", "LOG", "x", NULL);
    ck_assert_str_eq(r->raw, "-ERR value is not an integer or out of range\r\n");
    h_free(r);
    r = h_call(a, "ACL", "LOG", "1", "2", NULL);
    ck_assert_str_eq(r->raw,
                     "-ERR unknown subcommand or wrong number of arguments for 'LOG'. Try ACL "
                     "HELP.\r\n");
    h_free(r);
    /* RESET on one edge empties the host's log */
    r = h_call(a, "ACL", "LOG", "RESET", NULL);
    ck_assert_str_eq(r->raw, "+OK\r\n");
    h_free(r);
    r = acl_log(c, NULL);
    H_EXPECT(cleanup, r->v->n == 0, "after RESET: %s", r->raw);
    h_free(r);
    close(a);
    close(b);
    close(c);
    ck_assert_int_eq(h_stop(&D), 0);
}
END_TEST

START_TEST(trimmed_to_acllog_max_len_noauth_not_logged)
{
    char conf[256];
    snprintf(conf, sizeof(conf), "edge-workers 2\nhot-owners 1\ncold-owners 1\n"
             "user default on >pw ~* +@all\nacllog-max-len 3\n");
    h_on_fail(cleanup);
    ck_assert_int_eq(h_start(&D, conf), 0);
    int fd = h_connect(D.port);
    struct h_reply *r = h_call(fd, "GET", "k", NULL);
    ck_assert_str_eq(r->raw, "-NOAUTH Authentication required.\r\n");
    h_free(r);
    static const char *users[] = {"u1", "u2", "u3", "u4", "u5"};
    for (int i = 0; i < 5; i++)
        h_free(h_call(fd, "AUTH", users[i], "bad", NULL));
    r = h_call(fd, "AUTH", "pw", NULL);
    ck_assert_str_eq(r->raw, "+OK\r\n");
    h_free(r);
    r = acl_log(fd, "100");
    H_EXPECT(cleanup, r->v->n == 3 && is(&r->v->elems[0], "username", "u5") &&
             is(&r->v->elems[2], "username", "u3"), "trimmed to 3: %s", r->raw);
    h_free(r);
    r = h_call(fd, "CONFIG", "GET", "acllog-max-len", NULL);
    H_EXPECT(cleanup, strstr(r->raw, "acllog-max-len") != NULL && strstr(r->raw, "\r\n3\r\n"),
             "CONFIG GET: %s", r->raw);
    h_free(r);
    close(fd);
    ck_assert_int_eq(h_stop(&D), 0);
}
END_TEST

Suite *acl_log_suite(void)
{
    Suite *s = suite_create("acl_log");
    TCase *tc = tcase_create("log");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, denials_of_every_edge_in_one_log);
    tcase_add_test(tc, trimmed_to_acllog_max_len_noauth_not_logged);
    suite_add_tcase(s, tc);
    return s;
}
