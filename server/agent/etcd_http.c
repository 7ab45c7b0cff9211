/*
 * etcd_http.c - the agent's HTTP/1.1 client connection (see etcd_http.h).
 *
 * A connection is a bufferevent (a socket one, or an OpenSSL one over a
 * socket) made on demand, a response parser, one timer and the request in
 * flight.  Bytes are handed to the parser straight from the bufferevent's
 * input, segment by segment (evbuffer_peek), and body slices reach the caller
 * before they are drained: nothing is copied here.  The timer always holds the
 * nearest of the request's deadlines (head, total, idle), re-armed as the
 * response advances.
 *
 * Callbacks may destroy the connection or post the next request, so each one
 * runs through a guard: the connection notes a flag on the caller's stack
 * that destroy sets, and the event handler returns at once when it is set.
 * When a response ends with bytes after it, or the server said it closes, the
 * socket is dropped before done runs, so a request posted from done gets a
 * fresh one.
 */
#include "server/agent/etcd_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "server/core/clock.h"
#include "server/core/tls.h"

struct http_conn {
    struct event_base *base;
    struct evdns_base *dns;
    SSL_CTX *ctx;
    struct http_url url;
    uint64_t max_body;
    struct bufferevent *bev;       /* NULL when not connected */
    struct event *timer;
    struct http_resp resp;
    /* the request in flight */
    int busy;
    int reached;                   /* the connection came up for it */
    int have_head;
    int64_t head_at, total_at, idle_ms;   /* absolute deadlines (0: none) */
    const struct http_handler *h;
    void *arg;
    int *dead;                     /* set by destroy while a callback runs */
    char error[512];
};

int etcd_http_url_parse(const char *url, struct http_url *u)
{
    memset(u, 0, sizeof(*u));
    const char *p;
    if (strncmp(url, "http://", 7) == 0) {
        p = url + 7;
    } else if (strncmp(url, "https://", 8) == 0) {
        p = url + 8;
        u->tls = 1;
    } else {
        return HKV_EINVAL;
    }
    const char *hend;
    const char *after;
    if (*p == '[') {
        hend = strchr(p, ']');
        if (hend == NULL)
            return HKV_EINVAL;
        p++;
        after = hend + 1;
    } else {
        hend = p + strcspn(p, ":/");
        after = hend;
    }
    size_t hl = (size_t)(hend - p);
    if (hl == 0 || hl >= sizeof(u->host) || memchr(p, '@', hl) != NULL)
        return HKV_EINVAL;
    memcpy(u->host, p, hl);
    const char *port = u->tls ? "443" : "80";
    size_t pl = 0;
    if (*after == ':') {
        port = after + 1;
        pl = strspn(port, "0123456789");
        if (pl == 0 || pl > 5 || atoi(port) < 1 || atoi(port) > 65535)
            return HKV_EINVAL;
        after = port + pl;
    } else {
        pl = strlen(port);
    }
    if (!(*after == '\0' || (after[0] == '/' && after[1] == '\0')))
        return HKV_EINVAL;
    memcpy(u->port, port, pl);
    int v6 = strchr(u->host, ':') != NULL;
    snprintf(u->hostport, sizeof(u->hostport), "%s%s%s:%s", v6 ? "[" : "", u->host,
             v6 ? "]" : "", u->port);
    return HKV_OK;
}

SSL_CTX *etcd_http_tls_ctx(const char *ca_file, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        tls_error_text(err, errlen, "SSL_CTX_new failed");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int ok = ca_file != NULL && ca_file[0] != '\0' ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                                                    : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        char why[120];
        tls_error_text(why, sizeof(why), "cannot load");
        snprintf(err, errlen, "etcd CA '%s': %s", ca_file != NULL && ca_file[0] ? ca_file : "(system)",
                 why);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static void close_bev(struct http_conn *c)
{
    if (c->bev != NULL) {
        bufferevent_free(c->bev);
        c->bev = NULL;
    }
}

/* Runs done once for the request in flight; 1 if the connection is gone. */
static int finish(struct http_conn *c, int rc)
{
    const struct http_handler *h = c->h;
    void *arg = c->arg;
    int reached = c->reached;
    c->busy = 0;
    c->h = NULL;
    evtimer_del(c->timer);
    if (rc != HKV_OK)
        close_bev(c);
    int dead = 0;
    c->dead = &dead;
    h->done(arg, rc, reached);
    if (dead)
        return 1;
    c->dead = NULL;
    return 0;
}

static int fail(struct http_conn *c, int rc, const char *why)
{
    snprintf(c->error, sizeof(c->error), "%s", why);
    return finish(c, rc);
}

static void arm(struct http_conn *c)
{
    int64_t at = c->have_head ? c->total_at : c->head_at;
    if (c->have_head && c->idle_ms > 0) {
        int64_t idle_at = clock_mono_ms() + c->idle_ms;
        if (at == 0 || idle_at < at)
            at = idle_at;
    }
    if (at == 0) {
        evtimer_del(c->timer);
        return;
    }
    int64_t ms = at - clock_mono_ms();
    if (ms < 0)
        ms = 0;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    evtimer_add(c->timer, &tv);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct http_conn *c = arg;
    if (!c->busy)
        return;
    const char *why = !c->reached ? "timed out connecting"
                      : !c->have_head ? "timed out waiting for the answer"
                      : c->total_at != 0 && clock_mono_ms() >= c->total_at
                          ? "timed out reading the answer"
                          : "the stream was idle too long";
    fail(c, HKV_ETIMEDOUT, why);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct http_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (!c->busy) {
        close_bev(c); /* bytes nobody asked for */
        return;
    }
    while (evbuffer_get_length(in) > 0 || (c->have_head && c->busy)) {
        struct evbuffer_iovec v;
        int nv = evbuffer_peek(in, -1, NULL, &v, 1);
        const char *p = nv > 0 ? v.iov_base : "";
        size_t n = nv > 0 ? v.iov_len : 0;
        size_t used = 0, dlen = 0;
        const char *data = NULL;
        int ev = http_resp_step(&c->resp, p, n, &used, &data, &dlen);
        if (ev < 0) {
            fail(c, ev, ev == HKV_ETOOBIG ? "an answer over the size limits"
                                          : "an answer that is not HTTP/1.1");
            return;
        }
        int dead = 0;
        c->dead = &dead;
        if (ev == HTTP_EV_HEAD) {
            evbuffer_drain(in, used);
            c->have_head = 1;
            arm(c);
            c->h->head(c->arg, &c->resp);
        } else if (ev == HTTP_EV_DATA) {
            if (c->idle_ms > 0)
                arm(c);
            c->h->data(c->arg, data, dlen);
            if (!dead)
                evbuffer_drain(in, used);
        } else if (ev == HTTP_EV_DONE) {
            evbuffer_drain(in, used);
            c->dead = NULL;
            if (evbuffer_get_length(in) > 0 || c->resp.close)
                close_bev(c);
            finish(c, HKV_OK);
            return;
        } else {
            evbuffer_drain(in, used);
            c->dead = NULL;
            if (evbuffer_get_length(in) == 0)
                return;
            continue;
        }
        if (dead)
            return;
        c->dead = NULL;
    }
}

static void describe(struct http_conn *c, short what, char *buf, size_t len)
{
    unsigned long ssl_err = c->url.tls ? bufferevent_get_openssl_error(c->bev) : 0;
    int dns = bufferevent_socket_get_dns_error(c->bev);
    if (dns != 0) {
        snprintf(buf, len, "resolve %s: %s", c->url.host, evutil_gai_strerror(dns));
    } else if (ssl_err != 0) {
        char e[120];
        ERR_error_string_n(ssl_err, e, sizeof(e));
        SSL *ssl = bufferevent_openssl_get_ssl(c->bev);
        long vr = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
        snprintf(buf, len, "TLS %s: %s%s%s", c->url.hostport, e, vr != X509_V_OK ? ": " : "",
                 vr != X509_V_OK ? X509_verify_cert_error_string(vr) : "");
        while (bufferevent_get_openssl_error(c->bev) != 0) {
        }
    } else if (what & BEV_EVENT_EOF) {
        snprintf(buf, len, "%s closed the connection", c->url.hostport);
    } else {
        int e = EVUTIL_SOCKET_ERROR();
        snprintf(buf, len, "%s %s: %s", c->reached ? "connection to" : "connect",
                 c->url.hostport, e != 0 ? evutil_socket_error_to_string(e) : "failed");
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct http_conn *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        c->reached = 1;
        return;
    }
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        return;
    char why[512];
    describe(c, what, why, sizeof(why));
    if (!c->busy) {
        close_bev(c); /* an idle keep-alive connection went away */
        return;
    }
    fail(c, HKV_EIO, why);
}

struct http_conn *etcd_http_create(struct event_base *base, struct evdns_base *dns,
                                   SSL_CTX *ctx, const struct http_url *u, uint64_t max_body)
{
    if (u->tls && ctx == NULL)
        return NULL;
    struct http_conn *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->base = base;
    c->dns = dns;
    c->url = *u;
    c->max_body = max_body;
    c->timer = evtimer_new(base, on_timer, c);
    if (c->timer == NULL) {
        free(c);
        return NULL;
    }
    if (u->tls) {
        SSL_CTX_up_ref(ctx);
        c->ctx = ctx;
    }
    return c;
}

void etcd_http_destroy(struct http_conn **cp)
{
    struct http_conn *c = *cp;
    if (c == NULL)
        return;
    *cp = NULL;
    if (c->dead != NULL)
        *c->dead = 1;
    close_bev(c);
    event_free(c->timer);
    if (c->ctx != NULL)
        SSL_CTX_free(c->ctx);
    free(c);
}

static int is_address(const char *host)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* A new bufferevent, connecting; HKV_OK or HKV_ENOMEM / HKV_EIO. */
static int connect_bev(struct http_conn *c)
{
    if (c->url.tls) {
        SSL *ssl = SSL_new(c->ctx);
        if (ssl == NULL)
            return HKV_ENOMEM;
        int ok = 1;
        if (is_address(c->url.host)) {
            ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), c->url.host);
        } else {
            ok = SSL_set_tlsext_host_name(ssl, c->url.host) == 1 &&
                 SSL_set1_host(ssl, c->url.host) == 1;
        }
        if (ok != 1) {
            SSL_free(ssl);
            return HKV_ENOMEM;
        }
        c->bev = bufferevent_openssl_socket_new(c->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                BEV_OPT_CLOSE_ON_FREE);
        if (c->bev == NULL) {
            SSL_free(ssl);
            return HKV_ENOMEM;
        }
        bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
    } else {
        c->bev = bufferevent_socket_new(c->base, -1, BEV_OPT_CLOSE_ON_FREE);
        if (c->bev == NULL)
            return HKV_ENOMEM;
    }
    bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    /* an immediate failure is reported through on_event, later */
    if (bufferevent_socket_connect_hostname(c->bev, c->dns, AF_UNSPEC, c->url.host,
                                            atoi(c->url.port)) != 0) {
        close_bev(c);
        return HKV_EIO;
    }
    return HKV_OK;
}

int etcd_http_post(struct http_conn *c, const char *path, const char *auth, const char *body,
                   size_t len, int64_t head_ms, int64_t total_ms, int64_t idle_ms,
                   const struct http_handler *h, void *arg)
{
    if (c->busy || head_ms <= 0 || h == NULL)
        return HKV_EINVAL;
    int fresh = c->bev == NULL;
    if (fresh) {
        int rc = connect_bev(c);
        if (rc != HKV_OK) {
            snprintf(c->error, sizeof(c->error), "connect %s: cannot start", c->url.hostport);
            return rc;
        }
    }
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (evbuffer_add_printf(out,
                            "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                            "Content-Length: %zu\r\n%s%s%s\r\n",
                            path, c->url.hostport, len, auth != NULL ? "Authorization: " : "",
                            auth != NULL ? auth : "", auth != NULL ? "\r\n" : "") < 0 ||
        evbuffer_add(out, body, len) != 0) {
        close_bev(c);
        return HKV_ENOMEM;
    }
    int64_t now = clock_mono_ms();
    http_resp_init(&c->resp, c->max_body);
    c->busy = 1;
    c->reached = !fresh;
    c->have_head = 0;
    c->head_at = now + head_ms;
    c->total_at = total_ms > 0 ? now + total_ms : 0;
    c->idle_ms = idle_ms > 0 ? idle_ms : 0;
    c->h = h;
    c->arg = arg;
    c->error[0] = '\0';
    arm(c);
    return HKV_OK;
}

int etcd_http_busy(const struct http_conn *c)
{
    return c->busy;
}

const struct http_url *etcd_http_url(const struct http_conn *c)
{
    return &c->url;
}

const char *etcd_http_error(const struct http_conn *c)
{
    return c->error;
}
