/*
 * check_scan.c - SCAN walks the hash space (server/edge/edge_scan.c): every
 * key present for the whole scan is returned, across both pools and every
 * owner, while other keys are written and deleted between calls; a page
 * fills as Redis's does (SCAN 0 over a few keys returns them all and
 * cursor 0, with one owner per pool and with two); keys that
 * live only on disk (evicted by owner-maxmemory) included; and, in a
 * cluster (a real etcd), while leaves move between owners and split
 * between calls.
 *
 * The map changes in the cluster test keep every key readable the whole
 * time, so that "present for the whole scan" holds: a leaf that flips
 * between owners 1 and 2 had its keys written on both (a write while each
 * served it), and a split keeps the owner.  Every wait is bounded; every
 * process is stopped by PID.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/place.h"
#include "tests/harness.h"

/* ---- a client --------------------------------------------------------------------- */

static void must(int fd, const char *a, const char *b, const char *c, const char *want)
{
    struct h_reply *r = h_cmdv(fd, a, b, c, NULL);
    ck_assert_msg(r != NULL, "%s %s: no reply", a, b);
    ck_assert_msg(strstr(r->raw, want) == r->raw, "%s %s: %s", a, b, r->raw);
    h_free(r);
}

static void set(int fd, const char *k) { must(fd, "SET", k, "v", "+OK"); }
static void del(int fd, const char *k) { must(fd, "DEL", k, NULL, ":"); }

/* One SCAN call: the next cursor into cur (a string), each key to fn. */
static void scan_once(int fd, char *cur, size_t curlen, const char *count, const char *match,
                      void (*fn)(const char *k, size_t n, void *arg), void *arg)
{
    struct h_reply *r = match ? h_cmdv(fd, "SCAN", cur, "COUNT", count, "MATCH", match, NULL)
                              : h_cmdv(fd, "SCAN", cur, "COUNT", count, NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->v->type == RESP_ARRAY && r->v->n == 2, "SCAN %s: %s", cur, r->raw);
    snprintf(cur, curlen, "%.*s", (int)r->v->elems[0].len, r->v->elems[0].str);
    const struct resp_value *ks = &r->v->elems[1];
    for (size_t i = 0; i < ks->n; i++)
        fn(ks->elems[i].str, ks->elems[i].len, arg);
    h_free(r);
}

/* Keys named "<prefix><number>": seen[number]++; anything else is a stray. */
struct tally {
    int *seen;
    int n;
    int strays;
};

static void count_key(const char *k, size_t n, void *arg)
{
    struct tally *t = arg;
    char buf[64];
    snprintf(buf, sizeof(buf), "%.*s", (int)(n < 63 ? n : 63), k);
    const char *colon = strrchr(buf, ':');
    int x = colon ? atoi(colon + 1) : -1;
    if (x < 0 || x >= t->n)
        t->strays++;
    else
        t->seen[x]++;
}

static int64_t wait_info(const struct daemon *d, const char *field, int64_t want, int ms);

/* ---- single host ------------------------------------------------------------------ */

/* h:* in the hot pool, the rest (c:*) in the cold one (the default class) */
#define CLASSES "class hotk pattern h:* pool hot fresh 1s keep 60s durability ledger\n"
#define POOLS "hot-owners 2\ncold-owners 2\nedge-workers 2\n" CLASSES

/* Redis fills a page up to COUNT (and tests and people expect SCAN 0 over
 * a small keyspace to return it whole): here too, within a call's bound,
 * whether a pool's leaves are one owner's (one request spans them) or
 * dealt over two (a request per leaf, many at once). */
static void small_keyspace_in_one_page(const char *conf)
{
    struct daemon d;
    ck_assert_int_eq(h_start(&d, conf), 0);
    int fd = h_connect(d.port);
    ck_assert(fd >= 0);
    must(fd, "SET", "c:only:0", "v", "+OK\r\n");
    must(fd, "SET", "h:only:1", "v", "+OK\r\n");
    must(fd, "SET", "c:only:2", "v", "+OK\r\n");
    struct tally t = {calloc(3, sizeof(int)), 3, 0};
    char cur[32] = "0";
    scan_once(fd, cur, sizeof(cur), "10", NULL, count_key, &t);
    ck_assert_str_eq(cur, "0");
    ck_assert_int_eq(t.strays, 0);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(t.seen[i] == 1, "key %d returned %d times", i, t.seen[i]);
    /* COUNT 1: one key a page at most, every key once, then cursor 0 */
    memset(t.seen, 0, 3 * sizeof(int));
    snprintf(cur, sizeof(cur), "0");
    int calls = 0;
    do {
        scan_once(fd, cur, sizeof(cur), "1", NULL, count_key, &t);
        calls++;
    } while (strcmp(cur, "0") != 0 && calls < 100);
    ck_assert_str_eq(cur, "0");
    for (int i = 0; i < 3; i++)
        ck_assert_msg(t.seen[i] == 1, "COUNT 1: key %d returned %d times", i, t.seen[i]);
    ck_assert_int_le(calls, 6);
    free(t.seen);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}

START_TEST(a_small_keyspace_is_one_page)
{
    small_keyspace_in_one_page("hot-owners 1\ncold-owners 1\nedge-workers 1\n" CLASSES);
    small_keyspace_in_one_page(POOLS);
}
END_TEST

START_TEST(every_key_present_throughout_is_returned_while_keys_come_and_go)
{
    enum { STABLE = 1200, CHURN = 3000 };
    struct daemon d;
    ck_assert_int_eq(h_start(&d, POOLS), 0);
    int a = h_connect(d.port), b = h_connect(d.port);
    ck_assert(a >= 0 && b >= 0);
    char k[64];
    for (int i = 0; i < STABLE; i++) { /* both pools, and hash tags */
        if (i % 2)
            snprintf(k, sizeof(k), "c:s:%d", i);
        else if (i % 3 == 0)
            snprintf(k, sizeof(k), "h:{grp%d}:s:%d", i % 7, i);
        else
            snprintf(k, sizeof(k), "h:s:%d", i);
        set(a, k);
    }
    struct tally t = {calloc(STABLE + CHURN, sizeof(int)), STABLE + CHURN, 0};
    char cur[32] = "0";
    int calls = 0, made = 0;
    do {
        scan_once(a, cur, sizeof(cur), "20", NULL, count_key, &t);
        /* between calls, on another connection: new keys everywhere and
         * deletes of earlier new ones */
        for (int j = 0; j < 10 && made < CHURN; j++, made++) {
            snprintf(k, sizeof(k), made % 2 ? "c:n:%d" : "h:n:%d", STABLE + made);
            set(b, k);
            if (made % 3 == 2) {
                snprintf(k, sizeof(k), (made - 2) % 2 ? "c:n:%d" : "h:n:%d", STABLE + made - 2);
                del(b, k);
            }
        }
        ck_assert_int_lt(++calls, 5000);
    } while (strcmp(cur, "0") != 0);
    for (int i = 0; i < STABLE; i++)
        ck_assert_msg(t.seen[i] >= 1, "stable key %d never returned (%d calls)", i, calls);
    ck_assert_int_eq(t.strays, 0);
    ck_assert_int_gt(calls, STABLE / 20 / 2);
    /* the churned keys that are left are returned by a scan of their own */
    memset(t.seen, 0, (size_t)(STABLE + CHURN) * sizeof(int));
    strcpy(cur, "0");
    calls = 0;
    do {
        scan_once(a, cur, sizeof(cur), "500", "?:n:*", count_key, &t);
        ck_assert_int_lt(++calls, 5000);
    } while (strcmp(cur, "0") != 0);
    for (int i = 0; i < made; i++) /* key i was deleted when key i + 2 was made */
        ck_assert_msg(t.seen[STABLE + i] == (i % 3 == 0 && i + 2 < made ? 0 : 1),
                      "churn key %d returned %d times", i, t.seen[STABLE + i]);
    free(t.seen);
    close(a);
    close(b);
    ck_assert_int_eq(h_stop(&d), 0);
}
END_TEST

/* owner-maxmemory makes owners evict persisted keys: SCAN must read them
 * from disk (before issue 15 it walked the ledger only and missed them). */
START_TEST(keys_evicted_to_disk_are_returned)
{
    enum { N = 6000 };
    struct daemon d;
    ck_assert_int_eq(h_start(&d, POOLS "owner-maxmemory 300kb\npersist-interval 20ms\n"), 0);
    int a = h_connect(d.port);
    char k[64], val[256];
    memset(val, 'v', sizeof(val) - 1);
    val[sizeof(val) - 1] = '\0';
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof(k), i % 2 ? "c:e:%d" : "h:e:%d", i);
        must(a, "SET", k, val, "+OK");
        if (i % 1000 == 999)
            h_sleep_ms(100); /* persisted, hence evictable */
    }
    h_sleep_ms(200);
    for (int i = 0; i < 50; i++) { /* evictions happen on writes */
        snprintf(k, sizeof(k), "h:e:%d", i * 2);
        must(a, "SET", k, val, "+OK");
    }
    int64_t ev = wait_info(&d, "owner_evictions", 1, 5000); /* the 1 s STATS poll */
    ck_assert_msg(ev > 0, "no eviction: owner_evictions %lld", (long long)ev);
    struct tally t = {calloc(N, sizeof(int)), N, 0};
    char cur[32] = "0";
    int calls = 0;
    do {
        scan_once(a, cur, sizeof(cur), "100", NULL, count_key, &t);
        ck_assert_int_lt(++calls, 5000);
    } while (strcmp(cur, "0") != 0);
    int missing = 0;
    for (int i = 0; i < N; i++)
        missing += t.seen[i] == 0;
    ck_assert_msg(missing == 0, "%d of %d keys not returned (%lld evicted)", missing, N,
                  (long long)ev);
    free(t.seen);
    close(a);
    ck_assert_int_eq(h_stop(&d), 0);
}
END_TEST

/* An owner file of schema 1 (as hotkvd before issue 15 wrote it, made here
 * with that schema's SQL): the owner migrates it when it starts, says so in
 * the log with rows/s, and then serves every row, SCAN included. */
START_TEST(a_schema_1_file_is_migrated_when_its_owner_starts)
{
    enum { N = 20000 };
    struct daemon d;
    ck_assert_int_eq(h_start(&d, "hot-owners 1\ncold-owners 1\nedge-workers 1\n"), 0);
    ck_assert_int_eq(h_halt(&d), 0);
    static const char *const sfx[] = {"", "-wal", "-shm"};
    char path[400], p2[420];
    snprintf(path, sizeof(path), "%s/owner-cold-0.db", d.dir);
    for (int i = 0; i < 3; i++) {
        snprintf(p2, sizeof(p2), "%s%s", path, sfx[i]);
        unlink(p2);
    }
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db,
                                  "PRAGMA application_id=1212896836;PRAGMA user_version=1;"
                                  "PRAGMA journal_mode=WAL;BEGIN;"
                                  "CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB, stamp INTEGER NOT "
                                  "NULL, expire_at INTEGER NOT NULL DEFAULT 0, class INTEGER NOT "
                                  "NULL, tomb INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
                                  "CREATE TABLE meta(name TEXT PRIMARY KEY, value) WITHOUT ROWID;"
                                  "INSERT INTO meta(name, value) VALUES('format','hotkvd'),"
                                  "('schema',1);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_stmt *st = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "INSERT INTO kv(k, v, stamp, class) VALUES(?1, 'old', "
                                            "?2, 0)", -1, &st, NULL),
                     SQLITE_OK);
    char k[64];
    for (int i = 0; i < N; i++) {
        int n = snprintf(k, sizeof(k), "c:old:%d", i);
        sqlite3_bind_blob(st, 1, k, n, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, 1000 + i);
        ck_assert_int_eq(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    ck_assert_int_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    ck_assert_int_eq(h_restart(&d), 0);
    /* (PING is the edge's: the owner may still be migrating) */
    for (int i = 0; i < 400 && !h_log_has(&d, "owner cold/0", "recovered 20000 keys", NULL); i++)
        h_sleep_ms(50);
    if (!h_log_has(&d, "owner cold/0", "schema migration 1 -> 2: done", "20000 of 20000"))
        h_dump_log(&d);
    ck_assert_msg(h_log_has(&d, "owner cold/0", "schema migration 1 -> 2: done", "20000 of 20000"),
                  "no migration line in the log");
    ck_assert(h_log_has(&d, "owner cold/0", "schema migration 1 -> 2: positions", "rows/s"));
    int a = h_connect(d.port);
    must(a, "GET", "c:old:4321", NULL, "$3\r\nold");
    struct tally t = {calloc(N, sizeof(int)), N, 0};
    char cur[32] = "0";
    int calls = 0;
    do {
        scan_once(a, cur, sizeof(cur), "1000", NULL, count_key, &t);
        ck_assert_int_lt(++calls, 5000);
    } while (strcmp(cur, "0") != 0);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(t.seen[i], 1);
    free(t.seen);
    close(a);
    ck_assert_int_eq(h_stop(&d), 0);
}
END_TEST

/* ---- a cluster -------------------------------------------------------------------- */

static struct h_etcd etcd;

static int64_t wait_info(const struct daemon *d, const char *field, int64_t want, int ms)
{
    int64_t v = -1, end = h_now_ms() + ms;
    while (h_now_ms() < end) {
        v = h_info_int(d->port, field);
        if (v >= want)
            return v;
        h_sleep_ms(20);
    }
    return v;
}


/* etcdctl txn with its input (compares, success ops, failure ops, each
 * ended by an empty line), fed from a file in etcd's temp dir. */
static void txn(const char *in)
{
    char out[1024], ep[96], path[320];
    snprintf(ep, sizeof(ep), "--endpoints=%s", etcd.url);
    snprintf(path, sizeof(path), "%s/txn.in", etcd.dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(in, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    char *argv[] = {"/usr/bin/etcdctl", ep, "txn", NULL};
    ck_assert_msg(h_run(argv, path, out, sizeof(out), 20000) == 0, "txn: %s", out);
    ck_assert_msg(strstr(out, "SUCCESS") != NULL, "txn: %s", out);
}

/* Leaf `leaf` of `bits` of the hot pool goes to owner n (one map change);
 * returns once this host's map has it. */
static void move_leaf(const struct daemon *d, int bits, uint32_t leaf, int n)
{
    int64_t rev = h_info_int(d->port, "map_revision");
    char in[512];
    snprintf(in, sizeof(in), "\nput /hotkvd/t/map/hot/%d-%08x {\"owner\":%d,\"state\":\"serving\"}\n\n\n",
             bits, leaf, n);
    txn(in);
    ck_assert_int_gt(wait_info(d, "map_revision", rev + 1, 10000), rev);
}

/* Leaf (6, leaf) of the hot pool becomes (7, 2 leaf) and (7, 2 leaf + 1),
 * both of owner n: one txn. */
static void split_leaf(const struct daemon *d, uint32_t leaf, int n)
{
    int64_t rev = h_info_int(d->port, "map_revision");
    char in[512];
    snprintf(in, sizeof(in),
             "\ndel /hotkvd/t/map/hot/6-%08x\n"
             "put /hotkvd/t/map/hot/7-%08x {\"owner\":%d,\"state\":\"serving\"}\n"
             "put /hotkvd/t/map/hot/7-%08x {\"owner\":%d,\"state\":\"serving\"}\n\n\n",
             leaf, 2 * leaf, n, 2 * leaf + 1, n);
    txn(in);
    ck_assert_int_gt(wait_info(d, "map_revision", rev + 1, 10000), rev);
}

static uint32_t leaf6(const char *k)
{
    return place_pos_place32(place_pos(k, strlen(k))) >> 26;
}

START_TEST(every_key_is_returned_while_leaves_move_and_split_between_calls)
{
    enum { N = 1500, FLIP = 4, SPLITS = 12 };
    ck_assert_msg(harness_etcd_available(), "etcd is not installed (scripts/install-deps.sh)");
    ck_assert_int_eq(harness_etcd_start(&etcd, NULL), 0);
    struct daemon d;
    char extra[768];
    snprintf(extra, sizeof(extra),
             "cluster t\nhost h1\netcd-endpoints %s\netcd-timeout 500ms\netcd-lease-ttl 3s\n"
             "advertise-addr 127.0.0.1\nhot-owners 2\ncold-owners 1\nedge-workers 1\n" CLASSES,
             etcd.url);
    ck_assert_int_eq(h_start(&d, extra), 0);
    char out[4096];
    char *argv[] = {(char *)h_bin(), "--cluster-init", d.conf, NULL};
    ck_assert_msg(h_run(argv, NULL, out, sizeof(out), 20000) == 0, "--cluster-init: %s", out);
    ck_assert_int_eq(wait_info(&d, "leaves_hot", 64, 10000), 64);
    int a = h_connect(d.port);
    char k[64];
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof(k), i % 5 == 0 ? "c:k:%d" : "h:k:%d", i);
        set(a, k);
    }
    /* leaves 0, 2, 4, 6 (owner 1's) go to owner 2, and their keys are
     * written there too: from now on both owners hold them */
    static const uint32_t flip[FLIP] = {0, 2, 4, 6};
    int owner_of[FLIP];
    for (int f = 0; f < FLIP; f++) {
        move_leaf(&d, 6, flip[f], 2);
        owner_of[f] = 2;
    }
    h_sleep_ms(100); /* owners poll the map every 20 ms */
    int rewritten = 0;
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof(k), "h:k:%d", i);
        if (i % 5 == 0)
            continue;
        for (int f = 0; f < FLIP; f++)
            if (leaf6(k) == flip[f]) {
                set(a, k);
                rewritten++;
            }
    }
    ck_assert_int_gt(rewritten, 0);

    struct tally t = {calloc(N, sizeof(int)), N, 0};
    char cur[32] = "0";
    int calls = 0, changes = 0, splits = 0;
    uint32_t next_split = 9; /* odd leaves: owner 2's, never flipped */
    do {
        scan_once(a, cur, sizeof(cur), "15", NULL, count_key, &t);
        /* between calls: one flip, and every other call a split */
        int f = calls % FLIP;
        owner_of[f] = owner_of[f] == 1 ? 2 : 1;
        move_leaf(&d, 6, flip[f], owner_of[f]);
        changes++;
        if (calls % 2 == 1 && splits < SPLITS) {
            split_leaf(&d, next_split, 2);
            next_split += 2;
            splits++;
            changes++;
        }
        ck_assert_int_lt(++calls, 2000);
    } while (strcmp(cur, "0") != 0);
    int missing = 0;
    for (int i = 0; i < N; i++)
        missing += t.seen[i] == 0;
    fprintf(stderr, "scan: %d calls, %d map changes, %d keys missing\n", calls, changes, missing);
    for (int i = 0; i < N; i++)
        ck_assert_msg(t.seen[i] >= 1, "key %d never returned (%d calls, %d map changes)", i,
                      calls, changes);
    ck_assert_int_eq(t.strays, 0);
    ck_assert_int_ge(changes, 20);
    ck_assert_int_ge(h_info_int(d.port, "leaves_hot"), 64 + splits);
    free(t.seen);
    close(a);
    ck_assert_int_eq(h_stop(&d), 0);
    harness_etcd_stop(&etcd);
}
END_TEST

Suite *scan_suite(void)
{
    Suite *s = suite_create("scan");
    TCase *tc = tcase_create("churn");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_small_keyspace_is_one_page);
    tcase_add_test(tc, every_key_present_throughout_is_returned_while_keys_come_and_go);
    suite_add_tcase(s, tc);
    tc = tcase_create("disk");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, keys_evicted_to_disk_are_returned);
    suite_add_tcase(s, tc);
    tc = tcase_create("upgrade");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_schema_1_file_is_migrated_when_its_owner_starts);
    suite_add_tcase(s, tc);
    tc = tcase_create("cluster_moves");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, every_key_is_returned_while_leaves_move_and_split_between_calls);
    suite_add_tcase(s, tc);
    return s;
}
