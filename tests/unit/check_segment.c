/*
 * check_segment.c - the shared-segment scaffolding under the colo cache and
 * the rate limiter (server/colo/segment.h), on a toy segment of its own: a
 * child refuses a header whose magic, version, checksum, size or layout is
 * not what it would have made; a stripe lock whose holder died is handed to
 * the next locker with the owner's repair run first, and a live holder is
 * never waited on by trylock; counter rows add up across processes and
 * reset to zero.  Cross-process behaviour uses real fork()ed processes.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "server/colo/segment.h"

/* The toy owner: one input (nlocks), a region of nlocks mutexes 64 bytes
 * apart, each followed by a word the lock guards. */
struct toy_hdr {
    struct seg_hdr seg;
    uint32_t nlocks, pad;
    uint64_t off_locks;
};

struct toy_lock {
    pthread_mutex_t mu;
    _Atomic uint64_t state; /* 1 while a holder is "mid-write" */
} __attribute__((aligned(64)));

static int toy_layout(void *hdr, const void *in)
{
    uint32_t n = ((const struct toy_hdr *)in)->nlocks;
    struct toy_hdr *h = hdr;
    if (n == 0 || n > 64)
        return HKV_EINVAL;
    h->nlocks = n;
    h->pad = 0;
    h->off_locks = seg_first(sizeof(*h));
    h->seg.bytes = seg_align(h->off_locks + (uint64_t)n * sizeof(struct toy_lock), 4096);
    return HKV_OK;
}

static const struct seg_kind toy = {
    .name = "hotkvd-test-segment",
    .magic = 0x796f74676573766bULL,
    .version = 7,
    .hdr_size = sizeof(struct toy_hdr),
    .layout = toy_layout,
};

static void mk(struct seg *s, uint32_t nlocks)
{
    struct toy_hdr h;
    memset(&h, 0, sizeof(h));
    h.nlocks = nlocks;
    ck_assert_int_eq(seg_create(s, &toy, &h), HKV_OK);
    ck_assert_ptr_nonnull(s->base);
    ck_assert_uint_eq(s->bytes, h.seg.bytes);
    ck_assert_int_eq(seg_attach(s, &toy), HKV_OK);
}

static struct toy_hdr *hdr_of(struct seg *s)
{
    return (struct toy_hdr *)s->base;
}

static struct toy_lock *lock_at(struct seg *s, uint32_t i)
{
    return (struct toy_lock *)(s->base + hdr_of(s)->off_locks) + i;
}

/* ---- header ---- */

START_TEST(created_segment_attaches_and_its_header_checks)
{
    struct seg s;
    mk(&s, 4);
    ck_assert_uint_eq(s.bytes % 4096, 0);
    ck_assert_uint_eq(hdr_of(&s)->seg.magic, toy.magic);
    ck_assert_uint_eq(hdr_of(&s)->seg.version, toy.version);
    ck_assert_uint_eq(hdr_of(&s)->seg.hdr_size, sizeof(struct toy_hdr));
    ck_assert_uint_gt(hdr_of(&s)->seg.generation, 0);
    ck_assert_int_eq(seg_hdr_check(s.base, s.bytes, &toy), HKV_OK);
    /* fewer readable bytes than the header: refused before anything is read */
    ck_assert_int_eq(seg_hdr_check(s.base, sizeof(struct toy_hdr) - 1, &toy), HKV_ECORRUPT);
    /* another kind of segment (another magic) is refused */
    struct seg_kind other = toy;
    other.magic ^= 1;
    ck_assert_int_eq(seg_attach(&s, &other), HKV_ECORRUPT);
    ck_assert_int_eq(seg_attach(&s, &toy), HKV_OK);
    seg_destroy(&s);
    ck_assert_ptr_null(s.base);
    seg_destroy(&s); /* an empty view: nothing */
}
END_TEST

START_TEST(attach_refuses_bad_magic)
{
    struct seg s;
    mk(&s, 4);
    hdr_of(&s)->seg.magic ^= 0x100;
    seg_hdr_seal(s.base); /* only the magic is wrong, not the checksum */
    ck_assert_int_eq(seg_hdr_check(s.base, s.bytes, &toy), HKV_ECORRUPT);
    ck_assert_int_eq(seg_attach(&s, &toy), HKV_ECORRUPT);
    hdr_of(&s)->seg.magic ^= 0x100;
    seg_hdr_seal(s.base);
    ck_assert_int_eq(seg_attach(&s, &toy), HKV_OK); /* put back: accepted */
    seg_destroy(&s);
}
END_TEST

START_TEST(attach_refuses_another_layout_version)
{
    struct seg s;
    mk(&s, 4);
    hdr_of(&s)->seg.version = toy.version + 1;
    seg_hdr_seal(s.base);
    ck_assert_int_eq(seg_hdr_check(s.base, s.bytes, &toy), HKV_ECORRUPT);
    ck_assert_int_eq(seg_attach(&s, &toy), HKV_ECORRUPT);
    hdr_of(&s)->seg.version = toy.version;
    hdr_of(&s)->seg.hdr_size = sizeof(struct toy_hdr) + 8; /* a header of another size */
    seg_hdr_seal(s.base);
    ck_assert_int_eq(seg_attach(&s, &toy), HKV_ECORRUPT);
    seg_destroy(&s);
}
END_TEST

START_TEST(attach_refuses_bad_checksum)
{
    struct seg s;
    mk(&s, 4);
    /* one bit of a field the layout does not recompute, checksum not fixed */
    hdr_of(&s)->seg.generation ^= 1;
    ck_assert_int_eq(seg_hdr_check(s.base, s.bytes, &toy), HKV_ECORRUPT);
    ck_assert_int_eq(seg_attach(&s, &toy), HKV_ECORRUPT);
    hdr_of(&s)->seg.generation ^= 1;
    ck_assert_int_eq(seg_attach(&s, &toy), HKV_OK);
    /* the checksum covers the owner's part of the header too */
    hdr_of(&s)->pad = 1;
    ck_assert_int_eq(seg_attach(&s, &toy), HKV_ECORRUPT);
    hdr_of(&s)->pad = 0;
    hdr_of(&s)->seg.sum ^= 1ULL << 40; /* and the checksum itself */
    ck_assert_int_eq(seg_attach(&s, &toy), HKV_ECORRUPT);
    seg_destroy(&s);
}
END_TEST

START_TEST(attach_refuses_a_layout_it_would_not_make)
{
    struct seg s;
    mk(&s, 4);
    struct toy_hdr good = *hdr_of(&s);
    /* an offset moved, with a checksum that matches: the recomputed layout
     * disagrees */
    hdr_of(&s)->off_locks += 64;
    seg_hdr_seal(s.base);
    ck_assert_int_eq(seg_hdr_check(s.base, s.bytes, &toy), HKV_OK);
    ck_assert_int_eq(seg_attach(&s, &toy), HKV_ECORRUPT);
    /* an input the layout refuses */
    *hdr_of(&s) = good;
    hdr_of(&s)->nlocks = 0;
    seg_hdr_seal(s.base);
    ck_assert_int_eq(seg_attach(&s, &toy), HKV_ECORRUPT);
    /* a size other than the mapping's */
    *hdr_of(&s) = good;
    hdr_of(&s)->seg.bytes += 4096;
    seg_hdr_seal(s.base);
    ck_assert_int_eq(seg_attach(&s, &toy), HKV_ECORRUPT);
    *hdr_of(&s) = good;
    ck_assert_int_eq(seg_attach(&s, &toy), HKV_OK);
    seg_destroy(&s);
}
END_TEST

START_TEST(create_refuses_what_the_layout_refuses)
{
    struct seg s;
    struct toy_hdr h;
    memset(&h, 0, sizeof(h));
    h.nlocks = 65;
    errno = 0;
    ck_assert_int_eq(seg_create(&s, &toy, &h), HKV_EINVAL);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_ptr_null(s.base);
    struct seg_kind huge = toy;
    huge.hdr_size = SEG_HDR_MAX + 8;
    h.nlocks = 1;
    ck_assert_int_eq(seg_create(&s, &huge, &h), HKV_EINVAL);
}
END_TEST

START_TEST(checksum_sees_every_bit)
{
    unsigned char buf[77];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 37 + 11);
    uint64_t base = seg_sum_bytes(5, buf, sizeof(buf));
    ck_assert_uint_ne(base, seg_sum_bytes(6, buf, sizeof(buf)));     /* the seed */
    ck_assert_uint_ne(base, seg_sum_bytes(5, buf, sizeof(buf) - 1)); /* the length */
    for (size_t bit = 0; bit < sizeof(buf) * 8; bit++) {
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        ck_assert_msg(seg_sum_bytes(5, buf, sizeof(buf)) != base, "bit %zu unseen", bit);
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    ck_assert_uint_eq(seg_sum_bytes(5, buf, sizeof(buf)), base);
}
END_TEST

/* ---- stripe locks ---- */

struct fix {
    struct toy_lock *l;
    int calls;
};

/* The owner's repair: what the dead holder left half-done is undone. */
static void repair(void *arg)
{
    struct fix *f = arg;
    atomic_store(&f->l->state, 0);
    f->calls++;
}

/* Forks a child that takes lock i, marks it mid-write and then dies (die)
 * or waits to be killed (returns once it holds the lock). */
static pid_t hold_in_child(struct seg *s, uint32_t i, int die)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        struct toy_lock *l = lock_at(s, i);
        if (seg_lock(&l->mu, NULL, NULL) != HKV_OK)
            _exit(2);
        atomic_store(&l->state, 1);
        if (die)
            _exit(0); /* dies holding it */
        char ok = 'y';
        if (write(fds[1], &ok, 1) != 1)
            _exit(1);
        for (int t = 0; t < 600; t++) /* bounded: the test kills it long before */
            sleep(1);
        _exit(0);
    }
    close(fds[1]);
    if (die) {
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    } else {
        char got = 0;
        ck_assert_int_eq(read(fds[0], &got, 1), 1);
        ck_assert_int_eq(got, 'y');
    }
    close(fds[0]);
    return pid;
}

START_TEST(lock_of_a_dead_holder_is_recovered_after_repair)
{
    struct seg s;
    mk(&s, 4);
    for (uint32_t i = 0; i < 4; i++)
        ck_assert_int_eq(seg_lock_init(&lock_at(&s, i)->mu), HKV_OK);
    struct toy_lock *l = lock_at(&s, 2);
    hold_in_child(&s, 2, 1);
    ck_assert_uint_eq(atomic_load(&l->state), 1); /* left mid-write */

    struct fix f = {l, 0};
    ck_assert_int_eq(seg_lock(&l->mu, repair, &f), HKV_OK);
    ck_assert_int_eq(f.calls, 1);
    ck_assert_uint_eq(atomic_load(&l->state), 0);
    seg_unlock(&l->mu);
    /* consistent again: the next locker has nothing to repair */
    ck_assert_int_eq(seg_lock(&l->mu, repair, &f), HKV_OK);
    ck_assert_int_eq(f.calls, 1);
    seg_unlock(&l->mu);
    /* the other locks never noticed */
    struct fix g = {lock_at(&s, 1), 0};
    ck_assert_int_eq(seg_trylock(&g.l->mu, 1, repair, &g), HKV_OK);
    ck_assert_int_eq(g.calls, 0);
    seg_unlock(&g.l->mu);

    /* the same through trylock, and with no repair to run */
    hold_in_child(&s, 2, 1);
    ck_assert_int_eq(seg_trylock(&l->mu, 4, repair, &f), HKV_OK);
    ck_assert_int_eq(f.calls, 2);
    seg_unlock(&l->mu);
    hold_in_child(&s, 2, 1);
    ck_assert_int_eq(seg_lock(&l->mu, NULL, NULL), HKV_OK);
    ck_assert_uint_eq(atomic_load(&l->state), 1); /* nobody repaired it */
    seg_unlock(&l->mu);
    seg_destroy(&s);
}
END_TEST

START_TEST(trylock_gives_up_on_a_live_holder_and_takes_it_once_dead)
{
    struct seg s;
    mk(&s, 1);
    struct toy_lock *l = lock_at(&s, 0);
    ck_assert_int_eq(seg_lock_init(&l->mu), HKV_OK);
    pid_t pid = hold_in_child(&s, 0, 0);
    struct fix f = {l, 0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(seg_trylock(&l->mu, 32, repair, &f), HKV_EAGAIN);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    ck_assert_msg(ms < 500, "10 trylocks against a live holder took %.1f ms", ms);
    ck_assert_int_eq(f.calls, 0);
    ck_assert_uint_eq(atomic_load(&l->state), 1);

    int status;
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status));
    ck_assert_int_eq(seg_trylock(&l->mu, 1, repair, &f), HKV_OK);
    ck_assert_int_eq(f.calls, 1);
    ck_assert_uint_eq(atomic_load(&l->state), 0);
    seg_unlock(&l->mu);
    seg_destroy(&s);
}
END_TEST

/* ---- counter rows ---- */

START_TEST(counter_rows_add_across_processes_and_reset)
{
    struct seg s;
    mk(&s, 1);
    uint64_t out[SEG_ROW_U64] = {0};
    seg_counters(&s, out, SEG_ROW_U64);
    for (int i = 0; i < SEG_ROW_U64; i++)
        ck_assert_uint_eq(out[i], 0);

    seg_count(&s, 0, 5);
    seg_count(&s, 3, 7);
    enum { KIDS = 4, ADDS = 1000 };
    pid_t kids[KIDS];
    for (int k = 0; k < KIDS; k++) {
        kids[k] = fork();
        ck_assert_int_ge(kids[k], 0);
        if (kids[k] == 0) {
            /* a child attaches (and so picks its own row), then counts */
            if (seg_attach(&s, &toy) != HKV_OK)
                _exit(1);
            for (int i = 0; i < ADDS; i++)
                seg_count(&s, 0, 1);
            seg_count(&s, SEG_ROW_U64 - 1, 2);
            _exit(0);
        }
    }
    for (int k = 0; k < KIDS; k++) {
        int status;
        ck_assert_int_eq(waitpid(kids[k], &status, 0), kids[k]);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    memset(out, 0, sizeof(out));
    seg_counters(&s, out, SEG_ROW_U64);
    ck_assert_uint_eq(out[0], 5 + KIDS * ADDS);
    ck_assert_uint_eq(out[3], 7);
    ck_assert_uint_eq(out[SEG_ROW_U64 - 1], 2 * KIDS);
    ck_assert_uint_eq(out[1], 0);

    /* seg_counters adds to out, and only the first n */
    uint64_t part[3] = {100, 100, 12345};
    seg_counters(&s, part, 2);
    ck_assert_uint_eq(part[0], 100 + 5 + KIDS * ADDS);
    ck_assert_uint_eq(part[1], 100);
    ck_assert_uint_eq(part[2], 12345);

    seg_reset_counters(&s);
    memset(out, 0, sizeof(out));
    seg_counters(&s, out, SEG_ROW_U64);
    for (int i = 0; i < SEG_ROW_U64; i++)
        ck_assert_uint_eq(out[i], 0);
    seg_count(&s, 3, 1); /* counting goes on after a reset */
    seg_counters(&s, out, SEG_ROW_U64);
    ck_assert_uint_eq(out[3], 1);
    seg_destroy(&s);
}
END_TEST

Suite *segment_suite(void)
{
    Suite *s = suite_create("segment");
    TCase *tc = tcase_create("header");
    tcase_add_test(tc, created_segment_attaches_and_its_header_checks);
    tcase_add_test(tc, attach_refuses_bad_magic);
    tcase_add_test(tc, attach_refuses_another_layout_version);
    tcase_add_test(tc, attach_refuses_bad_checksum);
    tcase_add_test(tc, attach_refuses_a_layout_it_would_not_make);
    tcase_add_test(tc, create_refuses_what_the_layout_refuses);
    tcase_add_test(tc, checksum_sees_every_bit);
    suite_add_tcase(s, tc);

    tc = tcase_create("locks");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, lock_of_a_dead_holder_is_recovered_after_repair);
    tcase_add_test(tc, trylock_gives_up_on_a_live_holder_and_takes_it_once_dead);
    suite_add_tcase(s, tc);

    tc = tcase_create("counters");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, counter_rows_add_across_processes_and_reset);
    suite_add_tcase(s, tc);
    return s;
}
