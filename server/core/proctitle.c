/*
 * proctitle.c - see proctitle.h.  Linux shows /proc/PID/cmdline from the
 * original argv area; argv and environ are contiguous, so after moving
 * environ to the heap the whole span is ours to overwrite.
 */
#include "proctitle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

extern char **environ;

static char *orig_area;   /* argv[0]'s original storage, reused for the title */
static size_t orig_len;
/* Every environment string copied, kept here too: unsetenv() drops entries
 * from environ, and the strings must live (and stay reachable) regardless. */
static char **volatile env_copies; /* volatile: written only, must not be optimised away */
static char **volatile env_array; /* the array we made environ; setenv may replace it */

void proctitle_init(int argc, char **argv)
{
    if (argc <= 0 || argv == NULL || argv[0] == NULL)
        return;
    char *end = argv[0] + strlen(argv[0]);
    for (int i = 1; i < argc; i++)
        if (argv[i] == end + 1)
            end = argv[i] + strlen(argv[i]);
    size_t nenv = 0;
    while (environ[nenv] != NULL)
        nenv++;
    for (size_t i = 0; i < nenv; i++)
        if (environ[i] == end + 1)
            end = environ[i] + strlen(environ[i]);

    char **newenv = calloc(nenv + 1, sizeof(char *));
    env_copies = calloc(nenv + 1, sizeof(char *));
    if (newenv == NULL || env_copies == NULL)
        return;
    for (size_t i = 0; i < nenv; i++)
        newenv[i] = env_copies[i] = strdup(environ[i]);
    char *area = argv[0];
    for (int i = 0; i < argc; i++)
        argv[i] = strdup(argv[i]);
    /* These copies live as long as the process: they are its argv and environ. */
    environ = env_array = newenv;
    orig_area = area;
    orig_len = (size_t)(end - area) + 1;
}

void proctitle_set(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    prctl(PR_SET_NAME, buf + (strncmp(buf, "hotkvd: ", 8) == 0 ? 8 : 0), 0, 0, 0);
    if (orig_area == NULL || orig_len < 2)
        return;
    size_t n = strlen(buf);
    if (n >= orig_len)
        n = orig_len - 1;
    memcpy(orig_area, buf, n);
    memset(orig_area + n, 0, orig_len - n);
}
