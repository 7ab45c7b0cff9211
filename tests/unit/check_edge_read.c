/* check_edge_read.c - the edge's reads through the colo cache and its
 * writes' effect on it (server/edge/edge_read.c, edge_cache.c,
 * edge_flight.c, edge_write.c) in this process (edge_fixture.h), with one
 * scripted owner that keeps a value and a version per key and counts every
 * request.  A miss asks the owner once and fills the segment; a hit asks
 * nobody; readers of one key share one fetch; a client reads its own write
 * from the segment; a delete leaves a tombstone so the next read asks; an
 * absence is cached for negative-ttl; a fresh-0 class caches nothing; a
 * stale entry is served and refreshed once; MGET is answered by the segment
 * only when it holds every key; a connection that watches keys reads from the
 * owner. */
#include "server/edge/edge_stats.h"
#include "tests/unit/edge_fixture.h"

#define NKEYS 32

static struct {
    char key[NKEYS][32];
    char val[NKEYS][32];
    uint64_t version[NKEYS];
    int live[NKEYS];
    int nkeys;
    uint64_t next_version;
    int gets, getkeys, sets, dels;
    int hold;                     /* hold GETs: answered by release() */
} O;

static int find(const char *p, size_t n, int make)
{
    for (int i = 0; i < O.nkeys; i++)
        if (strlen(O.key[i]) == n && memcmp(O.key[i], p, n) == 0)
            return i;
    if (!make || O.nkeys == NKEYS)
        return -1;
    snprintf(O.key[O.nkeys], sizeof(O.key[0]), "%.*s", (int)n, p);
    return O.nkeys++;
}

static void put_key(const char *k, const char *v)
{
    int i = find(k, strlen(k), 1);
    snprintf(O.val[i], sizeof(O.val[i]), "%s", v);
    O.version[i] = ++O.next_version;
    O.live[i] = 1;
}

static void answer_get(struct fo_conn *fc, uint64_t id, const struct wire_slice *keys,
                       uint32_t nkeys)
{
    struct hkv_buf b = HKV_BUF_INIT;
    if (nkeys == 1) {
        int i = find(keys[0].p, keys[0].len, 0);
        if (i >= 0 && O.live[i])
            wire_put_value(&b, id, wire_cstr(O.val[i]), O.version[i], 0);
        else
            wire_put_notfound(&b, id, i >= 0 ? O.version[i] : 0);
    } else {
        struct wire_item items[16];
        ck_assert_uint_le(nkeys, 16);
        for (uint32_t k = 0; k < nkeys; k++) {
            int i = find(keys[k].p, keys[k].len, 0);
            int found = i >= 0 && O.live[i];
            items[k] = (struct wire_item){found, found ? wire_cstr(O.val[i]) : wire_cstr(""),
                                          found ? O.version[i] : 0, 0};
        }
        wire_put_values(&b, id, items, nkeys);
    }
    fo_reply(fc, &b);
    buf_deinit(&b);
}

static void owner(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    if (m->type == WIRE_STATS) {
        wire_put_stats_reply(&b, m->id, NULL, 0);
    } else if (m->type == WIRE_GET) {
        O.gets++;
        O.getkeys += (int)m->u.get.nkeys;
        if (O.hold)
            fo_hold(fo, fc, m);
        else
            answer_get(fc, m->id, m->u.get.keys, m->u.get.nkeys);
    } else if (m->type == WIRE_SET) {
        O.sets++;
        char k[32], v[32];
        snprintf(k, sizeof(k), "%.*s", (int)m->u.set.key.len, m->u.set.key.p);
        snprintf(v, sizeof(v), "%.*s", (int)m->u.set.value.len, m->u.set.value.p);
        put_key(k, v);
        wire_put_ok(&b, m->id, O.next_version, true, NULL);
    } else if (m->type == WIRE_DEL) {
        O.dels++;
        int64_t n = 0;
        for (uint32_t k = 0; k < m->u.del.nkeys; k++) {
            int i = find(m->u.del.keys[k].p, m->u.del.keys[k].len, 0);
            if (i >= 0 && O.live[i]) {
                O.live[i] = 0;
                O.version[i] = ++O.next_version;
                n++;
            }
        }
        wire_put_int(&b, m->id, n, O.next_version);
    }
    if (buf_unread(&b) > 0)
        fo_reply(fc, &b);
    buf_deinit(&b);
}

static void release(int i)
{
    struct wire_slice k = wire_cstr(F.fo[0].held[i].key);
    answer_get(F.fo[0].held[i].fc, F.fo[0].held[i].id, &k, 1);
}

static void set_opts(struct cfg *cfg, const char *name, const char *value)
{
    struct cfg_error err;
    ck_assert_msg(cfg_set(cfg, name, value, &err) == HKV_OK, "%s", err.msg);
}

static void long_fresh(struct cfg *cfg)
{
    set_opts(cfg, "class", "default fresh 60s keep 120s");
}

static void short_fresh(struct cfg *cfg)
{
    set_opts(cfg, "class", "default fresh 40ms keep 60s");
    set_opts(cfg, "miss-wait", "5s");
}

static void no_fresh(struct cfg *cfg)
{
    set_opts(cfg, "class", "default fresh 0 keep 60s");
    set_opts(cfg, "negative-ttl", "0");
}

static void setup_with(void (*tweak)(struct cfg *))
{
    memset(&O, 0, sizeof(O));
    ef_setup(1, owner, tweak);
}

static void setup(void) { setup_with(long_fresh); }
static void setup_short(void) { setup_with(short_fresh); }
static void setup_none(void) { setup_with(no_fresh); }
static void teardown(void) { ef_teardown(); }

static uint64_t cache_ctr(enum cache_counter which)
{
    struct cache_stats st;
    cache_stats(F.cache, &st);
    return st.counters[which];
}

static int gets_at_least_2(void) { return O.gets >= 2; }
static int one_held(void) { return F.fo[0].nheld >= 1; }

START_TEST(a_miss_asks_the_owner_once_and_a_hit_asks_nobody)
{
    put_key("k", "one");
    int fd = ef_client();
    ef_call(fd, "$3\r\none\r\n", "GET", "k", NULL);
    ck_assert_int_eq(O.gets, 1);
    ck_assert_uint_eq(cache_ctr(CACHE_CTR_cache_misses), 1);
    for (int i = 0; i < 3; i++)
        ef_call(fd, "$3\r\none\r\n", "GET", "k", NULL);
    ck_assert_int_eq(O.gets, 1);
    ck_assert_uint_eq(cache_ctr(CACHE_CTR_cache_hits), 3);
    /* another client of the edge reads the same entry */
    ef_call(ef_client(), "$3\r\none\r\n", "GET", "k", NULL);
    ck_assert_int_eq(O.gets, 1);
}
END_TEST

START_TEST(readers_of_one_key_share_one_fetch)
{
    put_key("k", "shared");
    O.hold = 1;
    int fds[4];
    for (int i = 0; i < 4; i++) {
        fds[i] = ef_client();
        ef_cmd(fds[i], "GET", "k", NULL);
    }
    ck_assert(ef_until(one_held, 3000));
    for (int i = 0; i < 30; i++)
        ef_turn();
    ck_assert_int_eq(O.gets, 1); /* four readers, one request */
    release(0);
    for (int i = 0; i < 4; i++)
        ef_expect(fds[i], "$6\r\nshared\r\n");
    ck_assert_int_eq(O.gets, 1);
}
END_TEST

START_TEST(a_client_reads_its_own_write_from_the_segment)
{
    int fd = ef_client();
    ef_call(fd, "+OK\r\n", "SET", "k", "mine", NULL);
    ef_call(fd, "$4\r\nmine\r\n", "GET", "k", NULL);
    ef_call(ef_client(), "$4\r\nmine\r\n", "GET", "k", NULL); /* and every client of the colo */
    ck_assert_int_eq(O.sets, 1);
    ck_assert_int_eq(O.gets, 0);
}
END_TEST

START_TEST(a_write_replaces_the_cached_value)
{
    put_key("k", "old");
    int fd = ef_client();
    ef_call(fd, "$3\r\nold\r\n", "GET", "k", NULL);
    ef_call(fd, "+OK\r\n", "SET", "k", "new", NULL);
    ef_call(fd, "$3\r\nnew\r\n", "GET", "k", NULL);
    ck_assert_int_eq(O.gets, 1);
}
END_TEST

START_TEST(a_delete_leaves_a_tombstone_and_the_next_read_asks)
{
    put_key("k", "v");
    int fd = ef_client();
    ef_call(fd, "$1\r\nv\r\n", "GET", "k", NULL);
    ef_call(fd, ":1\r\n", "DEL", "k", NULL);
    ck_assert_int_eq(O.dels, 1);
    ef_call(fd, "$-1\r\n", "GET", "k", NULL);
    ck_assert_int_eq(O.gets, 2); /* not served from the segment */
}
END_TEST

START_TEST(an_absence_is_cached_for_negative_ttl)
{
    int fd = ef_client();
    ef_call(fd, "$-1\r\n", "GET", "nokey", NULL);
    ef_call(fd, "$-1\r\n", "GET", "nokey", NULL);
    ck_assert_int_eq(O.gets, 1);
    ck_assert_uint_eq(cache_ctr(CACHE_CTR_cache_negative_hits), 1);
    /* EXISTS reads the same entry */
    ef_call(fd, ":0\r\n", "EXISTS", "nokey", NULL);
    ck_assert_int_eq(O.gets, 1);
}
END_TEST

START_TEST(a_fresh_0_class_and_negative_ttl_0_cache_nothing)
{
    put_key("k", "v");
    int fd = ef_client();
    ef_call(fd, "$1\r\nv\r\n", "GET", "k", NULL);
    ef_call(fd, "$1\r\nv\r\n", "GET", "k", NULL);
    ef_call(fd, "$-1\r\n", "GET", "nokey", NULL);
    ef_call(fd, "$-1\r\n", "GET", "nokey", NULL);
    ck_assert_int_eq(O.gets, 4);
    ck_assert_uint_eq(cache_ctr(CACHE_CTR_cache_hits), 0);
    ck_assert_uint_eq(cache_ctr(CACHE_CTR_cache_negative_hits), 0);
}
END_TEST

START_TEST(a_stale_entry_is_served_and_refreshed_once)
{
    put_key("k", "v1");
    int fd = ef_client();
    ef_call(fd, "$2\r\nv1\r\n", "GET", "k", NULL);
    put_key("k", "v2"); /* written elsewhere; no push reaches this edge */
    h_sleep_ms(60);     /* past fresh (40 ms), within miss-wait: stale, servable */
    ef_call(fd, "$2\r\nv1\r\n", "GET", "k", NULL); /* at once, stale */
    ck_assert_uint_eq(cache_ctr(CACHE_CTR_cache_stale_hits), 1);
    ck_assert(ef_until(gets_at_least_2, 3000)); /* one refresh, in the background */
    for (int i = 0; i < 20; i++)
        ef_turn();
    ck_assert_int_eq(O.gets, 2);
    ef_call(fd, "$2\r\nv2\r\n", "GET", "k", NULL); /* the refresh filled it */
    ck_assert_int_eq(O.gets, 2);
}
END_TEST

START_TEST(mget_is_answered_by_the_segment_only_when_every_key_is_there)
{
    put_key("a", "A");
    put_key("b", "B");
    put_key("c", "C");
    int fd = ef_client();
    ef_call(fd, "$1\r\nA\r\n", "GET", "a", NULL);
    ck_assert_int_eq(O.getkeys, 1);
    ck_assert_int_eq(O.gets, 1);
    /* b, c and nokey miss: the whole request goes to the owner, one request */
    ef_call(fd, "*4\r\n$1\r\nA\r\n$1\r\nB\r\n$-1\r\n$1\r\nC\r\n", "MGET", "a", "b", "nokey", "c",
            NULL);
    ck_assert_int_eq(O.gets, 2);
    ck_assert_int_eq(O.getkeys, 5);
    /* its answer filled the segment, the absence included: no owner now */
    ef_call(fd, "*3\r\n$1\r\nC\r\n$1\r\nB\r\n$1\r\nA\r\n", "MGET", "c", "b", "a", NULL);
    ef_call(fd, "*2\r\n$-1\r\n$1\r\nB\r\n", "MGET", "nokey", "b", NULL);
    ef_call(fd, "$1\r\nC\r\n", "GET", "c", NULL);
    ck_assert_int_eq(O.gets, 2);
    ck_assert_int_eq(O.getkeys, 5);
}
END_TEST

START_TEST(a_connection_that_watches_reads_from_the_owner)
{
    put_key("k", "v");
    int fd = ef_client();
    ef_call(fd, "$1\r\nv\r\n", "GET", "k", NULL);
    int before = O.gets;
    ef_call(fd, "+OK\r\n", "WATCH", "k", NULL); /* reads its version: one GET */
    ck_assert_int_eq(O.gets, before + 1);
    ef_call(fd, "$1\r\nv\r\n", "GET", "k", NULL);
    ck_assert_int_eq(O.gets, before + 2); /* around the segment */
    ef_call(fd, "+OK\r\n", "UNWATCH", NULL);
    ef_call(fd, "$1\r\nv\r\n", "GET", "k", NULL);
    ck_assert_int_eq(O.gets, before + 2); /* from the segment again */
}
END_TEST

Suite *edge_read_suite(void)
{
    Suite *s = suite_create("edge_read");
    TCase *tc = tcase_create("cached");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_miss_asks_the_owner_once_and_a_hit_asks_nobody);
    tcase_add_test(tc, readers_of_one_key_share_one_fetch);
    tcase_add_test(tc, a_client_reads_its_own_write_from_the_segment);
    tcase_add_test(tc, a_write_replaces_the_cached_value);
    tcase_add_test(tc, a_delete_leaves_a_tombstone_and_the_next_read_asks);
    tcase_add_test(tc, an_absence_is_cached_for_negative_ttl);
    tcase_add_test(tc, mget_is_answered_by_the_segment_only_when_every_key_is_there);
    tcase_add_test(tc, a_connection_that_watches_reads_from_the_owner);
    suite_add_tcase(s, tc);
    tc = tcase_create("not cached");
    tcase_add_checked_fixture(tc, setup_none, teardown);
    tcase_add_test(tc, a_fresh_0_class_and_negative_ttl_0_cache_nothing);
    suite_add_tcase(s, tc);
    tc = tcase_create("stale");
    tcase_add_checked_fixture(tc, setup_short, teardown);
    tcase_add_test(tc, a_stale_entry_is_served_and_refreshed_once);
    suite_add_tcase(s, tc);
    return s;
}
