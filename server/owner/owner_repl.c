/*
 * owner_repl.c - a primary's streams to its followers (owner_repl.h has
 * the rules, CLUSTER.md §7 the design; the answers that wait for them are
 * owner_repl_wait.c's).
 *
 * A stream's life: BEGIN (follow) -> READY -> SEED (the copy walks the
 * leaf; every write's result and record travels meanwhile) -> CATCHUP
 * (walked; the follower commits the backlog) -> JOINING (required: the
 * follower must hold everything sent so far) -> ADDING (LEAF_ISR_ADD out)
 * -> IN_SYNC; and from any required phase, REMOVING (LEAF_ISR_DEL out) ->
 * freed.  A stream that was never required is simply closed.
 */
#include "server/owner/owner_repl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/log.h"
#include "server/core/router.h"

static void index_add(struct orepl *r, int slot)
{
    struct rstream *s = &r->s[slot];
    unsigned b = bucket_of(s->leaf.start, s->leaf.bits);
    s->next = r->bucket[b];
    r->bucket[b] = (uint16_t)(slot + 1);
    r->nbits[s->leaf.bits]++;
}

static void index_del(struct orepl *r, int slot)
{
    struct rstream *s = &r->s[slot];
    uint16_t *pp = &r->bucket[bucket_of(s->leaf.start, s->leaf.bits)];
    while (*pp != 0 && *pp != slot + 1)
        pp = &r->s[*pp - 1].next;
    if (*pp != 0) {
        *pp = s->next;
        r->nbits[s->leaf.bits]--;
    }
    s->next = 0;
}



static const char *leaf_name(const struct hand_leaf *l, char *buf, size_t len)
{
    snprintf(buf, len, "%u-%08x", l->bits, l->bits ? l->start >> (32 - l->bits) : 0);
    return buf;
}

/* The map's entry of the stream's leaf if it is that very leaf. */
static const struct cmap_leaf *map_leaf(struct owner *o, const struct hand_leaf *lf)
{
    const struct cmap_table *t = owner_own_map(o);
    const struct cmap_leaf *l = t ? cmap_lookup(t, o->pool, (uint64_t)lf->start << 32) : NULL;
    return l != NULL && l->start == lf->start && l->bits == lf->bits ? l : NULL;
}

static int isr_has(const struct cmap_leaf *l, unsigned n)
{
    for (int i = 0; i < l->nisr; i++)
        if (l->isr[i] == n)
            return 1;
    return 0;
}

/* ---- streams ------------------------------------------------------------------ */

static void stream_free(struct owner *o, struct rstream *s, const char *why)
{
    struct orepl *r = o->repl;
    char n[32];
    if (s->order != 0)
        owner_agent_done(o, s->order, LEAF_ST_REFUSED, why);
    log_notice("leaf %s: stream to follower %u ends (%s): %s", leaf_name(&s->leaf, n, sizeof(n)),
               s->to, SPHASES[s->phase], why);
    owner_copy_stop(&s->copy);
    if (s->h != NULL)
        owner_hlink_close(s->h, 1);
    int slot = (int)(s - r->s);
    index_del(r, slot);
    if (s->touched) { /* out of the running request's list */
        for (int i = 0; i < r->ntouched; i++)
            if (r->touched[i] == slot)
                r->touched[i] = r->touched[--r->ntouched];
    }
    uint64_t gen = s->gen;
    memset(s, 0, sizeof(*s));
    s->gen = gen; /* held answers naming the old stream see it gone */
    r->st.streams--;
    orepl_release(o);
}

static void send_epoch(struct owner *o, const struct hand_leaf *lf, int64_t e2)
{
    struct orepl *r = o->repl;
    for (int i = 0; i < OREPL_MAX; i++) {
        struct rstream *s = &r->s[i];
        if (s->phase == S_FREE || s->leaf.start != lf->start || s->leaf.bits != lf->bits ||
            s->epoch >= e2)
            continue;
        struct hand_msg m = {.type = HANDOFF_EPOCH, .id = 1, .u.committed = {s->epoch, e2}};
        if (s->h != NULL)
            owner_hlink_send(s->h, &m);
        s->epoch = e2;
    }
}

static struct rstream *of_arg(struct owner *o, void *arg)
{
    uintptr_t v = (uintptr_t)arg;
    /* owner_deinit tears replication down before the agent channel, whose
     * stop fails the pending LEAF_ISR_ADD/DEL calls into here */
    if (o->repl == NULL)
        return NULL;
    struct rstream *s = &o->repl->s[v % OREPL_MAX];
    return s->phase != S_FREE && s->gen == v / OREPL_MAX ? s : NULL;
}

static void *arg_of(struct owner *o, const struct rstream *s)
{
    return (void *)(uintptr_t)((s - o->repl->s) + s->gen * OREPL_MAX);
}

static void on_add_reply(struct owner *o, void *arg, const struct hand_msg *m)
{
    struct rstream *s = of_arg(o, arg);
    if (s == NULL || s->phase != S_ADDING)
        return;
    s->call_out = 0;
    char n[32];
    if (m->u.reply.status == LEAF_ST_OK) {
        s->in_set = 1;
        s->phase = S_IN_SYNC;
        o->repl->st.isr_adds++;
        send_epoch(o, &s->leaf, m->u.reply.epoch);
        log_notice("leaf %s: follower %u is in sync (epoch %lld, %llu results)",
                   leaf_name(&s->leaf, n, sizeof(n)), s->to, (long long)s->epoch,
                   (unsigned long long)s->held);
        if (s->order != 0)
            owner_agent_done(o, s->order, LEAF_ST_OK, "in sync");
        s->order = 0;
    } else if (m->u.reply.status == LEAF_ST_UNKNOWN) {
        s->unknown = 1; /* the map decides (tick) */
    } else {
        stream_free(o, s, m->u.reply.status == LEAF_ST_LOST ? "the in-sync set changed first"
                                                             : "the agent refused the join");
    }
}

static void on_del_reply(struct owner *o, void *arg, const struct hand_msg *m)
{
    struct rstream *s = of_arg(o, arg);
    if (s == NULL || s->phase != S_REMOVING)
        return;
    s->call_out = 0;
    if (m->u.reply.status == LEAF_ST_OK) {
        o->repl->st.isr_removals++;
        struct hand_leaf lf = s->leaf;
        s->required = 0;
        stream_free(o, s, "taken out of the in-sync set");
        send_epoch(o, &lf, m->u.reply.epoch);
    } else {
        s->unknown = 1; /* LOST or UNKNOWN: the map says where it is (tick) */
        s->retry_ms = now_ms() + OREPL_RETRY_MS;
    }
}

/* A required stream stops holding writes in time: out of the set first. */
static void start_removal(struct owner *o, struct rstream *s, const char *why)
{
    char n[32];
    if (!s->in_set && s->phase != S_ADDING) {
        s->required = 0; /* never in the map's set: nobody counted on it */
        stream_free(o, s, why);
        return;
    }
    if (s->phase == S_ADDING)
        return; /* the add's outcome first */
    if (s->phase != S_REMOVING)
        log_warning("leaf %s: follower %u leaves the in-sync set: %s",
                    leaf_name(&s->leaf, n, sizeof(n)), s->to, why);
    s->phase = S_REMOVING;
    if (s->call_out || now_ms() < s->retry_ms)
        return;
    s->call_out = 1;
    if (owner_agent_call(o, LEAF_ISR_DEL, s->leaf, s->epoch, s->to, o->opts.etcd_timeout_ms + 1000,
                         on_del_reply, arg_of(o, s)) != 0) {
        s->call_out = 0;
        s->retry_ms = now_ms() + OREPL_RETRY_MS;
    }
}

static void copy_done(struct owner *o, void *arg, int status)
{
    struct rstream *s = of_arg(o, arg);
    if (s == NULL)
        return;
    if (status != HKV_OK) {
        if (s->required)
            start_removal(o, s, "the copy failed");
        else
            stream_free(o, s, "the copy failed");
        return;
    }
    if (s->phase == S_SEED)
        s->phase = S_CATCHUP;
}

static void on_msg(struct owner *o, void *arg, struct hlink *h, const struct hand_msg *m)
{
    struct rstream *s = of_arg(o, arg);
    if (s == NULL)
        return;
    switch (m->type) {
    case HANDOFF_READY:
        if (s->phase != S_BEGIN || m->u.ready.e1 != s->epoch)
            return;
        s->copy = owner_copy_start(o, s->h, s->leaf, s->epoch, copy_done, arg);
        if (s->copy == NULL) {
            stream_free(o, s, "out of memory");
            return;
        }
        owner_copy_records(s->copy); /* retries of earlier writes are answered there too */
        s->phase = S_SEED;
        return;
    case HANDOFF_HELD:
        if (m->u.fence.last > s->held)
            s->held = m->u.fence.last;
        break;
    case HANDOFF_PROGRESS:
        if (m->u.fence.last > s->committed)
            s->committed = m->u.fence.last;
        owner_copy_progress(s->copy, m->u.fence.last);
        break;
    case HANDOFF_FENCE_ACK:
        if (m->u.fence.last > s->fenced)
            s->fenced = m->u.fence.last;
        return; /* the hand-over's tick looks */
    case HANDOFF_FENCE_NACK:
        s->fence_nacked = 1;
        return;
    case HANDOFF_ABORT:
        if (s->required)
            start_removal(o, s, "the follower ended the stream");
        else
            stream_free(o, s, "the follower refused or ended the stream");
        return;
    default:
        return;
    }
    orepl_release(o);
}

static void on_gone(struct owner *o, void *arg, struct hlink *h, const char *why)
{
    struct rstream *s = of_arg(o, arg);
    if (s == NULL)
        return;
    s->h = NULL;
    owner_copy_stop(&s->copy);
    if (s->required)
        start_removal(o, s, "its link went");
    else
        stream_free(o, s, why);
}

static void on_drained(struct owner *o, void *arg, struct hlink *h)
{
    struct rstream *s = of_arg(o, arg);
    if (s != NULL && s->copy != NULL)
        owner_copy_drained(s->copy);
}

void owner_repl_order(struct owner *o, const struct hand_msg *ord)
{
    struct orepl *r = o->repl;
    char why[200] = "", n[32];
    struct hand_leaf lf = ord->u.order.leaf;
    uint32_t to = ord->u.order.to;
    owner_own_refresh(o);
    const struct cmap_leaf *l = map_leaf(o, &lf);
    const struct cmap_table *t = owner_own_map(o);
    const struct cmap_owner *target = t ? cmap_owner(t, to) : NULL;
    struct rstream *s = NULL;
    for (int i = 0; r != NULL && i < OREPL_MAX; i++) {
        if (r->s[i].phase != S_FREE && r->s[i].to == to && r->s[i].leaf.start == lf.start &&
            r->s[i].leaf.bits == lf.bits) {
            if (r->s[i].order == 0)
                r->s[i].order = ord->id; /* the same follow, asked again */
            else
                owner_agent_done(o, ord->id, LEAF_ST_REFUSED, "already following");
            return;
        }
        if (s == NULL && r->s[i].phase == S_FREE)
            s = &r->s[i];
    }
    if (r == NULL)
        snprintf(why, sizeof(why), "replication is off here");
    else if (l == NULL || l->owner != owner_own_number(o) || l->state != CMAP_SERVING)
        snprintf(why, sizeof(why), "leaf %s is not served by this owner", leaf_name(&lf, n, sizeof(n)));
    else if (target == NULL || target->pool != o->pool || to == owner_own_number(o))
        snprintf(why, sizeof(why), "owner %u cannot follow this leaf", to);
    else if (isr_has(l, to))
        snprintf(why, sizeof(why), "owner %u is in the leaf's in-sync set already", to);
    else if (s == NULL)
        snprintf(why, sizeof(why), "%d streams out already", OREPL_MAX);
    if (why[0] == '\0') {
        *s = (struct rstream){.phase = S_BEGIN, .leaf = lf, .to = to, .gen = ++r->next_gen,
                              .order = ord->id, .epoch = l->epoch, .started_ms = now_ms(),
                              .deadline_ms = now_ms() + OREPL_BEGIN_TIMEOUT_MS};
        s->h = owner_hlink_connect(o, target, on_msg, on_gone, on_drained, arg_of(o, s), why,
                                   sizeof(why));
        if (s->h == NULL) {
            uint64_t gen = s->gen;
            memset(s, 0, sizeof(*s));
            s->gen = gen;
        }
    }
    if (why[0] != '\0') {
        log_notice("follow order refused: %s", why);
        owner_agent_done(o, ord->id, LEAF_ST_REFUSED, why);
        return;
    }
    struct hand_msg b = {.type = HANDOFF_BEGIN, .id = 1,
                         .u.begin = {wire_cstr(o->opts.cluster), wire_cstr(o->opts.host), lf,
                                     s->epoch, owner_own_number(o), to, o->incarnation, true}};
    owner_hlink_send(s->h, &b);
    index_add(r, (int)(s - r->s));
    r->st.streams++;
    log_notice("leaf %s: seeding follower %u (epoch %lld)", leaf_name(&lf, n, sizeof(n)), to,
               (long long)s->epoch);
}

/* What the map says of one stream's leaf. */
static void check_map(struct owner *o, struct rstream *s)
{
    const struct cmap_table *t = owner_own_map(o);
    if (t == NULL || t->revision < s->epoch)
        return;
    const struct cmap_leaf *l = map_leaf(o, &s->leaf);
    int idx = (int)(s - o->repl->s);
    if (l == NULL || l->owner != owner_own_number(o)) {
        /* split, merged, moved or promoted away: for a split the halves'
         * sets are empty (the agent's txn), otherwise this owner is deposed */
        if (l != NULL || t->revision > s->epoch) {
            if (l != NULL)
                orepl_fail_waiters_of(o, idx);
            s->required = 0;
            stream_free(o, s, l != NULL ? "the map names another primary"
                                        : "the map no longer has the leaf");
        }
        return;
    }
    if (l->epoch <= s->epoch)
        return;
    /* the set changed by someone else's CAS (or ours, not answered) */
    if (isr_has(l, s->to)) {
        if (s->phase == S_ADDING && s->unknown) {
            s->phase = S_IN_SYNC;
            s->in_set = 1;
            s->call_out = 0;
            o->repl->st.isr_adds++;
        }
        send_epoch(o, &s->leaf, l->epoch);
    } else if (s->in_set || s->phase == S_REMOVING || (s->phase == S_ADDING && s->unknown)) {
        struct hand_leaf lf = s->leaf;
        s->required = 0;
        stream_free(o, s, "the map shows it out of the in-sync set");
        send_epoch(o, &lf, l->epoch);
    } else {
        send_epoch(o, &s->leaf, l->epoch);
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct owner *o = arg;
    struct orepl *r = o->repl;
    int64_t now = now_ms();
    owner_own_refresh(o);
    /* the oldest held answer per stream: a follower this late leaves the set */
    int64_t oldest[OREPL_MAX] = {0};
    for (struct rwait *w = r->head; w != NULL; w = w->next)
        for (int i = 0; i < w->nneed; i++)
            if (!orepl_need_met(r, w, &w->need[i]) && oldest[w->need[i].slot] == 0)
                oldest[w->need[i].slot] = w->since_ms;
    for (int i = 0; i < OREPL_MAX; i++) {
        struct rstream *s = &r->s[i];
        if (s->phase == S_FREE)
            continue;
        check_map(o, s);
        if (s->phase == S_FREE)
            continue;
        if (s->phase == S_BEGIN && now >= s->deadline_ms) {
            stream_free(o, s, "the follower did not answer BEGIN");
            continue;
        }
        if (s->phase == S_CATCHUP && owner_copy_walked(s->copy) &&
            s->held + OCOPY_TAIL >= owner_copy_seq(s->copy)) {
            s->required = 1; /* from now on no answer goes without it */
            s->join_seq = owner_copy_seq(s->copy);
            s->phase = S_JOINING;
            s->deadline_ms = now + o->opts.replica_timeout_ms;
        }
        if (s->phase == S_JOINING && s->held >= s->join_seq && !s->call_out) {
            s->phase = S_ADDING;
            s->call_out = 1;
            if (owner_agent_call(o, LEAF_ISR_ADD, s->leaf, s->epoch, s->to,
                                 o->opts.etcd_timeout_ms + 1000, on_add_reply, arg_of(o, s)) != 0) {
                s->call_out = 0;
                s->phase = S_JOINING;
            }
        }
        if (s->phase == S_JOINING && now >= s->deadline_ms) {
            start_removal(o, s, "it did not catch up within replica-timeout");
            continue;
        }
        if (s->required && oldest[i] != 0 && now - oldest[i] > o->opts.replica_timeout_ms)
            start_removal(o, s, "it did not hold a write within replica-timeout");
        else if (s->phase == S_REMOVING)
            start_removal(o, s, "retrying the removal");
    }
    orepl_release(o); /* deadlines */
    uint64_t lag = 0, insync = 0, leaves = 0;
    for (int i = 0; i < OREPL_MAX; i++) {
        struct rstream *s = &r->s[i];
        if (s->copy != NULL && owner_copy_seq(s->copy) - s->held > lag)
            lag = owner_copy_seq(s->copy) - s->held;
        insync += s->phase == S_IN_SYNC;
        int first = s->phase == S_IN_SYNC;
        /* counted once per leaf: by the in-sync stream last in its index chain */
        for (uint16_t x = s->next; x != 0 && first; x = r->s[x - 1].next)
            first = !(r->s[x - 1].phase == S_IN_SYNC && r->s[x - 1].leaf.start == s->leaf.start &&
                      r->s[x - 1].leaf.bits == s->leaf.bits);
        leaves += first;
    }
    r->st.lag_entries_max = lag;
    r->st.lag_ms_max = r->head != NULL ? (uint64_t)(now - r->head->since_ms) : 0;
    r->st.in_sync = insync;
    r->st.primary_leaves = leaves;
    r->st.waiting = r->nwait;
}

void owner_repl_stats(const struct owner *o, struct orepl_stats *out)
{
    if (o->repl == NULL)
        memset(out, 0, sizeof(*out));
    else
        *out = o->repl->st;
}

int owner_repl_covered(const struct owner *o, uint64_t place)
{
    const struct orepl *r = o->repl;
    uint32_t h = (uint32_t)(place >> 32);
    for (int bits = 0; r != NULL && bits <= 32; bits++) {
        if (r->nbits[bits] == 0)
            continue;
        uint32_t start = bits ? h & ~(uint32_t)((1ULL << (32 - bits)) - 1) : 0;
        for (uint16_t x = r->bucket[bucket_of(start, (uint8_t)bits)]; x != 0; x = r->s[x - 1].next) {
            const struct rstream *s = &r->s[x - 1];
            /* in the map's set, not only required: a follower still joining
             * holds the writes but cannot be promoted (bench: a kill during
             * a join lost the 31 keys a joining follower held) */
            if (s->leaf.start == start && s->leaf.bits == bits && s->required && s->in_set)
                return 1;
        }
    }
    return 0;
}

static int same_leaf(const struct hand_leaf *a, const struct hand_leaf *b)
{
    return a->start == b->start && a->bits == b->bits;
}

uint32_t owner_repl_pick(struct owner *o, struct hand_leaf lf, uint32_t to, int64_t *epoch)
{
    const struct cmap_table *t = owner_own_map(o);
    uint32_t any = 0;
    for (int i = 0; o->repl != NULL && t != NULL && i < OREPL_MAX; i++) {
        const struct rstream *s = &o->repl->s[i];
        if (s->phase != S_IN_SYNC || !same_leaf(&s->leaf, &lf) || (to != 0 && s->to != to))
            continue;
        const struct cmap_owner *f = cmap_owner(t, s->to);
        if (f == NULL || !f->live)
            continue;
        *epoch = s->epoch;
        if (to != 0 || strcmp(f->host, o->opts.host) != 0)
            return s->to;
        if (any == 0)
            any = s->to;
    }
    return any;
}

int owner_repl_caught_up(struct owner *o, struct hand_leaf lf, uint32_t to, int64_t *epoch)
{
    struct orepl *r = o->repl;
    struct rstream *f = NULL;
    for (int i = 0; r != NULL && i < OREPL_MAX && f == NULL; i++)
        if (r->s[i].phase == S_IN_SYNC && r->s[i].to == to && same_leaf(&r->s[i].leaf, &lf))
            f = &r->s[i];
    if (f == NULL || f->copy == NULL)
        return -1;
    *epoch = f->epoch;
    uint64_t seq = owner_copy_seq(f->copy);
    if (f->held < seq)
        return 0;
    for (const struct rwait *w = r->head; w != NULL; w = w->next)
        for (int i = 0; i < w->nneed; i++)
            if (same_leaf(&r->s[w->need[i].slot].leaf, &lf) && !orepl_need_met(r, w, &w->need[i]))
                return 0;
    if (f->fenced >= seq && f->fence_sent >= seq)
        return 1;
    struct rstream *s = f;
    if (s->fence_nacked && s->fence_sent == seq) {
        s->fence_nacked = 0;
        s->fence_sent = 0; /* the next hand-over asks again */
        return -2;
    }
    if (s->fence_sent != seq || s->fence_sent == 0) {
        /* The follower holds the tail in memory; the FENCE makes it commit
         * every key it holds, so the new primary's file has them before the
         * CAS: the old primary is in no in-sync set after it, and a crash
         * of the new one before its write-behind ran would reload an older
         * file with nobody holding the rest. */
        struct hand_msg m = {.type = HANDOFF_FENCE, .id = 1, .u.fence = {s->epoch, seq}};
        if (s->h == NULL || owner_hlink_send(s->h, &m) != HKV_OK)
            return -1;
        s->fence_sent = seq;
        s->fence_nacked = 0;
    }
    return 0;
}

uint64_t owner_repl_streams(const struct owner *o)
{
    return o->repl != NULL ? o->repl->st.streams : 0;
}

int owner_repl_setup(struct owner *o)
{
    if (o->opts.cluster[0] == '\0')
        return 0;
    struct orepl *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return -1;
    r->tail = &r->head;
    r->reads_tail = &r->reads;
    o->repl = r;
    r->tick = event_new(o->base, -1, EV_PERSIST, on_tick, o);
    if (r->tick == NULL)
        return -1;
    struct timeval tv = {0, OREPL_TICK_MS * 1000};
    event_add(r->tick, &tv);
    return 0;
}

void owner_repl_teardown(struct owner *o)
{
    struct orepl *r = o->repl;
    if (r == NULL)
        return;
    for (int i = 0; i < OREPL_MAX; i++) {
        owner_copy_stop(&r->s[i].copy);
        if (r->s[i].h != NULL)
            owner_hlink_close(r->s[i].h, 0);
    }
    orepl_wait_free(r);
    if (r->tick != NULL)
        event_free(r->tick);
    free(r);
    o->repl = NULL;
}
