/*
 * resp.c - the RESP request parser (multibulk and inline), see resp.h.
 *
 * This is the hot path of every client command, so it is a resumable state
 * machine over one contiguous buffer that always starts at the request's first
 * byte.  Progress is kept as offsets from that start (p->pos: the next byte to
 * parse; p->scanned: how far the current line search has looked), never as
 * pointers, because the caller may compact or realloc its buffer between calls.
 * A request fed one byte at a time therefore costs O(total bytes), and gives
 * exactly the result one call with everything would: every limit is phrased
 * in terms of where the newline is, not of how many bytes happened to arrive.
 *
 * Nothing is sized from a length the client declared: `*1000000` allocates
 * nothing, the argument arrays double as bulks actually arrive, and a bulk
 * body is only waited for (its bytes are left in the caller's buffer).  The
 * arrays are reused across requests, so steady state does no malloc; they are
 * dropped at the start of the next request after an unusually large one.
 *
 * Behaviour follows Redis 7.0 processMultibulkBuffer/processInlineBuffer and
 * its error texts (a count `*0` or below is an empty request, skipped), with
 * two deliberate differences: a bulk not followed by CRLF is an error (Redis
 * skips two bytes blindly), and a `$` header is checked as soon as its first
 * byte arrives.
 */
#include "proto/resp.h"
#include "proto/num.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum {
    ST_START = 0,   /* nothing seen of this request */
    ST_INLINE,      /* waiting for the inline line's '\n' */
    ST_MB_COUNT,    /* waiting for the `*N` line's CRLF */
    ST_BULK_LEN,    /* waiting for a `$L` line */
    ST_BULK_DATA,   /* waiting for L bytes and CRLF */
};

#define RESP_DEF_MAX_BULK   (512LL * 1024 * 1024)
#define RESP_DEF_MAX_ARGS   (1024LL * 1024)
#define RESP_DEF_MAX_INLINE (64LL * 1024)
#define RESP_ARGV_KEEP      1024    /* arrays larger than this are not kept */
#define RESP_SCRATCH_KEEP   4096

#define E_PREFIX "ERR Protocol error: "
static const char E_MBULK_LEN[] = E_PREFIX "invalid multibulk length";
static const char E_BULK_LEN[] = E_PREFIX "invalid bulk length";
static const char E_BULK_CRLF[] = E_PREFIX "expected CRLF after bulk data";
static const char E_BIG_INLINE[] = E_PREFIX "too big inline request";
static const char E_BIG_MBULK[] = E_PREFIX "too big mbulk count string";
static const char E_BIG_BULK[] = E_PREFIX "too big bulk count string";
static const char E_QUOTES[] = E_PREFIX "unbalanced quotes in request";
static const char E_HTTP[] = E_PREFIX "HTTP request on the Redis port";
static const char E_INLINE_ARGS[] = E_PREFIX "too many arguments in inline request";
static const char E_NOMEM[] = "ERR out of memory";

void resp_parser_init(struct resp_parser *p, const struct resp_limits *lim)
{
    memset(p, 0, sizeof(*p));
    p->lim.max_bulk = lim && lim->max_bulk > 0 ? lim->max_bulk : RESP_DEF_MAX_BULK;
    p->lim.max_args = lim && lim->max_args > 0 ? lim->max_args : RESP_DEF_MAX_ARGS;
    if (p->lim.max_args > INT_MAX)
        p->lim.max_args = INT_MAX;
    p->lim.max_inline = lim && lim->max_inline > 0 ? lim->max_inline : RESP_DEF_MAX_INLINE;
    p->bulklen = -1;
}

void resp_parser_deinit(struct resp_parser *p)
{
    free(p->offs);
    free(p->argv);
    free(p->scratch);
    p->offs = NULL;
    p->argv = NULL;
    p->scratch = NULL;
    p->cap = 0;
    p->scratch_cap = 0;
    resp_parser_reset(p);
}

void resp_parser_reset(struct resp_parser *p)
{
    p->state = ST_START;
    p->nargs = 0;
    p->bulklen = -1;
    p->pos = 0;
    p->scanned = 0;
    p->argc = 0;
}

/* Makes room for argument number p->argc (doubling). */
static int grow_args(struct resp_parser *p)
{
    if (p->argc < p->cap)
        return HKV_OK;
    int cap = p->cap ? p->cap * 2 : 8;
    size_t *offs = realloc(p->offs, (size_t)cap * sizeof(*offs));
    if (offs == NULL)
        return HKV_ENOMEM;
    p->offs = offs;
    struct resp_slice *argv = realloc(p->argv, (size_t)cap * sizeof(*argv));
    if (argv == NULL)
        return HKV_ENOMEM;
    p->argv = argv;
    p->cap = cap;
    return HKV_OK;
}

/* Called between requests: lets go of memory one large request needed. */
static void trim_memory(struct resp_parser *p)
{
    if (p->cap > RESP_ARGV_KEEP) {
        free(p->offs);
        free(p->argv);
        p->offs = NULL;
        p->argv = NULL;
        p->cap = 0;
    }
    if (p->scratch_cap > RESP_SCRATCH_KEEP) {
        free(p->scratch);
        p->scratch = NULL;
        p->scratch_cap = 0;
    }
}


/* Finds the CRLF ending the header line that starts at `ls`.  HKV_OK with
 * *cr at the '\r' (the '\n' after it is present but not checked);
 * HKV_EAGAIN; HKV_ETOOBIG when the line is longer than max_inline. */
static int find_header_end(struct resp_parser *p, const char *buf, size_t len,
                           size_t ls, size_t *cr)
{
    size_t from = p->scanned > ls ? p->scanned : ls;
    const char *r = from < len ? memchr(buf + from, '\r', len - from) : NULL;
    if (r == NULL) {
        p->scanned = len;
        return len - ls > (size_t)p->lim.max_inline ? HKV_ETOOBIG : HKV_EAGAIN;
    }
    size_t i = (size_t)(r - buf);
    if (i - ls > (size_t)p->lim.max_inline)
        return HKV_ETOOBIG;
    if (i + 1 >= len) {
        p->scanned = i;
        return HKV_EAGAIN;
    }
    *cr = i;
    return HKV_OK;
}

/* sdssplitargs's two notions of blank: isspace() between arguments, and a
 * narrower set that ends an unquoted argument. */
static inline int is_blank(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static inline int ends_plain(unsigned char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\0';
}

/* The line's byte i, or NUL past its end (sdssplitargs reads a C string). */
#define AT(i) ((i) < n ? (unsigned char)s[i] : 0u)

/* Decodes one argument with quotes, from s[i] (the first byte of the
 * argument) into p->scratch at *out.  Returns the index after the argument
 * or (size_t)-1 for unbalanced quotes. */
static size_t decode_quoted(struct resp_parser *p, const char *s, size_t n, size_t i,
                            size_t *out)
{
    char *d = p->scratch;
    size_t o = *out;
    int inq = 0, insq = 0;

    for (;;) {
        unsigned char c = AT(i);
        if (inq) {
            if (c == '\\' && AT(i + 1) == 'x' && num_hexval((unsigned char)AT(i + 2)) >= 0 &&
                num_hexval((unsigned char)AT(i + 3)) >= 0) {
                d[o++] = (char)(num_hexval((unsigned char)AT(i + 2)) * 16 + num_hexval((unsigned char)AT(i + 3)));
                i += 4;
            } else if (c == '\\' && AT(i + 1) != 0) {
                unsigned char e = AT(i + 1);
                switch (e) {
                case 'n': e = '\n'; break;
                case 'r': e = '\r'; break;
                case 't': e = '\t'; break;
                case 'b': e = '\b'; break;
                case 'a': e = '\a'; break;
                default: break;
                }
                d[o++] = (char)e;
                i += 2;
            } else if (c == '"') {
                if (AT(i + 1) != 0 && !is_blank(AT(i + 1)))
                    return (size_t)-1;
                i++;
                break;
            } else if (c == 0) {
                return (size_t)-1;
            } else {
                d[o++] = (char)c;
                i++;
            }
        } else if (insq) {
            if (c == '\\' && AT(i + 1) == '\'') {
                d[o++] = '\'';
                i += 2;
            } else if (c == '\'') {
                if (AT(i + 1) != 0 && !is_blank(AT(i + 1)))
                    return (size_t)-1;
                i++;
                break;
            } else if (c == 0) {
                return (size_t)-1;
            } else {
                d[o++] = (char)c;
                i++;
            }
        } else if (ends_plain(c)) {
            break;
        } else if (c == '"') {
            inq = 1;
            i++;
        } else if (c == '\'') {
            insq = 1;
            i++;
        } else {
            d[o++] = (char)c;
            i++;
        }
    }
    *out = o;
    return i;
}

/* Splits an inline line s[0..n) into p->argv.  Unquoted arguments point
 * into s; quoted ones are decoded into p->scratch, sized once per line (the
 * decoded bytes never outnumber the line's) so those pointers stay valid. */
static int split_inline(struct resp_parser *p, const char *s, size_t n, const char **errmsg)
{
    size_t i = 0, out = 0;
    p->argc = 0;
    for (;;) {
        while (i < n && is_blank((unsigned char)s[i]))
            i++;
        if (i >= n || s[i] == '\0')
            return HKV_OK;
        if (p->argc >= p->lim.max_args) {
            *errmsg = E_INLINE_ARGS;
            return HKV_ETOOBIG;
        }
        if (grow_args(p) != HKV_OK) {
            *errmsg = E_NOMEM;
            return HKV_ENOMEM;
        }
        size_t st = i;
        while (i < n && !ends_plain((unsigned char)s[i]) && s[i] != '"' && s[i] != '\'')
            i++;
        if (i >= n || ends_plain((unsigned char)s[i])) {
            p->argv[p->argc].p = s + st;
            p->argv[p->argc].len = i - st;
            p->argc++;
            continue;
        }
        if (p->scratch_cap < n) {
            /* Only before the first quoted argument of the line: out == 0. */
            char *sc = realloc(p->scratch, n);
            if (sc == NULL) {
                *errmsg = E_NOMEM;
                return HKV_ENOMEM;
            }
            p->scratch = sc;
            p->scratch_cap = n;
        }
        size_t first = out;
        i = decode_quoted(p, s, n, st, &out);
        if (i == (size_t)-1) {
            *errmsg = E_QUOTES;
            return HKV_EPROTO;
        }
        p->argv[p->argc].p = p->scratch + first;
        p->argv[p->argc].len = out - first;
        p->argc++;
    }
}

#undef AT

static int slice_eq(const struct resp_slice *a, const char *s)
{
    size_t n = strlen(s);
    return a->len == n && memcmp(a->p, s, n) == 0;
}

static int slice_caseeq(const struct resp_slice *a, const char *s)
{
    size_t n = strlen(s);
    return a->len == n && strncasecmp(a->p, s, n) == 0;
}

/* Redis closes on a "POST" or "Host:" command (a browser or an HTTP client
 * pointed at the port, possibly a cross-protocol attack); a plain
 * `GET /path HTTP/1.x` is the same thing. */
static int looks_like_http(const struct resp_parser *p)
{
    if (p->argc < 1)
        return 0;
    const struct resp_slice *a = p->argv;
    if (slice_caseeq(&a[0], "POST") || slice_caseeq(&a[0], "Host:"))
        return 1;
    return p->argc == 3 && slice_eq(&a[0], "GET") && a[1].len > 0 && a[1].p[0] == '/' &&
           a[2].len == 8 && memcmp(a[2].p, "HTTP/1.", 7) == 0 &&
           a[2].p[7] >= '0' && a[2].p[7] <= '9';
}

static int parse_inline(struct resp_parser *p, const char *buf, size_t len,
                        size_t *consumed, struct resp_req *req, const char **errmsg)
{
    size_t from = p->scanned;
    const char *nl = from < len ? memchr(buf + from, '\n', len - from) : NULL;
    if (nl == NULL) {
        p->scanned = len;
        if (len > (size_t)p->lim.max_inline) {
            *errmsg = E_BIG_INLINE;
            return HKV_ETOOBIG;
        }
        return HKV_EAGAIN;
    }
    size_t i = (size_t)(nl - buf);
    if (i > (size_t)p->lim.max_inline) {
        *errmsg = E_BIG_INLINE;
        return HKV_ETOOBIG;
    }
    size_t n = i > 0 && buf[i - 1] == '\r' ? i - 1 : i;
    int rc = split_inline(p, buf, n, errmsg);
    if (rc != HKV_OK)
        return rc;
    if (looks_like_http(p)) {
        *errmsg = E_HTTP;
        return HKV_EPROTO;
    }
    req->argc = p->argc;
    req->argv = p->argv;
    *consumed = i + 1;
    resp_parser_reset(p);
    return HKV_OK;
}

/* Reports that a byte other than '$' starts a bulk header. */
static const char *expected_dollar(struct resp_parser *p, unsigned char c)
{
    if (c == '\r' || c == '\n' || c == '\0')
        c = ' ';
    snprintf(p->errbuf, sizeof(p->errbuf), E_PREFIX "expected '$', got '%c'", c);
    return p->errbuf;
}

int resp_parse(struct resp_parser *p, const char *buf, size_t len, size_t *consumed,
               struct resp_req *req, const char **errmsg)
{
    size_t cr = 0;
    int64_t v;
    int rc;

    *consumed = 0;
    if (p->pos > len || p->scanned > len)  /* not the buffer we were given */
        resp_parser_reset(p);

    for (;;) {
        switch (p->state) {
        case ST_START:
            if (len == 0)
                return HKV_EAGAIN;
            trim_memory(p);
            p->argc = 0;
            p->scanned = 0;
            if (buf[0] != '*') {
                p->state = ST_INLINE;
                return parse_inline(p, buf, len, consumed, req, errmsg);
            }
            p->state = ST_MB_COUNT;
            p->scanned = 1;
            /* fall through */
        case ST_MB_COUNT:
            rc = find_header_end(p, buf, len, 0, &cr);
            if (rc == HKV_ETOOBIG) {
                *errmsg = E_BIG_MBULK;
                return rc;
            }
            if (rc != HKV_OK)
                return rc;
            if (buf[cr + 1] != '\n' || !num_parse_ll(buf + 1, cr - 1, &v) || v > INT_MAX) {
                *errmsg = E_MBULK_LEN;
                return HKV_EPROTO;
            }
            if (v > p->lim.max_args) {
                *errmsg = E_MBULK_LEN;
                return HKV_ETOOBIG;
            }
            p->pos = cr + 2;
            if (v <= 0) {
                req->argc = 0;
                req->argv = p->argv;
                *consumed = p->pos;
                resp_parser_reset(p);
                return HKV_OK;
            }
            p->nargs = v;
            p->state = ST_BULK_LEN;
            p->scanned = p->pos;
            /* fall through */
        case ST_BULK_LEN:
            if (p->pos >= len)
                return HKV_EAGAIN;
            if (buf[p->pos] != '$') {
                *errmsg = expected_dollar(p, (unsigned char)buf[p->pos]);
                return HKV_EPROTO;
            }
            rc = find_header_end(p, buf, len, p->pos, &cr);
            if (rc == HKV_ETOOBIG) {
                *errmsg = E_BIG_BULK;
                return rc;
            }
            if (rc != HKV_OK)
                return rc;
            if (buf[cr + 1] != '\n' || !num_parse_ll(buf + p->pos + 1, cr - p->pos - 1, &v) ||
                v < 0) {
                *errmsg = E_BULK_LEN;
                return HKV_EPROTO;
            }
            if (v > p->lim.max_bulk) {
                *errmsg = E_BULK_LEN;
                return HKV_ETOOBIG;
            }
            p->bulklen = v;
            p->pos = cr + 2;
            p->state = ST_BULK_DATA;
            /* fall through */
        case ST_BULK_DATA: {
            size_t need = (size_t)p->bulklen + 2;
            if (len - p->pos < need)
                return HKV_EAGAIN;
            size_t end = p->pos + (size_t)p->bulklen;
            if (buf[end] != '\r' || buf[end + 1] != '\n') {
                *errmsg = E_BULK_CRLF;
                return HKV_EPROTO;
            }
            if (grow_args(p) != HKV_OK) {
                *errmsg = E_NOMEM;
                return HKV_ENOMEM;
            }
            p->offs[p->argc] = p->pos;
            p->argv[p->argc].len = (size_t)p->bulklen;
            p->argc++;
            p->pos = end + 2;
            p->bulklen = -1;
            if (p->argc < p->nargs) {
                p->state = ST_BULK_LEN;
                p->scanned = p->pos;
                continue;
            }
            for (int i = 0; i < p->argc; i++)
                p->argv[i].p = buf + p->offs[i];
            req->argc = p->argc;
            req->argv = p->argv;
            *consumed = p->pos;
            resp_parser_reset(p);
            return HKV_OK;
        }
        case ST_INLINE:
            return parse_inline(p, buf, len, consumed, req, errmsg);
        default:
            resp_parser_reset(p);
            break;
        }
    }
}
