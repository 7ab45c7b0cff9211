/*
 * edge_conn.c - a client connection: read, parse, hand each request to the
 * dispatch hook, write (edge_conn.h).
 *
 * Plain events and our own buffers rather than bufferevents: on the GET path
 * bufferevents cost 30-40% more CPU per request (measured, LIBRARIES.md §1).
 * Replies are appended to `out` and written at the end of each read batch, so
 * a pipeline of N requests costs one write(2), not N.
 *
 * This layer knows no command: what a request means, who the client is and
 * what it may do are the hooks' business (e->conns->opts.hooks: accepted,
 * dispatch, closing), so nothing here calls up into the edge.  Replies owed
 * while owners answer earlier requests wait in reply slots (edge_reply.c);
 * dispatch points `out` at the current slot when one is needed, so the hook
 * always just appends to c->out.
 *
 * Limits: the query buffer never grows past client-query-buffer-limit (or a
 * tighter c->query_cap); what is held for the client's answers (conn_held:
 * the output buffer, replies waiting in slots, held HTTP requests) closes
 * it past the hard limit, or past the soft limit for longer than its
 * seconds (a client that never reads cannot hold memory, nor one whose
 * pipeline waits behind a slow answer).  Checked when a write would block,
 * when everything written still leaves slots held, before each request of
 * a batch (a batch stops at the hard limit) and every 100 ms: the verdicts
 * are edge_conn_limit.c's.
 *
 * The write lane (edge_conn.h) is edge_conn_lane.c: process_input tells it
 * how each batch went, on_read ticks it after each client read.
 *
 * TLS (edge_conn_tls.c): a connection accepted on the TLS port has c->ssl,
 * checked in on_read, on_write and conn_flush only.  conn_cron closes a
 * connection whose handshake has not finished within tls-handshake-timeout.
 */
#include "server/edge/edge_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/edge/edge_conn_int.h"
#include "server/edge/edge_conn_lane.h"
#include "server/edge/edge_conn_limit.h"
#include "server/edge/edge_conn_tls.h"
#include "server/edge/edge_reply.h"

#define READ_CHUNK (16 * 1024) /* also one TLS record's largest plaintext */
#define IDLE_BUF_KEEP (16 * 1024)

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);

static void format_addr(const struct sockaddr_storage *ss, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    }
    snprintf(buf, len, "%s:%d", host, port);
}

static void tune_socket(int fd, const struct conns_opts *o)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (o->tcp_keepalive_ms > 0) {
        int idle = (int)(o->tcp_keepalive_ms / 1000);
        int intvl = idle / 3 > 0 ? idle / 3 : 1;
        int cnt = 3;
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    }
}

static uint64_t clients_now(struct edge *e)
{
    uint64_t n = 0;
    struct board *b = e->ctx->board;
    for (uint32_t i = 0; i < b->nslots; i++)
        if (atomic_load_explicit(&b->slots[i].role, memory_order_relaxed) == BOARD_EDGE)
            n += board_load(&b->slots[i].connected_clients);
    return n;
}

void conn_accept(struct edge *e, int fd, int tls)
{
    conn_accept_with(e, fd, tls, e->conns->opts.hooks);
}

void conn_accept_with(struct edge *e, int fd, int tls, const struct conn_hooks *hooks)
{
    const struct conns_opts *o = &e->conns->opts;
    if ((e->stopping && !hooks->while_stopping) || clients_now(e) >= (uint64_t)o->maxclients) {
        const char *msg = hooks->refusal != NULL ? hooks->refusal
                                                 : "-ERR max number of clients reached\r\n";
        if (!tls) { /* a TLS client could not read it */
            ssize_t w = write(fd, msg, strlen(msg));
            (void)w;
        }
        close(fd);
        board_add(&e->stats->rejected_connections, 1);
        return;
    }
    struct conn *c = calloc(1, sizeof(*c) + hooks->sess_size);
    if (c == NULL) {
        close(fd);
        return;
    }
    c->e = e;
    c->hooks = hooks;
    c->fd = fd;
    c->id = board_client_id(e->ctx->board); /* unique on the host (CLIENT KILL ID) */
    c->created_ms = c->last_ms = clock_mono_ms();
    resp_parser_init(&c->parser, &e->conns->opts.limits);
    struct sockaddr_storage peer, ss;
    socklen_t sl = sizeof(peer);
    if (getpeername(fd, (struct sockaddr *)&peer, &sl) == 0)
        format_addr(&peer, c->addr, sizeof(c->addr));
    else
        peer.ss_family = AF_UNSPEC;
    sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        format_addr(&ss, c->laddr, sizeof(c->laddr));
    tune_socket(fd, o);
    evutil_make_socket_nonblocking(fd);
    int failed = tls && conn_tls_new(c, e->conns->tls_ctx) != 0;
    c->rev = event_new(e->base, fd, EV_READ | EV_PERSIST, on_read, c);
    c->wev = event_new(e->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
    /* Writes at the owner links' priority (0): the write conn_slot_done
     * activates then runs in the same pass as the owner answers that
     * activated it, not after one more epoll_wait. */
    if (c->wev != NULL)
        event_priority_set(c->wev, 0);
    if (failed || c->rev == NULL || c->wev == NULL || event_add(c->rev, NULL) != 0) {
        if (c->rev)
            event_free(c->rev);
        if (c->wev)
            event_free(c->wev);
        conn_tls_free(c);
        resp_parser_deinit(&c->parser);
        free(c);
        close(fd);
        return;
    }
    c->next = e->conns->list;
    if (e->conns->list)
        e->conns->list->prev = c;
    e->conns->list = c;
    e->conns->n++;
    board_add(&e->stats->connected_clients, 1);
    board_add(&e->stats->total_connections_received, 1);
    c->hooks->accepted(c, (const struct sockaddr *)&peer);
    if (buf_unread(&c->out) > 0) /* refused at once (protected mode) */
        conn_flush(c);
}

void conn_close(struct conn *c)
{
    struct edge *e = c->e;
    lane_forget(c);
    c->hooks->closing(c);
    slots_release(c);
    event_free(c->rev);
    event_free(c->wev);
    conn_tls_free(c);
    close(c->fd);
    if (c->prev)
        c->prev->next = c->next;
    else
        e->conns->list = c->next;
    if (c->next)
        c->next->prev = c->prev;
    e->conns->n--;
    board_add(&e->stats->connected_clients, -1);
    resp_parser_deinit(&c->parser);
    buf_deinit(&c->in);
    buf_deinit(&c->out);
    free(c);
}

/* Runs one request (fn, or the dispatch hook).  When replies are owed
 * already, or its reply is to be dropped (CLIENT REPLY), the request gets a
 * slot and c->out is that slot's buffer while it runs. */
#define CONN_MUTE_OFF  0x1  /* CLIENT REPLY OFF */
#define CONN_MUTE_SKIP 0x2  /* the request now dispatched is muted */
#define CONN_MUTE_NEXT 0x4  /* and the one after it */

static int run(struct conn *c, void (*fn)(struct conn *, void *), void *arg, int argc,
               const struct resp_slice *argv)
{
    struct rslot *s = NULL;
    int mute = c->reply_mode & (CONN_MUTE_OFF | CONN_MUTE_SKIP);
    c->reply_mode &= (uint8_t)~CONN_MUTE_SKIP; /* this request uses the skip up */
    if (c->sq_head != NULL || mute) {
        s = slot_push(c);
        if (s == NULL)
            return -1;
        s->mute = mute != 0;
        struct hkv_buf t = c->out;
        c->out = s->buf;
        s->buf = t;
    }
    c->cur = s;
    c->cur_deferred = 0;
    if (fn != NULL)
        fn(c, arg);
    else
        c->hooks->dispatch(c, argc, argv);
    if (s != NULL) {
        struct hkv_buf t = c->out;
        c->out = s->buf;
        s->buf = t;
    }
    if (c->cur != NULL)
        slots_after_dispatch(c, c->cur);
    if (c->reply_mode & CONN_MUTE_NEXT) /* SKIP: the next request's too */
        c->reply_mode = (uint8_t)((c->reply_mode & ~CONN_MUTE_NEXT) | CONN_MUTE_SKIP);
    return 0;
}

void conn_reply_mode(struct conn *c, enum conn_reply mode)
{
    /* Only ON answers (OFF and SKIP write no reply, as Redis's); the
     * request after a SKIP is muted from run(), once this one ends. */
    switch (mode) {
    case CONN_REPLY_ON: /* answered although it ran muted */
        c->reply_mode = 0;
        if (c->cur != NULL)
            c->cur->mute = 0;
        break;
    case CONN_REPLY_OFF: c->reply_mode = CONN_MUTE_OFF; break;
    case CONN_REPLY_SKIP:
        if (!(c->reply_mode & CONN_MUTE_OFF))
            c->reply_mode |= CONN_MUTE_NEXT;
        break;
    }
}

int conn_run(struct conn *c, void (*fn)(struct conn *c, void *arg), void *arg)
{
    return run(c, fn, arg, 0, NULL);
}

static void conn_pause(struct conn *c)
{
    if (!c->paused) {
        c->paused = 1;
        event_del(c->rev);
    }
}

/* Parses and runs the whole requests in `in`, at most CONN_TURN_MAX (then
 * c->more_input is set and the read event made active: the rest runs at
 * the connection's next callback, edge_conn.h).  Stops early when the
 * client is to be closed or paused. */
static void process_input(struct conn *c)
{
    c->in_process = 1;
    c->more_input = 0;
    c->batch.writes = c->batch.reads = 0;
    c->batch.n = 0;
    c->batch.owed = c->nslots;
    int64_t hard = c->pubsub_limits ? c->e->conns->opts.pubsub_hard
                                    : c->e->conns->opts.output_hard;
    for (int ran = 0; buf_unread(&c->in) > 0 && !c->close_after_write; ran++) {
        if (hard > 0 && conn_held(c) > (size_t)hard) {
            /* The flush after the batch closes it if it stays over
             * (check_output); if the socket took enough, the rest
             * runs at the next callback, as at CONN_TURN_MAX. */
            c->more_input = 1;
            event_active(c->rev, EV_READ, 1);
            break;
        }
        if (c->nslots >= c->e->conns->opts.max_pending || c->hold != NULL ||
            c->req_held >= (size_t)c->e->conns->opts.max_pending_bytes) {
            conn_pause(c);
            break;
        }
        if (ran >= CONN_TURN_MAX) {
            c->more_input = 1;
            event_active(c->rev, EV_READ, 1);
            break;
        }
        if (c->hooks->input != NULL) {
            long n = c->hooks->input(c, buf_head(&c->in), buf_unread(&c->in));
            if (n <= 0) {
                if (c->hold != NULL)
                    conn_pause(c); /* parked (edge_pause.h): read nothing more */
                break;
            }
            buf_consume(&c->in, (size_t)n);
            continue;
        }
        struct resp_req req;
        size_t used = 0;
        const char *why = NULL;
        int rc = resp_parse(&c->parser, buf_head(&c->in), buf_unread(&c->in), &used, &req, &why);
        if (rc == HKV_EAGAIN)
            break;
        if (rc != HKV_OK) {
            board_add(&c->e->stats->protocol_errors, 1);
            struct hkv_buf *o = &c->out;
            struct rslot *s = c->sq_head != NULL ? slot_push(c) : NULL;
            if (s != NULL) {
                o = &s->buf;
                s->ready = 1;
            }
            resp_add_error(o, why != NULL ? why : "ERR Protocol error");
            c->close_after_write = 1;
            log_verbose("client %s: %s; closing", c->addr, why != NULL ? why : "protocol error");
            break;
        }
        if (req.argc > 0 && c->hooks->park != NULL && c->hooks->park(c, req.argc, req.argv)) {
            conn_pause(c); /* the request stays in `in`, parsed again when released */
            break;
        }
        c->batch.n++;
        if (req.argc > 0 && run(c, NULL, NULL, req.argc, req.argv) != 0) {
            c->close_after_write = 1; /* out of memory */
            break;
        }
        buf_consume(&c->in, used);
    }
    c->in_process = 0;
    if (c->batch.n > 0)
        lane_after_batch(c);
}

void conn_resume(struct conn *c)
{
    c->hold = NULL;
    if (c->close_after_write) {
        conn_flush(c);
        return;
    }
    if (c->paused) {
        c->paused = 0;
        event_add(c->rev, NULL);
        /* Bytes OpenSSL decrypted already would raise no read event. */
        if (c->ssl != NULL && SSL_pending(c->ssl) > 0)
            event_active(c->rev, EV_READ, 1);
    }
    process_input(c);
    if (c->close_after_write || c->paused)
        event_del(c->rev);
    conn_flush(c);
}

void conn_hold(struct conn *c, const void *by)
{
    c->hold = by;
}

void conn_release(struct edge *e, const void *by)
{
    struct conn *c = e->conns->list;
    while (c != NULL) {
        struct conn *next = c->next;
        if (c->hold == by) {
            c->hold = NULL;
            if (c->nslots < e->conns->opts.max_pending)
                conn_resume(c);
        }
        c = next;
    }
}

void conn_slot_done(struct conn *c, struct rslot *s)
{
    if (!slot_ready(c, s))
        return; /* answered before its dispatch returned */
    const struct conns_opts *o = &c->e->conns->opts;
    if (c->paused && c->hold == NULL && c->nslots < o->max_pending / 2 &&
        c->req_held < (size_t)o->max_pending_bytes / 2 && !c->close_after_write &&
        !c->in_process) {
        conn_resume(c); /* flushes too */
        return;
    }
    /* Written once this turn's owner answers are in (a write(2) per answer
     * was 43% of the edge on SET -P16; the write event has the links'
     * priority), unless the output is large already: then now, with its
     * limits checked, before one answer for many pipelined reads of a big
     * value fills every reply (check_hostile ping_flood: 206 MB held). */
    size_t now_at = CONN_FLUSH_NOW;
    int64_t hard = c->pubsub_limits ? o->pubsub_hard : o->output_hard;
    if (hard > 0 && (size_t)hard < now_at)
        now_at = (size_t)hard;
    /* Likewise for answers that wait in slots behind an older one (one
     * flight answering 600 pipelined HTTP GETs behind a held poll: 226 MB
     * before the next flush): over the hard limit, the flush closes it. */
    if (buf_unread(&c->out) >= now_at ||
        (hard > 0 && conn_held(c) > (size_t)hard && !c->in_process)) {
        conn_flush(c);
        return;
    }
    event_active(c->wev, EV_WRITE, 1);
}

/* The output limits (edge_conn_limit.c); 0 if c was closed. */
static int check_output(struct conn *c, int64_t now)
{
    if (conn_output_ok(c, now))
        return 1;
    conn_close(c);
    return 0;
}

/* Everything is written (replies may still wait in slots: their bytes
 * count against the limits too). */
static void flush_done(struct conn *c)
{
    event_del(c->wev);
    buf_shrink(&c->out, IDLE_BUF_KEEP);
    if (c->close_after_write && c->sq_head == NULL) {
        conn_close(c);
        return;
    }
    if (c->held == 0)
        c->soft_since_ms = 0;
    else
        check_output(c, clock_mono_ms()); /* may close c */
}

static void tls_flush(struct conn *c)
{
    switch (conn_tls_write(c)) {
    case CONN_TLS_SENT:
        flush_done(c);
        return;
    case CONN_TLS_WAIT:
        return;
    case CONN_TLS_WANT_WRITE:
        if (check_output(c, clock_mono_ms()))
            event_add(c->wev, NULL);
        return;
    case CONN_TLS_WANT_READ:
        if (check_output(c, clock_mono_ms())) {
            c->tls |= CONN_TLS_WRITE_WANTS_READ;
            event_del(c->wev);
            event_add(c->rev, NULL);
        }
        return;
    case CONN_TLS_FAILED:
        conn_close(c);
        return;
    }
}

void conn_flush(struct conn *c)
{
    if (buf_unread(&c->out) > c->out_peak)
        c->out_peak = buf_unread(&c->out);
    if (c->ssl != NULL) {
        tls_flush(c);
        return;
    }
    while (buf_unread(&c->out) > 0) {
        ssize_t n = write(c->fd, buf_head(&c->out), buf_unread(&c->out));
        if (n > 0) {
            buf_consume(&c->out, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (check_output(c, clock_mono_ms()))
                event_add(c->wev, NULL);
            return;
        }
        conn_close(c); /* the peer is gone */
        return;
    }
    flush_done(c);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    if (c->ssl != NULL && (c->tls & (CONN_TLS_HANDSHAKE | CONN_TLS_READ_WANTS_WRITE))) {
        if (c->tls & CONN_TLS_HANDSHAKE) {
            int h = conn_tls_handshake(c);
            if (h < 0)
                conn_close(c);
            if (h <= 0)
                return;
        } else {
            c->tls &= (uint8_t)~CONN_TLS_READ_WANTS_WRITE;
            if (!c->paused && !c->close_after_write) {
                on_read(fd, EV_READ, c); /* retries SSL_read, then flushes */
                return;
            }
        }
    }
    conn_flush(c);
}

static void read_client(evutil_socket_t fd, struct conn *c);

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    struct edge *e = c->e; /* c may be freed by the read */
    int in_lane = c->lane;
    read_client(fd, c);
    lane_tick(e, in_lane);
}

static void read_client(evutil_socket_t fd, struct conn *c)
{
    if (c->ssl != NULL && (c->tls & CONN_TLS_WRITE_WANTS_READ)) {
        /* SSL_write waited for this; read again next round, unless paused. */
        c->tls &= (uint8_t)~CONN_TLS_WRITE_WANTS_READ;
        if (c->paused || c->close_after_write)
            event_del(c->rev);
        else
            event_active(c->rev, EV_READ, 1);
        conn_flush(c);
        return;
    }
    if (c->more_input)
        goto run; /* requests left at CONN_TURN_MAX: they run before more is read */
    if (buf_reserve(&c->in, READ_CHUNK, 0) != HKV_OK) {
        conn_close(c);
        return;
    }
    ssize_t n;
    if (c->ssl == NULL) {
        n = read(fd, buf_tail(&c->in), buf_room(&c->in));
        if (n == 0 && c->sq_head != NULL && c->hooks->hangup != NULL && c->hooks->hangup(c)) {
            conn_close(c); /* a held request only this client waited for */
            return;
        }
        if (n == 0 && (c->sq_head != NULL || buf_unread(&c->out) > 0)) {
            /* Half-closed (`printf ... | nc -N`): answer what was asked, then
             * close, as Redis does. */
            c->close_after_write = 1;
            event_del(c->rev);
            conn_flush(c);
            return;
        }
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            conn_close(c);
            return;
        }
        if (n < 0)
            return;
    } else if ((n = conn_tls_read(c)) <= 0) {
        if (n < 0)
            conn_close(c);
        return; /* waiting, or closed */
    }
    c->in.len += (size_t)n;
    c->last_ms = clock_mono_ms();
run:
    process_input(c);
    /* The bound after the requests ran: an AUTH among them may lift a cap. */
    size_t limit = (size_t)c->e->conns->opts.query_buffer_limit;
    if (c->query_cap > 0 && limit > c->query_cap)
        limit = c->query_cap;
    if (!c->close_after_write && buf_unread(&c->in) > limit) {
        log_verbose("client %s: query buffer over client-query-buffer-limit; closing", c->addr);
        resp_add_error(&c->out, "ERR Protocol error: query buffer limit reached");
        c->close_after_write = 1;
    }
    if (c->close_after_write || c->paused)
        event_del(c->rev);
    else if (c->ssl != NULL && SSL_pending(c->ssl) > 0)
        event_active(c->rev, EV_READ, 1); /* decrypted already: no read event would come */
    buf_shrink(&c->in, IDLE_BUF_KEEP);
    conn_flush(c);
}
