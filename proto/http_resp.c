/*
 * http_resp.c - the HTTP/1.1 response parser and chunked decoder (see
 * http_resp.h).
 *
 * Both machines advance one byte at a time through the head and the framing
 * (those are short and every byte there is a decision), and hand out the body
 * as slices of the caller's input without copying.  The head's lines are
 * gathered in a fixed buffer inside the parser, because a header can arrive
 * split anywhere; the chunked framing needs no buffer at all: a size is built
 * digit by digit and extensions and trailers are only counted and skipped.
 * Results never depend on how the input was split, only on the bytes: that is
 * the property the unit tests and the fuzz target check.
 */
#include "proto/http_resp.h"

#include <string.h>
#include <strings.h>

#include "proto/num.h"

enum {
    C_SIZE,        /* hex digits of a chunk size */
    C_SIZE_WS,     /* white space after the digits */
    C_EXT,         /* a chunk extension, skipped */
    C_SIZE_LF,     /* the LF after the size line's CR */
    C_DATA,        /* chunk bytes */
    C_DATA_CR,     /* the CR after a chunk's data */
    C_DATA_LF,
    C_TRAILER,     /* a trailer line (or the final empty line) */
    C_TRAILER_LF,
    C_DONE,
};

/* A byte that may appear inside a header, trailer or extension line. */
static int line_byte_ok(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7F);
}

void http_chunked_init(struct http_chunked *c)
{
    memset(c, 0, sizeof(*c));
    c->state = C_SIZE;
}

int http_chunked_step(struct http_chunked *c, const char *in, size_t len, size_t *used,
                      const char **data, size_t *dlen)
{
    size_t i = 0;
    while (i < len) {
        char ch = in[i];
        switch (c->state) {
        case C_SIZE: {
            int h = num_hexval((unsigned char)ch);
            if (h >= 0) {
                if (c->digits >= 15)
                    return HKV_ETOOBIG; /* 2^60 bytes is no chunk of ours */
                c->left = c->left << 4 | (uint64_t)h;
                c->digits++;
            } else if (c->digits == 0) {
                return HKV_EPROTO;
            } else if (ch == ';') {
                c->state = C_EXT;
            } else if (ch == ' ' || ch == '\t') {
                c->state = C_SIZE_WS;
            } else if (ch == '\r') {
                c->state = C_SIZE_LF;
            } else {
                return HKV_EPROTO;
            }
            break;
        }
        case C_SIZE_WS:
            if (ch == ';')
                c->state = C_EXT;
            else if (ch == '\r')
                c->state = C_SIZE_LF;
            else if (ch != ' ' && ch != '\t')
                return HKV_EPROTO;
            break;
        case C_EXT:
            if (ch == '\r')
                c->state = C_SIZE_LF;
            else if (!line_byte_ok((unsigned char)ch))
                return HKV_EPROTO;
            break;
        case C_SIZE_LF:
            if (ch != '\n')
                return HKV_EPROTO;
            c->line = 0;
            c->digits = 0;
            c->state = c->left > 0 ? C_DATA : C_TRAILER;
            i++;
            continue;
        case C_DATA: {
            size_t n = len - i;
            if ((uint64_t)n > c->left)
                n = (size_t)c->left;
            c->left -= n;
            if (c->left == 0)
                c->state = C_DATA_CR;
            *data = in + i;
            *dlen = n;
            *used = i + n;
            return HTTP_EV_DATA;
        }
        case C_DATA_CR:
            if (ch != '\r')
                return HKV_EPROTO;
            c->state = C_DATA_LF;
            break;
        case C_DATA_LF:
            if (ch != '\n')
                return HKV_EPROTO;
            c->state = C_SIZE;
            c->line = 0;
            i++;
            continue;
        case C_TRAILER:
            if (ch == '\r') {
                c->state = C_TRAILER_LF;
            } else if (!line_byte_ok((unsigned char)ch)) {
                return HKV_EPROTO;
            } else if (c->line == 0 && (ch == ' ' || ch == '\t')) {
                return HKV_EPROTO; /* obsolete line folding */
            } else if (c->line == 0 && ++c->ntrailers > HTTP_MAX_HEADERS) {
                return HKV_ETOOBIG;
            }
            break;
        case C_TRAILER_LF:
            if (ch != '\n')
                return HKV_EPROTO;
            i++;
            if (c->line == 1) { /* only the CR: the empty line ends the body */
                c->state = C_DONE;
                *used = i;
                return HTTP_EV_DONE;
            }
            c->state = C_TRAILER;
            c->line = 0;
            continue;
        default:
            *used = i;
            return HTTP_EV_DONE;
        }
        /* a byte of a size, extension or trailer line */
        i++;
        c->line++;
        if (c->state == C_TRAILER || c->state == C_TRAILER_LF) {
            if (c->line > HTTP_MAX_LINE || ++c->trailers > HTTP_MAX_HEAD)
                return HKV_ETOOBIG;
        } else if (c->line > HTTP_MAX_CHUNK_LINE) {
            return HKV_ETOOBIG;
        }
    }
    *used = i;
    return c->state == C_DONE ? HTTP_EV_DONE : HTTP_EV_NEED;
}

enum {
    R_STATUS,      /* the status line */
    R_HEADER,      /* header lines */
    R_HEAD,        /* the head is complete: report it */
    R_BODY_LEN,    /* a Content-Length body */
    R_BODY_CHUNK,  /* a chunked body */
    R_DONE,
};

/* Parses "HTTP/1.x NNN reason". */
static int status_line(struct http_resp *p, const char *s, size_t n)
{
    if (n < 12 || memcmp(s, "HTTP/1.", 7) != 0 || (s[7] != '0' && s[7] != '1') || s[8] != ' ')
        return HKV_EPROTO;
    for (int k = 9; k < 12; k++)
        if (s[k] < '0' || s[k] > '9')
            return HKV_EPROTO;
    if (s[9] == '0' || (n > 12 && s[12] != ' '))
        return HKV_EPROTO;
    p->minor = s[7] - '0';
    p->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    p->close = p->minor == 0; /* HTTP/1.0 closes unless it says keep-alive */
    return HKV_OK;
}

/* 1 if the comma-separated list v[0..n) holds token tok (any case). */
static int has_token(const char *v, size_t n, const char *tok)
{
    size_t tl = strlen(tok), i = 0;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t b = i;
        while (i < n && v[i] != ',')
            i++;
        size_t e = i;
        while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e - b == tl && strncasecmp(v + b, tok, tl) == 0)
            return 1;
    }
    return 0;
}

static int header_line(struct http_resp *p, const char *s, size_t n)
{
    if (s[0] == ' ' || s[0] == '\t')
        return HKV_EPROTO; /* obsolete line folding */
    if (++p->nheaders > HTTP_MAX_HEADERS)
        return HKV_ETOOBIG;
    const char *colon = memchr(s, ':', n);
    if (colon == NULL || colon == s)
        return HKV_EPROTO;
    size_t nl = (size_t)(colon - s);
    for (size_t k = 0; k < nl; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c <= ' ' || c >= 0x7F || strchr("\"(),/:;<=>?@[\\]{}", c) != NULL)
            return HKV_EPROTO; /* not a token (a space before ':' too) */
    }
    const char *v = colon + 1;
    size_t vl = n - nl - 1;
    while (vl > 0 && (v[0] == ' ' || v[0] == '\t'))
        v++, vl--;
    while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
        vl--;
    if (nl == 14 && strncasecmp(s, "Content-Length", 14) == 0) {
        if (vl == 0 || vl > 18)
            return HKV_EPROTO;
        uint64_t len = 0;
        for (size_t k = 0; k < vl; k++) {
            if (v[k] < '0' || v[k] > '9')
                return HKV_EPROTO;
            len = len * 10 + (uint64_t)(v[k] - '0');
        }
        if (p->has_length && p->length != len)
            return HKV_EPROTO;
        p->has_length = 1;
        p->length = len;
    } else if (nl == 17 && strncasecmp(s, "Transfer-Encoding", 17) == 0) {
        if (p->chunked || vl != 7 || strncasecmp(v, "chunked", 7) != 0)
            return HKV_EPROTO; /* no other coding is ours to undo */
        p->chunked = 1;
    } else if (nl == 10 && strncasecmp(s, "Connection", 10) == 0) {
        if (has_token(v, vl, "close"))
            p->close = 1;
        else if (p->minor == 0 && has_token(v, vl, "keep-alive"))
            p->close = 0;
    }
    return HKV_OK;
}

/* The head is complete: decide how the body is framed. */
static int head_done(struct http_resp *p)
{
    if (p->chunked && p->has_length)
        return HKV_EPROTO;
    if (p->status == 204 || p->status == 304) {
        if (p->chunked || (p->has_length && p->length != 0))
            return HKV_EPROTO;
        p->has_length = 1;
        p->length = 0;
    }
    if (!p->chunked && !p->has_length)
        return HKV_EPROTO; /* a body read until close is not what etcd sends */
    if (p->has_length && p->max_body != 0 && p->length > p->max_body)
        return HKV_ETOOBIG;
    http_chunked_init(&p->ch);
    return HKV_OK;
}

void http_resp_init(struct http_resp *p, uint64_t max_body)
{
    memset(p, 0, offsetof(struct http_resp, line));
    p->state = R_STATUS;
    p->max_body = max_body;
}

/* One complete head line (without CRLF) in p->line. */
static int head_line(struct http_resp *p)
{
    const char *s = p->line;
    size_t n = p->linelen;
    p->linelen = 0;
    if (p->state == R_STATUS) {
        int rc = status_line(p, s, n);
        if (rc == HKV_OK)
            p->state = R_HEADER;
        return rc;
    }
    if (n > 0)
        return header_line(p, s, n);
    /* the empty line */
    if (p->status >= 100 && p->status < 200) {
        if (p->status == 101)
            return HKV_EPROTO; /* we never ask to switch protocols */
        http_resp_init(p, p->max_body); /* an interim response: the real one follows */
        return HKV_OK;
    }
    int rc = head_done(p);
    if (rc == HKV_OK)
        p->state = R_HEAD;
    return rc;
}

int http_resp_step(struct http_resp *p, const char *in, size_t len, size_t *used,
                   const char **data, size_t *dlen)
{
    size_t i = 0;
    *used = 0;
    while (p->state == R_STATUS || p->state == R_HEADER) {
        if (i == len) {
            *used = i;
            return HTTP_EV_NEED;
        }
        unsigned char c = (unsigned char)in[i++];
        if (++p->head_bytes > HTTP_MAX_HEAD)
            return HKV_ETOOBIG;
        if (p->cr) {
            if (c != '\n')
                return HKV_EPROTO;
            p->cr = 0;
            int rc = head_line(p);
            if (rc != HKV_OK)
                return rc;
            continue;
        }
        if (c == '\r') {
            p->cr = 1;
            continue;
        }
        if (!line_byte_ok(c))
            return HKV_EPROTO; /* a bare LF, a NUL, a control byte */
        if (p->linelen >= HTTP_MAX_LINE)
            return HKV_ETOOBIG;
        p->line[p->linelen++] = (char)c;
    }
    *used = i;
    switch (p->state) {
    case R_HEAD:
        p->state = p->chunked ? R_BODY_CHUNK : R_BODY_LEN;
        return HTTP_EV_HEAD;
    case R_BODY_LEN: {
        uint64_t left = p->length - p->body;
        if (left == 0) {
            p->state = R_DONE;
            return HTTP_EV_DONE;
        }
        if (i == len)
            return HTTP_EV_NEED;
        size_t n = len - i;
        if ((uint64_t)n > left)
            n = (size_t)left;
        p->body += n;
        *data = in + i;
        *dlen = n;
        *used = i + n;
        return HTTP_EV_DATA;
    }
    case R_BODY_CHUNK: {
        size_t u = 0;
        int rc = http_chunked_step(&p->ch, in + i, len - i, &u, data, dlen);
        *used = i + u;
        if (rc == HTTP_EV_DATA) {
            p->body += *dlen;
            if (p->max_body != 0 && p->body > p->max_body)
                return HKV_ETOOBIG;
        } else if (rc == HTTP_EV_DONE) {
            p->state = R_DONE;
        }
        return rc;
    }
    default:
        return HTTP_EV_DONE;
    }
}
