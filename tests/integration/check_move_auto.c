/*
 * check_move_auto.c - automatic moves (issue 15's policy, CLUSTER.md §5
 * "When", server/agent/agent_policy.h) on one host with a real etcd: host
 * h1 of cluster "mv" with two hot owners (numbers 1 and 2), 8 leaves dealt
 * between them, a 1 s move-window, short cool-downs.
 *
 *   - a skewed load (many keys, all in two of owner 1's leaves, written
 *     hard) ends with automatic splits and moves after which no owner is
 *     busy over the threshold; no write fails on the way;
 *   - a load on one key is refused, not split nor moved: counted, the key
 *     in INFO # Leaves and HOTKEYS REFUSED, the map unchanged.
 *
 * The threshold is set from the skew the test measures first (auto-moves
 * off): this machine is shared, and an absolute busy fraction would test
 * the machine, not the policy.  Owner 1's busy fraction with the whole load
 * is B; the threshold is 0.8 B, which half of the load (what two moves of a
 * half-leaf leave each owner) is under, with room for the throughput that
 * grows once owner 1 no longer holds it back (about 1.3 times, measured).
 */
#include "tests/integration/move_cluster.h"

#define AUTO_EXTRA                                                                               \
    "edge-workers 2\nmove-window 1s\nmove-cooldown-owner 1s\nmove-cooldown-leaf 60s\n"           \
    "auto-moves no\nmove-fence-timeout 2s\n"
#define SKEW_THREADS 3
#define SKEW_PIPE 32
#define SKEW_KEYS 400

static struct daemon h1;

static void up(void)
{
    mc_etcd_start();
    mc_prepare(&h1, "h1", 2, AUTO_EXTRA);
    mc_cluster_init(&h1, "h1/hot/0,h1/hot/1", 3);
    mc_start(&h1, NULL);
}

static void down(void)
{
    if (h1.pid > 0)
        h_stop(&h1);
    else if (h1.dir[0])
        h_rmtree(h1.dir);
    memset(&h1, 0, sizeof(h1));
    mc_etcd_stop();
}

/* The leaves `leaf list` shows owner n serving: up to max. */
static int leaves_of(unsigned n, uint32_t *start, int *bits, int max)
{
    char out[65536];
    int k = 0;
    if (mc_admin(&h1, out, sizeof(out), 20000, "leaf", "list", NULL, NULL, NULL, NULL) != 0)
        return -1;
    for (char *line = strtok(out, "\n"); line != NULL && k < max; line = strtok(NULL, "\n")) {
        unsigned b, p, owner;
        char state[16];
        if (sscanf(line, "leaf hot %u-%x owner %u %*s state %15s", &b, &p, &owner, state) == 4 &&
            owner == n && strcmp(state, "serving") == 0) {
            bits[k] = (int)b;
            start[k] = b == 0 ? 0 : p << (32 - b);
            k++;
        }
    }
    return k;
}

static int leaf_count(void)
{
    char out[65536];
    int k = 0;
    if (mc_admin(&h1, out, sizeof(out), 20000, "leaf", "list", NULL, NULL, NULL, NULL) != 0)
        return -1;
    for (char *p = out; (p = strstr(p, "leaf hot ")) != NULL; p++)
        k++;
    return k;
}

static double busy_of(unsigned n)
{
    char f[32], v[32] = "";
    snprintf(f, sizeof(f), "owner_%u_busy", n);
    return h_info_field(h1.port, f, v, sizeof(v)) == 0 ? atof(v) : -1.0;
}

static void config_set(const char *name, const char *value)
{
    int fd = h_connect(h1.port);
    ck_assert_int_ge(fd, 0);
    struct h_reply *r = h_cmdv(fd, "CONFIG", "SET", name, value, NULL);
    ck_assert_msg(r != NULL && r->v->type == RESP_SIMPLE, "CONFIG SET %s %s: %s", name, value,
                  r != NULL && r->v->str ? r->v->str : "no reply");
    h_free(r);
    close(fd);
}

/* ---- a pipelined writer over a set of keys -------------------------------- */

struct skew {
    int port;
    char (*keys)[32];
    int nkeys;
    atomic_int stop;
    atomic_llong writes, failures;
    char first_failure[256];
    pthread_t t[SKEW_THREADS];
};

static void *skew_writer(void *arg)
{
    struct skew *S = arg;
    int fd = h_connect(S->port);
    unsigned seed = (unsigned)(uintptr_t)pthread_self();
    char cmd[SKEW_PIPE * 96];
    while (!atomic_load(&S->stop) && fd >= 0) {
        size_t n = 0;
        for (int i = 0; i < SKEW_PIPE; i++) {
            const char *k = S->keys[rand_r(&seed) % S->nkeys];
            char val[24];
            int vl = snprintf(val, sizeof(val), "%u", rand_r(&seed));
            n += (size_t)snprintf(cmd + n, sizeof(cmd) - n,
                                  "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%d\r\n%s\r\n", strlen(k), k,
                                  vl, val);
        }
        if (h_send(fd, cmd, n) != 0)
            break;
        for (int i = 0; i < SKEW_PIPE; i++) {
            struct h_reply *r = h_read(fd);
            int ok = r != NULL && r->v->type == RESP_SIMPLE;
            if (!ok && atomic_fetch_add(&S->failures, 1) == 0)
                snprintf(S->first_failure, sizeof(S->first_failure), "%.*s",
                         r != NULL && r->v->str ? (int)r->v->len : 8,
                         r != NULL && r->v->str ? r->v->str : "no reply");
            atomic_fetch_add(&S->writes, 1);
            h_free(r);
            if (r == NULL) {
                close(fd);
                fd = h_connect(S->port);
                break;
            }
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static void skew_start(struct skew *S, char (*keys)[32], int n)
{
    memset(S, 0, sizeof(*S));
    S->port = h1.port;
    S->keys = keys;
    S->nkeys = n;
    for (int i = 0; i < SKEW_THREADS; i++)
        ck_assert_int_eq(pthread_create(&S->t[i], NULL, skew_writer, S), 0);
}

static void skew_stop(struct skew *S)
{
    atomic_store(&S->stop, 1);
    for (int i = 0; i < SKEW_THREADS; i++)
        pthread_join(S->t[i], NULL);
}

/* Owner 1's busy fraction under the load, auto-moves off: the mean of a
 * few windows once the load runs. */
static double measure_skew(void)
{
    h_sleep_ms(3000);
    double b1 = 0, b2 = 0;
    for (int i = 0; i < 3; i++) {
        h_sleep_ms(1100);
        b1 += busy_of(1);
        b2 += busy_of(2);
    }
    b1 /= 3;
    b2 /= 3;
    fprintf(stderr, "move_auto: with auto-moves off, owner 1 busy %.3f, owner 2 busy %.3f\n", b1,
            b2);
    ck_assert_msg(b1 > 0.02 && b1 > 2 * b2, "no skew measured: owner 1 busy %.3f, owner 2 %.3f",
                  b1, b2);
    return b1;
}

static void threshold(double t)
{
    char v[16];
    snprintf(v, sizeof(v), "%.3f", t < 0.01 ? 0.01 : t);
    config_set("move-busy-threshold", v);
    config_set("auto-moves", "yes");
}

START_TEST(a_skewed_load_is_spread_until_no_owner_is_busy)
{
    uint32_t start[8];
    int bits[8];
    static char keys[SKEW_KEYS][32];
    int n = leaves_of(1, start, bits, 8);
    ck_assert_int_ge(n, 2);
    /* many keys, half in each of two of owner 1's leaves */
    mc_keys_in(start[0], bits[0], "skA", keys, SKEW_KEYS / 2);
    mc_keys_in(start[1], bits[1], "skB", &keys[SKEW_KEYS / 2], SKEW_KEYS / 2);
    struct skew S;
    skew_start(&S, keys, SKEW_KEYS);
    double b = measure_skew(), t = 0.8 * b;
    threshold(t);
    /* done: each owner under the threshold for 3 windows in a row */
    int64_t end = h_now_ms() + 60000;
    int under = 0;
    double b1 = 0, b2 = 0;
    while (h_now_ms() < end && under < 3) {
        h_sleep_ms(1100);
        b1 = busy_of(1);
        b2 = busy_of(2);
        int moved = h_info_int(h1.port, "auto_moves_started") > 0;
        under = moved && b1 >= 0 && b1 < t && b2 >= 0 && b2 < t ? under + 1 : 0;
    }
    long long moves = h_info_int(h1.port, "auto_moves_started");
    long long splits = h_info_int(h1.port, "auto_splits_started");
    long long refused = h_info_int(h1.port, "auto_refused_hot_key");
    skew_stop(&S);
    fprintf(stderr, "move_auto: threshold %.3f; after %lld moves and %lld splits owner 1 busy "
            "%.3f, owner 2 busy %.3f; %lld writes, %lld failed\n", t, moves, splits, b1, b2,
            (long long)S.writes, (long long)S.failures);
    ck_assert_msg(under >= 3, "owners still busy after 60 s: owner 1 %.3f, owner 2 %.3f "
                  "(threshold %.3f, %lld moves, %lld splits)", b1, b2, t, moves, splits);
    ck_assert_int_ge(moves, 1);
    ck_assert_int_ge(splits, 1); /* the keys spread over each leaf: halves are even */
    ck_assert_int_eq(refused, 0);
    ck_assert_msg(S.failures == 0, "%lld writes failed, the first: %s", (long long)S.failures,
                  S.first_failure);
    /* owner 2 serves some of the loaded keys now */
    int got = leaves_of(2, start, bits, 8);
    ck_assert_int_ge(got, 5); /* its own 4 and at least one half that moved */
}
END_TEST

START_TEST(a_single_hot_key_is_refused_not_split)
{
    uint32_t start[8];
    int bits[8];
    static char keys[1][32];
    ck_assert_int_ge(leaves_of(1, start, bits, 8), 1);
    mc_keys_in(start[0], bits[0], "hot", keys, 1);
    int before = leaf_count();
    ck_assert_int_eq(before, 8);
    struct skew S;
    skew_start(&S, keys, 1);
    double b = measure_skew();
    threshold(0.5 * b);
    int64_t end = h_now_ms() + 30000;
    while (h_now_ms() < end && h_info_int(h1.port, "auto_refused_hot_key") < 1)
        h_sleep_ms(500);
    h_sleep_ms(3000); /* more windows: it stays refused (the leaf cools down) */
    skew_stop(&S);
    long long refused = h_info_int(h1.port, "auto_refused_hot_key");
    ck_assert_msg(refused >= 1, "the hot key's leaf was not refused (owner 1 busy %.3f)",
                  busy_of(1));
    ck_assert_int_eq(refused, 1); /* once: its leaf then cools down */
    ck_assert_int_eq(h_info_int(h1.port, "auto_splits_started"), 0);
    ck_assert_int_eq(h_info_int(h1.port, "auto_moves_started"), 0);
    char key[64] = "";
    ck_assert_int_eq(h_info_field(h1.port, "auto_refused_last_key", key, sizeof(key)), 0);
    ck_assert_str_eq(key, keys[0]);
    int fd = h_connect(h1.port);
    struct h_reply *r = h_cmdv(fd, "HOTKEYS", "REFUSED", NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->v->type, RESP_ARRAY);
    ck_assert_int_eq(r->v->n, 1);
    ck_assert_int_eq(r->v->elems[0].n, 2);
    ck_assert_int_eq(r->v->elems[0].elems[0].len, strlen(keys[0]));
    ck_assert_int_eq(memcmp(r->v->elems[0].elems[0].str, keys[0], strlen(keys[0])), 0);
    ck_assert_int_eq(r->v->elems[0].elems[1].integer, 1);
    h_free(r);
    close(fd);
    ck_assert_int_eq(leaf_count(), before); /* not split */
    ck_assert_int_eq(S.failures, 0);
    fprintf(stderr, "move_auto: one hot key (%s), owner 1 busy %.3f: refused %lld time(s), "
            "no split, no move\n", keys[0], b, refused);
}
END_TEST

Suite *move_auto_suite(void)
{
    Suite *s = suite_create("move_auto");
    TCase *tc = tcase_create("skew");
    tcase_add_checked_fixture(tc, up, down);
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, a_skewed_load_is_spread_until_no_owner_is_busy);
    suite_add_tcase(s, tc);
    tc = tcase_create("hot_key");
    tcase_add_checked_fixture(tc, up, down);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_single_hot_key_is_refused_not_split);
    suite_add_tcase(s, tc);
    return s;
}
