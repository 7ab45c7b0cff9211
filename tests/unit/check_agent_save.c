/* check_agent_save.c - the agent's disk (server/agent/agent_save.h) without
 * an agent: the saver thread writes the map and the state file it was
 * handed, and stopping it writes what is still waiting; only the newest of
 * several posts matters; the state file reads back field for field, and a
 * file that is not one of ours (another format, a field missing, a host
 * number out of range) is refused; a missing one is ENOENT; a directory
 * the thread cannot write to is counted as a failure, not fatal. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "server/agent/agent_save.h"
#include "server/core/cmap.h"
#include "tests/harness.h"

static struct {
    char dir[256], map[320], state[320];
    struct cmap_table *t, *back;
} T;

static void setup(void)
{
    memset(&T, 0, sizeof(T));
    h_tmpdir(T.dir, sizeof(T.dir));
    snprintf(T.map, sizeof(T.map), "%s/cluster.map", T.dir);
    snprintf(T.state, sizeof(T.state), "%s/agent.state", T.dir);
    T.t = calloc(1, sizeof(*T.t));
    T.back = calloc(1, sizeof(*T.back));
    ck_assert(T.t != NULL && T.back != NULL);
}

static void teardown(void)
{
    free(T.t);
    free(T.back);
    h_rmtree(T.dir);
}

/* A valid table at revision rev: one owner per pool, one leaf each. */
static void table(struct cmap_table *t, int64_t rev, unsigned cold_owner_port)
{
    memset(t, 0, sizeof(*t));
    t->revision = rev;
    for (unsigned n = 1; n <= 2; n++) {
        struct cmap_owner *o = &t->owners[n];
        o->number = (uint16_t)n;
        o->pool = (uint8_t)(n == 1 ? CFG_POOL_HOT : CFG_POOL_COLD);
        o->index = 0;
        o->live = 1;
        o->port = (uint16_t)(n == 1 ? 7001 : cold_owner_port);
        o->incarnation = 100 + n;
        snprintf(o->host, sizeof(o->host), "h1");
        snprintf(o->id, sizeof(o->id), "h1/%s/0", n == 1 ? "hot" : "cold");
        snprintf(o->addr, sizeof(o->addr), "10.0.0.%u", n);
    }
    for (int p = 0; p < CMAP_NPOOLS; p++) {
        t->nleaves[p] = 1;
        t->leaves[p][0].owner = (uint16_t)(p == CFG_POOL_HOT ? 1 : 2);
        t->leaves[p][0].epoch = rev;
    }
    char why[128];
    ck_assert_msg(cmap_validate(t, why, sizeof(why)) == HKV_OK, "%s", why);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(stopping_writes_the_state_that_was_posted)
{
    struct agent_saver *s = agent_saver_start(T.map, T.state);
    ck_assert_ptr_nonnull(s);
    struct agent_state st = {.host_number = 17, .lease_id = 0x1234567890ab};
    snprintf(st.host, sizeof(st.host), "db-3");
    agent_saver_post_state(s, &st);
    agent_saver_stop(&s);
    ck_assert_ptr_null(s);
    struct agent_state back;
    ck_assert_int_eq(agent_state_load(T.state, &back), HKV_OK);
    ck_assert_str_eq(back.host, "db-3");
    ck_assert_uint_eq(back.host_number, 17);
    ck_assert_int_eq(back.lease_id, 0x1234567890ab);
}
END_TEST

START_TEST(the_newest_post_is_what_stays)
{
    struct agent_saver *s = agent_saver_start(T.map, T.state);
    ck_assert_ptr_nonnull(s);
    for (unsigned i = 1; i <= 50; i++) {
        struct agent_state st = {.host_number = i, .lease_id = (int64_t)i * 10};
        snprintf(st.host, sizeof(st.host), "h%u", i);
        agent_saver_post_state(s, &st);
        table(T.t, (int64_t)i, 8000 + i);
        agent_saver_post_map(s, T.t);
    }
    agent_saver_stop(&s);
    struct agent_state back;
    ck_assert_int_eq(agent_state_load(T.state, &back), HKV_OK);
    ck_assert_uint_eq(back.host_number, 50);
    ck_assert_str_eq(back.host, "h50");
    ck_assert_int_eq(back.lease_id, 500);
    ck_assert_int_eq(cmap_load(T.back, T.map), HKV_OK);
    ck_assert_int_eq(T.back->revision, 50);
    ck_assert_uint_eq(T.back->owners[2].port, 8050);
}
END_TEST

START_TEST(the_map_written_loads_back_whole)
{
    struct agent_saver *s = agent_saver_start(T.map, T.state);
    ck_assert_ptr_nonnull(s);
    table(T.t, 99, 7002);
    agent_saver_post_map(s, T.t);
    for (int i = 0; i < 2000 && access(T.map, F_OK) != 0; i++)
        h_sleep_ms(1); /* the thread writes it without being stopped */
    int last = -1;
    ck_assert_uint_eq(agent_saver_failures(s, &last), 0);
    agent_saver_stop(&s);
    ck_assert_int_eq(cmap_load(T.back, T.map), HKV_OK);
    ck_assert_int_eq(T.back->revision, 99);
    for (int p = 0; p < CMAP_NPOOLS; p++) {
        ck_assert_uint_eq(T.back->nleaves[p], 1);
        ck_assert_uint_eq(T.back->leaves[p][0].owner, T.t->leaves[p][0].owner);
    }
    ck_assert_str_eq(T.back->owners[2].id, "h1/cold/0");
}
END_TEST

START_TEST(nothing_posted_writes_nothing)
{
    struct agent_saver *s = agent_saver_start(T.map, T.state);
    ck_assert_ptr_nonnull(s);
    agent_saver_stop(&s);
    ck_assert_int_eq(access(T.map, F_OK), -1);
    ck_assert_int_eq(access(T.state, F_OK), -1);
    struct agent_state back;
    ck_assert_int_eq(agent_state_load(T.state, &back), HKV_ENOENT);
}
END_TEST

START_TEST(a_failed_write_is_counted_for_the_loop)
{
    char map[400], state[400];
    snprintf(map, sizeof(map), "%s/no/such/dir/cluster.map", T.dir);
    snprintf(state, sizeof(state), "%s/no/such/dir/agent.state", T.dir);
    struct agent_saver *s = agent_saver_start(map, state);
    ck_assert_ptr_nonnull(s);
    struct agent_state st = {.host_number = 1, .lease_id = 2};
    snprintf(st.host, sizeof(st.host), "h");
    agent_saver_post_state(s, &st);
    int last = HKV_OK;
    uint64_t n = 0;
    for (int i = 0; i < 2000 && n == 0; i++) {
        n = agent_saver_failures(s, &last);
        if (n == 0)
            h_sleep_ms(1);
    }
    ck_assert_uint_eq(n, 1);
    ck_assert_int_ne(last, HKV_OK);
    ck_assert_uint_eq(agent_saver_failures(s, &last), 0); /* since the last call */
    agent_saver_stop(&s);
}
END_TEST

START_TEST(a_state_file_reads_back_field_for_field)
{
    write_file(T.state, "hotkvd-agent-state 1\nhost web-9\nhost_number 4095\nlease -1\n");
    struct agent_state st;
    ck_assert_int_eq(agent_state_load(T.state, &st), HKV_OK);
    ck_assert_str_eq(st.host, "web-9");
    ck_assert_uint_eq(st.host_number, 4095);
    ck_assert_int_eq(st.lease_id, -1);
    /* the order of the fields does not matter */
    write_file(T.state, "lease 5\nhost_number 2\nhotkvd-agent-state 1\nhost a\n");
    ck_assert_int_eq(agent_state_load(T.state, &st), HKV_OK);
    ck_assert_uint_eq(st.host_number, 2);
}
END_TEST

START_TEST(a_file_not_of_ours_is_refused)
{
    static const char *const bad[] = {
        "",
        "hotkvd-agent-state 2\nhost a\nhost_number 1\nlease 1\n",  /* another format */
        "hotkvd-agent-state 1\nhost_number 1\nlease 1\n",          /* no host */
        "hotkvd-agent-state 1\nhost a\nlease 1\n",                 /* no number */
        "hotkvd-agent-state 1\nhost a\nhost_number 1\n",           /* no lease */
        "hotkvd-agent-state 1\nhost a\nhost_number 4096\nlease 1\n", /* out of range */
        "host a\nhost_number 1\nlease 1\n",                        /* no header */
    };
    struct agent_state st;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_file(T.state, bad[i]);
        ck_assert_msg(agent_state_load(T.state, &st) == HKV_EINVAL, "took file %zu", i);
    }
}
END_TEST

Suite *agent_save_suite(void)
{
    Suite *s = suite_create("agent_save");
    TCase *tc = tcase_create("saver");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, stopping_writes_the_state_that_was_posted);
    tcase_add_test(tc, the_newest_post_is_what_stays);
    tcase_add_test(tc, the_map_written_loads_back_whole);
    tcase_add_test(tc, nothing_posted_writes_nothing);
    tcase_add_test(tc, a_failed_write_is_counted_for_the_loop);
    suite_add_tcase(s, tc);
    tc = tcase_create("state file");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_state_file_reads_back_field_for_field);
    tcase_add_test(tc, a_file_not_of_ours_is_refused);
    suite_add_tcase(s, tc);
    return s;
}
