/*
 * http_req.h - HTTP/1.1 requests as the edge's front door reads them
 * (RFC 9110, RFC 9112): a pure parser, no I/O, no allocation.
 *
 * Why our own and not libevent's evhttp: the front door holds long polls and
 * streams on the edge's own connection layer (it must notice a client that
 * leaves during a held request, which evhttp does not), and it serves only
 * GET and HEAD without bodies, so what it needs is small and strict: every
 * request either parses into the few fields the server uses, or becomes an
 * error that already carries the status to answer and whether to close.
 *
 * Feeding.  http_req_parse() reads one request from a contiguous buffer whose
 * first byte is the request's first byte; an incomplete request returns
 * HKV_EAGAIN and the parser keeps its progress as offsets, so call again with
 * the same request start and more bytes appended (the buffer may have moved).
 * The work is O(total bytes) whatever the split, and the result does not
 * depend on the split: one byte at a time gives what all at once gives
 * (checks run per complete line, and a limit is judged on the bytes held, so
 * a partial line that already passes a limit fails as the whole line would).
 * After HKV_OK, *consumed is the request's length: the next pipelined request
 * starts there (the parser is ready for it).
 *
 * What is refused, and why (each refusal is HKV_EPROTO with a struct
 * http_error: the status to answer, and close = 1 when the connection must be
 * closed after the answer because the byte stream can no longer be trusted):
 *   400  malformed request line or field; a bare LF or bare CR anywhere (RFC
 *        9112 2.2 lets a recipient accept a bare LF; refusing it removes a way
 *        for a proxy in front of us and us to disagree on where a line ends);
 *        obs-fold (a field line starting with SP/HTAB, RFC 9112 5.2); a space
 *        before a field's colon (RFC 9112 5.1); NUL or any control character
 *        but HTAB in a field value, any control in the request line; a
 *        request-target that is not origin-form or absolute-form; an HTTP/1.1
 *        request without Host, or two Host fields (RFC 9112 3.2); both
 *        Content-Length and Transfer-Encoding, differing Content-Lengths, a
 *        Transfer-Encoding in HTTP/1.0 (request smuggling, RFC 9112 6.1, 6.3);
 *        two Authorization or Last-Event-ID fields.
 *        Two If-Match or Idempotency-Key fields, an Idempotency-Key that is
 *        empty or over HTTP_IDEM_KEY_MAX bytes (+ 2: an sf-string's quotes).
 *   405  a method other than GET, HEAD, PUT or DELETE (methods are
 *        case-sensitive: "get" is another method).  Answered after the whole header section is read
 *        so its framing is known: without a body the connection may stay open
 *        (close = 0 and *consumed set, see below); with one it closes.
 *   413  GET, HEAD or DELETE with a non-zero Content-Length (only PUT has a
 *        body: its length is in req->content_length, the body itself follows
 *        *consumed and is the caller's to read and to bound).
 *   417  an Expect other than 100-continue.
 *   414  request line longer than max_line.
 *   431  more than max_headers fields, or a header section over
 *        max_header_bytes.
 *   501  Transfer-Encoding (no transfer coding is implemented for requests).
 *   505  a version other than HTTP/1.x.  HTTP/1.0 and HTTP/1.1 are served;
 *        HTTP/1.2..1.9 are served as 1.1 (RFC 9110 2.5: a higher minor
 *        version of an implemented major is processed as the highest minor).
 * Before the request line, up to HTTP_REQ_MAX_EMPTY empty lines (CRLF) are
 * skipped (RFC 9112 2.2) and count in *consumed.
 *
 * Keep-alive (RFC 9112 9.3): a "close" token in Connection closes; otherwise
 * HTTP/1.1 stays open and HTTP/1.0 stays open only with "keep-alive".
 * Connection is a comma list, case-insensitive, over any number of fields.
 *
 * Slices point into the buffer given to the call that returned HKV_OK and are
 * valid until that buffer changes; a slice with p == NULL is absent, p != NULL
 * with len 0 is present and empty.
 */
#ifndef HKV_HTTP_REQ_H
#define HKV_HTTP_REQ_H

#include <stddef.h>
#include <stdint.h>

#include "proto/hkv.h"

#define HTTP_REQ_MAX_EMPTY 4      /* empty lines skipped before a request line */

struct http_slice {
    const char *p;
    size_t len;
};

struct http_limits {
    size_t max_line;          /* request line, CRLF included (default 8192) */
    size_t max_headers;       /* field lines (default 64) */
    size_t max_header_bytes;  /* header section after the request line, CRLFs
                                 and the final empty line included (default 16384) */
};

enum http_method { HTTP_GET = 1, HTTP_HEAD = 2, HTTP_PUT = 3, HTTP_DELETE = 4, HTTP_POST = 5 };

#define HTTP_IDEM_KEY_MAX 255     /* Idempotency-Key: longer is 400 */

/* Media types an Accept field names with a non-zero q: the two a stream can
 * be sent as (a range "text/" "*" counts as event-stream, "application/" "*"
 * as ndjson) and the full wildcard. */
#define HTTP_ACCEPT_SSE    0x1u   /* text/event-stream */
#define HTTP_ACCEPT_NDJSON 0x2u   /* application/x-ndjson */
#define HTTP_ACCEPT_ANY    0x4u   /* the range of every type */

/* One parsed request. */
struct http_req {
    enum http_method method;
    int minor;                        /* 0 or 1 (1.2+ reads as 1) */
    int keep_alive;                   /* 1: the connection may carry another request */
    struct http_slice target;         /* as sent */
    struct http_slice path;           /* origin-form path (absolute-form: its path, "/" if empty) */
    struct http_slice query;          /* after '?', absent without '?' */
    struct http_slice host;           /* Host field value (trimmed) */
    struct http_slice authorization;  /* Authorization field value */
    struct http_slice last_event_id;  /* Last-Event-ID field value */
    int if_none_match;                /* 1: at least one If-None-Match field */
    int has_accept;                   /* 1: at least one Accept field */
    unsigned accept;                  /* HTTP_ACCEPT_* named by the Accept fields */
    struct http_slice headers;        /* the field lines, for http_req_field_next */
    /* PUT and DELETE */
    uint64_t content_length;          /* the body's length (PUT only; 0 without a field) */
    int expect_continue;              /* Expect: 100-continue */
    struct http_slice if_match;       /* If-Match field value (one field) */
    struct http_slice idem_key;       /* Idempotency-Key field value (one field) */
};

/* What to answer to a refused request. */
struct http_error {
    int status;          /* 400 405 413 414 417 431 501 505 */
    int close;           /* 1: close the connection after answering */
    const char *reason;  /* a short constant phrase for a body or a counter */
};

/* Parser state; embed it and use init.  Fields are private. */
struct http_req_parser {
    struct http_limits lim;
    int state;
    size_t pos;           /* start of the line being read, from the request start */
    size_t scanned;       /* how far the search for its LF has looked */
    size_t empties;       /* empty lines skipped before the request line */
    size_t line_off;      /* request line start */
    size_t hdr_off;       /* first field line */
    size_t nfields;
    size_t method_len, target_off, target_len, path_off, path_len, query_off;
    int other_method;     /* not GET or HEAD (405 at the end of the section) */
    enum http_method method;
    int minor;
    size_t host_off, host_len, auth_off, auth_len, lei_off, lei_len;
    int nhost, nauth, nlei, inm, has_accept;
    size_t im_off, im_len, ik_off, ik_len;
    int nim, nik, expect_continue, expect_other;
    unsigned accept;
    int conn_close, conn_keep;
    int cl_seen, te_seen;
    uint64_t content_length;
    struct http_error err;  /* sticky once set with close */
};

/* lim NULL, or any field 0, takes the default. */
void http_req_parser_init(struct http_req_parser *p, const struct http_limits *lim);
/* Forgets a partial request or a sticky error. */
void http_req_parser_reset(struct http_req_parser *p);

/* Parses one request from buf[0..len).
 *   HKV_OK      *req filled, *consumed = the request's length (> 0).
 *   HKV_EAGAIN  incomplete: call again with more bytes appended.
 *   HKV_EPROTO  refused: *err says what to answer.  With err->close == 0
 *               (only a 405 without a body, on a connection that may stay
 *               open) *consumed is the request's length and the parser is
 *               ready for the next request; with close == 1 *consumed is 0
 *               and every later call returns the same error until reset.
 * On HKV_EAGAIN, *consumed is 0 and *req is untouched. */
int http_req_parse(struct http_req_parser *p, const char *buf, size_t len, size_t *consumed,
                   struct http_req *req, struct http_error *err);

/* Helpers (http_req_util.c). */

/* Percent-decodes in[0..n) (a path segment or a query value: '+' stays '+')
 * into out[0..cap), binary-safe (%00 gives a NUL byte).  HKV_OK with *outlen;
 * HKV_EPROTO on a '%' not followed by two hex digits; HKV_ETOOBIG when the
 * result would pass cap.  out may equal in (decoding never lengthens). */
int http_pct_decode(const char *in, size_t n, char *out, size_t cap, size_t *outlen);

/* Looks up a parameter of a query string (name=value&...; a name without
 * '=' has an empty value).  Names are compared as sent (not decoded).
 *   HKV_OK      *value = the raw (still percent-encoded) value
 *   HKV_ENOENT  absent (also when query is absent)
 *   HKV_EPROTO  present more than once (ambiguous: answer 400). */
int http_query_get(struct http_slice query, const char *name, struct http_slice *value);

/* A decimal uint64 (digits only, no sign, no spaces): HKV_OK or HKV_EPROTO. */
int http_parse_u64(struct http_slice s, uint64_t *out);

/* A wait duration as Consul writes it: digits then a unit ms, s, m or h
 * (bare digits are seconds), e.g. "30s", "1500ms", "5m".  HKV_OK with *ms,
 * HKV_EPROTO otherwise (also past 2^53 ms).  Capping is the caller's. */
int http_parse_wait(struct http_slice s, uint64_t *ms);

/* Iterates the field lines of a parsed request: start with *pos = 0; HKV_OK
 * with the name and the value (OWS trimmed), HKV_ENOENT after the last. */
int http_req_field_next(const struct http_req *r, size_t *pos, struct http_slice *name,
                        struct http_slice *value);

/* If-None-Match against the current representation's entity tag `etag` (as
 * sent in ETag, quotes included, optionally W/), over every If-None-Match
 * field, with the weak comparison RFC 9110 13.1.2 asks for.  1: a tag
 * matches or the list is "*" (answer 304; call it only when the resource
 * exists); 0: no match, no field, or a malformed list (answer in full). */
int http_req_inm_match(const struct http_req *r, const char *etag, size_t len);

/* Authorization: Basic (RFC 7617).  Decodes the credentials into
 * out[0..cap) and splits them at the first ':' (the password may hold more).
 *   HKV_OK      *user and *pass point into out
 *   HKV_ENOENT  no Authorization field, or another scheme
 *   HKV_EPROTO  bad base64 (RFC 4648 4: '=' padding required, no
 *               whitespace, unused bits zero), or no ':'
 *   HKV_ETOOBIG the credentials do not fit in cap. */
int http_req_basic(const struct http_req *r, char *out, size_t cap, struct http_slice *user,
                   struct http_slice *pass);

#endif
