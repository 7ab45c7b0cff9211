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
 *
 * TLS: a connection accepted on the TLS port has c->ssl, and its bytes go
 * through SSL_read / SSL_write on the same non-blocking fd and the same
 * buffers; c->ssl is checked in on_read, on_write and conn_flush only, so the
 * plaintext path costs one predictable branch.  The handshake runs first
 * (from either event); a read that needs the fd writable (SSL_read's
 * WANT_WRITE) or a write that needs it readable (SSL_write's WANT_READ) is
 * recorded in c->tls and retried from the other event.  conn_cron closes a
 * connection whose handshake has not finished within tls-handshake-timeout
 * (a stalled client, or one speaking plaintext that never sends a ClientHello
 * the handshake can fail on).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <limits.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "server/edge/edge_int.h"
#include "server/core/log.h"
#include "server/core/clock.h"

#define READ_CHUNK (16 * 1024) /* also one TLS record's largest plaintext */
#define IDLE_BUF_KEEP (16 * 1024)

/* c->tls bits */
#define CONN_TLS_HANDSHAKE 0x1    /* handshake not finished */
#define CONN_TLS_READ_WANTS_WRITE 0x2
#define CONN_TLS_WRITE_WANTS_READ 0x4
#define CONN_TLS_FATAL 0x8        /* a fatal TLS error: no close_notify */
#define CONN_TLS_COUNTED 0x10     /* counted in tls_connections */

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

void conn_accept(struct edge *e, int fd, int tls)
{
    const struct cfg *cfg = e->ctx->cfg;
    if (e->stopping || clients_now(e) >= (uint64_t)cfg->maxclients) {
        static const char msg[] = "-ERR max number of clients reached\r\n";
        if (!tls) { /* a TLS client could not read it */
            ssize_t w = write(fd, msg, sizeof(msg) - 1);
            (void)w;
        }
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
    c->created_ms = c->last_ms = clock_mono_ms();
    resp_parser_init(&c->parser, &e->limits);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
        format_addr(&ss, c->addr, sizeof(c->addr));
    else
        ss.ss_family = AF_UNSPEC;
    int denied = edge_auth_accept(c, (const struct sockaddr *)&ss); /* protected mode */
    sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        format_addr(&ss, c->laddr, sizeof(c->laddr));
    tune_socket(fd, cfg);
    evutil_make_socket_nonblocking(fd);
    if (tls) {
        ERR_clear_error();
        c->ssl = e->tls_ctx != NULL ? SSL_new(e->tls_ctx) : NULL;
        if (c->ssl != NULL && SSL_set_fd(c->ssl, fd) == 1)
            SSL_set_accept_state(c->ssl);
        else
            tls = -1;
        c->tls = CONN_TLS_HANDSHAKE;
        ERR_clear_error();
    }
    c->rev = event_new(e->base, fd, EV_READ | EV_PERSIST, on_read, c);
    c->wev = event_new(e->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
    if (tls < 0 || c->rev == NULL || c->wev == NULL || event_add(c->rev, NULL) != 0) {
        if (c->rev)
            event_free(c->rev);
        if (c->wev)
            event_free(c->wev);
        SSL_free(c->ssl);
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
    if (denied) {
        edge_auth_deny(c);
        conn_flush(c);
    }
}

void conn_close(struct conn *c)
{
    struct edge *e = c->e;
    edge_data_conn_gone(c);
    slots_release(c);
    event_free(c->rev);
    event_free(c->wev);
    if (c->ssl != NULL) {
        /* A close_notify, best effort (never waited for), unless the
         * session failed or never started. */
        if (!(c->tls & (CONN_TLS_FATAL | CONN_TLS_HANDSHAKE))) {
            ERR_clear_error();
            SSL_shutdown(c->ssl);
        }
        if (c->tls & CONN_TLS_COUNTED)
            board_add(&e->stats->tls_connections, -1);
        SSL_free(c->ssl);
        ERR_clear_error();
    }
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
    if (c->gated && edge_auth_gate(c, d, argc, argv) != 0) /* NOAUTH, NOPERM */
        return;
    /* Rate limit (server/ratelimit.h, edge_rl.c).  A command without a limit
     * costs this one branch; one over its limit is answered "-RATELIMITED
     * retry in N ms" and not run, and the connection stays open. */
    if (c->e->rl_map[d->id] != RL_CLS_NONE && edge_rl_refuse(c, d, argc, argv))
        return;
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
        /* Bytes OpenSSL decrypted already would raise no read event. */
        if (c->ssl != NULL && SSL_pending(c->ssl) > 0)
            event_active(c->rev, EV_READ, 1);
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

/* Everything is written. */
static void flush_done(struct conn *c)
{
    event_del(c->wev);
    buf_shrink(&c->out, IDLE_BUF_KEEP);
    if (c->close_after_write && c->sq_head == NULL) {
        conn_close(c);
        return;
    }
    c->soft_since_ms = 0;
}

/* A TLS session ended in an error: counted if it was in its handshake. */
static void tls_failed(struct conn *c)
{
    c->tls |= CONN_TLS_FATAL;
    if (c->tls & CONN_TLS_HANDSHAKE) {
        board_add(&c->e->stats->tls_handshake_failures, 1);
        char why[160] = "connection closed";
        unsigned long e = ERR_peek_error();
        if (e != 0)
            ERR_error_string_n(e, why, sizeof(why));
        log_verbose("client %s: TLS handshake failed (%s); closing", c->addr, why);
    }
    ERR_clear_error();
    conn_close(c);
}

/* Drives the handshake: 1 finished, 0 waiting for the fd, -1 closed. */
static int tls_handshake(struct conn *c)
{
    ERR_clear_error();
    int r = SSL_do_handshake(c->ssl);
    if (r == 1) {
        c->tls = (uint8_t)((c->tls & ~CONN_TLS_HANDSHAKE) | CONN_TLS_COUNTED);
        board_add(&c->e->stats->tls_connections, 1);
        if (buf_unread(&c->out) > 0)
            event_add(c->wev, NULL); /* a reply queued before it finished */
        else
            event_del(c->wev);
        return 1;
    }
    int err = SSL_get_error(c->ssl, r);
    if (err == SSL_ERROR_WANT_READ) {
        event_del(c->wev);
        return 0;
    }
    if (err == SSL_ERROR_WANT_WRITE) {
        event_add(c->wev, NULL);
        return 0;
    }
    tls_failed(c);
    return -1;
}

/* Reads what the TLS session has into c->in (room reserved): bytes, 0 for
 * none now, -1 if the connection was closed. */
static ssize_t tls_read(struct conn *c)
{
    if (c->tls & CONN_TLS_HANDSHAKE) {
        int h = tls_handshake(c);
        if (h <= 0)
            return h; /* c is freed at -1 */
    }
    size_t room = buf_room(&c->in);
    ERR_clear_error();
    int n = SSL_read(c->ssl, buf_tail(&c->in), room > INT_MAX ? INT_MAX : (int)room);
    if (n > 0)
        return n;
    int err = SSL_get_error(c->ssl, n);
    if (err == SSL_ERROR_WANT_READ)
        return 0;
    if (err == SSL_ERROR_WANT_WRITE) {
        c->tls |= CONN_TLS_READ_WANTS_WRITE;
        event_add(c->wev, NULL);
        return 0;
    }
    if (err == SSL_ERROR_ZERO_RETURN) { /* the client's close_notify */
        conn_close(c);
        return -1;
    }
    tls_failed(c);
    return -1;
}

static void tls_flush(struct conn *c)
{
    if (c->tls & CONN_TLS_HANDSHAKE) {
        /* Output before the handshake finished (a protected-mode refusal at
         * accept) waits for it; the handshake needs the read event even if
         * the connection is closing. */
        if (buf_unread(&c->out) > 0 && !event_pending(c->rev, EV_READ, NULL))
            event_add(c->rev, NULL);
        if (tls_handshake(c) <= 0)
            return;
    }
    while (buf_unread(&c->out) > 0) {
        /* After a WANT_*, SSL_write is retried with the same head bytes and a
         * length never smaller (out only grows at its tail until written). */
        size_t len = buf_unread(&c->out);
        ERR_clear_error();
        int n = SSL_write(c->ssl, buf_head(&c->out), len > INT_MAX ? INT_MAX : (int)len);
        if (n > 0) {
            buf_consume(&c->out, (size_t)n);
            continue;
        }
        int err = SSL_get_error(c->ssl, n);
        if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
            if (!check_output(c, clock_mono_ms()))
                return;
            if (err == SSL_ERROR_WANT_WRITE) {
                event_add(c->wev, NULL);
            } else {
                c->tls |= CONN_TLS_WRITE_WANTS_READ;
                event_del(c->wev);
                event_add(c->rev, NULL);
            }
            return;
        }
        tls_failed(c);
        return;
    }
    flush_done(c);
}

void conn_flush(struct conn *c)
{
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
            if (tls_handshake(c) <= 0)
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

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    const struct cfg *cfg = c->e->ctx->cfg;
    size_t limit = (size_t)cfg->client_query_buffer_limit;
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
    if (buf_reserve(&c->in, READ_CHUNK, 0) != HKV_OK) {
        conn_close(c);
        return;
    }
    ssize_t n;
    if (c->ssl == NULL) {
        n = read(fd, buf_tail(&c->in), buf_room(&c->in));
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
    } else if ((n = tls_read(c)) <= 0) {
        return; /* waiting, or closed */
    }
    c->in.len += (size_t)n;
    c->last_ms = clock_mono_ms();
    process_input(c);
    if (!c->close_after_write && buf_unread(&c->in) > conn_query_limit(c, limit)) {
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

int conn_cron(struct conn *c, int64_t now)
{
    const struct cfg *cfg = c->e->ctx->cfg;
    if (c->ssl != NULL && (c->tls & CONN_TLS_HANDSHAKE) &&
        now - c->created_ms >= cfg->tls_handshake_timeout_ms) {
        board_add(&c->e->stats->tls_handshake_failures, 1);
        log_verbose("client %s: TLS handshake not finished in %lld ms; closing", c->addr,
                    (long long)(now - c->created_ms));
        c->tls |= CONN_TLS_FATAL;
        conn_close(c);
        return 0;
    }
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
