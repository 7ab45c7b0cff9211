/*
 * check_etcd_local.c - the local leaf map store (server/agent/etcd_local.h)
 * through the etcd client's interface (etcd_create with local_path), as the
 * agent uses it: txn compares and branches, revisions, watches from a
 * revision, leases, durability (a reload sees every acknowledged change; a
 * torn tail record is ignored), and the admin's wire (etcd_remote.h).
 */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/etcd_msg.h"
#include "proto/hkv.h"
#include "server/agent/etcd.h"
#include "server/agent/etcd_remote.h"
#include "tests/harness.h"

struct got {
    int done;
    int status, code, succeeded;
    int64_t revision, deleted, lease, ttl, count;
    int nkvs;
    char k[8][64], v[8][64];
    int64_t mod[8], create[8], version[8];
};

static void on_res(void *arg, const struct etcd_result *r)
{
    struct got *g = arg;
    g->done = 1;
    g->status = r->status;
    g->code = r->code;
    g->succeeded = r->succeeded;
    g->revision = r->revision;
    g->deleted = r->deleted;
    g->lease = r->lease_id;
    g->ttl = r->ttl_s;
    g->count = r->count;
    g->nkvs = (int)r->nkvs;
    for (size_t i = 0; i < r->nkvs && i < 8; i++) {
        snprintf(g->k[i], 64, "%.*s", (int)r->kvs[i].key_len, r->kvs[i].key);
        snprintf(g->v[i], 64, "%.*s", (int)r->kvs[i].value_len, r->kvs[i].value);
        g->mod[i] = r->kvs[i].mod_revision;
        g->create[i] = r->kvs[i].create_revision;
        g->version[i] = r->kvs[i].version;
    }
}

static struct event_base *base;
static struct etcd *E;
static char dir[256], path[300];

static struct etcd *open_store(void)
{
    struct etcd_opts o = {.local_path = path};
    return etcd_create(base, &o);
}

static void setup(void)
{
    h_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/leaf-map.store", dir);
    base = event_base_new();
    E = open_store();
    ck_assert_ptr_nonnull(E);
}

static void teardown(void)
{
    etcd_destroy(&E);
    event_base_free(base);
    h_rmtree(dir);
}

/* Runs the loop until g is answered (bounded). */
static void wait_for(struct got *g)
{
    int64_t end = h_now_ms() + 5000;
    while (!g->done && h_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), h_sleep_ms(1);
    ck_assert_msg(g->done, "no answer within 5 s");
}

static struct got put(const char *k, const char *v, int64_t lease)
{
    struct got g = {0};
    ck_assert_int_eq(etcd_put(E, k, strlen(k), v, strlen(v), lease, on_res, &g), HKV_OK);
    ck_assert_int_eq(g.done, 0); /* never from inside the call */
    wait_for(&g);
    return g;
}

static struct got get(const char *k, const char *end, int64_t rev)
{
    struct got g = {0};
    ck_assert_int_eq(etcd_range(E, k, strlen(k), end, end ? strlen(end) : 0, rev, 0, on_res, &g),
                     HKV_OK);
    wait_for(&g);
    return g;
}

START_TEST(txn_compares_on_mod_create_and_value_and_takes_one_branch)
{
    struct got p = put("a", "1", 0);
    ck_assert_int_eq(p.status, HKV_OK);
    int64_t r1 = p.revision;
    struct etcd_cmp c = {.target = ETCD_MOD, .result = ETCD_EQUAL, .key = "a", .klen = 1,
                         .n = r1};
    struct etcd_op ok[2] = {{.kind = ETCD_OP_PUT, .key = "a", .klen = 1, .value = "2", .vlen = 1},
                            {.kind = ETCD_OP_PUT, .key = "b", .klen = 1, .value = "x", .vlen = 1}};
    struct etcd_op rd = {.kind = ETCD_OP_RANGE, .key = "a", .klen = 1};
    struct got g = {0};
    ck_assert_int_eq(etcd_txn(E, &c, 1, ok, 2, &rd, 1, on_res, &g), HKV_OK);
    wait_for(&g);
    ck_assert_int_eq(g.status, HKV_OK);
    ck_assert_int_eq(g.succeeded, 1);
    ck_assert_int_eq(g.revision, r1 + 1); /* one revision for the whole txn */
    /* the same compare again fails: the failure branch reads the truth */
    memset(&g, 0, sizeof(g));
    ck_assert_int_eq(etcd_txn(E, &c, 1, ok, 2, &rd, 1, on_res, &g), HKV_OK);
    wait_for(&g);
    ck_assert_int_eq(g.succeeded, 0);
    ck_assert_int_eq(g.nkvs, 1);
    ck_assert_str_eq(g.v[0], "2");
    ck_assert_int_eq(g.mod[0], r1 + 1);
    ck_assert_int_eq(g.create[0], r1);
    ck_assert_int_eq(g.version[0], 2);
    ck_assert_int_eq(g.revision, r1 + 1); /* nothing written */
    /* create_revision == 0: only when absent */
    struct etcd_cmp cr = {.target = ETCD_CREATE, .result = ETCD_EQUAL, .key = "c", .klen = 1};
    struct etcd_op pc = {.kind = ETCD_OP_PUT, .key = "c", .klen = 1, .value = "c", .vlen = 1};
    memset(&g, 0, sizeof(g));
    etcd_txn(E, &cr, 1, &pc, 1, NULL, 0, on_res, &g);
    wait_for(&g);
    ck_assert_int_eq(g.succeeded, 1);
    memset(&g, 0, sizeof(g));
    etcd_txn(E, &cr, 1, &pc, 1, NULL, 0, on_res, &g);
    wait_for(&g);
    ck_assert_int_eq(g.succeeded, 0);
    /* value compares; a value compare on an absent key fails */
    struct etcd_cmp cv = {.target = ETCD_VALUE, .result = ETCD_EQUAL, .key = "b", .klen = 1,
                          .value = "x", .vlen = 1};
    memset(&g, 0, sizeof(g));
    etcd_txn(E, &cv, 1, NULL, 0, NULL, 0, on_res, &g);
    wait_for(&g);
    ck_assert_int_eq(g.succeeded, 1);
    cv.key = "zz";
    cv.klen = 2;
    cv.result = ETCD_NOT_EQUAL;
    memset(&g, 0, sizeof(g));
    etcd_txn(E, &cv, 1, NULL, 0, NULL, 0, on_res, &g);
    wait_for(&g);
    ck_assert_int_eq(g.succeeded, 0);
    /* the same key twice in one branch: etcd's code 3 */
    struct etcd_op dup[2] = {ok[0], ok[0]};
    memset(&g, 0, sizeof(g));
    etcd_txn(E, NULL, 0, dup, 2, NULL, 0, on_res, &g);
    wait_for(&g);
    ck_assert_int_eq(g.status, HKV_EINVAL);
    ck_assert_int_eq(g.code, 3);
}
END_TEST

START_TEST(ranges_prefixes_deletes_and_older_revisions)
{
    put("p/1", "a", 0);
    int64_t r = put("p/2", "b", 0).revision;
    put("q", "c", 0);
    char end[8];
    size_t elen = etcd_prefix_end("p/", 2, end);
    end[elen] = '\0';
    struct got g = get("p/", end, 0);
    ck_assert_int_eq(g.nkvs, 2);
    ck_assert_str_eq(g.k[0], "p/1");
    ck_assert_str_eq(g.k[1], "p/2");
    put("p/1", "a2", 0);
    struct got d = {0};
    etcd_delete(E, "p/", 2, end, elen, on_res, &d);
    wait_for(&d);
    ck_assert_int_eq(d.deleted, 2);
    ck_assert_int_eq(get("p/", end, 0).nkvs, 0);
    /* the range as it was at r */
    g = get("p/", end, r);
    ck_assert_int_eq(g.status, HKV_OK);
    ck_assert_int_eq(g.nkvs, 2);
    ck_assert_str_eq(g.v[0], "a");
    ck_assert_str_eq(g.v[1], "b");
    /* before the history the store holds (its load): compacted */
    etcd_destroy(&E);
    E = open_store();
    g = get("p/", end, r);
    ck_assert_int_eq(g.status, HKV_EINVAL);
    ck_assert_int_eq(g.code, 11);
}
END_TEST

struct wgot {
    int created, progress, canceled;
    int64_t compact, last_rev, progress_rev;
    int nmsgs;
    int64_t revs[32];
    int nev[32];
    char first_key[32][32];
    int deletes;
};

static void on_watch(void *arg, const struct etcd_watch_msg *m)
{
    struct wgot *w = arg;
    if (m->kind == ETCD_W_CREATED)
        w->created++;
    else if (m->kind == ETCD_W_PROGRESS) {
        w->progress++;
        w->progress_rev = m->revision;
    } else if (m->kind == ETCD_W_CANCELED) {
        w->canceled++;
        w->compact = m->compact_revision;
    } else if (m->kind == ETCD_W_EVENTS && w->nmsgs < 32) {
        w->revs[w->nmsgs] = m->revision;
        w->nev[w->nmsgs] = (int)m->nevents;
        snprintf(w->first_key[w->nmsgs], 32, "%.*s", (int)m->events[0].kv.key_len,
                 m->events[0].kv.key);
        for (size_t i = 0; i < m->nevents; i++)
            w->deletes += m->events[i].type == ETCD_EV_DELETE;
        w->last_rev = m->revision;
        w->nmsgs++;
    }
}

static void spin(int ms)
{
    int64_t end = h_now_ms() + ms;
    while (h_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), h_sleep_ms(1);
}

START_TEST(watch_delivers_each_revision_from_its_start_and_progress)
{
    int64_t r1 = put("w/a", "1", 0).revision;
    put("other", "x", 0);
    struct etcd_op two[2] = {{.kind = ETCD_OP_PUT, .key = "w/b", .klen = 3, .value = "2", .vlen = 1},
                             {.kind = ETCD_OP_DELETE, .key = "w/a", .klen = 3}};
    struct got g = {0};
    etcd_txn(E, NULL, 0, two, 2, NULL, 0, on_res, &g);
    wait_for(&g);
    int64_t r3 = g.revision;
    struct wgot w = {0};
    struct etcd_watch *wt = etcd_watch(E, "w/", 2, "w0", 2, r1, 0, on_watch, &w);
    ck_assert_ptr_nonnull(wt);
    ck_assert_int_eq(w.created, 0); /* never from inside the call */
    spin(100);
    ck_assert_int_eq(w.created, 1);
    ck_assert_int_eq(w.nmsgs, 2); /* r1, then r3 (the other key's revision is not ours) */
    ck_assert_int_eq(w.revs[0], r1);
    ck_assert_str_eq(w.first_key[0], "w/a");
    ck_assert_int_eq(w.revs[1], r3);
    ck_assert_int_eq(w.nev[1], 2); /* one txn: one message */
    ck_assert_int_eq(w.deletes, 1);
    int64_t r4 = put("w/c", "3", 0).revision;
    spin(50);
    ck_assert_int_eq(w.nmsgs, 3);
    ck_assert_int_eq(w.revs[2], r4);
    spin(1300); /* a progress notification with the current revision */
    ck_assert_int_ge(w.progress, 1);
    ck_assert_int_eq(w.progress_rev, r4);
    etcd_watch_cancel(&wt);
    /* a start before what the store keeps: canceled with the compaction */
    struct wgot old = {0};
    wt = etcd_watch(E, "w/", 2, "w0", 2, 1, 0, on_watch, &old);
    spin(50);
    ck_assert_int_eq(old.canceled, 1);
    ck_assert_int_gt(old.compact, 0);
    etcd_watch_cancel(&wt);
}
END_TEST

START_TEST(leases_never_expire_and_revoke_deletes_their_keys)
{
    struct got g = {0};
    etcd_lease_grant(E, 1, on_res, &g);
    wait_for(&g);
    ck_assert_int_eq(g.status, HKV_OK);
    ck_assert_int_eq(g.ttl, 2); /* TTL 1 is granted as 2, as etcd does */
    int64_t id = g.lease;
    ck_assert_int_gt(id, 0);
    ck_assert_int_eq(put("m/1", "v", id).status, HKV_OK);
    ck_assert_int_eq(put("m/2", "v", id + 1).code, 5); /* no such lease */
    spin(2500); /* longer than the TTL: nothing expires */
    memset(&g, 0, sizeof(g));
    etcd_lease_keepalive(E, id, on_res, &g);
    wait_for(&g);
    ck_assert_int_eq(g.ttl, 2);
    ck_assert_int_eq(get("m/1", NULL, 0).nkvs, 1);
    memset(&g, 0, sizeof(g));
    etcd_lease_revoke(E, id, on_res, &g);
    wait_for(&g);
    ck_assert_int_eq(g.status, HKV_OK);
    ck_assert_int_eq(get("m/1", NULL, 0).nkvs, 0);
    memset(&g, 0, sizeof(g));
    etcd_lease_keepalive(E, id, on_res, &g);
    wait_for(&g);
    ck_assert_int_eq(g.ttl, 0); /* gone */
}
END_TEST

START_TEST(a_reload_sees_every_acknowledged_change_and_drops_leased_keys)
{
    put("k/1", "a", 0);
    put("k/2", "b", 0);
    int64_t r = put("k/1", "c", 0).revision;
    struct got g = {0};
    etcd_lease_grant(E, 5, on_res, &g);
    wait_for(&g);
    put("k/leased", "x", g.lease);
    etcd_destroy(&E); /* nothing more is flushed than what was acknowledged */
    E = open_store();
    ck_assert_ptr_nonnull(E);
    g = get("k/", "k0", 0);
    ck_assert_int_eq(g.nkvs, 2); /* the leased key went with its process */
    ck_assert_str_eq(g.v[0], "c");
    ck_assert_int_eq(g.mod[0], r);
    ck_assert_int_eq(g.version[0], 2);
    ck_assert_int_gt(g.revision, r); /* the revision goes on from there */
}
END_TEST

START_TEST(a_torn_tail_record_is_ignored_at_load)
{
    put("t/1", "a", 0);
    int64_t r = put("t/2", "b", 0).revision;
    put("t/3", "c", 0);
    etcd_destroy(&E);
    /* a crash in the middle of the last record: cut 5 bytes of it */
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(truncate(path, st.st_size - 5), 0);
    E = open_store();
    ck_assert_ptr_nonnull(E);
    struct got g = get("t/", "t0", 0);
    ck_assert_int_eq(g.nkvs, 2);
    ck_assert_int_eq(g.revision, r);
    /* and writes go on after the cut: a second reload holds them */
    int64_t r2 = put("t/4", "d", 0).revision;
    ck_assert_int_eq(r2, r + 1);
    etcd_destroy(&E);
    /* garbage appended (a scribbled record) is ignored too */
    int fd = open(path, O_WRONLY | O_APPEND);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "\x10\0\0\0garbagegarbagegarbage", 26), 26);
    close(fd);
    E = open_store();
    ck_assert_ptr_nonnull(E);
    g = get("t/", "t0", 0);
    ck_assert_int_eq(g.nkvs, 3);
    ck_assert_str_eq(g.k[2], "t/4");
}
END_TEST

START_TEST(a_file_that_is_not_a_store_is_refused)
{
    etcd_destroy(&E);
    int fd = open(path, O_WRONLY | O_TRUNC);
    ck_assert_int_eq(write(fd, "not a store", 11), 11);
    close(fd);
    ck_assert_ptr_null(open_store());
    E = NULL;
}
END_TEST

START_TEST(many_changes_compact_into_a_snapshot_and_reload)
{
    char v[200];
    memset(v, 'v', sizeof(v) - 1);
    v[sizeof(v) - 1] = '\0';
    int64_t r = 0;
    for (int i = 0; i < 7000; i++) /* > 1 MiB of records over a small table */
        r = put(i % 2 ? "c/1" : "c/2", v, 0).revision;
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_lt(st.st_size, 1400 * 1024); /* rewritten at least once */
    etcd_destroy(&E);
    E = open_store();
    struct got g = get("c/", "c0", 0);
    ck_assert_int_eq(g.nkvs, 2);
    ck_assert_int_eq(g.revision, r);
}
END_TEST

START_TEST(remote_messages_round_trip)
{
    struct etcd_cmp c = {.target = ETCD_MOD, .result = ETCD_EQUAL, .key = "a", .klen = 1, .n = 7};
    struct etcd_op ok = {.kind = ETCD_OP_PUT, .key = "a", .klen = 1, .value = "v", .vlen = 1,
                         .lease = 3};
    struct etcd_op rd = {.kind = ETCD_OP_RANGE, .key = "a", .klen = 1, .end = "b", .elen = 1};
    struct hkv_buf b = HKV_BUF_INIT;
    ck_assert_int_eq(etcd_remote_req_txn(&b, &c, 1, &ok, 1, &rd, 1), HKV_OK);
    struct etcd_rreq q;
    ck_assert_int_eq(etcd_remote_req_decode(buf_head(&b), buf_unread(&b), &q), HKV_OK);
    ck_assert_int_eq(q.kind, ETCD_R_TXN);
    ck_assert_int_eq(q.ncmp, 1);
    ck_assert_int_eq(q.cmp[0].n, 7);
    ck_assert_int_eq(q.ok[0].lease, 3);
    ck_assert_int_eq(q.fail[0].elen, 1);
    etcd_remote_req_free(&q);
    /* every cut of it is refused, never read past */
    for (size_t n = 0; n < buf_unread(&b); n++)
        ck_assert_int_ne(etcd_remote_req_decode(buf_head(&b), n, &q), HKV_OK);
    buf_deinit(&b);
    struct etcd_kv kv = {"key", 3, "val", 3, 1, 2, 3, 0};
    struct etcd_result r = {.status = HKV_OK, .revision = 9, .kvs = &kv, .nkvs = 1, .succeeded = 1};
    ck_assert_int_eq(etcd_remote_ans_encode(&b, &r), HKV_OK);
    struct etcd_result out;
    void *mem;
    ck_assert_int_eq(etcd_remote_ans_decode(buf_head(&b), buf_unread(&b), &out, &mem), HKV_OK);
    ck_assert_int_eq(out.revision, 9);
    ck_assert_int_eq(out.nkvs, 1);
    ck_assert_str_eq(out.kvs[0].value, "val");
    ck_assert_int_eq(out.kvs[0].mod_revision, 2);
    free(mem);
    for (size_t n = 0; n < buf_unread(&b); n++)
        ck_assert_int_ne(etcd_remote_ans_decode(buf_head(&b), n, &out, &mem), HKV_OK);
    buf_deinit(&b);
}
END_TEST

Suite *etcd_local_suite(void)
{
    Suite *s = suite_create("etcd_local");
    TCase *tc = tcase_create("kv");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, txn_compares_on_mod_create_and_value_and_takes_one_branch);
    tcase_add_test(tc, ranges_prefixes_deletes_and_older_revisions);
    tcase_add_test(tc, watch_delivers_each_revision_from_its_start_and_progress);
    tcase_add_test(tc, leases_never_expire_and_revoke_deletes_their_keys);
    suite_add_tcase(s, tc);
    tc = tcase_create("durability");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_reload_sees_every_acknowledged_change_and_drops_leased_keys);
    tcase_add_test(tc, a_torn_tail_record_is_ignored_at_load);
    tcase_add_test(tc, a_file_that_is_not_a_store_is_refused);
    tcase_add_test(tc, many_changes_compact_into_a_snapshot_and_reload);
    suite_add_tcase(s, tc);
    tc = tcase_create("remote");
    tcase_add_test(tc, remote_messages_round_trip);
    suite_add_tcase(s, tc);
    return s;
}
