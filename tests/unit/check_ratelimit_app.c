/*
 * check_ratelimit_app.c - CL.THROTTLE's table (rl_throttle in
 * server/colo/ratelimit.h): the default size holds 1 M distinct keys
 * without failing open once; processes sharing the segment at once admit
 * exactly what the limit allows; a key idle past what it owes gives its
 * bucket up (a full table of idle keys takes new ones); a damaged segment
 * and a full table fail open (allowed, counted); a look (quantity 0) at an
 * unknown key inserts nothing.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/colo/gcra.h"
#include "server/colo/ratelimit.h"

#define NS_S 1000000000LL
#define T0 (1000 * NS_S)

static struct rl *mk(uint32_t buckets)
{
    struct rl_opts o = {.buckets = buckets};
    struct rl *rl = NULL;
    ck_assert_int_eq(rl_create(&o, &rl), HKV_OK);
    ck_assert_int_eq(rl_attach(rl), HKV_OK);
    return rl;
}

static uint64_t ctr(struct rl *rl, enum rl_counter which)
{
    struct rl_stats st;
    rl_stats_fast(rl, &st);
    return st.counters[which];
}

static int thr(struct rl *rl, const char *key, const struct gcra_limit *l, int64_t now,
               struct gcra_result *r)
{
    return rl_throttle(rl, key, strlen(key), l, now, r);
}

START_TEST(default_size_holds_a_million_keys)
{
    struct rl *rl = mk(64u * 1024 * 1024 / 16); /* app-ratelimit-memory's default */
    struct gcra_limit l = {0, 1, 3600 * NS_S, 1}; /* each key owes an hour: none is idle */
    struct gcra_result r;
    char k[32];
    for (int i = 0; i < 1000000; i++) {
        snprintf(k, sizeof(k), "user:%d", i);
        ck_assert_int_eq(thr(rl, k, &l, T0, &r), 0);
        ck_assert_int_eq(r.limited, 0);
    }
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), 0);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_allowed), 1000000);
    /* each is remembered: its second call is limited */
    ck_assert_int_eq(thr(rl, "user:123456", &l, T0 + 1, &r), 0);
    ck_assert_int_eq(r.limited, 1);
    struct rl_stats st;
    rl_stats_fast(rl, &st);
    ck_assert_uint_eq(st.buckets, 1000000);
    rl_destroy(&rl);
}
END_TEST

START_TEST(processes_at_once_admit_the_limit)
{
    struct rl *rl = mk(65536);
    struct gcra_limit l = {999, 1, 3600 * NS_S, 1}; /* 1000, then one an hour */
    pid_t kids[4];
    for (int p = 0; p < 4; p++) {
        kids[p] = fork();
        ck_assert_int_ge(kids[p], 0);
        if (kids[p] == 0) {
            struct gcra_result r;
            for (int i = 0; i < 500; i++)
                thr(rl, "shared", &l, T0 + i, &r);
            _exit(0);
        }
    }
    for (int p = 0; p < 4; p++) {
        int status;
        ck_assert_int_eq(waitpid(kids[p], &status, 0), kids[p]);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_allowed), 1000);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_rejected), 1000);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), 0);
    rl_destroy(&rl);
}
END_TEST

START_TEST(full_tables_fail_open_and_idle_keys_give_way)
{
    struct rl *rl = mk(64);
    struct gcra_limit l = {0, 1, 10 * NS_S, 1};
    struct gcra_result r;
    char k[32];
    int open = 0;
    for (int i = 0; i < 200; i++) {
        snprintf(k, sizeof(k), "k%d", i);
        open += thr(rl, k, &l, T0, &r);
        ck_assert_int_eq(r.limited, 0); /* new or failed open: allowed */
    }
    ck_assert_int_ge(open, 200 - 64);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), (uint64_t)open);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen_full), (uint64_t)open);
    /* 10 s on every key is idle: new keys take their buckets (20 of them: with
     * windows of 16 slots of 64, all of one's window taken by the others
     * would need 16 of 19 in one place) */
    uint64_t before = ctr(rl, RL_CTR_ratelimit_failopen);
    for (int i = 0; i < 20; i++) {
        snprintf(k, sizeof(k), "later%d", i);
        ck_assert_int_eq(thr(rl, k, &l, T0 + 11 * NS_S, &r), 0);
    }
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), before);
    /* a look at an unknown key takes no bucket */
    struct gcra_limit look = {0, 1, 10 * NS_S, 0};
    ck_assert_int_eq(thr(rl, "unknown", &look, T0 + 11 * NS_S, &r), 0);
    ck_assert_int_eq(r.limited, 0);
    ck_assert_int_eq(r.remaining, 1);
    rl_destroy(&rl);

    /* a segment that fails validation: everything is allowed and counted */
    rl = mk(64);
    rl_test_scribble_header(rl);
    ck_assert_int_eq(rl_attach(rl), HKV_ECORRUPT);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(thr(rl, "x", &l, T0, &r), 1);
        ck_assert_int_eq(r.limited, 0);
        ck_assert_int_eq(r.retry_after_s, -1);
    }
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), 3);
    rl_destroy(&rl);
    /* no segment at all (the master could not make one) */
    ck_assert_int_eq(thr(NULL, "x", &l, T0, &r), 1);
    ck_assert_int_eq(r.limited, 0);
}
END_TEST

Suite *ratelimit_app_suite(void)
{
    Suite *s = suite_create("ratelimit_app");
    TCase *tc = tcase_create("throttle");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, default_size_holds_a_million_keys);
    tcase_add_test(tc, processes_at_once_admit_the_limit);
    tcase_add_test(tc, full_tables_fail_open_and_idle_keys_give_way);
    suite_add_tcase(s, tc);
    return s;
}
