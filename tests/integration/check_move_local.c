/*
 * check_move_local.c - leaf moves and splits on a single host WITHOUT etcd
 * (`leaf-moves yes`, no cluster): the agent keeps the map in
 * dir/leaf-map.store and hotkvd-admin reaches it through the agent's socket.
 * One host, two hot owners, the map made by the agent at its first start.
 *
 *   - a split changes nothing a client sees, and both halves stay with the
 *     owner;
 *   - a leaf moves to the other owner and back while a writer writes to it
 *     steadily and a reader reads it: no write fails, every acknowledged
 *     write reads back, no read goes back;
 *   - kill -9 of the whole daemon after a move, then a start on the same
 *     dir: the leaf is still at the target and its keys read back;
 *   - a host that ran with the fixed map (leaf-moves no), hot and cold
 *     owners, restarted with leaf-moves yes: the map made then places every
 *     key where the fixed map did, so every stored key reads back;
 *   - an HTTP PUT with an Idempotency-Key, its leaf moved, the key written
 *     again over RESP, the PUT retried: answered from the record the move
 *     carried (the first ETag, Idempotent-Replayed), not applied again; and
 *     moved back, the same (where a retry met a leaf move, a review once
 *     found a write applied four times).
 * The same helpers as check_move.c (move_cluster.h), without the etcd.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include "proto/place.h"
#include "tests/integration/move_cluster.h"
#include "tests/integration/http_test.h"

static struct daemon h1;

static void up(void) { mc_local_start(&h1, "move-fence-timeout 2s\n", NULL); }

static void down(void) { mc_down(&h1); }

static int move_wait(const char *leaf, unsigned to, char *out, size_t len)
{
    char t[16];
    snprintf(t, sizeof(t), "%u", to);
    const char *admin = getenv("HOTKVD_ADMIN_BIN");
    const char *argv[] = {admin, h1.conf, "leaf", "move", "hot", leaf, t, "--wait", "30000", NULL};
    return mc_run(argv, out, len, 40000);
}

START_TEST(the_map_is_made_at_first_start_without_etcd)
{
    char out[65536];
    int rc = mc_admin(&h1, out, sizeof(out), 20000, "status", NULL, NULL, NULL, NULL, NULL);
    ck_assert_msg(rc == 0, "status: %s", out);
    ck_assert_msg(strstr(out, "cluster local ") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "map ok") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "owner 1 a/hot/0 live") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "owner 2 a/hot/1 live") != NULL, "%s", out);
    char leaf[32];
    uint32_t start;
    int bits;
    ck_assert_int_eq(mc_leaf_of(&h1, 1, leaf, sizeof(leaf), &start, &bits), 0);
    ck_assert_int_eq(bits, ROUTER_LEAF_BITS); /* the fixed map's leaves */
    ck_assert_int_eq(mc_leaf_of(&h1, 2, leaf, sizeof(leaf), &start, &bits), 0);
}
END_TEST

START_TEST(a_split_changes_nothing_a_client_sees)
{
    mc_split_unseen(&h1);
}
END_TEST

START_TEST(a_leaf_moves_and_back_under_a_steady_writer_and_stays_moved_after_kill_9)
{
    char leaf[32], keys[MC_KEYS][32], out[4096], state[16] = "", v[32];
    uint32_t start;
    int bits;
    ck_assert_int_eq(mc_leaf_of(&h1, 1, leaf, sizeof(leaf), &start, &bits), 0);
    mc_keys_in(start, bits, "w", keys, MC_KEYS);
    char bulk[64][32];
    mc_keys_in(start, bits, "bulk", bulk, 64);
    int fd = h_connect(h1.port);
    for (int i = 0; i < 64; i++) {
        snprintf(v, sizeof(v), "b%d", i);
        mc_set_ok(fd, bulk[i], v);
    }
    close(fd);
    static struct mc_load L;
    mc_load_start(&L, h1.port, keys, MC_KEYS, 200);
    h_sleep_ms(1000);
    int rc = move_wait(leaf, 2, out, sizeof(out));
    h_sleep_ms(500);
    int back = rc == 0 ? move_wait(leaf, 1, out, sizeof(out)) : -1;
    h_sleep_ms(500);
    mc_load_stop(&L);
    ck_assert_msg(rc == 0, "leaf move: %s", out);
    ck_assert_msg(back == 0, "leaf move back: %s", out);
    ck_assert_uint_eq(mc_leaf_owner(&h1, leaf, state), 1);
    ck_assert_msg(atomic_load(&L.failures) == 0, "%lld of %lld writes failed, first: %s",
                  (long long)atomic_load(&L.failures), (long long)atomic_load(&L.writes),
                  L.first_failure);
    ck_assert_msg(atomic_load(&L.backwards) == 0, "a read went back: %s", L.first_backwards);
    ck_assert_int_gt(atomic_load(&L.writes), 100);
    mc_check_acked(&L, h1.port);
    fprintf(stderr, "move_local: %lld writes, %lld reads, max write %lld ms\n",
            (long long)atomic_load(&L.writes), (long long)atomic_load(&L.reads),
            L.max_write_us / 1000);
    ck_assert_int_eq(h_info_int(h1.port, "leaf_moves_committed"), 2);

    /* moved again, then the whole daemon killed: the map and the rows survive */
    rc = move_wait(leaf, 2, out, sizeof(out));
    ck_assert_msg(rc == 0, "leaf move: %s", out);
    fd = h_connect(h1.port);
    mc_set_ok(fd, keys[0], "after-move");
    close(fd);
    pid_t kids[64];
    int nk = h_children(&h1, kids, 64);
    ck_assert_int_eq(kill(h1.pid, SIGKILL), 0);
    ck_assert_int_ge(h_wait(h1.pid, 10000), 0);
    h1.pid = 0;
    int64_t end = h_now_ms() + 15000;
    for (int i = 0; i < nk; i++)
        while (h_alive(kids[i]) && h_now_ms() < end)
            h_sleep_ms(20);
    for (int i = 0; i < nk; i++)
        ck_assert_msg(!h_alive(kids[i]), "child %d outlived its master", (int)kids[i]);
    mc_start(&h1, NULL);
    ck_assert_uint_eq(mc_leaf_owner(&h1, leaf, state), 2);
    ck_assert_str_eq(state, "serving");
    fd = h_connect(h1.port);
    mc_get_is(fd, keys[0], "after-move");
    for (int i = 0; i < 64; i++) {
        snprintf(v, sizeof(v), "b%d", i);
        mc_get_is(fd, bulk[i], v);
    }
    close(fd);
    for (int k = 1; k < L.nkeys; k++) {
        if (L.acked[k] == 0)
            continue;
        fd = h_connect(h1.port);
        snprintf(v, sizeof(v), "%lld", L.acked[k]);
        mc_get_is(fd, L.keys[k], v);
        close(fd);
    }
}
END_TEST

/* ---- a single host switched from the fixed map to leaf-moves yes ---- */

#define SW_KEYS 200
#define SW_CONF "edge-workers 1\nhot-owners 2\ncold-owners 2\n" \
                "class c pattern \"c:*\" pool cold fresh 60s keep 120s\n" \
                "class default pool hot fresh 60s keep 120s\n"

/* The owner the fixed map gives key in a pool of 2 (router.c: the leaf of
 * ROUTER_LEAF_BITS bits, dealt round-robin). */
static int fixed_owner(const char *key)
{
    uint64_t h = place_hash(key, strlen(key));
    return (int)((uint32_t)(h >> (64 - ROUTER_LEAF_BITS)) % 2);
}

/* PUT /v1/kv/key with Idempotency-Key: idem on a new connection into *r. */
static int idem_put(int hp, const char *key, const char *idem, const char *body, struct hr *r)
{
    int fd = h_connect(hp);
    if (fd < 0)
        return -1;
    char req[1024];
    snprintf(req, sizeof(req), "PUT /v1/kv/%s HTTP/1.1\r\nHost: t\r\nIdempotency-Key: \"%s\"\r\n"
             "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", key, idem, strlen(body), body);
    memset(r, 0, offsetof(struct hr, in));
    r->inlen = 0;
    int rc = hx_send(fd, req) == 0 ? hx_read(fd, r, 0, 10000) : -1;
    close(fd);
    return rc;
}

START_TEST(an_idempotent_put_retried_after_its_leaf_moved_is_answered_from_its_record)
{
    mc_down(&h1);
    int hp = h_free_port();
    char extra[64];
    snprintf(extra, sizeof(extra), "http-port %d\n", hp);
    mc_local_start(&h1, extra, NULL);
    char leaf[32], keys[1][32], out[4096], tag[64], again[64], hdr[16];
    uint32_t start;
    int bits;
    ck_assert_int_eq(mc_leaf_of(&h1, 1, leaf, sizeof(leaf), &start, &bits), 0);
    mc_keys_in(start, bits, "idem", keys, 1);
    static struct hr r;
    ck_assert_int_eq(idem_put(hp, keys[0], "retry-1", "first", &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert(hx_hdr(&r, "ETag", tag, sizeof(tag)));
    for (unsigned to = 2; to >= 1; to--) {
        ck_assert_msg(move_wait(leaf, to, out, sizeof(out)) == 0, "leaf move: %s", out);
        int fd = h_connect(h1.port);
        mc_set_ok(fd, keys[0], "later");
        close(fd);
        ck_assert_int_eq(idem_put(hp, keys[0], "retry-1", "first", &r), 0);
        ck_assert_msg(r.status == 200, "retry after the move to %u: %d %s", to, r.status, r.head);
        ck_assert(hx_hdr(&r, "ETag", again, sizeof(again)));
        ck_assert_str_eq(again, tag);
        ck_assert(hx_hdr(&r, "Idempotent-Replayed", hdr, sizeof(hdr)));
        fd = h_connect(h1.port);
        mc_get_is(fd, keys[0], "later"); /* not applied again */
        close(fd);
        ck_assert_int_eq(idem_put(hp, keys[0], "retry-1", "other", &r), 0);
        ck_assert_int_eq(r.status, 422);
    }
    ck_assert_int_eq(h_info_int(h1.port, "http_idempotent_replays"), 2);
}
END_TEST

START_TEST(keys_stored_with_the_fixed_map_read_back_after_switching_to_leaf_moves)
{
    memset(&h1, 0, sizeof(h1));
    h_tmpdir(h1.dir, sizeof(h1.dir));
    h1.port = h_free_port();
    snprintf(h1.conf, sizeof(h1.conf), "%s/hotkvd.conf", h1.dir);
    snprintf(h1.log, sizeof(h1.log), "%s/hotkvd.log", h1.dir);
    h_write_conf(&h1, SW_CONF "leaf-moves no\n");
    mc_start(&h1, NULL);
    static char keys[2 * SW_KEYS][32];
    int per[2][2] = {{0, 0}, {0, 0}}; /* [pool: hot, cold][fixed owner] */
    int fd = h_connect(h1.port);
    ck_assert_int_ge(fd, 0);
    for (int i = 0; i < 2 * SW_KEYS; i++) {
        int cold = i >= SW_KEYS;
        snprintf(keys[i], sizeof(keys[i]), "%s%d", cold ? "c:" : "h:", i);
        per[cold][fixed_owner(keys[i])]++;
        mc_set_ok(fd, keys[i], keys[i] + 2);
    }
    close(fd);
    for (int p = 0; p < 2; p++)
        for (int o = 0; o < 2; o++)
            ck_assert_msg(per[p][o] > 20, "pool %d owner %d holds %d keys only", p, o, per[p][o]);
    ck_assert_int_eq(h_halt(&h1), 0);

    h_write_conf(&h1, SW_CONF "leaf-moves yes\n");
    mc_start(&h1, NULL);
    /* the edges route from the map once the agent has published it */
    int64_t end = h_now_ms() + 20000;
    for (;;) {
        fd = h_connect(h1.port);
        struct h_reply *r = h_cmdv(fd, "GET", keys[0], NULL);
        close(fd);
        int ok = r != NULL && r->v->type == RESP_BULK;
        h_free(r);
        if (ok || h_now_ms() > end)
            break;
        h_sleep_ms(100);
    }
    int missing = 0;
    char first[256] = "";
    fd = h_connect(h1.port);
    for (int i = 0; i < 2 * SW_KEYS; i++) {
        struct h_reply *r = h_cmdv(fd, "GET", keys[i], NULL);
        ck_assert_ptr_nonnull(r);
        if (r->v->type != RESP_BULK || r->v->len != strlen(keys[i] + 2) ||
            memcmp(r->v->str, keys[i] + 2, r->v->len) != 0) {
            if (missing++ == 0)
                snprintf(first, sizeof(first), "GET %.31s: %.*s", keys[i],
                         r->v->str != NULL ? (int)(r->v->len < 64 ? r->v->len : 64) : 5,
                         r->v->str != NULL ? r->v->str : "(nil)");
        }
        h_free(r);
    }
    close(fd);
    ck_assert_msg(missing == 0, "%d of %d keys did not read back after the switch, first %s",
                  missing, 2 * SW_KEYS, first);
}
END_TEST

Suite *move_local_suite(void)
{
    Suite *s = suite_create("move_local");
    TCase *tc = tcase_create("one_host_no_etcd");
    tcase_add_checked_fixture(tc, up, down);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, the_map_is_made_at_first_start_without_etcd);
    tcase_add_test(tc, a_split_changes_nothing_a_client_sees);
    tcase_add_test(tc, a_leaf_moves_and_back_under_a_steady_writer_and_stays_moved_after_kill_9);
    tcase_add_test(tc, an_idempotent_put_retried_after_its_leaf_moved_is_answered_from_its_record);
    suite_add_tcase(s, tc);
    tc = tcase_create("switch_from_the_fixed_map");
    tcase_add_checked_fixture(tc, NULL, down);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, keys_stored_with_the_fixed_map_read_back_after_switching_to_leaf_moves);
    suite_add_tcase(s, tc);
    return s;
}
