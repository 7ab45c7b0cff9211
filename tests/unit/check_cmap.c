/*
 * check_cmap.c - the cluster map (server/core/cmap.h): validation refuses
 * every way leaves can fail to partition the hash space (gap, overlap,
 * unsorted, a start that does not fit its depth, an owner that is not the
 * pool's, a move without a target); lookups find the leaf and owner a
 * linear scan finds; a reader in another process never sees a torn table
 * while a writer publishes in a loop, nor is it stopped by a writer killed
 * mid-publish; the file round-trips, and a torn, flipped, foreign or absent
 * file is refused.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "server/core/cmap.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct cmap_table *new_table(void)
{
    struct cmap_table *t = calloc(1, sizeof(*t));
    ck_assert_ptr_nonnull(t);
    return t;
}

static void add_owner(struct cmap_table *t, unsigned n, int pool, int k, const char *host)
{
    struct cmap_owner *o = &t->owners[n];
    o->number = (uint16_t)n;
    o->pool = (uint8_t)pool;
    o->index = (uint16_t)k;
    o->live = 1;
    o->port = (uint16_t)(7000 + n);
    o->incarnation = 100 + n;
    snprintf(o->host, sizeof(o->host), "%s", host);
    snprintf(o->id, sizeof(o->id), "%s/%s/%d", host, pool == CFG_POOL_HOT ? "hot" : "cold", k);
    snprintf(o->addr, sizeof(o->addr), "10.0.0.%u", n);
}

/* A valid table: `hot` owners 1..hot, `cold` owners after them, each pool in
 * 2^bits leaves dealt round-robin, every epoch and incarnation = rev. */
static void fill(struct cmap_table *t, int bits, int hot, int cold, int64_t rev)
{
    memset(t, 0, sizeof(*t));
    t->revision = rev;
    for (int i = 0; i < hot; i++)
        add_owner(t, (unsigned)(1 + i), CFG_POOL_HOT, i, "h1");
    for (int i = 0; i < cold; i++)
        add_owner(t, (unsigned)(1 + hot + i), CFG_POOL_COLD, i, "h2");
    for (int p = 0; p < CMAP_NPOOLS; p++) {
        int n = p == CFG_POOL_HOT ? hot : cold;
        if (n == 0)
            continue;
        t->nleaves[p] = 1u << bits;
        for (uint32_t i = 0; i < t->nleaves[p]; i++) {
            struct cmap_leaf *l = &t->leaves[p][i];
            l->bits = (uint8_t)bits;
            l->start = bits == 0 ? 0 : i << (32 - bits);
            l->owner = (uint16_t)((p == CFG_POOL_HOT ? 1 : 1 + hot) + (int)(i % (uint32_t)n));
            l->epoch = rev;
        }
    }
    for (unsigned k = 1; k <= CMAP_MAX_OWNERS; k++)
        if (t->owners[k].number)
            t->owners[k].incarnation = (uint64_t)rev;
}

static void assert_invalid(const struct cmap_table *t, const char *word)
{
    char why[256];
    ck_assert_int_eq(cmap_validate(t, why, sizeof(why)), HKV_EINVAL);
    ck_assert_msg(strstr(why, word) != NULL, "reason '%s' does not say '%s'", why, word);
}

/* ---- validation ----------------------------------------------------------------- */

START_TEST(valid_tables_pass)
{
    struct cmap_table *t = new_table();
    char why[256];
    for (int bits = 0; bits <= 8; bits += 2) {
        fill(t, bits, 3, 2, 7);
        ck_assert_msg(cmap_validate(t, why, sizeof(why)) == HKV_OK, "bits %d: %s", bits, why);
    }
    fill(t, 6, 2, 0, 7); /* a pool with no leaves has no owners: allowed */
    ck_assert_msg(cmap_validate(t, why, sizeof(why)) == HKV_OK, "%s", why);
    /* mixed depths: leaf 0 of 2 bits split into two of 3 bits */
    fill(t, 2, 1, 0, 7);
    struct cmap_leaf *l = t->leaves[CFG_POOL_HOT];
    memmove(&l[2], &l[1], 3 * sizeof(*l));
    l[0].bits = 3;
    l[1] = l[0];
    l[1].start = 1u << 29;
    t->nleaves[CFG_POOL_HOT] = 5;
    ck_assert_msg(cmap_validate(t, why, sizeof(why)) == HKV_OK, "%s", why);
    free(t);
}
END_TEST

START_TEST(gap_is_refused)
{
    struct cmap_table *t = new_table();
    fill(t, 4, 2, 0, 1);
    struct cmap_leaf *l = t->leaves[CFG_POOL_HOT];
    memmove(&l[5], &l[6], 10 * sizeof(*l)); /* leaf 5 gone */
    t->nleaves[CFG_POOL_HOT] = 15;
    assert_invalid(t, "gap");
    fill(t, 4, 2, 0, 1);
    t->nleaves[CFG_POOL_HOT] = 15; /* the last one gone */
    assert_invalid(t, "gap after the last");
    free(t);
}
END_TEST

START_TEST(overlap_is_refused)
{
    struct cmap_table *t = new_table();
    fill(t, 4, 2, 0, 1);
    t->leaves[CFG_POOL_HOT][3].bits = 3; /* 0x3/4 widened to 2 leaves' worth */
    t->leaves[CFG_POOL_HOT][3].start = 2u << 28;
    assert_invalid(t, "overlaps");
    fill(t, 4, 2, 0, 1);
    t->leaves[CFG_POOL_HOT][2].bits = 3; /* 0x2/3 covers leaf 3 too */
    assert_invalid(t, "overlaps");
    free(t);
}
END_TEST

START_TEST(unsorted_is_refused)
{
    struct cmap_table *t = new_table();
    fill(t, 4, 2, 0, 1);
    struct cmap_leaf tmp = t->leaves[CFG_POOL_HOT][7];
    t->leaves[CFG_POOL_HOT][7] = t->leaves[CFG_POOL_HOT][8];
    t->leaves[CFG_POOL_HOT][8] = tmp;
    assert_invalid(t, "unsorted");
    free(t);
}
END_TEST

START_TEST(start_that_does_not_fit_its_bits_is_refused)
{
    struct cmap_table *t = new_table();
    fill(t, 4, 2, 0, 1);
    t->leaves[CFG_POOL_HOT][1].start |= 1; /* low bits set */
    assert_invalid(t, "does not fit");
    fill(t, 4, 2, 0, 1);
    t->leaves[CFG_POOL_HOT][1].bits = CMAP_MAX_BITS + 1;
    assert_invalid(t, "bits");
    free(t);
}
END_TEST

START_TEST(bad_owner_is_refused)
{
    struct cmap_table *t = new_table();
    fill(t, 3, 2, 2, 1);
    t->leaves[CFG_POOL_HOT][2].owner = 0;
    assert_invalid(t, "not an owner of the pool");
    fill(t, 3, 2, 2, 1);
    t->leaves[CFG_POOL_HOT][2].owner = 3; /* a cold owner */
    assert_invalid(t, "not an owner of the pool");
    fill(t, 3, 2, 2, 1);
    t->leaves[CFG_POOL_COLD][0].owner = 77; /* unused row */
    assert_invalid(t, "not an owner of the pool");
    fill(t, 3, 2, 2, 1);
    t->owners[2].number = 5; /* row 2 claims another number */
    assert_invalid(t, "owner row 2");
    fill(t, 3, 2, 2, 1);
    t->leaves[CFG_POOL_HOT][1].state = CMAP_MOVING; /* no target */
    assert_invalid(t, "moves to 0");
    t->leaves[CFG_POOL_HOT][1].to = t->leaves[CFG_POOL_HOT][1].owner; /* to itself */
    assert_invalid(t, "moves to");
    t->leaves[CFG_POOL_HOT][1].to = 1 + (t->leaves[CFG_POOL_HOT][1].owner == 1);
    ck_assert_int_eq(cmap_validate(t, NULL, 0), HKV_OK);
    t->leaves[CFG_POOL_HOT][1].state = 9;
    assert_invalid(t, "unknown state");
    free(t);
}
END_TEST

START_TEST(bad_isr_is_refused)
{
    struct cmap_table *t = new_table();
    fill(t, 3, 3, 2, 1);
    struct cmap_leaf *l = &t->leaves[CFG_POOL_HOT][0]; /* owner 1 */
    l->nisr = 2;
    l->isr[0] = 2;
    l->isr[1] = 3;
    ck_assert_int_eq(cmap_validate(t, NULL, 0), HKV_OK);
    l->isr[1] = 1; /* the primary */
    assert_invalid(t, "in-sync follower 1 is not another owner");
    l->isr[1] = 4; /* a cold owner */
    assert_invalid(t, "in-sync follower 4 is not another owner");
    l->isr[1] = 77; /* no such owner */
    assert_invalid(t, "in-sync follower 77");
    l->isr[1] = 2; /* twice */
    assert_invalid(t, "named twice");
    l->isr[1] = 3;
    l->nisr = CMAP_MAX_ISR + 1;
    assert_invalid(t, "in-sync followers");
    free(t);
}
END_TEST

/* ---- lookups -------------------------------------------------------------------- */

START_TEST(lookup_finds_what_a_scan_finds)
{
    struct cmap_table *t = new_table();
    fill(t, 5, 3, 2, 1);
    /* split leaf 4 into two of 6 bits, and merge leaves 30, 31 into one of 4 bits */
    struct cmap_leaf *l = t->leaves[CFG_POOL_HOT];
    memmove(&l[5], &l[4], 28 * sizeof(*l));
    l[4].bits = 6;
    l[5].bits = 6;
    l[5].start = l[4].start + (1u << 26);
    l[5].owner = 3;
    l[31].bits = 4;
    l[31].start = 15u << 28;
    t->nleaves[CFG_POOL_HOT] = 32;
    char why[256];
    ck_assert_msg(cmap_validate(t, why, sizeof(why)) == HKV_OK, "%s", why);
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t place = i < 4 ? (uint64_t[]){0, ~0ULL, 1ULL << 63, (1ULL << 58) - 1}[i] : x;
        uint32_t h = (uint32_t)(place >> 32);
        const struct cmap_leaf *want = NULL;
        for (uint32_t k = 0; k < t->nleaves[CFG_POOL_HOT]; k++) {
            uint64_t span = 1ULL << (32 - l[k].bits);
            if (h >= l[k].start && (uint64_t)h < l[k].start + span)
                want = &l[k];
        }
        ck_assert_ptr_eq(cmap_lookup(t, CFG_POOL_HOT, place), want);
    }
    ck_assert_ptr_nonnull(cmap_lookup(t, CFG_POOL_COLD, 5));
    free(t);
}
END_TEST

START_TEST(empty_pool_has_no_leaf_and_owners_are_found_by_id)
{
    struct cmap_table *t = new_table();
    fill(t, 2, 2, 0, 1);
    ck_assert_ptr_null(cmap_lookup(t, CFG_POOL_COLD, 12345));
    ck_assert_uint_eq(cmap_owner_by_id(t, "h1", CFG_POOL_HOT, 1), 2);
    ck_assert_uint_eq(cmap_owner_by_id(t, "h1", CFG_POOL_HOT, 2), 0);
    ck_assert_uint_eq(cmap_owner_by_id(t, "h1", CFG_POOL_COLD, 0), 0);
    ck_assert_uint_eq(cmap_owner_by_id(t, "h9", CFG_POOL_HOT, 0), 0);
    ck_assert_ptr_eq(cmap_owner(t, 2), &t->owners[2]);
    ck_assert_ptr_null(cmap_owner(t, 0));
    ck_assert_ptr_null(cmap_owner(t, 3));
    ck_assert_ptr_null(cmap_owner(t, CMAP_MAX_OWNERS + 1));
    free(t);
}
END_TEST

/* ---- the segment ---------------------------------------------------------------- */

START_TEST(publish_then_snapshot_and_invalid_publish_changes_nothing)
{
    struct cmap *m = cmap_create();
    ck_assert_ptr_nonnull(m);
    struct cmap_table *t = new_table(), *out = new_table();
    ck_assert_int_eq(cmap_revision(m), 0);
    ck_assert_int_eq(cmap_snapshot(m, out), 0);
    fill(t, 6, 3, 1, 42);
    ck_assert_int_eq(cmap_publish(m, t), HKV_OK);
    ck_assert_int_eq(cmap_revision(m), 42);
    ck_assert_int_eq(cmap_snapshot(m, out), 42);
    ck_assert_uint_eq(out->nleaves[CFG_POOL_HOT], 64);
    ck_assert_int_eq(memcmp(out->leaves[0], t->leaves[0], 64 * sizeof(struct cmap_leaf)), 0);
    ck_assert_int_eq(memcmp(out->owners, t->owners, sizeof(t->owners)), 0);
    t->revision = 43;
    t->nleaves[CFG_POOL_HOT] = 63; /* a gap */
    ck_assert_int_eq(cmap_publish(m, t), HKV_EINVAL);
    ck_assert_int_eq(cmap_revision(m), 42);
    ck_assert_int_eq(cmap_snapshot(m, out), 42);
    ck_assert_uint_eq(out->nleaves[CFG_POOL_HOT], 64);

    struct cmap_health h = {.etcd_ok_ms = 5, .lease_id = 0x7fffffffffffff01LL,
                            .host_number = 9, .etcd_up = 1, .from_disk = 1}, g;
    cmap_health_set(m, &h);
    cmap_health_get(m, &g);
    ck_assert_int_eq(memcmp(&g, &h, sizeof(h)), 0);
    free(t);
    free(out);
    cmap_destroy(&m);
    ck_assert_ptr_null(m);
}
END_TEST

/* Every table the writer publishes says its revision everywhere (each
 * leaf's epoch, each owner's incarnation, the leaf count follows it): a
 * reader that sees two revisions in one copy saw a torn table. */
static int check_whole(const struct cmap_table *t, int64_t rev)
{
    if (t->revision != rev || cmap_validate(t, NULL, 0) != HKV_OK)
        return 0;
    if (t->nleaves[CFG_POOL_HOT] != (1u << (2 + rev % 5)))
        return 0;
    for (int p = 0; p < CMAP_NPOOLS; p++)
        for (uint32_t i = 0; i < t->nleaves[p]; i++)
            if (t->leaves[p][i].epoch != rev)
                return 0;
    for (unsigned k = 1; k <= CMAP_MAX_OWNERS; k++)
        if (t->owners[k].number && t->owners[k].incarnation != (uint64_t)rev)
            return 0;
    return 1;
}

START_TEST(reader_in_another_process_never_sees_a_torn_table)
{
    struct cmap *m = cmap_create();
    ck_assert_ptr_nonnull(m);
    struct cmap_table *t = new_table();
    fill(t, 3, 4, 3, 1);
    ck_assert_int_eq(cmap_publish(m, t), HKV_OK);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* the reader: ~1.5 s of snapshots; reports (whole, torn, distinct revisions) */
        struct cmap_table *out = new_table();
        long whole = 0, torn = 0, distinct = 0;
        int64_t last = 0, end = now_ms() + 1500;
        while (now_ms() < end) {
            int64_t r = cmap_snapshot(m, out);
            if (r == 0)
                continue; /* lost the race SNAP_TRIES times: nothing new, allowed */
            if (check_whole(out, r))
                whole++;
            else
                torn++;
            if (r != last)
                distinct++;
            last = r;
        }
        long res[3] = {whole, torn, distinct};
        ssize_t w = write(fds[1], res, sizeof(res));
        _exit(w == sizeof(res) ? 0 : 1);
    }
    close(fds[1]);
    /* the writer: publishes five tables of different shapes in turn, as fast
     * as it can, until the reader is done (bounded) */
    struct cmap_table *five[5];
    for (int i = 0; i < 5; i++) {
        five[i] = new_table();
        fill(five[i], 2 + (2 + i) % 5, 4, 3, 2 + i);
    }
    int64_t rev = 0, end = now_ms() + 5000;
    int status = -1;
    while (now_ms() < end) {
        ck_assert_int_eq(cmap_publish(m, five[rev % 5]), HKV_OK);
        rev++;
        if (rev % 16 == 0 && waitpid(pid, &status, WNOHANG) == pid)
            break;
    }
    for (int i = 0; i < 5; i++)
        free(five[i]);
    if (status == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    long res[3] = {0, 0, 0};
    ck_assert_int_eq(read(fds[0], res, sizeof(res)), sizeof(res));
    close(fds[0]);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reader failed");
    ck_assert_msg(res[1] == 0, "%ld torn copies out of %ld", res[1], res[0] + res[1]);
    ck_assert_msg(res[0] > 10 && res[2] > 5, "the reader saw too little: %ld whole, %ld changes",
                  res[0], res[2]);
    ck_assert_msg(rev > 100, "the writer published only %lld times", (long long)rev);
    free(t);
    cmap_destroy(&m);
}
END_TEST

START_TEST(writer_killed_mid_publish_stops_no_reader)
{
    struct cmap *m = cmap_create();
    ck_assert_ptr_nonnull(m);
    struct cmap_table *t = new_table(), *out = new_table();
    fill(t, 3, 4, 3, 1);
    ck_assert_int_eq(cmap_publish(m, t), HKV_OK);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        for (int64_t rev = 2; rev < 100000000; rev++) {
            fill(t, (int)(2 + rev % 5), 4, 3, rev);
            cmap_publish(m, t);
        }
        _exit(0);
    }
    usleep(300 * 1000);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    /* whatever the dead writer left, readers get a whole table at once */
    int64_t r = cmap_snapshot(m, out);
    ck_assert_int_gt(r, 0);
    ck_assert_msg(check_whole(out, r), "revision %lld torn", (long long)r);
    /* and the next writer (a restarted agent) publishes over it */
    fill(t, 3, 4, 3, r + 1000);
    ck_assert_int_eq(cmap_publish(m, t), HKV_OK);
    ck_assert_int_eq(cmap_snapshot(m, out), r + 1000);
    ck_assert_int_eq(cmap_revision(m), r + 1000);
    free(t);
    free(out);
    cmap_destroy(&m);
}
END_TEST

/* ---- the file ------------------------------------------------------------------- */

static void tmpname(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/hkv-cmap-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(buf));
    strcat(buf, "/cluster-map.bin");
}

static void rmfile(const char *path)
{
    char dir[256];
    unlink(path);
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = '\0';
    rmdir(dir);
}

START_TEST(save_load_round_trip)
{
    char path[256];
    tmpname(path, sizeof(path));
    struct cmap_table *t = new_table(), *back = new_table();
    ck_assert_int_eq(cmap_load(back, path), HKV_ENOENT);
    fill(t, 8, 5, 4, 123456789012LL);
    t->leaves[CFG_POOL_HOT][17].state = CMAP_MOVING;
    t->leaves[CFG_POOL_HOT][17].to = t->leaves[CFG_POOL_HOT][17].owner == 1 ? 2 : 1;
    t->owners[3].live = 0;
    t->leaves[CFG_POOL_HOT][3].nisr = 3; /* owner 4 of 5, followed by 5, 1, 2 */
    t->leaves[CFG_POOL_HOT][3].isr[0] = 5;
    t->leaves[CFG_POOL_HOT][3].isr[1] = 1;
    t->leaves[CFG_POOL_HOT][3].isr[2] = 2;
    t->leaves[CFG_POOL_HOT][17].nisr = 1;
    t->leaves[CFG_POOL_HOT][17].isr[0] = 5 - (t->leaves[CFG_POOL_HOT][17].to == 5);
    snprintf(t->owners[2].addr, sizeof(t->owners[2].addr), "%0*d", CMAP_NAME_MAX - 1, 7);
    ck_assert_int_eq(cmap_save(t, path), HKV_OK);
    memset(back, 0xa5, sizeof(*back));
    ck_assert_int_eq(cmap_load(back, path), HKV_OK);
    ck_assert_int_eq(back->revision, t->revision);
    for (int p = 0; p < CMAP_NPOOLS; p++) {
        ck_assert_uint_eq(back->nleaves[p], t->nleaves[p]);
        for (uint32_t i = 0; i < t->nleaves[p]; i++) {
            const struct cmap_leaf *a = &t->leaves[p][i], *b = &back->leaves[p][i];
            ck_assert(a->start == b->start && a->bits == b->bits && a->state == b->state &&
                      a->owner == b->owner && a->to == b->to && a->epoch == b->epoch &&
                      a->nisr == b->nisr && memcmp(a->isr, b->isr, sizeof(a->isr)) == 0);
        }
    }
    ck_assert_int_eq(memcmp(back->owners, t->owners, sizeof(t->owners)), 0);
    /* saving again replaces it; no temporary file is left beside it */
    t->revision++;
    ck_assert_int_eq(cmap_save(t, path), HKV_OK);
    ck_assert_int_eq(cmap_load(back, path), HKV_OK);
    ck_assert_int_eq(back->revision, t->revision);
    /* an invalid table is not saved */
    t->nleaves[CFG_POOL_COLD] = 3;
    ck_assert_int_eq(cmap_save(t, path), HKV_EINVAL);
    rmfile(path);
    free(t);
    free(back);
}
END_TEST

static void write_bytes(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, p, n), (ssize_t)n);
    close(fd);
}

static size_t read_bytes(const char *path, unsigned char *p, size_t cap)
{
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ssize_t n = read(fd, p, cap);
    close(fd);
    ck_assert_int_gt(n, 0);
    return (size_t)n;
}

START_TEST(torn_flipped_or_foreign_file_is_refused)
{
    char path[256];
    tmpname(path, sizeof(path));
    struct cmap_table *t = new_table(), *back = new_table();
    fill(t, 4, 2, 2, 99);
    ck_assert_int_eq(cmap_save(t, path), HKV_OK);
    static unsigned char good[1 << 16], bad[1 << 16];
    size_t n = read_bytes(path, good, sizeof(good));
    ck_assert_uint_lt(n, sizeof(good));
    /* torn at every length */
    for (size_t cut = 0; cut < n; cut += (cut < 64 ? 1 : 37)) {
        write_bytes(path, good, cut);
        ck_assert_msg(cmap_load(back, path) == HKV_EINVAL, "a file cut at %zu was taken", cut);
    }
    /* one bit flipped anywhere */
    for (size_t i = 0; i < n; i += 7) {
        memcpy(bad, good, n);
        bad[i] ^= 0x10;
        write_bytes(path, bad, n);
        ck_assert_msg(cmap_load(back, path) == HKV_EINVAL, "a flip at %zu was taken", i);
    }
    /* a file of the format before in-sync sets (version 1) */
    memcpy(bad, good, n);
    bad[8] = 1;
    bad[9] = bad[10] = bad[11] = 0;
    write_bytes(path, bad, n);
    ck_assert_int_eq(cmap_load(back, path), HKV_EINVAL);
    /* garbage, and a longer file */
    for (size_t i = 0; i < n; i++)
        bad[i] = (unsigned char)(i * 131 + 7);
    write_bytes(path, bad, n);
    ck_assert_int_eq(cmap_load(back, path), HKV_EINVAL);
    memcpy(bad, good, n);
    bad[n] = 0;
    write_bytes(path, bad, n + 1);
    ck_assert_int_eq(cmap_load(back, path), HKV_EINVAL);
    /* the good one still loads */
    write_bytes(path, good, n);
    ck_assert_int_eq(cmap_load(back, path), HKV_OK);
    ck_assert_int_eq(back->revision, 99);
    rmfile(path);
    free(t);
    free(back);
}
END_TEST

Suite *cmap_suite(void)
{
    Suite *s = suite_create("cmap");
    TCase *tc = tcase_create("validate");
    tcase_add_test(tc, valid_tables_pass);
    tcase_add_test(tc, gap_is_refused);
    tcase_add_test(tc, overlap_is_refused);
    tcase_add_test(tc, unsorted_is_refused);
    tcase_add_test(tc, start_that_does_not_fit_its_bits_is_refused);
    tcase_add_test(tc, bad_owner_is_refused);
    tcase_add_test(tc, bad_isr_is_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("lookup");
    tcase_add_test(tc, lookup_finds_what_a_scan_finds);
    tcase_add_test(tc, empty_pool_has_no_leaf_and_owners_are_found_by_id);
    suite_add_tcase(s, tc);
    tc = tcase_create("segment");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, publish_then_snapshot_and_invalid_publish_changes_nothing);
    tcase_add_test(tc, reader_in_another_process_never_sees_a_torn_table);
    tcase_add_test(tc, writer_killed_mid_publish_stops_no_reader);
    suite_add_tcase(s, tc);
    tc = tcase_create("file");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, save_load_round_trip);
    tcase_add_test(tc, torn_flipped_or_foreign_file_is_refused);
    suite_add_tcase(s, tc);
    return s;
}
