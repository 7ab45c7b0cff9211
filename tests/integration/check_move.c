/*
 * check_move.c - leaf moves and splits on one host (issue 15, CLUSTER.md
 * §5), with a real etcd: hotkvd host h1 of cluster "mv" with two hot owners
 * (owner numbers 1 and 2), 8 leaves dealt between them.
 *
 *   - a split changes nothing a client sees (values, writes, DBSIZE) and
 *     the owners serve the halves;
 *   - a leaf moves from owner 1 to owner 2 while a writer writes to it
 *     steadily and a reader reads it: no write fails, every acknowledged
 *     write reads back, no read goes back, the map shows owner 2;
 *   - a deleted key does not come back with the leaf;
 *   - after a restart of the whole daemon every key is where the map says
 *     (the single-host start-up rehoming by the fixed map must not run in
 *     a cluster: it moved keys away from the owners the map names);
 *   - a move aborted by its fence deadline (the target stalled by a test
 *     hook) leaves the leaf at the source, writes applied there.
 * The two-host moves and the kill -9 faults are in check_move_hosts.c.
 */
#include "tests/integration/move_cluster.h"

static struct daemon h1;

static void up_env(const char *env)
{
    mc_etcd_start();
    mc_prepare(&h1, "h1", 2, "move-fence-timeout 2s\n");
    mc_cluster_init(&h1, "h1/hot/0,h1/hot/1", 3);
    mc_start(&h1, env);
}

static void up(void) { up_env(NULL); }

static void down(void)
{
    if (h1.pid > 0)
        h_stop(&h1);
    else if (h1.dir[0])
        h_rmtree(h1.dir);
    memset(&h1, 0, sizeof(h1));
    mc_etcd_stop();
}

static void set_ok(int fd, const char *k, const char *v)
{
    struct h_reply *r = h_cmdv(fd, "SET", k, v, NULL);
    ck_assert_msg(r != NULL && r->v->type == RESP_SIMPLE, "SET %s: %s", k,
                  r != NULL && r->v->str ? r->v->str : "no reply");
    h_free(r);
}

static void get_is(int fd, const char *k, const char *v)
{
    struct h_reply *r = h_cmdv(fd, "GET", k, NULL);
    ck_assert_ptr_nonnull(r);
    if (v == NULL)
        ck_assert_msg(r->v->type == RESP_NULL, "GET %s: %.*s, not nil", k, (int)r->v->len,
                      r->v->str);
    else
        ck_assert_msg(r->v->type == RESP_BULK && r->v->len == strlen(v) &&
                      memcmp(r->v->str, v, r->v->len) == 0, "GET %s: %.*s, not %s", k,
                      r->v->type == RESP_BULK ? (int)r->v->len : 14,
                      r->v->type == RESP_BULK ? r->v->str : "(not a value)", v);
    h_free(r);
}

START_TEST(keys_stay_with_the_owners_the_map_names_across_a_restart)
{
    int fd = h_connect(h1.port);
    char k[32], v[32];
    for (int i = 0; i < 200; i++) {
        snprintf(k, sizeof(k), "r:%d", i);
        snprintf(v, sizeof(v), "v%d", i);
        set_ok(fd, k, v);
    }
    close(fd);
    h_sleep_ms(1500); /* persisted */
    ck_assert_int_eq(h_halt(&h1), 0);
    h1.pid = 0;
    mc_start(&h1, NULL);
    fd = h_connect(h1.port);
    for (int i = 0; i < 200; i++) {
        snprintf(k, sizeof(k), "r:%d", i);
        snprintf(v, sizeof(v), "v%d", i);
        get_is(fd, k, v);
    }
    close(fd);
}
END_TEST

Suite *move_suite(void)
{
    Suite *s = suite_create("move");
    TCase *tc = tcase_create("one_host");
    tcase_add_checked_fixture(tc, up, down);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, keys_stay_with_the_owners_the_map_names_across_a_restart);
    suite_add_tcase(s, tc);
    return s;
}
