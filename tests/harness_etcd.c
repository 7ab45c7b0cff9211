/*
 * harness_etcd.c - a real etcd for the tests (see harness.h, "a real etcd"):
 * a one-member cluster on free loopback ports in a temp dir, started and
 * stopped by PID, halted and restarted on the same data, and etcdctl against
 * it.  Its own file because it carries a guardian process: etcd dies with the
 * process that started it (PR_SET_PDEATHSIG), but its data dir would not, so
 * a small process waits for that process to go and removes the dir.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define ETCD_BIN "/usr/bin/etcd"
#define ETCDCTL_BIN "/usr/bin/etcdctl"

int harness_etcd_available(void)
{
    return access(ETCD_BIN, X_OK) == 0 && access(ETCDCTL_BIN, X_OK) == 0;
}

/* 1 when GET /health on port answers {"health":"true"...}. */
static int etcd_healthy(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int ok = 0;
    if (connect(fd, (struct sockaddr *)&in, sizeof(in)) == 0) {
        const char *req = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        char buf[1024];
        size_t n = 0;
        ssize_t r;
        if (write(fd, req, strlen(req)) == (ssize_t)strlen(req)) {
            while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
                n += (size_t)r;
            buf[n] = '\0';
            ok = strstr(buf, "\"health\":\"true\"") != NULL;
        }
    }
    close(fd);
    return ok;
}

/* 1 if a line of the file holds text (from line `from` on). */
static int etcd_log_has(const char *log, const char *text, int from)
{
    FILE *f = fopen(log, "r");
    char line[2048];
    int hit = 0, n = 0;
    while (f != NULL && !hit && fgets(line, sizeof(line), f))
        hit = n++ >= from && strstr(line, text) != NULL;
    if (f != NULL)
        fclose(f);
    return hit;
}

static int etcd_log_lines(const char *log)
{
    FILE *f = fopen(log, "r");
    char line[2048];
    int n = 0;
    while (f != NULL && fgets(line, sizeof(line), f))
        n++;
    if (f != NULL)
        fclose(f);
    return n;
}

/* A process that, once the test process goes away (the pipe reaches EOF:
 * it died, or harness_etcd_stop closed it), kills etcd if it still runs and
 * removes the temp dir. */
static void etcd_guard(struct h_etcd *e)
{
    int p[2];
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[1]);
        char ch;
        while (read(p[0], &ch, 1) != 0) {
        }
        /* etcd died with its parent (PDEATHSIG) or was stopped: make sure
         * before its files go, and only if that pid is still an etcd */
        char path[64], cmd[64] = "";
        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)e->pid);
        FILE *f = e->pid > 0 ? fopen(path, "r") : NULL;
        if (f != NULL) {
            size_t n = fread(cmd, 1, sizeof(cmd) - 1, f);
            cmd[n] = '\0';
            fclose(f);
            if (strcmp(cmd, ETCD_BIN) == 0)
                kill(e->pid, SIGKILL);
        }
        for (int i = 0; i < 50 && e->pid > 0 && kill(e->pid, 0) == 0; i++)
            h_sleep_ms(20);
        h_rmtree(e->dir);
        _exit(0);
    }
    close(p[0]);
    e->guard = pid;
    e->guard_fd = p[1];
}

/* Spawns etcd on e's ports and data and waits until it answers. */
static int etcd_spawn(struct h_etcd *e)
{
    char data[320], log[320], peer[64], cluster[96];
    snprintf(data, sizeof(data), "%s/data", e->dir);
    snprintf(log, sizeof(log), "%s/etcd.log", e->dir);
    snprintf(peer, sizeof(peer), "http://127.0.0.1:%d", e->peer_port);
    snprintf(cluster, sizeof(cluster), "t=%s", peer);
    const char *argv[20 + H_ETCD_MAX_ARGS] = {
        ETCD_BIN, "--name", "t", "--data-dir", data, "--listen-client-urls", e->url,
        "--advertise-client-urls", e->url, "--listen-peer-urls", peer,
        "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster,
        "--experimental-watch-progress-notify-interval=1s"};
    int argc = 16;
    for (int k = 0; k < e->nargs; k++)
        argv[argc++] = e->args[k];
    argv[argc] = NULL;
    int from = etcd_log_lines(log);
    e->pid = fork();
    ck_assert_int_ge(e->pid, 0);
    if (e->pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execv(ETCD_BIN, (char *const *)argv);
        _exit(127);
    }
    int64_t end = h_now_ms() + 20000;
    while (h_now_ms() < end) {
        if (e->tls ? etcd_log_has(log, "ready to serve client requests", from)
                   : etcd_healthy(e->port))
            return 0;
        if (waitpid(e->pid, NULL, WNOHANG) == e->pid) {
            e->pid = 0;
            break;
        }
        h_sleep_ms(100);
    }
    FILE *f = fopen(log, "r");
    char line[1024];
    fprintf(stderr, "---- etcd did not start: %s\n", log);
    while (f != NULL && fgets(line, sizeof(line), f))
        fputs(line, stderr);
    if (f != NULL)
        fclose(f);
    return -1;
}

int harness_etcd_start(struct h_etcd *e, const char *const *extra)
{
    memset(e, 0, sizeof(*e));
    e->guard_fd = -1;
    for (int k = 0; extra != NULL && extra[k] != NULL; k++) {
        ck_assert_int_lt(e->nargs, H_ETCD_MAX_ARGS);
        ck_assert_uint_lt(strlen(extra[k]), sizeof(e->args[0]));
        strcpy(e->args[e->nargs++], extra[k]);
        e->tls |= strncmp(extra[k], "--cert-file", 11) == 0;
    }
    h_tmpdir(e->dir, sizeof(e->dir));
    e->port = h_free_port();
    do
        e->peer_port = h_free_port();
    while (e->peer_port == e->port);
    snprintf(e->url, sizeof(e->url), "%s://127.0.0.1:%d", e->tls ? "https" : "http", e->port);
    if (etcd_spawn(e) != 0) {
        harness_etcd_stop(e);
        return -1;
    }
    etcd_guard(e);
    return 0;
}

int harness_etcd_halt(struct h_etcd *e)
{
    int status = -1;
    if (e->pid > 0) {
        kill(e->pid, SIGTERM);
        status = h_wait(e->pid, 10000);
        if (status == -1) {
            kill(e->pid, SIGKILL);
            status = h_wait(e->pid, 5000);
        }
        e->pid = 0;
    }
    return status;
}

int harness_etcd_restart(struct h_etcd *e)
{
    harness_etcd_halt(e);
    return etcd_spawn(e);
}

int harness_etcd_stop(struct h_etcd *e)
{
    int status = harness_etcd_halt(e);
    if (e->dir[0] != '\0')
        h_rmtree(e->dir);
    if (e->guard > 0) {
        close(e->guard_fd);
        h_wait(e->guard, 5000);
        e->guard = 0;
    }
    e->dir[0] = '\0';
    return status;
}

int harness_etcdctl(const struct h_etcd *e, char *out, size_t len, ...)
{
    char ep[96];
    snprintf(ep, sizeof(ep), "--endpoints=%s", e->url);
    char *argv[32] = {ETCDCTL_BIN, ep};
    int argc = 2;
    va_list ap;
    va_start(ap, len);
    const char *w;
    while ((w = va_arg(ap, const char *)) != NULL && argc < 31)
        argv[argc++] = (char *)w;
    va_end(ap);
    argv[argc] = NULL;
    return h_run(argv, NULL, out, len, 20000);
}
