/*
 * check_owner_call_disk.c - the owner's Redis commands over keys that are
 * on disk only (loaded first, an EXEC parked whole until every key is in)
 * and FLUSHALL (answered after its commit with its version, completing the
 * durable writes it supersedes, once per request and never inside EXEC,
 * removing keys on disk only, leaving no ticket an interval batch can
 * strand).  The rest: check_owner_call.c.
 */
#include "tests/unit/owner_call_fixture.h"

/* ---- keys on disk only ---- */

#define NKEYS 200
#define VLEN 2000

/* A first owner writes NKEYS keys of VLEN bytes and flushes them; the
 * second run has owner-maxmemory far below that, so recovery leaves the
 * ledger incomplete and most keys on disk only. */
static void setup_incomplete(void)
{
    log_setup(CFG_LOG_WARNING, NULL);
    h_tmpdir(dir, sizeof(dir));
    start_owner(1, "");
    hello(&A);
    char *val = malloc(VLEN + 1);
    ck_assert_ptr_nonnull(val);
    memset(val, 'v', VLEN);
    val[VLEN] = '\0';
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_msg m;
    for (int i = 0; i < NKEYS; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        struct wire_expiry none = {WIRE_EXP_NONE, 0};
        ck_assert_int_eq(wire_put_set(&b, ++A.id, wire_cstr(key), wire_cstr(val), next_rid(&A),
                                      none, 0),
                         HKV_OK);
        fe_send(&A, &b);
        pump();
        ck_assert(fe_take_reply(&A, &m));
        ck_assert_uint_eq(m.type, WIRE_OK);
    }
    buf_deinit(&b);
    free(val);
    fe_close(&A);
    fe_close(&B);
    owner_persist_flush_all(&own);
    owner_deinit(&own);
    cfg_destroy(&ctx.cfg);
    have_owner = 0;
    start_owner(1, "owner-maxmemory 64kb\n");
    ck_assert_msg(!ledger_is_complete(own.ledger), "every key fits: the test needs evictions");
}

/* The first of k0.. that is not resident. */
static void on_disk_key(char *key, size_t n, const char *not)
{
    struct ledger_view v;
    for (int i = 0; i < NKEYS; i++) {
        snprintf(key, n, "k%d", i);
        if (strcmp(key, not) != 0 &&
            ledger_get(own.ledger, key, strlen(key), owner_clock(), &v) == HKV_EAGAIN)
            return;
    }
    ck_abort_msg("every key is resident");
}

START_TEST(key_on_disk_only_is_loaded_then_the_command_runs)
{
    hello(&A);
    hello(&B);
    char key[16], line[64];
    struct wire_msg m;
    on_disk_key(key, sizeof(key), "");
    snprintf(line, sizeof(line), "APPEND %s xyz", key);
    send_call(&A, 2, next_rid(&A), line);
    pump();
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    char want[32];
    snprintf(want, sizeof(want), ":%d\r\n", VLEN + 3);
    assert_resp(&m, want);
    ck_assert_uint_eq(m.u.resp.nchanges, 1);
    snprintf(line, sizeof(line), "GETRANGE %s -4 -1", key);
    ck_assert_uint_eq(expect(line, "$4\r\nvxyz\r\n"), 0);
}
END_TEST

START_TEST(exec_parks_whole_until_every_key_is_loaded)
{
    hello(&A);
    hello(&B);
    char k1[16], k2[16];
    struct wire_msg m;
    on_disk_key(k1, sizeof(k1), "");
    on_disk_key(k2, sizeof(k2), k1);
    char c1[64], c2[64], c3[64];
    snprintf(c1, sizeof(c1), "SET fresh 1");
    snprintf(c2, sizeof(c2), "RENAME %s moved", k1);
    snprintf(c3, sizeof(c3), "STRLEN %s", k2);
    const char *tx[] = {c1, c2, c3};
    send_exec(&A, 2, next_rid(&A), NULL, 0, tx, 3);
    pump();
    if (!fe_take_reply(&A, &m)) {
        /* parked (three disk reads to go): nothing ran, not even its first
         * command, whose key needs no disk read once known absent */
        struct ledger_view v;
        int rc = ledger_get(own.ledger, "fresh", 5, owner_clock(), &v);
        ck_assert_msg(rc == HKV_EAGAIN || rc == HKV_ENOENT, "a parked EXEC ran in part");
        fe_wait_reply(&own, &A, &m, WAIT_MS);
    }
    char want[64];
    snprintf(want, sizeof(want), "*3\r\n+OK\r\n+OK\r\n:%d\r\n", VLEN);
    assert_resp(&m, want);
    ck_assert_uint_eq(m.u.resp.nchanges, 3); /* fresh, k1 (gone), moved */
    ck_assert_uint_eq(expect("STRLEN moved", ":2000\r\n"), 0);
    ck_assert_uint_eq(expect("GET fresh", "$1\r\n1\r\n"), 0);
}
END_TEST

/* ---- FLUSHALL ---- */

/* Stops the owner in order and starts it again on the same file. */
static void restart_owner(void)
{
    fe_close(&A);
    fe_close(&B);
    owner_persist_flush_all(&own);
    owner_deinit(&own);
    cfg_destroy(&ctx.cfg);
    have_owner = 0;
    start_owner(1, "");
    hello(&A);
    hello(&B);
}

START_TEST(flushall_answers_after_its_commit_with_its_version)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    int found;
    ck_assert_uint_eq(expect("SET a 1", "+OK\r\n"), 1);
    send_call(&A, 2, next_rid(&A), "SET d:1 x");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    hkv_stamp va = version_of("a", &found);
    ck_assert_uint_eq(expect("FLUSHALL now", "-ERR syntax error\r\n"), 0);
    ck_assert_uint_eq(expect("FLUSHDB async sync", "-ERR syntax error\r\n"), 0);
    ck_assert_uint_eq(expect("EXISTS a d:1", ":2\r\n"), 0);

    send_call(&A, 2, next_rid(&A), "FLUSHALL ASYNC");
    pump();
    ck_assert_msg(!fe_take_reply(&A, &m), "answered before the flush committed");
    ck_assert(own.flush_pending != 0);
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    /* one change: the empty key at the flush's version, newer than any before */
    ck_assert_uint_eq(m.u.resp.nchanges, 1);
    ck_assert_uint_eq(m.u.resp.changes[0].key.len, 0);
    hkv_stamp v = m.u.resp.changes[0].version;
    ck_assert_uint_gt(v, va);
    ck_assert_uint_eq(own.flush_pending, 0);
    ck_assert_uint_eq(expect("EXISTS a d:1", ":0\r\n"), 0);
    ck_assert_uint_ge(version_of("a", &found), v); /* a missing key orders after the flush */
    ck_assert(!found);

    /* on disk: the rows are gone and the floor is recorded */
    restart_owner();
    ck_assert_uint_eq(expect("EXISTS a d:1", ":0\r\n"), 0);
    ck_assert_uint_ge(version_of("d:1", &found), v);
    call(&A, "SET a 2", &m);
    ck_assert_uint_gt(change_of(&m, "a"), v);
}
END_TEST

/* A durable write not yet committed when a FLUSHALL drops its key from the
 * ledger is answered when the flush commits (it is ordered before it), not
 * left to time out. */
START_TEST(flushall_completes_the_durable_writes_it_supersedes)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    send_call(&A, 2, next_rid(&A), "SET d:1 x");
    send_call(&B, 2, next_rid(&B), "FLUSHDB");
    pump();
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    fe_wait_reply(&own, &B, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    ck_assert_uint_eq(owner_tickets_waiting(&own), 0);
    ck_assert_uint_eq(expect("EXISTS d:1", ":0\r\n"), 0);
    ck_assert_uint_eq(own.st.owner_durable_timeouts, 0);
}
END_TEST

START_TEST(flushall_runs_once_per_request_and_never_inside_exec)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    const char *tx[] = {"SET a 1", "FLUSHALL", "SET b 2"};
    send_exec(&A, 2, next_rid(&A), NULL, 0, tx, 3);
    pump();
    ck_assert(fe_take_reply(&A, &m));
    assert_resp(&m, "*3\r\n+OK\r\n-ERR flushall is not allowed in a transaction: it runs on "
                    "every owner, a transaction on one\r\n+OK\r\n");
    ck_assert_uint_eq(expect("EXISTS a b", ":2\r\n"), 0);

    struct wire_rid rid = next_rid(&A);
    send_call(&A, 2, rid, "FLUSHALL");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    hkv_stamp v = m.u.resp.changes[0].version;
    ck_assert_uint_eq(expect("SET c 3", "+OK\r\n"), 1);
    send_call(&A, 2, rid, "FLUSHALL"); /* a retry: answered from its record */
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    ck_assert_uint_eq(m.u.resp.nchanges, 1);
    ck_assert_uint_eq(m.u.resp.changes[0].version, v);
    ck_assert_uint_eq(expect("GET c", "$1\r\n3\r\n"), 0);
}
END_TEST

/* Keys evicted to disk only go too, and the owner needs no disk read to
 * know it: its ledger is complete again. */
START_TEST(flushall_removes_keys_on_disk_only)
{
    hello(&A);
    hello(&B);
    char key[16], line[64];
    struct wire_msg m;
    on_disk_key(key, sizeof(key), "");
    send_call(&A, 2, next_rid(&A), "FLUSHALL");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    assert_resp(&m, "+OK\r\n");
    ck_assert(ledger_is_complete(own.ledger));
    snprintf(line, sizeof(line), "EXISTS %s k0 k1", key);
    ck_assert_uint_eq(expect(line, ":0\r\n"), 0); /* answered at once: no disk read */
    restart_owner();
    ck_assert_uint_eq(expect(line, ":0\r\n"), 0);
    struct ledger_stats ls;
    ledger_stats(own.ledger, &ls);
    ck_assert_uint_eq(ls.keys, 0);
}
END_TEST

/* Only durable batches settle commit tickets, and a key's ledger tag says
 * which batches take it: so every key a ticket waits for must be tagged
 * durable, or an interval batch can take it and the ticket never completes.
 * A DEL of a durable-class key the owner does not hold (after a FLUSHALL
 * every key is such a key) makes a tombstone tagged ledger. */
static void assert_tickets_wait_for_durable_keys(const char *when)
{
    for (struct ticket *t = own.tickets; t != NULL; t = t->next)
        for (size_t k = 0; k < t->nkeys; k++) {
            struct ledger_view v;
            ledger_get(own.ledger, t->keys[k].key, t->keys[k].klen, owner_clock(), &v);
            ck_assert_msg(t->keys[k].done || v.class_id == OWNER_TAG_DURABLE,
                          "%s: a ticket waits for %.*s, tagged %u: only an interval batch "
                          "takes it", when, (int)t->keys[k].klen, t->keys[k].key, v.class_id);
        }
}

START_TEST(del_of_a_missing_durable_key_leaves_no_ticket_an_interval_batch_can_strand)
{
    hello(&A);
    hello(&B);
    struct wire_msg m;
    send_call(&A, 2, next_rid(&A), "FLUSHALL");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    struct hkv_buf b = HKV_BUF_INIT;
    struct wire_slice keys[2] = {wire_cstr("d:gone"), wire_cstr("plain")};
    ck_assert_int_eq(wire_put_del(&b, ++A.id, keys, 2, next_rid(&A)), HKV_OK);
    fe_send(&A, &b);
    pump();
    assert_tickets_wait_for_durable_keys("DEL of keys never written");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    ck_assert_uint_eq(m.type, WIRE_INT);
    ck_assert_int_eq(m.u.integer.value, 0);
    /* a durable key that exists: its tombstone is durable, and waited for */
    send_call(&A, 2, next_rid(&A), "SET d:1 x");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    keys[0] = wire_cstr("d:1");
    ck_assert_int_eq(wire_put_del(&b, ++A.id, keys, 1, next_rid(&A)), HKV_OK);
    fe_send(&A, &b);
    pump();
    ck_assert_msg(!fe_take_reply(&A, &m), "the DEL of a durable key answered before its commit");
    assert_tickets_wait_for_durable_keys("DEL of a durable key");
    fe_wait_reply(&own, &A, &m, WAIT_MS);
    ck_assert_int_eq(m.u.integer.value, 1);
    buf_deinit(&b);
}
END_TEST

Suite *owner_call_disk_suite(void)
{
    Suite *s = suite_create("owner_call_disk");
    struct {
        const char *name;
        void (*setup)(void);
        const TTest *tests[4];
    } cases[] = {
        {"flushall",
         setup,
         {flushall_answers_after_its_commit_with_its_version,
          flushall_completes_the_durable_writes_it_supersedes,
          flushall_runs_once_per_request_and_never_inside_exec,
          del_of_a_missing_durable_key_leaves_no_ticket_an_interval_batch_can_strand}},
        {"disk",
         setup_incomplete,
         {key_on_disk_only_is_loaded_then_the_command_runs,
          exec_parks_whole_until_every_key_is_loaded, flushall_removes_keys_on_disk_only}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, cases[i].setup, teardown);
        tcase_set_timeout(tc, 60);
        for (size_t j = 0; j < 4 && cases[i].tests[j] != NULL; j++)
            tcase_add_test(tc, cases[i].tests[j]);
        suite_add_tcase(s, tc);
    }
    return s;
}
