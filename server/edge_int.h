/*
 * edge_int.h - what the edge's files share: the edge context and a client
 * connection.  Private to server/edge*.c and server/info.c.
 */
#ifndef HKV_EDGE_INT_H
#define HKV_EDGE_INT_H

#include <stdint.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "proto/buf.h"
#include "proto/cmd.h"
#include "proto/resp.h"
#include "server/worker.h"

struct conn;

struct edge {
    struct worker_ctx *ctx;
    struct event_base *base;
    struct worker *worker;
    struct evconnlistener **listeners;
    size_t nlisteners;
    struct event *cron;           /* 100 ms: idle timeouts, soft output limits */
    struct event *deadline;       /* stop deadline */
    struct conn *conns;           /* every open connection, a doubly linked list */
    uint64_t nconns;
    uint64_t next_client_id;
    struct board_slot *stats;     /* this edge's counters in the scoreboard */
    struct resp_limits limits;
    int stopping;
    int64_t ops_sample_ms;        /* instantaneous_ops_per_sec sampling */
    uint64_t ops_sample_cmds;
    uint64_t ops_per_sec;
};

struct conn {
    struct edge *e;
    int fd;
    uint64_t id;
    struct event *rev;
    struct event *wev;
    struct hkv_buf in;
    struct hkv_buf out;
    struct resp_parser parser;
    int proto;                    /* 2 or 3 */
    int close_after_write;
    int64_t created_ms;
    int64_t last_ms;              /* last byte received */
    int64_t soft_since_ms;        /* output over the soft limit since, 0 = not */
    uint64_t ncmds;
    const char *last_cmd;
    char name[128];
    char lib_name[64];
    char lib_ver[32];
    char addr[64];
    char laddr[64];
    struct conn *prev, *next;
};

typedef void (*edge_handler)(struct conn *c, int argc, const struct resp_slice *argv);

/* The handler of each command id, NULL for commands this edge does not serve. */
extern const edge_handler edge_handlers[CMD_COUNT];

/* Accepts a client socket; closes fd on failure. */
void conn_accept(struct edge *e, int fd);
/* Closes now, dropping unsent output. */
void conn_close(struct conn *c);
/* Periodic checks of one connection; returns 0 if it was closed. */
int conn_cron(struct conn *c, int64_t now_ms);
/* Sends what is buffered; called after handlers have appended replies. */
void conn_flush(struct conn *c);

/* INFO: renders the requested sections ("" or "default", "all", or names). */
void info_render(struct hkv_buf *out, struct edge *e, int nsections,
                 const struct resp_slice *sections);

/* Case-insensitive compare of a slice with a C string. */
int slice_is(const struct resp_slice *s, const char *lit);

#endif
