/*
 * edge_link_int.h - the insides of an owner link, shared by the two files
 * of the edge_link module: edge_link.c (the connection's state machine,
 * requests and replies) and edge_link_make.c (making, configuring and
 * freeing a link, and what callers read of it).  Private to them.
 */
#ifndef HKV_EDGE_LINK_INT_H
#define HKV_EDGE_LINK_INT_H

#include <openssl/ssl.h>

#include "server/core/topo.h"
#include "server/edge/edge_link.h"

#define RING_MIN 256
#define READ_CHUNK (64 * 1024)
#define IDLE_KEEP (64 * 1024)

enum link_state { LINK_DOWN, LINK_CONNECTING, LINK_HANDSHAKE, LINK_UP };

struct pend {
    uint64_t id;
    elink_cb cb;
    void *arg;
    int64_t sent_ms;          /* committed; its deadline is sent_ms + the link's timeout now */
};

struct elink {
    struct event_base *base;
    char *path;               /* Unix socket; NULL over TCP */
    char *addr;               /* TCP: the owner's IP; NULL over a Unix socket */
    int port;
    SSL_CTX *tls;             /* TCP: the client context (a reference) */
    char *peer_host;          /* TCP: the host the owner's certificate must name */
    SSL *ssl;                 /* the current connection's TLS session */
    short want;               /* TLS: EV_READ while a write waits for readable */
    int read_wants_write;     /* TLS: a read waits for writable */
    char cluster[64], host[64];
    uint32_t want_owner;
    char name[64];
    char colo[TOPO_COLO_NAME_MAX];
    uint32_t edge_id;
    uint64_t incarnation;     /* this edge process, in HELLO */
    uint8_t role;
    int64_t timeout_ms;
    size_t max_frame;
    elink_drained_fn drained;
    void *drained_arg;
    elink_push_fn push;
    void *push_arg;
    void (*gap)(void *push_arg);

    enum link_state state;
    int fd;
    struct event *rev, *wev;
    struct event *reconnect;
    struct event *timer;
    struct event *flush;      /* zero-delay, the loop's lowest priority: writes `out` */
    int timer_on;
    int write_scheduled;
    int congested;
    int64_t backoff_ms;
    int64_t connect_ms;       /* TCP: when connecting began (its deadline: + timeout_ms) */
    int logged_down;
    int need_hello;           /* the next connection must open with HELLO */
    uint64_t conn;            /* connections made so far (the current one's number) */
    struct { uint64_t conn, inc; } owners[8]; /* owner incarnation per recent connection */
    uint64_t up_conn;             /* the newest connection that went up (bytes may have left) */

    struct hkv_buf out, in;
    int64_t read_ns;          /* clock_mono_ns when the current read batch came in */
    size_t frame_at;          /* unread bytes of out before the frame being encoded */
    struct wire_decoder dec;

    struct pend *ring;
    uint64_t mask;
    uint64_t lo, next;
    uint64_t npending;
};

/* edge_link.c: makes the link's timers, queues HELLO and starts connecting
 * (l filled by elink_create).  0, or -1 (out of memory). */
int elink_start(struct elink *l);

#endif
