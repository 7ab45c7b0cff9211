/*
 * owner_gate.c - the gates every request passes before it touches the
 * ledger, and the way every write is finished, shared by the wire-kind
 * executor (owner_ops.c) and the Redis command executor (owner_call.c) so
 * both keep one set of rules, run once per request by owner_gate_admit and
 * owner_gate_ready from the command's flags (proto/cmd.h): is this write a
 * retry (answer it from its completion record, or "outcome unknown" when a
 * record of it may have been forgotten: owner_rifl.h's rule), then is the
 * key ours (else MOVED: the order matters, a MOVED must mean "no record
 * here, none forgotten"), is there room in the persist backlog, is every key
 * resident (requests of several keys), does a key hold a durable write not
 * yet committed; and at the end, record the result and send it or hold it
 * for its commit.
 *
 * It sits below both executors and above the link, ticket and persistence
 * layers: it calls down only (owner_int.h has the map).
 */
#include <stdlib.h>
#include <string.h>

#include "proto/cmd.h"
#include "server/owner/owner_int.h"
#include "server/owner/owner_move_int.h"
#include "server/owner/owner_repl.h"

const struct cfg_class *owner_class(struct owner *o, const char *key, size_t klen)
{
    return router_class(o->router, key, klen);
}

uint16_t owner_key_tag(struct owner *o, struct wire_slice key)
{
    /* A leaf that should have followers and has none in sync (seeding, just
     * promoted, just moved) commits before it answers: the write then
     * survives this process's death without a follower (owner_repl.h). */
    if (owner_class(o, key.p, key.len)->durability != CFG_DUR_DURABLE &&
        (o->opts.replicas == 0 || o->repl == NULL ||
         owner_repl_covered(o, router_place(key.p, key.len))))
        return OWNER_TAG_LEDGER;
    o->durable_tagged = 1;
    return OWNER_TAG_DURABLE;
}

int owner_is_durable(struct owner *o, struct wire_slice key)
{
    struct ledger_view v;
    if (ledger_get(o->ledger, key.p, key.len, owner_clock(), &v) == HKV_EAGAIN)
        return owner_key_tag(o, key) == OWNER_TAG_DURABLE;
    if (v.class_id != OWNER_TAG_DURABLE)
        return 0;
    /* A key loaded with the durable tag and changed in place (EXPIRE,
     * PERSIST) keeps it: owner_durable_pending must look from now on. */
    o->durable_tagged = 1;
    return 1;
}

int owner_ours(struct owner *o, struct olink *l, uint64_t id, struct wire_slice key)
{
    uint64_t place = router_place(key.p, key.len);
    if (!owner_ours_place(o, l, id, place))
        return 0;
    owner_work_request(o, place, key);
    return 1;
}

void owner_leaf_of(struct owner *o, uint64_t place, uint32_t *prefix, uint8_t *bits)
{
    if (o->own == NULL || !owner_own_leaf(o, place, prefix, bits))
        router_leaf(o->router, o->pool, place, prefix, bits);
}

int owner_ours_place(struct owner *o, struct olink *l, uint64_t id, uint64_t h)
{
    if (o->own != NULL)
        return owner_own_ours(o, l, id, h); /* a cluster: the ownership table decides */
    int owner = router_owner(o->router, o->pool, h);
    if (owner == o->index)
        return 1;
    uint32_t leaf;
    uint8_t bits;
    router_leaf(o->router, o->pool, h, &leaf, &bits);
    wire_put_moved(&l->out, id, leaf, bits, router_generation(o->router, o->pool),
                   (uint32_t)(owner < 0 ? 0 : owner));
    o->st.owner_moved++;
    return 0;
}

/* ---- the gates, once for every request ---- */

static int req_each(struct owner *o, const struct owner_req *r, owner_key_fn fn, void *arg)
{
    if (r->keys == NULL)
        return r->each(r->src, fn, arg);
    for (uint32_t i = 0; i < r->nkeys; i++) {
        int rc = fn(arg, r->keys[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

struct gate_arg {
    struct owner *o;
    struct olink *l;
    const struct owner_req *r;
};

static int foreign(void *arg, struct wire_slice key)
{
    struct gate_arg *g = arg;
    return !owner_ours(g->o, g->l, g->r->id, key);
}

static int not_resident(void *arg, struct wire_slice key)
{
    struct gate_arg *g = arg;
    int64_t ttl;
    if (ledger_ttl(g->o->ledger, key.p, key.len, owner_clock(), &ttl) != HKV_EAGAIN)
        return 0;
    owner_park(g->o, g->l, key.p, key.len, g->r->payload, g->r->plen);
    return 1;
}

static int pending(void *arg, struct wire_slice key)
{
    struct gate_arg *g = arg;
    if (owner_repl_key_waits(g->o, key.p, key.len) &&
        owner_repl_park_read(g->o, g->l, g->r->payload, g->r->plen))
        return 1; /* its write waits for the followers (owner_repl.h) */
    if (!owner_durable_pending(g->o, key))
        return 0;
    owner_park_commit(g->o, g->l, g->r->payload, g->r->plen);
    return 1;
}

/* With followers, a write's results and its completion record travel on its
 * leaf's stream, and a follower applies a request whole or not at all
 * (owner_recv.c).  A request over two leaves would travel on two streams: a
 * promotion could then give one leaf's part (and the record that answers a
 * retry OK) without the other's, a torn write acknowledged.  So with
 * `replicas` such a request is refused, as Redis Cluster refuses keys of
 * two slots; hash tags keep keys in one leaf. */
struct leaf_arg {
    struct owner *o;
    uint32_t leaf;
    uint8_t bits;
    int n;
};

static int other_leaf(void *arg, struct wire_slice key)
{
    struct leaf_arg *a = arg;
    uint32_t leaf;
    uint8_t bits;
    owner_leaf_of(a->o, router_place(key.p, key.len), &leaf, &bits);
    if (a->n++ == 0) {
        a->leaf = leaf;
        a->bits = bits;
        return 0;
    }
    return leaf != a->leaf || bits != a->bits;
}

/* A retry whose first attempt went to the primary this owner was promoted
 * from, for every key (ofollow_inherits): no record here means no effect. */
struct heir_arg {
    struct owner *o;
    uint64_t inc;
};

static int not_inherited(void *arg, struct wire_slice key)
{
    struct heir_arg *a = arg;
    return !ofollow_inherits(a->o, router_place(key.p, key.len), a->inc);
}

static int followed(void *arg, struct wire_slice key)
{
    struct heir_arg *a = arg;
    return ofollow_follows(a->o, router_place(key.p, key.len));
}

static enum owner_heir inherits(struct owner *o, const struct owner_req *r)
{
    uint64_t prev = r->rid.prev;
    if (prev == 0 || prev == o->incarnation || prev == WIRE_PREV_SAME ||
        prev == WIRE_PREV_UNKNOWN || o->opts.replicas == 0)
        return OWNER_HEIR_NO;
    struct heir_arg a = {o, prev};
    if (r->place != NULL ? ofollow_inherits(o, *r->place, prev)
                         : (r->keys == NULL || r->nkeys > 0) &&
                               req_each(o, r, not_inherited, &a) == 0)
        return OWNER_HEIR_YES;
    if (r->place != NULL ? ofollow_follows(o, *r->place) : req_each(o, r, followed, &a) != 0)
        return OWNER_HEIR_SOON;
    return OWNER_HEIR_NO;
}

static int spans_leaves(struct owner *o, const struct owner_req *r)
{
    if (o->opts.replicas == 0 || r->place != NULL || (r->keys != NULL && r->nkeys < 2))
        return 0;
    struct leaf_arg a = {o, 0, 0, 0};
    return req_each(o, r, other_leaf, &a) != 0;
}

int owner_gate_admit(struct owner *o, struct olink *l, const struct owner_req *r)
{
    int write = (r->flags & (CMD_F_WRITE | CMD_F_ALLKEYS)) != 0;
    struct gate_arg g = {o, l, r};
    /* a retry first: its record answers it wherever its keys are now */
    if (write && !owner_write_gate(o, l, r->id, r->rid, inherits(o, r)))
        return 0;
    if (r->place != NULL ? !owner_ours_place(o, l, r->id, *r->place)
                         : req_each(o, r, foreign, &g) != 0)
        return 0;
    if (write && spans_leaves(o, r)) {
        wire_put_error(&l->out, r->id, HKV_EINVAL,
                       wire_cstr("CROSSSLOT Keys in request don't hash to the same slot (with "
                                 "replicas, a write's keys must share a leaf: use hash tags)"));
        return 0;
    }
    return !(write && owner_backlog_refused(o, l, r->id));
}

int owner_gate_ready(struct owner *o, struct olink *l, const struct owner_req *r)
{
    struct gate_arg g = {o, l, r};
    if (r->resident && req_each(o, r, not_resident, &g) != 0)
        return 0;
    return req_each(o, r, pending, &g) == 0;
}

/* Encodes a finished write's reply. */
static void put_result(struct hkv_buf *b, uint64_t id, const struct rifl_result *r)
{
    if (r->type == WIRE_OK) {
        struct wire_slice old = wire_slice(r->old, r->oldlen);
        wire_put_ok(b, id, r->version, r->applied, r->has_old ? &old : NULL);
    } else if (r->type == WIRE_RESP) {
        wire_put_resp(b, id, wire_slice(r->resp, r->resplen), r->changes, r->nchanges);
    } else {
        wire_put_int(b, id, r->value, r->version);
    }
}

void owner_answer(struct owner *o, struct olink *l, uint64_t id, const struct rifl_result *r)
{
    if (owner_repl_wants(o)) { /* every in-sync follower holds it first */
        struct hkv_buf reply = HKV_BUF_INIT;
        put_result(&reply, id, r);
        owner_repl_hold(o, l, id, r->ticket, r->ticket != 0, &reply);
        return;
    }
    if (r->ticket == 0) { /* straight into the batch's replies: no buffer of its own */
        put_result(&l->out, id, r);
        return;
    }
    struct hkv_buf reply = HKV_BUF_INIT;
    put_result(&reply, id, r);
    if (owner_ticket_wait(o, r->ticket, l, id, &reply) != 0)
        buf_append(&l->out, buf_head(&reply), buf_unread(&reply));
    buf_deinit(&reply);
}

int owner_write_gate(struct owner *o, struct olink *l, uint64_t id, struct wire_rid rid,
                     enum owner_heir heir)
{
    rifl_ack(o->rifl, l->edge_id, l->edge_inc, rid.ack);
    const struct rifl_result *r = rifl_get(o->rifl, l->edge_id, l->edge_inc, rid.seq);
    if (r != NULL) {
        o->st.owner_idempotent_retries++;
        owner_repl_retry(o); /* its original may still wait for the followers */
        owner_answer(o, l, id, r);
        return 0;
    }
    /* R3, or met another way (heir): the process it went to left nothing
     * but this copy */
    if (rid.prev != 0 && rid.prev != o->incarnation && rid.prev != WIRE_PREV_SAME &&
        heir != OWNER_HEIR_YES) {
        if (heir == OWNER_HEIR_SOON) {
            wire_put_error(&l->out, id, HKV_ERESEND,
                           wire_cstr("TRYAGAIN this owner follows the key's leaf and its map "
                                     "does not make it the primary yet (not applied)"));
            return 0;
        }
        o->st.owner_unknown_outcomes++;
        wire_put_error(&l->out, id, HKV_EIO,
                       wire_cstr(rid.prev == WIRE_PREV_UNKNOWN
                                     ? "UNAVAILABLE outcome unknown: an earlier attempt of the "
                                       "write went to an owner process that never answered, "
                                       "and it may have been applied"
                                     : "UNAVAILABLE outcome unknown: the owner restarted while "
                                       "the write was in flight, and its first attempt may "
                                       "have been applied"));
        return 0;
    }
    if (rifl_unknown(o->rifl, l->edge_id, l->edge_inc, rid.seq)) { /* R1, R2 */
        o->st.owner_unknown_outcomes++;
        wire_put_error(&l->out, id, HKV_EIO,
                       wire_cstr("UNAVAILABLE outcome unknown: the owner no longer holds the "
                                 "write's completion record, and it may have been applied"));
        return 0;
    }
    if (heir == OWNER_HEIR_YES)
        ofollow_inherited(o);
    return 1;
}

void owner_finish(struct owner *o, struct olink *l, uint64_t id, struct wire_rid rid,
                  struct rifl_result *r, const struct wire_slice *dkeys, size_t ndkeys,
                  hkv_stamp dversion)
{
    if (ndkeys > 0) {
        r->ticket = owner_ticket_new(o, dkeys, ndkeys, dversion);
        if (r->ticket == 0) {
            rifl_lost(o->rifl, l->edge_id, l->edge_inc, rid.seq); /* applied, unrecorded */
            wire_put_error(&l->out, id, HKV_ENOMEM,
                           wire_cstr("OOM owner out of memory (outcome unknown)"));
            return;
        }
    }
    /* Not recorded (ENOMEM): rifl_put raised the lost mark, a retry is
     * answered "outcome unknown". */
    rifl_put(o->rifl, l->edge_id, l->edge_inc, rid.seq, r);
    owner_repl_record(o, l->edge_id, l->edge_inc, rid.seq, r); /* R4: it travels with the result */
    owner_answer(o, l, id, r);
}

void owner_finish_flush(struct owner *o, struct olink *l, uint64_t id, struct wire_rid rid,
                        struct rifl_result *r, hkv_stamp floor)
{
    if (o->move != NULL)
        owner_move_flushed(o); /* the leaves moving out or in lost their rows here */
    r->ticket = owner_ticket_flush(o, floor);
    if (r->ticket == 0) {
        rifl_lost(o->rifl, l->edge_id, l->edge_inc, rid.seq);
        wire_put_error(&l->out, id, HKV_ENOMEM,
                       wire_cstr("OOM owner out of memory (outcome unknown)"));
        return;
    }
    rifl_put(o->rifl, l->edge_id, l->edge_inc, rid.seq, r);
    owner_answer(o, l, id, r);
}

int owner_backlog_refused(struct owner *o, struct olink *l, uint64_t id)
{
    if (!owner_backlog_full(o))
        return 0;
    o->st.owner_busy_rejects++;
    wire_put_error(&l->out, id, HKV_EFULL,
                   wire_cstr("BUSY persist backlog over persist-max-dirty, write refused"));
    return 1;
}

int owner_push_applied(struct owner *o, struct wire_slice key, hkv_stamp version)
{
    int durable = owner_is_durable(o, key);
    owner_push_written(o, key, router_place(key.p, key.len), version, durable);
    return durable;
}

void owner_push_written(struct owner *o, struct wire_slice key, uint64_t place, hkv_stamp version,
                        int durable)
{
    owner_applied(o, key);
    if (!durable && !owner_repl_defer_push(o, key.p, key.len, place, version))
        owner_push_at(o, key.p, key.len, place, version);
}

void owner_applied(struct owner *o, struct wire_slice key)
{
    owner_work_write(o, key);
    if (o->move != NULL)
        owner_move_applied(o, key.p, key.len); /* a leaf being copied: its result travels */
    owner_repl_applied(o, key.p, key.len);    /* ... and to the leaf's followers */
}

int owner_durable_pending(struct owner *o, struct wire_slice key)
{
    /* Every write tags its key (owner_key_tag) and a move brings tags in
     * (owner_recv.c); keys loaded from the database are committed.  Until
     * one durable tag was given no lookup is needed: it was a ledger lookup
     * per request (4.9% of the owner's cycles on SET -P16). */
    if (!o->durable_tagged)
        return 0;
    struct ledger_view v;
    int rc = ledger_get(o->ledger, key.p, key.len, owner_clock(), &v);
    return rc != HKV_EAGAIN && v.class_id == OWNER_TAG_DURABLE && v.dirty;
}
