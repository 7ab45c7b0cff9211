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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/edge/edge_scan.h"

#include "server/edge/edge_arg.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_owners.h"
#include "server/core/clock.h"
#include "server/core/topo.h"

#define SCAN_OWNER_BITS 10
#define SCAN_OWNER_SHIFT (64 - SCAN_OWNER_BITS)
#define SCAN_LOCAL_MASK ((1ULL << SCAN_OWNER_SHIFT) - 1)

/* Redis's parseScanCursorOrReply: decimal digits only. */
static int parse_cursor(const struct resp_slice *s, uint64_t *out)
{
    if (s->len == 0 || s->len > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < s->len; i++) {
        if (s->p[i] < '0' || s->p[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s->p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
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
    uint64_t g = (uint64_t)op->ival;
    uint64_t next = m->u.scan_reply.cursor;
    if (next > SCAN_LOCAL_MASK) {
        op_error(op, "ERR owner %s/%d returned a cursor too large to combine",
                 topo_pool_name(r->owner->pool), r->owner->index);
        return;
    }
    uint64_t cur;
    if (next != 0)
        cur = g << SCAN_OWNER_SHIFT | next;
    else
        cur = g + 1 < (uint64_t)op->e->nowners ? (g + 1) << SCAN_OWNER_SHIFT : 0;
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        scan_reply(out, cur, m->u.scan_reply.keys, m->u.scan_reply.nkeys);
}

static void finish(struct op *op)
{
    op_finish(op);
}

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
    if (other_type || g >= (uint64_t)e->nowners) {
        scan_reply(&c->out, 0, NULL, 0);
        return;
    }
    struct op *op = op_new(c, CMD_SCAN, 0);
    if (op == NULL)
        return;
    op->answer = scan_answer;
    op->done = finish;
    op->ival = (int64_t)g;
    op->cursor = cursor & SCAN_LOCAL_MASK;
    op->count = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
    if (match != NULL) {
        if (op_copy_keys(op, 0, NULL, 1, match) != 0) {
            op_finish_error(op);
            return;
        }
        op->has_match = 1;
        op->match = op->value;
    }
    op_to_owner(op, &op->one, edge_owner_at(e, (int)g), WIRE_SCAN, WIRE_ROLE_READ);
    op->nreqs = 1;
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
    int64_t v[OSTAT_COUNT] = {0};
    owner_take_stats(m, v);
    op->acc += v[OSTAT_owner_keys];
    memcpy(r->owner->stats, v, sizeof(v));
    r->owner->stats_at_ms = clock_mono_ms();
}

static void dbsize_done(struct op *op)
{
    struct hkv_buf *out = op_out(op);
    if (out != NULL)
        resp_add_int(out, op->acc);
    op_finish(op);
}

void edge_cmd_dbsize(struct conn *c, int argc, const struct resp_slice *argv)
{
    struct edge *e = c->e;
    if (e->nowners == 0) {
        resp_add_int(&c->out, 0);
        return;
    }
    struct op *op = op_new(c, CMD_DBSIZE, 0);
    if (op == NULL)
        return;
    op->answer = dbsize_answer;
    op->done = dbsize_done;
    if (op_reserve(op, (uint32_t)e->nowners) != 0) {
        op_finish_error(op);
        return;
    }
    for (int g = 0; g < e->nowners; g++)
        op_to_owner(op, &op->reqs[g], &e->owners[g], WIRE_STATS, WIRE_ROLE_READ);
    op->nreqs = (uint32_t)e->nowners;
    if (op->nreqs == 1)
        op->one = op->reqs[0];
    op_start(op);
}
