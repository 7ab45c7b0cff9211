/*
 * check_notify.c - keyspace notifications (notify-keyspace-events,
 * server/owner/owner_notify.c) through the daemon, subscribers and writers
 * on different edges of the colo:
 * - with KEA, each write emits Redis 7.0's events, in the order the writes
 *   applied, on __keyspace@0__:<key> (the event) and __keyevent@0__:<event>
 *   (the key); a write that changes nothing emits nothing; a RESP3
 *   subscriber gets them as pushes; a durable class's write too (after its
 *   commit); a key that expires emits "expired";
 * - the classes filter: Eg sends only __keyevent@0__ generic events;
 * - off by default (owner_notifications stays 0), and CONFIG SET turns it
 *   on without a restart; a bad class letter is refused.
 * Every wait is bounded (the harness's 5 s socket timeout, bounded loops);
 * the daemon is stopped by pid (h_stop).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tests/harness.h"

#define CONF "edge-workers 2\nhot-owners 1\ncold-owners 1\n" \
             "class money pattern \"balance:*\" pool cold durability durable\n"

static struct daemon d;

static void cleanup(void) { h_stop(&d); }

static void start(const char *extra)
{
    char conf[512];
    snprintf(conf, sizeof(conf), "%s%s", CONF, extra != NULL ? extra : "");
    ck_assert_int_eq(h_start(&d, conf), 0);
    h_on_fail(cleanup);
}

/* One pushed pmessage of pattern __key*__:* with this channel and payload. */
static void expect_event(int fd, int push, const char *ch, const char *payload)
{
    struct h_reply *r = h_read(fd);
    ck_assert_msg(r != NULL, "no message on %s (want %s)", ch, payload);
    const struct resp_value *v = r->v;
    ck_assert_msg(v->type == (push ? RESP_PUSH : RESP_ARRAY) && v->n == 4 &&
                  h_str_is(&v->elems[0], "pmessage") && h_str_is(&v->elems[1], "__key*__:*"),
                  "not a pmessage: %.200s", r->raw);
    ck_assert_msg(h_str_is(&v->elems[2], ch) && h_str_is(&v->elems[3], payload),
                  "want %s %s, got %.200s", ch, payload, r->raw);
    h_free(r);
}

/* Both messages of one event (K then E, as the owner sends them). */
static void expect_both(int fd, int push, const char *key, const char *event)
{
    char ch[256];
    snprintf(ch, sizeof(ch), "__keyspace@0__:%s", key);
    expect_event(fd, push, ch, event);
    snprintf(ch, sizeof(ch), "__keyevent@0__:%s", event);
    expect_event(fd, push, ch, key);
}

static void subscribe(int fd, int resp3)
{
    if (resp3) {
        struct h_reply *r = h_call(fd, "HELLO", "3", NULL);
        h_free(r);
    }
    h_sendv(fd, "PSUBSCRIBE", "__key*__:*", NULL);
    struct h_reply *r = h_read(fd);
    ck_assert_msg(r != NULL && r->v->n == 3 && h_str_is(&r->v->elems[0], "psubscribe"),
                  "PSUBSCRIBE: %.200s", r != NULL ? r->raw : "(none)");
    h_free(r);
}

static void ok(int fd, const char *a, const char *b, const char *c, const char *e, const char *f)
{
    struct h_reply *r = h_cmdv(fd, a, b, c, e, f, NULL);
    ck_assert_msg(r != NULL && r->v->type != RESP_ERROR, "%s %s: %.200s", a, b,
                  r != NULL ? r->raw : "(none)");
    h_free(r);
}

/* The subscriber has nothing more: its PING answers next. */
static void nothing_more(int fd, int push)
{
    h_sendv(fd, "PING", NULL);
    struct h_reply *r = h_read(fd);
    ck_assert_msg(r != NULL && (push ? r->v->type == RESP_SIMPLE
                                     : r->v->type == RESP_ARRAY && r->v->n == 2 &&
                                           h_str_is(&r->v->elems[0], "pong")),
                  "a message more than expected: %.200s", r != NULL ? r->raw : "(none)");
    h_free(r);
}

START_TEST(each_write_emits_redis_events_in_order)
{
    start("notify-keyspace-events KEA\n");
    int sub, w;
    ck_assert_int_eq(h_edge_pair(&d, &sub, &w), 0);
    ck_assert_int_ne(h_edge_of(sub), h_edge_of(w));
    int sub3 = h_connect(d.port);
    ck_assert_int_ge(sub3, 0);
    subscribe(sub, 0);
    subscribe(sub3, 1);
    /* one owner (a hash tag), so the order is the order applied */
    ok(w, "SET", "{n}a", "1", NULL, NULL);
    ok(w, "SET", "{n}b", "2", "EX", "100");
    ok(w, "INCR", "{n}a", NULL, NULL, NULL);
    ok(w, "RENAME", "{n}a", "{n}c", NULL, NULL);
    ok(w, "DEL", "{n}c", "{n}none", NULL, NULL);
    ok(w, "EXPIRE", "{n}b", "0", NULL, NULL);
    ok(w, "MSET", "{n}m1", "1", "{n}m2", "2");
    ok(w, "APPEND", "{n}m1", "x", NULL, NULL);
    ok(w, "GETDEL", "{n}m2", NULL, NULL, NULL);
    ok(w, "SET", "{n}m1", "y", "NX", NULL); /* refused: nothing changed, no event */
    ok(w, "INCRBYFLOAT", "{n}f", "1.5", NULL, NULL);
    ok(w, "SETRANGE", "{n}m1", "0", "zz", NULL);
    ok(w, "COPY", "{n}m1", "{n}m3", NULL, NULL);
    ok(w, "SETBIT", "{n}bits", "3", "1", NULL);
    ok(w, "PERSIST", "{n}f", NULL, NULL, NULL); /* no deadline: nothing changed */
    ok(w, "GETEX", "{n}f", "EX", "50", NULL);
    ok(w, "PERSIST", "{n}f", NULL, NULL, NULL);
    ok(w, "SET", "balance:1", "10", NULL, NULL); /* durable: after its commit */
    static const char *const want[][2] = {
        {"{n}a", "set"},         {"{n}b", "set"},         {"{n}b", "expire"},
        {"{n}a", "incrby"},      {"{n}a", "rename_from"}, {"{n}c", "rename_to"},
        {"{n}c", "del"},         {"{n}b", "del"},         {"{n}m1", "set"},
        {"{n}m2", "set"},        {"{n}m1", "append"},     {"{n}m2", "del"},
        {"{n}f", "incrbyfloat"}, {"{n}m1", "setrange"},   {"{n}m3", "copy_to"},
        {"{n}bits", "setbit"},   {"{n}f", "expire"},      {"{n}f", "persist"},
        {"balance:1", "set"},
    };
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
            expect_both(s ? sub3 : sub, s, want[i][0], want[i][1]);
    nothing_more(sub, 0);
    nothing_more(sub3, 1);
    /* a key that expires by itself */
    ok(w, "SET", "{n}e", "1", "PX", "100");
    expect_both(sub, 0, "{n}e", "set");
    expect_both(sub, 0, "{n}e", "expire");
    expect_both(sub, 0, "{n}e", "expired");
    h_sleep_ms(1200); /* the owners' STATS reach INFO once a second */
    ck_assert_int_ge(h_info_int(d.port, "owner_notifications"), 19 + 3); /* events, not messages */
    ck_assert_int_eq(h_info_int(d.port, "owner_notify_dropped"), 0);
    close(sub);
    close(sub3);
    close(w);
    ck_assert_int_eq(h_stop(&d), 0);
}
END_TEST

START_TEST(classes_filter_and_config_set_turns_it_on)
{
    start(NULL);
    int sub, w;
    ck_assert_int_eq(h_edge_pair(&d, &sub, &w), 0);
    subscribe(sub, 0);
    ok(w, "SET", "{n}x", "1", NULL, NULL);
    ok(w, "DEL", "{n}x", NULL, NULL, NULL);
    h_sleep_ms(1200);
    ck_assert_int_eq(h_info_int(d.port, "owner_notifications"), 0); /* off by default */
    nothing_more(sub, 0);
    struct h_reply *r = h_cmdv(w, "CONFIG", "SET", "notify-keyspace-events", "KQ", NULL);
    ck_assert_msg(r != NULL && r->v->type == RESP_ERROR, "a bad class accepted");
    h_free(r);
    ok(w, "CONFIG", "SET", "notify-keyspace-events", "Eg", NULL);
    /* on at every owner within a bound: a probe key written until its del
     * event comes (keyevent only, generic only: no "set") */
    char key[32];
    int got = 0;
    for (int i = 0; i < 50 && !got; i++) {
        snprintf(key, sizeof(key), "{n}p%d", i);
        ok(w, "SET", key, "1", NULL, NULL);
        ok(w, "DEL", key, NULL, NULL, NULL);
        struct timeval tv = {0, 100 * 1000};
        setsockopt(sub, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        r = h_read(sub);
        if (r != NULL) {
            ck_assert_msg(r->v->n == 4 && h_str_is(&r->v->elems[2], "__keyevent@0__:del"),
                          "not a keyevent del: %.200s", r->raw);
            got = 1;
            h_free(r);
        }
    }
    ck_assert_msg(got, "CONFIG SET notify-keyspace-events Eg: no event within 50 probes");
    for (int i = 0; i < 50 && (r = h_read(sub)) != NULL; i++) { /* an earlier probe's, late */
        ck_assert_msg(r->v->n == 4 && h_str_is(&r->v->elems[2], "__keyevent@0__:del"),
                      "not a keyevent del: %.200s", r->raw);
        h_free(r);
    }
    struct timeval tv = {5, 0};
    setsockopt(sub, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ok(w, "SET", "{n}y", "1", "EX", "100"); /* set is $, expire is g */
    ok(w, "DEL", "{n}y", NULL, NULL, NULL);
    expect_event(sub, 0, "__keyevent@0__:expire", "{n}y");
    expect_event(sub, 0, "__keyevent@0__:del", "{n}y");
    nothing_more(sub, 0);
    r = h_call(w, "CONFIG", "GET", "notify-keyspace-events", NULL);
    ck_assert_msg(r->v->type == RESP_ARRAY && r->v->n == 2 && h_str_is(&r->v->elems[1], "Eg"),
                  "CONFIG GET: %.200s", r->raw);
    h_free(r);
    close(sub);
    close(w);
    ck_assert_int_eq(h_stop(&d), 0);
}
END_TEST

Suite *notify_suite(void)
{
    Suite *s = suite_create("notify");
    TCase *tc = tcase_create("keyspace notifications");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, each_write_emits_redis_events_in_order);
    tcase_add_test(tc, classes_filter_and_config_set_turns_it_on);
    suite_add_tcase(s, tc);
    return s;
}
