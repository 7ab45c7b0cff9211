/*
 * check_crash.c - kill -9 of a shard owner under write load.  Two writers
 * talk to owner cold/0 over its binary protocol, each sequentially, as fast
 * as acknowledgments come: one writes durable-class keys, the other
 * ledger-class keys, each value its sequence number, and each records when
 * its acknowledgment arrived.  The owner is killed with SIGKILL mid-stream;
 * once the master has restarted it, every acknowledged durable write must be
 * there, and the acknowledged ledger writes that are missing must all have
 * been acknowledged within the last persist-interval (plus a commit) before
 * the kill.  The test prints the measured loss window.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"

#define PERSIST_INTERVAL_MS 100
#define CRASH_CONF                                                     \
    "edge-workers 1\nhot-owners 1\ncold-owners 1\n"                    \
    "class money pattern \"balance:*\" pool cold durability durable\n" \
    "class default pool cold durability ledger\n"                      \
    "durable-timeout 2s\npersist-interval 100ms\n"

enum {
    LOAD_MS = 2000,
    WRITES_MAX = 1000000,    /* per writer: bounds the loop by count too */
    WINDOW_MS = PERSIST_INTERVAL_MS * 3 + 200,
};

/* h_start in h_fixture_dir.  0 or -1 (the log is printed). */
static int start_in_dir(struct daemon *d, const char *extra)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->dir, sizeof(d->dir), "%s", h_fixture_dir);
    d->port = h_free_port();
    snprintf(d->conf, sizeof(d->conf), "%s/hotkvd.conf", d->dir);
    snprintf(d->log, sizeof(d->log), "%s/hotkvd.log", d->dir);
    h_write_conf(d, extra);
    return h_restart(d); /* spawn on this dir, wait for PING */
}

/* PID of the child whose title is `title` ("hotkvd: owner cold/0"), or 0. */
static pid_t child_titled(const struct daemon *d, const char *title)
{
    return h_child(d, title, 0);
}

/* ---- the writers ---- */

struct writer {
    const struct daemon *d;
    const char *prefix;      /* "balance:" (durable) or "seq:" (ledger) */
    uint32_t writer_id;
    int64_t *ack_ms;         /* [i]: when write i was acknowledged (monotonic) */
    int acked;               /* writes 0..acked-1 were acknowledged */
    int opened;
    int last_type;           /* the reply that stopped it (0: none / EOF) */
    volatile int *stop;
};

/* Writes <prefix><i> = "<i>" for i = 0, 1, ... one at a time, until the
 * link fails, a write is refused, *stop is set or WRITES_MAX. */
static void *writer_main(void *arg)
{
    struct writer *wr = arg;
    struct h_wire w;
    if (h_wire_open(&w, wr->d, "cold", 0, WIRE_ROLE_WRITE) != 0) {
        h_wire_close(&w);
        return NULL;
    }
    wr->opened = 1;
    struct hkv_buf b = HKV_BUF_INIT;
    char key[48], val[24];
    struct wire_expiry none = {WIRE_EXP_NONE, 0};
    while (!*wr->stop && wr->acked < WRITES_MAX) {
        int i = wr->acked;
        snprintf(key, sizeof(key), "%s%d", wr->prefix, i);
        snprintf(val, sizeof(val), "%d", i);
        buf_reset(&b);
        uint64_t id = h_wire_id(&w);
        wire_put_set(&b, id, wire_cstr(key), wire_cstr(val), h_wire_rid(&w), none,
                     0);
        struct wire_msg m;
        if (h_wire_call(&w, &b, id, 5000, &m) != 0)
            break;
        if (m.type != WIRE_OK) {
            wr->last_type = m.type;
            break;
        }
        wr->ack_ms[i] = h_now_ms();
        wr->acked = i + 1;
    }
    buf_deinit(&b);
    h_wire_close(&w);
    return NULL;
}

/* Reads <prefix><i> for i < n in GETs of up to 200 keys; sets lost[i] = 1
 * where the value is not "<i>".  Returns the number lost, -1 on a failed
 * call. */
static int find_lost(struct h_wire *w, const char *prefix, int n, char *lost)
{
    enum { CHUNK = 200 };
    static char keys[CHUNK][48];
    struct wire_slice ks[CHUNK];
    int nlost = 0;
    for (int base = 0; base < n; base += CHUNK) {
        int k = n - base < CHUNK ? n - base : CHUNK;
        for (int j = 0; j < k; j++) {
            snprintf(keys[j], sizeof(keys[j]), "%s%d", prefix, base + j);
            ks[j] = wire_cstr(keys[j]);
        }
        struct hkv_buf b = HKV_BUF_INIT;
        uint64_t id = h_wire_id(w);
        wire_put_get(&b, id, ks, (uint32_t)k);
        struct wire_msg m;
        int rc = h_wire_call(w, &b, id, 10000, &m);
        buf_deinit(&b);
        if (rc != 0)
            return -1;
        for (int j = 0; j < k; j++) {
            char v[24];
            snprintf(v, sizeof(v), "%d", base + j);
            struct wire_slice got = {NULL, 0};
            int found = 0;
            if (k == 1 && m.type == WIRE_VALUE) {
                found = 1;
                got = m.u.value.value;
            } else if (m.type == WIRE_VALUES && j < (int)m.u.values.nitems &&
                       m.u.values.items[j].found) {
                found = 1;
                got = m.u.values.items[j].value;
            }
            lost[base + j] = !(found && got.len == strlen(v) && memcmp(got.p, v, got.len) == 0);
            nlost += lost[base + j];
        }
    }
    return nlost;
}

/* The body of both tests; with_durable 0 runs the ledger writer alone (no
 * durable commit sweeps its keys to disk early, so the window is the
 * persist-interval's own). */
static void kill9_under_load(int with_durable)
{
    struct daemon d;
    ck_assert_int_eq(start_in_dir(&d, CRASH_CONF), 0);
    struct h_wire w;
    ck_assert_int_eq(h_wire_open_wait(&w, &d, WIRE_ROLE_READ, 10000), 0);
    h_wire_close(&w);
    pid_t owner = child_titled(&d, "hotkvd: owner cold/0");
    ck_assert_int_ne(owner, 0);

    volatile int stop = 0;
    struct writer dur = {&d, "balance:", 4201, calloc(WRITES_MAX, sizeof(int64_t)), 0, 0, 0, &stop};
    struct writer led = {&d, "seq:", 4202, calloc(WRITES_MAX, sizeof(int64_t)), 0, 0, 0, &stop};
    ck_assert_ptr_nonnull(dur.ack_ms);
    ck_assert_ptr_nonnull(led.ack_ms);
    pthread_t td, tl;
    if (with_durable)
        ck_assert_int_eq(pthread_create(&td, NULL, writer_main, &dur), 0);
    ck_assert_int_eq(pthread_create(&tl, NULL, writer_main, &led), 0);
    h_sleep_ms(LOAD_MS);
    int64_t t_kill = h_now_ms();
    int rc = kill(owner, SIGKILL);
    stop = 1;
    if (with_durable)
        pthread_join(td, NULL);
    pthread_join(tl, NULL);
    ck_assert_int_eq(rc, 0);
    ck_assert(led.opened && (dur.opened || !with_durable));
    fprintf(stderr, "crash: under load for %d ms: %d durable and %d ledger writes acknowledged; "
            "last ledger ack %lld ms before the kill\n", LOAD_MS, dur.acked, led.acked,
            led.acked > 0 ? (long long)(t_kill - led.ack_ms[led.acked - 1]) : -1LL);
    /* A refusal (not a dropped link) would be a bug of its own. */
    ck_assert_msg(dur.last_type == 0 && led.last_type == 0,
                  "a writer was refused before the kill: durable %d ledger %d", dur.last_type,
                  led.last_type);
    if (with_durable)
        ck_assert_int_gt(dur.acked, 10);
    ck_assert_int_gt(led.acked, 1000);

    /* The master restarts the owner; it recovers from its file. */
    int64_t end = h_now_ms() + 10000;
    int ok = -1;
    pid_t again = 0;
    while (h_now_ms() < end) {
        again = child_titled(&d, "hotkvd: owner cold/0");
        if (again != 0 && again != owner && (ok = h_wire_open_wait(&w, &d, WIRE_ROLE_READ, 0)) == 0)
            break;
        h_sleep_ms(50);
    }
    ck_assert_msg(ok == 0, "the owner was not back within 10 s");
    fprintf(stderr, "crash: owner %d restarted as %d, serving %lld ms after the kill\n",
            (int)owner, (int)again, (long long)(h_now_ms() - t_kill));

    char *lost_d = calloc((size_t)dur.acked + 1, 1), *lost_l = calloc((size_t)led.acked + 1, 1);
    ck_assert(lost_d != NULL && lost_l != NULL);
    int nlost_d = find_lost(&w, "balance:", dur.acked, lost_d);
    int nlost_l = find_lost(&w, "seq:", led.acked, lost_l);
    h_wire_close(&w);
    ck_assert_int_ge(nlost_d, 0);
    ck_assert_int_ge(nlost_l, 0);
    for (int i = 0, shown = 0; i < dur.acked && shown < 5; i++)
        if (lost_d[i] && ++shown)
            fprintf(stderr, "crash: acknowledged durable write balance:%d lost (acked %lld ms "
                            "before the kill)\n", i, (long long)(t_kill - dur.ack_ms[i]));
    ck_assert_msg(nlost_d == 0, "%d acknowledged durable writes lost by kill -9", nlost_d);

    /* Ledger class: what was lost must lie in the window before the kill. */
    int oldest = -1, outside = 0;
    for (int i = 0; i < led.acked; i++) {
        if (!lost_l[i])
            continue;
        if (oldest < 0)
            oldest = i;
        if (t_kill - led.ack_ms[i] > WINDOW_MS) {
            if (outside < 5)
                fprintf(stderr, "crash: ledger write seq:%d lost, acked %lld ms before the kill\n",
                        i, (long long)(t_kill - led.ack_ms[i]));
            outside++;
        }
    }
    if (oldest >= 0)
        fprintf(stderr, "crash: ledger-class loss window: %lld ms, %d writes (of %d acknowledged; "
                        "bound %d ms)\n", (long long)(t_kill - led.ack_ms[oldest]), nlost_l,
                led.acked, WINDOW_MS);
    else
        fprintf(stderr, "crash: ledger-class loss window: 0 ms, 0 writes (of %d acknowledged)\n",
                led.acked);
    ck_assert_msg(outside == 0,
                  "%d lost ledger writes were acknowledged more than %d ms before the kill",
                  outside, WINDOW_MS);
    free(lost_d);
    free(lost_l);
    free(dur.ack_ms);
    free(led.ack_ms);
    int status = h_stop(&d);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "stop status %d", status);
}

START_TEST(owner_kill_9_under_mixed_load_loses_no_durable_write)
{
    kill9_under_load(1);
}
END_TEST

START_TEST(owner_kill_9_loses_ledger_writes_only_within_persist_interval)
{
    kill9_under_load(0);
}
END_TEST

Suite *crash_suite(void)
{
    Suite *s = suite_create("crash");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"owner_kill9_mixed", owner_kill_9_under_mixed_load_loses_no_durable_write},
        {"owner_kill9_ledger", owner_kill_9_loses_ledger_writes_only_within_persist_interval},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 90);
        tcase_add_unchecked_fixture(tc, h_dir_setup, h_dir_teardown);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
