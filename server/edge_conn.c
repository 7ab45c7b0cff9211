/*
 * edge_conn.c - a client connection: read, parse, dispatch, write.
 *
 * Plain events and our own buffers rather than bufferevents: on the GET path
 * bufferevents cost 30-40% more CPU per request (measured, LIBRARIES.md §1).
 * Replies are appended to `out` and written at the end of each read batch, so
 * a pipeline of N requests costs one write(2), not N.
 *
 * Replies owed to a client while owners answer earlier requests wait in
 * reply slots (edge_reply.c); dispatch points `out` at the current slot when
 * one is needed, so handlers always just append to c->out.  A client with
 * client-max-pending replies owed is not read from until half of them
 * are sent (conn_pause / conn_resume); nor is one whose last request went to
 * an owner link over its high watermark, until that link drains.
 *
 * Limits: the query buffer never grows past client-query-buffer-limit; the
 * output buffer closes the client past the hard limit, or past the soft limit
 * for longer than its seconds (a client that never reads cannot hold memory).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/edge_int.h"
#include "server/log.h"

#define READ_CHUNK (16 * 1024)
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

static void tune_socket(int fd, const struct cfg *cfg)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (cfg->tcp_keepalive_ms > 0) {
        int idle = (int)(cfg->tcp_keepalive_ms / 1000);
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

void conn_accept(struct edge *e, int fd)
{
    const struct cfg *cfg = e->ctx->cfg;
    if (e->stopping || clients_now(e) >= (uint64_t)cfg->maxclients) {
        static const char msg[] = "-ERR max number of clients reached\r\n";
        ssize_t w = write(fd, msg, sizeof(msg) - 1);
        (void)w;
        close(fd);
        board_add(&e->stats->rejected_connections, 1);
        return;
    }
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        close(fd);
        return;
    }
    c->e = e;
    c->fd = fd;
    c->id = e->next_client_id++;
    c->proto = 2;
    c->created_ms = c->last_ms = board_now_ms();
    resp_parser_init(&c->parser, &e->limits);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
        format_addr(&ss, c->addr, sizeof(c->addr));
    sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        format_addr(&ss, c->laddr, sizeof(c->laddr));
    tune_socket(fd, cfg);
    evutil_make_socket_nonblocking(fd);
    c->rev = event_new(e->base, fd, EV_READ | EV_PERSIST, on_read, c);
    c->wev = event_new(e->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
    if (c->rev == NULL || c->wev == NULL || event_add(c->rev, NULL) != 0) {
        if (c->rev)
            event_free(c->rev);
        if (c->wev)
            event_free(c->wev);
        resp_parser_deinit(&c->parser);
        free(c);
        close(fd);
        return;
    }
    c->next = e->conns;
    if (e->conns)
        e->conns->prev = c;
    e->conns = c;
    e->nconns++;
    board_add(&e->stats->connected_clients, 1);
    board_add(&e->stats->total_connections_received, 1);
}

void conn_close(struct conn *c)
{
    struct edge *e = c->e;
    edge_data_conn_gone(c);
    slots_release(c);
    event_free(c->rev);
    event_free(c->wev);
    close(c->fd);
    if (c->prev)
        c->prev->next = c->next;
    else
        e->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    e->nconns--;
    board_add(&e->stats->connected_clients, -1);
    resp_parser_deinit(&c->parser);
    buf_deinit(&c->in);
    buf_deinit(&c->out);
    free(c);
}

static void unknown_command(struct conn *c, int argc, const struct resp_slice *argv)
{
    char args[256] = "";
    size_t n = 0;
    for (int i = 1; i < argc && n < 128; i++) {
        int w = snprintf(args + n, sizeof(args) - n, "'%.*s' ", (int)(argv[i].len > 64 ? 64 : argv[i].len),
                         argv[i].p);
        if (w < 0 || (size_t)w >= sizeof(args) - n)
            break;
        n += (size_t)w;
    }
    resp_add_errorf(&c->out, "ERR unknown command '%.*s', with args beginning with: %s",
                    (int)(argv[0].len > 64 ? 64 : argv[0].len), argv[0].p, args);
}

static void run(struct conn *c, int argc, const struct resp_slice *argv)
{
    const struct cmd_def *d = cmd_lookup(argv[0].p, argv[0].len);
    edge_handler h = d != NULL ? edge_handlers[d->id] : NULL;
    board_add(&c->e->stats->total_commands_processed, 1);
    c->ncmds++;
    if (h == NULL) {
        unknown_command(c, argc, argv);
        return;
    }
    c->last_cmd = d->name;
    if (!cmd_arity_ok(d, argc)) {
        resp_add_errorf(&c->out, "ERR wrong number of arguments for '%s' command", d->name);
        return;
    }
    h(c, argc, argv);
}

/* Runs one command.  When replies are owed already, the command gets a slot
 * and c->out is that slot's buffer while it runs. */
static int dispatch(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct rslot *s = NULL;
    if (c->sq_head != NULL) {
        s = slot_push(c);
        if (s == NULL)
            return -1;
        struct hkv_buf t = c->out;
        c->out = s->buf;
        s->buf = t;
    }
    c->cur = s;
    c->cur_deferred = 0;
    run(c, argc, argv);
    if (s != NULL) {
        struct hkv_buf t = c->out;
        c->out = s->buf;
        s->buf = t;
    }
    if (c->cur != NULL)
        slots_after_dispatch(c, c->cur);
    return 0;
}

/* Parses and runs every whole request in `in`.  Stops early when the client
 * is to be closed or paused. */
static void process_input(struct conn *c)
{
    c->in_process = 1;
    while (buf_unread(&c->in) > 0 && !c->close_after_write) {
        if (c->nslots >= c->e->ctx->cfg->client_max_pending || c->wait_link != NULL) {
            conn_pause(c);
            break;
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
        if (req.argc > 0 && dispatch(c, req.argc, req.argv) != 0) {
            c->close_after_write = 1; /* out of memory */
            break;
        }
        buf_consume(&c->in, used);
    }
    c->in_process = 0;
}

void conn_pause(struct conn *c)
{
    if (!c->paused) {
        c->paused = 1;
        event_del(c->rev);
    }
}

void conn_resume(struct conn *c)
{
    c->wait_link = NULL;
    if (c->close_after_write) {
        conn_flush(c);
        return;
    }
    if (c->paused) {
        c->paused = 0;
        event_add(c->rev, NULL);
    }
    conn_process(c);
}

void conn_process(struct conn *c)
{
    process_input(c);
    if (c->close_after_write || c->paused)
        event_del(c->rev);
    conn_flush(c);
}

static int check_output(struct conn *c, int64_t now)
{
    const struct cfg *cfg = c->e->ctx->cfg;
    size_t pending = buf_unread(&c->out);
    if (cfg->client_output_hard > 0 && pending > (size_t)cfg->client_output_hard) {
        log_verbose("client %s: output buffer over the hard limit (%zu bytes); closing", c->addr,
                    pending);
        conn_close(c);
        return 0;
    }
    if (cfg->client_output_soft > 0 && pending > (size_t)cfg->client_output_soft) {
        if (c->soft_since_ms == 0)
            c->soft_since_ms = now;
        else if (now - c->soft_since_ms >= cfg->client_output_soft_ms) {
            log_verbose("client %s: output buffer over the soft limit for %lld ms; closing",
                        c->addr, (long long)(now - c->soft_since_ms));
            conn_close(c);
            return 0;
        }
    } else {
        c->soft_since_ms = 0;
    }
    return 1;
}

void conn_flush(struct conn *c)
{
    while (buf_unread(&c->out) > 0) {
        ssize_t n = write(c->fd, buf_head(&c->out), buf_unread(&c->out));
        if (n > 0) {
            buf_consume(&c->out, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (check_output(c, board_now_ms()))
                event_add(c->wev, NULL);
            return;
        }
        conn_close(c); /* the peer is gone */
        return;
    }
    event_del(c->wev);
    buf_shrink(&c->out, IDLE_BUF_KEEP);
    if (c->close_after_write && c->sq_head == NULL) {
        conn_close(c);
        return;
    }
    c->soft_since_ms = 0;
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    conn_flush(arg);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    const struct cfg *cfg = c->e->ctx->cfg;
    size_t limit = (size_t)cfg->client_query_buffer_limit;
    if (buf_reserve(&c->in, READ_CHUNK, 0) != HKV_OK) {
        conn_close(c);
        return;
    }
    ssize_t n = read(fd, buf_tail(&c->in), buf_room(&c->in));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        conn_close(c);
        return;
    }
    if (n < 0)
        return;
    c->in.len += (size_t)n;
    c->last_ms = board_now_ms();
    process_input(c);
    if (!c->close_after_write && buf_unread(&c->in) > limit) {
        log_verbose("client %s: query buffer over client-query-buffer-limit; closing", c->addr);
        resp_add_error(&c->out, "ERR Protocol error: query buffer limit reached");
        c->close_after_write = 1;
    }
    if (c->close_after_write || c->paused)
        event_del(c->rev);
    buf_shrink(&c->in, IDLE_BUF_KEEP);
    conn_flush(c);
}

int conn_cron(struct conn *c, int64_t now)
{
    const struct cfg *cfg = c->e->ctx->cfg;
    if (cfg->timeout_ms > 0 && now - c->last_ms > cfg->timeout_ms && buf_unread(&c->out) == 0 &&
        c->sq_head == NULL) {
        log_verbose("client %s: idle for %lld ms; closing", c->addr, (long long)(now - c->last_ms));
        conn_close(c);
        return 0;
    }
    if (buf_unread(&c->out) > 0)
        return check_output(c, now);
    return 1;
}

int slice_is(const struct resp_slice *s, const char *lit)
{
    size_t n = strlen(lit);
    return s->len == n && strncasecmp(s->p, lit, n) == 0;
}
