/*
 * owner_admin.c - the owner's requests that touch no key's value: SCAN (a
 * bounded page of resident live keys) and STATS (every counter, for the
 * edges' INFO).  Kept apart from owner_ops.c, which is the data path.
 */
#include <stdlib.h>
#include <string.h>

#include "server/owner/owner_int.h"

struct scan_acc {
    struct wire_slice *keys;
    char *arena;
    size_t n, cap, used, arena_cap;
};

static void scan_one(const char *key, size_t klen, void *arg)
{
    struct scan_acc *a = arg;
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

void owner_op_stats(struct owner *o, struct olink *l, const struct wire_msg *m)
{
    struct wire_stat st[48];
    uint32_t n = 0;
#define X(name) st[n++] = (struct wire_stat){wire_cstr(#name), (int64_t)o->st.name};
    OWNER_STATS(X)
#undef X
    struct ledger_stats ls;
    ledger_stats(o->ledger, &ls);
    st[n++] = (struct wire_stat){wire_cstr("owner_keys"), (int64_t)ls.keys};
    st[n++] = (struct wire_stat){wire_cstr("owner_tombstones"), (int64_t)ls.tombstones};
    st[n++] = (struct wire_stat){wire_cstr("owner_memory_bytes"), (int64_t)ls.memory_bytes};
    st[n++] = (struct wire_stat){wire_cstr("owner_evictions"), (int64_t)ls.evictions};
    st[n++] = (struct wire_stat){wire_cstr("owner_expired"), (int64_t)ls.expired};
    size_t links = 0;
    for (struct olink *x = o->links; x != NULL; x = x->next)
        links++;
    st[n++] = (struct wire_stat){wire_cstr("owner_links"), (int64_t)links};
    owner_persist_stats(o, st, &n, sizeof(st) / sizeof(st[0]));
    wire_put_stats_reply(&l->out, m->id, st, n);
}

