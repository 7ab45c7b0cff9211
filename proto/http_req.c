/*
 * http_req.c - the HTTP/1.1 request parser; see http_req.h.
 *
 * The parser works a line at a time: it looks for the next LF from where it
 * last looked, and only a complete line is judged.  That is what makes the
 * result independent of how the bytes were split: a partial line is checked
 * against one thing only, the size limit of the part it belongs to, and a
 * complete line is checked against that same limit first, so a line that is
 * both too long and malformed gives the limit's status however it arrived.
 * Everything kept between calls is an offset from the request's first byte.
 *
 * The fields the server needs are recognised as their lines complete (a
 * Content-Length list checked for agreement, Connection and Accept tokens
 * folded into flags); the checks that need the whole section (framing,
 * Host, the method) run at the empty line that ends it, in a fixed order:
 * smuggling (400), Transfer-Encoding (501), Host (400), method (405), body
 * (413, but for PUT), Expect (417).  Other fields are only validated, and left in place for
 * http_req_field_next.
 */
#include "http_req.h"

#include <string.h>

enum { ST_LINE = 0, ST_FIELDS = 1, ST_ERROR = 2 };

#define CL_MAX 1000000000000000000ULL   /* larger lengths are refused as malformed */

static const struct http_limits http_defaults = { 8192, 64, 16384 };

void http_req_parser_init(struct http_req_parser *p, const struct http_limits *lim)
{
    memset(p, 0, sizeof(*p));
    p->lim = http_defaults;
    if (lim != NULL) {
        if (lim->max_line > 0)
            p->lim.max_line = lim->max_line;
        if (lim->max_headers > 0)
            p->lim.max_headers = lim->max_headers;
        if (lim->max_header_bytes > 0)
            p->lim.max_header_bytes = lim->max_header_bytes;
    }
}

void http_req_parser_reset(struct http_req_parser *p)
{
    struct http_limits lim = p->lim;
    memset(p, 0, sizeof(*p));
    p->lim = lim;
}

/* RFC 9110 5.6.2 tchar. */
static int is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return 1;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int is_ows(unsigned char c) { return c == ' ' || c == '\t'; }

static unsigned char lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* Case-insensitive equality of s[0..n) with the lower-case literal w. */
static int ieq(const char *s, size_t n, const char *w)
{
    size_t wn = strlen(w);
    if (n != wn)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)s[i]) != (unsigned char)w[i])
            return 0;
    return 1;
}

static int fail(struct http_req_parser *p, struct http_error *err, int status, const char *reason)
{
    p->err.status = status;
    p->err.close = 1;
    p->err.reason = reason;
    p->state = ST_ERROR;
    if (err != NULL)
        *err = p->err;
    return HKV_EPROTO;
}

/* Trims OWS from both ends of s[*a..*b). */
static void trim(const char *s, size_t *a, size_t *b)
{
    while (*a < *b && is_ows((unsigned char)s[*a]))
        (*a)++;
    while (*b > *a && is_ows((unsigned char)s[*b - 1]))
        (*b)--;
}

/* Calls each(el, n, arg) for every element of a comma list s[0..n), OWS
 * trimmed, empty elements skipped (RFC 9110 5.6.1); stops at a non-zero
 * return and returns it. */
static int each_element(const char *s, size_t n, int (*each)(const char *, size_t, void *), void *arg)
{
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && s[j] != ',')
            j++;
        size_t a = i, b = j;
        trim(s, &a, &b);
        if (b > a) {
            int rc = each(s + a, b - a, arg);
            if (rc != 0)
                return rc;
        }
        i = j + 1;
    }
    return 0;
}

static int conn_token(const char *el, size_t n, void *arg)
{
    struct http_req_parser *p = arg;
    if (ieq(el, n, "close"))
        p->conn_close = 1;
    else if (ieq(el, n, "keep-alive"))
        p->conn_keep = 1;
    return 0;
}

/* A Content-Length element: 1*DIGIT, equal to every other one seen. */
static int cl_element(const char *el, size_t n, void *arg)
{
    struct http_req_parser *p = arg;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (el[i] < '0' || el[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(el[i] - '0');
        if (v > CL_MAX)
            return -1;
    }
    if (p->cl_seen && v != p->content_length)
        return -1;
    p->cl_seen = 1;
    p->content_length = v;
    return 0;
}

/* 1 when a qvalue (RFC 9110 12.4.2) is zero: "0", "0.", "0.0" ... "0.000". */
static int q_is_zero(const char *s, size_t n)
{
    if (n == 0 || s[0] != '0')
        return 0;
    if (n == 1)
        return 1;
    if (s[1] != '.' || n > 5)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] != '0')
            return 0;
    return 1;
}

/* An Accept element: media-range *( OWS ";" OWS parameter ). */
static int accept_element(const char *el, size_t n, void *arg)
{
    struct http_req_parser *p = arg;
    size_t semi = 0;
    while (semi < n && el[semi] != ';')
        semi++;
    size_t a = 0, b = semi;
    trim(el, &a, &b);
    /* The parameters: only q matters, and only whether it is zero. */
    size_t i = semi;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && el[j] != ';')
            j++;
        size_t pa = i + 1, pb = j;
        trim(el, &pa, &pb);
        if (pb - pa >= 2 && lower((unsigned char)el[pa]) == 'q' && el[pa + 1] == '=' &&
            q_is_zero(el + pa + 2, pb - pa - 2))
            return 0;
        i = j;
    }
    if (ieq(el + a, b - a, "text/event-stream") || ieq(el + a, b - a, "text/*"))
        p->accept |= HTTP_ACCEPT_SSE;
    else if (ieq(el + a, b - a, "application/x-ndjson") || ieq(el + a, b - a, "application/*"))
        p->accept |= HTTP_ACCEPT_NDJSON;
    else if (ieq(el + a, b - a, "*/*"))
        p->accept |= HTTP_ACCEPT_ANY;
    return 0;
}

/* RFC 3986 host [":" port]: reg-name, IPv4 or IP-literal characters. */
static int host_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("-._~!$&'()*+,;=%:[]", c) != NULL) || c == 0)
            return 0;
    }
    return 1;
}

/* The request line line[0..n) (CRLF stripped). */
static int request_line(struct http_req_parser *p, const char *buf, size_t off, size_t n,
                        struct http_error *err)
{
    const char *line = buf + off;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)line[i];
        if (c < 0x20 || c >= 0x7f)
            return fail(p, err, 400, "bad byte in request line");
    }
    size_t sp1 = 0;
    while (sp1 < n && line[sp1] != ' ')
        sp1++;
    if (sp1 == 0 || sp1 == n)
        return fail(p, err, 400, "malformed request line");
    for (size_t i = 0; i < sp1; i++)
        if (!is_tchar((unsigned char)line[i]))
            return fail(p, err, 400, "malformed method");
    size_t t = sp1 + 1, sp2 = t;
    while (sp2 < n && line[sp2] != ' ')
        sp2++;
    if (sp2 == t || sp2 == n)
        return fail(p, err, 400, "malformed request line");
    const char *v = line + sp2 + 1;
    size_t vn = n - sp2 - 1;
    if (vn != 8 || memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' || v[6] != '.' ||
        v[7] < '0' || v[7] > '9')
        return fail(p, err, 400, "malformed version");
    if (v[5] != '1')
        return fail(p, err, 505, "version not supported");
    p->minor = v[7] == '0' ? 0 : 1;

    p->method_len = sp1;
    if (sp1 == 3 && memcmp(line, "GET", 3) == 0)
        p->method = HTTP_GET;
    else if (sp1 == 4 && memcmp(line, "HEAD", 4) == 0)
        p->method = HTTP_HEAD;
    else if (sp1 == 3 && memcmp(line, "PUT", 3) == 0)
        p->method = HTTP_PUT;
    else if (sp1 == 6 && memcmp(line, "DELETE", 6) == 0)
        p->method = HTTP_DELETE;
    else if (sp1 == 4 && memcmp(line, "POST", 4) == 0)
        p->method = HTTP_POST; /* /v1/ratelimit/KEY only, without a body */
    else
        p->other_method = 1;

    const char *tg = line + t;
    size_t tn = sp2 - t;
    if (memchr(tg, '#', tn) != NULL)
        return fail(p, err, 400, "fragment in request target");
    p->target_off = off + t;
    p->target_len = tn;
    size_t ps = 0;                    /* path start within the target */
    if (tg[0] != '/') {
        size_t skip = 0;
        if (tn >= 7 && ieq(tg, 7, "http://"))
            skip = 7;
        else if (tn >= 8 && ieq(tg, 8, "https://"))
            skip = 8;
        if (skip == 0) {
            if (p->other_method)
                skip = tn;            /* "*", authority-form: 405 below */
            else
                return fail(p, err, 400, "request target not origin or absolute form");
        }
        ps = skip;
        while (ps < tn && tg[ps] != '/' && tg[ps] != '?')
            ps++;
        if (ps == skip && !p->other_method)
            return fail(p, err, 400, "absolute target without authority");
    }
    size_t q = ps;
    while (q < tn && tg[q] != '?')
        q++;
    p->path_off = off + t + ps;
    p->path_len = q - ps;
    p->query_off = q < tn ? off + t + q + 1 : 0;
    return HKV_OK;
}

/* One field line buf[off..off+n) (CRLF stripped). */
static int field_line(struct http_req_parser *p, const char *buf, size_t off, size_t n,
                      struct http_error *err)
{
    const char *line = buf + off;
    if (is_ows((unsigned char)line[0]))
        return fail(p, err, 400, "obsolete line folding");
    size_t colon = 0;
    while (colon < n && line[colon] != ':') {
        if (!is_tchar((unsigned char)line[colon]))
            return fail(p, err, 400, is_ows((unsigned char)line[colon])
                                         ? "whitespace before colon" : "bad field name");
        colon++;
    }
    if (colon == n || colon == 0)
        return fail(p, err, 400, "malformed field line");
    for (size_t i = colon + 1; i < n; i++) {
        unsigned char c = (unsigned char)line[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return fail(p, err, 400, "control character in field value");
    }
    size_t a = colon + 1, b = n;
    trim(line, &a, &b);
    const char *name = line, *val = line + a;
    size_t nn = colon, vn = b - a;

    if (ieq(name, nn, "host")) {
        if (++p->nhost > 1)
            return fail(p, err, 400, "more than one Host");
        if (!host_ok(val, vn))
            return fail(p, err, 400, "bad Host");
        p->host_off = off + a;
        p->host_len = vn;
    } else if (ieq(name, nn, "connection")) {
        each_element(val, vn, conn_token, p);
    } else if (ieq(name, nn, "content-length")) {
        if (vn == 0 || each_element(val, vn, cl_element, p) != 0 || !p->cl_seen)
            return fail(p, err, 400, "bad or conflicting Content-Length");
    } else if (ieq(name, nn, "transfer-encoding")) {
        p->te_seen = 1;
    } else if (ieq(name, nn, "if-none-match")) {
        p->inm = 1;
    } else if (ieq(name, nn, "accept")) {
        p->has_accept = 1;
        each_element(val, vn, accept_element, p);
    } else if (ieq(name, nn, "authorization")) {
        if (++p->nauth > 1)
            return fail(p, err, 400, "more than one Authorization");
        p->auth_off = off + a;
        p->auth_len = vn;
    } else if (ieq(name, nn, "if-match")) {
        if (++p->nim > 1)
            return fail(p, err, 400, "more than one If-Match");
        p->im_off = off + a;
        p->im_len = vn;
    } else if (ieq(name, nn, "idempotency-key")) {
        if (++p->nik > 1)
            return fail(p, err, 400, "more than one Idempotency-Key");
        if (vn == 0 || vn > HTTP_IDEM_KEY_MAX + 2) /* an sf-string's quotes */
            return fail(p, err, 400, "Idempotency-Key empty or too long");
        p->ik_off = off + a;
        p->ik_len = vn;
    } else if (ieq(name, nn, "expect")) {
        if (ieq(val, vn, "100-continue"))
            p->expect_continue = 1;
        else
            p->expect_other = 1;
    } else if (ieq(name, nn, "last-event-id")) {
        if (++p->nlei > 1)
            return fail(p, err, 400, "more than one Last-Event-ID");
        p->lei_off = off + a;
        p->lei_len = vn;
    }
    return HKV_OK;
}

static struct http_slice slice(const char *buf, size_t off, size_t len, int present)
{
    struct http_slice s = { present ? buf + off : NULL, present ? len : 0 };
    return s;
}

/* The empty line ended the section at buf[end): the whole-request checks. */
static int finish(struct http_req_parser *p, const char *buf, size_t end, size_t *consumed,
                  struct http_req *req, struct http_error *err)
{
    if (p->te_seen && p->cl_seen)
        return fail(p, err, 400, "both Content-Length and Transfer-Encoding");
    if (p->te_seen && p->minor == 0)
        return fail(p, err, 400, "Transfer-Encoding in HTTP/1.0");
    if (p->te_seen)
        return fail(p, err, 501, "Transfer-Encoding not implemented");
    if (p->minor == 1 && p->nhost == 0)
        return fail(p, err, 400, "no Host");
    int keep = p->conn_close ? 0 : p->minor == 1 ? 1 : p->conn_keep;
    if (p->other_method) {
        if (p->content_length > 0 || !keep)
            return fail(p, err, 405, "method not allowed");
        err->status = 405;
        err->close = 0;
        err->reason = "method not allowed";
        *consumed = end;
        http_req_parser_reset(p);
        return HKV_EPROTO;
    }
    if (p->content_length > 0 && p->method != HTTP_PUT)
        return fail(p, err, 413, "request body not accepted");
    if (p->expect_other)
        return fail(p, err, 417, "only Expect: 100-continue is met");

    req->method = p->method;
    req->minor = p->minor;
    req->keep_alive = keep;
    req->target = slice(buf, p->target_off, p->target_len, 1);
    if (p->path_len == 0) {
        req->path.p = "/";            /* absolute-form with an empty path */
        req->path.len = 1;
    } else {
        req->path = slice(buf, p->path_off, p->path_len, 1);
    }
    req->query = slice(buf, p->query_off, p->target_off + p->target_len - p->query_off,
                       p->query_off != 0);
    req->host = slice(buf, p->host_off, p->host_len, p->nhost > 0);
    req->authorization = slice(buf, p->auth_off, p->auth_len, p->nauth > 0);
    req->last_event_id = slice(buf, p->lei_off, p->lei_len, p->nlei > 0);
    req->if_none_match = p->inm;
    req->has_accept = p->has_accept;
    req->accept = p->accept;
    req->headers = slice(buf, p->hdr_off, end - 2 - p->hdr_off, 1);
    req->content_length = p->content_length;
    req->expect_continue = p->expect_continue && p->minor == 1;
    req->if_match = slice(buf, p->im_off, p->im_len, p->nim > 0);
    req->idem_key = slice(buf, p->ik_off, p->ik_len, p->nik > 0);
    *consumed = end;
    http_req_parser_reset(p);
    return HKV_OK;
}

int http_req_parse(struct http_req_parser *p, const char *buf, size_t len, size_t *consumed,
                   struct http_req *req, struct http_error *err)
{
    *consumed = 0;
    if (p->state == ST_ERROR) {
        *err = p->err;
        return HKV_EPROTO;
    }
    for (;;) {
        const char *lf = p->scanned < len ? memchr(buf + p->scanned, '\n', len - p->scanned) : NULL;
        if (lf == NULL) {
            p->scanned = len > p->scanned ? len : p->scanned;
            size_t have = len - p->pos;
            if (p->state == ST_LINE && have > p->lim.max_line)
                return fail(p, err, 414, "request line too long");
            if (p->state == ST_FIELDS && len - p->hdr_off > p->lim.max_header_bytes)
                return fail(p, err, 431, "header section too large");
            return HKV_EAGAIN;
        }
        size_t end = (size_t)(lf - buf) + 1;
        size_t off = p->pos, n = end - off;
        p->scanned = p->pos = end;
        if (p->state == ST_LINE) {
            if (n > p->lim.max_line)
                return fail(p, err, 414, "request line too long");
            if (n < 2 || buf[end - 2] != '\r')
                return fail(p, err, 400, "bare LF");
            if (n == 2) {
                if (++p->empties > HTTP_REQ_MAX_EMPTY)
                    return fail(p, err, 400, "empty lines before the request line");
                continue;
            }
            p->line_off = off;
            int rc = request_line(p, buf, off, n - 2, err);
            if (rc != HKV_OK)
                return rc;
            p->state = ST_FIELDS;
            p->hdr_off = end;
            continue;
        }
        if (end - p->hdr_off > p->lim.max_header_bytes)
            return fail(p, err, 431, "header section too large");
        if (n < 2 || buf[end - 2] != '\r')
            return fail(p, err, 400, "bare LF");
        if (n == 2)
            return finish(p, buf, end, consumed, req, err);
        if (++p->nfields > p->lim.max_headers)
            return fail(p, err, 431, "too many header fields");
        int rc = field_line(p, buf, off, n - 2, err);
        if (rc != HKV_OK)
            return rc;
    }
}
