/* harness.c - see harness.h. */
#include "harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
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
        if (env != NULL)
            putenv((char *)env);
        setpgid(0, 0); /* a group of its own: Check's cleanup cannot hit it by accident */
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
        sleep_ms(20);
    }
    return -1;
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
        if (h_ping(d->port))
            return 0;
        if (waitpid(d->pid, NULL, WNOHANG) == d->pid) {
            d->pid = 0;
            break;
        }
        sleep_ms(25);
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

int h_stop(struct daemon *d)
{
    int status = -1;
    pid_t kids[64];
    int nk = d->pid > 0 ? h_children(d, kids, 64) : 0;
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
    h_rmtree(d->dir);
    d->pid = 0;
    return status;
}

int h_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&in, sizeof(in)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int h_send(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

struct h_reply *h_read(int fd)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        struct resp_value *v = NULL;
        size_t used = 0;
        if (len > 0) {
            int rc = resp_parse_reply(buf, len, &used, &v);
            if (rc == HKV_OK) {
                struct h_reply *r = calloc(1, sizeof(*r));
                r->v = v;
                r->raw = buf;
                return r;
            }
            if (rc != HKV_EAGAIN)
                break;
        }
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        /* Read byte-wise past the first chunk would be slow; one reply per
         * call is all the tests need, so read what is there. */
        ssize_t n = recv(fd, buf + len, 1, 0);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    free(buf);
    return NULL;
}

struct h_reply *h_cmd(int fd, int argc, const char **argv)
{
    struct hkv_buf b = HKV_BUF_INIT;
    resp_add_array(&b, argc);
    for (int i = 0; i < argc; i++)
        resp_add_bulk(&b, argv[i], strlen(argv[i]));
    int rc = h_send(fd, buf_head(&b), buf_unread(&b));
    buf_deinit(&b);
    return rc == 0 ? h_read(fd) : NULL;
}

struct h_reply *h_cmdv(int fd, ...)
{
    const char *words[64];
    int n = 0;
    va_list ap;
    va_start(ap, fd);
    const char *w;
    while (n < 64 && (w = va_arg(ap, const char *)) != NULL)
        words[n++] = w;
    va_end(ap);
    return h_cmd(fd, n, words);
}

void h_free(struct h_reply *r)
{
    if (r == NULL)
        return;
    resp_value_free(&r->v);
    free(r->raw);
    free(r);
}

int h_info_field(int port, const char *field, char *out, size_t len)
{
    int fd = h_connect(port);
    if (fd < 0)
        return -1;
    struct h_reply *r = h_cmdv(fd, "INFO", "all", NULL);
    close(fd);
    if (r == NULL)
        return -1;
    char key[128];
    snprintf(key, sizeof(key), "\n%s:", field);
    int rc = -1;
    /* Search from the byte before the text so the first line matches too. */
    const char *text = r->v->str;
    size_t tlen = r->v->len;
    char *copy = malloc(tlen + 2);
    copy[0] = '\n';
    memcpy(copy + 1, text, tlen);
    copy[tlen + 1] = '\0';
    const char *p = strstr(copy, key);
    if (p != NULL) {
        p += strlen(key);
        size_t n = strcspn(p, "\r\n");
        if (n >= len)
            n = len - 1;
        memcpy(out, p, n);
        out[n] = '\0';
        rc = 0;
    }
    free(copy);
    h_free(r);
    return rc;
}

int64_t h_info_int(int port, const char *field)
{
    char buf[64];
    if (h_info_field(port, field, buf, sizeof(buf)) != 0)
        return -1;
    return strtoll(buf, NULL, 10);
}

int h_ping(int port)
{
    int fd = h_connect(port);
    if (fd < 0)
        return 0;
    struct h_reply *r = h_cmdv(fd, "PING", NULL);
    close(fd);
    int ok = r != NULL && r->v->type == RESP_SIMPLE && r->v->len == 4 &&
             memcmp(r->v->str, "PONG", 4) == 0;
    h_free(r);
    return ok;
}
