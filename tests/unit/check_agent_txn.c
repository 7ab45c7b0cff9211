/* check_agent_txn.c - the leaf transactions (server/agent/agent_txn.h) as the
 * etcd txns they build, no etcd: a leaf's keys and their names, then each
 * builder's compares, success operations and failure branch, written out as
 * one line each ("MOD == 7 map/cold/2-40000000") and compared with the
 * protocol of CLUSTER.md §5: split, intent, commit, abort; the values a
 * move writes and reads back; and what every builder refuses. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "config/cfg.h"
#include "proto/hkv.h"
#include "server/agent/agent_txn.h"
#include "server/core/cmap.h"

#define C "c1"
#define P "/hotkvd/c1/"

static struct agent_txn T;
static const struct agent_leaf_v NOW = {0}; /* the leaf had no in-sync set */

/* A key without the cluster's prefix (every key of a txn has it). */
static void tail(char *out, size_t cap, const char *k, size_t n)
{
    ck_assert_uint_ge(n, strlen(P));
    ck_assert_int_eq(strncmp(k, P, strlen(P)), 0);
    snprintf(out, cap, "%.*s", (int)(n - strlen(P)), k + strlen(P));
}

static const char *cmp_line(const struct etcd_cmp *c, char *buf, size_t cap)
{
    static const char *const target[] = {"MOD", "CREATE", "VERSION", "VALUE"};
    static const char *const rel[] = {"==", ">", "<", "!="};
    char k[AGENT_KEY_MAX];
    tail(k, sizeof(k), c->key, c->klen);
    snprintf(buf, cap, "%s %s %lld %s", target[c->target], rel[c->result], (long long)c->n, k);
    return buf;
}

static const char *op_line(const struct etcd_op *o, char *buf, size_t cap)
{
    char k[AGENT_KEY_MAX];
    tail(k, sizeof(k), o->key, o->klen);
    if (o->kind == ETCD_OP_PUT)
        snprintf(buf, cap, "PUT %s %.*s lease %lld", k, (int)o->vlen, o->value,
                 (long long)o->lease);
    else
        snprintf(buf, cap, "%s %s", o->kind == ETCD_OP_DELETE ? "DELETE" : "RANGE", k);
    return buf;
}

static void expect_cmps(const char *const *want, size_t n)
{
    char buf[1024];
    ck_assert_uint_eq(T.ncmp, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_str_eq(cmp_line(&T.cmp[i], buf, sizeof(buf)), want[i]);
}

static void expect_ok(const char *const *want, size_t n)
{
    char buf[2048];
    ck_assert_uint_eq(T.nok, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_str_eq(op_line(&T.ok[i], buf, sizeof(buf)), want[i]);
}

/* Every txn's failure branch reads the leaf back. */
static void expect_reads_back(const char *leaf)
{
    char buf[1024], want[256];
    ck_assert_uint_eq(T.nfail, 1);
    snprintf(want, sizeof(want), "RANGE %s", leaf);
    ck_assert_str_eq(op_line(&T.fail[0], buf, sizeof(buf)), want);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- a leaf's name ------------------------------------------------------------ */

START_TEST(a_leaf_is_named_by_its_bits_and_prefix)
{
    char k[AGENT_KEY_MAX];
    ck_assert_int_eq(agent_leaf_key(k, sizeof(k), C, "map", CFG_POOL_COLD, 0x40000000u, 2),
                     (int)strlen(P "map/cold/2-00000001"));
    ck_assert_str_eq(k, P "map/cold/2-00000001");
    ck_assert_int_gt(agent_leaf_key(k, sizeof(k), C, "moves", CFG_POOL_HOT, 0, 0), 0);
    ck_assert_str_eq(k, P "moves/hot/0-00000000");
    ck_assert_int_gt(agent_leaf_key(k, sizeof(k), C, "map", CFG_POOL_HOT, 0xabcd0000u, 16), 0);
    ck_assert_str_eq(k, P "map/hot/16-0000abcd");
}
END_TEST

START_TEST(a_malformed_leaf_has_no_key)
{
    char k[AGENT_KEY_MAX];
    /* a start with bits below the prefix set */
    ck_assert_int_eq(agent_leaf_key(k, sizeof(k), C, "map", CFG_POOL_COLD, 0x40000001u, 2), -1);
    ck_assert_int_eq(agent_leaf_key(k, sizeof(k), C, "map", CFG_POOL_COLD, 1, 0), -1);
    ck_assert_int_eq(agent_leaf_key(k, sizeof(k), C, "map", CFG_POOL_COLD, 0, CMAP_MAX_BITS + 1),
                     -1);
    ck_assert_int_eq(agent_leaf_key(k, sizeof(k), C, "map", 7, 0, 1), -1); /* no such pool */
    ck_assert_int_eq(agent_leaf_key(k, 10, C, "map", CFG_POOL_COLD, 0, 1), -1); /* too long */
}
END_TEST

START_TEST(a_leaf_name_parses_back_to_its_start)
{
    uint32_t start;
    int bits;
    ck_assert_int_eq(agent_leaf_parse("2-00000001", &start, &bits), HKV_OK);
    ck_assert_uint_eq(start, 0x40000000u);
    ck_assert_int_eq(bits, 2);
    ck_assert_int_eq(agent_leaf_parse("0-00000000", &start, &bits), HKV_OK);
    ck_assert_uint_eq(start, 0);
    ck_assert_int_eq(bits, 0);
    for (int b = 1; b <= CMAP_MAX_BITS; b += 5) { /* round trips */
        uint32_t s = (0x9e3779b9u >> (32 - b)) << (32 - b);
        char k[AGENT_KEY_MAX];
        ck_assert_int_gt(agent_leaf_key(k, sizeof(k), C, "map", CFG_POOL_COLD, s, b), 0);
        ck_assert_int_eq(agent_leaf_parse(k + strlen(P "map/cold/"), &start, &bits), HKV_OK);
        ck_assert_uint_eq(start, s);
        ck_assert_int_eq(bits, b);
    }
}
END_TEST

START_TEST(a_bad_leaf_name_is_refused)
{
    static const char *const bad[] = {
        "", "2", "2-", "2-1", "2-0000000g", "2-00000004" /* wider than 2 bits */,
        "2-000000011", "x-00000000", "2-00000001 ", "2-0000000A" /* upper case */,
    };
    uint32_t start = 7;
    int bits = 7;
    for (size_t i = 0; i < N(bad); i++)
        ck_assert_msg(agent_leaf_parse(bad[i], &start, &bits) == HKV_EINVAL, "took '%s'", bad[i]);
    ck_assert_uint_eq(start, 7); /* nothing written */
    ck_assert_int_eq(bits, 7);
}
END_TEST

/* ---- the four txns ----------------------------------------------------------- */

START_TEST(split_replaces_the_leaf_by_its_halves_if_nobody_moved_first)
{
    ck_assert_int_eq(agent_txn_split(&T, C, CFG_POOL_COLD, 0x40000000u, 2, 17, 3), HKV_OK);
    static const char *const cmps[] = {
        "MOD == 17 map/cold/2-00000001",
        "CREATE == 0 map/cold/3-00000002",
        "CREATE == 0 map/cold/3-00000003",
    };
    expect_cmps(cmps, N(cmps));
    static const char *const ok[] = {
        "DELETE map/cold/2-00000001",
        "PUT map/cold/3-00000002 {\"owner\":3,\"state\":\"serving\"} lease 0",
        "PUT map/cold/3-00000003 {\"owner\":3,\"state\":\"serving\"} lease 0",
    };
    expect_ok(ok, N(ok));
    expect_reads_back("map/cold/2-00000001");
}
END_TEST

START_TEST(the_root_splits_into_two_halves_of_one_bit)
{
    ck_assert_int_eq(agent_txn_split(&T, C, CFG_POOL_HOT, 0, 0, 1, 1), HKV_OK);
    char buf[512];
    ck_assert_str_eq(op_line(&T.ok[1], buf, sizeof(buf)),
                     "PUT map/hot/1-00000000 {\"owner\":1,\"state\":\"serving\"} lease 0");
    ck_assert_str_eq(op_line(&T.ok[2], buf, sizeof(buf)),
                     "PUT map/hot/1-00000001 {\"owner\":1,\"state\":\"serving\"} lease 0");
}
END_TEST

START_TEST(a_leaf_of_the_most_bits_does_not_split)
{
    uint32_t start = 1u << (32 - CMAP_MAX_BITS);
    ck_assert_int_eq(agent_txn_split(&T, C, CFG_POOL_COLD, start, CMAP_MAX_BITS, 5, 1),
                     HKV_EINVAL);
    ck_assert_int_eq(agent_txn_split(&T, C, CFG_POOL_COLD, 3, 2, 5, 1), HKV_EINVAL);
}
END_TEST

START_TEST(intent_marks_the_leaf_moving_and_takes_a_slot_under_the_lease)
{
    ck_assert_int_eq(agent_txn_intent(&T, C, CFG_POOL_COLD, 0x80000000u, 1, 40, 2, 5,
                                      "h2/cold/0", 1, 0x77, &NOW),
                     HKV_OK);
    static const char *const cmps[] = {
        "MOD == 40 map/cold/1-00000001",
        "VERSION > 0 members/h2/cold/0", /* the target is a live member */
        "CREATE == 0 slots/h2/cold/0/1", /* and its slot is free */
    };
    expect_cmps(cmps, N(cmps));
    char slot[160]; /* the slot says which leaf comes (the pool by its number) */
    snprintf(slot, sizeof(slot), "PUT slots/h2/cold/0/1 {\"pool\":%d,\"bits\":1,"
             "\"start\":2147483648} lease 119", CFG_POOL_COLD);
    const char *const ok[] = {
        "PUT map/cold/1-00000001 {\"owner\":2,\"state\":\"moving\",\"to\":5} lease 0",
        "PUT moves/cold/1-00000001 {\"from\":2,\"to\":5,\"slot\":1} lease 119",
        slot,
    };
    expect_ok(ok, N(ok));
    expect_reads_back("map/cold/1-00000001");
}
END_TEST

START_TEST(intent_refuses_a_move_that_makes_no_sense)
{
    /* to itself, to owner 0, a slot out of range, no lease */
    ck_assert_int_eq(agent_txn_intent(&T, C, CFG_POOL_COLD, 0, 1, 4, 2, 2, "h/cold/0", 0, 9, &NOW),
                     HKV_EINVAL);
    ck_assert_int_eq(agent_txn_intent(&T, C, CFG_POOL_COLD, 0, 1, 4, 2, 0, "h/cold/0", 0, 9, &NOW),
                     HKV_EINVAL);
    ck_assert_int_eq(agent_txn_intent(&T, C, CFG_POOL_COLD, 0, 1, 4, 2, 3, "h/cold/0",
                                      AGENT_SLOTS, 9, &NOW),
                     HKV_EINVAL);
    ck_assert_int_eq(agent_txn_intent(&T, C, CFG_POOL_COLD, 0, 1, 4, 2, 3, "h/cold/0", -1, 9, &NOW),
                     HKV_EINVAL);
    ck_assert_int_eq(agent_txn_intent(&T, C, CFG_POOL_COLD, 0, 1, 4, 2, 3, "h/cold/0", 0, 0, &NOW),
                     HKV_EINVAL);
    ck_assert_int_eq(agent_txn_intent(&T, C, CFG_POOL_COLD, 0, 1, 4, 2, 3, "h/cold/0", 0, 9, &NOW),
                     HKV_OK);
}
END_TEST

START_TEST(commit_gives_the_leaf_to_the_target_and_frees_the_slot)
{
    ck_assert_int_eq(agent_txn_commit(&T, C, CFG_POOL_COLD, 0x80000000u, 1, 41, 5, "h2/cold/0",
                                      1),
                     HKV_OK);
    static const char *const cmps[] = {
        "MOD == 41 map/cold/1-00000001",
        "VERSION > 0 members/h2/cold/0",
    };
    expect_cmps(cmps, N(cmps));
    static const char *const ok[] = {
        "PUT map/cold/1-00000001 {\"owner\":5,\"state\":\"serving\"} lease 0",
        "DELETE moves/cold/1-00000001",
        "DELETE slots/h2/cold/0/1",
    };
    expect_ok(ok, N(ok));
    expect_reads_back("map/cold/1-00000001");
}
END_TEST

START_TEST(commit_without_a_slot_deletes_only_the_move)
{
    ck_assert_int_eq(agent_txn_commit(&T, C, CFG_POOL_HOT, 0, 0, 9, 4, "h/hot/1", -1), HKV_OK);
    static const char *const ok[] = {
        "PUT map/hot/0-00000000 {\"owner\":4,\"state\":\"serving\"} lease 0",
        "DELETE moves/hot/0-00000000",
    };
    expect_ok(ok, N(ok));
    ck_assert_int_eq(agent_txn_commit(&T, C, CFG_POOL_HOT, 0, 0, 9, 0, "h/hot/1", -1),
                     HKV_EINVAL); /* to owner 0 */
}
END_TEST

START_TEST(abort_gives_the_leaf_back_to_its_source)
{
    ck_assert_int_eq(agent_txn_abort(&T, C, CFG_POOL_COLD, 0x80000000u, 1, 41, 2, "h2/cold/0", 0, &NOW),
                     HKV_OK);
    static const char *const cmps[] = {"MOD == 41 map/cold/1-00000001"};
    expect_cmps(cmps, N(cmps)); /* whatever became of the target */
    static const char *const ok[] = {
        "PUT map/cold/1-00000001 {\"owner\":2,\"state\":\"serving\"} lease 0",
        "DELETE moves/cold/1-00000001",
        "DELETE slots/h2/cold/0/0",
    };
    expect_ok(ok, N(ok));
    expect_reads_back("map/cold/1-00000001");
    /* the target unknown: only the move goes */
    ck_assert_int_eq(agent_txn_abort(&T, C, CFG_POOL_COLD, 0x80000000u, 1, 41, 2, NULL, 0, &NOW),
                     HKV_OK);
    ck_assert_uint_eq(T.nok, 2);
    ck_assert_int_eq(agent_txn_abort(&T, C, CFG_POOL_COLD, 0x80000000u, 1, 41, 0, NULL, 0, &NOW),
                     HKV_EINVAL);
}
END_TEST

START_TEST(every_key_and_value_points_into_the_txn)
{
    ck_assert_int_eq(agent_txn_intent(&T, C, CFG_POOL_COLD, 0x80000000u, 1, 40, 2, 5,
                                      "h2/cold/0", 1, 3, &NOW),
                     HKV_OK);
    const char *lo = (const char *)&T, *hi = lo + sizeof(T);
    for (size_t i = 0; i < T.ncmp; i++)
        ck_assert(T.cmp[i].key >= lo && T.cmp[i].key < hi);
    for (size_t i = 0; i < T.nok; i++) {
        ck_assert(T.ok[i].key >= lo && T.ok[i].key < hi);
        if (T.ok[i].kind == ETCD_OP_PUT)
            ck_assert(T.ok[i].value >= lo && T.ok[i].value < hi);
    }
    /* a builder starts the txn over */
    ck_assert_int_eq(agent_txn_abort(&T, C, CFG_POOL_COLD, 0x80000000u, 1, 41, 2, NULL, 0, &NOW),
                     HKV_OK);
    ck_assert_uint_eq(T.ncmp, 1);
    ck_assert_uint_eq(T.nfail, 1);
}
END_TEST

/* ---- the move's values ------------------------------------------------------ */

START_TEST(the_move_record_reads_back)
{
    ck_assert_int_eq(agent_txn_intent(&T, C, CFG_POOL_COLD, 0, 1, 4, 7, 9, "h/cold/2", 1, 5, &NOW),
                     HKV_OK);
    unsigned from = 0, to = 0;
    int slot = -1;
    ck_assert_int_eq(agent_parse_move(T.ok[1].value, T.ok[1].vlen, &from, &to, &slot), HKV_OK);
    ck_assert_uint_eq(from, 7);
    ck_assert_uint_eq(to, 9);
    ck_assert_int_eq(slot, 1);
}
END_TEST

START_TEST(a_bad_move_record_is_refused)
{
    static const char *const bad[] = {
        "", "{}", "[]", "{\"from\":1,\"to\":2}", "{\"from\":0,\"to\":2,\"slot\":0}",
        "{\"from\":1,\"to\":2,\"slot\":2}", "{\"from\":1,\"to\":\"x\",\"slot\":0}",
        "{\"from\":1,\"to\":2,\"slot\":-1}", "{\"from\":1,\"to\":2,\"slot\":0",
    };
    unsigned from = 0, to = 0;
    int slot = 0;
    for (size_t i = 0; i < N(bad); i++)
        ck_assert_msg(agent_parse_move(bad[i], strlen(bad[i]), &from, &to, &slot) == HKV_EINVAL,
                      "took '%s'", bad[i]);
}
END_TEST

START_TEST(an_operators_move_request_round_trips)
{
    char buf[64];
    unsigned to = 0;
    int n = agent_val_request(buf, sizeof(buf), 12);
    ck_assert_int_eq(n, (int)strlen("{\"to\":12}"));
    ck_assert_str_eq(buf, "{\"to\":12}");
    ck_assert_int_eq(agent_parse_request(buf, (size_t)n, &to), HKV_OK);
    ck_assert_uint_eq(to, 12);
    ck_assert_int_eq(agent_val_request(buf, 5, 12), -1);
    ck_assert_int_eq(agent_parse_request("{\"to\":0}", 8, &to), HKV_EINVAL);
    ck_assert_int_eq(agent_parse_request("{\"too\":3}", 9, &to), HKV_EINVAL);
    ck_assert_uint_eq(to, 12);
}
END_TEST

/* CLUSTER.md §7: an intent and an abort keep the set the leaf has (less the
 * primary, which is never its own follower); `set` is one CAS. */
START_TEST(intent_and_abort_keep_the_in_sync_set_and_set_is_one_cas)
{
    struct agent_leaf_v now = {.owner = 2, .state = CMAP_SERVING, .nisr = 2, .isr = {7, 5}};
    ck_assert_int_eq(agent_txn_intent(&T, C, CFG_POOL_COLD, 0x80000000u, 1, 40, 2, 5,
                                      "h2/cold/0", 1, 0x77, &now), HKV_OK);
    ck_assert_str_eq(T.val[0], "{\"owner\":2,\"state\":\"moving\",\"to\":5,\"isr\":[7,5]}");
    now.state = CMAP_MOVING;
    now.to = 5;
    ck_assert_int_eq(agent_txn_abort(&T, C, CFG_POOL_COLD, 0x80000000u, 1, 41, 2, "h2/cold/0", 0,
                                     &now), HKV_OK);
    ck_assert_str_eq(T.val[0], "{\"owner\":2,\"state\":\"serving\",\"isr\":[7,5]}");
    ck_assert_int_eq(agent_txn_commit(&T, C, CFG_POOL_COLD, 0x80000000u, 1, 41, 5, "h2/cold/0",
                                      1), HKV_OK);
    ck_assert_str_eq(T.val[0], "{\"owner\":5,\"state\":\"serving\"}");
    /* a promotion: the old primary's registration must be gone */
    struct agent_leaf_v v = {.owner = 7, .state = CMAP_SERVING, .nisr = 1, .isr = {5}};
    ck_assert_int_eq(agent_txn_set(&T, C, CFG_POOL_COLD, 0x80000000u, 1, 42, &v, NULL,
                                   "h1/cold/0"), HKV_OK);
    static const char *const cmps[] = {"MOD == 42 map/cold/1-00000001",
                                       "CREATE == 0 members/h1/cold/0"};
    expect_cmps(cmps, N(cmps));
    static const char *const ok[] = {
        "PUT map/cold/1-00000001 {\"owner\":7,\"state\":\"serving\",\"isr\":[5]} lease 0"};
    expect_ok(ok, N(ok));
    expect_reads_back("map/cold/1-00000001");
    /* an add: the new follower must be a live member */
    ck_assert_int_eq(agent_txn_set(&T, C, CFG_POOL_COLD, 0x80000000u, 1, 43, &v, "h3/cold/1",
                                   NULL), HKV_OK);
    static const char *const cmps2[] = {"MOD == 43 map/cold/1-00000001",
                                        "VERSION > 0 members/h3/cold/1"};
    expect_cmps(cmps2, N(cmps2));
    ck_assert_int_eq(agent_txn_set(&T, C, CFG_POOL_COLD, 0x80000000u, 1, 0, &v, NULL, NULL),
                     HKV_EINVAL); /* no epoch */
}
END_TEST

static struct agent_batch B;

START_TEST(a_batch_promotes_many_leaves_in_one_txn)
{
    agent_batch_reset(&B);
    struct agent_leaf_v v = {.owner = 7, .state = CMAP_SERVING};
    ck_assert_int_eq(agent_batch_set(&B, C, CFG_POOL_HOT, 0, 2, 10, &v, "h1/hot/0"), HKV_OK);
    ck_assert_int_eq(agent_batch_set(&B, C, CFG_POOL_HOT, 0x40000000u, 2, 11, &v, "h1/hot/0"),
                     HKV_OK);
    ck_assert_int_eq(agent_batch_set(&B, C, CFG_POOL_COLD, 0x80000000u, 1, 12, &v, "h1/cold/0"),
                     HKV_OK);
    /* each leaf's epoch; each gone member's absence once */
    static const char *const cmps[] = {
        "MOD == 10 map/hot/2-00000000", "CREATE == 0 members/h1/hot/0",
        "MOD == 11 map/hot/2-00000001", "MOD == 12 map/cold/1-00000001",
        "CREATE == 0 members/h1/cold/0"};
    char buf[2048];
    ck_assert_uint_eq(B.ncmp, N(cmps));
    for (size_t i = 0; i < N(cmps); i++)
        ck_assert_str_eq(cmp_line(&B.cmp[i], buf, sizeof(buf)), cmps[i]);
    ck_assert_uint_eq(B.nok, 3);
    ck_assert_str_eq(op_line(&B.ok[1], buf, sizeof(buf)),
                     "PUT map/hot/2-00000001 {\"owner\":7,\"state\":\"serving\"} lease 0");
    /* bounded: AGENT_BATCH leaves, then full; bad input refused */
    for (uint32_t i = 3; i < AGENT_BATCH; i++)
        ck_assert_int_eq(agent_batch_set(&B, C, CFG_POOL_HOT, i << 24, 8, 20 + i, &v, "h1/hot/0"),
                         HKV_OK);
    ck_assert_uint_eq(B.nok, AGENT_BATCH);
    ck_assert_int_eq(agent_batch_set(&B, C, CFG_POOL_HOT, 0x7f000000u, 8, 99, &v, "h1/hot/0"),
                     HKV_EFULL);
    agent_batch_reset(&B);
    ck_assert_int_eq(agent_batch_set(&B, C, CFG_POOL_HOT, 1, 2, 10, &v, "h1/hot/0"), HKV_EINVAL);
    ck_assert_int_eq(agent_batch_set(&B, C, CFG_POOL_HOT, 0, 2, 10, &v, NULL), HKV_EINVAL);
    ck_assert_int_eq(agent_batch_set(&B, C, CFG_POOL_HOT, 0, 2, 0, &v, "h1/hot/0"), HKV_EINVAL);
}
END_TEST

Suite *agent_txn_suite(void)
{
    Suite *s = suite_create("agent_txn");
    TCase *tc = tcase_create("leaf names");
    tcase_add_test(tc, a_leaf_is_named_by_its_bits_and_prefix);
    tcase_add_test(tc, a_malformed_leaf_has_no_key);
    tcase_add_test(tc, a_leaf_name_parses_back_to_its_start);
    tcase_add_test(tc, a_bad_leaf_name_is_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("txns");
    tcase_add_test(tc, split_replaces_the_leaf_by_its_halves_if_nobody_moved_first);
    tcase_add_test(tc, the_root_splits_into_two_halves_of_one_bit);
    tcase_add_test(tc, a_leaf_of_the_most_bits_does_not_split);
    tcase_add_test(tc, intent_marks_the_leaf_moving_and_takes_a_slot_under_the_lease);
    tcase_add_test(tc, intent_refuses_a_move_that_makes_no_sense);
    tcase_add_test(tc, commit_gives_the_leaf_to_the_target_and_frees_the_slot);
    tcase_add_test(tc, commit_without_a_slot_deletes_only_the_move);
    tcase_add_test(tc, abort_gives_the_leaf_back_to_its_source);
    tcase_add_test(tc, every_key_and_value_points_into_the_txn);
    suite_add_tcase(s, tc);
    tc = tcase_create("values");
    tcase_add_test(tc, the_move_record_reads_back);
    tcase_add_test(tc, a_bad_move_record_is_refused);
    tcase_add_test(tc, an_operators_move_request_round_trips);
    tcase_add_test(tc, intent_and_abort_keep_the_in_sync_set_and_set_is_one_cas);
    tcase_add_test(tc, a_batch_promotes_many_leaves_in_one_txn);
    suite_add_tcase(s, tc);
    return s;
}
