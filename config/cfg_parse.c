/*
 * cfg_parse.c - files, lines and includes: from text to option values.
 *
 * A file is read whole (at most 16 MB, so no line length limit applies below
 * that) and split into lines; each line into words (cfg_lex.c); each word list
 * is either `include` or a directive from the option table.  An include path
 * that is relative resolves against the directory of the file that names it,
 * the way a reader of that file would read it.  The loader keeps the real
 * paths of the files it is inside: opening one of them again is a loop, and
 * more than CFG_INCLUDE_DEPTH of them is refused, so neither a loop nor a deep
 * chain can exhaust anything.  The first error stops the load; its message
 * names the file and line the reader has to fix.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/cfg_internal.h"

struct loader {
    struct cfg *c;
    struct cfg_error *err;
    char *stack[CFG_INCLUDE_DEPTH];   /* real paths of the files being read */
    int depth;
};

/* "FILE:LINE: reason", "FILE: reason" (line 0) or "reason" (no file). */
static void fail(struct cfg_error *err, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(struct cfg_error *err, const char *file, int line, const char *fmt, ...)
{
    char reason[CFG_WHY + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    if (err == NULL)
        return;
    if (file != NULL && line > 0)
        snprintf(err->msg, sizeof(err->msg), "%s:%d: %s", file, line, reason);
    else if (file != NULL)
        snprintf(err->msg, sizeof(err->msg), "%s: %s", file, reason);
    else
        snprintf(err->msg, sizeof(err->msg), "%s", reason);
}

static hkv_status load_path(struct loader *L, const char *path, const char *from, int line);

/* Runs one directive.  `base` is the directory prefix for a relative include
 * ("" = the working directory), or NULL where include is refused. */
static hkv_status run_words(struct loader *L, int argc, char **argv, const char *origin,
                            int line, const char *base)
{
    char why[CFG_WHY], g[48];
    const char *name = argv[0];
    if (strncmp(name, "--", 2) == 0 && line == 0)
        name += 2;   /* command-line form */
    if (strcasecmp(name, "include") == 0) {
        if (argc != 2) {
            fail(L->err, origin, line, "'include' takes 1 argument, got %d", argc - 1);
            return HKV_EINVAL;
        }
        if (base == NULL) {
            fail(L->err, origin, line, "'include' is not allowed here (no file to be relative to)");
            return HKV_EINVAL;
        }
        if (argv[1][0] == '/' || base[0] == '\0')
            return load_path(L, argv[1], origin, line);
        size_t n = strlen(base) + strlen(argv[1]) + 1;
        char *full = malloc(n);
        if (full == NULL) {
            fail(L->err, origin, line, "out of memory");
            return HKV_ENOMEM;
        }
        snprintf(full, n, "%s%s", base, argv[1]);
        hkv_status st = load_path(L, full, origin, line);
        free(full);
        return st;
    }
    const struct cfg_option *o = cfg_option_find(name);
    if (o == NULL) {
        fail(L->err, origin, line, "unknown directive '%s'", cfg_show(name, g, sizeof(g)));
        return HKV_EINVAL;
    }
    hkv_status st = cfg_opt_apply(L->c, o, argc - 1, argv + 1, why);
    if (st == HKV_OK) {
        char where[CFG_WHY];
        if (line > 0)
            snprintf(where, sizeof(where), "%s:%d", origin, line);
        else
            snprintf(where, sizeof(where), "%s", origin);
        st = cfg_origin_set(L->c, o, where);
    }
    if (st == HKV_ENOMEM)
        fail(L->err, origin, line, "out of memory");
    else if (st != HKV_OK)
        fail(L->err, origin, line, "%s", why);
    return st;
}

static hkv_status parse_text(struct loader *L, const char *text, size_t len, const char *origin,
                             const char *base)
{
    const char *p = text, *end = text + len;
    int line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        char why[CFG_WHY], **argv = NULL;
        int argc = 0;
        line++;
        hkv_status st = cfg_split(p, (size_t)(eol - p), &argc, &argv, why);
        if (st != HKV_OK) {
            fail(L->err, origin, line, "%s", st == HKV_ENOMEM ? "out of memory" : why);
            return st;
        }
        if (argc > 0)
            st = run_words(L, argc, argv, origin, line, base);
        cfg_words_free(argc, argv);
        if (st != HKV_OK)
            return st;
        p = nl ? nl + 1 : end;
    }
    return HKV_OK;
}

/* Reads the whole file into a malloc'd buffer; errno-style failure in *why. */
static hkv_status slurp(const char *path, char **data, size_t *len, char *why)
{
    char eb[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, CFG_WHY, "cannot open '%s': %s", path, strerror_r(errno, eb, sizeof(eb)));
        return HKV_EIO;
    }
    hkv_status st = HKV_OK;
    struct stat sb;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    if (fstat(fd, &sb) != 0) {
        snprintf(why, CFG_WHY, "cannot read '%s': %s", path, strerror_r(errno, eb, sizeof(eb)));
        st = HKV_EIO;
        goto out;
    }
    if (S_ISDIR(sb.st_mode)) {
        snprintf(why, CFG_WHY, "cannot read '%s': is a directory", path);
        st = HKV_EIO;
        goto out;
    }
    if (S_ISREG(sb.st_mode) && sb.st_size > (off_t)CFG_FILE_MAX) {
        snprintf(why, CFG_WHY, "'%s' is larger than %u MB", path, CFG_FILE_MAX >> 20);
        st = HKV_EINVAL;
        goto out;
    }
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, cap + 1);
            if (nb == NULL) {
                snprintf(why, CFG_WHY, "out of memory");
                st = HKV_ENOMEM;
                goto out;
            }
            buf = nb;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(why, CFG_WHY, "cannot read '%s': %s", path,
                     strerror_r(errno, eb, sizeof(eb)));
            st = HKV_EIO;
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > CFG_FILE_MAX) {
            snprintf(why, CFG_WHY, "'%s' is larger than %u MB", path, CFG_FILE_MAX >> 20);
            st = HKV_EINVAL;
            goto out;
        }
    }
out:
    close(fd);
    if (st != HKV_OK) {
        free(buf);
        return st;
    }
    *data = buf;
    *len = n;
    return HKV_OK;
}

static hkv_status load_path(struct loader *L, const char *path, const char *from, int line)
{
    char why[CFG_WHY];
    if (L->depth >= CFG_INCLUDE_DEPTH) {
        fail(L->err, from, line, "includes nested deeper than %d files at '%s'",
             CFG_INCLUDE_DEPTH, path);
        return HKV_EINVAL;
    }
    char *data = NULL;
    size_t len = 0;
    hkv_status st = slurp(path, &data, &len, why);
    if (st != HKV_OK) {
        fail(L->err, from, line, "%s", why);
        return st == HKV_ENOMEM ? st : HKV_EINVAL;
    }
    char *real = realpath(path, NULL);
    char *base = NULL;
    if (real == NULL) {
        fail(L->err, from, line, "cannot resolve '%s'", path);
        st = HKV_EINVAL;
        goto out;
    }
    for (int i = 0; i < L->depth; i++) {
        if (strcmp(L->stack[i], real) == 0) {
            fail(L->err, from, line, "include loop: '%s' is already being read", path);
            st = HKV_EINVAL;
            goto out;
        }
    }
    /* the directory prefix of `path` as given, "" when it has none */
    const char *slash = strrchr(path, '/');
    size_t blen = slash ? (size_t)(slash - path) + 1 : 0;
    if ((base = malloc(blen + 1)) == NULL) {
        fail(L->err, from, line, "out of memory");
        st = HKV_ENOMEM;
        goto out;
    }
    memcpy(base, path, blen);
    base[blen] = '\0';
    L->stack[L->depth++] = real;
    st = parse_text(L, data, len, path, base);
    L->depth--;
out:
    free(base);
    free(real);
    if (data != NULL)
        explicit_bzero(data, len);   /* it may hold passwords (requirepass, user) */
    free(data);
    return st;
}

hkv_status cfg_load_file(struct cfg *c, const char *path, struct cfg_error *err)
{
    struct loader L = { .c = c, .err = err, .depth = 0 };
    return load_path(&L, path, NULL, 0);
}

hkv_status cfg_load_text(struct cfg *c, const char *text, size_t len, const char *origin,
                         struct cfg_error *err)
{
    struct loader L = { .c = c, .err = err, .depth = 0 };
    if (len > CFG_FILE_MAX) {
        fail(err, origin, 0, "config text is larger than %u MB", CFG_FILE_MAX >> 20);
        return HKV_EINVAL;
    }
    return parse_text(&L, text, len, origin, NULL);
}

hkv_status cfg_apply(struct cfg *c, int argc, char **argv, const char *origin,
                     struct cfg_error *err)
{
    struct loader L = { .c = c, .err = err, .depth = 0 };
    if (argc < 1 || argv[0] == NULL) {
        fail(err, origin, 0, "no directive given");
        return HKV_EINVAL;
    }
    return run_words(&L, argc, argv, origin, 0, "");
}
