/*
 * check_process.c - the master/worker process model against the real binary:
 * start and stop, restarts, master death, reload, systemd notify, and the
 * start-up errors a user can cause.
 */
#include <check.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"

/* Polls until the port answers PING, up to ms. */
static int serving_within(int port, int ms)
{
    int64_t end = h_now_ms() + ms;
    while (h_now_ms() < end) {
        if (h_ping(port))
            return 1;
        h_sleep_ms(50);
    }
    return 0;
}

static pid_t child_with_title(const struct daemon *d, const char *prefix)
{
    return h_child(d, prefix, 0);
}

START_TEST(sigterm_exits_zero_and_leaves_no_child)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 2\nhot-owners 1\ncold-owners 1\n"), 0);
    pid_t kids[64];
    int n = h_children(&d, kids, 64);
    ck_assert_int_eq(n, 4);
    int status = h_stop(&d);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    for (int i = 0; i < n; i++)
        ck_assert_msg(!h_alive(kids[i]), "child %d survived SIGTERM", (int)kids[i]);
}
END_TEST

START_TEST(info_reports_server_and_clients)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 2\nhot-owners 1\ncold-owners 2\n"), 0);
    char buf[64];
    ck_assert_int_eq(h_info_field(d.port, "hotkvd_version", buf, sizeof(buf)), 0);
    ck_assert_int_eq(h_info_int(d.port, "process_id"), d.pid);
    ck_assert_int_ge(h_info_int(d.port, "uptime_in_seconds"), 0);
    ck_assert_int_eq(h_info_int(d.port, "config_generation"), 1);
    ck_assert_int_eq(h_info_int(d.port, "config_reload_failures"), 0);
    ck_assert_int_eq(h_info_int(d.port, "edge_workers"), 2);
    ck_assert_int_eq(h_info_int(d.port, "owners"), 3);
    /* Redis's Server fields that clients and their test harnesses read
     * (redis-py's stops without arch_bits) */
    ck_assert_int_eq(h_info_int(d.port, "arch_bits"), (int64_t)sizeof(void *) * 8);
    ck_assert_int_eq(h_info_field(d.port, "multiplexing_api", buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "epoll");
    ck_assert_int_eq(h_info_field(d.port, "process_supervised", buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "no");
    char conf[600], exe[600], run_id[64], again[64];
    ck_assert_int_eq(h_info_field(d.port, "config_file", conf, sizeof(conf)), 0);
    char real[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(d.conf, real));
    ck_assert_str_eq(conf, real);
    ck_assert_int_eq(h_info_field(d.port, "executable", exe, sizeof(exe)), 0);
    ck_assert_msg(exe[0] == '/' && access(exe, X_OK) == 0, "executable %s", exe);
    ck_assert_int_eq(h_info_field(d.port, "run_id", run_id, sizeof(run_id)), 0);
    ck_assert_uint_eq(strlen(run_id), 40);
    ck_assert_uint_eq(strspn(run_id, "0123456789abcdef"), 40);
    for (int i = 0; i < 6; i++) { /* every edge answers the same run */
        ck_assert_int_eq(h_info_field(d.port, "run_id", again, sizeof(again)), 0);
        ck_assert_str_eq(again, run_id);
    }
    int64_t usec = h_info_int(d.port, "server_time_usec");
    ck_assert_int_gt(usec, (int64_t)time(NULL) * 1000000 - 60000000);
    ck_assert_int_lt(usec, (int64_t)time(NULL) * 1000000 + 60000000);
    /* LASTSAVE: the start before any commit, then the newest commit's time */
    int fd = h_connect(d.port);
    struct h_reply *ls = h_cmdv(fd, "LASTSAVE", NULL);
    ck_assert(ls != NULL && ls->v->type == RESP_INT);
    int64_t first = ls->v->integer;
    h_free(ls);
    ck_assert_int_le(first, (int64_t)time(NULL));
    ck_assert_int_ge(first, (int64_t)time(NULL) - 60);
    h_sleep_ms(1100);
    h_free(h_cmdv(fd, "SET", "lastsave-key", "v", NULL));
    int64_t later = first;
    for (int i = 0; i < 60 && later <= first; i++) { /* persist-interval: 1 s */
        h_sleep_ms(100);
        ls = h_cmdv(fd, "LASTSAVE", NULL);
        ck_assert(ls != NULL && ls->v->type == RESP_INT);
        later = ls->v->integer;
        h_free(ls);
    }
    ck_assert_msg(later > first && later <= (int64_t)time(NULL),
                  "LASTSAVE %lld after a write (start %lld)", (long long)later, (long long)first);
    close(fd);
    int fd1 = h_connect(d.port), fd2 = h_connect(d.port);
    ck_assert(fd1 >= 0 && fd2 >= 0);
    struct h_reply *r = h_cmdv(fd1, "PING", NULL);
    h_free(r);
    r = h_cmdv(fd2, "PING", NULL);
    h_free(r);
    /* The two held connections plus the one INFO itself opens; the count is
     * the colo's, and an earlier INFO's connection may still be on its way
     * out at another edge (CI: 4 once): polled, bounded. */
    long long clients = 0;
    for (int i = 0; i < 40 && (clients = h_info_int(d.port, "connected_clients")) != 3; i++)
        h_sleep_ms(50);
    ck_assert_int_eq(clients, 3);
    r = h_cmdv(fd1, "QUIT", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->v->type, RESP_SIMPLE);
    h_free(r);
    char c;
    ck_assert_int_eq(recv(fd1, &c, 1, 0), 0); /* QUIT closed it */
    close(fd1);
    close(fd2);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

START_TEST(process_titles_name_every_role)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\ncolo east\n"), 0);
    ck_assert_int_ne(child_with_title(&d, "hotkvd: edge east/0"), 0);
    ck_assert_int_ne(child_with_title(&d, "hotkvd: owner hot/0"), 0);
    ck_assert_int_ne(child_with_title(&d, "hotkvd: owner cold/0"), 0);
    char path[64], buf[64] = "";
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)d.pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    ck_assert_str_eq(buf, "hotkvd: master");
    h_stop(&d);
}
END_TEST

START_TEST(killed_edge_is_restarted_and_serves)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\n"), 0);
    pid_t edge = child_with_title(&d, "hotkvd: edge");
    ck_assert_int_ne(edge, 0);
    kill(edge, SIGKILL);
    h_sleep_ms(50);
    ck_assert(serving_within(d.port, 5000));
    pid_t again = child_with_title(&d, "hotkvd: edge");
    ck_assert_int_ne(again, 0);
    ck_assert_int_ne(again, edge);
    int logged = h_log_has(&d, "killed by signal 9", "restarting", NULL);
    ck_assert_msg(logged, "the restart was not logged with the signal");
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

START_TEST(killed_owner_is_restarted)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\n"), 0);
    pid_t owner = child_with_title(&d, "hotkvd: owner hot/0");
    ck_assert_int_ne(owner, 0);
    kill(owner, SIGKILL);
    int64_t end = h_now_ms() + 5000;
    pid_t again = 0;
    while (h_now_ms() < end) {
        again = child_with_title(&d, "hotkvd: owner hot/0");
        if (again != 0 && again != owner)
            break;
        h_sleep_ms(50);
    }
    ck_assert_int_ne(again, 0);
    ck_assert_int_ne(again, owner);
    ck_assert(h_ping(d.port));
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

START_TEST(killed_master_leaves_no_child)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 2\nhot-owners 1\ncold-owners 1\n"), 0);
    pid_t kids[64];
    int n = h_children(&d, kids, 64);
    ck_assert_int_eq(n, 4);
    kill(d.pid, SIGKILL);
    h_wait(d.pid, 2000);
    d.pid = 0;
    int64_t end = h_now_ms() + 2000;
    int left = n;
    while (h_now_ms() < end && left > 0) {
        left = 0;
        for (int i = 0; i < n; i++)
            left += h_alive(kids[i]);
        h_sleep_ms(50);
    }
    for (int i = 0; i < n; i++)
        if (h_alive(kids[i]))
            kill(kids[i], SIGKILL);
    ck_assert_msg(left == 0, "%d children outlived the master by 2 s", left);
    ck_assert(!h_ping(d.port));
    h_stop(&d);
}
END_TEST

START_TEST(sighup_with_good_file_applies_new_generation)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "maxclients 100\n"), 0);
    int fd = h_connect(d.port); /* held open: a reload must not drop it */
    ck_assert_int_ge(fd, 0);
    h_write_conf(&d, "maxclients 200\n");
    kill(d.pid, SIGHUP);
    int64_t end = h_now_ms() + 5000;
    while (h_now_ms() < end && h_info_int(d.port, "config_generation") != 2)
        h_sleep_ms(50);
    ck_assert_int_eq(h_info_int(d.port, "config_generation"), 2);
    end = h_now_ms() + 5000;
    while (h_now_ms() < end && h_info_int(d.port, "maxclients") != 200)
        h_sleep_ms(50);
    ck_assert_int_eq(h_info_int(d.port, "maxclients"), 200);
    struct h_reply *r = h_cmdv(fd, "PING", NULL);
    ck_assert_ptr_nonnull(r);
    h_free(r);
    close(fd);
    ck_assert_int_eq(h_info_int(d.port, "config_reload_failures"), 0);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

START_TEST(sighup_with_broken_file_keeps_old_config)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "maxclients 100\n"), 0);
    h_write_conf(&d, "maxclients 300\nnot-a-directive 1\n");
    kill(d.pid, SIGHUP);
    int64_t end = h_now_ms() + 5000;
    while (h_now_ms() < end && h_info_int(d.port, "config_reload_failures") != 1)
        h_sleep_ms(50);
    ck_assert_int_eq(h_info_int(d.port, "config_reload_failures"), 1);
    ck_assert_int_eq(h_info_int(d.port, "config_generation"), 1);
    ck_assert_int_eq(h_info_int(d.port, "maxclients"), 100);
    ck_assert(h_ping(d.port));
    int named = h_log_has(&d, "reload refused", "hotkvd.conf:", NULL);
    ck_assert_msg(named, "the refused reload was not logged with file:line");
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

START_TEST(restart_only_change_is_reported_not_applied)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 1\n"), 0);
    h_write_conf(&d, "edge-workers 3\n");
    kill(d.pid, SIGHUP);
    int64_t end = h_now_ms() + 5000;
    while (h_now_ms() < end && h_info_int(d.port, "config_generation") != 2)
        h_sleep_ms(50);
    ck_assert_int_eq(h_info_int(d.port, "edge_workers"), 1);
    int said = h_log_has(&d, "edge-workers", "restart", NULL);
    ck_assert(said);
    h_stop(&d);
}
END_TEST

START_TEST(config_set_applies_to_every_edge_and_refuses_paths)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 2\nmaxclients 100\n"), 0);
    int fd = h_connect(d.port);
    struct h_reply *r = h_cmdv(fd, "CONFIG", "SET", "maxclients", "321", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->v->type, RESP_SIMPLE);
    h_free(r);
    /* In effect in the edge that answered, at once. */
    r = h_cmdv(fd, "CONFIG", "GET", "maxclients", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->v->type, RESP_ARRAY);
    ck_assert_int_eq((int)r->v->n, 2);
    ck_assert_int_eq((int)r->v->elems[1].len, 3);
    ck_assert(memcmp(r->v->elems[1].str, "321", 3) == 0);
    h_free(r);
    /* And daemon-wide as a new generation: every new connection agrees. */
    int64_t end = h_now_ms() + 5000;
    while (h_now_ms() < end && h_info_int(d.port, "config_generation") != 2)
        h_sleep_ms(20);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(h_info_int(d.port, "maxclients"), 321);
    r = h_cmdv(fd, "CONFIG", "SET", "dir", "/tmp", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->v->type, RESP_ERROR);
    h_free(r);
    r = h_cmdv(fd, "CONFIG", "SET", "port", "1", NULL);
    ck_assert_int_eq(r->v->type, RESP_ERROR);
    h_free(r);
    r = h_cmdv(fd, "CONFIG", "SET", "maxclients", "many", NULL);
    ck_assert_int_eq(r->v->type, RESP_ERROR);
    h_free(r);
    ck_assert_int_eq(h_info_int(d.port, "config_generation"), 2);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

/* logrotate moves the file and sends SIGHUP: every process writes to a new
 * file at the configured path from then on. */
START_TEST(sighup_reopens_a_rotated_log_file)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\n"), 0);
    char rotated[400];
    snprintf(rotated, sizeof(rotated), "%s.1", d.log);
    ck_assert_int_eq(rename(d.log, rotated), 0);
    kill(d.pid, SIGHUP);
    int64_t end = h_now_ms() + 5000;
    int found = 0;
    while (h_now_ms() < end && !found) {
        FILE *f = fopen(d.log, "r");
        char line[1024];
        while (f != NULL && fgets(line, sizeof(line), f))
            found |= strstr(line, "config generation 2") != NULL;
        if (f != NULL)
            fclose(f);
        if (!found)
            h_sleep_ms(50);
    }
    ck_assert_msg(found, "nothing was written to a new %s after SIGHUP", d.log);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}
END_TEST

/* ---- systemd notify ---- */

static int recv_until(int sock, const char *want, int ms, char *all, size_t len)
{
    int64_t end = h_now_ms() + ms;
    while (h_now_ms() < end) {
        char buf[1024];
        ssize_t n = recv(sock, buf, sizeof(buf) - 1, MSG_DONTWAIT);
        if (n > 0) {
            buf[n] = '\0';
            strncat(all, buf, len - strlen(all) - 2);
            strncat(all, "|", len - strlen(all) - 1);
            if (strstr(buf, want) != NULL)
                return 1;
            continue;
        }
        h_sleep_ms(20);
    }
    return 0;
}

START_TEST(notify_socket_receives_ready_reloading_stopping)
{
    struct daemon d;
    memset(&d, 0, sizeof(d));
    h_tmpdir(d.dir, sizeof(d.dir));
    d.port = h_free_port();
    snprintf(d.conf, sizeof(d.conf), "%s/hotkvd.conf", d.dir);
    snprintf(d.log, sizeof(d.log), "%s/hotkvd.log", d.dir);
    h_write_conf(&d, "edge-workers 1\nhot-owners 1\ncold-owners 1\n");
    char sockpath[300], env[400];
    snprintf(sockpath, sizeof(sockpath), "%s/notify.sock", d.dir);
    int s = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    strcpy(un.sun_path, sockpath);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&un, sizeof(un)), 0);
    /* WATCHDOG_USEC as systemd sets it with WatchdogSec: the master pings at
     * half the interval while every child's heartbeat is fresh. */
    snprintf(env, sizeof(env), "NOTIFY_SOCKET=%s\nWATCHDOG_USEC=400000", sockpath);
    char *argv[] = {"hotkvd", d.conf, NULL};
    d.pid = h_spawn(argv, env);
    char seen[4096] = "";
    ck_assert_msg(recv_until(s, "READY=1", 10000, seen, sizeof(seen)), "no READY: %s", seen);
    ck_assert(h_ping(d.port)); /* READY means serving */
    char sup[32];
    ck_assert_int_eq(h_info_field(d.port, "process_supervised", sup, sizeof(sup)), 0);
    ck_assert_str_eq(sup, "systemd");
    ck_assert_msg(recv_until(s, "WATCHDOG=1", 3000, seen, sizeof(seen)), "no WATCHDOG: %s", seen);
    kill(d.pid, SIGHUP);
    ck_assert_msg(recv_until(s, "RELOADING=1", 5000, seen, sizeof(seen)), "no RELOADING: %s", seen);
    ck_assert(strstr(seen, "MONOTONIC_USEC=") != NULL);
    ck_assert_msg(recv_until(s, "READY=1", 5000, seen, sizeof(seen)), "no READY after reload");
    kill(d.pid, SIGTERM);
    ck_assert_msg(recv_until(s, "STOPPING=1", 5000, seen, sizeof(seen)), "no STOPPING: %s", seen);
    int status = h_wait(d.pid, 15000);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    d.pid = 0;
    close(s);
    h_stop(&d);
}
END_TEST

/* ---- start-up errors ---- */

/* Runs the binary to completion; returns the exit code, stderr in err. */
static int run_capture(char *const argv[], char *err, size_t len)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 2);
        dup2(p[1], 1);
        close(p[0]);
        execv(h_bin(), argv);
        _exit(127);
    }
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    while (n < len - 1 && (r = read(p[0], err + n, len - 1 - n)) > 0)
        n += (size_t)r;
    err[n] = '\0';
    close(p[0]);
    int status = h_wait(pid, 10000);
    if (status == -1) {
        kill(pid, SIGKILL);
        h_wait(pid, 1000);
        return -1;
    }
    ck_assert_msg(WIFEXITED(status), "crashed: status 0x%x", status);
    return WEXITSTATUS(status);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

START_TEST(missing_config_is_one_line_error)
{
    char out[4096];
    char *argv[] = {"hotkvd", "/nonexistent/hotkvd.conf", NULL};
    ck_assert_int_eq(run_capture(argv, out, sizeof(out)), 1);
    ck_assert_int_eq(count_lines(out), 1);
    ck_assert_ptr_nonnull(strstr(out, "/nonexistent/hotkvd.conf"));
}
END_TEST

START_TEST(port_in_use_is_one_line_error)
{
    int port = h_free_port();
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(0x7f000001)};
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&in, sizeof(in)), 0);
    ck_assert_int_eq(listen(fd, 1), 0);
    char dir[256], portstr[16], out[4096];
    h_tmpdir(dir, sizeof(dir));
    snprintf(portstr, sizeof(portstr), "%d", port);
    char *argv[] = {"hotkvd", "--port", portstr, "--dir", dir, NULL};
    ck_assert_int_eq(run_capture(argv, out, sizeof(out)), 1);
    ck_assert_msg(strstr(out, "Address already in use") != NULL, "got: %s", out);
    ck_assert_int_eq(count_lines(out), 1);
    close(fd);
    h_rmtree(dir);
}
END_TEST

START_TEST(unwritable_data_dir_is_one_line_error)
{
    char dir[256], file[300], portstr[16], out[4096];
    h_tmpdir(dir, sizeof(dir));
    snprintf(file, sizeof(file), "%s/plainfile", dir);
    FILE *f = fopen(file, "w");
    fclose(f);
    snprintf(portstr, sizeof(portstr), "%d", h_free_port());
    char *argv[] = {"hotkvd", "--port", portstr, "--dir", file, NULL};
    ck_assert_int_eq(run_capture(argv, out, sizeof(out)), 1);
    ck_assert_msg(strstr(out, "not a directory") != NULL, "got: %s", out);
    h_rmtree(dir);
}
END_TEST

START_TEST(test_config_flag_validates)
{
    char dir[256], good[300], bad[300], out[4096];
    h_tmpdir(dir, sizeof(dir));
    snprintf(good, sizeof(good), "%s/good.conf", dir);
    snprintf(bad, sizeof(bad), "%s/bad.conf", dir);
    FILE *f = fopen(good, "w");
    fputs("port 7000\n", f);
    fclose(f);
    f = fopen(bad, "w");
    fputs("port 7000\nport notanumber\n", f);
    fclose(f);
    char *a1[] = {"hotkvd", "--test-config", good, NULL};
    ck_assert_int_eq(run_capture(a1, out, sizeof(out)), 0);
    char *a2[] = {"hotkvd", "--test-config", bad, NULL};
    ck_assert_int_eq(run_capture(a2, out, sizeof(out)), 1);
    ck_assert_msg(strstr(out, "bad.conf:2") != NULL, "got: %s", out);
    char *a3[] = {"hotkvd", "--version", NULL};
    ck_assert_int_eq(run_capture(a3, out, sizeof(out)), 0);
    ck_assert_ptr_nonnull(strstr(out, "hotkvd "));
    h_rmtree(dir);
}
END_TEST

Suite *process_suite(void)
{
    Suite *s = suite_create("process");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"sigterm", sigterm_exits_zero_and_leaves_no_child},
        {"info", info_reports_server_and_clients},
        {"titles", process_titles_name_every_role},
        {"edge_restart", killed_edge_is_restarted_and_serves},
        {"owner_restart", killed_owner_is_restarted},
        {"master_death", killed_master_leaves_no_child},
        {"reload_good", sighup_with_good_file_applies_new_generation},
        {"reload_bad", sighup_with_broken_file_keeps_old_config},
        {"reload_restart_only", restart_only_change_is_reported_not_applied},
        {"config_set", config_set_applies_to_every_edge_and_refuses_paths},
        {"logrotate", sighup_reopens_a_rotated_log_file},
        {"notify", notify_socket_receives_ready_reloading_stopping},
        {"missing_config", missing_config_is_one_line_error},
        {"port_in_use", port_in_use_is_one_line_error},
        {"bad_dir", unwritable_data_dir_is_one_line_error},
        {"test_config", test_config_flag_validates},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
