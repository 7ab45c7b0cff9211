/*
 * resp.h - the client protocol: RESP2/RESP3 request parsing and reply encoding,
 * plus a reply parser for tools and tests.
 *
 * Requests.  resp_parse() reads one request (a multibulk `*N\r\n$L\r\n...` or
 * an inline line `PING\r\n`) from a contiguous buffer.  Parsed arguments are
 * slices into that buffer, valid until the buffer is changed; code that keeps
 * one copies it.  An incomplete request returns HKV_EAGAIN and the parser
 * remembers how far it got, so a request arriving one byte at a time costs
 * O(total) and not O(n^2): call again with the same buffer start and more
 * bytes appended (the buffer may have moved; progress is kept as offsets).
 * Nothing is allocated from a length the client declared: the argument array
 * grows as arguments actually arrive.
 *
 * Replies.  The resp_add_* functions append one encoded element to a buffer,
 * choosing the RESP2 or RESP3 form from `proto` (2 or 3).
 */
#ifndef HKV_RESP_H
#define HKV_RESP_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/hkv.h"

struct resp_limits {
    int64_t max_bulk;    /* largest bulk argument (proto-max-bulk-len) */
    int64_t max_args;    /* most arguments in one request */
    int64_t max_inline;  /* longest inline line, and longest `*`/`$` header line */
};

struct resp_slice {
    const char *p;
    size_t len;
};

/* One parsed request.  argv is owned by the parser and reused by its next call. */
struct resp_req {
    int argc;
    struct resp_slice *argv;
};

/* Parser state; embed it and use init/deinit.  Fields are private. */
struct resp_parser {
    struct resp_limits lim;
    int state;
    int64_t nargs;          /* declared multibulk count */
    int64_t bulklen;        /* declared length of the bulk being read, -1 none */
    size_t pos;             /* progress from the request start */
    size_t scanned;         /* how far a line search has looked */
    int argc;
    int cap;
    size_t *offs;           /* argument offsets from the request start */
    struct resp_slice *argv;    /* argv[i].len is filled as each bulk arrives */
    char *scratch;          /* decoded quoted inline arguments */
    size_t scratch_cap;
    char errbuf[48];        /* formatted error text ("expected '$', got 'X'") */
};

/* lim NULL, or any field <= 0, takes the default: max_bulk 512 MB,
 * max_args 1M, max_inline 64 KB (Redis's PROTO_INLINE_MAX_SIZE). */
void resp_parser_init(struct resp_parser *p, const struct resp_limits *lim);
void resp_parser_deinit(struct resp_parser *p);
/* Forgets a partial request (after an error or a reset). */
void resp_parser_reset(struct resp_parser *p);

/* Parses one request from buf[0..len); buf is always the request's first byte.
 *   HKV_OK      a whole request: *req filled, *consumed = its byte length.
 *               An empty inline line or a count `*0` or below gives argc == 0 (skip it).
 *   HKV_EAGAIN  incomplete; call again when more bytes are appended.
 *   HKV_EPROTO  malformed: *errmsg is Redis's reply text (without the leading
 *               '-' and CRLF), e.g. "ERR Protocol error: invalid bulk length".
 *               The stream is desynchronised: reply and close.
 *   HKV_ETOOBIG a limit was passed (same *errmsg convention); close too.
 *   HKV_ENOMEM.
 * Inline lines are split as Redis's sdssplitargs does (quotes, escapes; a NUL
 * byte ends the line's arguments); a quoted argument may point into the
 * parser's scratch space instead of buf, valid until the next call.  An
 * inline request that looks like HTTP (`POST ...`, `GET /x HTTP/1.1`,
 * `Host: ...`) is HKV_EPROTO "ERR Protocol error: HTTP request on the Redis
 * port".  On anything but HKV_OK, *consumed is 0 and *req is untouched. */
int resp_parse(struct resp_parser *p, const char *buf, size_t len, size_t *consumed,
               struct resp_req *req, const char **errmsg);

/* Reply encoders.  Each returns HKV_OK or HKV_ENOMEM. */
hkv_status resp_add_simple(struct hkv_buf *b, const char *s);          /* +s */
hkv_status resp_add_error(struct hkv_buf *b, const char *s);           /* -s (CR/LF replaced) */
hkv_status resp_add_errorf(struct hkv_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
hkv_status resp_add_int(struct hkv_buf *b, int64_t v);                 /* :v */
hkv_status resp_add_bulk(struct hkv_buf *b, const void *p, size_t n);  /* $n */
hkv_status resp_add_bulk_str(struct hkv_buf *b, const char *s);
hkv_status resp_add_null(struct hkv_buf *b, int proto);                /* $-1 / _ */
hkv_status resp_add_null_array(struct hkv_buf *b, int proto);          /* *-1 / _ */
hkv_status resp_add_array(struct hkv_buf *b, int64_t n);               /* *n */
hkv_status resp_add_map(struct hkv_buf *b, int proto, int64_t pairs);  /* %n / *2n */
hkv_status resp_add_set(struct hkv_buf *b, int proto, int64_t n);      /* ~n / *n */
hkv_status resp_add_attr(struct hkv_buf *b, int64_t pairs);            /* |n (RESP3 only) */
hkv_status resp_add_double(struct hkv_buf *b, int proto, double v);    /* ,v / bulk */
hkv_status resp_add_bool(struct hkv_buf *b, int proto, int v);         /* #t / :1 */
/* A verbatim text (RESP3 `=N\r\ntxt:...`, RESP2 bulk), as INFO replies. */
hkv_status resp_add_verbatim(struct hkv_buf *b, int proto, const void *p, size_t n);

/* Replies, parsed (for tests, tools and benchmarks; the server never reads
 * replies).  A tree of values; strings point into `buf` given to the parser. */
enum resp_type {
    RESP_SIMPLE, RESP_ERROR, RESP_INT, RESP_BULK, RESP_NULL, RESP_ARRAY, RESP_MAP,
    RESP_SET, RESP_ATTR, RESP_DOUBLE, RESP_BOOL, RESP_VERBATIM, RESP_BIGNUM, RESP_PUSH
};
struct resp_value {
    enum resp_type type;
    int64_t integer;            /* INT, BOOL */
    double dbl;                 /* DOUBLE */
    const char *str;            /* SIMPLE ERROR BULK VERBATIM BIGNUM (VERBATIM:
                                   the text after "txt:"; the format is str-4) */
    size_t len;
    size_t n;                   /* elements (ARRAY SET PUSH) or 2*pairs (MAP ATTR) */
    struct resp_value *elems;
    struct resp_value *attr;    /* an attribute that preceded this value, or NULL */
};

/* Parses one whole reply from buf[0..len).  HKV_OK with *out allocated (free it
 * with resp_value_free) and *consumed; HKV_EAGAIN if incomplete; HKV_EPROTO
 * (also past RESP_REPLY_MAX_DEPTH nested aggregates); HKV_ENOMEM.  Attributes
 * (`|`) attach to the value that follows them (value->attr, an RESP_ATTR;
 * consecutive attributes chain through their own ->attr, nearest first). */
#define RESP_REPLY_MAX_DEPTH 64
int resp_parse_reply(const char *buf, size_t len, size_t *consumed, struct resp_value **out);
void resp_value_free(struct resp_value **v);

#endif
