/* harness.c - see harness.h. */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t h_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void h_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

uint64_t h_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

char h_fixture_dir[256];

void h_dir_setup(void)
{
    h_tmpdir(h_fixture_dir, sizeof(h_fixture_dir));
}

void h_dir_teardown(void)
{
    /* The owners and edges follow their master out and may still write a
     * file into the dir as it goes: removed again until it stays gone
     * (once, in the usual case), not after a fixed wait. */
    struct stat st;
    int64_t end = h_now_ms() + 2000;
    h_rmtree(h_fixture_dir);
    while (stat(h_fixture_dir, &st) == 0 && h_now_ms() < end) {
        h_sleep_ms(20);
        h_rmtree(h_fixture_dir);
    }
}

const char *h_bin(void)
{
    const char *b = getenv("HOTKVD_BIN");
    return b != NULL ? b : "bin/hotkvd";
}

void h_tmpdir(char *out, size_t len)
{
    snprintf(out, len, "/tmp/hotkvd-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(out));
}

void h_rmtree(const char *dir)
{
    if (strncmp(dir, "/tmp/hotkvd-test-", 17) != 0)
        return; /* never remove anything the harness did not make */
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *de;
    char path[1024];
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            char sub[1024];
            snprintf(sub, sizeof(sub), "%s", path);
            h_rmtree(sub);
        } else {
            unlink(path);
        }
    }
    closedir(d);
    rmdir(dir);
}

int h_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(in);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&in, sizeof(in)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&in, &len), 0);
    close(fd);
    return ntohs(in.sin_port);
}

void h_write_conf(struct daemon *d, const char *extra)
{
    FILE *f = fopen(d->conf, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "bind 127.0.0.1\nport %d\ndir %s\nlogfile %s\nloglevel verbose\n", d->port,
            d->dir, d->log);
    if (extra != NULL)
        fputs(extra, f);
    fclose(f);
}

pid_t h_spawn(char *const argv[], const char *env)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* env: "NAME=value", several separated by newlines */
        for (char *e = env != NULL ? strdup(env) : NULL, *save = NULL, *tok = e != NULL ? strtok_r(e, "\n", &save) : NULL;
             tok != NULL; tok = strtok_r(NULL, "\n", &save))
            putenv(tok);
        /* If the test process dies (a Check timeout kills it), the daemon's
         * master dies with it, and its children follow the master. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execv(h_bin(), argv);
        _exit(127);
    }
    return pid;
}

int h_wait(pid_t pid, int ms)
{
    int64_t end = h_now_ms() + ms;
    int status;
    while (h_now_ms() < end) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r < 0)
            return -1;
        h_sleep_ms(20);
    }
    return -1;
}

int h_sanitized(void)
{
    const char *v = getenv("HOTKVD_VARIANT");
    return v != NULL && strcmp(v, "asan") == 0;
}

int h_alive(pid_t pid)
{
    if (kill(pid, 0) != 0)
        return 0;
    /* A zombie is not alive: read its state. */
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    return p != NULL && p[1] == ' ' && p[2] != 'Z';
}

void h_dump_log(const struct daemon *d)
{
    FILE *f = fopen(d->log, "r");
    if (f == NULL)
        return;
    char line[1024];
    fprintf(stderr, "---- %s\n", d->log);
    while (fgets(line, sizeof(line), f))
        fputs(line, stderr);
    fclose(f);
}

/* 1 when INFO processes shows every child serving (ready=1). */
static int all_ready(int port)
{
    int fd = h_connect(port);
    if (fd < 0)
        return 0;
    struct h_reply *r = h_cmdv(fd, "INFO", "processes", NULL);
    close(fd);
    /* A daemon that requires AUTH answers NOAUTH: it serves, and this check
     * cannot see more, so take its PING as the answer. */
    int ok = r != NULL && (r->v->type == RESP_ERROR ||
                           (r->v->str != NULL && strstr(r->v->str, "slot0:") != NULL &&
                            strstr(r->v->str, "ready=0") == NULL));
    h_free(r);
    return ok;
}

int h_start(struct daemon *d, const char *extra)
{
    memset(d, 0, sizeof(*d));
    h_tmpdir(d->dir, sizeof(d->dir));
    d->port = h_free_port();
    snprintf(d->conf, sizeof(d->conf), "%s/hotkvd.conf", d->dir);
    snprintf(d->log, sizeof(d->log), "%s/hotkvd.log", d->dir);
    h_write_conf(d, extra);
    char *argv[] = {"hotkvd", d->conf, NULL};
    d->pid = h_spawn(argv, NULL);
    int64_t end = h_now_ms() + 10000;
    while (h_now_ms() < end) {
        /* Serving means every child is up, not just the edge that answered. */
        if (h_ping(d->port) && all_ready(d->port))
            return 0;
        if (waitpid(d->pid, NULL, WNOHANG) == d->pid) {
            d->pid = 0;
            break;
        }
        h_sleep_ms(25);
    }
    h_dump_log(d);
    return -1;
}

int h_children(const struct daemon *d, pid_t *pids, int max)
{
    int fd = h_connect(d->port);
    if (fd < 0)
        return 0;
    struct h_reply *r = h_cmdv(fd, "INFO", "processes", NULL);
    close(fd);
    int n = 0;
    if (r == NULL)
        return 0;
    const char *p = r->v->str;
    while (p != NULL && (p = strstr(p, "pid=")) != NULL && n < max) {
        int pid = atoi(p + 4);
        if (pid > 0)
            pids[n++] = pid;
        p += 4;
    }
    h_free(r);
    return n;
}

int h_restart(struct daemon *d)
{
    char *argv[] = {"hotkvd", d->conf, NULL};
    d->pid = h_spawn(argv, NULL);
    int64_t end = h_now_ms() + 10000;
    while (h_now_ms() < end) {
        if (h_ping(d->port))
            return 0;
        if (waitpid(d->pid, NULL, WNOHANG) == d->pid) {
            d->pid = 0;
            break;
        }
        struct timespec ts = {0, 25 * 1000000L};
        nanosleep(&ts, NULL);
    }
    h_dump_log(d);
    return -1;
}

/* The children of pid from /proc (every thread's "children" list), not
 * from INFO: a daemon whose edges do not answer (stopped, still waiting for
 * the agent, AUTH required) would hold h_halt for h_connect's whole 5 s
 * timeout, and name no child to kill. */
static int proc_children(pid_t pid, pid_t *out, int max)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (dir == NULL)
        return 0;
    int n = 0;
    struct dirent *e;
    while (n < max && (e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char cpath[300];
        snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children", (int)pid, e->d_name);
        FILE *f = fopen(cpath, "r");
        if (f == NULL)
            continue;
        int c;
        while (n < max && fscanf(f, "%d", &c) == 1)
            out[n++] = c;
        fclose(f);
    }
    closedir(dir);
    return n;
}

int h_halt(struct daemon *d)
{
    int status = -1;
    pid_t kids[64];
    int nk = d->pid > 0 ? proc_children(d->pid, kids, 64) : 0;
    if (d->pid > 0) {
        kill(d->pid, SIGTERM);
        status = h_wait(d->pid, 15000);
        if (status == -1) {
            kill(d->pid, SIGKILL);
            h_wait(d->pid, 5000);
        }
    }
    for (int i = 0; i < nk; i++)
        if (h_alive(kids[i]))
            kill(kids[i], SIGKILL);
    if (status != 0)
        h_dump_log(d);
    d->pid = 0;
    return status;
}

pid_t h_child(const struct daemon *d, const char *prefix, pid_t not)
{
    pid_t kids[64];
    int n = h_children(d, kids, 64);
    for (int i = 0; i < n; i++) {
        char path[64], buf[256] = "";
        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)kids[i]);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        size_t len = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[len] = '\0';
        if (strncmp(buf, prefix, strlen(prefix)) == 0 && kids[i] != not)
            return kids[i];
    }
    return 0;
}

int h_stop(struct daemon *d)
{
    int status = h_halt(d);
    h_rmtree(d->dir);
    return status;
}

int h_log_has(const struct daemon *d, const char *a, const char *b, const char *c)
{
    FILE *f = fopen(d->log, "r");
    if (f == NULL)
        return 0;
    char line[2048];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, a) != NULL && (b == NULL || strstr(line, b) != NULL) &&
                (c == NULL || strstr(line, c) != NULL);
    fclose(f);
    return found;
}

int h_sigcont_guard(pid_t a, pid_t b, pid_t *guard)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[1]);
        char ch;
        for (int i = 0; i < 1000 && read(p[0], &ch, 1) != 0; i++)
            ;
        if (a > 0)
            kill(a, SIGCONT);
        if (b > 0)
            kill(b, SIGCONT);
        _exit(0);
    }
    close(p[0]);
    if (guard != NULL)
        *guard = pid;
    return p[1];
}

int h_edge_pair(const struct daemon *d, int *a, int *b)
{
    *a = h_connect(d->port);
    int pa = *a >= 0 ? h_edge_of(*a) : -1;
    if (pa <= 0) {
        if (*a >= 0)
            close(*a);
        return -1;
    }
    kill(pa, SIGSTOP);
    *b = h_connect(d->port);
    int pb = *b >= 0 ? h_edge_of(*b) : -1;
    kill(pa, SIGCONT);
    if (pb > 0 && pb != pa)
        return 0;
    close(*a);
    if (*b >= 0)
        close(*b);
    return -1;
}

/* ---- external commands ---- */

int h_run(char *const argv[], const char *in, char *out, size_t len, int ms)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(in != NULL ? in : "/dev/null", O_RDONLY);
        dup2(fd, 0);
        dup2(p[1], 1);
        dup2(p[1], 2);
        close(p[0]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    size_t n = 0;
    int64_t end = h_now_ms() + ms;
    int status = -1, done = 0;
    while (h_now_ms() < end) {
        ssize_t r = read(p[0], out + n, len - 1 - n);
        if (r > 0 && n + (size_t)r < len - 1) {
            n += (size_t)r;
            continue;
        }
        if (r > 0)
            n += (size_t)r;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            done = 1;
            while (n < len - 1 && (r = read(p[0], out + n, len - 1 - n)) > 0)
                n += (size_t)r;
            break;
        }
        usleep(10000);
    }
    if (!done) {
        kill(pid, SIGKILL);
        h_wait(pid, 2000);
    }
    close(p[0]);
    out[n] = '\0';
    if (!done || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

long long h_edges_generation(const struct daemon *d)
{
    char *text = h_info_processes(d->port);
    if (text == NULL)
        return -1;
    long long low = -1;
    for (char *line = strtok(text, "\r\n"); line != NULL; line = strtok(NULL, "\r\n")) {
        const char *g = strstr(line, "config_generation=");
        if (strncmp(line, "slot", 4) != 0 || strstr(line, "role=edge,") == NULL || g == NULL)
            continue;
        long long v = atoll(g + strlen("config_generation="));
        if (low < 0 || v < low)
            low = v;
    }
    free(text);
    return low;
}

int h_private_net(char *ip, size_t len)
{
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode != NULL && strcmp(fork_mode, "no") == 0)
        return -1; /* the namespace would outlive this test */
    if (unshare(CLONE_NEWNET) != 0)
        return -1;
    char out[512];
    char *up[] = {"/sbin/ip", "link", "set", "lo", "up", NULL};
    char *add[] = {"/sbin/ip", "addr", "add", "198.18.0.2/32", "dev", "lo", NULL};
    if (h_run(up, NULL, out, sizeof(out), 5000) != 0 || h_run(add, NULL, out, sizeof(out), 5000) != 0)
        return -1;
    snprintf(ip, len, "198.18.0.2");
    return 0;
}

long h_proc_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long v = -1;
    size_t fl = strlen(field);
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
            v = strtol(line + fl + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}
