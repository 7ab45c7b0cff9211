/*
 * move_cluster.h - what the leaf move suites (check_move.c, one host;
 * check_move_hosts.c, two hosts and faults) share: a real etcd (the
 * harness's), cluster daemons on loopback from their own configs, the
 * admin tool, the keys of a leaf, and a steady writer (a thread of the test
 * process with its own connection) that records what was acknowledged and
 * counts every failed write, plus a reader checking that each key's value
 * never goes back.  Static inline: each suite is its own file.  Every wait
 * is bounded; every daemon is stopped by PID (h_stop).
 */
#ifndef HKV_TEST_MOVE_CLUSTER_H
#define HKV_TEST_MOVE_CLUSTER_H

#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/core/router.h"
#include "tests/harness.h"

#define MC_UP_MS 30000

static struct h_etcd mc_etcd;

static inline void mc_etcd_start(void)
{
    ck_assert_msg(harness_etcd_available(), "etcd is not installed (scripts/install-deps.sh)");
    ck_assert_int_eq(harness_etcd_start(&mc_etcd, NULL), 0);
}

static inline void mc_etcd_stop(void)
{
    if (mc_etcd.pid > 0)
        harness_etcd_stop(&mc_etcd);
    memset(&mc_etcd, 0, sizeof(mc_etcd));
}

/* d cleared, with a new temp dir, a free port, and its config and log paths there. */
static inline void mc_dir(struct daemon *d)
{
    memset(d, 0, sizeof(*d));
    h_tmpdir(d->dir, sizeof(d->dir));
    d->port = h_free_port();
    snprintf(d->conf, sizeof(d->conf), "%s/hotkvd.conf", d->dir);
    snprintf(d->log, sizeof(d->log), "%s/hotkvd.log", d->dir);
}

/* d's dir, port and config for host `host` of cluster "mv" with `hot`
 * owners (and `extra` lines), not started. */
static inline void mc_prepare(struct daemon *d, const char *host, int hot, const char *extra)
{
    mc_dir(d);
    char text[4096];
    snprintf(text, sizeof(text),
             "edge-workers 1\ncluster mv\nhost %s\netcd-endpoints http://127.0.0.1:%d\n"
             "etcd-lease-ttl 3s\nhot-owners %d\ncold-owners 0\n"
             "class default pool hot fresh 60s keep 120s\n%s",
             host, mc_etcd.port, hot, extra != NULL ? extra : "");
    h_write_conf(d, text);
}

static inline void mc_start(struct daemon *d, const char *env);

/* One host with `leaf-moves yes` and no etcd (the agent keeps the map in
 * dir), two hot owners, one edge, `extra` lines; started with env. */
static inline void mc_local_start(struct daemon *d, const char *extra, const char *env)
{
    mc_dir(d);
    char text[4096];
    snprintf(text, sizeof(text),
             "edge-workers 1\nleaf-moves yes\nhot-owners 2\ncold-owners 0\n"
             "class default pool hot fresh 60s keep 120s\n%s", extra != NULL ? extra : "");
    h_write_conf(d, text);
    mc_start(d, env);
}

/* Stops d (if it runs) and removes its dir. */
static inline void mc_down(struct daemon *d)
{
    if (d->pid > 0)
        h_stop(d);
    else if (d->dir[0])
        h_rmtree(d->dir);
    memset(d, 0, sizeof(*d));
}

static inline int mc_run(const char *const *argv, char *out, size_t len, int ms)
{
    return h_run((char *const *)argv, NULL, out, len, ms);
}

static inline void mc_cluster_init(const struct daemon *d, const char *owners, int bits)
{
    char b[8], out[4096];
    snprintf(b, sizeof(b), "%d", bits);
    const char *argv[] = {h_bin(), "--cluster-init", d->conf, "--owners", owners, "--bits", b, NULL};
    int rc = mc_run(argv, out, sizeof(out), 30000);
    ck_assert_msg(rc == 0, "hotkvd --cluster-init failed (%d): %s", rc, out);
}

static inline void mc_start(struct daemon *d, const char *env)
{
    char *argv[] = {(char *)h_bin(), d->conf, NULL};
    d->pid = h_spawn(argv, env);
    int64_t end = h_now_ms() + MC_UP_MS;
    while (h_now_ms() < end && !h_ping(d->port)) {
        if (waitpid(d->pid, NULL, WNOHANG) == d->pid) {
            d->pid = 0;
            h_dump_log(d);
            ck_abort_msg("hotkvd exited at start (%s)", d->conf);
        }
        h_sleep_ms(50);
    }
    ck_assert_msg(h_ping(d->port), "hotkvd did not answer PING within %d ms", MC_UP_MS);
}


/* SET k v over fd: +OK or the test fails. */
static inline void mc_set_ok(int fd, const char *k, const char *v)
{
    struct h_reply *r = h_cmdv(fd, "SET", k, v, NULL);
    ck_assert_msg(r != NULL && r->v->type == RESP_SIMPLE, "SET %s: %s", k,
                  r != NULL && r->v->str ? r->v->str : "no reply");
    h_free(r);
}

/* GET k over fd is v (NULL: nil), or the test fails. */
static inline void mc_get_is(int fd, const char *k, const char *v)
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

/* hotkvd-admin CONF args...: its exit code, its output in out. */
static inline int mc_admin(const struct daemon *d, char *out, size_t len, int ms, const char *a,
                           const char *b, const char *c, const char *e, const char *f,
                           const char *g)
{
    const char *admin = getenv("HOTKVD_ADMIN_BIN");
    ck_assert_msg(admin != NULL, "HOTKVD_ADMIN_BIN is not set (run through make)");
    const char *argv[] = {admin, d->conf, a, b, c, e, f, g, NULL};
    return mc_run(argv, out, len, ms);
}

/* The first leaf `leaf list` shows served by owner n: its "bits-prefix",
 * start and bits; 0, or -1 if there is none. */
static inline int mc_leaf_of(const struct daemon *d, unsigned n, char *leaf, size_t len,
                             uint32_t *start, int *bits)
{
    char out[65536];
    if (mc_admin(d, out, sizeof(out), 20000, "leaf", "list", NULL, NULL, NULL, NULL) != 0)
        return -1;
    for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        unsigned b, p, owner;
        char state[16];
        if (sscanf(line, "leaf hot %u-%x owner %u %*s state %15s", &b, &p, &owner, state) == 4 &&
            owner == n && strcmp(state, "serving") == 0) {
            snprintf(leaf, len, "%u-%08x", b, p);
            *bits = (int)b;
            *start = b == 0 ? 0 : p << (32 - b);
            return 0;
        }
    }
    return -1;
}

/* The owner `leaf list` names for leaf "bits-prefix" (0: not found), and its
 * state in state (16 bytes). */
static inline unsigned mc_leaf_owner(const struct daemon *d, const char *leaf, char *state)
{
    char out[65536], want[48];
    if (mc_admin(d, out, sizeof(out), 20000, "leaf", "list", NULL, NULL, NULL, NULL) != 0)
        return 0;
    snprintf(want, sizeof(want), "leaf hot %s owner ", leaf);
    char *at = strstr(out, want);
    unsigned owner = 0;
    if (at != NULL)
        sscanf(at + strlen(want), "%u %*s state %15s", &owner, state);
    return owner;
}

/* n keys "<prefix>:<i>" whose placement falls in leaf (start, bits). */
static inline void mc_keys_in(uint32_t start, int bits, const char *prefix, char keys[][32], int n)
{
    int k = 0;
    for (int i = 0; k < n && i < 10000000; i++) {
        char key[32];
        snprintf(key, sizeof(key), "%s:%d", prefix, i);
        uint32_t top = (uint32_t)(router_place(key, strlen(key)) >> 32);
        if ((uint64_t)top - start < (1ULL << (32 - bits)))
            snprintf(keys[k++], 32, "%s", key);
    }
    ck_assert_int_eq(k, n);
}

/* ---- a steady writer and a reader ---------------------------------------------- */

#define MC_KEYS 16

struct mc_load {
    int port;
    char keys[MC_KEYS][32];
    int nkeys;
    int interval_us;                 /* between writes */
    atomic_int stop;
    /* writer */
    long long acked[MC_KEYS];        /* the last value acknowledged per key */
    atomic_llong writes, failures;
    char first_failure[256];
    long long max_write_us;
    /* reader */
    atomic_llong reads, backwards, read_errors;
    char first_backwards[256];
    pthread_t wt, rt;
};

/* A client connection of the steady load.  A request on a moving leaf may
 * wait (parked at the source while the leaf is fenced or its commit is in
 * doubt) up to OPARK_WAIT_MS (10 s) and is then answered TRYAGAIN: the
 * load's clients wait longer than that (h_connect's 5 s would count a
 * promised wait as a failure). */
static inline int mc_connect(int port)
{
    int fd = h_connect(port);
    if (fd >= 0) {
        struct timeval tv = {15, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    }
    return fd;
}

/* SET k v through port until one is +OK, within ms: the time it took, or
 * -1.  A daemon answers PING before its owners have read their first map;
 * a test that changes the map behind an owner's back must first know the
 * owner serves (an owner whose FIRST map shows its leaf with an in-sync
 * follower takes itself for a restarted one and waits for a promotion). */
static inline int64_t mc_set_until_ok(int port, const char *k, const char *v, int ms)
{
    int64_t t0 = h_now_ms();
    for (int64_t end = t0 + ms; h_now_ms() < end;) {
        int w = mc_connect(port);
        struct h_reply *x = w >= 0 ? h_cmdv(w, "SET", k, v, NULL) : NULL;
        int ok = x != NULL && h_str_is(x->v, "OK");
        h_free(x);
        if (w >= 0)
            close(w);
        if (ok)
            return h_now_ms() - t0;
        h_sleep_ms(50);
    }
    return -1;
}

static inline void *mc_writer(void *arg)
{
    struct mc_load *L = arg;
    int fd = mc_connect(L->port);
    long long seq = 0;
    while (!atomic_load(&L->stop) && fd >= 0) {
        int k = (int)(seq % L->nkeys);
        char val[32];
        snprintf(val, sizeof(val), "%lld", ++seq);
        int64_t t0 = h_now_ms();
        struct h_reply *r = h_cmdv(fd, "SET", L->keys[k], val, NULL);
        long long us = (h_now_ms() - t0) * 1000;
        if (us > L->max_write_us)
            L->max_write_us = us;
        if (r != NULL && r->v->type == RESP_SIMPLE && r->v->len == 2 &&
            memcmp(r->v->str, "OK", 2) == 0) {
            L->acked[k] = seq;
        } else {
            if (atomic_fetch_add(&L->failures, 1) == 0)
                snprintf(L->first_failure, sizeof(L->first_failure), "SET %s %s: %.*s",
                         L->keys[k], val, r != NULL && r->v->str ? (int)r->v->len : 7,
                         r != NULL && r->v->str ? r->v->str : "no reply");
            if (r == NULL) {
                close(fd);
                fd = mc_connect(L->port);
            }
        }
        atomic_fetch_add(&L->writes, 1);
        h_free(r);
        if (L->interval_us > 0)
            usleep((useconds_t)L->interval_us);
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static inline void *mc_reader(void *arg)
{
    struct mc_load *L = arg;
    int fd = mc_connect(L->port);
    long long last[MC_KEYS] = {0};
    for (int i = 0; !atomic_load(&L->stop) && fd >= 0; i++) {
        int k = i % L->nkeys;
        struct h_reply *r = h_cmdv(fd, "GET", L->keys[k], NULL);
        atomic_fetch_add(&L->reads, 1);
        if (r == NULL || (r->v->type != RESP_BULK && r->v->type != RESP_NULL)) {
            atomic_fetch_add(&L->read_errors, 1);
            h_free(r);
            if (r == NULL) {
                close(fd);
                fd = mc_connect(L->port);
            }
            continue;
        }
        long long v = r->v->type == RESP_BULK ? atoll(r->v->str) : 0;
        if (v < last[k] && atomic_fetch_add(&L->backwards, 1) == 0)
            snprintf(L->first_backwards, sizeof(L->first_backwards), "%s read %lld after %lld",
                     L->keys[k], v, last[k]);
        if (v > last[k])
            last[k] = v;
        h_free(r);
        usleep(500);
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static inline void mc_load_start(struct mc_load *L, int port, char keys[][32], int n, int us)
{
    memset(L, 0, sizeof(*L));
    L->port = port;
    L->nkeys = n;
    L->interval_us = us;
    for (int i = 0; i < n; i++)
        memcpy(L->keys[i], keys[i], sizeof(L->keys[i]));
    ck_assert_int_eq(pthread_create(&L->wt, NULL, mc_writer, L), 0);
    ck_assert_int_eq(pthread_create(&L->rt, NULL, mc_reader, L), 0);
}

static inline void mc_load_stop(struct mc_load *L)
{
    atomic_store(&L->stop, 1);
    pthread_join(L->wt, NULL);
    pthread_join(L->rt, NULL);
}

/* Every acknowledged write reads back (or a newer value: none is in flight
 * once the writer stopped, so exactly the last one). */
static inline void mc_check_acked(const struct mc_load *L, int port)
{
    int fd = h_connect(port);
    ck_assert_int_ge(fd, 0);
    for (int k = 0; k < L->nkeys; k++) {
        if (L->acked[k] == 0)
            continue;
        struct h_reply *r = h_cmdv(fd, "GET", L->keys[k], NULL);
        ck_assert_ptr_nonnull(r);
        long long v = r->v->type == RESP_BULK ? atoll(r->v->str) : -1;
        ck_assert_msg(v == L->acked[k], "%s: read %lld, the last acknowledged write was %lld",
                      L->keys[k], v, L->acked[k]);
        h_free(r);
    }
    close(fd);
}

/* Prints INFO # Leaves' fence and parked-request figures of d (the owners'
 * STATS are polled every second: call a second after the move). */
static inline void mc_print_leaves(const struct daemon *d, const char *what)
{
    h_sleep_ms(1200);
    fprintf(stderr, "%s: fence last %lld ms max %lld ms; parked %lld (writes %lld), wait p99 <= "
            "%lld ms, max %lld ms, timeouts %lld; copy %lld rows %lld bytes in %lld ms\n", what,
            (long long)h_info_int(d->port, "leaf_fence_ms_last"),
            (long long)h_info_int(d->port, "leaf_fence_ms_max"),
            (long long)h_info_int(d->port, "leaf_parked"),
            (long long)h_info_int(d->port, "leaf_parked_writes"),
            (long long)h_info_int(d->port, "leaf_parked_ms_p99"),
            (long long)h_info_int(d->port, "leaf_parked_ms_max"),
            (long long)h_info_int(d->port, "leaf_parked_timeouts"),
            (long long)h_info_int(d->port, "leaf_copy_rows"),
            (long long)h_info_int(d->port, "leaf_copy_bytes"),
            (long long)h_info_int(d->port, "leaf_copy_ms_last"));
}

/* The split scenario both map stores share (check_move: etcd; check_move_local:
 * the local store): 40 keys of owner 1's first leaf, a split by the admin
 * tool, both halves owner 1's and serving, every key read back and written
 * again, DBSIZE unchanged, and a second split of the gone leaf refused. */
static inline void mc_split_unseen(const struct daemon *d)
{
    char leaf[32], keys[40][32], out[4096], v[32];
    uint32_t start;
    int bits;
    ck_assert_int_eq(mc_leaf_of(d, 1, leaf, sizeof(leaf), &start, &bits), 0);
    mc_keys_in(start, bits, "s", keys, 40);
    int fd = h_connect(d->port);
    for (int i = 0; i < 40; i++) {
        snprintf(v, sizeof(v), "a%d", i);
        mc_set_ok(fd, keys[i], v);
    }
    struct h_reply *r = h_cmdv(fd, "DBSIZE", NULL);
    long long before = r->v->integer;
    h_free(r);
    int rc = mc_admin(d, out, sizeof(out), 20000, "leaf", "split", "hot", leaf, NULL, NULL);
    ck_assert_msg(rc == 0, "leaf split: %s", out);
    ck_assert_ptr_nonnull(strstr(out, "split hot"));
    /* both halves are owner 1's, at a new epoch */
    char half0[32], half1[32], state[16] = "";
    snprintf(half0, sizeof(half0), "%d-%08x", bits + 1, start >> (31 - bits));
    snprintf(half1, sizeof(half1), "%d-%08x", bits + 1, (start >> (31 - bits)) + 1);
    ck_assert_uint_eq(mc_leaf_owner(d, half0, state), 1);
    ck_assert_str_eq(state, "serving");
    ck_assert_uint_eq(mc_leaf_owner(d, half1, state), 1);
    for (int i = 0; i < 40; i++) {
        snprintf(v, sizeof(v), "a%d", i);
        mc_get_is(fd, keys[i], v);
        snprintf(v, sizeof(v), "b%d", i);
        mc_set_ok(fd, keys[i], v);
        mc_get_is(fd, keys[i], v);
    }
    r = h_cmdv(fd, "DBSIZE", NULL);
    ck_assert_int_eq(r->v->integer, before);
    h_free(r);
    /* a split of a moving or missing leaf is refused */
    rc = mc_admin(d, out, sizeof(out), 20000, "leaf", "split", "hot", leaf, NULL, NULL);
    ck_assert_int_ne(rc, 0);
    close(fd);
}

#endif
