/*
 * check_bus.c - the colo's pub/sub bus (server/colo/bus.h): messages come
 * back whole and in order across the ring's wrap; a reader lapped by the
 * writers is told LOST; a record whose writer died half-way stops the
 * reader (PENDING) until skipped; a targeted record keeps its target and
 * raw flag; a write in another process signals an armed edge; the count
 * table answers NUMSUB, receivers (patterns included), NUMPAT and CHANNELS
 * over every edge's region; and the glob matcher follows Redis's
 * stringmatchlen on its documented cases.
 */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/colo/bus.h"

struct got {
    int n;
    uint64_t target[64];
    uint32_t flags[64];
    char ch[64][64];
    char msg[64][128];
    size_t mlen_sum;
};

static void collect(void *arg, const struct bus_msg *m)
{
    struct got *g = arg;
    if (g->n < 64) {
        g->target[g->n] = m->target;
        g->flags[g->n] = m->flags;
        snprintf(g->ch[g->n], sizeof(g->ch[0]), "%.*s", (int)m->clen, m->channel);
        snprintf(g->msg[g->n], sizeof(g->msg[0]), "%.*s", (int)(m->mlen < 100 ? m->mlen : 100),
                 m->msg);
    }
    g->mlen_sum += m->mlen;
    g->n++;
}

static struct bus *edge0(void)
{
    struct bus *b = NULL;
    ck_assert_int_eq(bus_create(2, 65536, &b), HKV_OK);
    ck_assert_int_eq(bus_attach(b, 0), HKV_OK);
    return b;
}

START_TEST(messages_come_back_whole_and_in_order_across_the_wrap)
{
    struct bus *b = edge0();
    uint64_t cur = bus_arm(b, 1);
    char big[3000];
    memset(big, 'x', sizeof(big));
    /* ~65 KB of 3 KB records: the ring wraps several times, read as we go */
    for (int round = 0; round < 60; round++) {
        struct got g = {0};
        char m[32];
        snprintf(m, sizeof(m), "m%d", round);
        memcpy(big, m, strlen(m));
        ck_assert_int_eq(bus_publish(b, 0, 0, "chan", 4, big, sizeof(big)), HKV_OK);
        ck_assert_int_eq(bus_publish(b, 0, 0, "c2", 2, m, strlen(m)), HKV_OK);
        ck_assert_int_eq(bus_read(b, &cur, collect, &g), BUS_OK);
        ck_assert_int_eq(g.n, 2);
        ck_assert_str_eq(g.ch[0], "chan");
        ck_assert_int_eq(strncmp(g.msg[0], m, strlen(m)), 0);
        ck_assert_str_eq(g.ch[1], "c2");
        ck_assert_str_eq(g.msg[1], m);
        ck_assert_uint_eq(g.mlen_sum, sizeof(big) + strlen(m));
    }
    bus_destroy(&b);
    ck_assert_ptr_null(b);
}
END_TEST

START_TEST(a_lapped_reader_is_told_lost_and_resumes_at_the_head)
{
    struct bus *b = edge0();
    uint64_t cur = bus_arm(b, 1);
    char m[1000] = {0};
    for (int i = 0; i < 100; i++) /* 100 KB through a 64 KB ring */
        ck_assert_int_eq(bus_publish(b, 0, 0, "c", 1, m, sizeof(m)), HKV_OK);
    struct got g = {0};
    ck_assert_int_eq(bus_read(b, &cur, collect, &g), BUS_LOST);
    ck_assert_int_eq(g.n, 0);
    ck_assert_int_eq(bus_publish(b, 0, 0, "c", 1, "after", 5), HKV_OK);
    ck_assert_int_eq(bus_read(b, &cur, collect, &g), BUS_OK);
    ck_assert_int_eq(g.n, 1);
    ck_assert_str_eq(g.msg[0], "after");
    bus_destroy(&b);
}
END_TEST

START_TEST(a_writer_dying_mid_record_stops_the_reader_until_skipped)
{
    struct bus *b = edge0();
    uint64_t cur = bus_arm(b, 1);
    ck_assert_int_eq(bus_publish(b, 0, 0, "c", 1, "one", 3), HKV_OK);
    bus_test_abandon(b, 50);
    ck_assert_int_eq(bus_publish(b, 0, 0, "c", 1, "two", 3), HKV_OK);
    struct got g = {0};
    ck_assert_int_eq(bus_read(b, &cur, collect, &g), BUS_PENDING);
    ck_assert_int_eq(g.n, 1);
    ck_assert_int_eq(bus_read(b, &cur, collect, &g), BUS_PENDING);
    bus_skip(b, &cur);
    ck_assert_int_eq(bus_publish(b, 0, 0, "c", 1, "three", 5), HKV_OK);
    ck_assert_int_eq(bus_read(b, &cur, collect, &g), BUS_OK);
    ck_assert_int_eq(g.n, 2);
    ck_assert_str_eq(g.msg[1], "three");
    bus_destroy(&b);
}
END_TEST

START_TEST(a_targeted_raw_record_keeps_its_target_and_flag_and_big_ones_are_refused)
{
    struct bus *b = edge0();
    uint64_t cur = bus_arm(b, 1);
    ck_assert_int_eq(bus_publish(b, 77, BUS_F_RAW, "__redis__:invalidate", 20, "*1\r\n$1\r\nk\r\n",
                                 11), HKV_OK);
    struct got g = {0};
    ck_assert_int_eq(bus_read(b, &cur, collect, &g), BUS_OK);
    ck_assert_int_eq(g.n, 1);
    ck_assert_uint_eq(g.target[0], 77);
    ck_assert_uint_eq(g.flags[0], BUS_F_RAW);
    ck_assert_str_eq(g.ch[0], "__redis__:invalidate");
    ck_assert_uint_eq(bus_max_record(b), 16384);
    static char huge[16385];
    ck_assert_int_eq(bus_publish(b, 0, 0, "c", 1, huge, sizeof(huge)), HKV_ETOOBIG);
    ck_assert_int_eq(bus_publish(NULL, 0, 0, "c", 1, "x", 1), HKV_ENOENT);
    bus_destroy(&b);
}
END_TEST

START_TEST(a_publish_in_another_process_signals_an_armed_edge)
{
    struct bus *b = edge0();
    uint64_t cur = bus_arm(b, 1);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(bus_publish(b, 0, 0, "far", 3, "hello", 5) == HKV_OK ? 0 : 1);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    struct pollfd p = {.fd = bus_fd(b), .events = POLLIN};
    ck_assert_int_eq(poll(&p, 1, 2000), 1);
    bus_ack(b);
    struct got g = {0};
    ck_assert_int_eq(bus_read(b, &cur, collect, &g), BUS_OK);
    ck_assert_int_eq(g.n, 1);
    ck_assert_str_eq(g.msg[0], "hello");
    bus_arm(b, 0);
    ck_assert_int_eq(bus_publish(b, 0, 0, "far", 3, "x", 1), HKV_OK);
    ck_assert_int_eq(poll(&p, 1, 50), 0); /* disarmed: no signal */
    bus_destroy(&b);
}
END_TEST

static void add_name(void *arg, const char *name, size_t n)
{
    char *out = arg;
    strncat(out, name, n);
    strcat(out, ",");
}

START_TEST(the_count_table_spans_every_edge)
{
    struct bus *b = NULL;
    ck_assert_int_eq(bus_create(2, 65536, &b), HKV_OK);
    ck_assert_int_eq(bus_attach(b, 1), HKV_OK);
    bus_count_set(b, 0, "news", 4, 2);
    bus_count_set(b, 1, "n*", 2, 1);
    ck_assert_int_eq(bus_attach(b, 0), HKV_OK); /* the same segment as edge 0 now */
    bus_count_set(b, 0, "news", 4, 1);
    bus_count_set(b, 0, "other", 5, 1);
    bus_count_set(b, 1, "n*", 2, 1);
    bus_count_set(b, 1, "x?", 2, 1);
    ck_assert_uint_eq(bus_numsub(b, "news", 4), 3);
    ck_assert_uint_eq(bus_numsub(b, "nothing", 7), 0);
    ck_assert_uint_eq(bus_receivers(b, "news", 4), 5); /* 3 + n* twice */
    ck_assert_uint_eq(bus_numpat(b), 2);
    char names[256] = "";
    bus_channels(b, add_name, names);
    ck_assert_str_eq(names, "news,other,");
    bus_count_set(b, 0, "other", 5, 0);
    bus_count_set(b, 1, "x?", 2, 0);
    ck_assert_uint_eq(bus_numpat(b), 1);
    names[0] = 0;
    bus_channels(b, add_name, names);
    ck_assert_str_eq(names, "news,");
    bus_destroy(&b);
}
END_TEST

/* Redis's stringmatchlen, from its tests (util.c's and keyspace's). */
START_TEST(the_glob_matcher_is_redis_stringmatchlen)
{
    static const struct { const char *p, *s; int m; } cases[] = {
        {"*", "anything", 1},        {"h?llo", "hello", 1},     {"h?llo", "hllo", 0},
        {"h*llo", "heeeello", 1},    {"h*llo", "hllo", 1},      {"h[ae]llo", "hallo", 1},
        {"h[ae]llo", "hillo", 0},    {"h[^e]llo", "hallo", 1},  {"h[^e]llo", "hello", 0},
        {"h[a-b]llo", "hbllo", 1},   {"h[a-b]llo", "hcllo", 0}, {"h\\*llo", "h*llo", 1},
        {"h\\*llo", "hello", 0},     {"a*b*c", "aXXbYYc", 1},   {"a*b*c", "aXXbYY", 0},
        {"news.*", "news.tech", 1},  {"news.*", "new.tech", 0}, {"", "", 1},
        {"", "a", 0},                {"*", "", 1},              {"[b-a]", "a", 1},
        {"ab", "AB", 0},             {"*a*", "xxaxx", 1},       {"?", "", 0},
        {"[\\]]", "]", 1},           {"*?", "x", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ck_assert_msg(bus_glob_match(cases[i].p, strlen(cases[i].p), cases[i].s,
                                     strlen(cases[i].s)) == cases[i].m,
                      "pattern '%s' on '%s'", cases[i].p, cases[i].s);
}
END_TEST

Suite *bus_suite(void)
{
    Suite *s = suite_create("bus");
    TCase *tc = tcase_create("ring");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, messages_come_back_whole_and_in_order_across_the_wrap);
    tcase_add_test(tc, a_lapped_reader_is_told_lost_and_resumes_at_the_head);
    tcase_add_test(tc, a_writer_dying_mid_record_stops_the_reader_until_skipped);
    tcase_add_test(tc, a_targeted_raw_record_keeps_its_target_and_flag_and_big_ones_are_refused);
    tcase_add_test(tc, a_publish_in_another_process_signals_an_armed_edge);
    suite_add_tcase(s, tc);
    tc = tcase_create("table");
    tcase_add_test(tc, the_count_table_spans_every_edge);
    tcase_add_test(tc, the_glob_matcher_is_redis_stringmatchlen);
    suite_add_tcase(s, tc);
    return s;
}
