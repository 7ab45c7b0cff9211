/*
 * edge_http_watch.c - GET /v1/watch/{key}: a stream of the key's versions,
 * as Server-Sent Events (text/event-stream) or NDJSON
 * (application/x-ndjson, by Accept or ?format=ndjson).
 *
 * Each event is one JSON object, the same in both forms:
 *   {"key":"k","index":V,"found":true,"stale":false,"value":"..."}
 * ("value_base64" instead of "value" when the bytes are not UTF-8, "key_base64"
 * likewise; no value when found is false: the key was deleted or never
 * written).  SSE frames it as "id: V\nevent: put|delete\ndata: {...}\n\n",
 * so a reconnecting EventSource sends Last-Event-ID: V and resumes after
 * it; NDJSON as one line.  Heartbeats: an SSE comment (": hb") or an empty
 * NDJSON line every http-heartbeat.
 *
 * Coalesced to the latest value: a change makes the stream read its key
 * through the read path (as a long poll does) and send what it finds if it
 * is newer than the last event sent.  A reader that reads slowly (more than
 * HTTP_STREAM_HIGH bytes unsent) gets nothing new until it has caught up,
 * and then the latest value only: it skips versions, never sees one out of
 * order, and cannot make the edge buffer more than that bound (plus the
 * client output limits, which close it as for any client).
 *
 * A stream is a reply that never becomes ready: its slot is partial
 * (edge_reply.h), so its bytes leave as soon as it is the connection's
 * oldest owed reply; what it writes while it waits behind earlier replies
 * is counted against the client's output limits (slot_note).  HTTP/1.1
 * streams are chunked; HTTP/1.0 ones end with the connection.
 *
 * A stream ends its connection's request pipeline.  A request pipelined
 * behind it could only be answered after the stream, which ends only when
 * the edge stops, so its reply slot would hold its answer forever (issue
 * 25: 407 MB past a 256 MB output limit with one client).  So the stream's
 * response says "Connection: close" (RFC 9112 9.6: the server then runs no
 * further request of that connection and closes it after this response),
 * every byte the client sends after the watch request is read and
 * discarded (edge_http_input), and the connection closes after the last
 * chunk.  Reading on, rather than stopping, keeps a client that leaves
 * noticed at once (its stream freed, http_polls_hangup); a client that
 * pipelined behind a watch sees the close and retries those requests on
 * another connection, which RFC 9112 9.3.2 tells it to do.  Answering them
 * 400 instead would be no better: the answers could only follow the
 * stream.
 */
#include <stdio.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/edge/edge_http_int.h"
#include "server/edge/edge_reply.h"
#include "server/edge/edge_sess.h"

static void watch_result(struct hreq *r, const struct hres *res);
static void watch_changed(struct hreq *r, hkv_stamp v);
static void watch_timer(struct hreq *r);

static const struct hreq_ops watch_ops = {watch_result, watch_changed, watch_timer};

/* Sends what r wrote (when its slot is the connection's head); may close
 * the connection, so r is not touched after. */
static void push(struct hreq *r)
{
    struct conn *c = r->c;
    if (hreq_out(r) != &c->out)
        slot_note(c, r->slot); /* behind earlier replies: counted where it waits */
    else if (!c->in_process)
        conn_flush(c);
}

static int busy(struct hreq *r)
{
    return buf_unread(hreq_out(r)) > HTTP_STREAM_HIGH;
}

/* One event (framed as r's format) into out. */
static void event(struct hreq *r, struct hkv_buf *out, const struct hres *res)
{
    struct hkv_buf j = HKV_BUF_INIT;
    buf_append_str(&j, "{\"key");
    buf_append_str(&j, "\":");
    if (!hr_json_str(&j, r->key, r->klen)) {
        j.len -= 2;
        buf_append_str(&j, "_base64\":");
        hr_json_b64(&j, r->key, r->klen);
    }
    buf_printf(&j, ",\"index\":%llu,\"found\":%s,\"stale\":%s",
               (unsigned long long)res->f.stamp, res->found ? "true" : "false",
               res->f.stale ? "true" : "false");
    if (res->found) {
        buf_append_str(&j, ",\"value\":");
        if (!hr_json_str(&j, res->v, res->n)) {
            j.len -= 2;
            buf_append_str(&j, "_base64\":");
            hr_json_b64(&j, res->v, res->n);
        }
    }
    buf_append_str(&j, "}");
    struct hkv_buf ev = HKV_BUF_INIT;
    if (r->format == HTTP_FMT_SSE)
        buf_printf(&ev, "id: %llu\nevent: %s\ndata: %.*s\n\n", (unsigned long long)res->f.stamp,
                   res->found ? "put" : "delete", (int)buf_unread(&j), buf_head(&j));
    else
        buf_printf(&ev, "%.*s\n", (int)buf_unread(&j), buf_head(&j));
    hr_chunk(out, r->chunked, buf_head(&ev), buf_unread(&ev));
    buf_deinit(&j);
    buf_deinit(&ev);
}

static void watch_result(struct hreq *r, const struct hres *res)
{
    if (res->error || res->f.degraded) {
        /* Nothing to send: the stream waits for the next change, or the
         * next heartbeat retries a first read. */
        return;
    }
    hkv_stamp v = res->f.stamp;
    if (r->first || v > r->index) {
        if (busy(r)) {
            r->dirty = 1; /* the latest is read again once it has room */
        } else {
            event(r, hreq_out(r), res);
            r->index = v;
            r->first = 0;
            r->dirty = 0;
        }
    }
    if (r->rewake && !r->dirty) {
        r->rewake = 0;
        hreq_read(r, r->index);
        return;
    }
    push(r);
}

static void watch_changed(struct hreq *r, hkv_stamp v)
{
    if (v != 0 && v <= r->index && !r->first)
        return;
    if (r->reading) {
        r->rewake = 1;
        return;
    }
    if (busy(r)) {
        r->dirty = 1;
        return;
    }
    hreq_read(r, r->index);
}

/* The stream's end (the edge stops): the last chunk, then its slot is done. */
static void end(struct hreq *r)
{
    if (r->chunked)
        buf_append_str(hreq_out(r), "0\r\n\r\n");
    r->c->close_after_write = 1; /* its response said Connection: close */
    hreq_done(r);
}

static void watch_timer(struct hreq *r)
{
    if (r->final) {
        end(r);
        return;
    }
    if (!busy(r)) {
        if (r->format == HTTP_FMT_SSE)
            hr_chunk(hreq_out(r), r->chunked, ": hb\n\n", 6);
        else
            hr_chunk(hreq_out(r), r->chunked, "\n", 1);
    }
    hreq_timer(r, r->c->e->http->opts.heartbeat_ms);
    if (r->first && !r->reading) {
        hreq_read(r, r->index); /* the first read found nothing to send: again */
        return;
    }
    push(r);
}

void edge_http_watch(struct hreq *r)
{
    struct conn *c = r->c;
    const char *ctype = r->format == HTTP_FMT_SSE ? "text/event-stream" : "application/x-ndjson";
    r->ops = &watch_ops;
    r->chunked = r->minor >= 1;
    if (!r->chunked)
        r->keep_alive = 0; /* HTTP/1.0: the stream ends with the connection */
    if (r->head) {
        hr_status(c, &c->out, 200, r->minor, r->keep_alive);
        buf_printf(&c->out, "Content-Type: %s\r\nCache-Control: no-store\r\n\r\n", ctype);
        return;
    }
    struct hreq *k = hreq_keep(r);
    if (k == NULL) {
        hr_simple(c, &c->out, 500, r->minor, r->keep_alive, 0, NULL, "out of memory");
        return;
    }
    k->slot->partial = 1;
    if (!k->keep_alive)
        c->close_after_write = 1;
    k->keep_alive = 0; /* the pipeline ends here (above) */
    sess_of(c)->http->streaming = 1;
    struct hkv_buf *out = hreq_out(k);
    hr_status(c, out, 200, k->minor, k->keep_alive);
    buf_printf(out, "Content-Type: %s\r\nCache-Control: no-store\r\nX-Accel-Buffering: no\r\n%s\r\n",
               ctype, k->chunked ? "Transfer-Encoding: chunked\r\n" : "");
    if (k->format == HTTP_FMT_SSE)
        hr_chunk(out, k->chunked, "retry: 1000\n\n", 13);
    hreq_register(k);
    /* final (the edge stops): the read below, if the colo answers it at
     * once, then the end */
    hreq_timer(k, k->final ? 0 : c->e->http->opts.heartbeat_ms);
    hreq_read(k, k->index);
}

void edge_http_watch_stop(struct hreq *r)
{
    r->final = 1;
    hreq_timer(r, 0);
}

void edge_http_watch_cron(struct hreq *r)
{
    if (r->dirty && !r->reading && !busy(r)) {
        r->dirty = 0;
        hreq_read(r, r->index);
    }
}
