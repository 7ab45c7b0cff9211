/*
 * harness_shim.c - starting the daemon under the stall shim
 * (tests/fault/stallfs.c, LD_PRELOAD; see harness.h, h_start_shim) for the
 * suites that make a disk stop answering: the fault tests of the persister
 * (check_disk.c) and an owner that cannot finish opening its files at start
 * (check_http_health.c).
 *
 * The one subtlety is AddressSanitizer: an ASan binary refuses to start
 * unless the ASan runtime is the first preloaded library, so for such a
 * binary LD_PRELOAD is "<libasan>:<shim>" (its interceptors reach the
 * shim's wrappers through RTLD_NEXT), the runtime found where this (ASan)
 * test binary has it mapped.  And a shim that did not load would make a
 * test prove nothing, so the start checks the daemon has it mapped.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/core/topo.h"
#include "tests/harness.h"

extern char **environ;

/* 1 if the ELF file needs the ASan runtime (its name is in .dynstr). */
static int needs_asan(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    static char buf[1 << 16];
    const char *pat = "libasan.so";
    size_t plen = strlen(pat), have = 0, n;
    int found = 0;
    while (!found && (n = fread(buf + have, 1, sizeof(buf) - have, f)) > 0) {
        have += n;
        found = memmem(buf, have, pat, plen) != NULL;
        if (have > plen) { /* keep a tail so a match across reads is seen */
            memmove(buf, buf + have - plen, plen);
            have = plen;
        }
    }
    fclose(f);
    return found;
}

/* Path of the ASan runtime: the one this (ASan) test binary has mapped, else
 * what the compiler names.  0 or -1. */
static int asan_runtime(char *out, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    while (f != NULL && fgets(line, sizeof(line), f)) {
        char *p = strchr(line, '/');
        if (p != NULL && strstr(p, "/libasan.so") != NULL) {
            p[strcspn(p, "\n")] = '\0';
            snprintf(out, len, "%s", p);
            fclose(f);
            return 0;
        }
    }
    if (f != NULL)
        fclose(f);
    FILE *g = popen("gcc -print-file-name=libasan.so 2>/dev/null", "r");
    if (g == NULL)
        return -1;
    int ok = fgets(out, (int)len, g) != NULL;
    pclose(g);
    out[strcspn(out, "\n")] = '\0';
    return ok && out[0] == '/' && access(out, R_OK) == 0 ? 0 : -1;
}

/* h_spawn with several variables: the test's environment minus any
 * LD_PRELOAD / HOTKVD_STALL_FLAG of its own, plus `extra` (NULL-terminated
 * "NAME=value"). */
static pid_t spawn_env(char *const argv[], char *const extra[])
{
    size_t n = 0, k = 0;
    while (environ[n] != NULL)
        n++;
    while (extra[k] != NULL)
        k++;
    char **envp = calloc(n + k + 1, sizeof(char *));
    ck_assert_ptr_nonnull(envp);
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 &&
            strncmp(environ[i], "HOTKVD_STALL_FLAG=", 18) != 0)
            envp[j++] = environ[i];
    for (size_t i = 0; i < k; i++)
        envp[j++] = extra[i];
    envp[j] = NULL;
    const char *bin = h_bin();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execve(bin, argv, envp);
        _exit(127);
    }
    free(envp);
    return pid;
}

/* 1 if process pid has the library at `path` mapped. */
static int has_mapped(pid_t pid, const char *path)
{
    char real[4096], maps[64], line[TOPO_PATH_MAX];
    if (realpath(path, real) == NULL)
        return 0;
    snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
    FILE *f = fopen(maps, "r");
    int found = 0;
    while (f != NULL && !found && fgets(line, sizeof(line), f))
        found = strstr(line, real) != NULL;
    if (f != NULL)
        fclose(f);
    return found;
}

int h_start_shim(struct daemon *d, const char *extra, char *flag, size_t flen)
{
    const char *shim = getenv("HOTKVD_SHIM");
    ck_assert_msg(shim != NULL && access(shim, R_OK) == 0,
                  "the stall shim is not built (HOTKVD_SHIM=%s): make $(BUILD)/tests/fault/stallfs.so",
                  shim != NULL ? shim : "(unset)");
    memset(d, 0, sizeof(*d));
    snprintf(d->dir, sizeof(d->dir), "%s", h_fixture_dir);
    d->port = h_free_port();
    snprintf(d->conf, sizeof(d->conf), "%s/hotkvd.conf", d->dir);
    snprintf(d->log, sizeof(d->log), "%s/hotkvd.log", d->dir);
    snprintf(flag, flen, "%s/stall", d->dir);
    h_write_conf(d, extra);
    char preload[1200], flagenv[600], asan[900];
    if (needs_asan(h_bin())) {
        /* The ASan runtime must be first in the library list; its
         * interceptors reach the shim through RTLD_NEXT. */
        ck_assert_msg(asan_runtime(asan, sizeof(asan)) == 0, "cannot find libasan.so");
        snprintf(preload, sizeof(preload), "LD_PRELOAD=%s:%s", asan, shim);
    } else {
        snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", shim);
    }
    snprintf(flagenv, sizeof(flagenv), "HOTKVD_STALL_FLAG=%s", flag);
    char *argv[] = {"hotkvd", d->conf, NULL};
    char *env[] = {preload, flagenv, NULL};
    d->pid = spawn_env(argv, env);
    int64_t end = h_now_ms() + 20000;
    while (h_now_ms() < end) {
        if (h_ping(d->port)) {
            /* A shim that did not load would make the test prove nothing. */
            ck_assert_msg(has_mapped(d->pid, shim), "the daemon runs without %s (see ld.so's "
                          "message above: a half-written .so?)", shim);
            return 0;
        }
        if (waitpid(d->pid, NULL, WNOHANG) == d->pid) {
            d->pid = 0;
            break;
        }
        h_sleep_ms(25);
    }
    h_dump_log(d);
    return -1;
}
