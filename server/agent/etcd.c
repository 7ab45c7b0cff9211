/*
 * etcd.c - the agent's etcd client: options, endpoints, the queue of unary
 * calls and authentication (see etcd.h; watches are etcd_watch.c).
 *
 * Calls wait in one FIFO queue and go out one at a time on one keep-alive
 * connection to the current endpoint; the queue runs from a libevent event
 * (`kick`) or from the end of the previous call, never from inside the
 * function that queued a call, which is how "callbacks never run from inside
 * the call that registered them" holds even for a call that fails at once.
 * Each call has a deadline fixed when it is queued (etcd-timeout): time spent
 * waiting behind another call counts, so the caller hears back within its
 * timeout whatever happens.
 *
 * Failover: a call whose connection never came up is safe to send elsewhere,
 * so it moves on to the next endpoint within its deadline (each endpoint once);
 * a call that timed out or broke after it may have reached etcd is answered
 * with the error (a txn must not run twice), and later calls go to the next
 * endpoint.  etcd's "unavailable" (no leader) also moves later calls on.
 *
 * Authentication: with etcd-user set, the first call that finds no token puts
 * an authenticate call in front of itself; if etcd later says the token is
 * invalid (code 16: expired, or etcd restarted), the call is sent again once
 * behind a new authenticate.  An authenticate that fails answers the call that
 * needed it with etcd's refusal.
 */
#include "server/agent/etcd_int.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"

static void run(struct etcd *e);

struct etcd_call *etcd_call_new(enum etcd_kind kind, const char *path)
{
    struct etcd_call *c = calloc(1, sizeof(*c));
    if (c != NULL) {
        c->kind = kind;
        c->path = path;
    }
    return c;
}

void etcd_call_free(struct etcd_call *c)
{
    if (c == NULL)
        return;
    buf_deinit(&c->body);
    buf_deinit(&c->answer);
    free(c);
}

int etcd_is_token_error(int code, const char *reason)
{
    return code == 16 || (reason != NULL && strstr(reason, "invalid auth token") != NULL);
}

/* ---- options ---- */

static void free_opts(struct etcd *e)
{
    for (size_t i = 0; i < e->nendpoints; i++)
        free(e->endpoints[i]);
    free(e->endpoints);
    free(e->urls);
    free(e->user);
    free(e->password);
    free(e->ca_file);
    if (e->ssl != NULL)
        SSL_CTX_free(e->ssl);
    e->endpoints = NULL;
    e->urls = NULL;
    e->user = e->password = e->ca_file = NULL;
    e->ssl = NULL;
    e->nendpoints = 0;
}

static char *dup_or_empty(const char *s)
{
    return strdup(s != NULL ? s : "");
}

/* Copies o into e (whose options are empty); HKV_OK or HKV_EINVAL /
 * HKV_ENOMEM with err filled. */
static int load_opts(struct etcd *e, const struct etcd_opts *o, char *err, size_t errlen)
{
    snprintf(err, errlen, "out of memory");
    if (o->nendpoints == 0 || o->endpoints == NULL) {
        snprintf(err, errlen, "no etcd endpoint");
        return HKV_EINVAL;
    }
    e->endpoints = calloc(o->nendpoints, sizeof(*e->endpoints));
    e->urls = calloc(o->nendpoints, sizeof(*e->urls));
    e->user = dup_or_empty(o->user);
    e->password = dup_or_empty(o->password);
    e->ca_file = dup_or_empty(o->ca_file);
    if (e->endpoints == NULL || e->urls == NULL || e->user == NULL || e->password == NULL ||
        e->ca_file == NULL)
        return HKV_ENOMEM;
    int tls = 0;
    for (size_t i = 0; i < o->nendpoints; i++) {
        if (o->endpoints[i] == NULL || etcd_http_url_parse(o->endpoints[i], &e->urls[i]) != HKV_OK) {
            snprintf(err, errlen, "etcd endpoint '%s': not http://host:port or https://host:port",
                     o->endpoints[i] != NULL ? o->endpoints[i] : "");
            return HKV_EINVAL;
        }
        e->endpoints[i] = strdup(o->endpoints[i]);
        if (e->endpoints[i] == NULL)
            return HKV_ENOMEM;
        e->nendpoints = i + 1;
        tls |= e->urls[i].tls;
    }
    e->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : ETCD_DEFAULT_TIMEOUT_MS;
    e->max_body = o->max_body > 0 ? o->max_body : ETCD_DEFAULT_MAX_BODY;
    if (tls) {
        e->ssl = etcd_http_tls_ctx(e->ca_file, err, errlen);
        if (e->ssl == NULL)
            return HKV_EINVAL;
    }
    return HKV_OK;
}

static int needs_dns(const struct etcd *e)
{
    unsigned char a[16];
    for (size_t i = 0; i < e->nendpoints; i++)
        if (inet_pton(AF_INET, e->urls[i].host, a) != 1 &&
            inet_pton(AF_INET6, e->urls[i].host, a) != 1)
            return 1;
    return 0;
}

int etcd_opts_check(const struct etcd_opts *o, char *err, size_t errlen)
{
    if (o->local_path != NULL || o->local_socket != NULL) {
        if (errlen > 0)
            err[0] = '\0';
        return HKV_OK;
    }
    struct etcd tmp;
    memset(&tmp, 0, sizeof(tmp));
    int rc = load_opts(&tmp, o, err, errlen);
    free_opts(&tmp);
    if (rc == HKV_OK && errlen > 0)
        err[0] = '\0';
    return rc;
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    run(arg);
}

/* A client of the local store (o->local_path) or of an agent's
 * (o->local_socket); NULL on failure. */
static struct etcd *create_local(struct etcd *e, const struct etcd_opts *o)
{
    char err[512];
    const char *where = o->local_path != NULL ? o->local_path : o->local_socket;
    size_t len = strlen(where) + 8;
    e->local_name = malloc(len);
    if (e->local_name == NULL)
        goto fail;
    snprintf(e->local_name, len, "local:%s", where);
    if (o->local_path != NULL) {
        e->local = etcd_local_create(e->base, o->local_path, err, sizeof(err));
        if (e->local == NULL) {
            fprintf(stderr, "hotkvd: local leaf map store: %s\n", err);
            goto fail;
        }
    } else {
        e->remote = etcd_remote_create(e->base, o->local_socket,
                                       o->timeout_ms > 0 ? o->timeout_ms : ETCD_DEFAULT_TIMEOUT_MS);
        if (e->remote == NULL)
            goto fail;
    }
    return e;
fail:
    free(e->local_name);
    free(e);
    return NULL;
}

struct etcd *etcd_create(struct event_base *base, const struct etcd_opts *o)
{
    struct etcd *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return NULL;
    char err[256];
    e->base = base;
    if (o->local_path != NULL || o->local_socket != NULL)
        return create_local(e, o);
    TAILQ_INIT(&e->queue);
    e->watches.next = e->watches.prev = &e->watches;
    e->kick = event_new(base, -1, 0, on_kick, e);
    if (e->kick == NULL || load_opts(e, o, err, sizeof(err)) != HKV_OK) {
        etcd_destroy(&e);
        return NULL;
    }
    if (needs_dns(e))
        e->dns = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
    return e;
}

void etcd_destroy(struct etcd **ep)
{
    struct etcd *e = *ep;
    if (e == NULL)
        return;
    *ep = NULL;
    if (e->dead != NULL)
        *e->dead = 1;
    etcd_local_destroy(&e->local);
    etcd_remote_destroy(&e->remote);
    free(e->local_name);
    /* cut the watches loose first: they hold connections of their own */
    while (e->watches.next != NULL && e->watches.next != &e->watches) {
        struct etcd_wlink *l = e->watches.next;
        e->watches.next = l->next;
        l->next->prev = &e->watches;
        l->next = l->prev = l;
        l->detach(l);
    }
    struct etcd_call *c;
    while ((c = TAILQ_FIRST(&e->queue)) != NULL) {
        TAILQ_REMOVE(&e->queue, c, link);
        etcd_call_free(c);
    }
    etcd_call_free(e->inflight);
    etcd_http_destroy(&e->conn);
    if (e->kick != NULL)
        event_free(e->kick);
    if (e->dns != NULL)
        evdns_base_free(e->dns, 0);
    free_opts(e);
    free(e->token);
    free(e);
}

int etcd_set_opts(struct etcd *e, const struct etcd_opts *o)
{
    if (e->local_name != NULL)
        return HKV_OK; /* a local store has no option to change */
    struct etcd fresh;
    char err[256];
    memset(&fresh, 0, sizeof(fresh));
    int rc = load_opts(&fresh, o, err, sizeof(err));
    if (rc != HKV_OK) {
        free_opts(&fresh);
        return rc;
    }
    int same_user = strcmp(fresh.user, e->user) == 0 && strcmp(fresh.password, e->password) == 0;
    int same_eps = fresh.nendpoints == e->nendpoints;
    for (size_t i = 0; same_eps && i < e->nendpoints; i++)
        same_eps = strcmp(fresh.endpoints[i], e->endpoints[i]) == 0;
    free_opts(e);
    e->endpoints = fresh.endpoints;
    e->urls = fresh.urls;
    e->nendpoints = fresh.nendpoints;
    e->user = fresh.user;
    e->password = fresh.password;
    e->ca_file = fresh.ca_file;
    e->timeout_ms = fresh.timeout_ms;
    e->max_body = fresh.max_body;
    e->ssl = fresh.ssl;
    e->gen++; /* the connection is replaced once the call on it is done */
    if (!same_eps)
        e->cur = 0;
    if (!same_user) {
        free(e->token);
        e->token = NULL;
    }
    if (e->dns == NULL && needs_dns(e))
        e->dns = evdns_base_new(e->base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
    return HKV_OK;
}

int etcd_store_failed(const struct etcd *e)
{
    return e->local != NULL && etcd_local_failed(e->local);
}

const char *etcd_endpoint(const struct etcd *e)
{
    if (e->local_name != NULL)
        return e->local_name;
    return e->endpoints[e->cur];
}

/* ---- the queue ---- */

void etcd_submit(struct etcd *e, struct etcd_call *c)
{
    c->deadline = clock_mono_ms() + e->timeout_ms;
    TAILQ_INSERT_TAIL(&e->queue, c, link);
    event_active(e->kick, EV_TIMEOUT, 1);
}

void etcd_call_cancel(struct etcd *e, struct etcd_call *c)
{
    TAILQ_REMOVE(&e->queue, c, link);
    etcd_call_free(c);
}

void etcd_endpoint_bad(struct etcd *e, size_t idx)
{
    if (e->nendpoints > 1 && idx == e->cur)
        e->cur = (e->cur + 1) % e->nendpoints;
}

void etcd_token_invalid(struct etcd *e)
{
    free(e->token);
    e->token = NULL;
}

/* Answers c (already out of the queue) and frees it; 1 if the client was
 * destroyed by the callback. */
static int answer(struct etcd *e, struct etcd_call *c, const struct etcd_result *r)
{
    int dead = 0;
    int *outer = e->dead;
    e->dead = &dead;
    if (c->ready != NULL)
        c->ready(c->arg, r->status, r->code, r->message);
    else if (c->cb != NULL)
        c->cb(c->arg, r);
    etcd_call_free(c);
    if (dead) {
        if (outer != NULL)
            *outer = 1;
        return 1;
    }
    e->dead = outer;
    return 0;
}

static int answer_status(struct etcd *e, struct etcd_call *c, int status, const char *why)
{
    struct etcd_result r;
    memset(&r, 0, sizeof(r));
    r.status = status;
    r.message = why;
    return answer(e, c, &r);
}

static void on_head(void *arg, const struct http_resp *resp)
{
    struct etcd *e = arg;
    e->inflight->http_status = resp->status;
}

static void on_data(void *arg, const char *p, size_t n)
{
    struct etcd *e = arg;
    /* the parser bounds the body by max_body: this cannot grow past it */
    if (buf_append(&e->inflight->answer, p, n) != HKV_OK)
        e->inflight->http_status = -1;
}

static void on_done(void *arg, int rc, int reached);
static const struct http_handler unary_handler = {on_head, on_data, on_done};

/* The connection for the current endpoint under the current options. */
static struct http_conn *conn_for(struct etcd *e)
{
    if (e->conn != NULL && (e->conn_gen != e->gen || e->conn_ep != e->cur))
        etcd_http_destroy(&e->conn);
    if (e->conn == NULL) {
        e->conn = etcd_http_create(e->base, e->dns, e->ssl, &e->urls[e->cur], e->max_body);
        e->conn_ep = e->cur;
        e->conn_gen = e->gen;
    }
    return e->conn;
}

/* Sends the queue's first call; 1 if it is in flight, 0 if it was answered
 * (and the queue may go on), -1 if the client is gone. */
static int send_first(struct etcd *e)
{
    struct etcd_call *c = TAILQ_FIRST(&e->queue);
    int64_t left = c->deadline - clock_mono_ms();
    if (left <= 0) {
        TAILQ_REMOVE(&e->queue, c, link);
        return answer_status(e, c, HKV_ETIMEDOUT, "timed out waiting for an earlier call") ? -1
                                                                                            : 0;
    }
    if (c->kind != ETCD_K_AUTH && e->user[0] != '\0' && e->token == NULL) {
        struct etcd_call *a = etcd_call_new(ETCD_K_AUTH, "/v3/auth/authenticate");
        if (a == NULL || etcd_req_auth(&a->body, e->user, e->password) != HKV_OK) {
            etcd_call_free(a);
            TAILQ_REMOVE(&e->queue, c, link);
            return answer_status(e, c, HKV_EIO, "out of memory") ? -1 : 0;
        }
        a->deadline = c->deadline;
        TAILQ_INSERT_HEAD(&e->queue, a, link);
        c = a;
    }
    if (c->path == NULL) { /* a token step: the token is there (or not needed) */
        TAILQ_REMOVE(&e->queue, c, link);
        return answer_status(e, c, HKV_OK, NULL) ? -1 : 0;
    }
    for (;;) {
        struct http_conn *conn = conn_for(e);
        int rc = conn == NULL ? HKV_ENOMEM
                              : etcd_http_post(conn, c->path, e->token, buf_head(&c->body),
                                               buf_unread(&c->body), left, left, 0,
                                               &unary_handler, e);
        if (rc == HKV_OK)
            break;
        if (rc == HKV_EIO && ++c->tried < e->nendpoints) {
            etcd_endpoint_bad(e, e->cur);
            continue;
        }
        TAILQ_REMOVE(&e->queue, c, link);
        return answer_status(e, c, HKV_EIO, rc == HKV_EIO ? etcd_http_error(conn) : "out of memory")
                   ? -1
                   : 0;
    }
    TAILQ_REMOVE(&e->queue, c, link);
    buf_reset(&c->answer);
    c->http_status = 0;
    e->inflight = c;
    return 1;
}

static void run(struct etcd *e)
{
    while (e->inflight == NULL && !TAILQ_EMPTY(&e->queue))
        if (send_first(e) < 0)
            return;
}

/* The answer of the first call a failed authenticate was for. */
static int auth_failed(struct etcd *e, const struct etcd_result *r)
{
    struct etcd_call *c = TAILQ_FIRST(&e->queue);
    if (c == NULL)
        return 0;
    TAILQ_REMOVE(&e->queue, c, link);
    return answer(e, c, r);
}

static void on_done(void *arg, int rc, int reached)
{
    struct etcd *e = arg;
    struct etcd_call *c = e->inflight;
    e->inflight = NULL;
    if (rc != HKV_OK) {
        size_t ep = e->conn_ep;
        const char *why = e->conn != NULL ? etcd_http_error(e->conn) : "";
        etcd_endpoint_bad(e, ep);
        if (!reached && ++c->tried < e->nendpoints && clock_mono_ms() < c->deadline) {
            TAILQ_INSERT_HEAD(&e->queue, c, link); /* never reached etcd: try the next */
            run(e);
            return;
        }
        struct etcd_result r;
        memset(&r, 0, sizeof(r));
        r.status = rc == HKV_ETIMEDOUT ? HKV_ETIMEDOUT : rc == HKV_EIO ? HKV_EIO : HKV_EPROTO;
        r.message = why;
        int gone = c->kind == ETCD_K_AUTH ? (etcd_call_free(c), auth_failed(e, &r))
                                          : answer(e, c, &r);
        if (!gone)
            run(e);
        return;
    }
    struct etcd_answer a;
    if (c->http_status < 0)
        etcd_msg_decode(c->kind, 0, "", 0, &a); /* out of memory: a protocol error */
    else
        etcd_msg_decode(c->kind, c->http_status, buf_head(&c->answer), buf_unread(&c->answer),
                        &a);
    int gone = 0;
    if (c->kind == ETCD_K_AUTH) {
        etcd_call_free(c);
        free(e->token);
        e->token = a.r.status == HKV_OK ? strdup(a.token) : NULL;
        if (a.r.status != HKV_OK) {
            gone = auth_failed(e, &a.r);
        } else if (e->token == NULL) {
            struct etcd_call *first = TAILQ_FIRST(&e->queue);
            if (first != NULL) {
                TAILQ_REMOVE(&e->queue, first, link);
                gone = answer_status(e, first, HKV_EIO, "out of memory");
            }
        }
    } else if (a.r.status == HKV_EINVAL && e->user[0] != '\0' && !c->auth_retried &&
               etcd_is_token_error(a.r.code, a.r.message)) {
        c->auth_retried = 1;
        etcd_token_invalid(e);
        TAILQ_INSERT_HEAD(&e->queue, c, link);
    } else {
        if (a.r.status == HKV_EINVAL && a.r.code == 14)
            etcd_endpoint_bad(e, e->conn_ep); /* unavailable: no leader there */
        gone = answer(e, c, &a.r);
    }
    etcd_answer_free(&a);
    if (!gone)
        run(e);
}
