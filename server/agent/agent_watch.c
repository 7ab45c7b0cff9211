/*
 * agent_watch.c - the agent's view of the cluster's keys: one full read,
 * then one watch (../shared/CLUSTER.md §3).
 *
 * The full read is paged (READ_PAGE keys a call) at the revision of its
 * first page, so a big map is never one huge answer and every page sees
 * the same cluster; a page that fails (etcd gone, or the revision compacted
 * away meanwhile) starts the read over.  The map is reset when the first
 * page arrives, not before: a read that cannot start leaves the map as it
 * was.  Only a complete read is committed.
 *
 * The watch then starts at the read's revision + 1.  Each message's events
 * are applied and committed together (one revision, or a few when etcd
 * catches up); a message that touches only registrations (hosts/,
 * writers/) changes no table and publishes nothing.  Progress notifications
 * move watch_revision only.  A watch broken or idle resumes from the last
 * revision seen + 1 after a backoff; one cancelled because that revision was
 * compacted is followed by a new full read (watch_compactions counts them).
 */
#include <string.h>

#include "proto/hkv.h"
#include "server/agent/agent_int.h"
#include "server/agent/agent_policy.h"
#include "server/core/clock.h"
#include "server/core/log.h"

#define READ_PAGE 1000
#define WATCH_IDLE_MS 15000 /* three progress notifications at 5 s */

static void start_page(struct agent *a);

static void on_page(void *arg, const struct etcd_result *r)
{
    struct agent *a = arg;
    a->read.inflight = 0;
    if (a->stopping)
        return;
    if (r->status != HKV_OK) {
        agent_etcd_failed(a, "reading the cluster's keys", r);
        a->read_next_len = 0; /* from the start, at a new revision */
        agent_retry_failed(&a->read);
        return;
    }
    agent_etcd_ok(a);
    if (a->read_next_len == 0) {
        a->read_rev = r->revision;
        agent_map_reset(a->map);
    }
    for (size_t i = 0; i < r->nkvs; i++)
        agent_map_apply(a->map, r->kvs[i].key, r->kvs[i].key_len, r->kvs[i].value,
                        r->kvs[i].value_len, r->kvs[i].mod_revision);
    const struct etcd_kv *last = r->nkvs > 0 ? &r->kvs[r->nkvs - 1] : NULL;
    if (r->more && last != NULL && last->key_len + 1 < sizeof(a->read_next)) {
        memcpy(a->read_next, last->key, last->key_len);
        a->read_next[last->key_len] = '\0'; /* the next key after it */
        a->read_next_len = last->key_len + 1;
        start_page(a);
        return;
    }
    a->read_next_len = 0;
    a->reading = 0;
    a->have_read = 1;
    agent_retry_ok(&a->read);
    log_verbose("read the cluster's keys at revision %lld", (long long)a->read_rev);
    a->applied_rev = 0;
    agent_commit(a, a->read_rev);
    a->h.watch_revision = a->read_rev;
    agent_health_push(a);
    if (a->watch != NULL)
        etcd_watch_cancel(&a->watch);
    agent_retry_ok(&a->watch_retry); /* the tick starts the watch */
}

static void start_page(struct agent *a)
{
    int rc;
    if (a->read_next_len == 0)
        rc = etcd_range(a->etcd, a->prefix, a->plen, a->prefix_end, a->elen, 0, READ_PAGE,
                        on_page, a);
    else
        rc = etcd_range(a->etcd, a->read_next, a->read_next_len, a->prefix_end, a->elen,
                        a->read_rev, READ_PAGE, on_page, a);
    if (rc != HKV_OK) {
        agent_retry_failed(&a->read);
        return;
    }
    a->read.inflight = 1;
}

static int64_t resume_rev(const struct agent *a)
{
    return (a->applied_rev > a->h.watch_revision ? a->applied_rev : a->h.watch_revision) + 1;
}

static void on_watch(void *arg, const struct etcd_watch_msg *m)
{
    struct agent *a = arg;
    if (a->stopping)
        return;
    switch (m->kind) {
    case ETCD_W_CREATED:
        agent_etcd_ok(a);
        agent_retry_ok(&a->watch_retry);
        break;
    case ETCD_W_EVENTS: {
        agent_etcd_ok(a);
        int64_t rev = 0;
        int changed = 0;
        for (size_t i = 0; i < m->nevents; i++) {
            const struct etcd_kv *kv = &m->events[i].kv;
            int del = m->events[i].type == ETCD_EV_DELETE;
            enum agent_key_kind k =
                agent_map_apply(a->map, kv->key, kv->key_len, del ? NULL : kv->value,
                                del ? 0 : kv->value_len, kv->mod_revision);
            changed |= k == AGENT_K_LEAF || k == AGENT_K_OWNER || k == AGENT_K_MEMBER ||
                       k == AGENT_K_POOL;
            if (k == AGENT_K_OTHER && a->policy != NULL)
                agent_policy_watched(a->policy, kv->key, kv->key_len, del ? NULL : kv->value,
                                     del ? 0 : kv->value_len);
            if (kv->mod_revision > rev)
                rev = kv->mod_revision;
        }
        if (rev == 0)
            rev = m->revision;
        if (changed)
            agent_commit(a, rev);
        else if (rev > a->applied_rev)
            a->applied_rev = rev;
        if (rev > a->h.watch_revision)
            a->h.watch_revision = rev;
        agent_health_push(a);
        break;
    }
    case ETCD_W_PROGRESS:
        agent_etcd_ok(a);
        if (m->revision > a->h.watch_revision)
            a->h.watch_revision = m->revision;
        agent_health_push(a);
        break;
    case ETCD_W_CANCELED:
        etcd_watch_cancel(&a->watch);
        if (m->compact_revision > 0) {
            agent_etcd_ok(a);
            a->h.compactions++;
            agent_health_push(a);
            log_notice("watch: revision %lld was compacted away (compacted at %lld); reading "
                       "every key again", (long long)resume_rev(a),
                       (long long)m->compact_revision);
            a->reading = 1;
            a->read_next_len = 0;
            agent_retry_ok(&a->read);
        } else {
            log_verbose("watch cancelled by etcd; resuming from revision %lld",
                        (long long)resume_rev(a));
            agent_retry_failed(&a->watch_retry);
        }
        break;
    case ETCD_W_BROKEN:
        etcd_watch_cancel(&a->watch);
        if (m->status == HKV_ETIMEDOUT)
            log_verbose("watch silent for %d s; resuming from revision %lld",
                        WATCH_IDLE_MS / 1000, (long long)resume_rev(a));
        else
            agent_etcd_failed(a, "watch stream", &(struct etcd_result){.status = m->status});
        agent_retry_failed(&a->watch_retry);
        break;
    }
}

static void start_watch(struct agent *a)
{
    a->watch = etcd_watch(a->etcd, a->prefix, a->plen, a->prefix_end, a->elen, resume_rev(a),
                          WATCH_IDLE_MS, on_watch, a);
    if (a->watch == NULL)
        agent_retry_failed(&a->watch_retry);
}

void agent_watch_tick(struct agent *a, int64_t now)
{
    if (a->stopping)
        return;
    if (a->reading) {
        if (agent_retry_due(&a->read, now))
            start_page(a);
        return;
    }
    if (a->watch == NULL && agent_retry_due(&a->watch_retry, now))
        start_watch(a);
}

void agent_watch_stop(struct agent *a)
{
    if (a->watch != NULL)
        etcd_watch_cancel(&a->watch);
}
