/* check_edge_http_wake.c - held HTTP readers and their wake-ups
 * (server/edge/edge_http_wake.c) in this process (edge_fixture.h): long
 * polls (GET /v1/kv/k?index=N) held on a real edge, woken through the colo's
 * real change ring (server/colo/changes.h) when their key reaches a newer
 * version: by this edge's own write, or by another edge of the colo (a
 * value put in the shared segment and noted in the ring, as that edge's
 * edge_cache_wrote does).  A change of another key wakes nobody; every
 * reader of the key wakes; when the ring lapped this edge every reader is
 * re-checked, and the ones whose key changed are answered; a reader whose
 * client left is forgotten; a held poll's wait ends with the unchanged
 * index (Consul's answer). */
#include <strings.h>

#include "server/core/clock.h"
#include "server/core/router.h"
#include "tests/unit/edge_fixture.h"

static struct {
    uint64_t version;             /* the owner's version of every key */
    int gets;
} O;

static void owner(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    if (m->type == WIRE_STATS) {
        wire_put_stats_reply(&b, m->id, NULL, 0);
    } else if (m->type == WIRE_GET) {
        O.gets++;
        char v[80];
        int n = snprintf(v, sizeof(v), "v%llu", (unsigned long long)O.version);
        wire_put_value(&b, m->id, wire_slice(v, (size_t)n), O.version, 0);
    } else if (m->type == WIRE_SET) {
        wire_put_ok(&b, m->id, ++O.version, true, NULL);
    }
    if (buf_unread(&b) > 0)
        fo_reply(fc, &b);
    buf_deinit(&b);
}

static void long_fresh(struct cfg *cfg)
{
    /* values stay fresh for the whole test: a wake-up, not an expiry, answers */
    struct cfg_error err;
    ck_assert_int_eq(cfg_set(cfg, "class", "default fresh 60s keep 120s", &err), HKV_OK);
}

static void setup(void)
{
    memset(&O, 0, sizeof(O));
    O.version = 5;
    ef_setup(1, owner, long_fresh);
}

static void teardown(void)
{
    ef_teardown();
}

struct response {
    int status;
    char index[32];
    char body[256];
};

/* Reads one whole response from fd (headers, then Content-Length bytes)
 * within ms; 0 if none came. */
static int response(int fd, struct response *r, int ms)
{
    char buf[4096];
    size_t have = 0;
    buf[0] = '\0';
    int64_t end = h_now_ms() + ms;
    char *hdr_end = NULL;
    long clen = -1;
    memset(r, 0, sizeof(*r));
    while (h_now_ms() < end && have < sizeof(buf) - 1) {
        ef_turn();
        ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
        if (n > 0) {
            have += (size_t)n;
            buf[have] = '\0';
        } else {
            h_sleep_ms(1);
        }
        if (hdr_end == NULL && (hdr_end = strstr(buf, "\r\n\r\n")) != NULL) {
            const char *cl = strcasestr(buf, "\r\nContent-Length: ");
            clen = cl != NULL && cl < hdr_end ? strtol(cl + 18, NULL, 10) : 0;
        }
        if (hdr_end != NULL && (long)(have - (size_t)(hdr_end + 4 - buf)) >= clen)
            break;
    }
    if (hdr_end == NULL)
        return 0;
    ck_assert_int_eq(sscanf(buf, "HTTP/1.1 %d", &r->status), 1);
    const char *ix = strcasestr(buf, "\r\nX-Hotkvd-Index: ");
    if (ix != NULL)
        sscanf(ix + 18, "%31[0-9]", r->index);
    snprintf(r->body, sizeof(r->body), "%.*s", (int)clen, hdr_end + 4);
    return 1;
}

static void http_get(int fd, const char *key, long index, const char *wait)
{
    char req[256];
    if (index < 0)
        snprintf(req, sizeof(req), "GET /v1/kv/%s HTTP/1.1\r\nHost: t\r\n\r\n", key);
    else
        snprintf(req, sizeof(req), "GET /v1/kv/%s?index=%ld&wait=%s HTTP/1.1\r\nHost: t\r\n\r\n",
                 key, index, wait);
    ef_write(fd, req, strlen(req));
}

static uint64_t held(void)
{
    return atomic_load(&ef_stats()->http_polls_held);
}

static uint64_t woken(void)
{
    return atomic_load(&ef_stats()->http_polls_woken);
}

/* A poll of key at the version the colo holds, held: its fd. */
static int held_poll(const char *key, const char *wait)
{
    int fd = ef_http_client();
    struct response r;
    http_get(fd, key, -1, NULL); /* fills the colo cache at version 5 */
    ck_assert(response(fd, &r, 3000));
    ck_assert_int_eq(r.status, 200);
    uint64_t before = held();
    http_get(fd, key, strtol(r.index, NULL, 10), wait);
    for (int i = 0; i < 200 && held() == before; i++) {
        ef_turn();
        h_sleep_ms(1);
    }
    ck_assert_uint_eq(held(), before + 1);
    return fd;
}

/* Another edge of the colo stored key at version v: the shared segment
 * holds it and the ring says so. */
static void other_edge_wrote(const char *key, const char *val, uint64_t v)
{
    size_t kl = strlen(key);
    uint64_t h = router_hash(key, kl);
    int64_t now = clock_mono_ms();
    ck_assert_int_eq(cache_put(F.cache,
                               &(struct cache_entry){.key = key, .klen = kl, .khash = h,
                                                     .val = val, .vlen = strlen(val), .stamp = v,
                                                     .fresh_until = now + 60000,
                                                     .keep_until = now + 120000},
                               now),
                     HKV_OK);
    changes_note(F.changes, h, v);
}

START_TEST(a_get_without_an_index_answers_at_once)
{
    int fd = ef_http_client();
    struct response r;
    http_get(fd, "k", -1, NULL);
    ck_assert(response(fd, &r, 3000));
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.index, "5");
    ck_assert_str_eq(r.body, "v5");
    ck_assert_uint_eq(held(), 0);
}
END_TEST

START_TEST(a_poll_at_an_older_index_answers_at_once)
{
    int fd = ef_http_client();
    struct response r;
    http_get(fd, "k", 3, "10s");
    ck_assert(response(fd, &r, 3000));
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.index, "5");
    ck_assert_uint_eq(held(), 0);
}
END_TEST

START_TEST(a_write_on_another_edge_of_the_colo_wakes_the_poll)
{
    int fd = held_poll("k", "10s");
    struct response r;
    ck_assert(!response(fd, &r, 50)); /* held */
    other_edge_wrote("k", "new", 9);
    ck_assert(response(fd, &r, 3000));
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.index, "9");
    ck_assert_str_eq(r.body, "new");
    ck_assert_uint_eq(held(), 0);
    ck_assert_uint_eq(woken(), 1);
}
END_TEST

START_TEST(this_edges_own_write_wakes_the_poll)
{
    int fd = held_poll("k", "10s");
    int resp = ef_client();
    ef_call(resp, "+OK\r\n", "SET", "k", "mine", NULL); /* version 6 at the owner */
    struct response r;
    ck_assert(response(fd, &r, 3000));
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.index, "6");
    ck_assert_str_eq(r.body, "mine");
    ck_assert_uint_eq(woken(), 1);
}
END_TEST

START_TEST(a_change_of_another_key_wakes_nobody)
{
    int fd = held_poll("k", "10s");
    int gets = O.gets;
    other_edge_wrote("other", "x", 20);
    struct response r;
    ck_assert(!response(fd, &r, 150));
    ck_assert_uint_eq(held(), 1);
    ck_assert_uint_eq(woken(), 0);
    ck_assert_int_eq(O.gets, gets); /* and nobody asked the owner */
    /* its own key still wakes it */
    other_edge_wrote("k", "now", 21);
    ck_assert(response(fd, &r, 3000));
    ck_assert_str_eq(r.index, "21");
}
END_TEST

START_TEST(the_same_version_again_wakes_nobody)
{
    int fd = held_poll("k", "10s");
    changes_note(F.changes, router_hash("k", 1), 5); /* a fill of the version it has */
    struct response r;
    ck_assert(!response(fd, &r, 150));
    ck_assert_uint_eq(held(), 1);
}
END_TEST

START_TEST(every_reader_of_the_key_wakes)
{
    int a = held_poll("k", "10s"), b = held_poll("k", "10s"), c = held_poll("j", "10s");
    ck_assert_uint_eq(held(), 3);
    other_edge_wrote("k", "both", 12);
    struct response r;
    ck_assert(response(a, &r, 3000));
    ck_assert_str_eq(r.index, "12");
    ck_assert(response(b, &r, 3000));
    ck_assert_str_eq(r.body, "both");
    ck_assert(!response(c, &r, 150)); /* j's reader waits on */
    ck_assert_uint_eq(held(), 1);
    ck_assert_uint_eq(woken(), 2);
}
END_TEST

START_TEST(when_the_ring_lapped_the_edge_every_reader_is_rechecked)
{
    int a = held_poll("k", "10s"), b = held_poll("j", "10s");
    /* k changes in the segment, and its record is lost among many others
     * written before this edge reads the ring again */
    size_t kl = 1;
    int64_t now = clock_mono_ms();
    ck_assert_int_eq(cache_put(F.cache,
                               &(struct cache_entry){.key = "k", .klen = kl,
                                                     .khash = router_hash("k", kl), .val = "lost",
                                                     .vlen = 4, .stamp = 30,
                                                     .fresh_until = now + 60000,
                                                     .keep_until = now + 120000},
                               now),
                     HKV_OK);
    for (int i = 0; i < CHANGES_SLOTS + 10; i++)
        changes_note(F.changes, 0x1000u + (uint64_t)i, 1);
    struct response r;
    ck_assert(response(a, &r, 3000)); /* found by the re-check */
    ck_assert_str_eq(r.index, "30");
    ck_assert_str_eq(r.body, "lost");
    ck_assert(!response(b, &r, 150)); /* re-checked for nothing: back to waiting */
    ck_assert_uint_eq(held(), 1);
}
END_TEST

START_TEST(a_reader_whose_client_left_is_forgotten)
{
    int fd = held_poll("k", "10s");
    ck_assert_uint_eq(held(), 1);
    close(fd);
    for (int i = 0; i < F.nfds; i++)
        if (F.fds[i] == fd)
            F.fds[i] = -1;
    for (int i = 0; i < 500 && held() != 0; i++) {
        ef_turn();
        h_sleep_ms(1);
    }
    ck_assert_uint_eq(held(), 0);
    other_edge_wrote("k", "nobody", 40); /* nothing left to wake */
    for (int i = 0; i < 20; i++)
        ef_turn();
    ck_assert_uint_eq(woken(), 0);
}
END_TEST

START_TEST(a_poll_whose_wait_ends_gets_the_unchanged_index)
{
    int fd = held_poll("k", "200ms");
    struct response r;
    ck_assert(response(fd, &r, 3000));
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.index, "5");
    ck_assert_str_eq(r.body, "v5");
    ck_assert_uint_eq(woken(), 0);
    ck_assert_uint_eq(atomic_load(&ef_stats()->http_polls_expired), 1);
    ck_assert_uint_eq(held(), 0);
}
END_TEST

Suite *edge_http_wake_suite(void)
{
    Suite *s = suite_create("edge_http_wake");
    TCase *tc = tcase_create("held");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_get_without_an_index_answers_at_once);
    tcase_add_test(tc, a_poll_at_an_older_index_answers_at_once);
    tcase_add_test(tc, a_poll_whose_wait_ends_gets_the_unchanged_index);
    tcase_add_test(tc, a_reader_whose_client_left_is_forgotten);
    suite_add_tcase(s, tc);
    tc = tcase_create("woken");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_write_on_another_edge_of_the_colo_wakes_the_poll);
    tcase_add_test(tc, this_edges_own_write_wakes_the_poll);
    tcase_add_test(tc, a_change_of_another_key_wakes_nobody);
    tcase_add_test(tc, the_same_version_again_wakes_nobody);
    tcase_add_test(tc, every_reader_of_the_key_wakes);
    tcase_add_test(tc, when_the_ring_lapped_the_edge_every_reader_is_rechecked);
    suite_add_tcase(s, tc);
    return s;
}
