/*
 * check_owner_silent.c - a silent owner makes readers wait once per colo,
 * not once per key and edge (issue 25, item 4; edge_health.h,
 * server/colo/cache_health.h).
 *
 * 40 keys of a class with fresh 200ms are cached and left idle past fresh +
 * miss-wait, then their owner is SIGSTOPped and the keys are read round-
 * robin, alternately through two edges of the colo, for 4 s: at most one
 * wait episode (one read per edge in the worst case) may take 200 ms or
 * more, every value is the cached one and flagged stale (RESP3 + CLIENT
 * META ON), MGET and HTTP GET /v1/kv of stale keys answer at once too
 * (X-Hotkvd-Stale: 1), and a key the colo
 * does not hold still gets its bounded miss-wait and its degrade answer.
 * INFO counts the episode, the stale answers and the probes.  After
 * SIGCONT the mark clears, a write is read back through the other edge and
 * a key not written comes back fresh.  And one hot key read through both
 * edges for 8 s while its owner is stopped waits once, not again each time
 * an edge's fetch times out.
 *
 * Every wait is bounded; a guardian SIGCONTs the owner however the test
 * ends, and the daemon is stopped by pid.
 */
#include <check.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/integration/http_test.h"

#define SILENT_CONF                                                                         \
    "edge-workers 2\nhot-owners 1\ncold-owners 1\nmiss-wait 600ms\nwrite-timeout 3s\n"      \
    "owner-push yes\n"                                                                      \
    "class live pattern \"s:*\" pool hot fresh 200ms keep 120s on-timeout degrade\n"
#define NKEYS 40
#define SLOW_MS 200

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "owner_silent: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
}

static struct daemon *g_d;
static pid_t g_stopped;
static int g_guard_fd = -1;
static pid_t g_guard;

static void resume(void)
{
    if (g_stopped > 0)
        kill(g_stopped, SIGCONT);
    g_stopped = 0;
    if (g_guard_fd >= 0)
        close(g_guard_fd);
    g_guard_fd = -1;
    if (g_guard > 0)
        h_wait(g_guard, 2000);
    g_guard = 0;
}

static void fail_cleanup(void)
{
    resume();
    if (g_d != NULL && g_d->pid > 0) {
        h_dump_log(g_d);
        h_stop(g_d);
    }
    g_d = NULL;
}

#define EXPECT(cond, ...) H_EXPECT(fail_cleanup, cond, __VA_ARGS__)

static const struct resp_value *attr_get(const struct resp_value *attr, const char *name)
{
    for (size_t i = 0; attr != NULL && i + 1 < attr->n; i += 2)
        if (h_str_is(&attr->elems[i], name))
            return &attr->elems[i + 1];
    return NULL;
}

/* 1 if r is the bulk `want`; *stale gets its stale flag (-1: none). */
static int is_value(const struct h_reply *r, const char *want, int *stale)
{
    *stale = -1;
    if (r == NULL || r->v->type != RESP_BULK || !h_str_is(r->v, want))
        return 0;
    const struct resp_value *s = attr_get(r->v->attr, "stale");
    if (s != NULL && s->type == RESP_BOOL)
        *stale = (int)s->integer;
    return 1;
}

static void meta_on(int fd)
{
    h_free(h_call(fd, "HELLO", "3", NULL));
    struct h_reply *r = h_call(fd, "CLIENT", "META", "ON", NULL);
    int ok = r->v->type == RESP_SIMPLE && h_str_is(r->v, "OK");
    h_free(r);
    EXPECT(ok, "CLIENT META ON refused");
}

static int64_t info(const struct daemon *d, const char *field)
{
    return h_info_int(d->port, field);
}

START_TEST(stale_reads_wait_once_per_colo_while_owner_stopped)
{
    struct daemon d;
    g_stopped = 0;
    char conf[512];
    int hp = h_free_port();
    snprintf(conf, sizeof(conf), "%shttp-port %d\n", SILENT_CONF, hp);
    ck_assert_msg(h_start(&d, conf) == 0, "daemon did not start");
    g_d = &d;
    h_on_fail(fail_cleanup);
    int a, b;
    EXPECT(h_edge_pair(&d, &a, &b) == 0, "no second edge answered");
    int pa = h_edge_of(a), pb = h_edge_of(b);
    EXPECT(pa > 0 && pb > 0 && pa != pb, "edges %d and %d", pa, pb);
    meta_on(a);
    meta_on(b);
    char key[NKEYS][16], val[NKEYS][16];
    for (int i = 0; i < NKEYS; i++) {
        snprintf(key[i], sizeof(key[i]), "s:%d", i);
        snprintf(val[i], sizeof(val[i]), "v%d", i);
        struct h_reply *r = h_call(a, "SET", key[i], val[i], NULL);
        int ok = r->v->type == RESP_SIMPLE;
        h_free(r);
        EXPECT(ok, "SET %s", key[i]);
        int stale;
        r = h_call(b, "GET", key[i], NULL);
        ok = is_value(r, val[i], &stale);
        h_free(r);
        EXPECT(ok, "GET %s before the stop", key[i]);
    }
    h_sleep_ms(200 + 600 + 400); /* idle past fresh + miss-wait */

    pid_t owner = h_child(&d, "hotkvd: owner hot/0", 0);
    EXPECT(owner > 0, "no process titled 'hotkvd: owner hot/0'");
    int64_t marks0 = info(&d, "owner_silent_marks"), silent0 = info(&d, "cache_silent_stale_hits");
    int64_t probes0 = info(&d, "owner_probes");
    g_guard_fd = h_sigcont_guard(owner, 0, &g_guard);
    EXPECT(kill(owner, SIGSTOP) == 0, "SIGSTOP %d", (int)owner);
    g_stopped = owner;

    int n = 0, slow = 0, wrong = 0, unflagged = 0, slow_at[8] = {0};
    int64_t slowest = 0, t0 = h_now_ms();
    char bad[200] = "";
    while (h_now_ms() < t0 + 4000 && n < 4000) {
        int i = n % NKEYS, fd = n % 2 ? b : a, stale;
        int64_t t = h_now_ms();
        struct h_reply *r = h_cmdv(fd, "GET", key[i], NULL);
        int64_t dt = h_now_ms() - t;
        if (dt > slowest)
            slowest = dt;
        if (dt >= SLOW_MS && slow < 8)
            slow_at[slow] = n;
        slow += dt >= SLOW_MS;
        if (!is_value(r, val[i], &stale)) {
            if (wrong++ == 0)
                snprintf(bad, sizeof(bad), "GET %s -> %.150s", key[i], r ? r->raw : "(none)");
        } else if (stale != 1) {
            unflagged++;
        }
        h_free(r);
        n++;
    }
    note("owner stopped: %d GETs of %d stale keys round-robin through edges %d and %d in 4 s: "
         "%d took %d ms or more (reads #%d, #%d, #%d), slowest %lld ms, %d wrong, %d not "
         "flagged stale",
         n, NKEYS, pa, pb, slow, SLOW_MS, slow_at[0], slow_at[1], slow_at[2],
         (long long)slowest, wrong, unflagged);
    EXPECT(wrong == 0, "%d reads were not the cached value, first: %s", wrong, bad);
    EXPECT(slow <= 2, "%d of %d stale reads waited %d ms or more (one wait per colo expected, "
                      "one per edge at worst)", slow, n, SLOW_MS);
    EXPECT(n >= 100, "only %d reads in 4 s", n);
    EXPECT(unflagged == 0, "%d stale values were not flagged stale", unflagged);

    /* MGET of stale keys: at once too. */
    int64_t t = h_now_ms();
    struct h_reply *r = h_call(b, "MGET", key[1], key[2], key[3], NULL);
    int64_t mget_ms = h_now_ms() - t;
    int mget_ok = r->v->type == RESP_ARRAY && r->v->n == 3 && h_str_is(&r->v->elems[0], val[1]) &&
                  h_str_is(&r->v->elems[2], val[3]);
    h_free(r);
    /* HTTP GET /v1/kv goes through the same read path: at once, stale. */
    int http_bad = 0, http_slow = 0;
    char why[200] = "";
    static struct hr R;
    for (int i = 0; i < 20; i++) {
        char path[64], st[8] = "";
        snprintf(path, sizeof(path), "/v1/kv/%s", key[(i * 7) % NKEYS]);
        t = h_now_ms();
        int rc = hx_get(hp, "GET", path, NULL, &R);
        http_slow += h_now_ms() - t >= SLOW_MS;
        if (rc != 0 || R.status != 200 || !hx_hdr(&R, "X-Hotkvd-Stale", st, sizeof(st)) ||
            strcmp(st, "1") != 0 || strcmp(R.body, val[(i * 7) % NKEYS]) != 0) {
            if (http_bad++ == 0)
                snprintf(why, sizeof(why), "GET %s: rc %d status %d stale '%s' body '%.40s'",
                         path, rc, R.status, st, R.body);
        }
    }
    note("owner stopped: 20 HTTP GETs /v1/kv: %d took %d ms or more, %d not 200 + the cached "
         "value + X-Hotkvd-Stale: 1%s%s", http_slow, SLOW_MS, http_bad, http_bad ? ": " : "", why);
    EXPECT(http_bad == 0 && http_slow == 0, "HTTP GETs during the stop: %d wrong, %d slow: %s",
           http_bad, http_slow, why);
    /* A key the colo does not hold: the bounded miss-wait, then degrade. */
    t = h_now_ms();
    r = h_call(a, "GET", "s:never-cached", NULL);
    int64_t miss_ms = h_now_ms() - t;
    int miss_nil = r->v->type == RESP_NULL;
    h_free(r);
    int64_t marks = info(&d, "owner_silent_marks") - marks0;
    int64_t silent_hits = info(&d, "cache_silent_stale_hits") - silent0;
    int64_t probes = info(&d, "owner_probes") - probes0;
    int64_t owners_silent = info(&d, "owners_silent");
    note("owner stopped: MGET of 3 stale keys in %lld ms (%s); GET of an uncached key -> %s in "
         "%lld ms; owner_silent_marks +%lld, cache_silent_stale_hits +%lld, owner_probes +%lld, "
         "owners_silent %lld",
         (long long)mget_ms, mget_ok ? "ok" : "wrong", miss_nil ? "nil" : "not nil",
         (long long)miss_ms, (long long)marks, (long long)silent_hits, (long long)probes,
         (long long)owners_silent);
    EXPECT(mget_ok && mget_ms < SLOW_MS, "MGET of stale keys: %s in %lld ms",
           mget_ok ? "ok" : "wrong", (long long)mget_ms);
    EXPECT(miss_nil && miss_ms >= 500 && miss_ms < 600 + 500,
           "uncached key: %s after %lld ms (miss-wait 600ms)", miss_nil ? "nil" : "not nil",
           (long long)miss_ms);
    EXPECT(marks == 1, "owner_silent_marks grew by %lld (one outage)", (long long)marks);
    EXPECT(silent_hits >= n - 2, "cache_silent_stale_hits grew by %lld for %d reads",
           (long long)silent_hits, n);
    /* a probe stays out until its PING times out (write-timeout 3 s): ~5 s
     * of the stop see one or two, by phase (a loaded CI worker saw one) */
    EXPECT(probes >= 1 && probes < 200, "owner_probes grew by %lld in ~5 s of probing "
                                        "(one per 100 ms per colo at most)", (long long)probes);
    EXPECT(owners_silent == 1, "owners_silent %lld while the owner is stopped",
           (long long)owners_silent);

    resume();

    /* The owner answers again: the mark clears, a write is read back
     * through the other edge, and an unwritten key comes back fresh. */
    int64_t t1 = h_now_ms();
    while (info(&d, "owners_silent") != 0 && h_now_ms() < t1 + 3000)
        h_sleep_ms(20);
    int64_t clear_ms = h_now_ms() - t1;
    r = h_call(a, "SET", key[0], "after", NULL);
    int set_ok = r->v->type == RESP_SIMPLE;
    h_free(r);
    EXPECT(set_ok, "SET after SIGCONT");
    int back = 0, fresh = 0, stale = -1;
    int64_t t2 = h_now_ms();
    for (int polls = 0; !back && polls < 100 && h_now_ms() < t2 + 2000; polls++) {
        r = h_call(b, "GET", key[0], NULL);
        back = is_value(r, "after", &stale);
        h_free(r);
        if (!back)
            h_sleep_ms(20);
    }
    int64_t back_ms = h_now_ms() - t2;
    for (int polls = 0; !fresh && polls < 100 && h_now_ms() < t2 + 4000; polls++) {
        r = h_call(b, "GET", key[5], NULL);
        fresh = is_value(r, val[5], &stale) && stale == 0;
        h_free(r);
        if (!fresh)
            h_sleep_ms(20);
    }
    note("owner resumed: mark cleared after %lld ms; the write read back through the other edge "
         "after %lld ms; %s read back fresh: %s",
         (long long)clear_ms, (long long)back_ms, key[5], fresh ? "yes" : "no");
    EXPECT(info(&d, "owners_silent") == 0, "still marked silent 3 s after SIGCONT");
    EXPECT(back, "SET after SIGCONT not read back within 2 s");
    EXPECT(fresh, "%s not fresh again within 4 s of SIGCONT", key[5]);
    close(a);
    close(b);
    int st = h_stop(&d);
    g_d = NULL;
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon stop status %d", st);
}
END_TEST

/* One hot key, read through both edges every few ms for 8 s while its
 * owner is stopped: one wait in all (the seed waited again on each edge
 * whenever its fetch timed out, write-timeout 3s). */
START_TEST(a_hot_key_waits_once_while_owner_stopped)
{
    struct daemon d;
    g_stopped = 0;
    ck_assert_msg(h_start(&d, SILENT_CONF) == 0, "daemon did not start");
    g_d = &d;
    h_on_fail(fail_cleanup);
    int a, b;
    EXPECT(h_edge_pair(&d, &a, &b) == 0, "no second edge answered");
    meta_on(a);
    meta_on(b);
    struct h_reply *r = h_call(a, "SET", "s:hot", "hv", NULL);
    h_free(r);
    int stale;
    r = h_call(b, "GET", "s:hot", NULL);
    int ok = is_value(r, "hv", &stale);
    h_free(r);
    EXPECT(ok, "GET s:hot before the stop");
    h_sleep_ms(200 + 600 + 400);
    pid_t owner = h_child(&d, "hotkvd: owner hot/0", 0);
    EXPECT(owner > 0, "no process titled 'hotkvd: owner hot/0'");
    g_guard_fd = h_sigcont_guard(owner, 0, &g_guard);
    EXPECT(kill(owner, SIGSTOP) == 0, "SIGSTOP %d", (int)owner);
    g_stopped = owner;
    int n = 0, slow = 0, wrong = 0, unflagged = 0;
    int64_t t0 = h_now_ms(), slow_ms[8] = {0};
    while (h_now_ms() < t0 + 8000 && n < 3000) {
        int64_t t = h_now_ms();
        r = h_cmdv(n % 2 ? b : a, "GET", "s:hot", NULL);
        int64_t dt = h_now_ms() - t;
        if (dt >= SLOW_MS && slow < 8)
            slow_ms[slow] = t - t0;
        slow += dt >= SLOW_MS;
        if (!is_value(r, "hv", &stale))
            wrong++;
        else if (stale != 1)
            unflagged++;
        h_free(r);
        n++;
        h_sleep_ms(2);
    }
    note("hot key, owner stopped: %d GETs through 2 edges in 8 s: %d took %d ms or more (at "
         "%lld, %lld, %lld ms), %d wrong, %d not flagged stale",
         n, slow, SLOW_MS, (long long)slow_ms[0], (long long)slow_ms[1], (long long)slow_ms[2],
         wrong, unflagged);
    EXPECT(wrong == 0 && unflagged == 0, "%d wrong, %d not flagged stale", wrong, unflagged);
    EXPECT(slow <= 2, "%d reads of one hot key waited %d ms or more in 8 s (one wait per colo "
                      "expected, one per edge at worst)", slow, SLOW_MS);
    resume();
    close(a);
    close(b);
    int st = h_stop(&d);
    g_d = NULL;
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon stop status %d", st);
}
END_TEST

Suite *owner_silent_suite(void)
{
    Suite *s = suite_create("owner_silent");
    TCase *tc = tcase_create("stale_once");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, stale_reads_wait_once_per_colo_while_owner_stopped);
    suite_add_tcase(s, tc);
    tc = tcase_create("hot_key");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, a_hot_key_waits_once_while_owner_stopped);
    suite_add_tcase(s, tc);
    return s;
}
