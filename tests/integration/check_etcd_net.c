/*
 * check_etcd_net.c - the etcd client's behaviour when the network or etcd
 * says no: a dead endpoint first in the list, a listener that accepts and
 * never answers (every timeout), etcd's user/password auth (a token that
 * expires, a wrong password), and TLS to etcd (the right CA and host name
 * work; another CA or another name fail cleanly).  A real etcd 3.4, started
 * per test case on free loopback ports, stopped by PID.
 */
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tests/integration/etcd_loop.h"

#define OPENSSL "/usr/bin/openssl"

/* A loopback port where nothing listens (bound, then closed). */
static int dead_port(void)
{
    return h_free_port();
}

/* A listener that completes TCP handshakes (the kernel does) and never
 * reads or answers. */
static int mute_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(in);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&in, sizeof(in)), 0);
    ck_assert_int_eq(listen(fd, 16), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&in, &len), 0);
    *port = ntohs(in.sin_port);
    return fd;
}

/* ---- failover ---- */

START_TEST(dead_endpoint_first_fails_over)
{
    NEED_ETCD();
    char dead[64];
    snprintf(dead, sizeof(dead), "http://127.0.0.1:%d", dead_port());
    const char *eps[] = {dead, etcd.url};
    struct etcd *e = client(eps, 2, NULL, NULL, NULL, 3000);
    int64_t t0 = h_now_ms();
    struct got p = put(e, "/t/fo/a", "1", 0);
    ck_assert_msg(p.status == HKV_OK, "%d %s", p.status, p.message);
    ck_assert_int_lt(h_now_ms() - t0, 3000);
    ck_assert_str_eq(etcd_endpoint(e), etcd.url); /* later calls go there directly */
    ck_assert_str_eq(get(e, "/t/fo/a", NULL).vals[0], "1");
    /* a watch finds the live endpoint too */
    etcd_destroy(&e);
    e = client(eps, 2, NULL, NULL, NULL, 3000);
    struct wrec w = {0};
    struct etcd_watch *h = watch_prefix(e, "/t/fo/", 0, 5000, &w);
    ck_assert(run_until(&w.created, 8000));
    int64_t rev = put(e, "/t/fo/c", "2", 0).revision;
    int64_t end = h_now_ms() + 8000;
    while (w.events < 1 && h_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    ck_assert_int_eq(w.rev[w.n - 1], rev);
    etcd_watch_cancel(&h);
    etcd_destroy(&e);
    /* every endpoint dead: EIO with the reason, within the timeout */
    char dead2[64];
    snprintf(dead2, sizeof(dead2), "http://127.0.0.1:%d", dead_port());
    const char *none[] = {dead, dead2};
    e = client(none, 2, NULL, NULL, NULL, 3000);
    struct got f = put(e, "/t/fo/b", "1", 0);
    ck_assert_int_eq(f.status, HKV_EIO);
    ck_assert_msg(strstr(f.message, "refused") != NULL, "%s", f.message);
    etcd_destroy(&e);
}
END_TEST

/* ---- timeouts ---- */

START_TEST(timeouts_fire_against_a_listener_that_never_answers)
{
    NEED_ETCD();
    int port;
    int fd = mute_listener(&port);
    char mute[64];
    snprintf(mute, sizeof(mute), "http://127.0.0.1:%d", port);
    const char *eps[] = {mute};
    struct etcd *e = client(eps, 1, NULL, NULL, NULL, 400);
    /* two calls at once: both answered within their own deadline */
    struct got a = {0}, b = {0};
    int64_t t0 = h_now_ms();
    etcd_put(e, "/t/to/a", 6, "1", 1, 0, on_result, &a);
    etcd_range(e, "/t/to/a", 6, NULL, 0, 0, 0, on_result, &b);
    wait_got(&a, 5000);
    int64_t ta = h_now_ms() - t0;
    wait_got(&b, 5000);
    int64_t tb = h_now_ms() - t0;
    ck_assert_int_eq(a.status, HKV_ETIMEDOUT);
    ck_assert_int_eq(b.status, HKV_ETIMEDOUT);
    ck_assert_msg(ta >= 350 && ta < 2000, "first call answered after %lld ms", (long long)ta);
    ck_assert_msg(tb < 2000, "second call answered after %lld ms", (long long)tb);
    ck_assert_msg(strstr(a.message, "timed out") != NULL, "%s", a.message);
    /* a watch's head has the same deadline */
    struct wrec w = {0};
    struct etcd_watch *h = watch_prefix(e, "/t/to/", 0, 5000, &w);
    t0 = h_now_ms();
    ck_assert(run_until(&w.over, 5000));
    ck_assert_int_lt(h_now_ms() - t0, 2000);
    ck_assert_int_eq(w.n, 1);
    ck_assert_int_eq(w.kind[0], ETCD_W_BROKEN);
    ck_assert_int_eq(w.status[0], HKV_ETIMEDOUT);
    etcd_watch_cancel(&h);
    etcd_destroy(&e);
    /* a mute endpoint first: the call that timed out fails (it may have
     * reached etcd: a txn must not run twice), later calls go on to etcd */
    const char *two[] = {mute, etcd.url};
    e = client(two, 2, NULL, NULL, NULL, 400);
    ck_assert_int_eq(put(e, "/t/to/b", "1", 0).status, HKV_ETIMEDOUT);
    struct got p = put(e, "/t/to/b", "2", 0);
    ck_assert_msg(p.status == HKV_OK, "%d %s", p.status, p.message);
    etcd_destroy(&e);
    close(fd);
}
END_TEST

/* A server that answers each of its first n connections with one canned
 * reply (after reading the request) and closes it; its pid. */
static pid_t canned_server(int fd, const char *const *replies, int n)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        for (int k = 0; k < n; k++) {
            int c = accept(fd, NULL, NULL);
            if (c < 0)
                _exit(1);
            char buf[4096];
            struct timeval tv = {0, 300000};
            setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
            (void)!read(c, buf, sizeof(buf));
            (void)!write(c, replies[k], strlen(replies[k]));
            usleep(100000);
            close(c);
        }
        _exit(0);
    }
    return pid;
}

START_TEST(garbled_or_oversized_answers_are_protocol_errors)
{
    int port;
    int fd = mute_listener(&port);
    const char *replies[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n{",   /* over max_body */
        "SSH-2.0-OpenSSH_9.2\r\n",                                 /* not HTTP */
        "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 9\r\n\r\nnot json!",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n", /* bad chunk */
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}",         /* cut short */
    };
    pid_t srv = canned_server(fd, replies, 5);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    const char *eps[] = {url};
    struct etcd *e = client(eps, 1, NULL, NULL, NULL, 2000);
    const int want[] = {HKV_EPROTO, HKV_EPROTO, HKV_EPROTO, HKV_EPROTO, HKV_EIO};
    for (int k = 0; k < 5; k++) {
        int64_t t0 = h_now_ms();
        struct got g = get(e, "/t/x", NULL);
        ck_assert_msg(g.status == want[k], "reply %d: %d %s", k, g.status, g.message);
        ck_assert_int_lt(h_now_ms() - t0, 1500); /* refused, not timed out */
    }
    etcd_destroy(&e);
    kill(srv, SIGKILL);
    h_wait(srv, 5000);
    close(fd);
}
END_TEST

START_TEST(new_options_move_later_calls)
{
    NEED_ETCD();
    char dead[64];
    snprintf(dead, sizeof(dead), "http://127.0.0.1:%d", dead_port());
    const char *eps[] = {dead};
    struct etcd *e = client(eps, 1, NULL, NULL, NULL, 2000);
    ck_assert_int_eq(put(e, "/t/reload/a", "1", 0).status, HKV_EIO);
    const char *live[] = {etcd.url};
    struct etcd_opts o = {(char *const *)live, 1, NULL, NULL, NULL, 2000, 0, NULL, NULL};
    ck_assert_int_eq(etcd_set_opts(e, &o), HKV_OK);
    ck_assert_str_eq(etcd_endpoint(e), etcd.url);
    ck_assert_int_eq(put(e, "/t/reload/a", "1", 0).status, HKV_OK);
    /* bad new options are refused and the old ones stay */
    const char *bad[] = {"tcp://x"};
    struct etcd_opts ob = {(char *const *)bad, 1, NULL, NULL, NULL, 2000, 0, NULL, NULL};
    ck_assert_int_eq(etcd_set_opts(e, &ob), HKV_EINVAL);
    ck_assert_str_eq(get(e, "/t/reload/a", NULL).vals[0], "1");
    etcd_destroy(&e);
}
END_TEST

START_TEST(etcd_down_and_back_the_client_reconnects)
{
    NEED_ETCD();
    struct etcd *e = local_client();
    ck_assert_int_eq(put(e, "/t/down/a", "1", 0).status, HKV_OK);
    struct wrec w = {0};
    struct etcd_watch *h = watch_prefix(e, "/t/down/", 0, 5000, &w);
    ck_assert(run_until(&w.created, 8000));
    harness_etcd_halt(&etcd);
    /* the watch ends (the stream broke), calls fail fast: nothing listens */
    ck_assert(run_until(&w.over, 8000));
    ck_assert_int_eq(w.kind[w.n - 1], ETCD_W_BROKEN);
    ck_assert_int_eq(w.status[w.n - 1], HKV_EIO);
    etcd_watch_cancel(&h);
    ck_assert_int_eq(get(e, "/t/down/a", NULL).status, HKV_EIO);
    ck_assert_int_eq(harness_etcd_restart(&etcd), 0);
    struct got r = get(e, "/t/down/a", NULL);
    ck_assert_msg(r.status == HKV_OK, "%d %s", r.status, r.message);
    ck_assert_str_eq(r.vals[0], "1"); /* same data */
    etcd_destroy(&e);
}
END_TEST

START_TEST(a_test_that_dies_leaves_no_etcd_behind)
{
    ck_assert_msg(harness_etcd_available(), "etcd-server/etcd-client not installed");
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        struct h_etcd x;
        if (harness_etcd_start(&x, NULL) != 0)
            _exit(2);
        (void)!write(p[1], &x, sizeof(x));
        _exit(1); /* as a failed assertion would: no harness_etcd_stop */
    }
    close(p[1]);
    struct h_etcd x;
    ck_assert_int_eq(read(p[0], &x, sizeof(x)), (ssize_t)sizeof(x));
    close(p[0]);
    h_wait(child, 5000);
    int64_t end = h_now_ms() + 8000;
    while ((h_alive(x.pid) || access(x.dir, F_OK) == 0) && h_now_ms() < end)
        h_sleep_ms(50);
    ck_assert_msg(!h_alive(x.pid), "etcd %d outlived its test", (int)x.pid);
    ck_assert_msg(access(x.dir, F_OK) != 0, "%s left behind", x.dir);
}
END_TEST

/* ---- auth ---- */

static void auth_setup(void)
{
    const char *extra[] = {"--auth-token-ttl=1", NULL};
    etcd_up = harness_etcd_available() && harness_etcd_start(&etcd, extra) == 0;
    char out[1024];
    if (etcd_up && (harness_etcdctl(&etcd, out, sizeof(out), "user", "add", "root:s3cret", NULL) != 0 ||
                    harness_etcdctl(&etcd, out, sizeof(out), "auth", "enable", NULL) != 0)) {
        fprintf(stderr, "etcdctl: %s\n", out);
        etcd_up = 0;
    }
}

START_TEST(auth_works_and_an_expired_token_is_renewed)
{
    NEED_ETCD();
    const char *eps[] = {etcd.url};
    struct etcd *e = client(eps, 1, "root", "s3cret", NULL, 3000);
    struct got p = put(e, "/t/auth/a", "1", 0);
    ck_assert_msg(p.status == HKV_OK, "%d %d %s", p.status, p.code, p.message);
    ck_assert_str_eq(get(e, "/t/auth/a", NULL).vals[0], "1");
    struct wrec w = {0};
    struct etcd_watch *h = watch_prefix(e, "/t/auth/", 0, 5000, &w);
    ck_assert(run_until(&w.created, 8000));
    etcd_watch_cancel(&h);
    /* the token lives 1 s unused: the next call meets "invalid auth token"
     * and goes through after one new authenticate */
    h_sleep_ms(2500);
    struct got r = get(e, "/t/auth/a", NULL);
    ck_assert_msg(r.status == HKV_OK, "%d %d %s", r.status, r.code, r.message);
    ck_assert_str_eq(r.vals[0], "1");
    /* and a watch refused for a stale token is opened again, transparently */
    h_sleep_ms(2500);
    struct wrec w2 = {0};
    h = watch_prefix(e, "/t/auth/", 0, 5000, &w2);
    ck_assert(run_until(&w2.created, 8000));
    ck_assert_int_eq(w2.over, 0);
    int64_t rev = put(e, "/t/auth/b", "2", 0).revision;
    int64_t end = h_now_ms() + 8000;
    while (w2.events < 1 && h_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    ck_assert_int_eq(w2.rev[w2.n - 1], rev);
    etcd_watch_cancel(&h);
    etcd_destroy(&e);
}
END_TEST

START_TEST(wrong_password_or_no_user_fails_cleanly)
{
    NEED_ETCD();
    const char *eps[] = {etcd.url};
    struct etcd *e = client(eps, 1, "root", "wrong", NULL, 3000);
    struct got p = put(e, "/t/auth/x", "1", 0);
    ck_assert_int_eq(p.status, HKV_EINVAL);
    ck_assert_int_eq(p.code, 3);
    ck_assert_msg(strstr(p.message, "authentication failed") != NULL, "%s", p.message);
    struct got q = put(e, "/t/auth/x", "1", 0); /* every call says so, none hangs */
    ck_assert_int_eq(q.status, HKV_EINVAL);
    struct wrec w = {0};
    struct etcd_watch *h = watch_prefix(e, "/t/auth/", 0, 5000, &w);
    ck_assert(run_until(&w.over, 8000));
    ck_assert_int_eq(w.kind[0], ETCD_W_BROKEN);
    ck_assert_int_eq(w.status[0], HKV_EINVAL);
    etcd_watch_cancel(&h);
    etcd_destroy(&e);
    e = client(eps, 1, NULL, NULL, NULL, 3000);
    struct got n = put(e, "/t/auth/x", "1", 0);
    ck_assert_int_eq(n.status, HKV_EINVAL);
    ck_assert_msg(strstr(n.message, "user name is empty") != NULL, "%s", n.message);
    etcd_destroy(&e);
}
END_TEST

/* ---- TLS ---- */

static char pki[256];

static int openssl(char *const argv[])
{
    char out[4096];
    int rc = h_run(argv, NULL, out, sizeof(out), 20000);
    if (rc != 0)
        fprintf(stderr, "%s %s: %s\n", argv[1], argv[2], out);
    return rc;
}

/* <pki>/<name>.crt/.key: a CA (ca NULL) or a leaf with SANs signed by ca. */
static int make_cert(const char *name, const char *ca, const char *san)
{
    char crt[320], key[320], csr[320], ext[320], cacrt[320], cakey[320], subj[64];
    snprintf(crt, sizeof(crt), "%s/%s.crt", pki, name);
    snprintf(key, sizeof(key), "%s/%s.key", pki, name);
    snprintf(subj, sizeof(subj), "/CN=%s", name);
    if (ca == NULL) {
        char *argv[] = {OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", subj,
                        "-keyout", key, "-out", crt, NULL};
        return openssl(argv);
    }
    snprintf(csr, sizeof(csr), "%s/%s.csr", pki, name);
    snprintf(ext, sizeof(ext), "%s/%s.ext", pki, name);
    snprintf(cacrt, sizeof(cacrt), "%s/%s.crt", pki, ca);
    snprintf(cakey, sizeof(cakey), "%s/%s.key", pki, ca);
    FILE *f = fopen(ext, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "subjectAltName=%s\n", san);
    fclose(f);
    char *a1[] = {OPENSSL, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                  "-nodes", "-subj", subj, "-keyout", key, "-out", csr, NULL};
    char *a2[] = {OPENSSL, "x509", "-req", "-in", csr, "-CA", cacrt, "-CAkey", cakey,
                  "-set_serial", "7", "-days", "1", "-extfile", ext, "-out", crt, NULL};
    return openssl(a1) != 0 ? -1 : openssl(a2);
}

static void tls_setup(void)
{
    etcd_up = 0;
    if (!harness_etcd_available() || access(OPENSSL, X_OK) != 0)
        return;
    snprintf(pki, sizeof(pki), "/tmp/hotkvd-test-XXXXXX");
    if (mkdtemp(pki) == NULL || make_cert("ca", NULL, NULL) != 0 ||
        make_cert("otherca", NULL, NULL) != 0 ||
        make_cert("server", "ca", "DNS:localhost,IP:127.0.0.1") != 0 ||
        make_cert("elsewhere", "ca", "DNS:etcd.example") != 0)
        return;
    static char cert[300], key[300];
    snprintf(cert, sizeof(cert), "--cert-file=%s/server.crt", pki);
    snprintf(key, sizeof(key), "--key-file=%s/server.key", pki);
    const char *extra[] = {cert, key, NULL};
    etcd_up = harness_etcd_start(&etcd, extra) == 0;
}

static void tls_teardown(void)
{
    etcd_teardown();
    h_rmtree(pki);
}

START_TEST(tls_with_the_right_ca_and_name_works_and_others_fail)
{
    ck_assert_msg(access(OPENSSL, X_OK) == 0, "openssl not installed");
    NEED_ETCD();
    ck_assert_int_eq(strncmp(etcd.url, "https://", 8), 0);
    char ca[300], other[300], byname[64];
    snprintf(ca, sizeof(ca), "%s/ca.crt", pki);
    snprintf(other, sizeof(other), "%s/otherca.crt", pki);
    snprintf(byname, sizeof(byname), "https://localhost:%d", etcd.port);
    /* by address (IP SAN) and by name (DNS SAN) */
    const char *eps[] = {etcd.url};
    struct etcd *e = client(eps, 1, NULL, NULL, ca, 3000);
    struct got p = put(e, "/t/tls/a", "1", 0);
    ck_assert_msg(p.status == HKV_OK, "%d %s", p.status, p.message);
    struct wrec w = {0};
    struct etcd_watch *h = watch_prefix(e, "/t/tls/", 0, 5000, &w);
    ck_assert(run_until(&w.created, 8000));
    etcd_watch_cancel(&h);
    etcd_destroy(&e);
    const char *named[] = {byname};
    e = client(named, 1, NULL, NULL, ca, 3000);
    ck_assert_str_eq(get(e, "/t/tls/a", NULL).vals[0], "1");
    etcd_destroy(&e);
    /* another CA: the handshake fails, EIO with the reason */
    e = client(eps, 1, NULL, NULL, other, 3000);
    struct got f = put(e, "/t/tls/b", "1", 0);
    ck_assert_int_eq(f.status, HKV_EIO);
    ck_assert_msg(strstr(f.message, "certificate verify failed") != NULL, "%s", f.message);
    etcd_destroy(&e);
    /* the system's CAs do not know ours either */
    e = client(eps, 1, NULL, NULL, NULL, 3000);
    ck_assert_int_eq(put(e, "/t/tls/b", "1", 0).status, HKV_EIO);
    etcd_destroy(&e);
    /* plain HTTP to a TLS port is not an answer */
    char plain[64];
    snprintf(plain, sizeof(plain), "http://127.0.0.1:%d", etcd.port);
    const char *pl[] = {plain};
    e = client(pl, 1, NULL, NULL, NULL, 3000);
    ck_assert_int_ne(put(e, "/t/tls/b", "1", 0).status, HKV_OK);
    etcd_destroy(&e);
    /* a CA file that does not exist is refused up front */
    char err[256];
    struct etcd_opts o = {(char *const *)eps, 1, NULL, NULL, "/nonexistent/ca.crt", 3000, 0, NULL, NULL};
    ck_assert_int_eq(etcd_opts_check(&o, err, sizeof(err)), HKV_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/ca.crt"));
    ck_assert_ptr_null(etcd_create(base, &o));
}
END_TEST

START_TEST(tls_server_named_otherwise_is_refused)
{
    ck_assert_msg(access(OPENSSL, X_OK) == 0, "openssl not installed");
    NEED_ETCD();
    /* a certificate from our CA for another name, served on another etcd:
     * the CA checks out, the name does not */
    struct h_etcd other;
    char cert[300], key[300], ca[300];
    snprintf(cert, sizeof(cert), "--cert-file=%s/elsewhere.crt", pki);
    snprintf(key, sizeof(key), "--key-file=%s/elsewhere.key", pki);
    snprintf(ca, sizeof(ca), "%s/ca.crt", pki);
    const char *extra[] = {cert, key, NULL};
    ck_assert_int_eq(harness_etcd_start(&other, extra), 0);
    const char *eps[] = {other.url};
    struct etcd *e = client(eps, 1, NULL, NULL, ca, 3000);
    struct got f = put(e, "/t/tls/c", "1", 0);
    harness_etcd_stop(&other);
    ck_assert_int_eq(f.status, HKV_EIO);
    ck_assert_msg(strstr(f.message, "certificate verify failed") != NULL, "%s", f.message);
    etcd_destroy(&e);
}
END_TEST

Suite *etcd_net_suite(void)
{
    Suite *s = suite_create("etcd_net");
    TCase *tc = tcase_create("failover");
    tcase_add_unchecked_fixture(tc, etcd_setup, etcd_teardown);
    tcase_add_checked_fixture(tc, loop_setup, loop_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, dead_endpoint_first_fails_over);
    tcase_add_test(tc, timeouts_fire_against_a_listener_that_never_answers);
    tcase_add_test(tc, garbled_or_oversized_answers_are_protocol_errors);
    tcase_add_test(tc, new_options_move_later_calls);
    tcase_add_test(tc, etcd_down_and_back_the_client_reconnects);
    tcase_add_test(tc, a_test_that_dies_leaves_no_etcd_behind);
    suite_add_tcase(s, tc);
    tc = tcase_create("auth");
    tcase_add_unchecked_fixture(tc, auth_setup, etcd_teardown);
    tcase_add_checked_fixture(tc, loop_setup, loop_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, auth_works_and_an_expired_token_is_renewed);
    tcase_add_test(tc, wrong_password_or_no_user_fails_cleanly);
    suite_add_tcase(s, tc);
    tc = tcase_create("tls");
    tcase_add_unchecked_fixture(tc, tls_setup, tls_teardown);
    tcase_add_checked_fixture(tc, loop_setup, loop_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tls_with_the_right_ca_and_name_works_and_others_fail);
    tcase_add_test(tc, tls_server_named_otherwise_is_refused);
    suite_add_tcase(s, tc);
    return s;
}
