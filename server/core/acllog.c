/*
 * acllog.c - the host's ACL LOG ring; see acllog.h.
 *
 * The ring holds entries newest at `head`, older ones at head-1, head-2...
 * (mod ACLLOG_CAP).  Moving a matched entry to the front shifts the at most
 * nine newer ones back by one: the ring never moves more than ten entries.
 */
#include "server/core/acllog.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define SPINS 4096
#define SCAN 10

static int lock(struct acllog *l)
{
    int32_t me = (int32_t)getpid(), cur = 0;
    for (int i = 0; i < SPINS; i++) {
        cur = 0;
        if (atomic_compare_exchange_weak_explicit(&l->lock, &cur, me, memory_order_acquire,
                                                  memory_order_relaxed))
            return 0;
    }
    /* held all along: by a process that died holding it? */
    cur = atomic_load_explicit(&l->lock, memory_order_relaxed);
    if (cur > 0 && kill(cur, 0) != 0 && errno == ESRCH &&
        atomic_compare_exchange_strong_explicit(&l->lock, &cur, me, memory_order_acquire,
                                                memory_order_relaxed))
        return 0;
    return -1;
}

static void unlock(struct acllog *l)
{
    atomic_store_explicit(&l->lock, 0, memory_order_release);
}

static uint32_t at(const struct acllog *l, uint32_t age)
{
    return (l->head + ACLLOG_CAP - age % ACLLOG_CAP) % ACLLOG_CAP;
}

static size_t cut(size_t n, size_t cap)
{
    return n < cap ? n : cap;
}

static int same(const struct acllog_entry *e, const struct acllog_in *in, int64_t now_ms)
{
    return e->reason == in->reason && e->context == in->context &&
           now_ms - e->updated_ms <= ACLLOG_GROUP_MS &&
           e->object_len == cut(in->object_len, ACLLOG_OBJECT) &&
           memcmp(e->object, in->object, e->object_len) == 0 &&
           e->user_len == cut(in->user_len, ACLLOG_USER) &&
           memcmp(e->user, in->user, e->user_len) == 0;
}

static void set_info(struct acllog_entry *e, const struct acllog_in *in, int64_t now_ms)
{
    e->info_len = (uint16_t)cut(in->info_len, ACLLOG_INFO);
    memcpy(e->info, in->info, e->info_len);
    e->updated_ms = now_ms;
}

int acllog_add(struct acllog *l, const struct acllog_in *in, int64_t now_ms, uint32_t max_len)
{
    if (max_len == 0)
        return 0;
    if (max_len > ACLLOG_CAP)
        max_len = ACLLOG_CAP;
    if (lock(l) != 0) {
        atomic_fetch_add_explicit(&l->dropped, 1, memory_order_relaxed);
        return -1;
    }
    if (l->n > max_len)
        l->n = max_len; /* acllog-max-len was lowered */
    for (uint32_t age = 0; age < l->n && age < SCAN; age++) {
        struct acllog_entry *e = &l->e[at(l, age)];
        if (!same(e, in, now_ms))
            continue;
        struct acllog_entry m = *e;
        for (uint32_t k = age; k > 0; k--) /* the newer ones back by one */
            l->e[at(l, k)] = l->e[at(l, k - 1)];
        m.count++;
        set_info(&m, in, now_ms);
        l->e[l->head] = m;
        unlock(l);
        return 0;
    }
    l->head = (l->head + 1) % ACLLOG_CAP;
    if (l->n < max_len)
        l->n++;
    struct acllog_entry *e = &l->e[l->head];
    e->count = 1;
    e->reason = (uint8_t)in->reason;
    e->context = (uint8_t)in->context;
    e->object_len = (uint16_t)cut(in->object_len, ACLLOG_OBJECT);
    memcpy(e->object, in->object, e->object_len);
    e->user_len = (uint16_t)cut(in->user_len, ACLLOG_USER);
    memcpy(e->user, in->user, e->user_len);
    set_info(e, in, now_ms);
    unlock(l);
    return 0;
}

int acllog_read(struct acllog *l, struct acllog_entry *out, uint32_t count, uint32_t max_len)
{
    if (lock(l) != 0)
        return -1;
    uint32_t n = l->n < max_len ? l->n : max_len;
    if (count < n)
        n = count;
    for (uint32_t age = 0; age < n; age++)
        out[age] = l->e[at(l, age)];
    unlock(l);
    return (int)n;
}

int acllog_reset(struct acllog *l)
{
    if (lock(l) != 0)
        return -1;
    l->n = 0;
    unlock(l);
    return 0;
}

const char *acllog_reason_name(unsigned reason)
{
    static const char *const names[] = {"auth", "command", "key", "channel"};
    return reason < 4 ? names[reason] : "?";
}

const char *acllog_context_name(unsigned context)
{
    static const char *const names[] = {"toplevel", "multi", "http"};
    return context < 3 ? names[context] : "?";
}
