/*
 * cfg_lex.c - words in and words out: the line splitter and its inverse.
 *
 * cfg_split follows Redis's sdssplitargs, so a redis.conf habit carries over:
 * words split on blanks; "double quotes" take \n \r \t \a \b \\ \" \xHH (any
 * other \c is c); 'single quotes' are literal except \'; a closing quote must
 * be followed by a blank or the end of the line; a line whose first non-blank
 * is # is a comment.  Unlike sdssplitargs a bad \x escape or a NUL byte is an
 * error, because no config value can hold a NUL.  cfg_out_word writes a word so
 * that cfg_split reads exactly it back, which is what makes cfg_serialize's
 * output reload to an equal config.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg_internal.h"

void cfg_out_puts(struct cfg_out *o, const char *s)
{
    if (o->st == HKV_OK)
        o->st = buf_append_str(&o->b, s);
}

void cfg_out_putc(struct cfg_out *o, char ch)
{
    if (o->st == HKV_OK)
        o->st = buf_append(&o->b, &ch, 1);
}

void cfg_out_printf(struct cfg_out *o, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        if (o->st == HKV_OK)
            o->st = HKV_EINVAL;   /* callers format numbers only */
        return;
    }
    cfg_out_puts(o, tmp);
}

static int blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\v' || ch == '\f';
}

void cfg_out_word(struct cfg_out *o, const char *w)
{
    int plain = w[0] != '\0' && w[0] != '#';
    for (const char *p = w; plain && *p; p++)
        if (blank(*p) || *p == '"' || *p == '\'' || *p == '\\' || !isprint((unsigned char)*p))
            plain = 0;
    if (plain) {
        cfg_out_puts(o, w);
        return;
    }
    cfg_out_putc(o, '"');
    for (const unsigned char *p = (const unsigned char *)w; *p; p++) {
        switch (*p) {
        case '\\': cfg_out_puts(o, "\\\\"); break;
        case '"': cfg_out_puts(o, "\\\""); break;
        case '\n': cfg_out_puts(o, "\\n"); break;
        case '\r': cfg_out_puts(o, "\\r"); break;
        case '\t': cfg_out_puts(o, "\\t"); break;
        default:
            if (isprint(*p))
                cfg_out_putc(o, (char)*p);
            else
                cfg_out_printf(o, "\\x%02x", *p);
        }
    }
    cfg_out_putc(o, '"');
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

void cfg_words_free(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    free(argv);
}

/* Appends the word in w (length n) to the vector. */
static hkv_status push_word(int *argc, char ***argv, size_t *cap, struct hkv_buf *w)
{
    if ((size_t)*argc == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        char **nv = realloc(*argv, ncap * sizeof(*nv));
        if (nv == NULL)
            return HKV_ENOMEM;
        *argv = nv;
        *cap = ncap;
    }
    char *s = malloc(w->len + 1);
    if (s == NULL)
        return HKV_ENOMEM;
    if (w->len > 0)
        memcpy(s, w->data, w->len);
    s[w->len] = '\0';
    (*argv)[(*argc)++] = s;
    buf_reset(w);
    return HKV_OK;
}

hkv_status cfg_split(const char *line, size_t len, int *argcp, char ***argvp, char *why)
{
    const char *p = line, *end = line + len;
    struct hkv_buf w = HKV_BUF_INIT;
    char **argv = NULL;
    int argc = 0;
    size_t cap = 0;
    hkv_status st = HKV_OK;

    while (p < end && blank(*p))
        p++;
    if (p < end && *p == '#')
        p = end;
    while (st == HKV_OK) {
        while (p < end && blank(*p))
            p++;
        if (p == end)
            break;
        int inq = 0, insq = 0;
        for (;;) {
            char ch;
            if (p < end && *p == '\0') {
                snprintf(why, CFG_WHY, "NUL byte in line");
                st = HKV_EINVAL;
                break;
            }
            if (inq || insq) {
                if (p == end) {
                    snprintf(why, CFG_WHY, "unterminated quoted string");
                    st = HKV_EINVAL;
                    break;
                }
                if ((inq && *p == '"') || (insq && *p == '\'')) {
                    if (p + 1 < end && !blank(p[1])) {
                        snprintf(why, CFG_WHY, "closing quote must be followed by a space");
                        st = HKV_EINVAL;
                        break;
                    }
                    p++;
                    break;
                }
                ch = *p++;
                if (ch == '\\' && insq && p < end && *p == '\'') {
                    ch = *p++;
                } else if (ch == '\\' && inq && p < end) {
                    ch = *p++;
                    switch (ch) {
                    case 'n': ch = '\n'; break;
                    case 'r': ch = '\r'; break;
                    case 't': ch = '\t'; break;
                    case 'b': ch = '\b'; break;
                    case 'a': ch = '\a'; break;
                    case 'x': {
                        int hi = p + 1 < end ? hexval(p[0]) : -1;
                        int lo = p + 1 < end ? hexval(p[1]) : -1;
                        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                            snprintf(why, CFG_WHY, "bad \\x escape (needs two hex digits, "
                                                   "not 00)");
                            st = HKV_EINVAL;
                            break;
                        }
                        ch = (char)(hi * 16 + lo);
                        p += 2;
                        break;
                    }
                    default: break;
                    }
                    if (st != HKV_OK)
                        break;
                }
            } else {
                if (p == end || blank(*p))
                    break;
                if (*p == '"' || *p == '\'') {
                    inq = *p == '"';
                    insq = *p == '\'';
                    p++;
                    continue;
                }
                ch = *p++;
            }
            if ((st = buf_append(&w, &ch, 1)) != HKV_OK)
                break;
        }
        if (st == HKV_OK)
            st = push_word(&argc, &argv, &cap, &w);
    }
    buf_deinit(&w);
    if (st != HKV_OK) {
        cfg_words_free(argc, argv);
        return st;
    }
    *argcp = argc;
    *argvp = argv;
    return HKV_OK;
}
