/*
 * check_move_hosts.c - leaf moves between two hosts (issue 15): a real
 * etcd, hotkvd hosts h1 and h2 of cluster "mv" on loopback, one hot owner
 * each (owner numbers 1 and 2), the hand-off over TCP with the cluster's
 * mutual TLS (certificates from tests/unit/cluster_certs.h).
 *
 *   - a leaf of h1's owner moves to h2's while a writer writes to it
 *     through h1 and a reader reads it: no write fails, every
 *     acknowledged write reads back through both hosts, no read goes back,
 *     MOVED was followed (h1's edge now reaches the leaf on h2);
 *   - the hand-off link cut by the target before its acknowledgment: the
 *     move aborts, the leaf stays at h1, the target drops its copy;
 *   - the link cut right after the acknowledgment: the commit goes
 *     through, and the target, which keeps its copy on a link loss, adopts
 *     the leaf from the map (the model's DROP_ON_LINK_LOSS mutant loses
 *     writes here).
 */
#include "tests/integration/move_cluster.h"
#include "tests/unit/cluster_certs.h"

static char certs[256];
static struct daemon h1, h2;

static void make_certs(void)
{
    h_tmpdir(certs, sizeof(certs));
    cc_make_all(certs);
}

static void remove_certs(void)
{
    h_rmtree(certs);
}

static void prepare_host(struct daemon *d, const char *host)
{
    char extra[1024];
    snprintf(extra, sizeof(extra),
             "owner-port %d\nadvertise-addr 127.0.0.1\nmove-fence-timeout 2s\n"
             "cluster-tls-cert-file %s/%s.crt\ncluster-tls-key-file %s/%s.key\n"
             "cluster-tls-ca-file %s/ca.crt\n",
             h_free_port(), certs, host, certs, host, certs);
    mc_prepare(d, host, 1, extra);
}

static void up_env(const char *env2)
{
    mc_etcd_start();
    prepare_host(&h1, "h1");
    prepare_host(&h2, "h2");
    mc_cluster_init(&h1, "h1/hot/0,h2/hot/0", 3);
    mc_start(&h1, NULL);
    mc_start(&h2, env2);
}

static void up(void) { up_env(NULL); }
static void up_cut_before_ack(void) { up_env("HOTKVD_MOVE_HOOK=hot/0:t_fence:cut"); }
static void up_cut_after_ack(void) { up_env("HOTKVD_MOVE_HOOK=hot/0:t_acked:cut"); }

static void down(void)
{
    struct daemon *ds[] = {&h1, &h2};
    for (int i = 0; i < 2; i++) {
        if (ds[i]->pid > 0)
            h_stop(ds[i]);
        else if (ds[i]->dir[0])
            h_rmtree(ds[i]->dir);
        memset(ds[i], 0, sizeof(*ds[i]));
    }
    mc_etcd_stop();
}

static int move_to(const char *leaf, unsigned to, char *out, size_t len)
{
    char t[16];
    snprintf(t, sizeof(t), "%u", to);
    const char *admin = getenv("HOTKVD_ADMIN_BIN");
    const char *argv[] = {admin, h1.conf, "leaf", "move", "hot", leaf, t, "--wait", "30000", NULL};
    return mc_run(argv, out, len, 40000);
}

/* Writes keys[] through d until each is OK (links to the other host may
 * still be connecting at first). */
static void warm(const struct daemon *d, char keys[][32], int n)
{
    int64_t end = h_now_ms() + MC_UP_MS;
    for (int i = 0; i < n && h_now_ms() < end;) {
        int fd = h_connect(d->port);
        struct h_reply *r = fd >= 0 ? h_cmdv(fd, "SET", keys[i], "0", NULL) : NULL;
        int ok = r != NULL && r->v->type == RESP_SIMPLE;
        h_free(r);
        if (fd >= 0)
            close(fd);
        if (ok)
            i++;
        else
            h_sleep_ms(100);
    }
}

static void leaf_moves(const char *why_env, unsigned want_owner)
{
    char leaf[32], keys[MC_KEYS][32], out[4096], state[16] = "";
    uint32_t start;
    int bits;
    ck_assert_int_eq(mc_leaf_of(&h1, 1, leaf, sizeof(leaf), &start, &bits), 0);
    mc_keys_in(start, bits, "x", keys, MC_KEYS);
    warm(&h1, keys, MC_KEYS);
    static struct mc_load L;
    mc_load_start(&L, h1.port, keys, MC_KEYS, 300);
    h_sleep_ms(1000);
    int rc = move_to(leaf, 2, out, sizeof(out));
    h_sleep_ms(1500);
    mc_load_stop(&L);
    unsigned owner = mc_leaf_owner(&h1, leaf, state);
    fprintf(stderr, "move two hosts (%s): exit %d, owner %u, %lld writes (%lld failed), %lld "
            "reads, max write %lld ms\n", why_env, rc, owner, (long long)atomic_load(&L.writes),
            (long long)atomic_load(&L.failures), (long long)atomic_load(&L.reads),
            L.max_write_us / 1000);
    ck_assert_msg(rc == (want_owner == 2 ? 0 : 2), "leaf move exit %d: %s", rc, out);
    ck_assert_uint_eq(owner, want_owner);
    ck_assert_str_eq(state, "serving");
    ck_assert_msg(atomic_load(&L.failures) == 0, "%lld of %lld writes failed, first: %s",
                  (long long)atomic_load(&L.failures), (long long)atomic_load(&L.writes),
                  L.first_failure);
    ck_assert_msg(atomic_load(&L.backwards) == 0, "a read went back: %s", L.first_backwards);
    mc_check_acked(&L, h1.port);
    mc_check_acked(&L, h2.port);
}

START_TEST(a_leaf_moves_to_another_host_under_a_steady_writer)
{
    leaf_moves("plain", 2);
    /* h1's edge follows the leaf to h2 (MOVED, then the map) */
    char info[64];
    ck_assert_int_eq(h_info_field(h1.port, "remote_links_up", info, sizeof(info)), 0);
    ck_assert_int_ge(atoi(info), 1);
    mc_print_leaves(&h1, "move two hosts");
    ck_assert_int_eq(h_info_int(h1.port, "leaf_moves_committed"), 1);
    ck_assert(h_log_has(&h2, "is served here from epoch", NULL, NULL));
}
END_TEST

START_TEST(a_link_cut_before_the_ack_aborts_and_the_target_drops_its_copy)
{
    leaf_moves("cut before ack", 1);
    ck_assert(h_log_has(&h2, "HOTKVD_MOVE_HOOK: link cut at step t_fence", NULL, NULL));
    int64_t end = h_now_ms() + 10000;
    while (h_now_ms() < end && !h_log_has(&h2, "the copy from owner 1 is dropped", NULL, NULL))
        h_sleep_ms(100);
    ck_assert(h_log_has(&h2, "the copy from owner 1 is dropped", NULL, NULL));
}
END_TEST

START_TEST(a_link_cut_after_the_ack_does_not_lose_the_leaf)
{
    leaf_moves("cut after ack", 2);
    ck_assert(h_log_has(&h2, "HOTKVD_MOVE_HOOK: link cut at step t_acked", NULL, NULL));
    ck_assert(h_log_has(&h2, "is served here from epoch", NULL, NULL));
}
END_TEST

Suite *move_hosts_suite(void)
{
    Suite *s = suite_create("move_hosts");
    struct {
        const char *name;
        void (*up)(void);
        const TTest *test;
    } cases[] = {
        {"two_hosts", up, a_leaf_moves_to_another_host_under_a_steady_writer},
        {"cut_before_ack", up_cut_before_ack,
         a_link_cut_before_the_ack_aborts_and_the_target_drops_its_copy},
        {"cut_after_ack", up_cut_after_ack, a_link_cut_after_the_ack_does_not_lose_the_leaf},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_unchecked_fixture(tc, make_certs, remove_certs);
        tcase_add_checked_fixture(tc, cases[i].up, down);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}
