/*
 * check_writer_port.c - writer-port (README, "Writers beside a read storm"):
 * the last writer-edges of a colo's edge-workers accept on writer-port and
 * nothing else, the others on port and never on writer-port; what is written
 * through either is read through the other (one colo cache, one owner);
 * settings that leave no edge for port, or reuse a port, are refused with a
 * line that names the directive.  Every wait is bounded; the daemon is
 * stopped by pid (h_stop).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"

#define NCONN 12

struct wp {
    struct daemon d;
    int wport;
};

static void start(struct wp *w)
{
    w->wport = h_free_port();
    char extra[256];
    snprintf(extra, sizeof(extra),
             "edge-workers 3\nwriter-port %d\nwriter-edges 1\nhot-owners 1\ncold-owners 1\n",
             w->wport);
    ck_assert_int_eq(h_start(&w->d, extra), 0);
}

/* The INFO server field `name` over fd, into buf. */
static void info_field(int fd, const char *name, char *buf, size_t len)
{
    struct h_reply *r = h_cmdv(fd, "INFO", "server", NULL);
    ck_assert_ptr_nonnull(r);
    const char *p = r->v->str != NULL ? strstr(r->v->str, name) : NULL;
    ck_assert_msg(p != NULL, "INFO server has no %s", name);
    p += strlen(name);
    size_t n = strcspn(p, "\r\n");
    n = n < (size_t)(r->v->str + r->v->len - p) ? n : (size_t)(r->v->str + r->v->len - p);
    snprintf(buf, len, "%.*s", (int)n, p);
    h_free(r);
}

START_TEST(writer_edge_serves_writer_port_only)
{
    struct wp w;
    start(&w);
    pid_t writer = h_child(&w.d, "hotkvd: edge a/2", 0);
    ck_assert_int_gt(writer, 0);
    /* Connections to port land on the two other edges, never on the writer's. */
    for (int i = 0; i < NCONN; i++) {
        int fd = h_connect(w.d.port);
        ck_assert_int_ge(fd, 0);
        int pid = h_edge_of(fd);
        ck_assert_int_gt(pid, 0);
        ck_assert_int_ne(pid, writer);
        char serves[32];
        info_field(fd, "edge_serves:", serves, sizeof(serves));
        ck_assert_str_eq(serves, "port");
        close(fd);
    }
    /* Every connection to writer-port is the writer edge's. */
    for (int i = 0; i < NCONN / 2; i++) {
        int fd = h_connect(w.wport);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(h_edge_of(fd), writer);
        char buf[32];
        info_field(fd, "edge_serves:", buf, sizeof(buf));
        ck_assert_str_eq(buf, "writer-port");
        info_field(fd, "writer_port:", buf, sizeof(buf));
        ck_assert_int_eq(atoi(buf), w.wport);
        close(fd);
    }
    ck_assert_int_eq(h_stop(&w.d), 0);
}
END_TEST

START_TEST(writes_through_writer_port_are_read_through_port)
{
    struct wp w;
    start(&w);
    int wf = h_connect(w.wport);
    int rf = h_connect(w.d.port);
    ck_assert_int_ge(wf, 0);
    ck_assert_int_ge(rf, 0);
    for (int i = 0; i < 20; i++) {
        char key[32], val[32];
        snprintf(key, sizeof(key), "wp:%d", i);
        snprintf(val, sizeof(val), "v%d", i);
        struct h_reply *r = h_cmdv(wf, "SET", key, val, NULL);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(r->v->type, RESP_SIMPLE);
        h_free(r);
        r = h_cmdv(rf, "GET", key, NULL);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(r->v->type, RESP_BULK);
        ck_assert_int_eq(r->v->len, strlen(val));
        ck_assert_int_eq(memcmp(r->v->str, val, r->v->len), 0);
        h_free(r);
    }
    /* and the other way: a write through port read back through writer-port */
    struct h_reply *r = h_cmdv(rf, "SET", "wp:back", "b", NULL);
    ck_assert_ptr_nonnull(r);
    h_free(r);
    r = h_cmdv(wf, "GET", "wp:back", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->v->type, RESP_BULK);
    ck_assert_int_eq(r->v->len, 1);
    ck_assert_int_eq(r->v->str[0], 'b');
    h_free(r);
    close(wf);
    close(rf);
    ck_assert_int_eq(h_stop(&w.d), 0);
}
END_TEST

/* hotkvd --test-config CONF extra...: its exit code, its output in out. */
static int test_config(const char *extra, char *out, size_t len)
{
    char dir[256], conf[320];
    h_tmpdir(dir, sizeof(dir));
    snprintf(conf, sizeof(conf), "%s/hotkvd.conf", dir);
    FILE *f = fopen(conf, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "port %d\ndir %s\n%s", h_free_port(), dir, extra);
    fclose(f);
    char *argv[] = {(char *)h_bin(), "--test-config", conf, NULL};
    int rc = h_run(argv, NULL, out, len, 10000);
    h_rmtree(dir);
    return rc;
}

START_TEST(settings_that_leave_no_port_edge_are_refused)
{
    char out[2048];
    ck_assert_int_ne(test_config("edge-workers 2\nwriter-port 1\nwriter-edges 2\n", out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "writer-edges 2 leaves no edge for port") != NULL, "%s", out);
    ck_assert_int_ne(test_config("edge-workers 1\nwriter-port 1\n", out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "writer-edges 1 leaves no edge for port") != NULL, "%s", out);
    ck_assert_int_ne(test_config("edge-workers 3\nhttp-port 7777\nwriter-port 7777\n", out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "writer-port and http-port must differ") != NULL, "%s", out);
    ck_assert_int_eq(test_config("edge-workers 3\nwriter-port 7777\n", out, sizeof(out)), 0);
}
END_TEST

Suite *writer_port_suite(void)
{
    Suite *s = suite_create("writer_port");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"edges", writer_edge_serves_writer_port_only},
        {"both_ways", writes_through_writer_port_are_read_through_port},
        {"refused", settings_that_leave_no_port_edge_are_refused},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
