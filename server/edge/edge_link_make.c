/*
 * edge_link_make.c - making, configuring and freeing an owner link, and the
 * little callers read of one (edge_link.h).  The link's life, the bytes and
 * the pending requests are edge_link.c's; this file only fills struct elink
 * from elink_opts (taking a reference on a TCP link's TLS context) and
 * frees what it holds, so the state machine stays in one file of its size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/edge/edge_link_int.h"

const char *elink_name(const struct elink *l) { return l->name; }
int elink_congested(const struct elink *l) { return l->congested; }
int elink_is_up(const struct elink *l) { return l->state == LINK_UP; }
int elink_greeted(const struct elink *l)
{
    uint64_t inc = l->state == LINK_UP ? elink_owner_of(l, l->conn) : 0;
    return inc != 0 && inc != WIRE_PREV_UNKNOWN;
}
int elink_is_remote(const struct elink *l) { return l->addr != NULL; }
uint64_t elink_pending(const struct elink *l) { return l->npending; }

struct elink *elink_create(struct event_base *base, const struct elink_opts *o)
{
    struct elink *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return NULL;
    l->base = base;
    l->fd = -1;
    if (o->addr != NULL) {
        l->addr = strdup(o->addr);
        l->port = o->port;
        l->peer_host = strdup(o->peer_host != NULL ? o->peer_host : "");
        if (o->tls != NULL && SSL_CTX_up_ref(o->tls) == 1)
            l->tls = o->tls;
    } else {
        l->path = strdup(o->path);
    }
    snprintf(l->cluster, sizeof(l->cluster), "%s", o->cluster != NULL ? o->cluster : "");
    snprintf(l->host, sizeof(l->host), "%s", o->host != NULL ? o->host : "");
    l->want_owner = o->want_owner;
    snprintf(l->name, sizeof(l->name), "%s", o->name);
    snprintf(l->colo, sizeof(l->colo), "%s", o->colo != NULL ? o->colo : "");
    l->edge_id = o->edge_id;
    l->incarnation = o->incarnation;
    l->role = o->role;
    l->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 1;
    l->max_frame = o->max_frame;
    l->drained = o->drained;
    l->drained_arg = o->drained_arg;
    l->push = o->push;
    l->push_arg = o->push_arg;
    l->gap = o->gap;
    l->backoff_ms = ELINK_BACKOFF_MIN_MS;
    l->ring = calloc(RING_MIN, sizeof(*l->ring));
    l->mask = RING_MIN - 1;
    l->lo = l->next = 1; /* id 0 is reserved */
    wire_decoder_init(&l->dec, 0);
    if ((l->path == NULL && (l->addr == NULL || l->peer_host == NULL)) || l->ring == NULL ||
        (l->addr != NULL && l->tls == NULL) || elink_start(l) != 0) {
        elink_destroy(&l);
        return NULL;
    }
    return l;
}

void elink_destroy(struct elink **lp)
{
    struct elink *l = *lp;
    if (l == NULL)
        return;
    if (l->rev)
        event_free(l->rev);
    if (l->wev)
        event_free(l->wev);
    SSL_free(l->ssl);
    if (l->fd >= 0)
        close(l->fd);
    SSL_CTX_free(l->tls);
    if (l->reconnect)
        event_free(l->reconnect);
    if (l->timer)
        event_free(l->timer);
    if (l->flush)
        event_free(l->flush);
    wire_decoder_deinit(&l->dec);
    buf_deinit(&l->out);
    buf_deinit(&l->in);
    free(l->ring);
    free(l->path);
    free(l->addr);
    free(l->peer_host);
    free(l);
    *lp = NULL;
}

void elink_set_tls(struct elink *l, SSL_CTX *ctx)
{
    if (l->addr == NULL || ctx == NULL || SSL_CTX_up_ref(ctx) != 1)
        return;
    SSL_CTX_free(l->tls);
    l->tls = ctx;
}

uint64_t elink_next_conn(const struct elink *l)
{
    /* Bytes queued while down go out on the next connection. */
    return l->state == LINK_DOWN ? l->conn + 1 : l->conn;
}

int elink_conn_went_up(const struct elink *l, uint64_t conn)
{
    return conn != 0 && conn <= l->up_conn;
}

uint64_t elink_owner_of(const struct elink *l, uint64_t conn)
{
    if (conn != 0 && l->owners[conn % 8].conn == conn)
        return l->owners[conn % 8].inc;
    return WIRE_PREV_UNKNOWN;
}
