/*
 * edge_conn_limit.c - what one client may make an edge hold for its
 * answers, and the connection layer's 100 ms checks (edge_conn.h), as
 * verdicts: edge_conn.c closes (this file calls nothing of it, so the
 * layer stays one-way).
 *
 * client-output-buffer-limit HARD SOFT SECONDS is on conn_held(c): the
 * output buffer, plus every reply waiting in a slot behind an earlier one,
 * plus what a layer above holds for the client (a held HTTP poll or
 * stream, edge_http_wake.c).  Counting only the output buffer let a
 * pipeline behind a reply that never comes (an HTTP watch) or comes late
 * (an owner read of a stopped owner, a long poll) hold client-max-pending
 * x proto-max-bulk-len in slots that no limit saw (issue 25: 407 MB past a
 * 256 MB limit with one client).  Closing, not pausing: the bytes are
 * answers the client asked for and does not take, as for a client that
 * never reads; the counter client_output_buffer_limit_disconnections says
 * how often (INFO stats).
 */
#include "server/edge/edge_conn_limit.h"

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/edge/edge_conn_tls.h"
#include "server/edge/edge_int.h"

int conn_output_ok(struct conn *c, int64_t now)
{
    const struct conns_opts *o = &c->e->conns->opts;
    size_t pending = conn_held(c);
    /* a subscriber's class (Redis's client-output-buffer-limit pubsub) */
    int ps = c->pubsub_limits;
    int64_t hard = ps ? o->pubsub_hard : o->output_hard;
    int64_t soft = ps ? o->pubsub_soft : o->output_soft;
    int64_t soft_ms = ps ? o->pubsub_soft_ms : o->output_soft_ms;
    if (hard > 0 && pending > (size_t)hard) {
        log_verbose("client %s: output buffer over the %shard limit (%zu bytes, %zu of them "
                    "behind earlier replies); closing", c->addr, ps ? "pubsub " : "", pending,
                    c->held);
        board_add(&c->e->stats->client_output_buffer_limit_disconnections, 1);
        if (ps)
            board_add(&c->e->stats->pubsub_output_limit_closed, 1);
        return 0;
    }
    if (soft > 0 && pending > (size_t)soft) {
        if (c->soft_since_ms == 0)
            c->soft_since_ms = now;
        else if (now - c->soft_since_ms >= soft_ms) {
            log_verbose("client %s: output buffer over the %ssoft limit for %lld ms; closing",
                        c->addr, ps ? "pubsub " : "", (long long)(now - c->soft_since_ms));
            board_add(&c->e->stats->client_output_buffer_limit_disconnections, 1);
            if (ps)
                board_add(&c->e->stats->pubsub_output_limit_closed, 1);
            return 0;
        }
    } else {
        c->soft_since_ms = 0;
    }
    return 1;
}

int conn_cron_ok(struct conn *c, int64_t now)
{
    const struct conns_opts *o = &c->e->conns->opts;
    if (c->ssl != NULL && (c->tls & CONN_TLS_HANDSHAKE) &&
        now - c->created_ms >= o->tls_handshake_timeout_ms) {
        board_add(&c->e->stats->tls_handshake_failures, 1);
        log_verbose("client %s: TLS handshake not finished in %lld ms; closing", c->addr,
                    (long long)(now - c->created_ms));
        c->tls |= CONN_TLS_FATAL;
        return 0;
    }
    /* (a held connection has a request waiting: CLIENT PAUSE, a full link) */
    if (o->timeout_ms > 0 && now - c->last_ms > o->timeout_ms && buf_unread(&c->out) == 0 &&
        c->sq_head == NULL && c->hold == NULL) {
        log_verbose("client %s: idle for %lld ms; closing", c->addr, (long long)(now - c->last_ms));
        return 0;
    }
    if (conn_held(c) > 0)
        return conn_output_ok(c, now);
    return 1;
}
