/*
 * owner_ops.c - the owner's request executor: one request against the
 * ledger, one reply.  It is the top of the owner's request path: it calls
 * the gates (owner_gate.c), the link layer (replies, pushes), tickets,
 * persistence (parking, the backlog), SCAN/STATS (owner_admin.c) and, for
 * CALL and EXEC, the Redis command executor (owner_call.c); the link layer
 * and the persister reach it only through the callbacks owner.c hands them
 * (owner_execute is the links' on_request and the persister's replay).
 *
 * Every write passes the same gates in the same order, run once by
 * owner_gate_admit and owner_gate_ready (owner_gate.c) from its command's
 * declaration (proto/cmd.h), as CALL and EXEC do: is it a retry, is the key
 * ours (else MOVED), is there room in the persist backlog, is it resident
 * (else park it until the reader thread brings the row), does it hold a
 * durable write not yet committed, then the ledger call.  A durable-class
 * write that applied is not answered here: its reply is held until the
 * commit that contains it (owner_ticket.c).
 *
 * Writes are applied in the order they arrive and the ledger gives each the
 * key's next version; nothing an edge sends decides the order.  Before a
 * write runs, owner_write_gate() makes it exactly-once: a retry whose result is
 * recorded gets that result again (for a durable write whose commit is still
 * pending, after that commit), and a retry this process cannot vouch for
 * (its first attempt may have reached an earlier run of this owner) is
 * answered "outcome unknown" without being applied.  Every finished write's
 * reply is recorded (owner_rifl.h) before it is sent.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/cmd.h"
#include "proto/cmd_opts.h"
#include "server/owner/owner_cmd.h"
#include "server/owner/owner_int.h"
#include "server/owner/owner_notify.h"
#include "server/owner/owner_move_int.h"
#include "server/owner/owner_repl.h"

static void reply_error(struct olink *l, uint64_t id, int code, const char *text)
{
    wire_put_error(&l->out, id, code, wire_cstr(text));
}

/* A typed write of one key as the gates see it: its command's declaration
 * (proto/cmd.h) says it writes. */
static struct owner_req one_key(const struct wire_msg *m, enum cmd_id cmd, struct wire_rid rid,
                                const struct wire_slice *key, const char *payload, size_t plen)
{
    return (struct owner_req){.id = m->id, .rid = rid, .flags = cmd_get(cmd)->flags,
                              .keys = key, .nkeys = 1, .payload = payload, .plen = plen};
}

/* Both gates for a one-key typed write: 1 = run it. */
static int gates(struct owner *o, struct olink *l, const struct owner_req *r)
{
    return owner_gate_admit(o, l, r) && owner_gate_ready(o, l, r);
}

/* Common outcomes of a ledger write call.  Returns 1 if the caller should
 * build its reply (applied, or a condition not met), 0 if a reply was sent
 * or the request parked. */
static int write_outcome(struct owner *o, struct olink *l, const struct wire_msg *m,
                         struct wire_slice key, int rc, const char *payload, size_t plen)
{
    switch (rc) {
    case HKV_OK:
        o->st.owner_writes++;
        return 1;
    case HKV_EAGAIN:
        owner_park(o, l, key.p, key.len, payload, plen);
        return 0;
    case HKV_ENOMEM:
        reply_error(l, m->id, HKV_ENOMEM, "OOM owner out of memory");
        return 0;
    default:
        return 1; /* EEXIST / ENOENT / EINVAL: the caller knows what they mean */
    }
}

/* A read that would see a durable write not yet committed: 1 (parked until
 * the next durable commit, then run again), 0 (go on). */
static int uncommitted_key(struct owner *o, struct olink *l, struct wire_slice key,
                           const struct ledger_view *v, const char *payload, size_t plen)
{
    /* a write of the key waits for its followers: what a failover may lose
     * is seen by nobody (owner_repl.h) */
    if (owner_repl_key_waits(o, key.p, key.len) && owner_repl_park_read(o, l, payload, plen))
        return 1;
    if (v->class_id != OWNER_TAG_DURABLE || !v->dirty)
        return 0;
    owner_park_commit(o, l, payload, plen);
    return 1;
}

static void op_get(struct owner *o, struct olink *l, const struct wire_msg *m, const char *payload,
                   size_t plen)
{
    uint32_t n = m->u.get.nkeys;
    for (uint32_t i = 0; i < n; i++)
        if (!owner_ours(o, l, m->id, m->u.get.keys[i]))
            return;
    struct ledger_clock now = owner_clock();
    o->st.owner_reads++;
    if (n == 1) {
        struct ledger_view v;
        int rc = ledger_get(o->ledger, m->u.get.keys[0].p, m->u.get.keys[0].len, now, &v);
        if (rc == HKV_EAGAIN)
            owner_park(o, l, m->u.get.keys[0].p, m->u.get.keys[0].len, payload, plen);
        else if (uncommitted_key(o, l, m->u.get.keys[0], &v, payload, plen))
            return;
        else if (rc == HKV_OK)
            wire_put_value(&l->out, m->id, wire_slice(v.val, v.vlen), v.stamp,
                           (uint64_t)v.expire_at_ms);
        else
            wire_put_notfound(&l->out, m->id, v.stamp);
        return;
    }
    /* Several keys: each view's value pointer stays valid across further
     * ledger_get calls (reads do not move entries), so collect, then encode. */
    struct wire_item items[256];
    struct wire_item *it = n <= 256 ? items : calloc(n, sizeof(*it));
    if (it == NULL) {
        reply_error(l, m->id, HKV_ENOMEM, "OOM owner out of memory");
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        struct ledger_view v;
        int rc = ledger_get(o->ledger, m->u.get.keys[i].p, m->u.get.keys[i].len, now, &v);
        if (rc == HKV_EAGAIN) {
            owner_park(o, l, m->u.get.keys[i].p, m->u.get.keys[i].len, payload, plen);
            goto out;
        }
        if (uncommitted_key(o, l, m->u.get.keys[i], &v, payload, plen))
            goto out;
        it[i].found = rc == HKV_OK;
        if (it[i].found) {
            it[i].value = wire_slice(v.val, v.vlen);
            it[i].stamp = v.stamp;
            it[i].expire_ms = (uint64_t)v.expire_at_ms;
        }
    }
    wire_put_values(&l->out, m->id, it, n);
out:
    if (it != items)
        free(it);
}

static struct ledger_expiry to_ledger_exp(struct wire_expiry e)
{
    struct ledger_expiry x = {LEDGER_EXP_NONE, e.ms};
    switch (e.kind) {
    case WIRE_EXP_REL: x.kind = LEDGER_EXP_REL; break;
    case WIRE_EXP_ABS: x.kind = LEDGER_EXP_ABS; break;
    case WIRE_EXP_KEEP: x.kind = LEDGER_EXP_KEEP; break;
    default: x.kind = LEDGER_EXP_NONE; break;
    }
    return x;
}

static void op_set(struct owner *o, struct olink *l, const struct wire_msg *m, const char *payload,
                   size_t plen)
{
    struct wire_slice key = m->u.set.key;
    /* Placed once: the ownership check and the push queue's index both take it. */
    uint64_t place = router_place(key.p, key.len);
    struct owner_req req = one_key(m, CMD_SET, m->u.set.rid, &key, payload, plen);
    req.place = &place;
    if (!gates(o, l, &req))
        return;
    unsigned flags = 0;
    if (m->u.set.flags & WIRE_SET_NX)
        flags |= LEDGER_NX;
    if (m->u.set.flags & WIRE_SET_XX)
        flags |= LEDGER_XX;
    if (m->u.set.flags & WIRE_SET_GET)
        flags |= LEDGER_GET;
    struct ledger_view old = {0};
    struct rifl_result r = {.type = WIRE_OK};
    uint16_t tag = owner_key_tag(o, key);
    int rc = ledger_set(o->ledger, key.p, key.len, m->u.set.value.p, m->u.set.value.len, tag,
                        flags, to_ledger_exp(m->u.set.exp), owner_clock(), &old, &r.version);
    if (!write_outcome(o, l, m, key, rc, payload, plen))
        return;
    if (rc == HKV_EINVAL) {
        reply_error(l, m->id, HKV_EINVAL, "ERR invalid expire time in 'set' command");
        return;
    }
    r.applied = rc == HKV_OK;
    r.has_old = (m->u.set.flags & WIRE_SET_GET) && old.found;
    r.old = old.val;
    r.oldlen = old.vlen;
    /* An applied SET left the key with the class tag it was given: its
     * durability is known without another lookup. */
    int durable = r.applied && tag == OWNER_TAG_DURABLE;
    if (r.applied) {
        owner_notify(o, key, r.version, NEV_SET);
        if (m->u.set.exp.kind == WIRE_EXP_REL || m->u.set.exp.kind == WIRE_EXP_ABS)
            owner_notify(o, key, r.version, NEV_EXPIRE);
        owner_push_written(o, key, place, r.version, durable);
    }
    owner_finish(o, l, m->id, m->u.set.rid, &r, &key, durable, r.version);
}

static void op_del(struct owner *o, struct olink *l, const struct wire_msg *m, const char *payload,
                   size_t plen)
{
    uint32_t n = m->u.del.nkeys;
    /* Residency first, so a parked request replays whole, never half-applied. */
    struct owner_req req = {.id = m->id, .rid = m->u.del.rid, .flags = cmd_get(CMD_DEL)->flags,
                            .keys = m->u.del.keys, .nkeys = n, .resident = 1,
                            .payload = payload, .plen = plen};
    if (!gates(o, l, &req))
        return;
    struct ledger_clock now = owner_clock();
    struct wire_slice small[16], *dk = n <= 16 ? small : calloc(n, sizeof(*dk));
    if (dk == NULL) {
        reply_error(l, m->id, HKV_ENOMEM, "OOM owner out of memory");
        return;
    }
    struct rifl_result r = {.type = WIRE_INT};
    hkv_stamp first = 0;
    size_t ndur = 0;
    for (uint32_t i = 0; i < n; i++) {
        int existed = 0;
        hkv_stamp v = 0;
        struct wire_slice k = m->u.del.keys[i];
        if (ledger_del(o->ledger, k.p, k.len, owner_key_tag(o, k), now, &existed, NULL, &v) !=
            HKV_OK)
            continue; /* ENOMEM: that key keeps its value; the count says so */
        o->st.owner_writes++;
        r.value += existed;
        r.version = v; /* the newest: a cache ordering by it is after every key's delete */
        if (existed)
            owner_notify(o, k, v, NEV_DEL);
        if (first == 0)
            first = v;
        owner_push_applied(o, k, v);
        if (owner_is_durable(o, k))
            dk[ndur++] = k;
    }
    /* The ticket waits for each durable key at the first version of this
     * DEL or newer: versions only grow, so that is this delete or a later
     * write of the key.  owner_finish also sends the completion record to
     * the leaf's followers after the results: a DEL answered without it
     * left its tombstone in a follower's unfinished tail, and a promotion
     * dropped an acknowledged DEL (history_replicas, seed 1796193219). */
    owner_finish(o, l, m->id, m->u.del.rid, &r, dk, ndur, first);
    if (dk != small)
        free(dk);
}

static void op_getdel(struct owner *o, struct olink *l, const struct wire_msg *m,
                      const char *payload, size_t plen)
{
    struct wire_slice key = m->u.getdel.key;
    struct owner_req req = one_key(m, CMD_GETDEL, m->u.getdel.rid, &key, payload, plen);
    if (!gates(o, l, &req))
        return;
    int existed = 0;
    struct ledger_view old = {0};
    struct rifl_result r = {.type = WIRE_OK};
    int rc = ledger_del(o->ledger, key.p, key.len, owner_key_tag(o, key), owner_clock(), &existed,
                        &old, &r.version);
    if (!write_outcome(o, l, m, key, rc, payload, plen))
        return;
    r.applied = existed != 0;
    r.has_old = old.found;
    r.old = old.val;
    r.oldlen = old.vlen;
    if (existed)
        owner_notify(o, key, r.version, NEV_DEL);
    owner_push_applied(o, key, r.version);
    owner_finish(o, l, m->id, m->u.getdel.rid, &r, &key, owner_is_durable(o, key), r.version);
}

static void op_incrby(struct owner *o, struct olink *l, const struct wire_msg *m,
                      const char *payload, size_t plen)
{
    struct wire_slice key = m->u.incrby.key;
    struct owner_req req = one_key(m, CMD_INCRBY, m->u.incrby.rid, &key, payload, plen);
    if (!gates(o, l, &req))
        return;
    struct rifl_result r = {.type = WIRE_INT};
    int rc = ledger_incrby(o->ledger, key.p, key.len, m->u.incrby.delta, owner_key_tag(o, key),
                           owner_clock(), &r.value, &r.version);
    if (!write_outcome(o, l, m, key, rc, payload, plen))
        return;
    if (rc == HKV_EINVAL) {
        struct ledger_view v;
        /* Tell overflow from "not an integer", as Redis does.  Not recorded:
         * nothing was applied, and a retry is judged on the value it finds. */
        int found = ledger_get(o->ledger, key.p, key.len, owner_clock(), &v) == HKV_OK;
        reply_error(l, m->id, HKV_EINVAL, ocmd_incr_refusal(found ? &v : NULL));
        return;
    }
    owner_notify(o, key, r.version, NEV_INCRBY);
    owner_push_applied(o, key, r.version);
    owner_finish(o, l, m->id, m->u.incrby.rid, &r, &key, owner_is_durable(o, key), r.version);
}

static void op_expire(struct owner *o, struct olink *l, const struct wire_msg *m,
                      const char *payload, size_t plen)
{
    struct wire_slice key = m->u.expire.key;
    struct owner_req req = one_key(m, CMD_EXPIRE, m->u.expire.rid, &key, payload, plen);
    if (!gates(o, l, &req))
        return;
    struct ledger_clock now = owner_clock();
    struct rifl_result r = {.type = WIRE_INT};
    uint32_t f = m->u.expire.flags;
    if (f != 0) {
        /* NX XX GT LT compare with the current expiry first (Redis 7). */
        int64_t ttl;
        int rc = ledger_ttl(o->ledger, key.p, key.len, now, &ttl);
        if (rc == HKV_EAGAIN) {
            owner_park(o, l, key.p, key.len, payload, plen);
            return;
        }
        /* remaining ms wanted; saturating, so a far-past EXPIREAT stays far past */
        int64_t want = m->u.expire.exp.ms;
        if (m->u.expire.exp.kind == WIRE_EXP_ABS &&
            __builtin_sub_overflow(m->u.expire.exp.ms, now.wall_ms, &want))
            want = INT64_MIN;
        /* the rule EXPIRE inside CALL/EXEC follows too (proto/cmd_opts.h;
         * WIRE_EXPIRE_* are its flags, edge_write.c asserts it) */
        if (ttl == -2 || !cmd_expire_applies(f, ttl, want)) {
            owner_finish(o, l, m->id, m->u.expire.rid, &r, NULL, 0, r.version);
            return;
        }
    }
    int deleted = 0;
    struct ledger_expiry e = to_ledger_exp(m->u.expire.exp);
    if (e.ms <= 0 && e.kind == LEDGER_EXP_REL) {
        /* EXPIRE with a negative or zero time deletes, as Redis does. */
        e.kind = LEDGER_EXP_ABS;
        e.ms = 1;
    }
    hkv_stamp v = 0;
    int rc = ledger_expire(o->ledger, key.p, key.len, e, now, &deleted, &v);
    if (!write_outcome(o, l, m, key, rc, payload, plen))
        return;
    r.value = rc == HKV_OK;
    r.version = rc == HKV_OK ? v : 0;
    if (rc == HKV_OK) {
        owner_notify(o, key, v, deleted ? NEV_DEL : NEV_EXPIRE);
        owner_push_applied(o, key, v);
    }
    owner_finish(o, l, m->id, m->u.expire.rid, &r, &key, rc == HKV_OK && owner_is_durable(o, key),
                 r.version);
}

static void op_persist(struct owner *o, struct olink *l, const struct wire_msg *m,
                       const char *payload, size_t plen)
{
    struct wire_slice key = m->u.persist.key;
    struct owner_req req = one_key(m, CMD_PERSIST, m->u.persist.rid, &key, payload, plen);
    if (!gates(o, l, &req))
        return;
    int changed = 0;
    hkv_stamp v = 0;
    int rc = ledger_persist(o->ledger, key.p, key.len, owner_clock(), &changed, &v);
    if (!write_outcome(o, l, m, key, rc, payload, plen))
        return;
    struct rifl_result r = {.type = WIRE_INT, .value = rc == HKV_OK && changed};
    r.version = r.value ? v : 0;
    if (r.value) {
        owner_notify(o, key, v, NEV_PERSIST);
        owner_push_applied(o, key, v);
    }
    owner_finish(o, l, m->id, m->u.persist.rid, &r, &key, r.value && owner_is_durable(o, key),
                 r.version);
}

static void op_ttl(struct owner *o, struct olink *l, const struct wire_msg *m, const char *payload,
                   size_t plen)
{
    struct wire_slice key = m->u.ttl.key;
    if (!owner_ours(o, l, m->id, key))
        return;
    int64_t ttl = -2;
    o->st.owner_reads++;
    struct ledger_clock now = owner_clock();
    struct ledger_view v;
    if (ledger_ttl(o->ledger, key.p, key.len, now, &ttl) == HKV_EAGAIN ||
        ledger_get(o->ledger, key.p, key.len, now, &v) == HKV_EAGAIN) {
        owner_park(o, l, key.p, key.len, payload, plen);
        return;
    }
    if (!uncommitted_key(o, l, key, &v, payload, plen))
        wire_put_int(&l->out, m->id, ttl, 0);
}

void owner_execute(struct owner *o, struct olink *l, const struct wire_msg *m, const char *payload,
                   size_t plen)
{
    if (o->own != NULL && owner_fence(o, l, m, payload, plen))
        return; /* its leaf waits (a move): parked, run again when the wait ends */
    owner_clock_hold(); /* one request, one instant (owner_clock.c) */
    switch (m->type) {
    case WIRE_GET: op_get(o, l, m, payload, plen); break;
    case WIRE_SET: op_set(o, l, m, payload, plen); break;
    case WIRE_DEL: op_del(o, l, m, payload, plen); break;
    case WIRE_INCRBY: op_incrby(o, l, m, payload, plen); break;
    case WIRE_EXPIRE: op_expire(o, l, m, payload, plen); break;
    case WIRE_PERSIST: op_persist(o, l, m, payload, plen); break;
    case WIRE_GETDEL: op_getdel(o, l, m, payload, plen); break;
    case WIRE_TTL: op_ttl(o, l, m, payload, plen); break;
    case WIRE_SCAN: owner_op_scan(o, l, m); break;
    case WIRE_SCAN_RANGE: owner_op_scan_range(o, l, m); break;
    case WIRE_PING: wire_put_pong(&l->out, m->id); break;
    case WIRE_STATS: owner_op_stats(o, l, m); break;
    case WIRE_CALL: owner_op_call(o, l, m, payload, plen); break;
    case WIRE_EXEC: owner_op_exec(o, l, m, payload, plen); break;
    case WIRE_PUBLISH: owner_publish(o, l, m); break;
    default:
        reply_error(l, m->id, HKV_EPROTO, "ERR unexpected request on an owner link");
        break;
    }
    owner_clock_release();
}
