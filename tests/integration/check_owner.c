/*
 * check_owner.c - a shard owner over its binary protocol, inside the real
 * daemon: writes and reads, owner-issued versions and exactly-once retries, durable commits, recovery after
 * an orderly stop and after kill -9, MOVED, and a hostile frame.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/core/router.h"
#include "tests/harness.h"

#define ONE_EACH "edge-workers 1\nhot-owners 1\ncold-owners 1\n"
#define DURABLE_CLASS "class money pattern \"balance:*\" pool cold durability durable\n"

static int get(struct h_wire *w, const char *key, struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    uint64_t id = h_wire_id(w);
    struct wire_slice k = wire_cstr(key);
    wire_put_get(&b, id, &k, 1);
    int rc = h_wire_call(w, &b, id, 5000, m);
    buf_deinit(&b);
    return rc;
}

static int value_is(const struct wire_msg *m, const char *v)
{
    return m->type == WIRE_VALUE && m->u.value.value.len == strlen(v) &&
           memcmp(m->u.value.value.p, v, strlen(v)) == 0;
}

static pid_t owner_pid(const struct daemon *d, const char *title)
{
    return h_child(d, title, 0);
}

START_TEST(set_get_and_recovery_after_orderly_stop)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, ONE_EACH), 0);
    struct h_wire w;
    ck_assert_int_eq(h_wire_open(&w, &d, "cold", 0, WIRE_ROLE_WRITE), 0);
    struct wire_msg m;
    ck_assert_int_eq(h_wire_set(&w, "draw:today", "7 12 19 33 41", 5000, &m), 0);
    ck_assert_int_eq(m.type, WIRE_OK);
    ck_assert(m.u.ok.applied);
    ck_assert_int_eq(get(&w, "draw:today", &m), 0);
    ck_assert(value_is(&m, "7 12 19 33 41"));
    ck_assert_int_eq(get(&w, "draw:missing", &m), 0);
    ck_assert_int_eq(m.type, WIRE_NOTFOUND);
    h_wire_close(&w);
    ck_assert_int_eq(WEXITSTATUS(h_halt(&d)), 0);
    ck_assert_int_eq(h_restart(&d), 0);
    ck_assert_int_eq(h_wire_open(&w, &d, "cold", 0, WIRE_ROLE_READ), 0);
    ck_assert_int_eq(get(&w, "draw:today", &m), 0);
    ck_assert_msg(value_is(&m, "7 12 19 33 41"), "value lost across an orderly restart");
    h_wire_close(&w);
    h_stop(&d);
}
END_TEST

/* Sends one SET with rid and returns the reply in *m. */
static void set_rid(struct h_wire *w, const char *k, const char *v, uint32_t flags,
                    struct wire_rid rid, struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    uint64_t id = h_wire_id(w);
    struct wire_expiry none = {WIRE_EXP_NONE, 0};
    ck_assert_int_eq(wire_put_set(&b, id, wire_cstr(k), wire_cstr(v), rid, none, flags), HKV_OK);
    ck_assert_int_eq(h_wire_call(w, &b, id, 5000, m), 0);
    buf_deinit(&b);
}

static void incr_rid(struct h_wire *w, const char *k, struct wire_rid rid, struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    uint64_t id = h_wire_id(w);
    ck_assert_int_eq(wire_put_incrby(&b, id, wire_cstr(k), 1, rid), HKV_OK);
    ck_assert_int_eq(h_wire_call(w, &b, id, 5000, m), 0);
    buf_deinit(&b);
}

/* A new request id that still holds every request from `oldest` on as
 * unfinished (so the owner keeps their results for a retry). */
static struct wire_rid rid_from(struct h_wire *w, uint64_t oldest)
{
    struct wire_rid r = h_wire_rid(w);
    r.ack = oldest;
    return r;
}

START_TEST(owner_orders_writes_and_applies_retries_once)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, ONE_EACH), 0);
    struct h_wire w;
    ck_assert_int_eq(h_wire_open(&w, &d, "cold", 0, WIRE_ROLE_WRITE), 0);
    struct wire_msg m;
    /* Two writes in a row: the owner versions them in arrival order. */
    struct wire_rid first = h_wire_rid(&w);
    set_rid(&w, "k", "first", 0, first, &m);
    ck_assert_int_eq(m.type, WIRE_OK);
    ck_assert(m.u.ok.applied);
    hkv_stamp v1 = m.u.ok.stamp;
    set_rid(&w, "k", "second", 0, rid_from(&w, 1), &m);
    ck_assert_int_eq(m.type, WIRE_OK);
    hkv_stamp v2 = m.u.ok.stamp;
    ck_assert_uint_gt(v2, v1);
    /* A retry of the first (its reply was "lost"): the original answer, and
     * the write is not applied again over the second. */
    first.prev = w.owner_inc;
    set_rid(&w, "k", "first", 0, first, &m);
    ck_assert_int_eq(m.type, WIRE_OK);
    ck_assert_uint_eq(m.u.ok.stamp, v1);
    ck_assert_int_eq(get(&w, "k", &m), 0);
    ck_assert(value_is(&m, "second"));
    ck_assert_uint_eq(m.u.value.stamp, v2);
    /* INCR retried: counted once. */
    struct wire_rid inc = rid_from(&w, 1);
    incr_rid(&w, "n", inc, &m);
    ck_assert_int_eq(m.type, WIRE_INT);
    ck_assert_int_eq(m.u.integer.value, 1);
    ck_assert_uint_gt(m.u.integer.stamp, v2);
    inc.prev = w.owner_inc;
    incr_rid(&w, "n", inc, &m);
    ck_assert_int_eq(m.u.integer.value, 1);
    ck_assert_int_eq(get(&w, "n", &m), 0);
    ck_assert(value_is(&m, "1"));
    /* SET NX: granted once; its retry says granted again; another is refused. */
    struct wire_rid nx = rid_from(&w, 1);
    set_rid(&w, "lock", "A", WIRE_SET_NX, nx, &m);
    ck_assert(m.u.ok.applied);
    nx.prev = w.owner_inc;
    set_rid(&w, "lock", "A", WIRE_SET_NX, nx, &m);
    ck_assert(m.u.ok.applied);
    set_rid(&w, "lock", "B", WIRE_SET_NX, rid_from(&w, 1), &m);
    ck_assert(!m.u.ok.applied);
    ck_assert_int_eq(get(&w, "lock", &m), 0);
    ck_assert(value_is(&m, "A"));
    /* A retry whose first attempt may have reached another run of the owner
     * (prev names another incarnation) and that this run has no record of:
     * "outcome unknown", not applied. */
    struct wire_rid stray = rid_from(&w, 1);
    stray.prev = w.owner_inc + 1;
    set_rid(&w, "k", "stray", 0, stray, &m);
    ck_assert_int_eq(m.type, WIRE_ERROR);
    ck_assert_msg(m.u.error.text.len > 0 && memmem(m.u.error.text.p, m.u.error.text.len,
                                                   "outcome unknown", 15) != NULL,
                  "the error must say the outcome is unknown");
    ck_assert_int_eq(get(&w, "k", &m), 0);
    ck_assert(value_is(&m, "second"));
    /* A delete gets a newer version, which the absence then carries. */
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_slice key = wire_cstr("k");
    uint64_t id = h_wire_id(&w);
    wire_put_del(&b, id, &key, 1, rid_from(&w, 1));
    ck_assert_int_eq(h_wire_call(&w, &b, id, 5000, &m), 0);
    ck_assert_int_eq(m.type, WIRE_INT);
    ck_assert_int_eq(m.u.integer.value, 1);
    hkv_stamp vdel = m.u.integer.stamp;
    ck_assert_uint_gt(vdel, v2);
    ck_assert_int_eq(get(&w, "k", &m), 0);
    ck_assert_int_eq(m.type, WIRE_NOTFOUND);
    ck_assert_uint_eq(m.u.notfound.stamp, vdel);
    buf_deinit(&b);
    h_wire_close(&w);
    h_stop(&d);
}
END_TEST

/* owner_rifl.h R1 (issue 25, 1): a request below its writer's ack has no
 * record (the writer said it finished), so a copy of it arriving now, as a
 * first attempt or as a retry that names this very owner, is answered
 * "outcome unknown" and never applied (it was applied twice before). */
START_TEST(a_request_below_the_writers_ack_is_never_applied)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, ONE_EACH), 0);
    struct h_wire w;
    ck_assert_int_eq(h_wire_open(&w, &d, "cold", 0, WIRE_ROLE_WRITE), 0);
    struct wire_msg m;
    struct wire_rid early = h_wire_rid(&w), late = h_wire_rid(&w);
    late.ack = late.seq; /* says `early` is finished */
    incr_rid(&w, "other", late, &m);
    ck_assert_int_eq(m.type, WIRE_INT);
    early.ack = late.seq;
    for (int attempt = 0; attempt < 3; attempt++) {
        early.prev = attempt == 0 ? 0 : w.owner_inc;
        incr_rid(&w, "n", early, &m);
        ck_assert_msg(m.type == WIRE_ERROR && memmem(m.u.error.text.p, m.u.error.text.len,
                                                     "outcome unknown", 15) != NULL,
                      "attempt %d of a request below ack: type %d, not outcome unknown",
                      attempt, m.type);
    }
    ck_assert_int_eq(get(&w, "n", &m), 0);
    ck_assert_int_eq(m.type, WIRE_NOTFOUND);
    h_wire_close(&w);
    h_stop(&d);
}
END_TEST

START_TEST(durable_write_survives_kill_9)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, ONE_EACH DURABLE_CLASS), 0);
    struct h_wire w;
    ck_assert_int_eq(h_wire_open(&w, &d, "cold", 0, WIRE_ROLE_WRITE), 0);
    struct wire_msg m;
    char key[32], val[32];
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof(key), "balance:%d", i);
        snprintf(val, sizeof(val), "%d", i * 10);
        ck_assert_int_eq(h_wire_set(&w, key, val, 5000, &m), 0);
        ck_assert_int_eq(m.type, WIRE_OK);
    }
    h_wire_close(&w);
    pid_t owner = owner_pid(&d, "hotkvd: owner cold/0");
    ck_assert_int_ne(owner, 0);
    kill(owner, SIGKILL);
    int64_t end = h_now_ms() + 5000;
    int ok = -1;
    while (h_now_ms() < end && (ok = h_wire_open(&w, &d, "cold", 0, WIRE_ROLE_READ)) != 0) {
        h_wire_close(&w);
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    ck_assert_int_eq(ok, 0);
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof(key), "balance:%d", i);
        snprintf(val, sizeof(val), "%d", i * 10);
        ck_assert_int_eq(get(&w, key, &m), 0);
        ck_assert_msg(value_is(&m, val), "acknowledged durable write %s lost by kill -9", key);
    }
    h_wire_close(&w);
    h_stop(&d);
}
END_TEST

START_TEST(foreign_key_answers_moved)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "edge-workers 1\nhot-owners 1\ncold-owners 2\n"), 0);
    /* Find a key that owner cold/1 holds, and ask cold/0 for it. */
    struct cfg *cfg = cfg_create();
    cfg->cold_owners = 2;
    struct router *r = router_create(cfg);
    char key[32];
    int i = 0;
    for (; i < 1000; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        if (router_owner(r, CFG_POOL_COLD, router_hash(key, strlen(key))) == 1)
            break;
    }
    ck_assert_int_lt(i, 1000);
    uint64_t h = router_hash(key, strlen(key));
    uint32_t leaf;
    uint8_t bits;
    router_leaf(r, CFG_POOL_COLD, h, &leaf, &bits);
    router_destroy(&r);
    cfg_destroy(&cfg);
    struct h_wire w;
    ck_assert_int_eq(h_wire_open(&w, &d, "cold", 0, WIRE_ROLE_READ), 0);
    struct wire_msg m;
    ck_assert_int_eq(get(&w, key, &m), 0);
    ck_assert_int_eq(m.type, WIRE_MOVED);
    ck_assert_uint_eq(m.u.moved.owner, 1);
    ck_assert_uint_eq(m.u.moved.leaf, leaf);
    ck_assert_uint_eq(m.u.moved.leaf_bits, bits);
    h_wire_close(&w);
    h_stop(&d);
}
END_TEST

START_TEST(oversized_frame_closes_link_and_owner_lives)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, ONE_EACH "wire-max-frame 4mb\nproto-max-bulk-len 1mb\n"), 0);
    struct h_wire w;
    ck_assert_int_eq(h_wire_open(&w, &d, "cold", 0, WIRE_ROLE_READ), 0);
    unsigned char hdr[4] = {0x7f, 0xff, 0xff, 0xff}; /* 2 GiB declared */
    ck_assert_int_eq(h_send(w.fd, hdr, 4), 0);
    struct wire_msg m;
    ck_assert_int_eq(h_wire_call(&w, NULL, 0, 5000, &m), 0);
    ck_assert_int_eq(m.type, WIRE_ERROR);
    char c;
    ck_assert_int_le(recv(w.fd, &c, 1, 0), 0); /* closed */
    h_wire_close(&w);
    ck_assert_int_eq(h_wire_open(&w, &d, "cold", 0, WIRE_ROLE_READ), 0);
    ck_assert_int_eq(h_wire_set(&w, "still", "here", 5000, &m), 0);
    ck_assert_int_eq(m.type, WIRE_OK);
    h_wire_close(&w);
    h_stop(&d);
}
END_TEST

/* A data set larger than owner-maxmemory: after a restart the ledger holds
 * what fits, and every other key is read by the reader thread from SQLite
 * (the loop parks the request and replays it when the row arrives). */
START_TEST(keys_beyond_maxmemory_are_read_from_disk)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, ONE_EACH "owner-maxmemory 256kb\n"), 0);
    struct h_wire w;
    ck_assert_int_eq(h_wire_open(&w, &d, "cold", 0, WIRE_ROLE_WRITE), 0);
    struct wire_msg m;
    char key[32], val[600];
    memset(val, 'v', sizeof(val) - 1);
    val[sizeof(val) - 1] = '\0';
    const int n = 2000; /* about 1.3 MB of values: several times the bound */
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "big:%d", i);
        snprintf(val, 16, "%015d", i);
        val[15] = 'v';
        ck_assert_int_eq(h_wire_set(&w, key, val, 5000, &m), 0);
        ck_assert_int_eq(m.type, WIRE_OK);
    }
    h_wire_close(&w);
    ck_assert_int_eq(WEXITSTATUS(h_halt(&d)), 0);
    ck_assert_int_eq(h_restart(&d), 0);
    ck_assert_int_eq(h_wire_open(&w, &d, "cold", 0, WIRE_ROLE_READ), 0);
    for (int i = 0; i < n; i += 7) {
        snprintf(key, sizeof(key), "big:%d", i);
        ck_assert_int_eq(get(&w, key, &m), 0);
        ck_assert_msg(m.type == WIRE_VALUE, "key %s: type %d", key, m.type);
        char want[16];
        snprintf(want, sizeof(want), "%015d", i);
        ck_assert_msg(m.u.value.value.len == sizeof(val) - 1 &&
                          memcmp(m.u.value.value.p, want, 15) == 0,
                      "key %s: wrong value", key);
    }
    ck_assert_int_eq(get(&w, "big:none", &m), 0);
    ck_assert_int_eq(m.type, WIRE_NOTFOUND);
    /* The owner really did go to disk for some of them. */
    struct hkv_buf b = HKV_BUF_INIT;
    uint64_t id = h_wire_id(&w);
    wire_put_stats(&b, id);
    ck_assert_int_eq(h_wire_call(&w, &b, id, 5000, &m), 0);
    buf_deinit(&b);
    ck_assert_int_eq(m.type, WIRE_STATS_REPLY);
    int64_t disk_reads = -1, evictions = -1;
    for (uint32_t i = 0; i < m.u.stats_reply.nstats; i++) {
        const struct wire_stat *st = &m.u.stats_reply.stats[i];
        if (st->name.len == 16 && memcmp(st->name.p, "owner_disk_reads", 16) == 0)
            disk_reads = st->value;
        if (st->name.len == 15 && memcmp(st->name.p, "owner_evictions", 15) == 0)
            evictions = st->value;
    }
    printf("owner: %d keys over owner-maxmemory 256kb: %lld evictions, %lld reads from disk\n", n,
           (long long)evictions, (long long)disk_reads);
    ck_assert_int_gt(disk_reads, 0);
    h_wire_close(&w);
    h_stop(&d);
}
END_TEST

START_TEST(corrupt_database_is_refused_untouched)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, ONE_EACH), 0);
    ck_assert_int_eq(WEXITSTATUS(h_halt(&d)), 0);
    char path[400];
    snprintf(path, sizeof(path), "%s/owner-cold-0.db", d.dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("this is not a database, and it must survive the owner's start\n", f);
    fclose(f);
    ck_assert_int_eq(h_restart(&d), 0); /* edges serve; the owner keeps refusing */
    struct timespec ts = {0, 500 * 1000000L};
    nanosleep(&ts, NULL);
    f = fopen(path, "r");
    char buf[128] = "";
    ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
    fclose(f);
    ck_assert_str_eq(buf, "this is not a database, and it must survive the owner's start\n");
    f = fopen(d.log, "r");
    char line[1024];
    int said = 0;
    while (fgets(line, sizeof(line), f))
        said |= strstr(line, "refusing to start") != NULL && strstr(line, "owner-cold-0.db") != NULL;
    fclose(f);
    ck_assert(said);
    h_stop(&d);
}
END_TEST

Suite *owner_suite(void)
{
    Suite *s = suite_create("owner");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"recovery", set_get_and_recovery_after_orderly_stop},
        {"ordering", owner_orders_writes_and_applies_retries_once},
        {"below_ack", a_request_below_the_writers_ack_is_never_applied},
        {"durable_kill9", durable_write_survives_kill_9},
        {"moved", foreign_key_answers_moved},
        {"hostile_frame", oversized_frame_closes_link_and_owner_lives},
        {"corrupt_db", corrupt_database_is_refused_untouched},
        {"maxmemory", keys_beyond_maxmemory_are_read_from_disk},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
