/*
 * check_ledger_move.c - the ledger's part in a leaf move (storage/
 * ledger_move.c): a walk sees tombstones and expired entries as well as
 * live ones, every entry at least once across a resize, and can drop
 * entries (dirty ones included, which are then never collected); a moved
 * row keeps its own version (not raised to the floor, not judged by the
 * flush floor), the newer of two rows stays whatever their order, and the
 * clock moves past it.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "proto/hkv.h"
#include "storage/ledger.h"

#define WALL0 1800000000000LL

static struct ledger *L;
static struct ledger_clock NOW;

static void setup(void)
{
    struct ledger_options o = {.tombstone_ttl_ms = 60000, .writer = 3, .has_hash_key = 1};
    for (int i = 0; i < SIPHASH_KEY_LEN; i++)
        o.hash_key[i] = (uint8_t)(0x11 + i);
    ck_assert_int_eq(ledger_create(&o, &L), HKV_OK);
    ck_assert_int_eq(ledger_mark_complete(L), HKV_OK);
    NOW.mono_ms = 1000;
    NOW.wall_ms = WALL0;
}

static void teardown(void) { ledger_destroy(&L); }

static void set(const char *k, const char *v, struct ledger_expiry e)
{
    ck_assert_int_eq(ledger_set(L, k, strlen(k), v, strlen(v), 0, 0, e, NOW, NULL, NULL), HKV_OK);
}

struct seen {
    int live, tomb, expired, total, dirty;
    int drop_prefix;      /* drop keys starting with 'd' */
    char keys[4096][16];
};

static int count(void *arg, const struct ledger_item *it)
{
    struct seen *s = arg;
    if (s->total < 4096)
        snprintf(s->keys[s->total], 16, "%.*s", (int)it->klen, it->key);
    s->total++;
    s->dirty += it->dirty;
    if (it->tomb)
        s->tomb++;
    else if (it->expire_at_ms != 0 && it->expire_at_ms <= NOW.wall_ms)
        s->expired++;
    else
        s->live++;
    return s->drop_prefix && it->klen > 0 && it->key[0] == 'd' ? LEDGER_WALK_DROP
                                                              : LEDGER_WALK_KEEP;
}

static void walk_all(struct seen *s, size_t buckets)
{
    uint64_t c = 0;
    int calls = 0;
    do {
        c = ledger_walk(L, c, buckets, count, s);
    } while (c != 0 && ++calls < 1000000);
    ck_assert_uint_eq(c, 0);
}

START_TEST(a_walk_sees_tombstones_and_expired_entries)
{
    set("live", "1", (struct ledger_expiry){LEDGER_EXP_NONE, 0});
    set("gone", "2", (struct ledger_expiry){LEDGER_EXP_NONE, 0});
    ck_assert_int_eq(ledger_del(L, "gone", 4, 0, NOW, NULL, NULL, NULL), HKV_OK);
    set("soon", "3", (struct ledger_expiry){LEDGER_EXP_REL, 10});
    NOW.mono_ms += 50; /* "soon" expired, not swept */
    NOW.wall_ms += 50;
    static struct seen s;
    memset(&s, 0, sizeof(s));
    walk_all(&s, 1);
    ck_assert_int_eq(s.total, 3);
    ck_assert_int_eq(s.live, 1);
    ck_assert_int_eq(s.tomb, 1);
    ck_assert_int_eq(s.dirty, 3);
    ck_assert_int_eq(s.live + s.tomb + s.expired, 3);
}
END_TEST

START_TEST(every_entry_is_visited_across_a_resize_and_drops_forget_dirty_entries)
{
    char k[16];
    for (int i = 0; i < 100; i++) {
        snprintf(k, sizeof(k), "%c%d", i % 2 ? 'd' : 'k', i);
        set(k, "v", (struct ledger_expiry){LEDGER_EXP_NONE, 0});
    }
    static struct seen s;
    memset(&s, 0, sizeof(s));
    s.drop_prefix = 1;
    uint64_t c = ledger_walk(L, 0, 2, count, &s);
    /* the table grows under the walk */
    for (int i = 100; i < 3000; i++) {
        snprintf(k, sizeof(k), "x%d", i);
        set(k, "v", (struct ledger_expiry){LEDGER_EXP_NONE, 0});
    }
    int calls = 0;
    while (c != 0 && ++calls < 1000000)
        c = ledger_walk(L, c, 3, count, &s);
    for (int i = 0; i < 100; i++) {
        snprintf(k, sizeof(k), "%c%d", i % 2 ? 'd' : 'k', i);
        int found = 0;
        for (int j = 0; j < s.total && j < 4096 && !found; j++)
            found = strcmp(s.keys[j], k) == 0;
        ck_assert_msg(found, "%s was never visited", k);
    }
    /* the 50 "d" keys are gone, dirty as they were: never handed to a batch */
    ck_assert_uint_eq(ledger_count(L), 3000 - 50);
    struct ledger_view v;
    ck_assert_int_eq(ledger_get(L, "d1", 2, NOW, &v), HKV_ENOENT);
    size_t keys, bytes;
    ledger_dirty(L, &keys, &bytes);
    ck_assert_uint_eq(keys, 3000 - 50);
}
END_TEST

static struct persist_row row(const char *k, const char *v, hkv_stamp stamp)
{
    return (struct persist_row){(char *)k, strlen(k), (char *)v, v ? strlen(v) : 0, stamp, 0, 0,
                                v == NULL};
}

START_TEST(a_moved_row_keeps_its_version_and_the_newer_row_stays)
{
    /* this owner's floor is far above the sender's versions */
    hkv_stamp floor = ledger_set_floor(L, NOW, 10000);
    hkv_stamp old = floor / 2, newer = old + 5;
    struct persist_row a = row("k", "new", newer), b = row("k", "old", old);
    ck_assert_int_eq(ledger_load_moved(L, &a, NOW), HKV_OK);
    ck_assert_int_eq(ledger_load_moved(L, &b, NOW), HKV_EEXIST); /* older, later: ignored */
    struct ledger_view v;
    ck_assert_int_eq(ledger_get(L, "k", 1, NOW, &v), HKV_OK);
    ck_assert_str_eq(v.val, "new");
    ck_assert_uint_eq(v.stamp, newer); /* not raised to the floor */
    ck_assert(!v.dirty);
    /* the other order: the newer one replaces the older */
    struct persist_row c = row("j", "old", old), d = row("j", NULL, newer);
    ck_assert_int_eq(ledger_load_moved(L, &c, NOW), HKV_OK);
    ck_assert_int_eq(ledger_load_moved(L, &d, NOW), HKV_OK);
    ck_assert_int_eq(ledger_get(L, "j", 1, NOW, &v), HKV_ENOENT); /* its delete travelled */
    ck_assert_uint_eq(v.stamp, newer);
    /* a write after it is newer than anything received */
    hkv_stamp w;
    struct persist_row far = row("f", "x", floor * 2);
    ck_assert_int_eq(ledger_load_moved(L, &far, NOW), HKV_OK);
    ck_assert_int_eq(ledger_set(L, "k", 1, "w", 1, 0, 0, (struct ledger_expiry){LEDGER_EXP_NONE, 0},
                                NOW, NULL, &w), HKV_OK);
    ck_assert_uint_gt(w, floor * 2);
}
END_TEST

START_TEST(a_moved_row_below_the_flush_floor_is_not_a_delete)
{
    hkv_stamp flushed;
    ck_assert_int_eq(ledger_flush(L, NOW, &flushed), HKV_OK);
    struct persist_row a = row("k", "v", flushed - 1000);
    ck_assert_int_eq(ledger_load_moved(L, &a, NOW), HKV_OK);
    struct ledger_view v;
    ck_assert_int_eq(ledger_get(L, "k", 1, NOW, &v), HKV_OK);
    ck_assert_str_eq(v.val, "v");
}
END_TEST

Suite *ledger_move_suite(void)
{
    Suite *s = suite_create("ledger_move");
    TCase *tc = tcase_create("walk");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_walk_sees_tombstones_and_expired_entries);
    tcase_add_test(tc, every_entry_is_visited_across_a_resize_and_drops_forget_dirty_entries);
    suite_add_tcase(s, tc);
    tc = tcase_create("moved_rows");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_moved_row_keeps_its_version_and_the_newer_row_stays);
    tcase_add_test(tc, a_moved_row_below_the_flush_floor_is_not_a_delete);
    suite_add_tcase(s, tc);
    return s;
}
