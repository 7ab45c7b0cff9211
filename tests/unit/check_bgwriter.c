/*
 * check_bgwriter.c - the writer-thread skeleton (storage/bgwriter.h) with a
 * toy owner: a list of numbers posted by the test, "written" by appending
 * them to an array.  What is posted is worked on in posting order; what is
 * posted while a round works is taken together in the next round (group
 * commit); every round pokes the wake-up eventfd; stop works on everything
 * posted before it, even when posted just before; the thread runs with every
 * signal blocked.
 */
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "storage/bgwriter.h"

#define MAXN 256

struct toy {
    struct bgw *w;
    /* posted, guarded by the skeleton's lock */
    int q[MAXN], nq;
    /* taken by the thread's current round */
    int batch[MAXN], nbatch;
    /* written: the order the thread wrote, and each round's size */
    int out[MAXN], nout;
    int rounds[MAXN], nrounds;
    int published;          /* what done saw written */
    /* a gate that holds the first round's work until the test opens it */
    pthread_mutex_t gmu;
    pthread_cond_t gcv;
    int hold, in_work, sigs_blocked;
};

static int toy_take(void *arg)
{
    struct toy *t = arg;
    if (t->nq == 0)
        return 0;
    memcpy(t->batch, t->q, (size_t)t->nq * sizeof(int));
    t->nbatch = t->nq;
    t->nq = 0;
    return 1;
}

static void toy_work(void *arg)
{
    struct toy *t = arg;
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    t->sigs_blocked = sigismember(&now, SIGTERM) && sigismember(&now, SIGINT) &&
                      sigismember(&now, SIGHUP);
    pthread_mutex_lock(&t->gmu);
    t->in_work = 1;
    pthread_cond_broadcast(&t->gcv);
    while (t->hold)
        pthread_cond_wait(&t->gcv, &t->gmu);
    pthread_mutex_unlock(&t->gmu);
    for (int i = 0; i < t->nbatch; i++)
        t->out[t->nout++] = t->batch[i];
    t->rounds[t->nrounds++] = t->nbatch;
}

static void toy_done(void *arg)
{
    struct toy *t = arg;
    t->published = t->nout;
}

static const struct bgw_ops toy_ops = {toy_take, toy_work, toy_done};

static void toy_init(struct toy *t, int hold, int wake_fd)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_init(&t->gmu, NULL);
    pthread_cond_init(&t->gcv, NULL);
    t->hold = hold;
    ck_assert_int_eq(bgw_start(&t->w, &toy_ops, t, wake_fd), HKV_OK);
    ck_assert_ptr_nonnull(t->w);
}

static void post(struct toy *t, int v)
{
    bgw_lock(t->w);
    t->q[t->nq++] = v;
    bgw_signal(t->w);
    bgw_unlock(t->w);
}

static void wait_in_work(struct toy *t)
{
    pthread_mutex_lock(&t->gmu);
    while (!t->in_work)
        pthread_cond_wait(&t->gcv, &t->gmu);
    pthread_mutex_unlock(&t->gmu);
}

static void open_gate(struct toy *t)
{
    pthread_mutex_lock(&t->gmu);
    t->hold = 0;
    pthread_cond_broadcast(&t->gcv);
    pthread_mutex_unlock(&t->gmu);
}

static int published(struct toy *t)
{
    bgw_lock(t->w);
    int n = t->published;
    bgw_unlock(t->w);
    return n;
}

START_TEST(posts_are_worked_in_order_and_wake_the_loop)
{
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ck_assert_int_ge(efd, 0);
    struct toy t;
    toy_init(&t, 0, efd);
    post(&t, 1);
    /* the loop's side: wait on the fd, then read what done published */
    struct pollfd p = {.fd = efd, .events = POLLIN};
    ck_assert_int_eq(poll(&p, 1, 10000), 1);
    uint64_t v;
    ck_assert_int_eq(read(efd, &v, sizeof(v)), (ssize_t)sizeof(v));
    ck_assert_uint_ge(v, 1);
    ck_assert_int_eq(published(&t), 1);
    for (int i = 2; i <= 50; i++)
        post(&t, i);
    bgw_stop(&t.w);
    ck_assert_ptr_null(t.w);
    ck_assert_int_eq(t.nout, 50);
    for (int i = 0; i < 50; i++)
        ck_assert_int_eq(t.out[i], i + 1);
    ck_assert_int_eq(t.published, 50);
    ck_assert(t.sigs_blocked);
    close(efd);
}
END_TEST

START_TEST(posts_during_a_round_are_one_round)
{
    struct toy t;
    toy_init(&t, 1, -1);
    post(&t, 10);
    wait_in_work(&t); /* the first round holds at the gate, 10 taken */
    for (int i = 11; i < 20; i++)
        post(&t, i);
    open_gate(&t);
    bgw_stop(&t.w);
    ck_assert_int_eq(t.nrounds, 2);
    ck_assert_int_eq(t.rounds[0], 1);
    ck_assert_int_eq(t.rounds[1], 9);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(t.out[i], 10 + i);
}
END_TEST

START_TEST(stop_drains_what_was_posted)
{
    struct toy t;
    toy_init(&t, 0, -1);
    for (int i = 0; i < 100; i++)
        post(&t, i);
    bgw_stop(&t.w);
    ck_assert_int_eq(t.nout, 100);
    ck_assert_int_eq(t.out[99], 99);
    bgw_stop(&t.w); /* again: a no-op */
    /* a thread with nothing ever posted stops too, without a round */
    toy_init(&t, 0, -1);
    bgw_stop(&t.w);
    ck_assert_int_eq(t.nrounds, 0);
}
END_TEST

static void *report_mask(void *arg)
{
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    *(int *)arg = sigismember(&now, SIGTERM) && sigismember(&now, SIGUSR1);
    return NULL;
}

START_TEST(spawned_threads_block_signals_the_caller_keeps)
{
    int blocked = 0;
    pthread_t th;
    ck_assert_int_eq(bgw_spawn(&th, report_mask, &blocked), 0);
    pthread_join(th, NULL);
    ck_assert_int_eq(blocked, 1);
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    ck_assert(!sigismember(&now, SIGUSR1)); /* the caller's mask is as it was */
    /* a wake on a full counter does not block */
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ck_assert_int_ge(efd, 0);
    uint64_t v = 0xfffffffffffffffeULL; /* the largest count an eventfd holds */
    ck_assert_int_eq(write(efd, &v, sizeof(v)), (ssize_t)sizeof(v));
    bgw_wake(efd);
    ck_assert_int_eq(read(efd, &v, sizeof(v)), (ssize_t)sizeof(v));
    ck_assert(v == 0xfffffffffffffffeULL);
    close(efd);
}
END_TEST

Suite *bgwriter_suite(void)
{
    Suite *s = suite_create("bgwriter");
    TCase *tc = tcase_create("bgwriter");
    tcase_add_test(tc, posts_are_worked_in_order_and_wake_the_loop);
    tcase_add_test(tc, posts_during_a_round_are_one_round);
    tcase_add_test(tc, stop_drains_what_was_posted);
    tcase_add_test(tc, spawned_threads_block_signals_the_caller_keeps);
    suite_add_tcase(s, tc);
    return s;
}
