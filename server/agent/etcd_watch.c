/*
 * etcd_watch.c - watch streams of the etcd client (see etcd.h).
 *
 * The gateway's watch is half-duplex over HTTP/1.1: the create_request is the
 * whole request body, and the answer is a chunked body that never ends, one
 * JSON object per line ({"result":...}), lines cut anywhere by the chunks.  So
 * a watch is its own connection: it waits in the client's queue for a token
 * (an internal call that sends nothing when no auth is configured), then posts
 * the request with the client's timeout for the head and its idle timeout for
 * everything after (progress notifications keep a healthy stream busy).
 *
 * Lines are put back together by etcd_lines and decoded by etcd_msg; the
 * events of one line are handed out one mod_revision at a time, each group
 * one ETCD_W_EVENTS message (a txn's changes arrive together).  A stream that
 * ends in any way is reported once, as ETCD_W_CANCELED (compaction) or
 * ETCD_W_BROKEN, after its connection is closed, and nothing follows.  Two
 * failures are handled here instead: a connection that never came up moves to
 * the next endpoint, and a watch refused for an invalid token re-authenticates
 * once and starts again from the same revision.
 */
#include "server/agent/etcd_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WATCH_DEFAULT_IDLE_MS 15000

struct etcd_watch {
    struct etcd_wlink link;          /* first: the client's list */
    struct etcd_lwatch *lw;          /* a watch of the local store: all the rest unused */
    struct etcd *e;                  /* NULL once the client is gone */
    char *key, *end;
    size_t klen, elen;
    int64_t start_revision, idle_ms;
    etcd_watch_cb cb;
    void *arg;
    struct etcd_call *pending;       /* the token step in the queue */
    struct http_conn *conn;
    size_t ep;                       /* endpoint of conn */
    unsigned tried;
    int http_status;
    int auth_retried;
    int over;                        /* the end was reported */
    struct etcd_lines lines;
    struct hkv_buf errbody;          /* the body of a non-200 answer */
    int *dead;                       /* set by etcd_watch_cancel during cb */
};

static void detach(struct etcd_wlink *l);
static void open_stream(struct etcd_watch *w);

/* Hands m to the caller; 1 if the stream must not go on (the watch was
 * freed, the client destroyed, or the stream is over). */
static int deliver(struct etcd_watch *w, const struct etcd_watch_msg *m)
{
    int dead = 0;
    w->dead = &dead;
    w->cb(w->arg, m);
    if (dead)
        return 1;
    w->dead = NULL;
    return w->over || w->e == NULL;
}

/* Reports the end of the stream (once) after closing it. */
static void finish(struct etcd_watch *w, enum etcd_wkind kind, int status, int64_t rev,
                   int64_t compact)
{
    if (w->over)
        return;
    w->over = 1;
    etcd_http_destroy(&w->conn);
    struct etcd_watch_msg m;
    memset(&m, 0, sizeof(m));
    m.kind = kind;
    m.status = status;
    m.revision = rev;
    m.compact_revision = compact;
    deliver(w, &m);
}

/* Events of one line, one mod_revision per message; 1 if to stop. */
static int deliver_events(struct etcd_watch *w, const struct etcd_watch_msg *all)
{
    size_t i = 0;
    while (i < all->nevents) {
        size_t j = i + 1;
        while (j < all->nevents && all->events[j].kv.mod_revision == all->events[i].kv.mod_revision)
            j++;
        struct etcd_watch_msg m = *all;
        m.events = all->events + i;
        m.nevents = j - i;
        m.revision = all->events[i].kv.mod_revision;
        if (deliver(w, &m))
            return 1;
        i = j;
    }
    return 0;
}

/* One line of the stream; 1 if the stream must not go on. */
static int on_line(struct etcd_watch *w, const char *line, size_t len)
{
    size_t k = 0;
    while (k < len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r'))
        k++;
    if (k == len)
        return 0; /* an empty line between objects */
    struct etcd_wanswer a;
    etcd_msg_decode_watch(line, len, &a);
    int stop = 0;
    const struct etcd_watch_msg *m = &a.m;
    if (m->kind == ETCD_W_BROKEN && m->status == HKV_EINVAL && w->e != NULL &&
        w->e->user[0] != '\0' && !w->auth_retried && etcd_is_token_error(0, a.reason)) {
        /* refused for a stale token: authenticate again, same start */
        w->auth_retried = 1;
        etcd_token_invalid(w->e);
        etcd_http_destroy(&w->conn);
        open_stream(w);
        stop = 1;
    } else if (m->kind == ETCD_W_BROKEN || m->kind == ETCD_W_CANCELED) {
        finish(w, m->kind, m->status, m->revision, m->compact_revision);
        stop = 1;
    } else if (m->kind == ETCD_W_EVENTS) {
        stop = deliver_events(w, m);
    } else {
        stop = deliver(w, m);
    }
    etcd_wanswer_free(&a);
    return stop;
}

static void on_head(void *arg, const struct http_resp *r)
{
    struct etcd_watch *w = arg;
    w->http_status = r->status;
}

static void on_data(void *arg, const char *p, size_t n)
{
    struct etcd_watch *w = arg;
    if (w->http_status != 200) {
        /* an error answer: keep it (bounded) for the reason */
        if (buf_reserve(&w->errbody, n, w->lines.max) == HKV_OK)
            buf_append(&w->errbody, p, n);
        return;
    }
    while (n > 0) {
        size_t used;
        const char *line;
        size_t llen;
        int rc = etcd_lines_next(&w->lines, p, n, &used, &line, &llen);
        if (rc < 0) {
            finish(w, ETCD_W_BROKEN, HKV_EPROTO, 0, 0); /* a line over max_body */
            return;
        }
        p += used;
        n -= used;
        if (rc == 1 && on_line(w, line, llen))
            return;
    }
}

static void on_done(void *arg, int rc, int reached)
{
    struct etcd_watch *w = arg;
    struct etcd *e = w->e;
    if (rc != HKV_OK && e != NULL) {
        etcd_endpoint_bad(e, w->ep);
        if (!reached && ++w->tried < e->nendpoints) {
            etcd_http_destroy(&w->conn);
            w->ep = (w->ep + 1) % e->nendpoints;
            open_stream(w); /* it never reached etcd: the next endpoint */
            return;
        }
    }
    int status = rc == HKV_ETIMEDOUT ? HKV_ETIMEDOUT : rc == HKV_EIO ? HKV_EIO : HKV_EPROTO;
    if (rc == HKV_OK && w->http_status != 200) {
        struct etcd_answer a;
        etcd_msg_decode(ETCD_K_PUT, w->http_status, buf_head(&w->errbody),
                        buf_unread(&w->errbody), &a);
        status = a.r.status == HKV_EINVAL ? HKV_EINVAL : HKV_EPROTO;
        etcd_answer_free(&a);
    } else if (rc == HKV_OK) {
        status = HKV_EIO; /* etcd ended the stream */
    }
    finish(w, ETCD_W_BROKEN, status, 0, 0);
}

static const struct http_handler watch_handler = {on_head, on_data, on_done};

/* The token is there (or not needed): open the stream. */
static void on_ready(void *arg, int status, int code, const char *why)
{
    struct etcd_watch *w = arg;
    struct etcd *e = w->e;
    w->pending = NULL;
    if (status != HKV_OK) {
        finish(w, ETCD_W_BROKEN, status, 0, 0);
        return;
    }
    if (w->ep >= e->nendpoints)
        w->ep = e->cur; /* new options with fewer endpoints came meanwhile */
    struct hkv_buf body = HKV_BUF_INIT;
    int rc = etcd_req_watch(&body, w->key, w->klen, w->end, w->elen, w->start_revision);
    if (rc == HKV_OK) {
        w->conn = etcd_http_create(e->base, e->dns, e->ssl, &e->urls[w->ep], 0);
        rc = w->conn == NULL ? HKV_ENOMEM
                             : etcd_http_post(w->conn, "/v3/watch", e->token, buf_head(&body),
                                              buf_unread(&body), e->timeout_ms, 0, w->idle_ms,
                                              &watch_handler, w);
    }
    buf_deinit(&body);
    if (rc != HKV_OK)
        finish(w, ETCD_W_BROKEN, HKV_EIO, 0, 0);
}

/* Queues the token step (made by the caller) that opens the stream. */
static void open_with(struct etcd_watch *w, struct etcd_call *step)
{
    struct etcd *e = w->e;
    w->http_status = 0;
    etcd_lines_deinit(&w->lines);
    etcd_lines_init(&w->lines, e->max_body);
    buf_reset(&w->errbody);
    if (w->tried == 0)
        w->ep = e->cur;
    w->pending = step;
    step->ready = on_ready;
    step->arg = w;
    etcd_submit(e, step);
}

static void open_stream(struct etcd_watch *w)
{
    struct etcd_call *step = etcd_call_new(ETCD_K_RANGE, NULL);
    if (step == NULL)
        finish(w, ETCD_W_BROKEN, HKV_EIO, 0, 0); /* on the loop: a callback is fine */
    else
        open_with(w, step);
}

struct etcd_watch *etcd_watch(struct etcd *e, const char *key, size_t klen, const char *end,
                              size_t elen, int64_t start_revision, int64_t idle_timeout_ms,
                              etcd_watch_cb cb, void *arg)
{
    if (key == NULL || klen == 0 || start_revision < 0 || cb == NULL || e->remote != NULL)
        return NULL;
    if (e->local != NULL) {
        struct etcd_watch *w = calloc(1, sizeof(*w));
        if (w != NULL)
            w->lw = etcd_local_watch(e->local, key, klen, end, elen, start_revision, cb, arg);
        if (w != NULL && w->lw == NULL) {
            free(w);
            w = NULL;
        }
        return w;
    }
    struct etcd_watch *w = calloc(1, sizeof(*w));
    struct etcd_call *step = etcd_call_new(ETCD_K_RANGE, NULL);
    if (w != NULL) {
        w->key = malloc(klen);
        w->end = end != NULL ? malloc(elen + 1) : NULL;
    }
    if (w == NULL || step == NULL || w->key == NULL || (end != NULL && w->end == NULL)) {
        if (w != NULL) {
            free(w->key);
            free(w->end);
        }
        free(w);
        etcd_call_free(step);
        return NULL; /* never a callback from inside this call */
    }
    memcpy(w->key, key, klen);
    if (end != NULL)
        memcpy(w->end, end, elen);
    w->klen = klen;
    w->elen = elen;
    w->e = e;
    w->start_revision = start_revision;
    w->idle_ms = idle_timeout_ms > 0 ? idle_timeout_ms : WATCH_DEFAULT_IDLE_MS;
    w->cb = cb;
    w->arg = arg;
    w->link.detach = detach;
    w->link.next = e->watches.next;
    w->link.prev = &e->watches;
    e->watches.next->prev = &w->link;
    e->watches.next = &w->link;
    open_with(w, step);
    return w;
}

/* The client is being destroyed: the watch stays, inert, until cancelled.
 * (The client frees its queue, the token step with it.) */
static void detach(struct etcd_wlink *l)
{
    struct etcd_watch *w = (struct etcd_watch *)l;
    etcd_http_destroy(&w->conn);
    w->pending = NULL;
    w->e = NULL;
}

void etcd_watch_cancel(struct etcd_watch **wp)
{
    struct etcd_watch *w = *wp;
    if (w == NULL)
        return;
    *wp = NULL;
    if (w->lw != NULL) {
        etcd_local_watch_cancel(&w->lw);
        free(w);
        return;
    }
    if (w->dead != NULL)
        *w->dead = 1;
    if (w->e != NULL) {
        w->link.prev->next = w->link.next;
        w->link.next->prev = w->link.prev;
        if (w->pending != NULL)
            etcd_call_cancel(w->e, w->pending);
    }
    etcd_http_destroy(&w->conn);
    etcd_lines_deinit(&w->lines);
    buf_deinit(&w->errbody);
    free(w->key);
    free(w->end);
    free(w);
}
