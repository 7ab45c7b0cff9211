/*
 * check_cache_shared.c - the colo segment shared by processes
 * (server/colo/cache.h), with real fork()ed ones: what a reader gets is
 * always a whole value some writer stored, or a miss, while writers race,
 * evict and move pages; a process that dies inside the segment (mid-write,
 * holding a lock) cannot wedge or poison it, and a corrupt entry is a
 * miss; refresh locks are exclusive across processes and expire (the
 * segment in one process: check_cache.c).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/colo/cache.h"
#include "server/colo/cache_test.h"
#include "server/core/router.h"
#include "tests/unit/cache_fixture.h"

/* ---- across processes ---- */

/* A value is derivable from (key, stamp): length and every byte. */
static size_t make_value(char *out, int k, uint64_t stamp, size_t spread)
{
    size_t len = 8 + (size_t)((stamp * 7 + (uint64_t)k * 13) % spread);
    for (size_t j = 0; j < len; j++)
        out[j] = (char)(stamp * 31 + (uint64_t)k * 7 + j);
    return len;
}

struct shared_run {
    volatile int stop;
    int nkeys;
    size_t spread;
    volatile long hits[2], misses[2], bad[2], puts[2], stale[2];
};

static void writer(struct cache *c, struct shared_run *r, int w)
{
    char key[16], val[4096];
    uint64_t iter = 0;
    while (!r->stop) {
        int k = (int)(iter % (uint64_t)r->nkeys);
        uint64_t stamp = ((iter / (uint64_t)r->nkeys + 1) << 1) | (uint64_t)w;
        int kl = snprintf(key, sizeof(key), "c:%d", k);
        size_t vl = make_value(val, k, stamp, r->spread);
        int rc = cache_put(c,
                           &(struct cache_entry){.key = key, .klen = (size_t)kl,
                                                 .khash = router_hash(key, (size_t)kl), .val = val,
                                                 .vlen = vl, .stamp = stamp, .fresh_until = 1000,
                                                 .keep_until = 1000000},
                           1);
        if (rc == HKV_OK)
            r->puts[w]++;
        else if (rc == HKV_ESTALE)
            r->stale[w]++;
        else
            r->bad[w] += 1000; /* any other answer is a failure */
        iter++;
    }
}

static void reader(struct cache *c, struct shared_run *r, int w)
{
    struct hkv_buf b = HKV_BUF_INIT;
    struct cache_hit h;
    char key[16], want[4096];
    uint64_t i = 0;
    while (!r->stop) {
        int k = (int)(i++ % (uint64_t)r->nkeys);
        int kl = snprintf(key, sizeof(key), "c:%d", k);
        int rc = cache_get(c, key, (size_t)kl, router_hash(key, (size_t)kl), 10, &b, &h);
        if (rc == HKV_OK) {
            size_t wl = make_value(want, k, h.stamp, r->spread);
            if (b.len != wl || memcmp(b.data, want, wl) != 0)
                r->bad[w]++;
            else
                r->hits[w]++;
        } else if (rc == HKV_ENOENT) {
            r->misses[w]++;
        } else {
            r->bad[w]++;
        }
    }
    buf_deinit(&b);
}

/* 2 writers and 2 readers, forked, for 1.2 s; every hit is checked against
 * the value its stamp implies. */
static struct shared_run *run_fork(struct cache *c, int nkeys, size_t spread)
{
    struct shared_run *r =
        mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(r, MAP_FAILED);
    memset((void *)r, 0, sizeof(*r));
    r->nkeys = nkeys;
    r->spread = spread;
    pid_t pids[4];
    for (int i = 0; i < 4; i++) {
        pids[i] = fork();
        ck_assert_int_ge(pids[i], 0);
        if (pids[i] == 0) {
            if (cache_attach(c) != HKV_OK)
                _exit(3);
            if (i < 2)
                writer(c, r, i);
            else
                reader(c, r, i - 2);
            _exit(0);
        }
    }
    struct timespec d = {1, 200000000};
    nanosleep(&d, NULL);
    r->stop = 1;
    for (int i = 0; i < 4; i++) {
        int status;
        ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    printf("cache concurrency (%d keys): puts %ld+%ld (stale %ld+%ld), reader hits %ld+%ld, "
           "misses %ld+%ld (torn/corrupt %llu), inconsistent %ld+%ld\n",
           nkeys, r->puts[0], r->puts[1], r->stale[0], r->stale[1], r->hits[0], r->hits[1],
           r->misses[0], r->misses[1],
           (unsigned long long)ctr(c, CACHE_CTR_cache_corrupt_entries), r->bad[0], r->bad[1]);
    ck_assert_int_eq(r->bad[0] + r->bad[1], 0);
    ck_assert_int_gt(r->hits[0], 0);
    ck_assert_int_gt(r->hits[1], 0);
    ck_assert_int_gt(r->puts[0] + r->puts[1], 0);
    return r;
}

START_TEST(concurrent_readers_and_writers_across_fork)
{
    struct cache *c = mk(4u << 20, 4096, 16);
    struct shared_run *r = run_fork(c, 100, 900);
    munmap((void *)r, sizeof(*r));
    cache_destroy(&c);
}
END_TEST

/* The same, in a 1 MB segment far smaller than the data: entries are
 * evicted and pages change slot class under the readers' feet. */
START_TEST(concurrent_readers_survive_eviction_and_page_moves)
{
    struct cache *c = mk(1u << 20, 4096, 16);
    struct shared_run *r = run_fork(c, 3000, 3900);
    struct cache_stats st;
    cache_stats(c, &st);
    printf("cache concurrency (1 MB): evictions %llu\n",
           (unsigned long long)st.counters[CACHE_CTR_cache_evictions]);
    ck_assert_uint_gt(st.counters[CACHE_CTR_cache_evictions], 0);
    ck_assert_uint_le(st.used_memory, st.capacity);
    munmap((void *)r, sizeof(*r));
    cache_destroy(&c);
}
END_TEST

/* Finds a key other than `not` that lands in stripe s. */
static void key_in_stripe(struct cache *c, uint32_t s, const char *not, char *out, size_t cap)
{
    for (int i = 0;; i++) {
        snprintf(out, cap, "n:%d", i);
        if (strcmp(out, not) != 0 && cache_test_stripe(c, router_hash(out, strlen(out))) == s)
            return;
    }
}

START_TEST(torn_write_is_a_miss)
{
    struct cache *c = mk(2u << 20, 4096, 16);
    struct hkv_buf b = HKV_BUF_INIT;
    struct cache_hit h;
    char other[32];
    key_in_stripe(c, cache_test_stripe(c, router_hash("torn", 4)), "torn", other, sizeof(other));
    ck_assert_int_eq(PUT(c, "torn", "a value that will be half overwritten", 5, 1000, 100000, 1),
                     HKV_OK);
    ck_assert_int_eq(PUT(c, other, "neighbour", 5, 1000, 100000, 1), HKV_OK);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(cache_test_open_write(c, "torn", 4, router_hash("torn", 4)) == HKV_OK ? 0 : 1);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    double t0 = mono_ns();
    ck_assert_int_eq(GET(c, "torn", 10, &b, &h), HKV_ENOENT);
    double took = mono_ns() - t0;
    ck_assert_msg(took < 50e6, "a torn entry took %.0f ns to give up on", took);
    ck_assert_uint_eq(ctr(c, CACHE_CTR_cache_corrupt_entries), 1);
    ck_assert_int_eq(GET(c, other, 10, &b, &h), HKV_OK); /* readers are not blocked */
    assert_value(&b, "neighbour");

    /* the next writer of the stripe repairs it: the torn entry is gone, the
     * neighbour survives, the key can be stored again */
    ck_assert_int_eq(PUT(c, "torn", "fresh", 6, 1000, 100000, 2), HKV_OK);
    ck_assert_uint_eq(ctr(c, CACHE_CTR_cache_lock_repairs), 1);
    ck_assert_int_eq(GET(c, "torn", 10, &b, &h), HKV_OK);
    assert_value(&b, "fresh");
    ck_assert_int_eq(GET(c, other, 10, &b, &h), HKV_OK);
    assert_value(&b, "neighbour");
    struct cache_stats st;
    cache_stats(c, &st);
    ck_assert_uint_eq(st.entries, 2);
    buf_deinit(&b);
    cache_destroy(&c);
}
END_TEST

START_TEST(corrupt_entry_is_a_miss)
{
    struct cache *c = mk(2u << 20, 4096, 16);
    struct hkv_buf b = HKV_BUF_INIT;
    struct cache_hit h;
    ck_assert_int_eq(PUT(c, "rot", "bits rot in memory", 5, 1000, 100000, 1), HKV_OK);
    ck_assert_int_eq(cache_test_flip(c, "rot", 3, router_hash("rot", 3), 3), HKV_OK);
    ck_assert_int_eq(GET(c, "rot", 10, &b, &h), HKV_ENOENT);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_uint_eq(ctr(c, CACHE_CTR_cache_corrupt_entries), 1);
    ck_assert_int_eq(GET(c, "rot", 10, &b, &h), HKV_ENOENT);
    ck_assert_uint_eq(ctr(c, CACHE_CTR_cache_corrupt_entries), 2);
    /* a writer drops the corrupt entry instead of trusting its stamp */
    ck_assert_int_eq(PUT(c, "rot", "whole again", 1, 1000, 100000, 2), HKV_OK);
    ck_assert_int_eq(GET(c, "rot", 10, &b, &h), HKV_OK);
    assert_value(&b, "whole again");
    buf_deinit(&b);
    cache_destroy(&c);
}
END_TEST

/* Defect 13 of issue 11: a reader that validated an entry and was then
 * preempted before it set the entry's CLOCK bit must not write into the
 * page once the page has been given to another slot class.  Played with
 * the test hooks: the key's page (class 0, 128-byte slots) is given to
 * class 1 (256-byte slots) and a new entry fills it, then the late mark
 * of the old entry (slot 1: its header's bit sits 204 bytes into the page,
 * inside the new entry's value) is made.  The new entry must stay whole. */
START_TEST(late_reader_mark_never_writes_into_a_moved_page)
{
    struct cache *c = mk(2u << 20, 4096, 16);
    struct hkv_buf b = HKV_BUF_INIT;
    struct cache_hit h;
    uint32_t s = cache_test_stripe(c, router_hash("first", 5));
    char old[32], nu[32];
    key_in_stripe(c, s, "first", old, sizeof(old));
    key_in_stripe(c, s, old, nu, sizeof(nu));
    ck_assert_int_eq(PUT(c, "first", "a", 5, 1000, 100000, 1), HKV_OK);
    ck_assert_int_eq(PUT(c, old, "b", 5, 1000, 100000, 1), HKV_OK);
    struct cache_test_where w0, w, wn;
    ck_assert_int_eq(cache_test_where(c, "first", 5, router_hash("first", 5), &w0), HKV_OK);
    ck_assert_int_eq(cache_test_where(c, old, strlen(old), router_hash(old, strlen(old)), &w),
                     HKV_OK);
    ck_assert_uint_eq(w.cls, 0);
    ck_assert_uint_eq(w.page, w0.page);
    ck_assert_uint_eq(w.slot, 1);
    /* the reader validated `old` at w ... and the page changes hands */
    cache_test_give_page(c, w.stripe, w.page, 1);
    static const char zeros[150]; /* a binary value: the bit's word is 0 there */
    ck_assert_int_eq(cache_put(c,
                               &(struct cache_entry){.key = nu, .klen = strlen(nu),
                                                     .khash = router_hash(nu, strlen(nu)),
                                                     .val = zeros, .vlen = sizeof(zeros),
                                                     .stamp = 6, .fresh_until = 1000,
                                                     .keep_until = 100000},
                               2),
                     HKV_OK);
    ck_assert_int_eq(cache_test_where(c, nu, strlen(nu), router_hash(nu, strlen(nu)), &wn), HKV_OK);
    ck_assert_uint_eq(wn.page, w.page);
    ck_assert_uint_eq(wn.cls, 1);
    ck_assert_uint_eq(wn.slot, 0);
    cache_test_touch(c, &w); /* ... then the reader marks what it validated */
    int rc = GET(c, nu, 10, &b, &h);
    ck_assert_msg(rc == HKV_OK && b.len == sizeof(zeros) && memcmp(b.data, zeros, b.len) == 0,
                  "the late mark of a moved entry damaged the page's new entry (get %d, "
                  "corrupt entries %llu)",
                  rc, (unsigned long long)ctr(c, CACHE_CTR_cache_corrupt_entries));
    ck_assert_uint_eq(ctr(c, CACHE_CTR_cache_corrupt_entries), 0);
    buf_deinit(&b);
    cache_destroy(&c);
}
END_TEST

START_TEST(lock_holder_killed_is_repaired)
{
    struct cache *c = mk(2u << 20, 4096, 16);
    struct hkv_buf b = HKV_BUF_INIT;
    struct cache_hit h;
    ck_assert_int_eq(PUT(c, "before", "kept", 5, 1000, 100000, 1), HKV_OK);
    uint64_t kh = router_hash("before", 6);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        char ok = cache_test_hold_stripe(c, kh) == HKV_OK ? 'y' : 'n';
        if (write(fds[1], &ok, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(fds[1]);
    char got = 0;
    ck_assert_int_eq(read(fds[0], &got, 1), 1);
    ck_assert_int_eq(got, 'y');
    close(fds[0]);
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status));

    ck_assert_int_eq(GET(c, "before", 10, &b, &h), HKV_OK); /* reads never needed the lock */
    char other[32];
    key_in_stripe(c, cache_test_stripe(c, kh), "before", other, sizeof(other));
    ck_assert_int_eq(PUT(c, other, "after", 6, 1000, 100000, 2), HKV_OK);
    ck_assert_uint_eq(ctr(c, CACHE_CTR_cache_lock_repairs), 1);
    ck_assert_int_eq(PUT(c, "before", "kept 2", 7, 1000, 100000, 2), HKV_OK);
    ck_assert_uint_eq(ctr(c, CACHE_CTR_cache_lock_repairs), 1);
    ck_assert_int_eq(GET(c, "before", 10, &b, &h), HKV_OK);
    assert_value(&b, "kept 2");
    ck_assert_int_eq(GET(c, other, 10, &b, &h), HKV_OK);
    assert_value(&b, "after");
    buf_deinit(&b);
    cache_destroy(&c);
}
END_TEST

START_TEST(refresh_lock_exclusive_and_expires)
{
    struct cache *c = mk(2u << 20, 4096, 16);
    uint64_t kh = router_hash("draw", 4);
    const uint64_t ta = 1ULL << 32 | 1, tb = 2ULL << 32 | 1, tc = 3ULL << 32 | 1;
    ck_assert_int_eq(cache_lock(c, kh, ta, 1000, 500), 1);
    ck_assert_int_eq(cache_lock(c, kh, ta, 1001, 500), 1); /* the holder asks again */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int rc = cache_attach(c) == HKV_OK ? 0 : 10;
        if (cache_lock(c, kh, tb, 1100, 500) != 0)
            rc |= 1;
        cache_unlock(c, kh, tb); /* not the holder: ignored */
        if (cache_lock(c, kh, tb, 1200, 500) != 0)
            rc |= 2;
        if (cache_lock(c, router_hash("other", 5), tb, 1200, 500) != 1)
            rc |= 4;
        _exit(rc);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    ck_assert_int_eq(cache_lock(c, kh, tb, 1499, 500), 0);
    ck_assert_int_eq(cache_lock(c, kh, tb, 1500, 500), 1); /* ta's expired */
    cache_unlock(c, kh, ta);                                 /* late: ignored */
    ck_assert_int_eq(cache_lock(c, kh, tc, 1600, 500), 0);
    cache_unlock(c, kh, tb);
    ck_assert_int_eq(cache_lock(c, kh, tc, 1600, 500), 1);
    cache_destroy(&c);
}
END_TEST

/* Defect 8 of issue 11: a lock nobody released (its holder died) must stay
 * expired however long ago it expired; the old 32-bit expiry, compared
 * modulo 2^32, made it "held" again 24.9 days later.  Also around the
 * points where the monotonic clock crosses 2^31, 2^32 and 2^40 ms. */
START_TEST(refresh_lock_expiry_does_not_wrap)
{
    struct cache *c = mk(2u << 20, 4096, 16);
    uint64_t kh = router_hash("wrap", 4);
    /* pids 1 and 2 always exist: these holders are never taken for dead */
    const uint64_t ta = 1ULL << 32 | 7, tb = 2ULL << 32 | 7;
    const int64_t day = 86400000;
    const int64_t later[] = {(1LL << 31) + 1000, (1LL << 32) - 100, 25 * day, 30 * day,
                             50 * day, 400 * day};
    for (size_t i = 0; i < sizeof(later) / sizeof(later[0]); i++) {
        ck_assert_int_eq(cache_lock(c, kh, ta, 1000, 500), 1);
        ck_assert_msg(cache_lock(c, kh, tb, 1500 + later[i], 500) == 1,
                      "a lock that expired %lld ms ago counts as held", (long long)later[i]);
        cache_unlock(c, kh, tb);
    }
    const int64_t edges[] = {1LL << 31, 1LL << 32, 1LL << 40, 1LL << 41};
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
        int64_t t = edges[i] - 100;
        ck_assert_int_eq(cache_lock(c, kh, ta, t, 500), 1);
        ck_assert_msg(cache_lock(c, kh, tb, t + 200, 500) == 0,
                      "a live lock looks free across %lld", (long long)edges[i]);
        ck_assert_int_eq(cache_lock(c, kh, ta, t + 499, 500), 1); /* still the holder's */
        ck_assert_msg(cache_lock(c, kh, tb, t + 500, 500) == 1,
                      "an expired lock looks held across %lld", (long long)edges[i]);
        cache_unlock(c, kh, tb);
    }
    cache_destroy(&c);
}
END_TEST

/* Defect 8 of issue 11: a holder that died (its process is gone) stops
 * blocking the key at once, not after the lock's ttl; a live holder keeps
 * it.  Tokens carry the holder's pid (pid << 32 | sequence). */
START_TEST(refresh_lock_of_a_dead_holder_is_free)
{
    struct cache *c = mk(2u << 20, 4096, 16);
    uint64_t kh = router_hash("dead", 4);
    const uint64_t me = (uint64_t)(uint32_t)getpid() << 32 | 1;
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        uint64_t t = (uint64_t)(uint32_t)getpid() << 32 | 1;
        char ok = cache_attach(c) == HKV_OK && cache_lock(c, kh, t, 1000, 60000) == 1 ? 'y' : 'n';
        if (write(fds[1], &ok, 1) != 1)
            _exit(1);
        for (;;)
            pause(); /* holds the lock until killed */
    }
    close(fds[1]);
    char got = 0;
    ck_assert_int_eq(read(fds[0], &got, 1), 1);
    close(fds[0]);
    ck_assert_int_eq(got, 'y');
    /* alive: held, even by a caller that asks again and again */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(cache_lock(c, kh, me, 1100 + i * 100, 500), 0);
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    /* dead (and reaped): free long before its ttl (1000 + 60000) */
    ck_assert_msg(cache_lock(c, kh, me, 2000, 500) == 1,
                  "the lock of a holder that is gone still blocks the key");
    ck_assert_int_eq(cache_lock(c, kh, 2ULL << 32 | 9, 2100, 500), 0); /* and it is mine */
    cache_unlock(c, kh, me);
    ck_assert_int_eq(cache_lock(c, kh, 2ULL << 32 | 9, 2100, 500), 1);
    cache_destroy(&c);
}
END_TEST

Suite *cache_shared_suite(void)
{
    Suite *s = suite_create("cache_shared");
    TCase *tc = tcase_create("processes");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, concurrent_readers_and_writers_across_fork);
    tcase_add_test(tc, concurrent_readers_survive_eviction_and_page_moves);
    tcase_add_test(tc, torn_write_is_a_miss);
    tcase_add_test(tc, lock_holder_killed_is_repaired);
    tcase_add_test(tc, refresh_lock_exclusive_and_expires);
    tcase_add_test(tc, refresh_lock_expiry_does_not_wrap);
    tcase_add_test(tc, refresh_lock_of_a_dead_holder_is_free);
    suite_add_tcase(s, tc);

    tc = tcase_create("damage");
    tcase_add_test(tc, corrupt_entry_is_a_miss);
    tcase_add_test(tc, late_reader_mark_never_writes_into_a_moved_page);
    suite_add_tcase(s, tc);
    return s;
}
