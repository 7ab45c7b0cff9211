/*
 * owner_repl_wait.c - the answers that wait for followers (owner_repl.h):
 * each write's answer is held until every required follower of the leaves
 * it touched holds what it sent (durable: has committed it), its colo
 * pushes go out with the answer, and a read of a key whose write waits
 * waits too.  Also what each write sends to the streams of its leaf: its
 * result (owner_repl_applied) and its completion record.  The streams
 * themselves are owner_repl.c's.
 *
 * Held answers are a list in arrival order, each naming, per required
 * stream its request touched, the sequence number the follower must hold
 * (or, durable, have committed).  A change of any stream's acknowledgments
 * or of its required flag rescans the list: the answers of different
 * leaves do not wait for each other.  Every held answer has a deadline
 * (replica-timeout + etcd-timeout + 1 s: time for the removal's CAS); past
 * it, it is answered "outcome unknown" (applied here, and perhaps not held
 * by a follower that is still in the set).
 */
#include <stdlib.h>
#include <string.h>

#include "server/core/router.h"
#include "server/owner/owner_repl_int.h"

/* ---- held answers ------------------------------------------------------------ */

static void push_now(struct owner *o, struct rpush *p, size_t n)
{
    struct orepl *r = o->repl;
    for (size_t i = 0; i < n; i++) {
        owner_push_at(o, p[i].key, p[i].klen, p[i].place, p[i].version);
        uint16_t *c = &r->pending[p[i].khash % PENDING_SLOTS];
        if (*c > 0)
            (*c)--;
        free(p[i].key);
    }
    free(p);
}

static void send_reply(struct owner *o, struct rwait *w)
{
    if (w->l == NULL)
        return;
    if (w->failed) {
        wire_put_error(&w->l->out, w->id, w->failed == 2 ? HKV_EIO : HKV_ETIMEDOUT,
                       wire_cstr(w->failed == 2
                                     ? "UNAVAILABLE outcome unknown: the leaf's primary changed "
                                       "before its followers acknowledged the write"
                                     : "TIMEOUT outcome unknown: the write is applied but its "
                                       "followers did not acknowledge it in time"));
    } else if (w->ticket != 0) {
        if (owner_ticket_wait(o, w->ticket, w->l, w->id, &w->reply) != 0)
            buf_append(&w->l->out, buf_head(&w->reply), buf_unread(&w->reply));
    } else {
        buf_append(&w->l->out, buf_head(&w->reply), buf_unread(&w->reply));
    }
    olink_flush(w->l);
}

int orepl_need_met(const struct orepl *r, const struct rwait *w, const struct rneed *n)
{
    const struct rstream *s = &r->s[n->slot];
    if (n->seq == 0 || s->gen != n->gen || !s->required)
        return 1; /* out of the set by a CAS (a deposed stream fails its waiters first) */
    return (w->durable ? s->committed : s->held) >= n->seq;
}

static void replay_reads(struct owner *o)
{
    struct orepl *r = o->repl;
    struct rread *run = r->reads;
    r->reads = NULL;
    r->reads_tail = &r->reads;
    while (run != NULL) {
        struct rread *next = run->next;
        struct wire_msg m;
        const char *why;
        if (run->l != NULL && wire_decode(&o->dec, run->payload, run->plen, &m, &why) == HKV_OK) {
            o->replay(o, run->l, &m, run->payload, run->plen);
            olink_flush(run->l);
        }
        free(run->payload);
        free(run);
        run = next;
    }
}

/* Answers every held answer whose followers hold it (or that failed). */
void orepl_release(struct owner *o)
{
    struct orepl *r = o->repl;
    int64_t now = now_ms();
    int any = 0;
    struct rwait **pp = &r->head;
    r->tail = &r->head;
    while (*pp != NULL) {
        struct rwait *w = *pp;
        int met = 1;
        for (int i = 0; i < w->nneed && met && !w->failed; i++)
            met = orepl_need_met(r, w, &w->need[i]);
        if (!w->failed && !met && now >= w->deadline_ms) {
            w->failed = 1;
            r->st.ack_timeouts++;
        }
        if (!w->failed && !met) {
            r->tail = &w->next;
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        r->nwait--;
        send_reply(o, w);
        push_now(o, w->push, w->npush); /* after the answer: a failed one too (it applied) */
        buf_deinit(&w->reply);
        free(w);
        any = 1;
    }
    if (any && r->reads != NULL)
        replay_reads(o);
}

/* The stream's waiters fail: the leaf's primary changed under them. */
void orepl_fail_waiters_of(struct owner *o, int slot)
{
    struct orepl *r = o->repl;
    for (struct rwait *w = r->head; w != NULL; w = w->next)
        for (int i = 0; i < w->nneed; i++)
            if (w->need[i].slot == slot && w->need[i].gen == r->s[slot].gen &&
                !orepl_need_met(r, w, &w->need[i]) && !w->failed) {
                w->failed = 2;
                r->st.deposed++;
            }
}

int owner_repl_wants(const struct owner *o)
{
    return o->repl != NULL && o->repl->touched_any;
}

void owner_repl_retry(struct owner *o)
{
    struct orepl *r = o->repl;
    /* even with nothing waiting: the original's answer may have been
     * "outcome unknown" before a follower still in the set held it
     * (replica.pml finding 3, RECORD_ANSWER_EARLY) */
    if (r == NULL || r->st.streams == 0)
        return;
    for (int i = 0; i < OREPL_MAX; i++)
        if (r->s[i].required)
            touch(r, i);
}

void owner_repl_hold(struct owner *o, struct olink *l, uint64_t id, uint64_t ticket, int durable,
                     struct hkv_buf *reply)
{
    struct orepl *r = o->repl;
    int n = 0;
    for (int i = 0; i < r->ntouched; i++)
        n += r->s[r->touched[i]].required;
    struct rwait *w = calloc(1, sizeof(*w) + (size_t)n * sizeof(struct rneed));
    if (w == NULL) {
        buf_deinit(reply);
        wire_put_error(&l->out, id, HKV_ENOMEM, wire_cstr("OOM owner out of memory (outcome unknown)"));
        push_now(o, r->cur_push, r->ncur_push);
        goto out;
    }
    for (int i = 0; i < r->ntouched; i++) {
        struct rstream *s = &r->s[r->touched[i]];
        if (s->required)
            /* a stream whose link went (its removal pending) can hold
             * nothing more: the answer waits for the removal's CAS */
            w->need[w->nneed++] = (struct rneed){r->touched[i], s->gen,
                                                 s->copy != NULL ? owner_copy_seq(s->copy)
                                                                 : UINT64_MAX};
    }
    w->l = l;
    w->id = id;
    w->ticket = ticket;
    w->durable = durable;
    w->reply = *reply;
    *reply = (struct hkv_buf)HKV_BUF_INIT;
    w->since_ms = now_ms();
    w->deadline_ms = w->since_ms + o->opts.replica_timeout_ms + o->opts.etcd_timeout_ms + 1000;
    w->push = r->cur_push;
    w->npush = r->ncur_push;
    int met = 1;
    for (int i = 0; i < w->nneed && met; i++)
        met = orepl_need_met(r, w, &w->need[i]);
    if (met) { /* held already (or nothing required after all): it goes at once */
        send_reply(o, w);
        push_now(o, w->push, w->npush);
        buf_deinit(&w->reply);
        free(w);
    } else {
        *r->tail = w;
        r->tail = &w->next;
        r->nwait++;
        r->st.acks_waited++;
    }
out:
    r->cur_push = NULL;
    r->ncur_push = r->cap_push = 0;
    untouch_all(r);
}

int owner_repl_defer_push(struct owner *o, const char *key, size_t klen, uint64_t place,
                          uint64_t version)
{
    struct orepl *r = o->repl;
    if (r == NULL || !r->touched_any)
        return 0;
    int required = 0;
    for (int i = 0; i < r->ntouched && !required; i++) {
        const struct rstream *s = &r->s[r->touched[i]];
        required = s->required && in_leaf(&s->leaf, place);
    }
    if (!required)
        return 0;
    if (r->ncur_push == r->cap_push) {
        size_t cap = r->cap_push ? r->cap_push * 2 : 4;
        struct rpush *p = realloc(r->cur_push, cap * sizeof(*p));
        if (p == NULL)
            return 0;
        r->cur_push = p;
        r->cap_push = cap;
    }
    char *k = malloc(klen ? klen : 1);
    if (k == NULL)
        return 0;
    memcpy(k, key, klen);
    uint64_t h = router_hash(key, klen);
    r->cur_push[r->ncur_push++] = (struct rpush){k, klen, place, version, h};
    if (r->pending[h % PENDING_SLOTS] < UINT16_MAX)
        r->pending[h % PENDING_SLOTS]++;
    return 1;
}

int owner_repl_key_waits(const struct owner *o, const char *key, size_t klen)
{
    const struct orepl *r = o->repl;
    if (r == NULL || r->nwait == 0)
        return 0;
    return r->pending[router_hash(key, klen) % PENDING_SLOTS] != 0;
}

int owner_repl_park_read(struct owner *o, struct olink *l, const char *payload, size_t plen)
{
    struct orepl *r = o->repl;
    struct rread *x = calloc(1, sizeof(*x));
    char *copy = malloc(plen ? plen : 1);
    if (x == NULL || copy == NULL) {
        free(x);
        free(copy);
        return 0; /* served now: a read that may see an unacknowledged write */
    }
    memcpy(copy, payload, plen);
    *x = (struct rread){l, copy, plen, NULL};
    *r->reads_tail = x;
    r->reads_tail = &x->next;
    return 1;
}

void owner_repl_forget_link(struct owner *o, struct olink *l)
{
    if (o->repl == NULL)
        return;
    for (struct rwait *w = o->repl->head; w != NULL; w = w->next)
        if (w->l == l)
            w->l = NULL;
    for (struct rread *x = o->repl->reads; x != NULL; x = x->next)
        if (x->l == l)
            x->l = NULL;
}

/* ---- the stream of each write -------------------------------------------------- */

void owner_repl_applied(struct owner *o, const char *key, size_t klen)
{
    struct orepl *r = o->repl;
    if (r == NULL || r->st.streams == 0)
        return;
    uint64_t place = router_place(key, klen);
    uint32_t h = (uint32_t)(place >> 32);
    for (int bits = 0; bits <= 32; bits++) { /* usually one depth has streams */
        if (r->nbits[bits] == 0)
            continue;
        uint32_t start = bits ? h & ~(uint32_t)((1ULL << (32 - bits)) - 1) : 0;
        for (uint16_t x = r->bucket[bucket_of(start, (uint8_t)bits)]; x != 0; x = r->s[x - 1].next) {
            struct rstream *s = &r->s[x - 1];
            if (s->leaf.start != start || s->leaf.bits != bits || s->phase < S_SEED)
                continue;
            /* A required stream whose link went has no copy but is still in
             * the map's set until its removal's CAS: the write is touched so
             * its answer waits for that CAS (owner_repl_hold), not answered
             * without the follower (R6; a cluster history run saw the old
             * primary acknowledge a SET its promoted follower never had). */
            if (s->copy != NULL)
                owner_copy_applied(s->copy, key, klen);
            else if (!s->required)
                continue;
            touch(r, x - 1);
            if (owner_move_hook_armed("repl_write")) { /* a test: die mid-request */
                owner_hlink_flush_now(s->h);
                owner_move_hook(o, "repl_write");
            }
        }
    }
}

void owner_repl_record(struct owner *o, uint32_t writer, uint64_t inc, uint64_t seq,
                       const struct rifl_result *res)
{
    struct orepl *r = o->repl;
    if (r == NULL)
        return;
    for (int i = 0; i < r->ntouched; i++) {
        struct rstream *s = &r->s[r->touched[i]];
        if (s->copy != NULL)
            owner_copy_record(s->copy, writer, inc, seq, res);
        if (owner_move_hook_armed("repl_record")) { /* a test: die before the answer */
            owner_hlink_flush_now(s->h);
            owner_move_hook(o, "repl_record");
        }
    }
    if (!r->touched_any)
        untouch_all(r); /* only streams still seeding: no answer waits (no hold) */
}

void orepl_wait_free(struct orepl *r)
{
    while (r->head != NULL) {
        struct rwait *w = r->head;
        r->head = w->next;
        for (size_t i = 0; i < w->npush; i++)
            free(w->push[i].key);
        free(w->push);
        buf_deinit(&w->reply);
        free(w);
    }
    while (r->reads != NULL) {
        struct rread *x = r->reads;
        r->reads = x->next;
        free(x->payload);
        free(x);
    }
    for (size_t i = 0; i < r->ncur_push; i++)
        free(r->cur_push[i].key);
    free(r->cur_push);
}
