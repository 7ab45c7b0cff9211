/* check_agent_leaf.c - the agent's half of a move (server/agent/agent_leaf.h)
 * without a daemon or an etcd server: the agent's leaf module on a minimal
 * agent in this process, its etcd client over the local store (the same
 * calls, in a temporary file), a cluster map published in a real map
 * segment.  Owners' requests (LEAF_READ, SPLIT, INTENT, COMMIT, ABORT) are
 * answered OK with the leaf's new epoch and change etcd as CLUSTER.md §5
 * says; a stale epoch is LOST with the truth; what cannot be tried is
 * REFUSED (no map, an asker not in it, no lease, a target of another pool,
 * no free slot on the target); requests are answered in arrival order.
 * The in-sync set (CLUSTER.md §7): ISR_ADD / DEL are CASes on the epoch;
 * INTENT and ABORT keep the set, COMMIT and SPLIT empty it. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"
#include "server/agent/agent_int.h"
#include "server/agent/agent_keys.h"
#include "server/agent/agent_leaf.h"
#include "server/agent/agent_txn.h"
#include "server/core/cmap.h"
#include "tests/harness.h"
#include "tests/unit/agent_fixture.h"

#define MAXR (AGENT_LEAF_QUEUE + 8)

static struct {
    struct agent_fixture f;
    struct agent_leaf *l;
    struct hand_msg replies[MAXR];
    uint64_t cookies[MAXR];
    char texts[MAXR][128];
    int nreplies;
    struct etcd_result last;      /* the last sync call's result (kvs copied below) */
    int done;
    char val[512];
    int64_t mod;
    int found;
} T;

static void on_reply(void *arg, uint64_t cookie, struct hand_msg *m)
{
    ck_assert_int_lt(T.nreplies, MAXR);
    ck_assert_int_eq(m->type, LEAF_REPLY);
    T.replies[T.nreplies] = *m;
    T.cookies[T.nreplies] = cookie;
    snprintf(T.texts[T.nreplies], sizeof(T.texts[0]), "%.*s", (int)m->u.reply.text.len,
             m->u.reply.text.p != NULL ? m->u.reply.text.p : "");
    T.nreplies++;
}

static int on_order(void *arg, int pool, int index, const struct hand_msg *m)
{
    return 0;
}

/* ---- etcd, synchronously (the test's own calls) ---------------------------- */

static void on_sync(void *arg, const struct etcd_result *r)
{
    T.last = *r;
    T.found = r->nkvs > 0;
    if (T.found) {
        snprintf(T.val, sizeof(T.val), "%.*s", (int)r->kvs[0].value_len, r->kvs[0].value);
        T.mod = r->kvs[0].mod_revision;
    }
    T.last.kvs = NULL;
    T.done = 1;
}

static void wait_done(void)
{
    af_wait(&T.f, &T.done);
}

static void put(const char *key_tail, const char *val)
{
    af_put(&T.f, key_tail, val);
}

/* Reads key_tail: 1 and its value in T.val, T.mod; 0 absent. */
static int get(const char *key_tail)
{
    char k[AGENT_KEY_MAX];
    int n = agent_key(k, sizeof(k), "c1", "%s", key_tail);
    T.done = 0;
    T.found = 0;
    ck_assert_int_eq(etcd_range(T.f.a.etcd, k, (size_t)n, NULL, 0, 0, 0, on_sync, NULL), HKV_OK);
    wait_done();
    ck_assert_int_eq(T.last.status, HKV_OK);
    return T.found;
}

static int64_t grant_lease(void)
{
    T.done = 0;
    ck_assert_int_eq(etcd_lease_grant(T.f.a.etcd, 30, on_sync, NULL), HKV_OK);
    wait_done();
    ck_assert_int_eq(T.last.status, HKV_OK);
    ck_assert_int_ne(T.last.lease_id, 0);
    return T.last.lease_id;
}

/* ---- the map --------------------------------------------------------------------- */

static void owner(unsigned n, int pool, int k, const char *host)
{
    struct cmap_owner *o = &T.f.t->owners[n];
    o->number = (uint16_t)n;
    o->pool = (uint8_t)pool;
    o->index = (uint16_t)k;
    o->live = 1;
    o->port = (uint16_t)(7000 + n);
    o->incarnation = 1;
    snprintf(o->host, sizeof(o->host), "%s", host);
    snprintf(o->id, sizeof(o->id), "%s/%s/%d", host, pool == CFG_POOL_HOT ? "hot" : "cold", k);
    snprintf(o->addr, sizeof(o->addr), "10.0.0.%u", n);
}

/* Owners: 1 h1/cold/0, 2 h1/cold/1, 3 h1/hot/0.  Cold in 4 leaves of 2
 * bits, owners 1 1 1 2; hot one leaf of owner 3.  Published and in etcd. */
static void publish_map(void)
{
    memset(T.f.t, 0, sizeof(*T.f.t));
    T.f.t->revision = 1;
    owner(1, CFG_POOL_COLD, 0, "h1");
    owner(2, CFG_POOL_COLD, 1, "h1");
    owner(3, CFG_POOL_HOT, 0, "h1");
    T.f.t->nleaves[CFG_POOL_COLD] = 4;
    for (uint32_t i = 0; i < 4; i++) {
        struct cmap_leaf *lf = &T.f.t->leaves[CFG_POOL_COLD][i];
        lf->bits = 2;
        lf->start = i << 30;
        lf->owner = i < 3 ? 1 : 2;
        lf->epoch = 1;
    }
    T.f.t->nleaves[CFG_POOL_HOT] = 1;
    T.f.t->leaves[CFG_POOL_HOT][0].owner = 3;
    T.f.t->leaves[CFG_POOL_HOT][0].epoch = 1;
    char why[128];
    ck_assert_msg(cmap_validate(T.f.t, why, sizeof(why)) == HKV_OK, "%s", why);
    ck_assert_int_eq(cmap_publish(T.f.ctx.cmap, T.f.t), HKV_OK);
    char tail[64], v[128];
    for (uint32_t i = 0; i < 4; i++) {
        snprintf(tail, sizeof(tail), "map/cold/2-%08x", i);
        agent_val_leaf(v, sizeof(v), &(struct agent_leaf_v){.owner = i < 3 ? 1 : 2});
        put(tail, v);
    }
    put("members/h1/cold/0", "{}");
    put("members/h1/cold/1", "{}");
}

static void setup_bare(void)
{
    memset(&T, 0, sizeof(T));
    af_start(&T.f);
    T.l = agent_leaf_create(&T.f.a, on_reply, on_order, NULL);
    ck_assert_ptr_nonnull(T.l);
}

static void setup(void)
{
    setup_bare();
    publish_map();
    T.f.a.h.lease_id = grant_lease();
}

static void teardown(void)
{
    agent_leaf_destroy(&T.l);
    ck_assert_ptr_null(T.l);
    af_stop(&T.f);
}

/* Asks as owner (cold, index) and waits for n replies in all. */
static void ask(int index, uint8_t type, uint32_t start, uint8_t bits, int64_t epoch, uint32_t to,
                uint64_t cookie)
{
    struct hand_msg m = {.type = type, .id = cookie};
    m.u.leaf.leaf = (struct hand_leaf){CFG_POOL_COLD, bits, start};
    m.u.leaf.epoch = epoch;
    m.u.leaf.to = to;
    agent_leaf_request(T.l, CFG_POOL_COLD, index, &m, cookie);
}

static void wait_replies(int n)
{
    for (int64_t end = h_now_ms() + 5000; T.nreplies < n && h_now_ms() < end;)
        if (event_base_loop(T.f.base, EVLOOP_ONCE | EVLOOP_NONBLOCK) != 0 || T.nreplies < n)
            h_sleep_ms(1);
    ck_assert_int_eq(T.nreplies, n);
}

static const struct hand_msg *reply(int i)
{
    return &T.replies[i];
}

#define Q1 (1u << 30) /* the second cold leaf */

START_TEST(read_answers_the_leaf_as_etcd_has_it)
{
    ck_assert(get("map/cold/2-00000001"));
    int64_t mod = T.mod;
    ask(0, LEAF_READ, Q1, 2, 0, 0, 7);
    wait_replies(1);
    ck_assert_int_eq(reply(0)->u.reply.status, LEAF_ST_OK);
    ck_assert(reply(0)->u.reply.exists);
    ck_assert_uint_eq(reply(0)->u.reply.owner, 1);
    ck_assert_uint_eq(reply(0)->u.reply.state, CMAP_SERVING);
    ck_assert_int_eq(reply(0)->u.reply.at, mod);
    ck_assert_uint_eq(T.cookies[0], 7);
    /* a leaf etcd does not have */
    ask(0, LEAF_READ, 0, 3, 0, 0, 8);
    wait_replies(2);
    ck_assert_int_eq(reply(1)->u.reply.status, LEAF_ST_OK);
    ck_assert(!reply(1)->u.reply.exists);
}
END_TEST

START_TEST(split_at_the_epoch_replaces_the_leaf_by_its_halves)
{
    ck_assert(get("map/cold/2-00000001"));
    ask(0, LEAF_SPLIT, Q1, 2, T.mod, 0, 1);
    wait_replies(1);
    ck_assert_int_eq(reply(0)->u.reply.status, LEAF_ST_OK);
    ck_assert_int_gt(reply(0)->u.reply.epoch, T.mod);
    ck_assert(!get("map/cold/2-00000001"));
    ck_assert(get("map/cold/3-00000002"));
    ck_assert_str_eq(T.val, "{\"owner\":1,\"state\":\"serving\"}");
    ck_assert(get("map/cold/3-00000003"));
    ck_assert_int_eq(T.mod, reply(0)->u.reply.epoch);
}
END_TEST

START_TEST(split_at_a_stale_epoch_is_lost_with_the_truth)
{
    ck_assert(get("map/cold/2-00000001"));
    int64_t mod = T.mod;
    ask(0, LEAF_SPLIT, Q1, 2, mod - 1, 0, 1);
    wait_replies(1);
    ck_assert_int_eq(reply(0)->u.reply.status, LEAF_ST_LOST);
    ck_assert(reply(0)->u.reply.exists);
    ck_assert_int_eq(reply(0)->u.reply.at, mod);
    ck_assert(get("map/cold/2-00000001")); /* untouched */
    ck_assert_int_eq(T.mod, mod);
}
END_TEST

START_TEST(intent_then_commit_moves_the_leaf)
{
    ck_assert(get("map/cold/2-00000001"));
    ask(0, LEAF_INTENT, Q1, 2, T.mod, 2, 1);
    wait_replies(1);
    ck_assert_int_eq(reply(0)->u.reply.status, LEAF_ST_OK);
    ck_assert_uint_eq(reply(0)->u.reply.state, CMAP_MOVING);
    ck_assert_uint_eq(reply(0)->u.reply.owner, 1);
    ck_assert_uint_eq(reply(0)->u.reply.to, 2);
    int64_t e1 = reply(0)->u.reply.epoch;
    ck_assert(get("map/cold/2-00000001"));
    ck_assert_str_eq(T.val, "{\"owner\":1,\"state\":\"moving\",\"to\":2}");
    ck_assert(get("moves/cold/2-00000001"));
    ck_assert_str_eq(T.val, "{\"from\":1,\"to\":2,\"slot\":0}");
    ck_assert(get("slots/h1/cold/1/0"));
    /* the target's owner commits (the source asks in the protocol; any asker of the pool) */
    ask(0, LEAF_COMMIT, Q1, 2, e1, 2, 2);
    wait_replies(2);
    ck_assert_int_eq(reply(1)->u.reply.status, LEAF_ST_OK);
    ck_assert_uint_eq(reply(1)->u.reply.owner, 2);
    ck_assert(get("map/cold/2-00000001"));
    ck_assert_str_eq(T.val, "{\"owner\":2,\"state\":\"serving\"}");
    ck_assert(!get("moves/cold/2-00000001"));
    ck_assert(!get("slots/h1/cold/1/0"));
}
END_TEST

START_TEST(intent_then_abort_gives_the_leaf_back)
{
    ck_assert(get("map/cold/2-00000000"));
    ask(0, LEAF_INTENT, 0, 2, T.mod, 2, 1);
    wait_replies(1);
    ck_assert_int_eq(reply(0)->u.reply.status, LEAF_ST_OK);
    ask(0, LEAF_ABORT, 0, 2, reply(0)->u.reply.epoch, 2, 2);
    wait_replies(2);
    ck_assert_int_eq(reply(1)->u.reply.status, LEAF_ST_OK);
    ck_assert_uint_eq(reply(1)->u.reply.owner, 1);
    ck_assert(get("map/cold/2-00000000"));
    ck_assert_str_eq(T.val, "{\"owner\":1,\"state\":\"serving\"}");
    ck_assert(!get("moves/cold/2-00000000"));
    ck_assert(!get("slots/h1/cold/1/0"));
}
END_TEST

START_TEST(a_target_takes_two_moves_in_at_most)
{
    for (uint32_t i = 0; i < 3; i++) {
        char tail[64];
        snprintf(tail, sizeof(tail), "map/cold/2-%08x", i);
        ck_assert(get(tail));
        ask(0, LEAF_INTENT, i << 30, 2, T.mod, 2, 10 + i);
        wait_replies((int)i + 1);
    }
    ck_assert_int_eq(reply(0)->u.reply.status, LEAF_ST_OK);
    ck_assert_int_eq(reply(1)->u.reply.status, LEAF_ST_OK);
    ck_assert_int_eq(reply(2)->u.reply.status, LEAF_ST_REFUSED);
    ck_assert_str_eq(T.texts[2], "the target owner has no free slot (2 moves in)");
    ck_assert(get("slots/h1/cold/1/0"));
    ck_assert(get("slots/h1/cold/1/1"));
    ck_assert(get("map/cold/2-00000002"));
    ck_assert_str_eq(T.val, "{\"owner\":1,\"state\":\"serving\"}"); /* the third stays */
}
END_TEST

START_TEST(what_cannot_be_tried_is_refused)
{
    ck_assert(get("map/cold/2-00000001"));
    ask(0, LEAF_INTENT, Q1, 2, T.mod, 3, 1); /* owner 3 is of the hot pool */
    ask(0, LEAF_INTENT, Q1, 2, T.mod, 1, 2); /* to itself */
    ask(5, LEAF_READ, Q1, 2, 0, 0, 3);       /* no owner cold/5 on this host */
    ask(0, LEAF_READ, Q1 | 1, 2, 0, 0, 4);   /* malformed leaf */
    wait_replies(4);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(reply(i)->u.reply.status, LEAF_ST_REFUSED);
        ck_assert_uint_eq(T.cookies[i], (uint64_t)(i + 1)); /* in arrival order */
    }
    ck_assert_str_eq(T.texts[0], "the target is no other owner of the pool");
    ck_assert_str_eq(T.texts[2], "the asking owner is not in the map (or asks for another pool)");
    ck_assert_str_eq(T.texts[3], "malformed leaf");
    ck_assert(get("map/cold/2-00000001"));
    ck_assert_str_eq(T.val, "{\"owner\":1,\"state\":\"serving\"}");
}
END_TEST

START_TEST(an_intent_without_a_lease_is_refused)
{
    T.f.a.h.lease_id = 0;
    ck_assert(get("map/cold/2-00000001"));
    ask(0, LEAF_INTENT, Q1, 2, T.mod, 2, 1);
    wait_replies(1);
    ck_assert_int_eq(reply(0)->u.reply.status, LEAF_ST_REFUSED);
    ck_assert_str_eq(T.texts[0], "this host holds no lease yet");
    ck_assert(!get("moves/cold/2-00000001"));
}
END_TEST

START_TEST(without_a_map_everything_is_refused)
{
    ask(0, LEAF_READ, 0, 0, 0, 0, 1);
    wait_replies(1);
    ck_assert_int_eq(reply(0)->u.reply.status, LEAF_ST_REFUSED);
    ck_assert_str_eq(T.texts[0], "this host has no cluster map yet");
}
END_TEST

START_TEST(past_the_queue_bound_a_request_is_refused_at_once)
{
    for (int i = 0; i < AGENT_LEAF_QUEUE + 3; i++)
        ask(0, LEAF_READ, Q1, 2, 0, 0, (uint64_t)i);
    /* the chains run on the loop; the ones over the bound were answered at once */
    int refused = 0;
    for (int i = 0; i < T.nreplies; i++)
        refused += reply(i)->u.reply.status == LEAF_ST_REFUSED;
    ck_assert_int_eq(refused, 3);
    ck_assert_int_eq(T.nreplies, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_uint_ge(T.cookies[i], AGENT_LEAF_QUEUE); /* the last three */
    wait_replies(AGENT_LEAF_QUEUE + 3); /* the queued ones are all answered, in order */
    for (int i = 3; i < T.nreplies; i++) {
        ck_assert_int_eq(reply(i)->u.reply.status, LEAF_ST_OK);
        ck_assert_uint_eq(T.cookies[i], (uint64_t)(i - 3));
    }
}
END_TEST

/* ---- the in-sync set ------------------------------------------------------------- */

#define V_ISR2 "{\"owner\":1,\"state\":\"serving\",\"isr\":[2]}"

/* Owner 1 adds owner 2 to leaf Q1's set: the new epoch. */
static int64_t add_2(int *n)
{
    ck_assert(get("map/cold/2-00000001"));
    ask(0, LEAF_ISR_ADD, Q1, 2, T.mod, 2, 50 + (uint64_t)*n);
    wait_replies(++*n);
    ck_assert_int_eq(reply(*n - 1)->u.reply.status, LEAF_ST_OK);
    ck_assert(get("map/cold/2-00000001"));
    ck_assert_str_eq(T.val, V_ISR2);
    ck_assert_int_eq(T.mod, reply(*n - 1)->u.reply.epoch);
    return T.mod;
}

START_TEST(isr_add_and_del_are_cases_on_the_epoch)
{
    int n = 0;
    ck_assert(get("map/cold/2-00000001"));
    int64_t e0 = T.mod;
    int64_t e1 = add_2(&n);
    ck_assert_int_gt(e1, e0);
    ck_assert_uint_eq(reply(0)->u.reply.owner, 1);
    ck_assert_uint_eq(reply(0)->u.reply.state, CMAP_SERVING);
    ck_assert_uint_eq(T.f.a.h.repl_isr_adds, 1);
    /* the old epoch: lost, with the truth */
    ask(0, LEAF_ISR_ADD, Q1, 2, e0, 2, 1);
    wait_replies(++n);
    ck_assert_int_eq(reply(n - 1)->u.reply.status, LEAF_ST_LOST);
    ck_assert_int_eq(reply(n - 1)->u.reply.at, e1);
    /* twice: refused */
    ask(0, LEAF_ISR_ADD, Q1, 2, e1, 2, 2);
    wait_replies(++n);
    ck_assert_int_eq(reply(n - 1)->u.reply.status, LEAF_ST_REFUSED);
    ck_assert_str_eq(T.texts[n - 1], "the follower is in the in-sync set already");
    /* a move's intent and abort keep the set */
    ask(0, LEAF_INTENT, Q1, 2, e1, 2, 3);
    wait_replies(++n);
    ck_assert_int_eq(reply(n - 1)->u.reply.status, LEAF_ST_OK);
    ck_assert(get("map/cold/2-00000001"));
    ck_assert_str_eq(T.val, "{\"owner\":1,\"state\":\"moving\",\"to\":2,\"isr\":[2]}");
    ask(0, LEAF_ABORT, Q1, 2, reply(n - 1)->u.reply.epoch, 2, 4);
    wait_replies(++n);
    ck_assert_int_eq(reply(n - 1)->u.reply.status, LEAF_ST_OK);
    ck_assert(get("map/cold/2-00000001"));
    ck_assert_str_eq(T.val, V_ISR2);
    /* removal: at the epoch, of a member */
    int64_t e2 = T.mod;
    ask(1, LEAF_ISR_DEL, Q1, 2, e1, 2, 5); /* stale */
    ask(1, LEAF_ISR_DEL, Q1, 2, e2, 2, 6); /* the follower leaves itself */
    ask(0, LEAF_ISR_DEL, Q1, 2, e2, 2, 7); /* that epoch is gone now */
    n += 3;
    wait_replies(n);
    ck_assert_int_eq(reply(n - 3)->u.reply.status, LEAF_ST_LOST);
    ck_assert_int_eq(reply(n - 2)->u.reply.status, LEAF_ST_OK);
    ck_assert_int_eq(reply(n - 1)->u.reply.status, LEAF_ST_LOST);
    ck_assert(get("map/cold/2-00000001"));
    ck_assert_str_eq(T.val, "{\"owner\":1,\"state\":\"serving\"}");
    ask(0, LEAF_ISR_DEL, Q1, 2, T.mod, 2, 8);
    wait_replies(++n);
    ck_assert_int_eq(reply(n - 1)->u.reply.status, LEAF_ST_REFUSED);
    ck_assert_str_eq(T.texts[n - 1], "the follower is not in the in-sync set");
    ck_assert_uint_eq(T.f.a.h.repl_isr_removals, 1);
}
END_TEST

START_TEST(a_commit_and_a_split_empty_the_set)
{
    int n = 0;
    int64_t e = add_2(&n);
    ask(0, LEAF_SPLIT, Q1, 2, e, 0, 1);
    wait_replies(++n);
    ck_assert_int_eq(reply(n - 1)->u.reply.status, LEAF_ST_OK);
    ck_assert(get("map/cold/3-00000002"));
    ck_assert_str_eq(T.val, "{\"owner\":1,\"state\":\"serving\"}");
    ck_assert(get("map/cold/3-00000003"));
    ck_assert_str_eq(T.val, "{\"owner\":1,\"state\":\"serving\"}");
    /* leaf 0: added, moved to 2 and committed: 2's own followers come later */
    ck_assert(get("map/cold/2-00000000"));
    ask(0, LEAF_ISR_ADD, 0, 2, T.mod, 2, 2);
    wait_replies(++n);
    ck_assert_int_eq(reply(n - 1)->u.reply.status, LEAF_ST_OK);
    ask(0, LEAF_INTENT, 0, 2, reply(n - 1)->u.reply.epoch, 2, 3);
    wait_replies(++n);
    ck_assert_int_eq(reply(n - 1)->u.reply.status, LEAF_ST_OK);
    ask(0, LEAF_COMMIT, 0, 2, reply(n - 1)->u.reply.epoch, 2, 4);
    wait_replies(++n);
    ck_assert_int_eq(reply(n - 1)->u.reply.status, LEAF_ST_OK);
    ck_assert(get("map/cold/2-00000000"));
    ck_assert_str_eq(T.val, "{\"owner\":2,\"state\":\"serving\"}");
}
END_TEST

START_TEST(an_isr_add_that_cannot_be_tried_is_refused)
{
    ck_assert(get("map/cold/2-00000001"));
    ask(1, LEAF_ISR_ADD, Q1, 2, T.mod, 2, 1); /* owner 2 is no primary of it */
    ask(0, LEAF_ISR_ADD, Q1, 2, T.mod, 3, 2); /* a hot owner */
    ask(0, LEAF_ISR_ADD, Q1, 2, T.mod, 1, 3); /* the primary itself */
    wait_replies(3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(reply(i)->u.reply.status, LEAF_ST_REFUSED);
    ck_assert_str_eq(T.texts[0], "the asking owner is not the leaf's primary");
    ck_assert_str_eq(T.texts[1], "the follower is no other owner of the pool");
    ck_assert_str_eq(T.texts[2], "the follower is no other owner of the pool");
    /* a follower whose registration is gone */
    T.f.t->owners[2].live = 0;
    ck_assert_int_eq(cmap_publish(T.f.ctx.cmap, T.f.t), HKV_OK);
    ask(0, LEAF_ISR_ADD, Q1, 2, T.mod, 2, 4);
    wait_replies(4);
    ck_assert_int_eq(reply(3)->u.reply.status, LEAF_ST_REFUSED);
    ck_assert_str_eq(T.texts[3], "the follower is not live");
    /* live in this host's map but its members/ key is gone from etcd: the CAS fails */
    T.f.t->owners[2].live = 1;
    ck_assert_int_eq(cmap_publish(T.f.ctx.cmap, T.f.t), HKV_OK);
    char k[AGENT_KEY_MAX];
    int kl = agent_key(k, sizeof(k), "c1", "members/h1/cold/1");
    T.f.done = 0;
    ck_assert_int_eq(etcd_delete(T.f.a.etcd, k, (size_t)kl, NULL, 0, af_on_sync, &T.f), HKV_OK);
    af_wait(&T.f, &T.f.done);
    ask(0, LEAF_ISR_ADD, Q1, 2, T.mod, 2, 5);
    wait_replies(5);
    ck_assert_int_eq(reply(4)->u.reply.status, LEAF_ST_LOST);
    ck_assert(get("map/cold/2-00000001"));
    ck_assert_str_eq(T.val, "{\"owner\":1,\"state\":\"serving\"}");
}
END_TEST

Suite *agent_leaf_suite(void)
{
    Suite *s = suite_create("agent_leaf");
    TCase *tc = tcase_create("txns");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, read_answers_the_leaf_as_etcd_has_it);
    tcase_add_test(tc, split_at_the_epoch_replaces_the_leaf_by_its_halves);
    tcase_add_test(tc, split_at_a_stale_epoch_is_lost_with_the_truth);
    tcase_add_test(tc, intent_then_commit_moves_the_leaf);
    tcase_add_test(tc, intent_then_abort_gives_the_leaf_back);
    tcase_add_test(tc, a_target_takes_two_moves_in_at_most);
    suite_add_tcase(s, tc);
    tc = tcase_create("isr");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, isr_add_and_del_are_cases_on_the_epoch);
    tcase_add_test(tc, a_commit_and_a_split_empty_the_set);
    tcase_add_test(tc, an_isr_add_that_cannot_be_tried_is_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("refused");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, what_cannot_be_tried_is_refused);
    tcase_add_test(tc, an_intent_without_a_lease_is_refused);
    tcase_add_test(tc, past_the_queue_bound_a_request_is_refused_at_once);
    suite_add_tcase(s, tc);
    tc = tcase_create("no map");
    tcase_add_checked_fixture(tc, setup_bare, teardown);
    tcase_add_test(tc, without_a_map_everything_is_refused);
    suite_add_tcase(s, tc);
    return s;
}
