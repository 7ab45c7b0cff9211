/*
 * check_failover_torn.c - a write of several keys across a failover
 * (issue 27, CLUSTER.md §7; single host, `leaf-moves yes`, two hot owners,
 * `replicas 1`): a follower applies a request whole or not at all, and a
 * request whose keys span two leaves is refused while replicas are on.
 *
 *   (a) torn: the primary is killed (HOTKVD_MOVE_HOOK repl_write) right
 *       after the first result of an MSETNX of two hash-tagged keys went to
 *       its follower's socket, before the second result and the completion
 *       record.  The follower is promoted; both keys must read the same
 *       (both set or both absent), the follower must log that it dropped
 *       the unfinished request (so the test met the case it is about), and
 *       the client's answer must not be OK unless both keys are set.
 *       Without the follower's tail, the promoted copy served one key of
 *       the two.
 *   (b) in flight: an INCR's primary is killed after its result went to
 *       the follower but before its record (repl_write), and after its
 *       record (repl_record).  The edge resends it to the promoted
 *       follower with the dead process as its history: without the record
 *       the follower dropped the result with the unfinished request and
 *       applies the retry as new (it inherited every effect that process
 *       left: INFO repl_retries_inherited); with the record it answers
 *       from it.  Either way the client hears :1, once, and the counter is
 *       1: never "outcome unknown", never applied twice.
 *   (c) an acknowledged DEL, then at once a kill -9 of the primary (no
 *       write after it): the promoted follower must not have the key.  A
 *       DEL answered without its completion record in the stream left its
 *       tombstone in the follower's unfinished tail, and the promotion
 *       dropped it (found by history_replicas).
 *   (d) a move of a leaf to its own in-sync follower is a hand-over: the
 *       leaf ends served there and writable (as a move, the follower's
 *       stream ended at the BEGIN, its removal's CAS changed the epoch the
 *       move had written, and the leaf stayed "moving" and fenced).
 *   (e) two leaves: MSETNX over keys of one owner but two leaves answers
 *       CROSSSLOT with replicas 1 (a promotion could give one leaf's part
 *       and the record without the other's) and is applied with replicas 0
 *       (the control: the same pair of keys); hash-tagged keys are one leaf
 *       and are applied either way.
 */
#include "tests/integration/move_cluster.h"

static struct daemon h1;

static void down(void) { mc_down(&h1); }

static void up(int replicas, const char *env)
{
    mc_dir(&h1);
    char text[1024];
    snprintf(text, sizeof(text),
             "edge-workers 1\nleaf-moves yes\nhot-owners 2\ncold-owners 0\n"
             "class default pool hot fresh 0 keep 0 durability ledger on-timeout error\n"
             "persist-interval 5s\nhotkey-threshold 100000000\n"
             "replicas %d\nreplica-timeout 1s\n", replicas);
    h_write_conf(&h1, text);
    h_on_fail(down);
    mc_start(&h1, env);
}

static void wait_in_sync(void)
{
    int64_t end = h_now_ms() + 30000, isr = -1;
    int64_t want = 1 << ROUTER_LEAF_BITS;
    while (h_now_ms() < end && (isr = h_info_int(h1.port, "repl_isr_members")) < want)
        h_sleep_ms(100);
    H_EXPECT(down, isr >= want, "followers not in sync within 30 s (repl_isr_members %lld)",
             (long long)isr);
}

/* Once followers are in sync: n keys "<prefix>:<i>" of the first leaf of
 * owner 1 (hot/0 at a fresh start), and the leaf's name. */
static void keys_of_owner_1(const char *prefix, char keys[][32], int n, char *leaf)
{
    uint32_t start;
    int bits;
    wait_in_sync();
    ck_assert_int_eq(mc_leaf_of(&h1, 1, leaf, 32, &start, &bits), 0);
    mc_keys_in(start, bits, prefix, keys, n);
}

/* GET k: 1 set to v, 0 absent; the test fails on anything else (an error is
 * retried for up to 10 s: the promotion may still be under way). */
static int value_is(int fd, const char *k, const char *v)
{
    int64_t end = h_now_ms() + 10000;
    while (h_now_ms() < end) {
        struct h_reply *r = h_call(fd, "GET", k, NULL);
        int t = r->v->type;
        int got = t == RESP_BULK && r->v->len == strlen(v) && memcmp(r->v->str, v, r->v->len) == 0;
        h_free(r);
        if (t == RESP_NULL)
            return 0;
        if (t == RESP_BULK) {
            ck_assert_msg(got, "GET %s: a value that was never written", k);
            return 1;
        }
        h_sleep_ms(50);
    }
    ck_abort_msg("GET %s: no value nor nil within 10 s", k);
    return -1;
}

START_TEST(a_promoted_follower_holds_a_request_whole_or_not_at_all)
{
    up(1, "HOTKVD_MOVE_HOOK=hot/0:repl_write:kill");
    char leaf[32], keys[1][32], a[48], b[48];
    keys_of_owner_1("t", keys, 1, leaf);
    snprintf(a, sizeof(a), "{%s}a", keys[0]); /* the tag's hash: the leaf of owner 1 */
    snprintf(b, sizeof(b), "{%s}b", keys[0]);
    int fd = h_connect(h1.port);
    struct h_reply *r = h_cmdv(fd, "MSETNX", a, "1", b, "1", NULL);
    int ok = r != NULL && r->v->type == RESP_INT && r->v->integer == 1;
    fprintf(stderr, "torn: MSETNX answered %s\n",
            r == NULL ? "nothing" : r->v->str != NULL ? r->v->str : ok ? ":1" : "(other)");
    h_free(r);
    H_EXPECT(down, h_log_has(&h1, "HOTKVD_MOVE_HOOK: killed at step repl_write", NULL, NULL),
             "the repl_write hook never fired (owner 1 was not hot/0, or nothing streamed)");
    close(fd);
    fd = h_connect(h1.port);
    int va = value_is(fd, a, "1"), vb = value_is(fd, b, "1");
    fprintf(stderr, "torn: after the promotion %s %s, %s %s\n", a, va ? "set" : "absent", b,
            vb ? "set" : "absent");
    ck_assert_msg(va == vb, "a torn MSETNX: %s is %s and %s is %s after the failover", a,
                  va ? "set" : "absent", b, vb ? "set" : "absent");
    ck_assert_msg(!ok || va, "MSETNX answered OK and its keys are absent");
    H_EXPECT(down, h_log_has(&h1, "results of a request whose record did not come are dropped",
                             NULL, NULL),
             "the promoted follower held no unfinished request: the case was not met");
    close(fd);
    down();
}
END_TEST

static void in_flight(const char *step)
{
    char env[80];
    snprintf(env, sizeof(env), "HOTKVD_MOVE_HOOK=hot/0:%s:kill", step);
    up(1, env);
    char leaf[32], keys[1][32];
    keys_of_owner_1("n", keys, 1, leaf);
    int fd = h_connect(h1.port);
    int64_t t0 = h_now_ms();
    struct h_reply *r = h_cmdv(fd, "INCR", keys[0], NULL);
    int64_t ms = h_now_ms() - t0;
    H_EXPECT(down, h_log_has(&h1, "HOTKVD_MOVE_HOOK: killed at step", step, NULL),
             "the %s hook never fired", step);
    ck_assert_msg(r != NULL && r->v->type == RESP_INT && r->v->integer == 1,
                  "%s: the INCR in flight at the kill answered %s, not :1", step,
                  r == NULL ? "nothing" : r->v->str != NULL ? r->v->str : "(other)");
    h_free(r);
    fprintf(stderr, "in flight (%s): INCR answered :1 in %lld ms across the failover\n", step,
            (long long)ms);
    mc_get_is(fd, keys[0], "1"); /* once: neither lost nor applied twice */
    close(fd);
    if (strcmp(step, "repl_write") == 0)
        H_EXPECT(down, h_info_int(h1.port, "repl_retries_inherited") >= 1,
                 "the retry was not applied as inherited (INFO repl_retries_inherited %lld)",
                 (long long)h_info_int(h1.port, "repl_retries_inherited"));
    down();
}

START_TEST(a_write_in_flight_at_the_kill_is_applied_once_without_its_record)
{
    in_flight("repl_write");
}
END_TEST

START_TEST(a_write_in_flight_at_the_kill_is_answered_from_its_record)
{
    in_flight("repl_record");
}
END_TEST

START_TEST(an_acknowledged_del_survives_the_kill_that_follows_it)
{
    up(1, NULL);
    char leaf[32], keys[3][32];
    keys_of_owner_1("dl", keys, 3, leaf);
    int fd = h_connect(h1.port);
    for (int i = 0; i < 3; i++)
        mc_set_ok(fd, keys[i], "v");
    struct h_reply *r = h_call(fd, "DEL", keys[0], keys[1], NULL);
    ck_assert_msg(r->v->type == RESP_INT && r->v->integer == 2, "DEL of two keys: not :2");
    h_free(r);
    pid_t victim = h_child(&h1, "hotkvd: owner hot/0", 0);
    H_EXPECT(down, victim > 0, "no owner hot/0");
    ck_assert_int_eq(kill(victim, SIGKILL), 0);
    close(fd);
    int64_t end = h_now_ms() + 10000;
    while (h_now_ms() < end && !h_log_has(&h1, "follower 2 promoted", leaf, NULL))
        h_sleep_ms(20);
    H_EXPECT(down, h_log_has(&h1, "follower 2 promoted", leaf, NULL),
             "leaf %s was not promoted within 10 s of its primary's death", leaf);
    fd = h_connect(h1.port);
    ck_assert_msg(value_is(fd, keys[0], "v") == 0 && value_is(fd, keys[1], "v") == 0,
                  "an acknowledged DEL was lost across the failover");
    ck_assert_int_eq(value_is(fd, keys[2], "v"), 1);
    close(fd);
    down();
}
END_TEST

START_TEST(a_move_to_the_leafs_own_follower_is_a_hand_over)
{
    up(1, NULL);
    char leaf[32], keys[1][32], out[4096];
    keys_of_owner_1("mv", keys, 1, leaf);
    int fd = h_connect(h1.port);
    mc_set_ok(fd, keys[0], "before");
    int rc = mc_admin(&h1, out, sizeof(out), 20000, "leaf", "move", "hot", leaf, "2", NULL);
    H_EXPECT(down, rc == 0, "leaf move exited %d: %s", rc, out);
    char state[16] = "";
    unsigned owner = 0;
    int64_t end = h_now_ms() + 10000;
    while (h_now_ms() < end && !((owner = mc_leaf_owner(&h1, leaf, state)) == 2 &&
                                  strcmp(state, "serving") == 0))
        h_sleep_ms(50);
    H_EXPECT(down, owner == 2 && strcmp(state, "serving") == 0,
             "leaf %s after a move to its follower: owner %u, %s (admin: %s)", leaf, owner, state,
             out);
    mc_get_is(fd, keys[0], "before");
    mc_set_ok(fd, keys[0], "after");
    mc_get_is(fd, keys[0], "after");
    close(fd);
    down();
}
END_TEST

/* A pair of keys on one owner in two leaves: the first "cs:<i>" whose
 * MSETNX with "cs:0" the owner (not the edge) refuses; -1 if none in 64. */
static int cross_leaf_pair(int fd)
{
    for (int i = 1; i < 64; i++) {
        char k[32];
        snprintf(k, sizeof(k), "cs:%d", i);
        struct h_reply *r = h_call(fd, "MSETNX", "cs:0", "x", k, "x", NULL);
        int refused = r->v->type == RESP_ERROR && strstr(r->v->str, "share a leaf") != NULL;
        if (!refused)
            ck_assert_msg(r->v->type == RESP_ERROR && strncmp(r->v->str, "CROSSSLOT", 9) == 0,
                          "MSETNX cs:0 %s over two leaves was applied with replicas 1", k);
        h_free(r);
        if (refused)
            return i;
    }
    return -1;
}

START_TEST(a_write_over_two_leaves_is_refused_with_replicas_only)
{
    up(1, NULL);
    wait_in_sync();
    int fd = h_connect(h1.port);
    int i = cross_leaf_pair(fd);
    H_EXPECT(down, i > 0, "no pair of keys of one owner in two leaves among 63");
    struct h_reply *r = h_call(fd, "MSETNX", "{cs}a", "x", "{cs}b", "x", NULL);
    ck_assert_msg(r->v->type == RESP_INT && r->v->integer == 1, "hash-tagged MSETNX refused: %s",
                  r->v->str != NULL ? r->v->str : "(not :1)");
    h_free(r);
    mc_get_is(fd, "cs:0", NULL); /* the refused MSETNX set nothing */
    close(fd);
    down();

    up(0, NULL); /* the control: the same pair, applied */
    fd = h_connect(h1.port);
    char k[32];
    snprintf(k, sizeof(k), "cs:%d", i);
    r = h_call(fd, "MSETNX", "cs:0", "x", k, "x", NULL);
    ck_assert_msg(r->v->type == RESP_INT && r->v->integer == 1,
                  "replicas 0: MSETNX cs:0 %s not applied: %s", k,
                  r->v->str != NULL ? r->v->str : "(not :1)");
    h_free(r);
    mc_get_is(fd, k, "x");
    close(fd);
    down();
}
END_TEST

Suite *failover_torn_suite(void)
{
    Suite *s = suite_create("failover_torn");
    TCase *tc = tcase_create("torn");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_promoted_follower_holds_a_request_whole_or_not_at_all);
    tcase_add_test(tc, a_write_in_flight_at_the_kill_is_applied_once_without_its_record);
    tcase_add_test(tc, a_write_in_flight_at_the_kill_is_answered_from_its_record);
    tcase_add_test(tc, an_acknowledged_del_survives_the_kill_that_follows_it);
    tcase_add_test(tc, a_move_to_the_leafs_own_follower_is_a_hand_over);
    tcase_add_test(tc, a_write_over_two_leaves_is_refused_with_replicas_only);
    suite_add_tcase(s, tc);
    return s;
}
