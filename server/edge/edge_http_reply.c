/*
 * edge_http_reply.c - the bytes of an HTTP response (edge_http_int.h): the
 * status line and the headers every response carries, short text bodies,
 * stream framing (chunked), and the JSON pieces of watch events.
 *
 * Every response starts with hr_status, which is also where responses are
 * counted by status class (INFO # Stats, /metrics), so a status can never
 * be sent uncounted.  Bodies always carry Content-Length (or, for a stream,
 * chunked framing or a close), so a pipelining client can always find where
 * one response ends.  The Date header is formatted once per second, and
 * the headers of every response are appended as bytes and decimal digits,
 * never through printf: a profile of an edge answering pipelined GETs put
 * 40% of its time in vfprintf and its helpers.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/core/clock.h"
#include "server/edge/edge_http_int.h"
#include "server/edge/edge_sess.h"

const char *hr_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

size_t hr_u64s(char *p, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        p[i] = tmp[n - 1 - i];
    return n;
}

void hr_u64(struct hkv_buf *out, uint64_t v)
{
    char d[20];
    buf_append(out, d, hr_u64s(d, v));
}

/* "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n" (RFC 9110 5.6.7), per second. */
static const char *date_line(void)
{
    static char line[64];
    static time_t at = -1;
    time_t now = (time_t)(clock_unix_ms() / 1000);
    if (now != at) {
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(line, sizeof(line), "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
        at = now;
    }
    return line;
}

void hr_status(struct conn *c, struct hkv_buf *out, int status, int minor, int keep_alive)
{
    struct board_slot *st = c->e->stats;
    _Atomic uint64_t *ctr = status >= 500   ? &st->http_requests_5xx
                            : status >= 400 ? &st->http_requests_4xx
                            : status >= 300 ? &st->http_requests_3xx
                                            : &st->http_requests_2xx;
    board_add(ctr, 1);
    if (sess_of(c)->http != NULL)
        sess_of(c)->http->answered_ms = clock_mono_ms();
    buf_append_str(out, "HTTP/1.1 ");
    hr_u64(out, (uint64_t)(status > 0 ? status : 0));
    buf_append(out, " ", 1);
    buf_append_str(out, hr_reason(status));
    buf_append_str(out, "\r\nServer: hotkvd\r\n");
    buf_append_str(out, date_line());
    if (!keep_alive || c->e->stopping) /* a stopping edge closes after what is owed */
        buf_append_str(out, "Connection: close\r\n");
    else if (minor == 0)
        buf_append_str(out, "Connection: keep-alive\r\n");
}

void hr_body(struct hkv_buf *out, const char *ctype, const char *body, size_t n, int head)
{
    if (ctype != NULL) {
        buf_append_str(out, "Content-Type: ");
        buf_append_str(out, ctype);
        buf_append(out, "\r\n", 2);
    }
    buf_append_str(out, "Content-Length: ");
    hr_u64(out, n);
    buf_append(out, "\r\n\r\n", 4);
    if (!head && n > 0)
        buf_append(out, body, n);
}

void hr_simple(struct conn *c, struct hkv_buf *out, int status, int minor, int keep_alive,
               int head, const char *extra, const char *body)
{
    hr_status(c, out, status, minor, keep_alive);
    if (extra != NULL)
        buf_append_str(out, extra);
    char text[256];
    const char *b = body != NULL ? body : hr_reason(status);
    size_t n = strnlen(b, sizeof(text) - 2);
    memcpy(text, b, n);
    text[n++] = '\n';
    hr_body(out, "text/plain; charset=utf-8", text, n, head);
}

/* The length of the UTF-8 sequence at p[0..n) (RFC 3629: no overlong form,
 * no surrogate, nothing past U+10FFFF), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned char b = p[0];
    size_t len;
    uint32_t cp, min;
    if (b < 0x80)
        return 1;
    if (b >= 0xc2 && b <= 0xdf) {
        len = 2, cp = b & 0x1fu, min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
        len = 3, cp = b & 0x0fu, min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
        len = 4, cp = b & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

int hr_json_str(struct hkv_buf *out, const char *p, size_t n)
{
    size_t mark = out->len;
    const unsigned char *u = (const unsigned char *)p;
    buf_append(out, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned char ch = u[i];
        if (ch >= 0x80) {
            size_t l = utf8_len(u + i, n - i);
            if (l == 0) {
                out->len = mark; /* not text: the caller sends base64 */
                return 0;
            }
            buf_append(out, p + i, l);
            i += l;
            continue;
        }
        if (ch == '"' || ch == '\\') {
            char esc[2] = {'\\', (char)ch};
            buf_append(out, esc, 2);
        } else if (ch < 0x20) {
            buf_printf(out, "\\u%04x", ch);
        } else {
            buf_append(out, p + i, 1);
        }
        i++;
    }
    buf_append(out, "\"", 1);
    return 1;
}

void hr_json_b64(struct hkv_buf *out, const char *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *u = (const unsigned char *)p;
    buf_append(out, "\"", 1);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)u[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)u[i + 1] << 8;
        if (i + 2 < n)
            v |= u[i + 2];
        char q[4] = {tab[(v >> 18) & 63], tab[(v >> 12) & 63],
                     i + 1 < n ? tab[(v >> 6) & 63] : '=', i + 2 < n ? tab[v & 63] : '='};
        buf_append(out, q, 4);
    }
    buf_append(out, "\"", 1);
}

void hr_chunk(struct hkv_buf *out, int chunked, const char *p, size_t n)
{
    if (n == 0)
        return;
    if (chunked)
        buf_printf(out, "%zx\r\n", n);
    buf_append(out, p, n);
    if (chunked)
        buf_append(out, "\r\n", 2);
}
