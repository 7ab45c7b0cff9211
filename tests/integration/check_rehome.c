/*
 * check_rehome.c - keys stored before placement changed are still found:
 * files written by a release without hash tags (rows placed by the whole
 * key's hash), and a pool whose owner count changed.  The master moves such
 * rows to the file of the owner that serves them before owners start
 * (storage/persist_rehome.h); without it they would be invisible.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/cfg.h"
#include "proto/resp.h"
#include "proto/stamp.h"
#include "server/core/router.h"
#include "storage/persist_db.h"
#include "tests/harness.h"

#define NKEYS 120
#define POOL3 "edge-workers 1\nhot-owners 1\ncold-owners 3\n"
#define POOL2 "edge-workers 1\nhot-owners 1\ncold-owners 2\n"

static void key_of(int i, char *buf, size_t len)
{
    /* tagged keys whose tag differs from the rest, and plain keys */
    if (i % 2 == 0)
        snprintf(buf, len, "{user:%d}:profile", i);
    else
        snprintf(buf, len, "plain:%d", i);
}

static int owner_before_tags(int i, int nowners)
{
    struct cfg *cfg = cfg_create();
    cfg->cold_owners = nowners;
    struct router *r = router_create(cfg);
    char k[64];
    key_of(i, k, sizeof(k));
    int o = router_owner(r, CFG_POOL_COLD, router_hash(k, strlen(k))); /* no tags */
    router_destroy(&r);
    cfg_destroy(&cfg);
    return o;
}

/* What a release before hash tags left in dir: each row in the file of the
 * owner its whole-key hash chose, and no layout marker. */
static void write_old_release_files(const struct daemon *d, int nowners)
{
    for (int f = 0; f < nowners; f++) {
        char path[512], why[256];
        snprintf(path, sizeof(path), "%s/owner-cold-%d.db", d->dir, f);
        ck_assert_msg(pdb_prepare_file(path, why, sizeof(why)) == HKV_OK, "%s", why);
        struct pdb db = {0};
        ck_assert_msg(pdb_open(&db, path, 0, 1000, 0, why, sizeof(why)) == HKV_OK, "%s", why);
        ck_assert_int_eq(sqlite3_exec(db.db, "DELETE FROM meta WHERE name='layout'", NULL, NULL, NULL),
                         SQLITE_OK);
        ck_assert_int_eq(pdb_begin(&db), SQLITE_OK);
        for (int i = 0; i < NKEYS; i++) {
            if (owner_before_tags(i, nowners) != f)
                continue;
            char k[64], v[64];
            key_of(i, k, sizeof(k));
            snprintf(v, sizeof(v), "value-%d", i);
            struct persist_row row = {.key = k, .klen = strlen(k), .val = v, .vlen = strlen(v),
                                      .stamp = stamp_make(h_wall_ms(), 0, 1), .class_id = 0};
            int applied = 0;
            ck_assert_int_eq(pdb_upsert(&db, &row, &applied), SQLITE_OK);
        }
        ck_assert_int_eq(pdb_commit(&db), SQLITE_OK);
        pdb_close(&db);
    }
}

static int found_all(const struct daemon *d, int *missing)
{
    int fd = h_connect(d->port);
    ck_assert_int_ge(fd, 0);
    *missing = 0;
    for (int i = 0; i < NKEYS; i++) {
        char k[64], v[64];
        key_of(i, k, sizeof(k));
        snprintf(v, sizeof(v), "value-%d", i);
        struct h_reply *r = h_cmdv(fd, "GET", k, NULL);
        ck_assert_ptr_nonnull(r);
        if (r->v->type != RESP_BULK || r->v->len != strlen(v) || memcmp(r->v->str, v, r->v->len) != 0)
            (*missing)++;
        h_free(r);
    }
    close(fd);
    return *missing == 0;
}

START_TEST(keys_written_before_hash_tags_are_found)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, POOL3), 0);
    ck_assert_int_eq(h_halt(&d), 0);
    write_old_release_files(&d, 3);
    /* the placement of some tagged keys really changed */
    struct cfg *cfg = cfg_create();
    cfg->cold_owners = 3;
    struct router *r = router_create(cfg);
    int changed = 0;
    for (int i = 0; i < NKEYS; i += 2) {
        char k[64];
        key_of(i, k, sizeof(k));
        changed += router_owner(r, CFG_POOL_COLD, router_place(k, strlen(k))) != owner_before_tags(i, 3);
    }
    router_destroy(&r);
    cfg_destroy(&cfg);
    ck_assert_int_gt(changed, 10);

    ck_assert_int_eq(h_restart(&d), 0);
    int missing;
    ck_assert_msg(found_all(&d, &missing), "%d of %d keys not found after the restart", missing, NKEYS);
    ck_assert(h_log_has(&d, "cold pool:", "moved to the owner that serves them", NULL));
    /* settled: the next start moves nothing and still finds everything */
    ck_assert_int_eq(h_halt(&d), 0);
    ck_assert_int_eq(h_restart(&d), 0);
    ck_assert_msg(found_all(&d, &missing), "%d keys lost on the second restart", missing);
    h_stop(&d);
}
END_TEST

START_TEST(keys_follow_a_new_owner_count)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, POOL2), 0);
    int fd = h_connect(d.port);
    for (int i = 0; i < NKEYS; i++) {
        char k[64], v[64];
        key_of(i, k, sizeof(k));
        snprintf(v, sizeof(v), "value-%d", i);
        struct h_reply *r = h_cmdv(fd, "SET", k, v, NULL);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(r->v->type, RESP_SIMPLE);
        h_free(r);
    }
    close(fd);
    ck_assert_int_eq(h_halt(&d), 0); /* an orderly stop flushes every key */
    h_write_conf(&d, POOL3);
    ck_assert_int_eq(h_restart(&d), 0);
    int missing;
    ck_assert_msg(found_all(&d, &missing), "%d of %d keys not found with 3 owners", missing, NKEYS);
    ck_assert_int_eq(h_halt(&d), 0);
    h_write_conf(&d, POOL2); /* and back */
    ck_assert_int_eq(h_restart(&d), 0);
    ck_assert_msg(found_all(&d, &missing), "%d of %d keys not found back on 2 owners", missing, NKEYS);
    h_stop(&d);
}
END_TEST

Suite *rehome_suite(void)
{
    Suite *s = suite_create("rehome");
    TCase *tc = tcase_create("tags");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, keys_written_before_hash_tags_are_found);
    suite_add_tcase(s, tc);
    tc = tcase_create("owners");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, keys_follow_a_new_owner_count);
    suite_add_tcase(s, tc);
    return s;
}
