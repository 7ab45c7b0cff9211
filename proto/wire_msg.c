/*
 * wire_msg.c - the binary protocol's names and message equality (wire.h):
 * what logs, errors and the round-trip tests need, kept apart from the
 * encoders (wire.c) and the decoder (wire_decode.c), which never need them.
 */
#include "proto/wire.h"

#include <string.h>

#include "proto/wire_int.h"

/* ---- names and helpers ---- */

const char *wire_type_name(unsigned type)
{
    switch (type) {
    case WIRE_HELLO: return "HELLO";
    case WIRE_GETDEL: return "GETDEL";
    case WIRE_CALL: return "CALL";
    case WIRE_EXEC: return "EXEC";
    case WIRE_GET: return "GET";
    case WIRE_SET: return "SET";
    case WIRE_DEL: return "DEL";
    case WIRE_INCRBY: return "INCRBY";
    case WIRE_EXPIRE: return "EXPIRE";
    case WIRE_PERSIST: return "PERSIST";
    case WIRE_TTL: return "TTL";
    case WIRE_SCAN: return "SCAN";
    case WIRE_SCAN_RANGE: return "SCAN_RANGE";
    case WIRE_PING: return "PING";
    case WIRE_STATS: return "STATS";
    case WIRE_HELLO_OK: return "HELLO_OK";
    case WIRE_VALUE: return "VALUE";
    case WIRE_VALUES: return "VALUES";
    case WIRE_NOTFOUND: return "NOTFOUND";
    case WIRE_OK: return "OK";
    case WIRE_INT: return "INT";
    case WIRE_MOVED: return "MOVED";
    case WIRE_ERROR: return "ERROR";
    case WIRE_SCAN_REPLY: return "SCAN_REPLY";
    case WIRE_STATS_REPLY: return "STATS_REPLY";
    case WIRE_PONG: return "PONG";
    case WIRE_RESP: return "RESP";
    case WIRE_PUSH: return "PUSH";
    case WIRE_INVALIDATE: return "INVALIDATE";
    case WIRE_PUBLISH: return "PUBLISH";
    case WIRE_PUBMSG: return "PUBMSG";
    }
    return NULL;
}

struct wire_slice wire_cstr(const char *s)
{
    return s ? wire_slice(s, strlen(s)) : wire_slice(NULL, 0);
}

static bool exp_eq(struct wire_expiry a, struct wire_expiry b)
{
    return a.kind == b.kind && a.ms == b.ms;
}

bool wire_msg_equal(const struct wire_msg *a, const struct wire_msg *b)
{
    if (a->type != b->type || a->id != b->id)
        return false;
    switch (a->type) {
    case WIRE_HELLO: {
        const typeof(a->u.hello) *x = &a->u.hello, *y = &b->u.hello;
        return x->version == y->version && x->edge_id == y->edge_id && seq(x->colo, y->colo) &&
               x->role == y->role && x->incarnation == y->incarnation &&
               seq(x->cluster, y->cluster) && x->want_owner == y->want_owner &&
               seq(x->host, y->host);
    }
    case WIRE_GET:
        return keys_eq(a->u.get.keys, a->u.get.nkeys, b->u.get.keys, b->u.get.nkeys);
    case WIRE_SET: {
        const typeof(a->u.set) *x = &a->u.set, *y = &b->u.set;
        return seq(x->key, y->key) && seq(x->value, y->value) && rid_eq(x->rid, y->rid) &&
               exp_eq(x->exp, y->exp) && x->flags == y->flags;
    }
    case WIRE_DEL:
        return keys_eq(a->u.del.keys, a->u.del.nkeys, b->u.del.keys, b->u.del.nkeys) &&
               rid_eq(a->u.del.rid, b->u.del.rid);
    case WIRE_INCRBY:
        return seq(a->u.incrby.key, b->u.incrby.key) && a->u.incrby.delta == b->u.incrby.delta &&
               rid_eq(a->u.incrby.rid, b->u.incrby.rid);
    case WIRE_EXPIRE: {
        const typeof(a->u.expire) *x = &a->u.expire, *y = &b->u.expire;
        return seq(x->key, y->key) && exp_eq(x->exp, y->exp) && rid_eq(x->rid, y->rid) &&
               x->flags == y->flags;
    }
    case WIRE_PERSIST:
        return seq(a->u.persist.key, b->u.persist.key) && rid_eq(a->u.persist.rid, b->u.persist.rid);
    case WIRE_GETDEL:
        return seq(a->u.getdel.key, b->u.getdel.key) && rid_eq(a->u.getdel.rid, b->u.getdel.rid);
    case WIRE_TTL:
        return seq(a->u.ttl.key, b->u.ttl.key);
    case WIRE_SCAN: {
        const typeof(a->u.scan) *x = &a->u.scan, *y = &b->u.scan;
        return x->cursor == y->cursor && x->count == y->count && x->has_match == y->has_match &&
               (!x->has_match || seq(x->match, y->match));
    }
    case WIRE_SCAN_RANGE: {
        const typeof(a->u.scan_range) *x = &a->u.scan_range, *y = &b->u.scan_range;
        return x->from == y->from && x->to == y->to && x->count == y->count &&
               x->has_match == y->has_match && (!x->has_match || seq(x->match, y->match));
    }
    case WIRE_NOTFOUND:
        return a->u.notfound.stamp == b->u.notfound.stamp;
    case WIRE_PING:
    case WIRE_STATS:
    case WIRE_PONG:
        return true;
    case WIRE_HELLO_OK: {
        const typeof(a->u.hello_ok) *x = &a->u.hello_ok, *y = &b->u.hello_ok;
        return x->version == y->version && x->owner_id == y->owner_id && seq(x->pool, y->pool) &&
               x->map_gen == y->map_gen && x->incarnation == y->incarnation;
    }
    case WIRE_VALUE:
        return seq(a->u.value.value, b->u.value.value) && a->u.value.stamp == b->u.value.stamp &&
               a->u.value.expire_ms == b->u.value.expire_ms;
    case WIRE_VALUES:
        if (a->u.values.nitems != b->u.values.nitems)
            return false;
        for (uint32_t i = 0; i < a->u.values.nitems; i++) {
            const struct wire_item *x = &a->u.values.items[i], *y = &b->u.values.items[i];
            if (x->found != y->found)
                return false;
            if (x->found && (!seq(x->value, y->value) || x->stamp != y->stamp ||
                             x->expire_ms != y->expire_ms))
                return false;
        }
        return true;
    case WIRE_OK: {
        const typeof(a->u.ok) *x = &a->u.ok, *y = &b->u.ok;
        return x->stamp == y->stamp && x->applied == y->applied && x->has_old == y->has_old &&
               (!x->has_old || seq(x->old, y->old));
    }
    case WIRE_INT:
        return a->u.integer.value == b->u.integer.value &&
               a->u.integer.stamp == b->u.integer.stamp;
    case WIRE_MOVED:
        return a->u.moved.leaf == b->u.moved.leaf &&
               a->u.moved.leaf_bits == b->u.moved.leaf_bits &&
               a->u.moved.map_gen == b->u.moved.map_gen && a->u.moved.owner == b->u.moved.owner;
    case WIRE_ERROR:
        return a->u.error.code == b->u.error.code && seq(a->u.error.text, b->u.error.text);
    case WIRE_SCAN_REPLY:
        return a->u.scan_reply.cursor == b->u.scan_reply.cursor &&
               keys_eq(a->u.scan_reply.keys, a->u.scan_reply.nkeys, b->u.scan_reply.keys,
                       b->u.scan_reply.nkeys);
    case WIRE_STATS_REPLY:
        if (a->u.stats_reply.nstats != b->u.stats_reply.nstats)
            return false;
        for (uint32_t i = 0; i < a->u.stats_reply.nstats; i++) {
            const struct wire_stat *x = &a->u.stats_reply.stats[i], *y = &b->u.stats_reply.stats[i];
            if (!seq(x->name, y->name) || x->value != y->value)
                return false;
        }
        return true;
    case WIRE_PUSH: {
        const typeof(a->u.push) *x = &a->u.push, *y = &b->u.push;
        return seq(x->key, y->key) && seq(x->value, y->value) && x->stamp == y->stamp &&
               x->expire_ms == y->expire_ms;
    }
    case WIRE_INVALIDATE:
        return seq(a->u.invalidate.key, b->u.invalidate.key) &&
               a->u.invalidate.stamp == b->u.invalidate.stamp;
    case WIRE_PUBLISH:
    case WIRE_PUBMSG:
        return seq(a->u.pub.channel, b->u.pub.channel) && seq(a->u.pub.msg, b->u.pub.msg);
    case WIRE_CALL:
    case WIRE_EXEC:
    case WIRE_RESP:
        return wire_call_equal(a, b);
    }
    return false;
}
