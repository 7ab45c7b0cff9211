/*
 * edge_diag.c - the one log line that explains a failed write.  When a write
 * fails, the edge asks that owner for STATS at once on its READ link and logs
 * the failure together with what the owner said about itself (queue depth,
 * persist backlog, stall time), or that it did not answer within 1 s.
 */
#include "server/edge/edge_diag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/log.h"
#include "server/core/topo.h"

struct diag {
    struct owner_ref *o;
    struct elink *link;
    uint64_t id;
    struct event *timer;
    char what[256];
};

static void diag_end(struct diag *d)
{
    event_free(d->timer);
    free(d);
}

static void diag_cb(void *arg, int status, const struct wire_msg *m)
{
    struct diag *d = arg;
    if (status == HKV_OK && m->type == WIRE_STATS_REPLY) {
        int64_t v[CTR_OWNER_COUNT] = {0};
        edge_owner_take_stats(m, v);
        log_warning("%s; owner %s/%d answered STATS: queue_depth=%lld persist_backlog_bytes=%lld "
                    "persist_stall_ms_max=%lld persist_dirty_keys=%lld persist_errors=%lld",
                    d->what, topo_pool_name(d->o->pool), d->o->index,
                    (long long)v[CTR_OWNER_owner_queue_depth], (long long)v[CTR_OWNER_persist_backlog_bytes],
                    (long long)v[CTR_OWNER_persist_stall_ms_max], (long long)v[CTR_OWNER_persist_dirty_keys],
                    (long long)v[CTR_OWNER_persist_errors]);
    } else {
        log_warning("%s; owner %s/%d did not answer STATS either (%s)", d->what,
                    topo_pool_name(d->o->pool), d->o->index,
                    status == HKV_OK ? "unexpected reply" : hkv_strstatus(status));
    }
    diag_end(d);
}

static void diag_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct diag *d = arg;
    elink_cancel(d->link, d->id);
    log_warning("%s; owner %s/%d did not answer STATS within 1 s", d->what,
                topo_pool_name(d->o->pool), d->o->index);
    diag_end(d);
}

void edge_write_failed_report(struct owner_ref *o, const char *what)
{
    struct diag *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return;
    d->o = o;
    snprintf(d->what, sizeof(d->what), "%s", what);
    d->link = edge_owner_link(o, WIRE_ROLE_READ);
    d->timer = d->link != NULL ? evtimer_new(o->e->base, diag_timeout, d) : NULL;
    uint64_t id;
    struct hkv_buf *b = d->timer != NULL ? elink_out(d->link, &id) : NULL;
    if (d->timer == NULL || wire_put_stats(b, id) != HKV_OK ||
        elink_commit(d->link, id, diag_cb, d) != HKV_OK) {
        log_warning("%s; could not ask owner %s/%d for STATS", what, topo_pool_name(o->pool), o->index);
        if (d->timer)
            event_free(d->timer);
        free(d);
        return;
    }
    d->id = id;
    struct timeval tv = {1, 0};
    evtimer_add(d->timer, &tv);
}

