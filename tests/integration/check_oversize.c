/*
 * check_oversize.c - a client request whose owner frame would be larger than
 * wire-max-frame.  The owner would close the link on such a frame, and the
 * edge would resend it (and fail every other write on that link) until
 * write-deadline; instead the edge refuses it at once, with an error that
 * means "not applied", and never sends it.
 *
 * The config check (cfg_validate) makes every single-key command fit a frame,
 * so what remains too large is a multi-key command: here a DEL whose keys,
 * each under proto-max-bulk-len, add up to more than wire-max-frame.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"

#define CONF "edge-workers 1\nhot-owners 1\ncold-owners 1\n" \
             "wire-max-frame 4mb\nproto-max-bulk-len 1mb\n"
#define NBIG 5
#define BIGLEN 1000000 /* 5 keys: 5 MB of keys in one DEL frame, over 4mb */

/* "*<n>\r\n$3\r\nDEL\r\n" then NBIG keys of BIGLEN bytes, the i-th made of
 * the letter 'a' + i.  Returns a malloc'd request of *len bytes. */
static char *big_del(size_t *len)
{
    size_t cap = NBIG * (BIGLEN + 32) + 64, n = 0;
    char *req = malloc(cap);
    ck_assert_ptr_nonnull(req);
    n += (size_t)snprintf(req + n, cap - n, "*%d\r\n$3\r\nDEL\r\n", NBIG + 1);
    for (int i = 0; i < NBIG; i++) {
        n += (size_t)snprintf(req + n, cap - n, "$%d\r\n", BIGLEN);
        memset(req + n, 'a' + i, BIGLEN);
        n += BIGLEN;
        memcpy(req + n, "\r\n", 2);
        n += 2;
    }
    *len = n;
    return req;
}

static void expect_ok(struct h_reply *r, const char *what)
{
    ck_assert_msg(r != NULL, "%s: no answer within 5 s", what);
    ck_assert_msg(r->v->type == RESP_SIMPLE || r->v->type == RESP_INT, "%s: answered %.*s",
                  what, (int)r->v->len, r->v->str);
    h_free(r);
}

START_TEST(request_over_wire_max_frame_is_refused_at_once_and_others_go_on)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, CONF), 0);
    int big = h_connect(d.port), other = h_connect(d.port);
    ck_assert(big >= 0 && other >= 0);
    /* One of the big keys exists (a key of 1 MB and a small value fit). */
    char *key0 = malloc(BIGLEN + 1); /* h_cmd takes C strings */
    ck_assert_ptr_nonnull(key0);
    memset(key0, 'a', BIGLEN);
    key0[BIGLEN] = '\0';
    const char *set0[] = {"SET", key0, "kept"};
    expect_ok(h_cmd(other, 3, set0), "SET of a 1 MB key");
    int64_t retries0 = h_info_int(d.port, "write_retries");
    int64_t failures0 = h_info_int(d.port, "write_failures");

    size_t len;
    char *req = big_del(&len);
    int64_t t0 = h_now_ms();
    ck_assert_int_eq(h_send(big, req, len), 0);
    /* A normal write on the same edge (and the same owner link) meanwhile. */
    expect_ok(h_cmdv(other, "SET", "small", "v1", NULL), "SET small while the DEL is refused");
    struct h_reply *r = h_read(big);
    int64_t took = h_now_ms() - t0;
    ck_assert_msg(r != NULL, "the oversized DEL got no answer within 5 s");
    ck_assert_msg(r->v->type == RESP_ERROR && strstr(r->v->str, "wire-max-frame") != NULL &&
                  strstr(r->v->str, "not applied") != NULL,
                  "the oversized DEL answered %.*s", (int)r->v->len, r->v->str);
    h_free(r);
    ck_assert_msg(took < 3000, "the refusal took %lld ms", (long long)took);
    expect_ok(h_cmdv(other, "SET", "small", "v2", NULL), "SET small after the refusal");

    /* Not applied: the existing key is still there; the link never broke. */
    const char *get0[] = {"GET", key0};
    r = h_cmd(other, 2, get0);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->v->type, RESP_BULK);
    ck_assert_int_eq((int)r->v->len, 4);
    ck_assert(memcmp(r->v->str, "kept", 4) == 0);
    h_free(r);
    ck_assert_int_eq(h_info_int(d.port, "write_retries"), retries0);
    ck_assert_int_eq(h_info_int(d.port, "write_failures"), failures0);
    int broke = h_log_has(&d, "owner link", "broken", NULL);
    ck_assert_msg(!broke, "an owner link broke");
    /* The same connection goes on. */
    expect_ok(h_cmdv(big, "SET", "after", "x", NULL), "SET on the refused client's connection");
    free(req);
    free(key0);
    close(big);
    close(other);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

/* The same for a count: an owner refuses (and closes the link on) a message
 * of more than WIRE_MAX_ITEMS_DEFAULT keys, which proto-max-args allows in
 * one DEL, MGET or EXISTS: refused at once, not applied, link untouched. */
START_TEST(too_many_keys_for_one_owner_are_refused_at_once)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\n"
                                 "write-timeout 2s\nwrite-deadline 4s\n"), 0);
    int fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    expect_ok(h_cmdv(fd, "SET", "k0", "kept", NULL), "SET k0");
    const int n = WIRE_MAX_ITEMS_DEFAULT + 1;
    const char **argv = malloc((size_t)(n + 1) * sizeof(*argv));
    char *names = malloc((size_t)n * 16);
    ck_assert(argv != NULL && names != NULL);
    for (int i = 0; i < n; i++) {
        snprintf(names + 16 * i, 16, "k%d", i);
        argv[i + 1] = names + 16 * i;
    }
    const char *cmds[] = {"DEL", "MGET", "EXISTS"};
    for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
        argv[0] = cmds[c];
        int64_t t0 = h_now_ms();
        struct h_reply *r = h_cmd(fd, n + 1, argv);
        int64_t took = h_now_ms() - t0;
        ck_assert_msg(r != NULL, "%s of %d keys: no answer within 5 s", cmds[c], n);
        ck_assert_msg(r->v->type == RESP_ERROR && strstr(r->v->str, "not applied") != NULL,
                      "%s of %d keys answered type %d %.*s", cmds[c], n, (int)r->v->type,
                      r->v->type == RESP_ERROR ? (int)r->v->len : 0, r->v->str);
        h_free(r);
        ck_assert_msg(took < 3000, "%s: the refusal took %lld ms", cmds[c], (long long)took);
    }
    struct h_reply *r = h_cmdv(fd, "GET", "k0", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->v->type, RESP_BULK);
    h_free(r);
    ck_assert_int_eq(h_info_int(d.port, "write_retries"), 0);
    free(argv);
    free(names);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

/* wire-max-frame is restart-only: a SIGHUP whose file raises it together
 * with proto-max-bulk-len would run the new bulk limit with the old frame,
 * so the reload is refused (named with file:line) and nothing changes. */
START_TEST(reload_that_needs_a_larger_frame_is_refused)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, CONF), 0);
    h_write_conf(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\n"
                     "wire-max-frame 64mb\nproto-max-bulk-len 16mb\n");
    kill(d.pid, SIGHUP);
    int64_t end = h_now_ms() + 5000;
    while (h_now_ms() < end && h_info_int(d.port, "config_reload_failures") != 1)
        h_sleep_ms(50);
    ck_assert_int_eq(h_info_int(d.port, "config_reload_failures"), 1);
    ck_assert_int_eq(h_info_int(d.port, "config_generation"), 1);
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "CONFIG", "GET", "proto-max-bulk-len", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->v->type, RESP_ARRAY);
    ck_assert_int_eq((int)r->v->n, 2);
    ck_assert_int_eq((int)r->v->elems[1].len, 7);
    ck_assert(memcmp(r->v->elems[1].str, "1048576", 7) == 0);
    h_free(r);
    close(fd);
    int named = h_log_has(&d, "reload refused", "hotkvd.conf:10:", "wire-max-frame");
    ck_assert_msg(named, "the refused reload was not logged with file:line");
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

/* A DEL over two owners, one of whose shares is too large for a frame:
 * refused before anything is sent, so no owner applies its part (an error
 * that says "not applied" must be true for the whole command). */
START_TEST(multi_owner_command_too_large_for_one_owner_applies_nowhere)
{
    enum { NBIG2 = 9, NSMALL = 16 };
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 1\nhot-owners 2\ncold-owners 1\nclass default pool hot\n"
                                 "wire-max-frame 4mb\nproto-max-bulk-len 1mb\n"), 0);
    int fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    char small[NSMALL][24];
    for (int i = 0; i < NSMALL; i++) {
        snprintf(small[i], sizeof(small[i]), "small%d", i);
        expect_ok(h_cmdv(fd, "SET", small[i], "v", NULL), "SET small");
    }
    /* 9 keys of 1 MB over 2 owners: one owner's share is 5 MB or more. */
    size_t cap = NBIG2 * (BIGLEN + 32) + NSMALL * 32 + 64, n = 0;
    char *req = malloc(cap);
    ck_assert_ptr_nonnull(req);
    n += (size_t)snprintf(req + n, cap - n, "*%d\r\n$3\r\nDEL\r\n", NBIG2 + NSMALL + 1);
    for (int i = 0; i < NSMALL; i++)
        n += (size_t)snprintf(req + n, cap - n, "$%zu\r\n%s\r\n", strlen(small[i]), small[i]);
    for (int i = 0; i < NBIG2; i++) {
        n += (size_t)snprintf(req + n, cap - n, "$%d\r\n", BIGLEN);
        memset(req + n, 'a' + i, BIGLEN);
        n += BIGLEN;
        memcpy(req + n, "\r\n", 2);
        n += 2;
    }
    ck_assert_int_eq(h_send(fd, req, n), 0);
    free(req);
    struct h_reply *r = h_read(fd);
    ck_assert_ptr_nonnull(r);
    fprintf(stderr, "oversize: a DEL over two owners, too large for one -> %.*s\n", (int)r->v->len,
            r->v->str);
    ck_assert_msg(r->v->type == RESP_ERROR && strstr(r->v->str, "not applied") != NULL,
                  "the DEL: %.*s", (int)r->v->len, r->v->str);
    h_free(r);
    int gone = 0;
    for (int i = 0; i < NSMALL; i++) {
        r = h_cmdv(fd, "EXISTS", small[i], NULL);
        ck_assert_ptr_nonnull(r);
        gone += r->v->integer == 0;
        h_free(r);
    }
    ck_assert_msg(gone == 0, "%d of %d keys deleted by a DEL answered \"not applied\"", gone,
                  NSMALL);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

Suite *oversize_suite(void)
{
    Suite *s = suite_create("oversize");
    TCase *tc = tcase_create("refused_at_edge");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, request_over_wire_max_frame_is_refused_at_once_and_others_go_on);
    suite_add_tcase(s, tc);
    tc = tcase_create("too_many_keys");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, too_many_keys_for_one_owner_are_refused_at_once);
    suite_add_tcase(s, tc);
    tc = tcase_create("half_applied");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, multi_owner_command_too_large_for_one_owner_applies_nowhere);
    suite_add_tcase(s, tc);
    tc = tcase_create("reload");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, reload_that_needs_a_larger_frame_is_refused);
    suite_add_tcase(s, tc);
    return s;
}
