/*
 * etcd_int.h - what etcd.c (the client: options, endpoints, the queue of
 * unary calls, authentication) shares with etcd_watch.c (watch streams).
 * Nobody else includes it.
 *
 * Calls go through one FIFO queue and one connection, one at a time on the
 * wire.  A watch waits in the same queue for a token (an internal call that
 * sends nothing), so a client with etcd-user authenticates once for both.
 * etcd_watch.c calls into etcd.c; etcd.c reaches the watches only through
 * the detach pointer each one registers (so the two files do not call each
 * other in a circle).
 */
#ifndef HKV_ETCD_INT_H
#define HKV_ETCD_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <event2/dns.h>
#include <openssl/ssl.h>

#include "proto/buf.h"
#include "server/agent/etcd.h"
#include "server/agent/etcd_local.h"
#include "server/agent/etcd_remote.h"
#include "proto/etcd_msg.h"
#include "server/agent/etcd_http.h"

#define ETCD_DEFAULT_TIMEOUT_MS 2000
#define ETCD_DEFAULT_MAX_BODY (4u << 20)

/* An internal call's completion: status HKV_OK when the token (if any) is
 * there, else the failure and its reason. */
typedef void (*etcd_ready_cb)(void *arg, int status, int code, const char *why);

struct etcd_call {
    TAILQ_ENTRY(etcd_call) link;
    enum etcd_kind kind;
    const char *path;             /* NULL: an internal call (a token step) */
    struct hkv_buf body;
    etcd_cb cb;
    etcd_ready_cb ready;
    void *arg;
    int64_t deadline;             /* monotonic ms */
    int auth_retried;             /* re-sent once after "invalid auth token" */
    unsigned tried;               /* endpoints that refused the connection */
    int http_status;
    struct hkv_buf answer;
};
TAILQ_HEAD(etcd_queue, etcd_call);

/* A watch as the client sees it: a link in its list, and how to cut it
 * loose when the client goes away first. */
struct etcd_wlink {
    struct etcd_wlink *next, *prev;
    void (*detach)(struct etcd_wlink *l);
};

struct etcd {
    struct event_base *base;
    struct evdns_base *dns;       /* NULL until a host name needs it */
    /* options (copies) */
    char **endpoints;
    struct http_url *urls;
    size_t nendpoints;
    char *user, *password, *ca_file;
    int64_t timeout_ms;
    size_t max_body;
    SSL_CTX *ssl;                 /* when an endpoint is https */
    uint64_t gen;                 /* bumped by etcd_set_opts */
    /* the unary connection */
    size_t cur;                   /* the endpoint later calls go to */
    struct http_conn *conn;
    size_t conn_ep;
    uint64_t conn_gen;
    struct etcd_queue queue;
    struct etcd_call *inflight;
    struct event *kick;
    char *token;                  /* after authenticate */
    struct etcd_wlink watches;    /* list head */
    int *dead;                    /* set by etcd_destroy during a callback */
    struct etcd_local *local;     /* not NULL: every call goes to the local store */
    struct etcd_remote *remote;   /* not NULL: every call goes to an agent's store */
    char *local_name;             /* "local:PATH": etcd_endpoint */
};

struct etcd_call *etcd_call_new(enum etcd_kind kind, const char *path);
void etcd_call_free(struct etcd_call *c);
/* Queues c (deadline: now + timeout) and schedules the queue's run. */
void etcd_submit(struct etcd *e, struct etcd_call *c);
/* Takes a queued call back out (not once it is in flight) and frees it. */
void etcd_call_cancel(struct etcd *e, struct etcd_call *c);
/* Endpoint idx failed to connect or timed out: later calls go to the next
 * one. */
void etcd_endpoint_bad(struct etcd *e, size_t idx);
/* etcd said the token is invalid: the next call authenticates again. */
void etcd_token_invalid(struct etcd *e);
/* 1 if reason (etcd's text) says the auth token is invalid or expired. */
int etcd_is_token_error(int code, const char *reason);

#endif
