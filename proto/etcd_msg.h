/*
 * etcd_msg.h - what the etcd client writes to and reads from etcd's JSON
 * gateway (../shared/CLUSTER.md §3), as pure functions: no sockets, no loop,
 * so every rule below is unit-tested against answers captured from a real
 * etcd 3.4 (tests/unit/check_etcd_msg.c).
 *
 * Requests (etcd_req.c): JSON bodies with keys and values in base64 and every
 * int64 written as a string, as the gateway expects.
 *
 * Answers (etcd_msg.c): the gateway omits every default value (a failed txn
 * has no "succeeded", an empty range no "kvs" nor "count", a PUT event no
 * "type", a keepalive of a lease that is gone no "TTL"), writes every int64
 * as a string, wraps the answers of its streaming calls (keepalive, watch) in
 * {"result":...} and errors in {"error","code","message"} with an HTTP error
 * status.  A decoded answer owns one block of memory that its etcd_result
 * (or watch message) points into.  A watch stream is one JSON object per
 * line, split by the HTTP chunks anywhere: etcd_lines puts lines back
 * together, bounded.
 */
#ifndef HKV_ETCD_MSG_H
#define HKV_ETCD_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/etcd_types.h"

#define ETCD_MAX_OPS 128   /* etcd's --max-txn-ops default */

/* ---- requests (etcd_req.c): HKV_OK, HKV_EINVAL (bad arguments), HKV_ENOMEM */
int etcd_req_range(struct hkv_buf *b, const char *key, size_t klen, const char *end, size_t elen,
                   int64_t revision, int64_t limit);
int etcd_req_put(struct hkv_buf *b, const char *key, size_t klen, const char *val, size_t vlen,
                 int64_t lease);
int etcd_req_delete(struct hkv_buf *b, const char *key, size_t klen, const char *end,
                    size_t elen);
int etcd_req_txn(struct hkv_buf *b, const struct etcd_cmp *cmp, size_t ncmp,
                 const struct etcd_op *ok, size_t nok, const struct etcd_op *fail, size_t nfail);
/* {"<field>":"<v>"}: lease grant ("TTL"), keepalive and revoke ("ID"). */
int etcd_req_int(struct hkv_buf *b, const char *field, int64_t v);
int etcd_req_watch(struct hkv_buf *b, const char *key, size_t klen, const char *end, size_t elen,
                   int64_t start_revision);
int etcd_req_auth(struct hkv_buf *b, const char *user, const char *password);
/* The end of the range of every key starting with prefix (etcd's range_end
 * for a prefix), into out (room for plen bytes, at least 1); its length. */
size_t etcd_prefix_end(const char *prefix, size_t plen, char *out);

/* ---- answers (etcd_msg.c) */
enum etcd_kind {
    ETCD_K_RANGE,
    ETCD_K_PUT,
    ETCD_K_DELETE,
    ETCD_K_TXN,
    ETCD_K_GRANT,
    ETCD_K_KEEPALIVE,
    ETCD_K_REVOKE,
    ETCD_K_AUTH,
};

struct etcd_answer {
    struct etcd_result r;
    const char *token;          /* ETCD_K_AUTH: NUL-terminated */
    void *mem;
};

/* Decodes the answer to a call of `kind` with HTTP status `http_status`.
 * Returns a->r.status: HKV_OK; HKV_EINVAL (etcd's error: r.code, r.message);
 * HKV_EPROTO (not an answer etcd gives: r.message says what); HKV_EIO (out
 * of memory).  Free with etcd_answer_free in every case. */
int etcd_msg_decode(enum etcd_kind kind, int http_status, const char *body, size_t len,
                    struct etcd_answer *a);
void etcd_answer_free(struct etcd_answer *a);

/* One line of a watch stream, decoded.  m.kind is CREATED, EVENTS (all the
 * events of the line, in etcd's order: the caller splits them by
 * mod_revision), PROGRESS or CANCELED (compact_revision > 0 when the start
 * was compacted away); a watch etcd refused (canceled without a compact
 * revision, or an {"error"} line) is ETCD_W_BROKEN with status HKV_EINVAL and
 * the reason in `reason`.  Returns HKV_OK or HKV_EPROTO / HKV_EIO (then
 * m.kind is ETCD_W_BROKEN with that status). */
struct etcd_wanswer {
    struct etcd_watch_msg m;
    const char *reason;
    void *mem;
};
int etcd_msg_decode_watch(const char *line, size_t len, struct etcd_wanswer *w);
void etcd_wanswer_free(struct etcd_wanswer *w);

/* Lines out of a stream cut anywhere.  max bounds one line (the bytes kept
 * while it is incomplete). */
struct etcd_lines {
    struct hkv_buf buf;
    size_t max;
    int held;       /* buf holds the line returned last: drop it first */
};
void etcd_lines_init(struct etcd_lines *l, size_t max);
void etcd_lines_deinit(struct etcd_lines *l);
/* Consumes a prefix of p (*used bytes).  1: a complete line (without its
 * "\n" and a "\r" before it) in *line and *llen, valid until the next call;
 * 0: everything was consumed into an incomplete line; HKV_ETOOBIG (a line
 * over max), HKV_ENOMEM. */
int etcd_lines_next(struct etcd_lines *l, const char *p, size_t n, size_t *used,
                    const char **line, size_t *llen);

#endif
