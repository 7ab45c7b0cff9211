/*
 * owner_admin.c - the owner's requests that touch no key's value: SCAN (a
 * bounded page of resident live keys; in a cluster only keys of the leaves
 * it serves, since a leaf it gave away may still have rows here) and STATS
 * (every counter, for the edges' INFO).  Kept apart from owner_ops.c, which
 * is the data path.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/syskey.h"
#include "server/owner/owner_int.h"
#include "server/owner/owner_handover.h"
#include "server/owner/owner_repl.h"
#include "server/owner/owner_move_int.h"

struct scan_acc {
    const struct owner *o;        /* cluster: keep only keys of its leaves; else NULL */
    struct wire_slice *keys;
    char *arena;
    size_t n, cap, used, arena_cap;
};

static void scan_one(const char *key, size_t klen, void *arg)
{
    struct scan_acc *a = arg;
    if (syskey_is(key, klen))
        return; /* hotkvd's own (proto/syskey.h) */
    if (a->o != NULL && !owner_own_has(a->o, router_place(key, klen)))
        return;
    if (a->n == a->cap || a->used + klen > a->arena_cap)
        return; /* bounded: the cursor still advances past what was seen */
    memcpy(a->arena + a->used, key, klen);
    a->keys[a->n++] = wire_slice(a->arena + a->used, klen);
    a->used += klen;
}

void owner_op_scan(struct owner *o, struct olink *l, const struct wire_msg *m)
{
    uint32_t count = m->u.scan.count ? m->u.scan.count : 10;
    if (count > 10000)
        count = 10000;
    struct scan_acc a = {0};
    a.o = o->own != NULL ? o : NULL;
    a.cap = (size_t)count * 4 + 64;
    a.arena_cap = 4u << 20;
    a.keys = calloc(a.cap, sizeof(*a.keys));
    a.arena = malloc(a.arena_cap);
    if (a.keys == NULL || a.arena == NULL) {
        wire_put_error(&l->out, m->id, HKV_ENOMEM, wire_cstr("OOM owner out of memory"));
        goto out;
    }
    uint64_t next = ledger_scan(o->ledger, m->u.scan.cursor, count,
                                m->u.scan.has_match ? m->u.scan.match.p : NULL,
                                m->u.scan.has_match ? m->u.scan.match.len : 0, owner_clock(),
                                scan_one, &a);
    wire_put_scan_reply(&l->out, m->id, next, a.keys, (uint32_t)a.n);
out:
    free(a.keys);
    free(a.arena);
}

void owner_persist_stats(struct owner *o, struct owner_counters *v)
{
    struct persister_stats ps;
    size_t keys, bytes, waiting = owner_tickets_waiting(o);
    persister_stats(o->persister, &ps);
    ledger_dirty(o->ledger, &keys, &bytes);
    struct rifl_stats rs;
    rifl_stats(o->rifl, &rs);
    int64_t stall = ps.backlog_age_ms > ps.max_stall_ms ? ps.backlog_age_ms : ps.max_stall_ms;
    v->persist_dirty_keys = keys;
    v->persist_backlog_bytes = bytes;
    v->persist_batches = ps.batches;
    v->persist_rows = ps.rows;
    v->persist_transactions = ps.transactions;
    v->persist_fsync_commits = ps.fsync_commits;
    v->persist_last_commit_ms = (uint64_t)ps.last_commit_ms;
    v->persist_last_save_time_seconds = (uint64_t)(ps.last_ok_at_ms / 1000);
    v->persist_stall_ms_max = (uint64_t)stall;
    v->persist_backlog_age_ms = (uint64_t)ps.backlog_age_ms;
    v->persist_errors = ps.errors;
    v->persist_queued_batches = ps.queued_batches + ps.inflight_batches;
    v->owner_queue_depth = waiting;
    v->owner_durable_waiting = waiting;
    v->owner_completion_records = rs.records;
    v->owner_completions_dropped = rs.dropped;
}

/* Every STATS field as counted since the process started: what the loop
 * counts (o->st) and what the ledger, the links, the persister and the
 * completion records say now. */
static void stats_now(struct owner *o, struct owner_counters *v)
{
    *v = o->st;
    struct ledger_stats ls;
    ledger_stats(o->ledger, &ls);
    v->owner_keys = ls.keys - ls.sys_keys; /* a client's keys: DBSIZE, INFO keyspace */
    v->owner_tombstones = ls.tombstones;
    v->owner_memory_bytes = ls.memory_bytes;
    v->owner_evictions = ls.evictions;
    v->owner_expired = ls.expired;
    v->owner_expires = ls.expires - ls.sys_expires;
    /* the average deadline, less now: what Redis's avg_ttl estimates */
    uint64_t now = owner_clock().mono_ms;
    uint64_t avg = v->owner_expires > 0
                       ? (ls.expire_mono_sum - ls.sys_expire_mono_sum) / v->owner_expires : 0;
    v->owner_avg_ttl_ms = avg > now ? avg - now : 0;
    v->owner_links = 0;
    for (struct olink *x = o->links; x != NULL; x = x->next)
        v->owner_links++;
    owner_persist_stats(o, v);
    owner_move_counters(o, v);
    struct orepl_stats rs;
    struct ofollow_stats fs;
    owner_repl_stats(o, &rs);
    owner_follow_stats(o, &fs);
    v->repl_role_primary_leaves = rs.primary_leaves;
    v->repl_role_follower_leaves = fs.following;
    v->repl_followers = rs.streams;
    v->repl_isr_members = rs.in_sync;
    v->repl_lag_entries_max = rs.lag_entries_max;
    v->repl_lag_ms_max = rs.lag_ms_max;
    v->repl_isr_adds = rs.isr_adds;
    v->repl_isr_removals = rs.isr_removals;
    v->repl_acks_waited = rs.acks_waited;
    v->repl_ack_timeouts = rs.ack_timeouts;
    v->repl_deposed = rs.deposed;
    v->repl_waiting = rs.waiting;
    v->repl_follows_seeded = fs.seeded;
    v->repl_follows_promoted = fs.promoted;
    v->repl_retries_inherited = fs.inherited;
    v->repl_follows_dropped = fs.dropped;
    struct ohandover_stats hs;
    owner_handover_stats(o, &hs);
    v->repl_handovers = hs.done;
    v->repl_handovers_failed = hs.failed;
    v->repl_handover_ms_last = hs.ms_last;
    v->repl_handover_ms_max = hs.ms_max;
}

/* Every field of the list (server/core/counters.h), counters from the last
 * RESETSTAT on. */
void owner_op_stats(struct owner *o, struct olink *l, const struct wire_msg *m)
{
    struct wire_stat st[CTR_OWNER_COUNT];
    uint32_t n = 0;
    struct owner_counters v;
    stats_now(o, &v);
#define X(name, kind, help)                                                                  \
    st[n++] = (struct wire_stat){wire_cstr(#name),                                          \
                                 (int64_t)(v.name - (kind == CTR_COUNTER ? o->st_base.name : 0))};
    CTR_OWNER(X)
#undef X
    wire_put_stats_reply(&l->out, m->id, st, n);
}

/* A baseline rather than zeroing: most counters live in the ledger, the
 * persister and the completion records, which count on regardless. */
void owner_stats_reset(void *arg)
{
    struct owner *o = arg;
    struct owner_counters v;
    stats_now(o, &v);
#define X(name, kind, help)                                                                  \
    if (kind == CTR_COUNTER)                                                                 \
        o->st_base.name = v.name;
    CTR_OWNER(X)
#undef X
}

