/*
 * check_owner_cluster.c - an owner in a cluster (server/owner/owner_own.c,
 * the HELLO checks of owner_link.c): it finds its number in the cluster map
 * and serves only the leaves the map gives it, answering MOVED {leaf, bits,
 * epoch, owner number} for the rest (plain requests and CALL alike); SCAN
 * shows only keys of its leaves; a map change takes effect within the poll;
 * the ownership table is stored through the persister and a restart with no
 * map serves from it; HELLO for another cluster, another owner number, or a
 * single host's HELLO is refused; a single-host owner refuses a cluster's
 * HELLO.
 *
 * Built like check_owner_call.c: a real owner (owner_init + owner_open on a
 * temp dir) whose worker context points at a real cluster map segment the
 * test publishes to, and fake edge links (bufferevent pairs).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "config/cfg.h"
#include "proto/wire.h"
#include "server/core/cmap.h"
#include "server/core/log.h"
#include "server/core/router.h"
#include "server/owner/owner_int.h"
#include "tests/harness.h"
#include "tests/unit/fake_edge.h"
#include "tests/unit/owner_fixture.h"
#include "tests/unit/cluster_fixture.h"

#define WAIT_MS 5000
#define ME 7      /* this owner: h2/hot/0 */
#define OTHER 8   /* h3/hot/0 */

static char dir[256];
static struct worker_ctx ctx;
static struct owner own;
static int have_owner;
static struct cmap *seg;

static struct fake_edge F;

/* The map at revision rev: hot in 2^6 leaves dealt ME, OTHER, ME, OTHER ...
 * (or all to `all` if not 0). */
static struct cmap_table *map(int64_t rev, unsigned all)
{
    struct cmap_table *t = cf_new(rev);
    cf_owner(t, ME, CFG_POOL_HOT, 0, "h2", "10.0.0.2", 7100);
    cf_owner(t, OTHER, CFG_POOL_HOT, 0, "h3", "10.0.0.3", 7100);
    unsigned two[] = {ME, OTHER}, one[] = {all};
    cf_deal(t, CFG_POOL_HOT, 6, all ? one : two, all ? 1 : 2, rev);
    cf_valid(t);
    return t;
}

static void publish(struct cmap_table *t)
{
    ck_assert_int_eq(cmap_publish(seg, t), HKV_OK);
    free(t);
}


/* An owner of cluster "prod" on host h2 (hot owner 0), following `seg`
 * (NULL: no map segment at all). */
static void start_owner(const char *cluster, struct cmap *with)
{
    char text[1024], named[128] = "";
    if (cluster[0] != '\0')
        snprintf(named, sizeof(named), "cluster %s\nhost h2\n", cluster);
    snprintf(text, sizeof(text),
             "dir %s\n%shot-owners 1\ncold-owners 0\npersist-interval 50ms\n"
             "class default pool hot fresh 1s keep 60s durability ledger\n",
             dir, named);
    of_start(&own, &ctx, text, "own.conf", with);
    have_owner = 1;
    memset(&F, 0, sizeof(F));
    fe_close(&F);
    fe_open(&own, &F, 1);
}

static void stop_owner(void)
{
    if (!have_owner)
        return;
    fe_close(&F);
    of_stop(&own, &ctx);
    have_owner = 0;
}

static void setup(void)
{
    log_setup(CFG_LOG_WARNING, NULL);
    h_tmpdir(dir, sizeof(dir));
    seg = cmap_create();
    ck_assert_ptr_nonnull(seg);
}

static void teardown(void)
{
    stop_owner();
    cmap_destroy(&seg);
    h_rmtree(dir);
}

/* Runs the owner's loop for ms (its 20 ms map poll included). */
static void run_ms(int ms)
{
    of_run_ms(&own, ms);
}

static void hello_as(struct fake_edge *f, const char *cluster, uint32_t want, struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_hello_cluster cl = {wire_cstr(cluster), want, wire_cstr("h1")};
    ck_assert_int_eq(wire_put_hello_cluster(&b, ++f->id, WIRE_VERSION, (3u << 12) | 1,
                                            wire_cstr("a"), WIRE_ROLE_WRITE, 55, &cl),
                     HKV_OK);
    fe_send(f, &b);
    buf_deinit(&b);
    fe_wait_reply(&own, f, m, WAIT_MS);
    ck_assert_uint_eq(m->id, f->id);
}

static void hello_ok(struct fake_edge *f)
{
    struct wire_msg m;
    hello_as(f, "prod", ME, &m);
    ck_assert_msg(m.type == WIRE_HELLO_OK, "HELLO answered %s: %.*s", wire_type_name(m.type),
                  m.type == WIRE_ERROR ? (int)m.u.error.text.len : 0,
                  m.type == WIRE_ERROR ? m.u.error.text.p : "");
    ck_assert_uint_eq(m.u.hello_ok.owner_id, ME);
}

static void assert_refused(struct fake_edge *f, const struct wire_msg *m, const char *text)
{
    ck_assert_uint_eq(m->type, WIRE_ERROR);
    ck_assert_int_eq(m->u.error.code, HKV_EPROTO);
    char got[256];
    snprintf(got, sizeof(got), "%.*s", (int)m->u.error.text.len, m->u.error.text.p);
    ck_assert_msg(strstr(got, text) != NULL, "refusal '%s' does not say '%s'", got, text);
    run_ms(50);
    int open = 0; /* (a bufferevent pair tells the other end nothing when one is freed) */
    for (struct olink *x = own.links; x != NULL; x = x->next)
        open |= x == f->l;
    ck_assert_msg(!open, "the refused link stays open");
}

/* A key whose hot leaf (6 bits) is dealt to `owner` by map(). */
static const char *key_of(unsigned owner, int nth)
{
    static char k[32];
    for (int i = 0, seen = 0; i < 100000; i++) {
        snprintf(k, sizeof(k), "k%d", i);
        uint32_t leaf = (uint32_t)(router_place(k, strlen(k)) >> 58);
        if ((leaf % 2 == 0 ? ME : OTHER) == owner && seen++ == nth)
            return k;
    }
    ck_abort_msg("no key found");
    return NULL;
}

static void set(struct fake_edge *f, const char *key, struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_rid rid = {++f->seq, 1, 0};
    ck_assert_int_eq(wire_put_set(&b, ++f->id, wire_cstr(key), wire_cstr("v"), rid,
                                  (struct wire_expiry){0, 0}, 0), HKV_OK);
    fe_send(f, &b);
    buf_deinit(&b);
    fe_wait_reply(&own, f, m, WAIT_MS);
    ck_assert_uint_eq(m->id, f->id);
}

static void get(struct fake_edge *f, const char *key, struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_slice k = wire_cstr(key);
    ck_assert_int_eq(wire_put_get(&b, ++f->id, &k, 1), HKV_OK);
    fe_send(f, &b);
    buf_deinit(&b);
    fe_wait_reply(&own, f, m, WAIT_MS);
    ck_assert_uint_eq(m->id, f->id);
}

static void assert_moved(const struct wire_msg *m, const char *key, int64_t epoch, unsigned to)
{
    ck_assert_msg(m->type == WIRE_MOVED, "expected MOVED, got %s", wire_type_name(m->type));
    ck_assert_uint_eq(m->u.moved.leaf, (uint32_t)(router_place(key, strlen(key)) >> 58));
    ck_assert_uint_eq(m->u.moved.leaf_bits, 6);
    ck_assert_uint_eq(m->u.moved.map_gen, (uint64_t)epoch);
    ck_assert_uint_eq(m->u.moved.owner, to);
}

START_TEST(serves_its_leaves_and_answers_moved_with_epoch_and_owner_for_others)
{
    publish(map(40, 0));
    start_owner("prod", seg);
    hello_ok(&F);
    struct wire_msg m;
    const char *mine = key_of(ME, 0);
    set(&F, mine, &m);
    ck_assert_uint_eq(m.type, WIRE_OK);
    get(&F, mine, &m);
    ck_assert_uint_eq(m.type, WIRE_VALUE);
    char other[32];
    snprintf(other, sizeof(other), "%s", key_of(OTHER, 0));
    set(&F, other, &m);
    assert_moved(&m, other, 40, OTHER);
    get(&F, other, &m);
    assert_moved(&m, other, 40, OTHER);
    /* a Redis command carried by CALL is routed by its keys too */
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_slice args[] = {wire_cstr("APPEND"), wire_cstr(other), wire_cstr("x")};
    ck_assert_int_eq(wire_put_call(&b, ++F.id, (struct wire_rid){++F.seq, 1, 0}, 2, args, 3),
                     HKV_OK);
    fe_send(&F, &b);
    buf_deinit(&b);
    fe_wait_reply(&own, &F, &m, WAIT_MS);
    assert_moved(&m, other, 40, OTHER);
    ck_assert_uint_eq(owner_own_number(&own), ME);
    ck_assert_uint_eq(owner_own_leaves(&own), 32);
}
END_TEST

START_TEST(a_map_change_moves_leaves_within_the_poll)
{
    publish(map(40, ME)); /* every leaf is ours */
    start_owner("prod", seg);
    hello_ok(&F);
    struct wire_msg m;
    char other[32];
    snprintf(other, sizeof(other), "%s", key_of(OTHER, 0));
    set(&F, other, &m);
    ck_assert_uint_eq(m.type, WIRE_OK);
    /* revision 45 gives half of them (epoch 45) to OTHER */
    publish(map(45, 0));
    run_ms(200);
    get(&F, other, &m);
    assert_moved(&m, other, 45, OTHER);
    ck_assert_int_eq(owner_own_revision(&own), 45);
}
END_TEST

/* An edge may route from a revision newer than the owner's last poll: the
 * owner looks at the map again before it refuses a HELLO or a key. */
START_TEST(a_map_newer_than_the_last_poll_is_read_before_refusing)
{
    struct cmap_table *t = map(40, OTHER); /* every leaf is OTHER's; ME has none */
    publish(t);
    start_owner("prod", seg);
    owner_own_test_stop_poll(&own);
    hello_ok(&F);
    ck_assert_uint_eq(owner_own_leaves(&own), 0);
    publish(map(41, ME)); /* now every leaf is ours; the poll will not see it */
    struct wire_msg m;
    set(&F, key_of(OTHER, 3), &m);
    ck_assert_msg(m.type == WIRE_OK, "a key of a leaf the map gives the owner was answered %s",
                  wire_type_name(m.type));
    ck_assert_int_eq(owner_own_revision(&own), 41);
}
END_TEST

START_TEST(scan_shows_only_keys_of_its_leaves)
{
    publish(map(40, ME));
    start_owner("prod", seg);
    hello_ok(&F);
    struct wire_msg m;
    char mine[32], other[32];
    snprintf(mine, sizeof(mine), "%s", key_of(ME, 1));
    snprintf(other, sizeof(other), "%s", key_of(OTHER, 1));
    set(&F, mine, &m);
    set(&F, other, &m);
    publish(map(41, 0));
    run_ms(200);
    struct hkv_buf b = HKV_BUF_INIT;
    ck_assert_int_eq(wire_put_scan(&b, ++F.id, 0, 1000, NULL), HKV_OK);
    fe_send(&F, &b);
    buf_deinit(&b);
    fe_wait_reply(&own, &F, &m, WAIT_MS);
    ck_assert_uint_eq(m.type, WIRE_SCAN_REPLY);
    ck_assert_uint_eq(m.u.scan_reply.nkeys, 1);
    ck_assert_uint_eq(m.u.scan_reply.keys[0].len, strlen(mine));
    ck_assert(memcmp(m.u.scan_reply.keys[0].p, mine, strlen(mine)) == 0);
}
END_TEST

START_TEST(restart_without_a_map_serves_from_the_stored_ownership_table)
{
    publish(map(50, 0));
    start_owner("prod", seg);
    hello_ok(&F);
    struct wire_msg m;
    char mine[32], other[32];
    snprintf(mine, sizeof(mine), "%s", key_of(ME, 2));
    snprintf(other, sizeof(other), "%s", key_of(OTHER, 2));
    set(&F, mine, &m);
    ck_assert_uint_eq(m.type, WIRE_OK);
    run_ms(300); /* the table is committed by the persister */
    stop_owner();

    /* the agent has not published anything yet */
    struct cmap *empty = cmap_create();
    ck_assert_ptr_nonnull(empty);
    start_owner("prod", empty);
    ck_assert_uint_eq(owner_own_number(&own), ME);
    ck_assert_uint_eq(owner_own_leaves(&own), 32);
    hello_ok(&F); /* its number comes from the stored table */
    get(&F, mine, &m);
    ck_assert_uint_eq(m.type, WIRE_VALUE);
    get(&F, other, &m);
    ck_assert_uint_eq(m.type, WIRE_ERROR);
    ck_assert_int_eq(m.u.error.code, HKV_EAGAIN);
    /* the map arrives: MOVED from then on */
    struct cmap_table *t = map(51, 0);
    ck_assert_int_eq(cmap_publish(empty, t), HKV_OK);
    free(t);
    run_ms(200);
    get(&F, other, &m);
    assert_moved(&m, other, 51, OTHER);
    stop_owner();
    cmap_destroy(&empty);
}
END_TEST

START_TEST(a_stored_table_of_another_cluster_is_not_served)
{
    publish(map(50, 0));
    start_owner("prod", seg);
    run_ms(300);
    stop_owner();
    start_owner("test", NULL);
    ck_assert_uint_eq(owner_own_leaves(&own), 0);
    struct wire_msg m;
    hello_as(&F, "test", ME, &m);
    assert_refused(&F, &m, "does not know its number");
}
END_TEST

START_TEST(hello_for_another_cluster_is_refused)
{
    publish(map(40, 0));
    start_owner("prod", seg);
    struct wire_msg m;
    hello_as(&F, "staging", ME, &m);
    assert_refused(&F, &m, "cluster 'staging'");
}
END_TEST

START_TEST(hello_for_another_owner_number_is_refused)
{
    publish(map(40, 0));
    start_owner("prod", seg);
    struct wire_msg m;
    hello_as(&F, "prod", OTHER, &m);
    assert_refused(&F, &m, "this is owner 7");
    fe_close(&F);
    fe_open(&own, &F, 1);
    hello_as(&F, "prod", 0, &m); /* a single host's HELLO */
    assert_refused(&F, &m, "wants owner 0");
}
END_TEST

START_TEST(single_host_owner_refuses_a_cluster_hello)
{
    start_owner("", NULL);
    ck_assert_ptr_null(own.own);
    struct wire_msg m;
    hello_as(&F, "prod", 0, &m);
    assert_refused(&F, &m, "no cluster");
    fe_close(&F);
    fe_open(&own, &F, 1);
    hello_as(&F, "", 3, &m);
    assert_refused(&F, &m, "not in a cluster");
    fe_close(&F);
    fe_open(&own, &F, 1);
    hello_as(&F, "", 0, &m);
    ck_assert_uint_eq(m.type, WIRE_HELLO_OK);
    ck_assert_uint_eq(m.u.hello_ok.owner_id, 0);
}
END_TEST

Suite *owner_cluster_suite(void)
{
    Suite *s = suite_create("owner_cluster");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"moved", serves_its_leaves_and_answers_moved_with_epoch_and_owner_for_others},
        {"map_change", a_map_change_moves_leaves_within_the_poll},
        {"map_before_refusal", a_map_newer_than_the_last_poll_is_read_before_refusing},
        {"scan", scan_shows_only_keys_of_its_leaves},
        {"stored_table", restart_without_a_map_serves_from_the_stored_ownership_table},
        {"stored_other_cluster", a_stored_table_of_another_cluster_is_not_served},
        {"hello_cluster", hello_for_another_cluster_is_refused},
        {"hello_number", hello_for_another_owner_number_is_refused},
        {"hello_single_host", single_host_owner_refuses_a_cluster_hello},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
