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
#include <sys/socket.h>
#include <sys/un.h>

#include "tests/integration/move_cluster.h"

static struct daemon h1;

static void up_env(const char *env)
{
    mc_etcd_start();
    /* the moves are the test's own: the agent must not move or split a leaf
     * the test loads hard (source_loop: "no such leaf" under a loaded machine) */
    mc_prepare(&h1, "h1", 2, "move-fence-timeout 2s\nauto-moves no\n");
    mc_cluster_init(&h1, "h1/hot/0,h1/hot/1", 3);
    mc_start(&h1, env);
}

static void up(void) { up_env(NULL); }

static void down(void)
{
    mc_down(&h1);
    mc_etcd_stop();
}



START_TEST(keys_stay_with_the_owners_the_map_names_across_a_restart)
{
    int fd = h_connect(h1.port);
    char k[32], v[32];
    for (int i = 0; i < 200; i++) {
        snprintf(k, sizeof(k), "r:%d", i);
        snprintf(v, sizeof(v), "v%d", i);
        mc_set_ok(fd, k, v);
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
        mc_get_is(fd, k, v);
    }
    close(fd);
}
END_TEST

/* Moves leaf to owner `to` with the admin tool, waiting for the end: its
 * exit code (0 moved, 2 not moved). */
static int move_wait(const char *leaf, unsigned to, char *out, size_t len)
{
    char t[16];
    snprintf(t, sizeof(t), "%u", to);
    const char *admin = getenv("HOTKVD_ADMIN_BIN");
    const char *argv[] = {admin, h1.conf, "leaf", "move", "hot", leaf, t, "--wait", "120000", NULL};
    return mc_run(argv, out, len, 130000);
}

START_TEST(a_split_changes_nothing_a_client_sees)
{
    mc_split_unseen(&h1);
}
END_TEST

START_TEST(a_leaf_moves_between_two_owners_under_a_steady_writer)
{
    char leaf[32], keys[MC_KEYS][32], out[4096], state[16] = "";
    uint32_t start;
    int bits;
    ck_assert_int_eq(mc_leaf_of(&h1, 1, leaf, sizeof(leaf), &start, &bits), 0);
    mc_keys_in(start, bits, "w", keys, MC_KEYS);
    /* some bulk in the leaf, persisted and resident */
    int fd = h_connect(h1.port);
    char bulk[64][32], v[32];
    mc_keys_in(start, bits, "bulk", bulk, 64);
    for (int i = 0; i < 64; i++) {
        snprintf(v, sizeof(v), "b%d", i);
        mc_set_ok(fd, bulk[i], v);
    }
    static struct mc_load L;
    mc_load_start(&L, h1.port, keys, MC_KEYS, 200);
    h_sleep_ms(1000);
    int rc = move_wait(leaf, 2, out, sizeof(out));
    h_sleep_ms(1000);
    mc_load_stop(&L);
    ck_assert_msg(rc == 0, "leaf move: %s", out);
    ck_assert_uint_eq(mc_leaf_owner(&h1, leaf, state), 2);
    ck_assert_str_eq(state, "serving");
    ck_assert_msg(atomic_load(&L.failures) == 0, "%lld of %lld writes failed, first: %s",
                  (long long)atomic_load(&L.failures), (long long)atomic_load(&L.writes),
                  L.first_failure);
    ck_assert_msg(atomic_load(&L.backwards) == 0, "a read went back: %s", L.first_backwards);
    ck_assert_int_gt(atomic_load(&L.writes), 100);
    mc_check_acked(&L, h1.port);
    for (int i = 0; i < 64; i++) {
        snprintf(v, sizeof(v), "b%d", i);
        mc_get_is(fd, bulk[i], v);
    }
    fprintf(stderr, "move one_host: %lld writes, %lld reads, max write %lld ms\n",
            (long long)atomic_load(&L.writes), (long long)atomic_load(&L.reads),
            L.max_write_us / 1000);
    mc_print_leaves(&h1, "move one_host");
    ck_assert_int_eq(h_info_int(h1.port, "leaf_moves_committed"), 1);
    ck_assert_int_eq(h_info_int(h1.port, "leaf_moves_received"), 1);
    ck_assert_int_eq(h_info_int(h1.port, "leaf_parked_now"), 0);
    /* and back: the leaf returns to owner 1 with everything */
    rc = move_wait(leaf, 1, out, sizeof(out));
    ck_assert_msg(rc == 0, "leaf move back: %s", out);
    mc_check_acked(&L, h1.port);
    close(fd);
}
END_TEST

/* An owner left with no leaf is still polled: its STATS, and INFO # Leaves
 * with them, go on being refreshed (the edge polled only the owners that
 * serve a leaf, so the figures of the last poll before the last move stuck:
 * leaf_moves_committed one short, leaf_moves_outgoing 1). */
START_TEST(an_owner_without_leaves_still_reports_its_figures)
{
    char leaf[32], out[4096];
    uint32_t start;
    int bits, moved = 0;
    while (moved < 16 && mc_leaf_of(&h1, 1, leaf, sizeof(leaf), &start, &bits) == 0) {
        int rc = move_wait(leaf, 2, out, sizeof(out));
        ck_assert_msg(rc == 0, "leaf move %s: %s", leaf, out);
        moved++;
    }
    ck_assert_int_gt(moved, 0);
    ck_assert_int_ne(mc_leaf_of(&h1, 1, leaf, sizeof(leaf), &start, &bits), 0);
    /* the edge polls every second: 8 s is 8 polls */
    long long committed = -1, outgoing = -1, parked = -1;
    for (int i = 0; i < 80; i++) {
        committed = h_info_int(h1.port, "leaf_moves_committed");
        outgoing = h_info_int(h1.port, "leaf_moves_outgoing");
        parked = h_info_int(h1.port, "leaf_parked_now");
        if (i == 0)
            fprintf(stderr, "owner without leaves: %d moved, INFO leaf_moves_committed:%lld "
                    "leaf_moves_outgoing:%lld leaf_parked_now:%lld\n", moved, committed,
                    outgoing, parked);
        if (committed == moved && outgoing == 0 && parked == 0)
            break;
        h_sleep_ms(100);
    }
    ck_assert_msg(committed == moved && outgoing == 0 && parked == 0,
                  "INFO after %d moves: leaf_moves_committed:%lld leaf_moves_outgoing:%lld "
                  "leaf_parked_now:%lld", moved, committed, outgoing, parked);
}
END_TEST

/* A persisted, resident row is sent once: from the ledger, not again from
 * the file (the file's rows of resident keys were sent too, a stale
 * upsert each at the target: leaf_copy_rows twice the keys). */
START_TEST(a_resident_persisted_row_travels_once)
{
    enum { N = 300 };
    char leaf[32], keys[N][32], out[4096], v[32];
    uint32_t start;
    int bits;
    ck_assert_int_eq(mc_leaf_of(&h1, 1, leaf, sizeof(leaf), &start, &bits), 0);
    mc_keys_in(start, bits, "once", keys, N);
    int fd = h_connect(h1.port);
    for (int i = 0; i < N; i++) {
        snprintf(v, sizeof(v), "v%d", i);
        mc_set_ok(fd, keys[i], v);
    }
    int64_t end = h_now_ms() + 20000, dirty = -1;
    while (h_now_ms() < end && (dirty = h_info_int(h1.port, "persist_dirty_keys")) != 0)
        h_sleep_ms(100);
    ck_assert_msg(dirty == 0, "persist_dirty_keys still %lld after 20 s", (long long)dirty);
    int64_t before = h_info_int(h1.port, "leaf_copy_rows");
    int rc = move_wait(leaf, 2, out, sizeof(out));
    ck_assert_msg(rc == 0, "leaf move: %s", out);
    int64_t rows = -1;
    end = h_now_ms() + 5000; /* the edge polls STATS every second */
    while (h_now_ms() < end && (rows = h_info_int(h1.port, "leaf_copy_rows") - before) < N)
        h_sleep_ms(100);
    ck_assert_msg(rows >= N && rows < N + N / 2, "%lld rows sent for a leaf of %d keys", (long long)rows,
                  N);
    for (int i = 0; i < N; i++) {
        snprintf(v, sizeof(v), "v%d", i);
        mc_get_is(fd, keys[i], v);
    }
    close(fd);
}
END_TEST

/* With owner-maxmemory the source evicts persisted keys: the ones only on
 * disk travel from the file, the resident ones once (the file's copy of a
 * resident key is skipped), and every key reads back from the target. */
START_TEST(evicted_keys_travel_from_the_file)
{
    enum { N = 1500 };
    static char keys[N][32];
    char leaf[32], out[4096], v[300];
    uint32_t start;
    int bits;
    ck_assert_int_eq(mc_leaf_of(&h1, 1, leaf, sizeof(leaf), &start, &bits), 0);
    mc_keys_in(start, bits, "ev", keys, N);
    int fd = h_connect(h1.port);
    for (int i = 0; i < N; i++) {
        snprintf(v, sizeof(v), "%0250d", i);
        mc_set_ok(fd, keys[i], v);
        if (i % 300 == 299)
            h_sleep_ms(100); /* persisted, hence evictable */
    }
    h_sleep_ms(300);
    for (int i = 0; i < 50; i++) { /* evictions happen on writes */
        snprintf(v, sizeof(v), "%0250d", i);
        mc_set_ok(fd, keys[i], v);
    }
    int64_t end = h_now_ms() + 5000, ev = 0;
    while (h_now_ms() < end && (ev = h_info_int(h1.port, "owner_evictions")) <= 0)
        h_sleep_ms(100);
    ck_assert_msg(ev > 0, "no eviction: owner_evictions %lld", (long long)ev);
    int64_t dirty = -1;
    end = h_now_ms() + 20000;
    while (h_now_ms() < end && (dirty = h_info_int(h1.port, "persist_dirty_keys")) != 0)
        h_sleep_ms(100);
    ck_assert_msg(dirty == 0, "persist_dirty_keys still %lld after 20 s", (long long)dirty);
    int64_t before = h_info_int(h1.port, "leaf_copy_rows");
    int rc = move_wait(leaf, 2, out, sizeof(out));
    ck_assert_msg(rc == 0, "leaf move: %s", out);
    ck_assert_uint_eq(mc_leaf_owner(&h1, leaf, out), 2);
    for (int i = 0; i < N; i++) {
        snprintf(v, sizeof(v), "%0250d", i);
        mc_get_is(fd, keys[i], v);
    }
    int64_t rows = -1;
    end = h_now_ms() + 5000; /* the edge polls STATS every second */
    while (h_now_ms() < end && (rows = h_info_int(h1.port, "leaf_copy_rows") - before) < N)
        h_sleep_ms(100);
    ck_assert_msg(rows >= N && rows < N + N / 2, "%lld rows sent for a leaf of %d keys (%lld "
                  "evictions)", (long long)rows, N, (long long)ev);
    close(fd);
}
END_TEST

static void up_small(void)
{
    mc_etcd_start();
    mc_prepare(&h1, "h1", 2, "move-fence-timeout 2s\nowner-maxmemory 200kb\npersist-interval 20ms\n");
    mc_cluster_init(&h1, "h1/hot/0,h1/hot/1", 3);
    mc_start(&h1, NULL);
}

START_TEST(a_deleted_key_does_not_come_back_with_its_leaf)
{
    char leaf[32], keys[8][32], out[4096];
    uint32_t start;
    int bits;
    ck_assert_int_eq(mc_leaf_of(&h1, 1, leaf, sizeof(leaf), &start, &bits), 0);
    mc_keys_in(start, bits, "d", keys, 8);
    int fd = h_connect(h1.port);
    for (int i = 0; i < 8; i++)
        mc_set_ok(fd, keys[i], "old");
    h_sleep_ms(1500); /* the values are on disk at the source */
    for (int i = 0; i < 4; i++) {
        struct h_reply *r = h_cmdv(fd, "DEL", keys[i], NULL);
        ck_assert_int_eq(r->v->integer, 1);
        h_free(r);
    }
    ck_assert_int_eq(move_wait(leaf, 2, out, sizeof(out)), 0);
    for (int i = 0; i < 8; i++)
        mc_get_is(fd, keys[i], i < 4 ? NULL : "old");
    /* and back to owner 1, whose file still has the old rows */
    ck_assert_int_eq(move_wait(leaf, 1, out, sizeof(out)), 0);
    for (int i = 0; i < 8; i++)
        mc_get_is(fd, keys[i], i < 4 ? NULL : "old");
    close(fd);
}
END_TEST

/* A write link to owner `index` of h1 (cluster owner number `number`) as
 * edge `writer` incarnation `inc`: HELLO v3 of cluster mv. */
static void wire_open(struct h_wire *w, int index, uint32_t number, uint32_t writer, uint64_t inc)
{
    memset(w, 0, sizeof(*w));
    wire_decoder_init(&w->dec, 0);
    w->next_id = 1;
    w->writer = writer;
    w->incarnation = inc;
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    char path[400];
    snprintf(path, sizeof(path), "%s/owner-hot-%d.sock", h1.dir, index);
    ck_assert_uint_lt(strlen(path), sizeof(un.sun_path));
    memcpy(un.sun_path, path, strlen(path) + 1);
    w->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_eq(connect(w->fd, (struct sockaddr *)&un, sizeof(un)), 0);
    struct hkv_buf b = HKV_BUF_INIT;
    uint64_t id = h_wire_id(w);
    struct wire_hello_cluster cl = {wire_cstr("mv"), number, wire_cstr("h1")};
    wire_put_hello_cluster(&b, id, WIRE_VERSION, writer, wire_cstr("t"), WIRE_ROLE_WRITE, inc, &cl);
    struct wire_msg m;
    ck_assert_int_eq(h_wire_call(w, &b, id, 5000, &m), 0);
    ck_assert_msg(m.type == WIRE_HELLO_OK, "HELLO to owner %u: %s", number,
                  m.type == WIRE_ERROR ? m.u.error.text.p : wire_type_name(m.type));
    w->owner_inc = m.u.hello_ok.incarnation;
    buf_deinit(&b);
}

static int64_t incrby(struct h_wire *w, const char *key, struct wire_rid rid, char *err,
                      size_t len)
{
    struct hkv_buf b = HKV_BUF_INIT;
    uint64_t id = h_wire_id(w);
    wire_put_incrby(&b, id, wire_cstr(key), 5, rid);
    struct wire_msg m;
    ck_assert_int_eq(h_wire_call(w, &b, id, 5000, &m), 0);
    buf_deinit(&b);
    if (m.type != WIRE_INT) {
        snprintf(err, len, "%s %.*s", wire_type_name(m.type),
                 m.type == WIRE_ERROR ? (int)m.u.error.text.len : 0,
                 m.type == WIRE_ERROR ? m.u.error.text.p : "");
        return INT64_MIN;
    }
    return m.u.integer.value;
}

START_TEST(a_retry_after_the_move_is_answered_from_the_travelled_record)
{
    char leaf[32], keys[1][32], out[4096], err[256] = "";
    uint32_t start;
    int bits;
    ck_assert_int_eq(mc_leaf_of(&h1, 1, leaf, sizeof(leaf), &start, &bits), 0);
    mc_keys_in(start, bits, "once", keys, 1);
    struct h_wire s, t;
    wire_open(&s, 0, 1, 3999, 0x5eed);
    /* applied at the source; its answer is "lost" (the test retries) */
    ck_assert_int_eq(incrby(&s, keys[0], (struct wire_rid){1, 1, 0}, err, sizeof(err)), 5);
    uint64_t s_inc = s.owner_inc;
    h_wire_close(&s);
    ck_assert_int_eq(move_wait(leaf, 2, out, sizeof(out)), 0);
    /* the retry goes to the new owner, naming the one its first try reached */
    wire_open(&t, 1, 2, 3999, 0x5eed);
    int64_t v = incrby(&t, keys[0], (struct wire_rid){1, 1, s_inc}, err, sizeof(err));
    ck_assert_msg(v == 5, "the retry at the new owner answered %lld (%s), not the record's 5",
                  (long long)v, err);
    /* and it applied once */
    int fd = h_connect(h1.port);
    mc_get_is(fd, keys[0], "5");
    close(fd);
    /* a new request applies */
    ck_assert_int_eq(incrby(&t, keys[0], (struct wire_rid){2, 2, 0}, err, sizeof(err)), 10);
    h_wire_close(&t);
}
END_TEST

static void up_stalled_target(void) { up_env("HOTKVD_MOVE_HOOK=hot/1:t_fence:pause=4000"); }

START_TEST(a_fence_past_its_deadline_aborts_and_the_writes_apply_at_the_source)
{
    char leaf[32], keys[MC_KEYS][32], out[4096], state[16] = "";
    uint32_t start;
    int bits;
    ck_assert_int_eq(mc_leaf_of(&h1, 1, leaf, sizeof(leaf), &start, &bits), 0);
    mc_keys_in(start, bits, "f", keys, MC_KEYS);
    static struct mc_load L;
    mc_load_start(&L, h1.port, keys, MC_KEYS, 500);
    h_sleep_ms(500);
    int rc = move_wait(leaf, 2, out, sizeof(out));
    h_sleep_ms(500);
    mc_load_stop(&L);
    ck_assert_msg(rc == 2, "the move should have aborted (exit 2): %d %s", rc, out);
    ck_assert_uint_eq(mc_leaf_owner(&h1, leaf, state), 1);
    ck_assert_str_eq(state, "serving");
    ck_assert_msg(atomic_load(&L.failures) == 0, "%lld writes failed, first: %s",
                  (long long)atomic_load(&L.failures), L.first_failure);
    mc_check_acked(&L, h1.port);
    ck_assert(h_log_has(&h1, "fence deadline", NULL, NULL));
}
END_TEST

/* The second leaf `leaf list` shows served by owner n (mc_leaf_of gives the
 * first): its start and bits; 0, or -1. */
static int second_leaf_of(unsigned n, uint32_t *start, int *bits)
{
    char out[65536];
    int seen = 0;
    if (mc_admin(&h1, out, sizeof(out), 20000, "leaf", "list", NULL, NULL, NULL, NULL) != 0)
        return -1;
    for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        unsigned b, p, owner;
        char state[16];
        if (sscanf(line, "leaf hot %u-%x owner %u %*s state %15s", &b, &p, &owner, state) == 4 &&
            owner == n && strcmp(state, "serving") == 0 && seen++ == 1) {
            *bits = (int)b;
            *start = b == 0 ? 0 : p << (32 - b);
            return 0;
        }
    }
    return -1;
}

START_TEST(the_source_answers_while_it_drops_a_large_moved_leaf)
{
    /* Once a move commits, the source drops its copy of the leaf, ledger
     * first, a slice of buckets per step.  Each step must let the loop poll
     * its sockets: a step that re-activated itself (event_active from its own
     * callback) ran in the same loop pass until the whole leaf was dropped,
     * every other request of the owner waiting (writes to the source's
     * other leaves, and the fenced writes' MOVED answers; with 500k keys a
     * write to another leaf of the source waited 1757 ms). */
    enum { N = 500000, VLEN = 16 };
    static char keys[N][32];
    static struct mc_load L;
    char leaf[32], out[4096], wkeys[MC_KEYS][32];
    uint32_t start, wstart;
    int bits, wbits;
    ck_assert_int_eq(mc_leaf_of(&h1, 1, leaf, sizeof(leaf), &start, &bits), 0);
    ck_assert_int_eq(second_leaf_of(1, &wstart, &wbits), 0);
    mc_keys_in(start, bits, "big", keys, N);
    mc_keys_in(wstart, wbits, "other", wkeys, MC_KEYS);
    /* the leaf, pipelined 1000 SETs at a time */
    int fd = h_connect(h1.port);
    ck_assert_int_ge(fd, 0);
    static char val[VLEN + 1], buf[1000 * (VLEN + 80)];
    memset(val, 'v', VLEN);
    for (int i = 0; i < N; i += 1000) {
        size_t n = 0;
        for (int k = i; k < i + 1000 && k < N; k++)
            n += (size_t)snprintf(buf + n, sizeof(buf) - n,
                                  "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%d\r\n%s\r\n", strlen(keys[k]),
                                  keys[k], VLEN, val);
        ck_assert_int_eq(h_send(fd, buf, n), 0);
        for (int k = i; k < i + 1000 && k < N; k++) {
            struct h_reply *r = h_read(fd);
            ck_assert_msg(r != NULL && r->v->type == RESP_SIMPLE, "SET %s: %s", keys[k],
                          r != NULL && r->v->str ? r->v->str : "no reply");
            h_free(r);
        }
    }
    close(fd);
    /* a steady writer on the source's other leaf while the leaf moves and
     * the source drops it */
    mc_load_start(&L, h1.port, wkeys, MC_KEYS, 1000);
    h_sleep_ms(1000);
    int rc = move_wait(leaf, 2, out, sizeof(out));
    h_sleep_ms(3000);
    mc_load_stop(&L);
    ck_assert_msg(rc == 0, "leaf move: %s", out);
    ck_assert_msg(atomic_load(&L.failures) == 0, "%lld writes failed, first: %s",
                  (long long)atomic_load(&L.failures), L.first_failure);
    fprintf(stderr, "source_loop: %lld writes to the source's other leaf, the longest %lld ms\n",
            (long long)atomic_load(&L.writes), L.max_write_us / 1000);
    ck_assert_msg(L.max_write_us < 900000,
                  "a write to the source's other leaf took %lld ms while the leaf of %d keys "
                  "moved and was dropped", L.max_write_us / 1000, N);
    mc_check_acked(&L, h1.port);
}
END_TEST

Suite *move_suite(void)
{
    Suite *s = suite_create("move");
    TCase *tc = tcase_create("one_host");
    tcase_add_checked_fixture(tc, up, down);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, keys_stay_with_the_owners_the_map_names_across_a_restart);
    tcase_add_test(tc, a_split_changes_nothing_a_client_sees);
    tcase_add_test(tc, a_leaf_moves_between_two_owners_under_a_steady_writer);
    tcase_add_test(tc, a_deleted_key_does_not_come_back_with_its_leaf);
    tcase_add_test(tc, an_owner_without_leaves_still_reports_its_figures);
    tcase_add_test(tc, a_resident_persisted_row_travels_once);
    tcase_add_test(tc, a_retry_after_the_move_is_answered_from_the_travelled_record);
    suite_add_tcase(s, tc);
    tc = tcase_create("evicted");
    tcase_add_checked_fixture(tc, up_small, down);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, evicted_keys_travel_from_the_file);
    suite_add_tcase(s, tc);
    tc = tcase_create("fence_deadline");
    tcase_add_checked_fixture(tc, up_stalled_target, down);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_fence_past_its_deadline_aborts_and_the_writes_apply_at_the_source);
    suite_add_tcase(s, tc);
    tc = tcase_create("source_loop");
    tcase_add_checked_fixture(tc, up, down);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, the_source_answers_while_it_drops_a_large_moved_leaf);
    suite_add_tcase(s, tc);
    return s;
}
