/*
 * check_local_store_eio.c - the local leaf map store (leaf-moves yes, no
 * etcd) whose disk fails: the stallfs.so shim's ".eio" flag, naming the
 * store's file only, makes its fsyncs fail while the owners' databases go
 * on working.
 *
 * A write that cannot be made durable is never acknowledged: hotkvd-admin's
 * split fails.  The store then answers nothing but errors (a failed fsync
 * cannot be retried safely, and an answer it gave could be about a change
 * the file lacks), so the agent exits and the master restarts it, which
 * loads what the file holds: with the disk back, the agent reaches its
 * store again (INFO etcd_up:1), `leaf list` answers with a whole map (the
 * split in it or not: it was never acknowledged), and a split goes through.
 * Clients go on reading and writing through the map the host has, on both
 * owners, all along.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/move_cluster.h"

#define EIO_CONF "edge-workers 1\nleaf-moves yes\nhot-owners 2\ncold-owners 0\n" \
                 "class default pool hot fresh 60s keep 120s\n"
#define NKEYS 20

static struct daemon d;

static void none(void)
{
}

static void down(void)
{
    if (d.pid > 0)
        h_stop(&d);
    memset(&d, 0, sizeof(d));
    h_dir_teardown();
}

/* Waits (bounded) until INFO etcd_up says want; 1 if it did. */
static int etcd_up_is(int want, int ms)
{
    int64_t end = h_now_ms() + ms;
    for (;;) {
        if (h_info_int(d.port, "etcd_up") == want)
            return 1;
        if (h_now_ms() > end)
            return 0;
        h_sleep_ms(100);
    }
}

static void set_ok(const char *k, const char *v)
{
    int fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    struct h_reply *r = h_cmdv(fd, "SET", k, v, NULL);
    ck_assert_msg(r != NULL && r->v->type == RESP_SIMPLE, "SET %s: %s", k,
                  r != NULL && r->v->str ? r->v->str : "no reply");
    h_free(r);
    close(fd);
}

static void get_is(const char *k, const char *v)
{
    int fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    struct h_reply *r = h_cmdv(fd, "GET", k, NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->v->type == RESP_BULK && r->v->len == strlen(v) &&
                  memcmp(r->v->str, v, r->v->len) == 0, "GET %s: not %s", k, v);
    h_free(r);
    close(fd);
}

START_TEST(a_failed_store_write_restarts_the_agent_and_clients_go_on_with_the_map)
{
    h_dir_setup();
    char flag[400], eio[420], out[65536], leaf[32], v[32];
    ck_assert_int_eq(h_start_shim(&d, EIO_CONF, flag, sizeof(flag)), 0);
    snprintf(eio, sizeof(eio), "%s.eio", flag);
    ck_assert_msg(etcd_up_is(1, 20000), "the agent never reached its store");
    pid_t agent = h_child(&d, "hotkvd: agent", 0);
    ck_assert_int_gt(agent, 0);

    /* keys on both owners, before the failure */
    static char keys[2][NKEYS][32];
    uint32_t start[2];
    int bits[2];
    for (unsigned o = 0; o < 2; o++) {
        ck_assert_int_eq(mc_leaf_of(&d, o + 1, leaf, sizeof(leaf), &start[o], &bits[o]), 0);
        mc_keys_in(start[o], bits[o], o == 0 ? "one" : "two", keys[o], NKEYS);
        for (int i = 0; i < NKEYS; i++)
            set_ok(keys[o][i], "before");
    }
    ck_assert_int_eq(mc_leaf_of(&d, 1, leaf, sizeof(leaf), &start[0], &bits[0]), 0);

    /* the store's file (only) fails its next fsync: a split is its next write */
    FILE *f = fopen(eio, "w");
    ck_assert_ptr_nonnull(f);
    fputs("leaf-map.store", f);
    fclose(f);
    int rc = mc_admin(&d, out, sizeof(out), 20000, "leaf", "split", "hot", leaf, NULL, NULL);
    fprintf(stderr, "local store eio: split: exit %d: %.200s\n", rc, out);
    ck_assert_msg(rc != 0, "a split was acknowledged although the store could not write it: %s",
                  out);
    /* the poisoned store makes the agent exit; the master restarts it */
    ck_assert_int_eq(unlink(eio), 0);
    pid_t next = 0;
    for (int i = 0; i < 150 && next <= 0; i++) {
        h_sleep_ms(100);
        next = h_child(&d, "hotkvd: agent", agent);
    }
    ck_assert_msg(next > 0, "the agent was not restarted after its store failed");
    ck_assert(h_log_has(&d, "leaf map store", "failed a write; exiting", NULL));
    ck_assert_msg(etcd_up_is(1, 20000), "the restarted agent never reached its store");
    rc = mc_admin(&d, out, sizeof(out), 20000, "leaf", "list", NULL, NULL, NULL, NULL);
    ck_assert_msg(rc == 0 && strstr(out, "hot") != NULL, "leaf list after the restart: exit %d: "
                  "%.300s", rc, out);
    ck_assert_int_eq(mc_leaf_of(&d, 2, leaf, sizeof(leaf), &start[1], &bits[1]), 0);
    rc = mc_admin(&d, out, sizeof(out), 20000, "leaf", "split", "hot", leaf, NULL, NULL);
    ck_assert_msg(rc == 0, "a split after the restart: exit %d: %.300s", rc, out);

    /* clients: what was written reads back, new writes land, on both owners */
    for (int o = 0; o < 2; o++)
        for (int i = 0; i < NKEYS; i++) {
            get_is(keys[o][i], "before");
            snprintf(v, sizeof(v), "after%d", i);
            set_ok(keys[o][i], v);
            get_is(keys[o][i], v);
        }
    ck_assert_msg(h_alive(d.pid), "the daemon exited");
}
END_TEST

Suite *local_store_eio_suite(void)
{
    Suite *s = suite_create("local_store_eio");
    TCase *tc = tcase_create("store_fsync_fails");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, none, down);
    tcase_add_test(tc, a_failed_store_write_restarts_the_agent_and_clients_go_on_with_the_map);
    suite_add_tcase(s, tc);
    return s;
}
