/*
 * master_forget.c - FLUSHALL's cache forget, host-wide.  An edge whose
 * FLUSHALL every owner acknowledged sends CTL_CACHE_FORGET with each
 * owner's flush version; the master, which maps every colo segment (a colo's
 * edges only map their own), raises those owners' flush floors in each of
 * them (cache_forget_below) and answers CTL_CACHE_FORGOTTEN.  The floors are
 * plain atomics in shared memory, so they are in force for every edge of
 * every colo before the answer leaves: nothing waits on any other process,
 * and one message is answered by one message, in order.  Each colo's change
 * ring gets a FLUSH record too (CLIENT TRACKING: "FLUSHALL invalidates
 * all").
 */
#include <event2/buffer.h>

#include "server/colo/cache.h"
#include "server/colo/changes.h"
#include "server/core/ctl.h"
#include "server/core/log.h"
#include "server/master/master_int.h"

void master_cache_forget(struct child *c, const char *payload, size_t len)
{
    struct master *m = c->m;
    size_t n = len / 8;
    if (len % 8 != 0) {
        char name[64];
        log_warning("%s: CACHE_FORGET of %zu bytes is not a list of versions; applying the "
                    "whole ones", master_child_name(c, m->cfg, name, sizeof(name)), len);
    }
    for (size_t i = 0; i < n; i++) {
        hkv_stamp floor = ctl_get_u64((const unsigned char *)payload + 8 * i);
        for (int k = 0; k < m->ncolos; k++)
            cache_forget_below(m->caches[k], floor);
    }
    /* Tracking clients of every colo flush what they hold (before the
     * answer: the FLUSHALL's OK follows it). */
    for (int k = 0; m->changes != NULL && k < m->ncolos; k++)
        changes_note_flush(m->changes[k]);
    log_verbose("FLUSHALL: %zu owners' older versions forgotten in %d colo caches", n,
                m->ncolos);
    if (c->ctl != NULL)
        ctl_put(bufferevent_get_output(c->ctl), CTL_CACHE_FORGOTTEN, NULL, 0);
}
