/*
 * wire_hand.c - the move's messages (wire_hand.h): encoder, hostile-input
 * decoder and equality, on the wire module's own msgpack writer and cursor
 * (wire_int.h), so the two protocols share one reader that was fuzzed once.
 *
 * Each kind is one schema written once per direction below.  Nesting stays
 * within WIRE_MAX_DEPTH: a ROW frame holds an array of rows (depth 2, each
 * row an array: 3), which is why completion records travel one per frame
 * (a record's change list is already at depth 2).
 */
#include "proto/wire_hand.h"

#include <stdlib.h>
#include <string.h>

#include "proto/wire_int.h"

static const char *const NAMES[] = {
    [HANDOFF_BEGIN - 128] = "HANDOFF_BEGIN",         [HANDOFF_READY - 128] = "HANDOFF_READY",
    [HANDOFF_ROW - 128] = "HANDOFF_ROW",             [HANDOFF_WRITE - 128] = "HANDOFF_WRITE",
    [HANDOFF_RECORD - 128] = "HANDOFF_RECORD",       [HANDOFF_FENCE - 128] = "HANDOFF_FENCE",
    [HANDOFF_FENCE_ACK - 128] = "HANDOFF_FENCE_ACK", [HANDOFF_FENCE_NACK - 128] = "HANDOFF_FENCE_NACK",
    [HANDOFF_COMMITTED - 128] = "HANDOFF_COMMITTED", [HANDOFF_ABORT - 128] = "HANDOFF_ABORT",
    [HANDOFF_PROGRESS - 128] = "HANDOFF_PROGRESS",   [HANDOFF_HELD - 128] = "HANDOFF_HELD",
    [HANDOFF_EPOCH - 128] = "HANDOFF_EPOCH",
    [LEAF_HELLO - 128] = "LEAF_HELLO",               [LEAF_INTENT - 128] = "LEAF_INTENT",
    [LEAF_COMMIT - 128] = "LEAF_COMMIT",             [LEAF_ABORT - 128] = "LEAF_ABORT",
    [LEAF_READ - 128] = "LEAF_READ",                 [LEAF_SPLIT - 128] = "LEAF_SPLIT",
    [LEAF_REPLY - 128] = "LEAF_REPLY",               [LEAF_ORDER - 128] = "LEAF_ORDER",
    [LEAF_DONE - 128] = "LEAF_DONE",                 [LEAF_LOAD - 128] = "LEAF_LOAD",
    [LEAF_ISR_ADD - 128] = "LEAF_ISR_ADD",           [LEAF_ISR_DEL - 128] = "LEAF_ISR_DEL",
    [LEAF_HANDOVER - 128] = "LEAF_HANDOVER",
};

const char *hand_type_name(unsigned type)
{
    if (!hand_is_kind(type))
        return NULL;
    return NAMES[type - 128];
}

unsigned hand_peek_type(const char *payload, size_t plen)
{
    struct cur c = {(const uint8_t *)payload, (const uint8_t *)payload + plen, 0, NULL};
    size_t n;
    uint64_t t;
    if (rd_array(&c, &n) != HKV_OK || n < 2 || rd_uint(&c, UINT8_MAX, &t) != HKV_OK)
        return 0;
    return (unsigned)t;
}

/* ---- writing ---- */

static void w_leaf(struct wr *w, struct hand_leaf l)
{
    if (!hand_leaf_valid(l) && w->st == HKV_OK)
        w->st = HKV_EINVAL;
    w_uint(w, l.pool);
    w_uint(w, l.start);
    w_uint(w, l.bits);
}

static void w_opt(struct wr *w, bool has, struct wire_slice s)
{
    if (has)
        w_bin(w, s);
    else
        w_nil(w);
}

static void w_row(struct wr *w, const struct hand_row *r)
{
    w_array(w, 5);
    w_bin(w, r->key);
    w_opt(w, !r->tomb, r->value);
    w_uint(w, r->stamp);
    w_int(w, r->expire_ms);
    w_uint(w, r->class_id);
}

static size_t rows_size(const struct hand_row *r, uint32_t n)
{
    size_t s = 0;
    for (uint32_t i = 0; r != NULL && i < n; i++)
        s += r[i].key.len + r[i].value.len + 32;
    return s;
}

int hand_put(struct hkv_buf *b, const struct hand_msg *m)
{
    struct wr w;
    const uint64_t id = m->id;
    switch (m->type) {
    case HANDOFF_BEGIN:
        wr_begin(&w, b, HINT(m->u.begin.cluster.len + m->u.begin.host.len), m->type, id, 10);
        w_str(&w, m->u.begin.cluster);
        w_str(&w, m->u.begin.host);
        w_leaf(&w, m->u.begin.leaf);
        w_int(&w, m->u.begin.e1);
        w_uint(&w, m->u.begin.from);
        w_uint(&w, m->u.begin.to);
        w_uint(&w, m->u.begin.incarnation);
        w_bool(&w, m->u.begin.follow);
        break;
    case HANDOFF_READY:
        wr_begin(&w, b, HINT(0), m->type, id, 1);
        w_int(&w, m->u.ready.e1);
        break;
    case HANDOFF_ROW:
        wr_begin(&w, b, HINT(rows_size(m->u.row.rows, m->u.row.nrows)), m->type, id, 2);
        w_uint(&w, m->u.row.seq);
        if (m->u.row.rows == NULL && m->u.row.nrows > 0)
            w.st = HKV_EINVAL;
        w_array(&w, m->u.row.nrows);
        for (uint32_t i = 0; i < m->u.row.nrows && w.st == HKV_OK; i++)
            w_row(&w, &m->u.row.rows[i]);
        break;
    case HANDOFF_WRITE:
        wr_begin(&w, b, HINT(rows_size(&m->u.write.r, 1)), m->type, id, 2);
        w_uint(&w, m->u.write.seq);
        w_row(&w, &m->u.write.r);
        break;
    case HANDOFF_RECORD: {
        size_t hint = m->u.record.old.len + m->u.record.resp.len;
        for (uint32_t i = 0; i < m->u.record.nchanges && m->u.record.changes != NULL; i++)
            hint += m->u.record.changes[i].key.len + 10;
        wr_begin(&w, b, HINT(hint), m->type, id, 11);
        w_uint(&w, m->u.record.seq);
        w_uint(&w, m->u.record.writer);
        w_uint(&w, m->u.record.inc);
        w_uint(&w, m->u.record.rseq);
        w_uint(&w, m->u.record.rtype);
        w_bool(&w, m->u.record.applied);
        w_int(&w, m->u.record.value);
        w_uint(&w, m->u.record.version);
        w_opt(&w, m->u.record.has_old, m->u.record.old);
        w_opt(&w, m->u.record.has_resp, m->u.record.resp);
        if ((m->u.record.changes == NULL && m->u.record.nchanges > 0) ||
            m->u.record.nchanges > WIRE_MAX_ITEMS_DEFAULT / 2)
            w.st = HKV_EINVAL;
        w_array(&w, 2 * m->u.record.nchanges);
        for (uint32_t i = 0; i < m->u.record.nchanges && w.st == HKV_OK; i++) {
            w_bin(&w, m->u.record.changes[i].key);
            w_uint(&w, m->u.record.changes[i].version);
        }
        break;
    }
    case HANDOFF_FENCE:
    case HANDOFF_FENCE_ACK:
    case HANDOFF_PROGRESS:
    case HANDOFF_HELD:
        wr_begin(&w, b, HINT(0), m->type, id, 2);
        w_int(&w, m->u.fence.e1);
        w_uint(&w, m->u.fence.last);
        break;
    case HANDOFF_FENCE_NACK:
    case HANDOFF_ABORT:
        wr_begin(&w, b, HINT(m->u.why.text.len), m->type, id, 2);
        w_int(&w, m->u.why.e1);
        w_str(&w, m->u.why.text);
        break;
    case HANDOFF_COMMITTED:
    case HANDOFF_EPOCH:
        wr_begin(&w, b, HINT(0), m->type, id, 2);
        w_int(&w, m->u.committed.e1);
        w_int(&w, m->u.committed.e2);
        break;
    case LEAF_HELLO:
        wr_begin(&w, b, HINT(0), m->type, id, 2);
        w_uint(&w, m->u.hello.pool);
        w_uint(&w, m->u.hello.index);
        break;
    case LEAF_INTENT:
    case LEAF_COMMIT:
    case LEAF_ABORT:
    case LEAF_READ:
    case LEAF_SPLIT:
    case LEAF_ISR_ADD:
    case LEAF_ISR_DEL:
    case LEAF_HANDOVER:
        wr_begin(&w, b, HINT(0), m->type, id, 5);
        w_leaf(&w, m->u.leaf.leaf);
        w_int(&w, m->u.leaf.epoch);
        w_uint(&w, m->u.leaf.to);
        break;
    case LEAF_REPLY:
        wr_begin(&w, b, HINT(m->u.reply.text.len), m->type, id, 8);
        w_int(&w, m->u.reply.status);
        w_int(&w, m->u.reply.epoch);
        w_bool(&w, m->u.reply.exists);
        w_uint(&w, m->u.reply.owner);
        w_uint(&w, m->u.reply.state);
        w_uint(&w, m->u.reply.to);
        w_int(&w, m->u.reply.at);
        w_str(&w, m->u.reply.text);
        break;
    case LEAF_ORDER:
        wr_begin(&w, b, HINT(0), m->type, id, 5);
        w_uint(&w, m->u.order.kind);
        w_leaf(&w, m->u.order.leaf);
        w_uint(&w, m->u.order.to);
        break;
    case LEAF_DONE:
        wr_begin(&w, b, HINT(m->u.done.text.len), m->type, id, 3);
        w_uint(&w, m->u.done.order);
        w_int(&w, m->u.done.status);
        w_str(&w, m->u.done.text);
        break;
    case LEAF_LOAD: {
        const __typeof__(m->u.load) *L = &m->u.load;
        size_t hint = 0;
        for (uint32_t i = 0; L->leaves != NULL && i < L->nleaves; i++)
            hint += L->leaves[i].key.len + 80;
        wr_begin(&w, b, HINT(hint), m->type, id, 6);
        w_uint(&w, L->window_ms);
        w_uint(&w, L->busy);
        w_uint(&w, L->backlog);
        w_uint(&w, L->backlog_prev);
        w_uint(&w, L->work);
        if ((L->leaves == NULL && L->nleaves > 0) || L->nleaves > HAND_LOAD_MAX)
            w.st = HKV_EINVAL;
        w_array(&w, L->nleaves);
        for (uint32_t i = 0; i < L->nleaves && w.st == HKV_OK; i++) {
            const struct hand_load *x = &L->leaves[i];
            if (x->has_key && x->key.len > HAND_KEY_MAX)
                w.st = HKV_EINVAL;
            w_array(&w, 12);
            w_leaf(&w, x->leaf);
            w_uint(&w, x->work);
            w_uint(&w, x->writes);
            w_uint(&w, x->pushes);
            w_uint(&w, x->misses);
            w_uint(&w, x->bytes);
            w_uint(&w, x->half[0]);
            w_uint(&w, x->half[1]);
            w_opt(&w, x->has_key, x->key);
            w_uint(&w, x->topwork);
        }
        break;
    }
    default:
        return HKV_EINVAL;
    }
    return wr_end(&w);
}

/* ---- reading ---- */

static int rd_leaf(struct cur *c, struct hand_leaf *l)
{
    TRY(rd_u8(c, &l->pool));
    TRY(rd_u32(c, &l->start));
    TRY(rd_u8(c, &l->bits));
    return hand_leaf_valid(*l) ? HKV_OK : fail(c, "leaf start does not fit its bits");
}

static int rd_i64(struct cur *c, int64_t *v) { return rd_int(c, INT64_MIN, INT64_MAX, v); }
static int rd_u64(struct cur *c, uint64_t *v) { return rd_uint(c, UINT64_MAX, v); }

static int rd_row(struct cur *c, struct hand_row *r)
{
    size_t n;
    bool has;
    uint64_t cls;
    TRY(rd_array(c, &n));
    if (n != 5)
        return fail(c, "a row has 5 fields");
    TRY(rd_bytes(c, &r->key));
    TRY(rd_bytes_or_nil(c, &r->value, &has));
    r->tomb = !has;
    TRY(rd_u64(c, &r->stamp));
    TRY(rd_i64(c, &r->expire_ms));
    TRY(rd_uint(c, UINT16_MAX, &cls));
    r->class_id = (uint16_t)cls;
    leave(c);
    return HKV_OK;
}

static int rd_rows(struct wire_decoder *d, struct cur *c, struct hand_msg *m)
{
    size_t n;
    void *mem;
    TRY(rd_array(c, &n));
    TRY(arena(d, c, n, sizeof(struct hand_row), &mem));
    struct hand_row *r = mem;
    for (size_t i = 0; i < n; i++)
        TRY(rd_row(c, &r[i]));
    leave(c);
    m->u.row.rows = r;
    m->u.row.nrows = (uint32_t)n;
    return HKV_OK;
}

static int rd_record(struct wire_decoder *d, struct cur *c, struct hand_msg *m)
{
    size_t n;
    void *mem;
    TRY(rd_u64(c, &m->u.record.seq));
    TRY(rd_u32(c, &m->u.record.writer));
    TRY(rd_u64(c, &m->u.record.inc));
    TRY(rd_u64(c, &m->u.record.rseq));
    TRY(rd_u8(c, &m->u.record.rtype));
    TRY(rd_bool(c, &m->u.record.applied));
    TRY(rd_i64(c, &m->u.record.value));
    TRY(rd_u64(c, &m->u.record.version));
    TRY(rd_bytes_or_nil(c, &m->u.record.old, &m->u.record.has_old));
    TRY(rd_bytes_or_nil(c, &m->u.record.resp, &m->u.record.has_resp));
    TRY(rd_array(c, &n));
    if (n % 2 != 0)
        return fail(c, "a change list holds key, version pairs");
    TRY(arena(d, c, n / 2, sizeof(struct wire_watch), &mem));
    struct wire_watch *ch = mem;
    for (size_t i = 0; i < n / 2; i++) {
        TRY(rd_bytes(c, &ch[i].key));
        TRY(rd_u64(c, &ch[i].version));
    }
    leave(c);
    m->u.record.changes = n > 0 ? ch : NULL;
    m->u.record.nchanges = (uint32_t)(n / 2);
    return HKV_OK;
}

static int rd_loads(struct wire_decoder *d, struct cur *c, struct hand_msg *m)
{
    size_t n, nf;
    void *mem;
    TRY(rd_array(c, &n));
    if (n > HAND_LOAD_MAX)
        return fail(c, "too many leaves in a load");
    TRY(arena(d, c, n, sizeof(struct hand_load), &mem));
    struct hand_load *L = mem;
    for (size_t i = 0; i < n; i++) {
        struct hand_load *x = &L[i];
        memset(x, 0, sizeof(*x));
        TRY(rd_array(c, &nf));
        if (nf != 12)
            return fail(c, "a leaf's load has 12 fields");
        TRY(rd_leaf(c, &x->leaf));
        TRY(rd_u64(c, &x->work));
        TRY(rd_u64(c, &x->writes));
        TRY(rd_u64(c, &x->pushes));
        TRY(rd_u64(c, &x->misses));
        TRY(rd_u64(c, &x->bytes));
        TRY(rd_u64(c, &x->half[0]));
        TRY(rd_u64(c, &x->half[1]));
        TRY(rd_bytes_or_nil(c, &x->key, &x->has_key));
        if (x->has_key && x->key.len > HAND_KEY_MAX)
            return fail(c, "a top key longer than HAND_KEY_MAX");
        TRY(rd_u64(c, &x->topwork));
        leave(c);
    }
    leave(c);
    m->u.load.leaves = n > 0 ? L : NULL;
    m->u.load.nleaves = (uint32_t)n;
    return HKV_OK;
}

/* The fields after type and id; `nf` is how many the array said. */
static int rd_fields(struct wire_decoder *d, struct cur *c, struct hand_msg *m, size_t nf)
{
    static const uint8_t want[] = {
        [HANDOFF_BEGIN - 128] = 10,    [HANDOFF_READY - 128] = 1,  [HANDOFF_ROW - 128] = 2,
        [HANDOFF_WRITE - 128] = 2,     [HANDOFF_RECORD - 128] = 11, [HANDOFF_FENCE - 128] = 2,
        [HANDOFF_FENCE_ACK - 128] = 2, [HANDOFF_FENCE_NACK - 128] = 2,
        [HANDOFF_COMMITTED - 128] = 2, [HANDOFF_ABORT - 128] = 2,  [HANDOFF_PROGRESS - 128] = 2,
        [HANDOFF_HELD - 128] = 2,      [HANDOFF_EPOCH - 128] = 2,
        [LEAF_HELLO - 128] = 2,
        [LEAF_INTENT - 128] = 5,       [LEAF_COMMIT - 128] = 5,    [LEAF_ABORT - 128] = 5,
        [LEAF_READ - 128] = 5,         [LEAF_SPLIT - 128] = 5,     [LEAF_REPLY - 128] = 8,
        [LEAF_ORDER - 128] = 5,        [LEAF_DONE - 128] = 3,      [LEAF_LOAD - 128] = 6,
        [LEAF_ISR_ADD - 128] = 5,      [LEAF_ISR_DEL - 128] = 5,   [LEAF_HANDOVER - 128] = 5,
    };
    if (!hand_is_kind(m->type) || NAMES[m->type - 128] == NULL)
        return fail(c, "unknown message kind");
    if (nf != want[m->type - 128])
        return fail(c, "wrong field count");
    switch (m->type) {
    case HANDOFF_BEGIN:
        TRY(rd_bytes(c, &m->u.begin.cluster));
        TRY(rd_bytes(c, &m->u.begin.host));
        TRY(rd_leaf(c, &m->u.begin.leaf));
        TRY(rd_i64(c, &m->u.begin.e1));
        TRY(rd_u32(c, &m->u.begin.from));
        TRY(rd_u32(c, &m->u.begin.to));
        TRY(rd_u64(c, &m->u.begin.incarnation));
        return rd_bool(c, &m->u.begin.follow);
    case HANDOFF_READY:
        return rd_i64(c, &m->u.ready.e1);
    case HANDOFF_ROW:
        TRY(rd_u64(c, &m->u.row.seq));
        return rd_rows(d, c, m);
    case HANDOFF_WRITE:
        TRY(rd_u64(c, &m->u.write.seq));
        return rd_row(c, &m->u.write.r);
    case HANDOFF_RECORD:
        return rd_record(d, c, m);
    case HANDOFF_FENCE:
    case HANDOFF_FENCE_ACK:
    case HANDOFF_PROGRESS:
    case HANDOFF_HELD:
        TRY(rd_i64(c, &m->u.fence.e1));
        return rd_u64(c, &m->u.fence.last);
    case HANDOFF_FENCE_NACK:
    case HANDOFF_ABORT:
        TRY(rd_i64(c, &m->u.why.e1));
        return rd_bytes(c, &m->u.why.text);
    case HANDOFF_COMMITTED:
    case HANDOFF_EPOCH:
        TRY(rd_i64(c, &m->u.committed.e1));
        return rd_i64(c, &m->u.committed.e2);
    case LEAF_HELLO:
        TRY(rd_u8(c, &m->u.hello.pool));
        return rd_u32(c, &m->u.hello.index);
    case LEAF_REPLY: {
        int64_t st;
        TRY(rd_int(c, INT32_MIN, INT32_MAX, &st));
        m->u.reply.status = (int32_t)st;
        TRY(rd_i64(c, &m->u.reply.epoch));
        TRY(rd_bool(c, &m->u.reply.exists));
        TRY(rd_u32(c, &m->u.reply.owner));
        TRY(rd_u8(c, &m->u.reply.state));
        TRY(rd_u32(c, &m->u.reply.to));
        TRY(rd_i64(c, &m->u.reply.at));
        return rd_bytes(c, &m->u.reply.text);
    }
    case LEAF_ORDER:
        TRY(rd_u8(c, &m->u.order.kind));
        TRY(rd_leaf(c, &m->u.order.leaf));
        return rd_u32(c, &m->u.order.to);
    case LEAF_DONE: {
        int64_t st;
        TRY(rd_u64(c, &m->u.done.order));
        TRY(rd_int(c, INT32_MIN, INT32_MAX, &st));
        m->u.done.status = (int32_t)st;
        return rd_bytes(c, &m->u.done.text);
    }
    case LEAF_LOAD:
        TRY(rd_u32(c, &m->u.load.window_ms));
        TRY(rd_u32(c, &m->u.load.busy));
        TRY(rd_u64(c, &m->u.load.backlog));
        TRY(rd_u64(c, &m->u.load.backlog_prev));
        TRY(rd_u64(c, &m->u.load.work));
        return rd_loads(d, c, m);
    default: /* INTENT COMMIT ABORT READ SPLIT ISR_ADD ISR_DEL HANDOVER */
        TRY(rd_leaf(c, &m->u.leaf.leaf));
        TRY(rd_i64(c, &m->u.leaf.epoch));
        return rd_u32(c, &m->u.leaf.to);
    }
}

int hand_decode(struct wire_decoder *d, const char *payload, size_t plen, struct hand_msg *out,
                const char **why)
{
    struct cur c = {(const uint8_t *)payload, (const uint8_t *)payload + plen, 0, NULL};
    size_t n;
    uint64_t t, id;
    memset(out, 0, sizeof(*out));
    int rc = rd_array(&c, &n);
    if (rc == HKV_OK && n < 2)
        rc = fail(&c, "a message is [type, id, ...]");
    if (rc == HKV_OK)
        rc = rd_uint(&c, UINT8_MAX, &t);
    if (rc == HKV_OK) {
        out->type = (uint8_t)t;
        rc = rd_uint(&c, UINT64_MAX, &id);
    }
    if (rc == HKV_OK) {
        out->id = id;
        rc = id == 0 ? fail(&c, "id 0") : rd_fields(d, &c, out, n - 2);
    }
    if (rc == HKV_OK && c.p != c.end)
        rc = fail(&c, "trailing bytes");
    if (why != NULL)
        *why = rc == HKV_OK ? NULL : c.why;
    return rc;
}

/* ---- equality ---- */

static bool leaf_eq(struct hand_leaf a, struct hand_leaf b)
{
    return a.pool == b.pool && a.bits == b.bits && a.start == b.start;
}

static bool row_eq(const struct hand_row *a, const struct hand_row *b)
{
    return seq(a->key, b->key) && a->tomb == b->tomb && (a->tomb || seq(a->value, b->value)) &&
           a->stamp == b->stamp && a->expire_ms == b->expire_ms && a->class_id == b->class_id;
}

static bool record_eq(const struct hand_msg *a, const struct hand_msg *b)
{
    const __typeof__(a->u.record) *x = &a->u.record, *y = &b->u.record;
    if (x->seq != y->seq || x->writer != y->writer || x->inc != y->inc || x->rseq != y->rseq ||
        x->rtype != y->rtype || x->applied != y->applied || x->value != y->value ||
        x->version != y->version || x->has_old != y->has_old || x->has_resp != y->has_resp ||
        (x->has_old && !seq(x->old, y->old)) || (x->has_resp && !seq(x->resp, y->resp)) ||
        x->nchanges != y->nchanges)
        return false;
    for (uint32_t i = 0; i < x->nchanges; i++)
        if (!seq(x->changes[i].key, y->changes[i].key) ||
            x->changes[i].version != y->changes[i].version)
            return false;
    return true;
}

static bool load_eq(const struct hand_msg *a, const struct hand_msg *b)
{
    const __typeof__(a->u.load) *x = &a->u.load, *y = &b->u.load;
    if (x->window_ms != y->window_ms || x->busy != y->busy || x->backlog != y->backlog ||
        x->backlog_prev != y->backlog_prev || x->work != y->work || x->nleaves != y->nleaves)
        return false;
    for (uint32_t i = 0; i < x->nleaves; i++) {
        const struct hand_load *p = &x->leaves[i], *q = &y->leaves[i];
        if (!leaf_eq(p->leaf, q->leaf) || p->work != q->work || p->writes != q->writes ||
            p->pushes != q->pushes || p->misses != q->misses || p->bytes != q->bytes ||
            p->half[0] != q->half[0] || p->half[1] != q->half[1] || p->has_key != q->has_key ||
            (p->has_key && !seq(p->key, q->key)) || p->topwork != q->topwork)
            return false;
    }
    return true;
}

bool hand_msg_equal(const struct hand_msg *a, const struct hand_msg *b)
{
    if (a->type != b->type || a->id != b->id)
        return false;
    switch (a->type) {
    case HANDOFF_BEGIN:
        return seq(a->u.begin.cluster, b->u.begin.cluster) && seq(a->u.begin.host, b->u.begin.host) &&
               leaf_eq(a->u.begin.leaf, b->u.begin.leaf) && a->u.begin.e1 == b->u.begin.e1 &&
               a->u.begin.from == b->u.begin.from && a->u.begin.to == b->u.begin.to &&
               a->u.begin.incarnation == b->u.begin.incarnation && a->u.begin.follow == b->u.begin.follow;
    case HANDOFF_READY:
        return a->u.ready.e1 == b->u.ready.e1;
    case HANDOFF_ROW:
        if (a->u.row.seq != b->u.row.seq || a->u.row.nrows != b->u.row.nrows)
            return false;
        for (uint32_t i = 0; i < a->u.row.nrows; i++)
            if (!row_eq(&a->u.row.rows[i], &b->u.row.rows[i]))
                return false;
        return true;
    case HANDOFF_WRITE:
        return a->u.write.seq == b->u.write.seq && row_eq(&a->u.write.r, &b->u.write.r);
    case HANDOFF_RECORD:
        return record_eq(a, b);
    case HANDOFF_FENCE:
    case HANDOFF_FENCE_ACK:
    case HANDOFF_PROGRESS:
    case HANDOFF_HELD:
        return a->u.fence.e1 == b->u.fence.e1 && a->u.fence.last == b->u.fence.last;
    case HANDOFF_FENCE_NACK:
    case HANDOFF_ABORT:
        return a->u.why.e1 == b->u.why.e1 && seq(a->u.why.text, b->u.why.text);
    case HANDOFF_COMMITTED:
    case HANDOFF_EPOCH:
        return a->u.committed.e1 == b->u.committed.e1 && a->u.committed.e2 == b->u.committed.e2;
    case LEAF_HELLO:
        return a->u.hello.pool == b->u.hello.pool && a->u.hello.index == b->u.hello.index;
    case LEAF_REPLY:
        return a->u.reply.status == b->u.reply.status && a->u.reply.epoch == b->u.reply.epoch &&
               a->u.reply.exists == b->u.reply.exists && a->u.reply.owner == b->u.reply.owner &&
               a->u.reply.state == b->u.reply.state && a->u.reply.to == b->u.reply.to &&
               a->u.reply.at == b->u.reply.at && seq(a->u.reply.text, b->u.reply.text);
    case LEAF_ORDER:
        return a->u.order.kind == b->u.order.kind && leaf_eq(a->u.order.leaf, b->u.order.leaf) &&
               a->u.order.to == b->u.order.to;
    case LEAF_DONE:
        return a->u.done.order == b->u.done.order && a->u.done.status == b->u.done.status &&
               seq(a->u.done.text, b->u.done.text);
    case LEAF_LOAD:
        return load_eq(a, b);
    default:
        return leaf_eq(a->u.leaf.leaf, b->u.leaf.leaf) && a->u.leaf.epoch == b->u.leaf.epoch &&
               a->u.leaf.to == b->u.leaf.to;
    }
}
