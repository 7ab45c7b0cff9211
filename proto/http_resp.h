/*
 * http_resp.h - the HTTP/1.1 response parser of the agent's etcd client, as a
 * pure state machine (no sockets, no allocation), so it can be unit-tested and
 * fuzzed with the input split at every point.
 *
 * The caller feeds whatever bytes arrived; each call consumes a prefix of them
 * and reports at most one event: the head is complete (status and the headers
 * that matter: Content-Length, Transfer-Encoding, Connection), a slice of body
 * (a pointer into the caller's bytes: zero copy), or the end of the response.
 * Informational (1xx) responses are skipped.  Everything is bounded: a line,
 * the header count, the head's total size, a chunk-size line, the trailers,
 * and the body (max_body; 0 leaves a streamed body unbounded, for the watch,
 * whose caller bounds each line).  A body must be framed by Content-Length or
 * chunked transfer-encoding (what etcd's gateway sends); anything else, both
 * at once, a bare LF, obsolete line folding or a malformed number is
 * HKV_EPROTO, and a bound passed is HKV_ETOOBIG.
 *
 * The chunked decoder is usable alone (http_chunked_*): it is fed arbitrary
 * splits and keeps no buffer at all, only counters.
 */
#ifndef HKV_HTTP_RESP_H
#define HKV_HTTP_RESP_H

#include <stddef.h>
#include <stdint.h>

#include "proto/hkv.h"

#define HTTP_MAX_LINE 8192        /* one status, header or trailer line */
#define HTTP_MAX_HEADERS 64       /* header (or trailer) lines of one response */
#define HTTP_MAX_HEAD 65536       /* status line + headers, and trailers */
#define HTTP_MAX_CHUNK_LINE 1024  /* a chunk-size line with its extensions */

/* Events (>= 0); errors are negative hkv_status values. */
enum http_ev {
    HTTP_EV_NEED = 0,  /* every byte given was consumed: feed more */
    HTTP_EV_HEAD,      /* status and headers are in the parser */
    HTTP_EV_DATA,      /* *data, *dlen: body bytes (a slice of the input) */
    HTTP_EV_DONE,      /* the response is complete; init again for the next */
};

struct http_chunked {
    int state;
    uint64_t left;     /* data bytes left in the current chunk */
    size_t line;       /* bytes of the current size or trailer line */
    size_t trailers;   /* trailer bytes so far */
    unsigned ntrailers;
    unsigned digits;
};

void http_chunked_init(struct http_chunked *c);
/* Consumes a prefix of in (*used bytes); returns HTTP_EV_NEED, HTTP_EV_DATA,
 * HTTP_EV_DONE (the last chunk and the trailers are read; *used stops right
 * after them), HKV_EPROTO or HKV_ETOOBIG. */
int http_chunked_step(struct http_chunked *c, const char *in, size_t len, size_t *used,
                      const char **data, size_t *dlen);

struct http_resp {
    int state;
    /* the head, valid from HTTP_EV_HEAD on */
    int status;               /* 200, 404 ... */
    int minor;                /* HTTP/1.<minor> */
    int chunked;
    int has_length;
    uint64_t length;          /* Content-Length */
    int close;                /* the server closes after this response */
    /* progress */
    uint64_t max_body;        /* 0 = unbounded */
    uint64_t body;            /* body bytes so far */
    unsigned nheaders;
    size_t head_bytes;
    size_t linelen;
    int cr;                   /* the last byte of the line so far was CR */
    struct http_chunked ch;
    char line[HTTP_MAX_LINE];
};

void http_resp_init(struct http_resp *p, uint64_t max_body);
/* Consumes a prefix of in (*used bytes, possibly 0 for an event that needs no
 * byte) and returns one event or an error (then the connection is unusable).
 * After HTTP_EV_DONE, bytes left over belong to no response of ours. */
int http_resp_step(struct http_resp *p, const char *in, size_t len, size_t *used,
                   const char **data, size_t *dlen);

#endif
