/*
 * check_failover.c - kill -9 of a leaf's primary owner on a single host
 * (`leaf-moves yes`, two hot owners, persist-interval 5s), issue 27 and
 * CLUSTER.md §7.  With `replicas 1` each leaf has a follower in the other
 * owner process, the master's SIGCHLD promotes it, and an acknowledged
 * write of any class survives the kill.  With `replicas 0` (today's
 * default) a ledger write lives in one process's memory for up to
 * persist-interval, so the same kill MUST show lost acknowledged writes:
 * those cases are the control that proves the test can see a loss, so the
 * suite means something before the feature and after it.
 *
 * One writer (a thread, one RESP connection through the edge, sequential)
 * writes keys of one leaf, value = a sequence number, and records per key
 * the last value acknowledged and the last one tried; at the kill it
 * switches to one probe key (so no key whose loss is being looked for is
 * written again by the restarted owner) and the time from the kill to the
 * first acknowledged write sent after it is printed.  Classes are
 * `fresh 0 keep 0 on-timeout error`: every read goes to the owner, and an
 * owner that does not answer gives an error (retried), never a nil.
 *   (a) ledger keys; (b) durable keys (no loss with either setting);
 *   (c) INCR of one counter: the acknowledged INCRs n_ok and those with an
 *       unknown outcome n_unk bound the final value (n_ok <= V <= n_ok +
 *       n_unk: fewer is a lost increment, more one applied twice), and the
 *       answers of acknowledged INCRs only grow;
 *   (d) the restarted owner rejoins as a follower (INFO
 *       repl_role_follower_leaves back where it was), then a kill of the
 *       other owner, now the primary, loses nothing either.
 */
#include "tests/integration/move_cluster.h"

#define FO_KEYS 32
#define FO_LEAVES (1 << ROUTER_LEAF_BITS) /* the hot pool's leaves at the start */
#define FO_LOAD_MS 1500
#define FO_BACK_MS 2000                    /* writes back after a kill, replicas >= 1 */

enum fo_kind { FO_LEDGER, FO_DURABLE, FO_INCR, FO_REJOIN };

static struct daemon h1;

static void down(void) { mc_down(&h1); }

static void up(int replicas)
{
    mc_dir(&h1);
    char text[2048];
    snprintf(text, sizeof(text),
             "edge-workers 1\nleaf-moves yes\nhot-owners 2\ncold-owners 0\n"
             "class money pattern \"d:*\" pool hot fresh 0 keep 0 durability durable "
             "on-timeout error\n"
             "class default pool hot fresh 0 keep 0 durability ledger on-timeout error\n"
             "persist-interval 5s\ndurable-timeout 3s\nhotkey-threshold 100000000\n"
             "replicas %d\nreplica-timeout 1s\n", replicas);
    h_write_conf(&h1, text);
    h_on_fail(down);
    mc_start(&h1, NULL);
}

/* "hotkvd: owner hot/<i>" of owner number n, from `hotkvd-admin status`
 * ("owner 1 a/hot/0 live"); 0 when not found. */
static int owner_title(unsigned n, char *title, size_t len)
{
    char out[65536], want[32];
    if (mc_admin(&h1, out, sizeof(out), 20000, "status", NULL, NULL, NULL, NULL, NULL) != 0)
        return 0;
    snprintf(want, sizeof(want), "owner %u ", n);
    for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char *hot = strstr(line, "/hot/");
        if (strncmp(line, want, strlen(want)) == 0 && hot != NULL) {
            snprintf(title, len, "hotkvd: owner hot/%d", atoi(hot + 5));
            return 1;
        }
    }
    return 0;
}

/* ---- the writer ---- */

struct fo_load {
    int port;
    char keys[FO_KEYS][32];           /* [0]: the probe written after the kill */
    int incr;                         /* INCR keys[0] instead of SETs */
    atomic_int stop;
    atomic_llong t_kill;              /* ms, 0 before the kill */
    long long acked[FO_KEYS], tried[FO_KEYS];
    long long seq;                    /* the last value given: rounds go on from it */
    long long n_ok, n_unk, last_reply, backwards_replies;
    atomic_llong first_ms;            /* kill -> first ack of a write sent after it; -1 */
    char first_error[200];
};

static void note_error(struct fo_load *L, const char *what, const struct h_reply *r)
{
    if (L->first_error[0] == '\0')
        snprintf(L->first_error, sizeof(L->first_error), "%s: %.*s", what,
                 r != NULL && r->v->str ? (int)r->v->len : 8,
                 r != NULL && r->v->str ? r->v->str : "no reply");
}

static void *fo_writer(void *arg)
{
    struct fo_load *L = arg;
    int fd = mc_connect(L->port);
    long long seq = L->seq;
    while (!atomic_load(&L->stop) && seq < 10000000) {
        if (fd < 0) {
            h_sleep_ms(20);
            fd = mc_connect(L->port);
            continue;
        }
        long long killed = atomic_load(&L->t_kill);
        int k = L->incr || killed ? 0 : 1 + (int)(seq % (FO_KEYS - 1));
        char val[32];
        snprintf(val, sizeof(val), "%lld", ++seq);
        L->seq = seq;
        int64_t t0 = h_now_ms();
        struct h_reply *r = L->incr ? h_cmdv(fd, "INCR", L->keys[k], NULL)
                                    : h_cmdv(fd, "SET", L->keys[k], val, NULL);
        int ok = r != NULL && (L->incr ? r->v->type == RESP_INT
                                       : r->v->type == RESP_SIMPLE && h_str_is(r->v, "OK"));
        if (ok && L->incr) {
            L->n_ok++;
            if (r->v->integer <= L->last_reply)
                L->backwards_replies++;
            L->last_reply = r->v->integer;
        } else if (ok) {
            L->acked[k] = L->tried[k] = seq;
        } else {
            L->n_unk++;
            L->tried[k] = seq;
            note_error(L, L->keys[k], r);
        }
        if (ok && killed && t0 >= killed && atomic_load(&L->first_ms) < 0)
            atomic_store(&L->first_ms, h_now_ms() - killed);
        if (r == NULL) {
            close(fd);
            fd = -1;
        }
        h_free(r);
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* GET key until it answers a value or nil (errors while the owner or its
 * successor comes up are retried, 15 s at most); its integer, 0 for nil,
 * -1 if it never answered. */
static long long read_back(const char *key)
{
    int64_t end = h_now_ms() + 15000;
    while (h_now_ms() < end) {
        int fd = h_connect(h1.port);
        struct h_reply *r = fd >= 0 ? h_cmdv(fd, "GET", key, NULL) : NULL;
        if (fd >= 0)
            close(fd);
        long long v = -2;
        if (r != NULL && r->v->type == RESP_BULK)
            v = atoll(r->v->str);
        else if (r != NULL && r->v->type == RESP_NULL)
            v = 0;
        h_free(r);
        if (v >= 0)
            return v;
        h_sleep_ms(50);
    }
    return -1;
}

struct fo_result {
    long long acked;       /* keys (or INCRs) acknowledged */
    long long lost;        /* keys whose value went back / increments missing */
    long long twice;       /* values never written, or increments applied twice */
    long long first_ms;    /* kill -> first acknowledged write sent after it; -1: none */
};

/* The load on L's keys for FO_LOAD_MS, kill -9 of the process of the
 * leaf's primary (its owner number `owner`), the writer on until its first
 * acknowledged write after the kill (10 s at most), then every key read
 * back. */
static struct fo_result load_and_kill(struct fo_load *L, unsigned owner, const char *what)
{
    char title[64];
    ck_assert_msg(owner_title(owner, title, sizeof(title)), "owner %u not in status", owner);
    pid_t victim = h_child(&h1, title, 0);
    ck_assert_msg(victim > 0, "no process titled %s", title);
    L->port = h1.port;
    atomic_store(&L->stop, 0);
    atomic_store(&L->t_kill, 0);
    atomic_store(&L->first_ms, -1);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, fo_writer, L), 0);
    h_sleep_ms(FO_LOAD_MS);
    long long t_kill = h_now_ms();
    atomic_store(&L->t_kill, t_kill);
    int rc = kill(victim, SIGKILL);
    while (atomic_load(&L->first_ms) < 0 && h_now_ms() < t_kill + 10000)
        h_sleep_ms(5);
    h_sleep_ms(200);
    atomic_store(&L->stop, 1);
    pthread_join(t, NULL);
    ck_assert_int_eq(rc, 0);

    struct fo_result res = {0, 0, 0, atomic_load(&L->first_ms)};
    if (L->incr) {
        long long v = read_back(L->keys[0]);
        ck_assert_msg(v >= 0, "%s: the counter did not read back within 15 s", what);
        res.acked = L->n_ok;
        /* an answer that went back is a lost increment too */
        res.lost = (v < L->n_ok ? L->n_ok - v : 0) + L->backwards_replies;
        res.twice = v > L->n_ok + L->n_unk ? v - L->n_ok - L->n_unk : 0;
        fprintf(stderr, "failover %s: %lld INCRs acknowledged, %lld unknown, counter %lld, "
                "answers that went back %lld\n", what, L->n_ok, L->n_unk, v,
                L->backwards_replies);
    } else {
        for (int k = 0; k < FO_KEYS; k++) {
            if (L->tried[k] == 0)
                continue;
            long long v = read_back(L->keys[k]);
            ck_assert_msg(v >= 0, "%s: %s did not read back within 15 s", what, L->keys[k]);
            res.acked += L->acked[k] > 0;
            if (v < L->acked[k] && res.lost++ < 3)
                fprintf(stderr, "failover %s: %s read %lld, acknowledged %lld\n", what,
                        L->keys[k], v, L->acked[k]);
            res.twice += v > L->tried[k];
        }
    }
    fprintf(stderr, "failover %s: killed %s (pid %d); %lld acknowledged, %lld lost, "
            "first write after the kill %lld ms%s%s\n", what, title, (int)victim, res.acked,
            res.lost, res.first_ms, L->first_error[0] ? "; first error: " : "",
            L->first_error);
    return res;
}

/* replicas >= 1: every leaf of the pool has its followers in sync (INFO
 * repl_isr_members, the owners' STATS polled every second), 30 s at most.
 * Fails the test when none ever shows: the feature is not in the build. */
static void wait_followers(int replicas)
{
    int64_t end = h_now_ms() + 30000, isr = -1;
    while (h_now_ms() < end && (isr = h_info_int(h1.port, "repl_isr_members")) <
                                   (int64_t)FO_LEAVES * replicas)
        h_sleep_ms(100);
    fprintf(stderr, "failover: repl_isr_members %lld (want %d)\n", (long long)isr,
            FO_LEAVES * replicas);
    H_EXPECT(down, isr > 0, "no in-sync follower within 30 s (INFO repl_isr_members %lld): "
             "replicas %d is not implemented in this build", (long long)isr, replicas);
}

/* The leaf of owner 1 and the keys of L in it ("l" or "d" keys, or one
 * counter "l" key). */
static void keys_of_leaf(struct fo_load *L, const char *prefix, char *leaf, size_t len)
{
    uint32_t start;
    int bits;
    memset(L, 0, sizeof(*L));
    ck_assert_int_eq(mc_leaf_of(&h1, 1, leaf, len, &start, &bits), 0);
    mc_keys_in(start, bits, prefix, L->keys, FO_KEYS);
}

/* The checks of one kill: with replicas, nothing lost and writes back
 * within FO_BACK_MS; without, the control: a ledger loss must be seen. */
static void judge(const struct fo_result *r, int replicas, int ledger, const char *what)
{
    H_EXPECT(down, r->acked > (ledger ? 10 : 2), "%s: only %lld writes acknowledged", what,
             r->acked);
    H_EXPECT(down, r->twice == 0, "%s: %lld values never acknowledged nor tried, or increments "
             "applied twice", what, r->twice);
    H_EXPECT(down, r->first_ms >= 0, "%s: no write succeeded within 10 s of the kill", what);
    if (replicas >= 1) {
        H_EXPECT(down, r->lost == 0, "%s: %lld acknowledged writes lost with replicas %d",
                 what, r->lost, replicas);
        H_EXPECT(down, r->first_ms <= FO_BACK_MS, "%s: writes back %lld ms after the kill "
                 "(bound %d ms)", what, r->first_ms, FO_BACK_MS);
    } else if (ledger) {
        H_EXPECT(down, r->lost > 0, "%s: CONTROL: kill -9 with replicas 0 and "
                 "persist-interval 5s lost no acknowledged ledger write: this test cannot see "
                 "a loss", what);
    } else {
        H_EXPECT(down, r->lost == 0, "%s: %lld acknowledged durable writes lost", what,
                 r->lost);
    }
}

/* README promise 6 and "Commands": WAIT answers the in-sync followers of
 * the leaf of the client's last write (0 before any write); FLUSHALL is
 * refused while replicas > 0 (a follower would keep what it drops). */
static void wait_and_flush(int replicas)
{
    int fd = h_connect(h1.port);
    struct h_reply *r = h_call(fd, "WAIT", "1", "0", NULL);
    H_EXPECT(down, r->v->type == RESP_INT && r->v->integer == 0, "WAIT before a write");
    h_free(r);
    r = h_call(fd, "SET", "fo:wait", "1", NULL);
    h_free(r);
    r = h_call(fd, "WAIT", "1", "0", NULL);
    H_EXPECT(down, r->v->type == RESP_INT && r->v->integer == replicas,
             "WAIT after a write: %lld, want %d (the leaf's in-sync followers)",
             (long long)r->v->integer, replicas);
    h_free(r);
    r = h_call(fd, "FLUSHALL", NULL);
    if (replicas > 0)
        H_EXPECT(down, r->v->type == RESP_ERROR, "FLUSHALL with replicas %d was not refused",
                 replicas);
    else
        H_EXPECT(down, r->v->type == RESP_SIMPLE, "FLUSHALL with replicas 0 failed");
    h_free(r);
    close(fd);
}

static void run_case(int replicas, enum fo_kind kind)
{
    static const char *const names[] = {"ledger", "durable", "incr", "rejoin"};
    char what[48], leaf[32], state[16] = "";
    snprintf(what, sizeof(what), "%s replicas %d", names[kind], replicas);
    up(replicas);
    if (replicas >= 1)
        wait_followers(replicas);
    wait_and_flush(replicas);
    static struct fo_load L;
    keys_of_leaf(&L, kind == FO_DURABLE ? "d" : "l", leaf, sizeof(leaf));
    L.incr = kind == FO_INCR;
    unsigned primary = mc_leaf_owner(&h1, leaf, state);
    ck_assert_uint_eq(primary, 1);
    int64_t followers = h_info_int(h1.port, "repl_role_follower_leaves");
    struct fo_result r = load_and_kill(&L, primary, what);
    judge(&r, replicas, kind != FO_DURABLE, what);
    if (kind != FO_REJOIN) {
        down();
        return;
    }
    /* (d) the restarted owner rejoins as a follower, then the other one dies */
    int64_t t0 = h_now_ms(), end = t0 + 30000, now = -1;
    h_sleep_ms(1200); /* the owners' STATS, polled every second, show the kill first */
    while (replicas >= 1 && h_now_ms() < end &&
           (now = h_info_int(h1.port, "repl_role_follower_leaves")) < followers)
        h_sleep_ms(100);
    fprintf(stderr, "failover %s: follower leaves %lld before the kill, %lld %lld ms after\n",
            what, (long long)followers, (long long)now, (long long)(h_now_ms() - t0));
    if (replicas >= 1)
        H_EXPECT(down, now > 0 && now >= followers, "%s: the restarted owner did not rejoin "
                 "within 30 s (repl_role_follower_leaves %lld, was %lld)", what, (long long)now,
                 (long long)followers);
    unsigned second = mc_leaf_owner(&h1, leaf, state);
    fprintf(stderr, "failover %s: leaf %s now at owner %u (%s)\n", what, leaf, second, state);
    if (replicas >= 1)
        H_EXPECT(down, second == 2, "%s: leaf %s at owner %u after the kill, not promoted to 2",
                 what, leaf, second);
    /* the same keys again, now above every value the first round wrote
     * (the control: no promotion, the restarted owner 1 holds the leaf and
     * its second kill loses again) */
    struct fo_result r2 = load_and_kill(&L, second, "rejoin second kill");
    judge(&r2, replicas, 1, "rejoin second kill");
    down();
}

START_TEST(control_replicas_0_ledger_loss_is_seen) { run_case(0, FO_LEDGER); }
END_TEST
START_TEST(control_replicas_0_durable_kept) { run_case(0, FO_DURABLE); }
END_TEST
START_TEST(control_replicas_0_incr_loss_is_seen) { run_case(0, FO_INCR); }
END_TEST
START_TEST(control_replicas_0_two_kills) { run_case(0, FO_REJOIN); }
END_TEST
START_TEST(replicas_1_ledger_kill_9_loses_nothing) { run_case(1, FO_LEDGER); }
END_TEST
START_TEST(replicas_1_durable_kill_9_loses_nothing) { run_case(1, FO_DURABLE); }
END_TEST
START_TEST(replicas_1_incr_answered_exactly_once_across_failover) { run_case(1, FO_INCR); }
END_TEST
START_TEST(replicas_1_restarted_owner_rejoins_and_second_kill_loses_nothing)
{
    run_case(1, FO_REJOIN);
}
END_TEST

Suite *failover_suite(void)
{
    Suite *s = suite_create("failover");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"r0_ledger", control_replicas_0_ledger_loss_is_seen},
        {"r0_durable", control_replicas_0_durable_kept},
        {"r0_incr", control_replicas_0_incr_loss_is_seen},
        {"r0_rejoin", control_replicas_0_two_kills},
        {"r1_ledger", replicas_1_ledger_kill_9_loses_nothing},
        {"r1_durable", replicas_1_durable_kill_9_loses_nothing},
        {"r1_incr", replicas_1_incr_answered_exactly_once_across_failover},
        {"r1_rejoin", replicas_1_restarted_owner_rejoins_and_second_kill_loses_nothing},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 150);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
