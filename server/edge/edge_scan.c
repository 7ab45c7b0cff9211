/*
 * edge_scan.c - commands over the whole keyspace (SCAN, DBSIZE) and the 1 s
 * keyspace size (DBSIZE) asked of every owner.
 *
 * SCAN's cursor walks the owners in turn: the top SCAN_OWNER_BITS bits are
 * the owner's number (hot owners first, then cold), the rest is that owner's
 * own cursor.  Cursor 0 starts at owner 0; an owner that reports 0 hands over
 * to the next; the last one ends the scan with 0.  As in Redis, a key present
 * for the whole scan is returned at least once, COUNT is a hint, and a page
 * may be empty.
 */
#include "server/edge/edge_scan.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/topo.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_op.h"
#include "server/edge/edge_owners.h"

#define SCAN_OWNER_BITS 10
#define SCAN_OWNER_SHIFT (64 - SCAN_OWNER_BITS)
#define SCAN_LOCAL_MASK ((1ULL << SCAN_OWNER_SHIFT) - 1)

/* A keyspace op's arguments and results (in the op's args block). */
struct scan_args {
    uint64_t owner;               /* SCAN: the owner number the cursor is at */
    uint64_t cursor;              /* SCAN: that owner's own cursor */
    uint32_t count;
    int has_match;                /* SCAN MATCH: the pattern is op->value */
    int64_t keys;                 /* DBSIZE: the sum so far */
};
_Static_assert(sizeof(struct scan_args) <= OP_ARGS_MAX, "scan_args too large for an op");
#define S(op) OP_ARGS(op, struct scan_args)

static int scan_encode(struct hkv_buf *b, uint64_t id, const struct oreq *r,
                       const struct wire_slice *keys, struct wire_rid rid)
{
    struct op *op = r->op;
    if (r->type == WIRE_STATS)
        return wire_put_stats(b, id);
    return wire_put_scan(b, id, S(op)->cursor, S(op)->count, S(op)->has_match ? &op->value : NULL);
}

/* Redis's parseScanCursorOrReply: strtoul() over the argument as a C
 * string, refused only for a leading blank, a non-digit before the end or
 * ERANGE.  So "" is 0, "-1" is 2^64-1 (past every owner: an empty last
 * page), "+5" is 5, and what follows a NUL is not read. */
static int parse_cursor(const struct resp_slice *s, uint64_t *out)
{
    char small[64];
    size_t n = strnlen(s->p, s->len);
    char *buf = n < sizeof(small) ? small : malloc(n + 1);
    if (buf == NULL)
        return -1;
    memcpy(buf, s->p, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    int ok = !isspace((unsigned char)buf[0]) && *end == '\0' && errno != ERANGE;
    if (buf != small)
        free(buf);
    if (!ok)
        return -1;
    *out = v;
    return 0;
}

static void scan_reply(struct hkv_buf *out, uint64_t cursor, const struct wire_slice *keys,
                       uint32_t n)
{
    char num[32];
    int len = snprintf(num, sizeof(num), "%llu", (unsigned long long)cursor);
    resp_add_array(out, 2);
    resp_add_bulk(out, num, (size_t)len);
    resp_add_array(out, n);
    for (uint32_t i = 0; i < n; i++)
        resp_add_bulk(out, keys[i].p, keys[i].len);
}

static void scan_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (m->type != WIRE_SCAN_REPLY) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    uint64_t g = S(op)->owner;
    uint64_t next = m->u.scan_reply.cursor;
    if (next > SCAN_LOCAL_MASK) {
        op_error(op, "ERR owner %s/%d returned a cursor too large to combine",
                 topo_pool_name(r->owner->pool), r->owner->index);
        return;
    }
    uint64_t cur;
    if (next != 0)
        cur = g << SCAN_OWNER_SHIFT | next;
    else {
        int n = edge_owner_next(op->e, (int)g); /* the next owner, from its start */
        cur = n >= 0 ? (uint64_t)n << SCAN_OWNER_SHIFT : 0;
    }
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        scan_reply(out, cur, m->u.scan_reply.keys, m->u.scan_reply.nkeys);
}

static void finish(struct op *op)
{
    op_finish(op);
}

static const struct op_family scan_ops = {0, scan_encode, scan_answer, finish, NULL, NULL};

void edge_cmd_scan(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    uint64_t cursor;
    if (parse_cursor(&argv[1], &cursor) != 0) {
        reply_error(c, "ERR invalid cursor");
        return;
    }
    long long count = 10;
    const struct resp_slice *match = NULL;
    int other_type = 0;
    for (int j = 2; j < argc; j++) {
        int has_next = j + 1 < argc;
        if (slice_is(&argv[j], "count") && has_next) {
            const struct resp_slice *v = &argv[++j];
            char tmp[32];
            char *end;
            if (v->len == 0 || v->len >= sizeof(tmp)) {
                reply_error(c, "ERR value is not an integer or out of range");
                return;
            }
            memcpy(tmp, v->p, v->len);
            tmp[v->len] = '\0';
            count = strtoll(tmp, &end, 10);
            if (*end != '\0') {
                reply_error(c, "ERR value is not an integer or out of range");
                return;
            }
            if (count < 1) {
                reply_error(c, "ERR syntax error");
                return;
            }
        } else if (slice_is(&argv[j], "match") && has_next) {
            match = &argv[++j];
        } else if (slice_is(&argv[j], "type") && has_next) {
            other_type = !slice_is(&argv[++j], "string"); /* every key is a string */
        } else {
            reply_error(c, "ERR syntax error");
            return;
        }
    }
    uint64_t g = cursor >> SCAN_OWNER_SHIFT;
    if (g < (uint64_t)e->nowners && edge_owner_at(e, (int)g) == NULL) {
        /* (a cluster) an owner that serves no leaf now: the next one, from its start */
        int n = edge_owner_next(e, (int)g);
        g = n >= 0 ? (uint64_t)n : (uint64_t)e->nowners;
        cursor = 0;
    }
    if (other_type || g >= (uint64_t)e->nowners) {
        scan_reply(&c->out, 0, NULL, 0);
        return;
    }
    struct op *op = op_new(c, &scan_ops, "scan");
    if (op == NULL)
        return;
    S(op)->owner = g;
    S(op)->cursor = cursor & SCAN_LOCAL_MASK;
    S(op)->count = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
    S(op)->has_match = match != NULL;
    if ((match != NULL && op_copy_keys(op, 0, NULL, 1, match) != 0) ||
        op_to_owner(op, edge_owner_at(e, (int)g), WIRE_SCAN, WIRE_ROLE_READ) != 0) {
        op_finish_error(op);
        return;
    }
    op_start(op);
}

/* ---- STATS: DBSIZE and the poll ------------------------------------------------ */

static void dbsize_answer(struct op *op, struct oreq *r, const struct wire_msg *m)
{
    if (m->type != WIRE_STATS_REPLY) {
        op_error(op, "ERR unexpected answer from owner %s/%d", topo_pool_name(r->owner->pool),
                 r->owner->index);
        return;
    }
    int64_t v[CTR_OWNER_COUNT] = {0};
    owner_take_stats(m, v);
    S(op)->keys += v[CTR_OWNER_owner_keys];
    memcpy(r->owner->stats, v, sizeof(v));
    r->owner->stats_at_ms = clock_mono_ms();
}

static void dbsize_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        resp_add_int(out, S(op)->keys);
    op_finish(op);
}

static const struct op_family dbsize_ops = {0, scan_encode, dbsize_answer, dbsize_done, NULL, NULL};

void edge_cmd_dbsize(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    if (edge_owner_next(e, -1) < 0) {
        resp_add_int(&c->out, 0);
        return;
    }
    struct op *op = op_new(c, &dbsize_ops, "dbsize");
    if (op == NULL)
        return;
    for (int g = edge_owner_next(e, -1); g >= 0; g = edge_owner_next(e, g)) {
        if (op_to_owner(op, &e->owners[g], WIRE_STATS, WIRE_ROLE_READ) != 0) {
            op_finish_error(op);
            return;
        }
    }
    op_start(op);
}
