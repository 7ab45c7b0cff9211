/*
 * storm_int.h - what storm's files share: options, connections, the run's
 * state, and the functions each file offers the others.
 *   storm.c         the epoll loop, readers, the writer (its own thread), main
 *   storm_report.c  INFO owner_reads, percentiles, the summary lines
 *   storm_cli.c     usage and option parsing
 */
#ifndef HKV_STORM_INT_H
#define HKV_STORM_INT_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proto/buf.h"
#include "proto/resp.h"

#define MAX_CONNS 10000
#define READ_CHUNK 65536
#define RECONNECT_NS (100 * 1000000LL)
#define CONNECT_PHASE_NS (1500 * 1000000LL)
#define HARD_EXTRA_NS (5000 * 1000000LL)
#define STATS_POLL_WAIT_MS 1200 /* hotkvd edges poll owners' STATS every 1 s */

enum kind { K_READER, K_WRITER };
enum phase { PH_CONNECT, PH_RUN, PH_DRAIN, PH_DONE };

struct opts {
    const char *host;
    int port;
    int writer_port;    /* the writer's port; 0: port */
    int readers;
    int pipeline;
    long keys;
    double zipf;
    double duration;
    int write_interval_ms;
    int write_timeout_ms;
    int value_size;
    const char *latency_log;
    int info_owner_reads;
    const char *key;
    long load;
};

struct conn {
    int fd;
    enum kind kind;
    int connected;
    int inflight;
    uint32_t ev;              /* epoll events currently registered */
    int64_t retry_at;         /* reconnect time (ns) while fd < 0, 0 = none */
    struct hkv_buf in;
    struct hkv_buf out;
};

struct wrec {
    int64_t sent;             /* ns since start */
    int64_t lat;              /* ns; -1 pending, -2 lost (connection failed) */
    int err;                  /* an error reply */
    int late;                 /* answered after the timeout */
};

struct storm {
    struct opts o;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    int ep;
    enum phase phase;
    int64_t t0, start, end, hard;
    struct conn *conns;       /* readers, then the writer last (if has_writer) */
    int nconns;
    int has_writer;           /* this loop runs the writer (storm.c: the writer's thread) */
    pthread_barrier_t *bar;   /* the writer's thread and main meet at start */
    int connected_n;          /* the writer's thread: connections up after connecting */
    int pending_reconnects;
    /* keys */
    double *cdf;              /* Zipf CDF over ranks, NULL for one key */
    uint64_t rng;
    struct hkv_buf hotreq;    /* pre-encoded GET of the hot key */
    char *value;              /* value-size bytes, rewritten per write */
    /* reader counters */
    uint64_t r_ops, r_err, r_null, r_conn_err, r_other;
    /* load mode */
    long load_next, load_done;
    uint64_t load_err;
    /* writer */
    struct wrec *w;
    size_t w_n, w_cap, w_head;
    uint64_t w_seq, w_timeouts, w_conn_err;
    int64_t next_tick;
};

int64_t now_ns(void);
void die(const char *fmt, const char *arg) __attribute__((noreturn));
void usage(FILE *f);
void parse_opts(struct opts *o, int argc, char **argv);
int info_owner_reads(struct storm *s, int timeout_ms, int64_t *out);
void write_latency_log(struct storm *s);
int report_load(struct storm *s, double secs);
void report(struct storm *s, double secs, int info_rc0, int64_t reads0, int info_rc1,
            int64_t reads1);

#endif
