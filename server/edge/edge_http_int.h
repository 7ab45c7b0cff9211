/*
 * edge_http_int.h - what the HTTP front door's files share (private to
 * server/edge/edge_http*.c).  The files, bottom up (each calls only those
 * before it; what flows up is a function pointer in struct hreq_ops):
 *
 *   edge_http_reply.c   the bytes of a response: status line, headers,
 *                       bodies, stream framing, JSON; counts status classes
 *   edge_http_wake.c    held readers (struct hreq): their life, their reads
 *                       through the read path, the per-key table, and the
 *                       colo change ring's signals that wake them
 *   edge_http_kv.c      GET/HEAD /v1/kv/{key} and its long poll
 *   edge_http_watch.c   GET /v1/watch/{key}: SSE and NDJSON streams
 *   edge_http_write.c   PUT and DELETE /v1/kv/{key}: an op of the write path
 *                       (edge_write_op.h), answered in HTTP
 *   edge_http_cas.c     the same with If-Match: the owner's compare-and-set
 *                       (an EXEC watching the key's version)
 *   edge_http_sess.c    a session's login (remembered credentials, by the
 *                       users' generation), protected mode, and what a
 *                       reload changes for its held requests
 *   edge_http.c         connections, parsing, routing, the gates (auth, ACL,
 *                       rate limit, protected mode), /healthz, /metrics,
 *                       timeouts, the stop
 *
 * A request that cannot be answered within its dispatch becomes a struct
 * hreq on the heap: it owns the request's reply slot (edge_reply.h) and a
 * copy of what it still needs (the key, the If-None-Match fields).  During
 * the dispatch the same struct lives on the stack (heap == 0) and writes
 * straight into c->out; hreq_keep moves it to the heap the moment it must
 * wait.
 */
#ifndef HKV_EDGE_HTTP_INT_H
#define HKV_EDGE_HTTP_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "config/cfg.h"
#include "proto/buf.h"
#include "proto/cmd.h"
#include "proto/http_req.h"
#include "proto/stamp.h"
#include "proto/wire.h"
#include "server/edge/edge_conn.h"
#include "server/edge/edge_http.h"
#include "server/edge/edge_flight.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_render.h"

#define HTTP_TABLE_BUCKETS 4096       /* held readers by key hash */
#define HTTP_STREAM_HIGH (64 * 1024)  /* a watch sends nothing new past this much unsent */

struct hreq;

/* The front door's part of one edge (e->http). */
struct http_edge {
    struct hreq *table[HTTP_TABLE_BUCKETS]; /* registered readers, by key hash */
    uint64_t nregistered;         /* in the table: the ring is armed while > 0 */
    uint64_t nheld;               /* polls and streams on the heap (http-max-polls) */
    struct cfg_cidr *allow;       /* http-metrics-allow */
    size_t nallow;
    int serving;                  /* the host served once (/healthz: host_serving) */
    uint64_t rnd;                 /* jitter */
    struct hkv_buf key;           /* a request's key, percent-decoded */
    struct http_opts opts;        /* opts.metrics_allow is NULL here (parsed into allow) */
};

/* One HTTP connection's session (c->http). */
struct http_sess {
    struct http_req_parser parser;
    int64_t req_start_ms;         /* the first byte of the request being read; 0: none */
    int64_t answered_ms;          /* its last response began (keep-alive idle runs from here) */
    int streaming;                /* a watch began: no request after it is run (edge_http_watch.c) */
    struct hreq *reqs;            /* its heap requests, for the closing hook */
    struct sockaddr_storage peer; /* for /metrics' allow list */
    int has_peer;
    /* the last Basic credentials that logged in, so a keep-alive client is not
     * hashed again on every request; valid only while cred_gen is the edge's
     * auth_gen (a reload rebuilt the users: checked again by name) */
    uint64_t cred_gen;
    int cred_user;
    size_t cred_len;
    char cred[256];
    int logins;                   /* HTTP_LOGIN_*: how its held requests logged in */
    /* a PUT whose header section is read and whose body is not whole yet:
     * the request is parsed again once body_need bytes are in c->in */
    int body_wait;
    size_t body_need;             /* header section + Content-Length */
    int64_t body_start_ms;        /* its header section ended (http-body-timeout) */
};

/* http_sess.logins: the logins of the requests since the session last held
 * none, so a reload can check again those a poll or a stream still serves. */
#define HTTP_LOGIN_IMPLICIT 1     /* no credentials: the initial user */
#define HTTP_LOGIN_CACHED 2       /* the credentials in cred */
#define HTTP_LOGIN_OTHER 4        /* credentials no longer known (too long, or replaced) */

enum hreq_kind { HREQ_GET, HREQ_POLL, HREQ_WATCH };

/* What a read of a held reader's key found (sync from the cache, or a
 * flight's answer). */
struct hres {
    int error;                    /* 1: no value; err says why (an "ERR ..."/"TRYAGAIN ..." text) */
    int found;
    const char *v;
    size_t n;
    int64_t expire_at;
    struct read_facts f;          /* age, version (stamp), stale, degraded */
    int confirmed;                /* the owner's answer to a fetch sent after the reader asked */
    const char *err;
    size_t errlen;
};

/* What kv and watch plug into a held reader. */
struct hreq_ops {
    /* A read of its key finished (r may be on the stack during dispatch). */
    void (*result)(struct hreq *r, const struct hres *res);
    /* A change-ring record for its key's hash: version v (0: records were
     * lost, anything may have changed).  r is registered. */
    void (*changed)(struct hreq *r, hkv_stamp v);
    /* Its timer fired (deadline, heartbeat). */
    void (*timer)(struct hreq *r);
};

struct hreq {
    struct conn *c;
    const struct hreq_ops *ops;
    int heap;                     /* on the heap: owns slot, store, timer */
    struct rslot *slot;
    struct hreq *cnext, *cprev;   /* the session's list */
    struct hreq *hnext, **hpprev; /* the table's bucket (or a wake batch) while registered */
    enum hreq_kind kind;
    int head;                     /* HEAD: headers only */
    int minor;                    /* HTTP/1.minor */
    int keep_alive;
    uint64_t hash;
    const char *key;              /* the key: into store (heap) or the request (stack) */
    size_t klen;
    struct http_req inm;          /* If-None-Match fields (its headers: into store or the request) */
    char *store;
    hkv_stamp index;              /* POLL: the client's index; WATCH: the last version sent */
    int has_index;
    int64_t deadline_ms;          /* POLL: when its wait passes */
    int64_t start_ms;             /* when it began (a reload lowering the wait cap) */
    int reading;                  /* waiting on the key's flight */
    int rewake;                   /* its key changed while it was reading */
    int held;                     /* POLL: it waited for a change (its deadline runs) */
    int final;                    /* POLL: the wait passed (or the edge stops): answer what comes;
                                   * WATCH: the edge stops: end at the next timer */
    int fetch_after;              /* the flight it waits on was started for it */
    struct flight_waiter w;
    struct event *timer;
    int format;                   /* WATCH: HTTP_FMT_* */
    int chunked;                  /* WATCH: chunked framing (HTTP/1.1) */
    int dirty;                    /* WATCH: a change not sent (its client reads slowly) */
    int first;                    /* WATCH: no event sent yet and no Last-Event-ID */
};

#define HTTP_FMT_SSE 1
#define HTTP_FMT_NDJSON 2

/* ---- edge_http_reply.c ------------------------------------------------------------ */

/* The status line and the headers every response has (Connection when it
 * closes or is HTTP/1.0 keep-alive); counts the status class. */
void hr_status(struct conn *c, struct hkv_buf *out, int status, int minor, int keep_alive);
/* A whole short response: text/plain body (HEAD: none), close or not, with
 * extra header lines (each ending CRLF) or NULL. */
void hr_simple(struct conn *c, struct hkv_buf *out, int status, int minor, int keep_alive,
               int head, const char *extra, const char *body);
/* Content-Type, Content-Length, the blank line and (not HEAD) the body. */
void hr_body(struct hkv_buf *out, const char *ctype, const char *body, size_t n, int head);
/* A JSON string of p[0..n) (quotes included), or 0 if it is not UTF-8. */
int hr_json_str(struct hkv_buf *out, const char *p, size_t n);
/* Base64 of p[0..n), quoted. */
void hr_json_b64(struct hkv_buf *out, const char *p, size_t n);
/* One chunk of a chunked body (n > 0), or p as is when not chunked. */
void hr_chunk(struct hkv_buf *out, int chunked, const char *p, size_t n);
const char *hr_reason(int status);
/* v in decimal: into p (20 bytes at least; not terminated), its length;
 * appended to out. */
size_t hr_u64s(char *p, uint64_t v);
void hr_u64(struct hkv_buf *out, uint64_t v);

/* ---- edge_http_wake.c -------------------------------------------------------------- */

int edge_http_wake_setup(struct edge *e);
void edge_http_wake_teardown(struct edge *e);
/* The heap copy of a stack request (its slot deferred, its key and
 * If-None-Match fields copied, its timer made, linked to its session); the
 * stack one must not be used again.  NULL on allocation failure (nothing
 * changed: the caller answers 500). */
struct hreq *hreq_keep(struct hreq *r);
/* Reads r's key through the read path (edge_read.h): ops->result is called
 * at once (an answer from the cache) or later (a flight; r is then kept on
 * the heap and registered).  min: see edge_read_cached. */
void hreq_read(struct hreq *r, hkv_stamp min);
/* Registers r (heap) in the table: changes of its key reach ops->changed. */
void hreq_register(struct hreq *r);
/* r's reply is written (hreq_out): ends its slot and frees it. */
void hreq_done(struct hreq *r);
/* Frees r without answering (its client is gone, or the edge ends). */
void hreq_free(struct hreq *r);
/* Where r's reply goes now. */
struct hkv_buf *hreq_out(struct hreq *r);
/* Arms r's timer for ms from now. */
void hreq_timer(struct hreq *r, int64_t ms);

/* ---- edge_http_kv.c ------------------------------------------------------------------ */

/* GET/HEAD /v1/kv/{key} (r on the stack, gates passed); wait_ms: the poll's
 * wait, capped and jittered already. */
void edge_http_kv(struct hreq *r, int64_t wait_ms);
/* The edge stops: a held poll is answered now with what the colo holds. */
void edge_http_kv_stop(struct hreq *r);

/* ---- edge_http.c ------------------------------------------------------------------- */

/* One request being run (or, pre, a PUT's headers before its body). */
struct http_run {
    const struct http_req *req;
    const struct http_error *err;
    int keep_alive;
    struct http_slice body;       /* a PUT's, whole */
    int pre;                      /* a PUT's headers only, before its body (edge_http_body); -1: refused */
};


/* The gates of a key endpoint for cmd (GET; SET for a PUT, DEL for a
 * DELETE): 0, or -1 with the refusal written; charge 0: no rate-limit
 * charge.  The decoded key is left in e->http->key. */
int edge_http_gates(struct conn *c, const struct http_run *x, struct http_slice raw,
                    enum cmd_id cmd, int charge);
/* A query parameter: 0 absent, 1 present (*v), -1 malformed (400 written). */
int edge_http_param(struct conn *c, const struct http_run *x, const char *name,
                    struct http_slice *v);
/* 400 with why. */
void edge_http_bad(struct conn *c, const struct http_run *x, const char *why);
/* 1 if s begins with lit (*rest: what follows). */
int edge_http_prefix(struct http_slice s, const char *lit, struct http_slice *rest);

/* ---- edge_http_stats.c --------------------------------------------------------------- */

/* GET /v1/stats: INFO all as a JSON object (the caller checked access). */
void edge_http_stats(struct conn *c, const struct http_run *x);

/* ---- edge_http_throttle.c ------------------------------------------------------------ */

/* POST /v1/ratelimit/KEY?burst=&rate=&period=[&quantity=]: CL.THROTTLE over
 * HTTP (edge_throttle.h); raw is the key as it came in the path. */
void edge_http_throttle(struct conn *c, const struct http_run *x, struct http_slice raw);

/* ---- edge_http_write.c --------------------------------------------------------------- */

/* PUT and DELETE /v1/kv/{key} (raw: the key as sent): options, gates, then
 * the op (x->pre: the gates only).  0, or -1 with a refusal written. */
int edge_http_kv_write(struct conn *c, const struct http_run *x, struct http_slice raw);
/* A PUT whose header section parsed at p[0..used) (x->req): 1 when its body
 * is whole in p[0..n) (x->body set), 0 when not yet (parsed again when it
 * is: the session's body_need), -1 when refused (written; close). */
int edge_http_body(struct conn *c, struct http_run *x, const char *p, size_t n, size_t used);

/* One PUT or DELETE whose gates passed (its key in e->http->key). */
struct http_write {
    const struct http_req *q;
    int keep_alive;
    struct http_slice body;       /* PUT: the value */
    struct wire_expiry exp;       /* ?ttl= / ?px= */
    int create;                   /* If-None-Match: * (SET NX) */
    int match;                    /* If-Match (edge_http_cas) */
    struct http_slice idem;       /* Idempotency-Key's value, unquoted (p NULL: none) */
};
void edge_http_write(struct conn *c, const struct http_write *w);
struct op;
/* A write op's recorded error (op->errbuf) answered in HTTP: 504 "outcome
 * unknown: ...", 503 or 500 "not applied: ..." (README's table); op_finish. */
void edge_http_write_error(struct op *op, int minor, int keep_alive);

/* ---- edge_http_cas.c ----------------------------------------------------------------- */

/* If-Match's value: 1 with *version ("V"), 0 for *, -1 malformed (a list,
 * a weak tag, not a version). */
int edge_http_if_match(struct http_slice v, uint64_t *version);
/* Idempotency-Key's value: 0 with *out (an sf-string's contents, or the
 * bare token), or -1 (empty, too long, not visible ASCII). */
int edge_http_idem_key(struct http_slice v, struct http_slice *out);
/* A PUT or DELETE with If-Match or an Idempotency-Key (gates passed), as an
 * owner transaction: with w->match the compare-and-set on (key, version)
 * (has_watch 0: If-Match: *, the key must exist). */
void edge_http_cas(struct conn *c, const struct http_write *w, uint64_t version, int has_watch);

/* ---- edge_http_sess.c ---------------------------------------------------------------- */

/* 1 if hs holds a poll or a stream (a GET waiting on its flight is not held). */
int edge_http_sess_holds(const struct http_sess *hs);
/* 1 if protected mode refuses c's requests under the users in force. */
int edge_http_sess_denied(const struct conn *c);
/* The user request q logs in as: its Basic credentials, else the initial
 * user; -1: not logged in (401; counted in auth_failures). */
int edge_http_sess_login(struct conn *c, const struct http_req *q);
/* A reload (after edge_auth_reload): sessions whose held requests no longer
 * log in, or may no longer read their key, are closed soon; held timers that
 * next makes earlier are re-armed. */
void edge_http_sess_reload(struct edge *e, const struct http_opts *next);

/* ---- edge_http_watch.c --------------------------------------------------------------- */

/* GET/HEAD /v1/watch/{key} (r on the stack, gates passed); last: the
 * Last-Event-ID (has_index) to resume after. */
void edge_http_watch(struct hreq *r);
/* The edge stops: the stream ends. */
void edge_http_watch_stop(struct hreq *r);
/* Cron: a stream whose client was slow sends the latest value once it has
 * room. */
void edge_http_watch_cron(struct hreq *r);

#endif
