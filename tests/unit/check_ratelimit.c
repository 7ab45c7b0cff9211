/*
 * check_ratelimit.c - the rate limiter (server/colo/ratelimit.h) and its
 * directives (config/cfg_ratelimit.c): the bucket arithmetic (rate, burst,
 * refill, the retry time), keys (IPv4 /32, IPv6 /64, users, classes), the
 * config lines, and that it fails open without ever failing closed: a full
 * table, a lock holder that was killed, a stripe whose lock a live process
 * sits on, a scribbled header.  Cross-process behaviour is tested with real
 * fork()ed processes sharing one segment; every child is stopped by pid.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config/cfg.h"
#include "proto/cmd.h"
#include "server/colo/ratelimit.h"

#define NS_MS 1000000LL
#define NS_S 1000000000LL
#define T0 (1000 * NS_S) /* a "now" far from 0 */

static struct rl *mk(uint32_t buckets)
{
    struct rl_opts o = {.buckets = buckets};
    struct rl *rl = NULL;
    ck_assert_int_eq(rl_create(&o, &rl), HKV_OK);
    ck_assert_ptr_nonnull(rl);
    ck_assert_int_eq(rl_attach(rl), HKV_OK);
    return rl;
}

static uint64_t ctr(struct rl *rl, enum rl_counter which)
{
    struct rl_stats st;
    rl_stats(rl, T0, &st);
    return st.counters[which];
}

static struct rl_key key4(const char *ip)
{
    struct sockaddr_in in;
    memset(&in, 0, sizeof(in));
    in.sin_family = AF_INET;
    in.sin_port = htons(40000);
    ck_assert_int_eq(inet_pton(AF_INET, ip, &in.sin_addr), 1);
    struct rl_key k;
    rl_key_addr(&k, (struct sockaddr *)&in, sizeof(in));
    return k;
}

static struct rl_key key6(const char *ip)
{
    struct sockaddr_in6 in6;
    memset(&in6, 0, sizeof(in6));
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(40000);
    ck_assert_int_eq(inet_pton(AF_INET6, ip, &in6.sin6_addr), 1);
    struct rl_key k;
    rl_key_addr(&k, (struct sockaddr *)&in6, sizeof(in6));
    return k;
}

/* The n-th IPv4 client 10.x.y.z. */
static struct rl_key nth(uint32_t n)
{
    char ip[32];
    snprintf(ip, sizeof(ip), "10.%u.%u.%u", (n >> 16) & 255, (n >> 8) & 255, n & 255);
    return key4(ip);
}

static int check(struct rl *rl, const struct rl_key *k, int cls, int64_t now, int64_t *retry)
{
    int64_t r = -1;
    int v = rl_check(rl, k, cls, now, &r);
    if (retry != NULL)
        *retry = r;
    return v;
}

static struct cfg *load(const char *text)
{
    struct cfg *c = cfg_create();
    struct cfg_error err;
    ck_assert_ptr_nonnull(c);
    hkv_status st = cfg_load_text(c, text, strlen(text), "test", &err);
    ck_assert_msg(st == HKV_OK, "%s", err.msg);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_OK);
    return c;
}

static int load_fails(const char *text, const char *want)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = {{0}};
    hkv_status st = cfg_load_text(c, text, strlen(text), "test", &err);
    cfg_destroy(&c);
    if (st == HKV_OK)
        return 0;
    ck_assert_msg(strstr(err.msg, want) != NULL, "'%s' does not say '%s'", err.msg, want);
    return 1;
}

/* ---- the bucket ---- */

START_TEST(burst_then_rate_then_refill)
{
    struct rl *rl = mk(1024);
    ck_assert_int_eq(rl_test_rule(rl, RL_CLS_READ, 10, 1000, 20), HKV_OK); /* 10/1s burst 20 */
    struct rl_key k = key4("192.0.2.1");
    int64_t retry;
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, &retry), RL_REJECT);
    ck_assert_int_eq(retry, 100); /* one token every 100 ms */
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0 + 40 * NS_MS, &retry), RL_REJECT);
    ck_assert_int_eq(retry, 60);
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0 + 99 * NS_MS + 1, &retry), RL_REJECT);
    ck_assert_int_eq(retry, 1); /* rounded up: never "retry in 0 ms" */
    /* one token per 100 ms: exactly one more at +100 ms, three at +400 ms */
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0 + 100 * NS_MS, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0 + 100 * NS_MS, NULL), RL_REJECT);
    int ok = 0;
    for (int i = 0; i < 10; i++)
        ok += check(rl, &k, RL_CLS_READ, T0 + 400 * NS_MS, NULL) == RL_ALLOW;
    ck_assert_int_eq(ok, 3);
    /* sustained: 10 per second whatever is asked */
    ok = 0;
    for (int ms = 400; ms < 10400; ms += 10)
        for (int j = 0; j < 5; j++)
            ok += check(rl, &k, RL_CLS_READ, T0 + ms * NS_MS, NULL) == RL_ALLOW;
    ck_assert_int_ge(ok, 99);
    ck_assert_int_le(ok, 101);
    /* a quiet spell refills up to the burst, never past it */
    int64_t later = T0 + 3600 * NS_S;
    ok = 0;
    for (int i = 0; i < 50; i++)
        ok += check(rl, &k, RL_CLS_READ, later, NULL) == RL_ALLOW;
    ck_assert_int_eq(ok, 20);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), 0);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_allowed) + ctr(rl, RL_CTR_ratelimit_rejected),
                      23 + 2 + 10 + 5000 + 50);
    rl_destroy(&rl);
    ck_assert_ptr_null(rl);
}
END_TEST

START_TEST(a_class_without_a_rule_is_not_counted)
{
    struct rl *rl = mk(1024);
    struct rl_key k = key4("192.0.2.1");
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(check(rl, &k, RL_CLS_WRITE, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &k, RL_CLS_NONE, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &k, RL_NCLS, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(NULL, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_allowed), 0);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), 0);
    rl_destroy(&rl);
}
END_TEST

/* ---- keys ---- */

START_TEST(ipv6_by_64_ipv4_by_32_users_and_classes_apart)
{
    struct rl *rl = mk(4096);
    rl_test_rule(rl, RL_CLS_READ, 1, 3600 * 1000, 1);
    rl_test_rule(rl, RL_CLS_WRITE, 1, 3600 * 1000, 1);
    struct rl_key a = key6("2001:db8:1:2::1"), b = key6("2001:db8:1:2:ffff:eeee:dddd:cccc"),
                  c = key6("2001:db8:1:3::1");
    ck_assert_int_eq(a.family, 6);
    ck_assert_int_eq(check(rl, &a, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &b, RL_CLS_READ, T0, NULL), RL_REJECT); /* same /64 */
    ck_assert_int_eq(check(rl, &c, RL_CLS_READ, T0, NULL), RL_ALLOW);  /* next /64 */
    ck_assert_int_eq(check(rl, &a, RL_CLS_WRITE, T0, NULL), RL_ALLOW); /* another class */

    struct rl_key v4 = key4("198.51.100.7"), v4n = key4("198.51.100.8"),
                  mapped = key6("::ffff:198.51.100.7");
    ck_assert_int_eq(mapped.family, 4);
    ck_assert_int_eq(check(rl, &v4, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &v4n, RL_CLS_READ, T0, NULL), RL_ALLOW); /* /32: its own */
    ck_assert_int_eq(check(rl, &mapped, RL_CLS_READ, T0, NULL), RL_REJECT); /* same host */

    struct rl_key alice = v4, bob = v4, alice2 = key4("198.51.100.7");
    alice.user = "alice";
    alice.ulen = 5;
    bob.user = "bob";
    bob.ulen = 3;
    alice2.user = "alice";
    alice2.ulen = 5;
    ck_assert_int_eq(check(rl, &alice, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &bob, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &alice2, RL_CLS_READ, T0, NULL), RL_REJECT);
    char longname[300];
    memset(longname, 'u', sizeof(longname));
    struct rl_key l1 = v4, l2 = v4;
    l1.user = longname;
    l1.ulen = sizeof(longname);
    l2.user = longname;
    l2.ulen = sizeof(longname) - 1;
    ck_assert_int_eq(check(rl, &l1, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &l2, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &l1, RL_CLS_READ, T0, NULL), RL_REJECT);

    struct rl_key u1, u2; /* Unix sockets and unknown peers share one key */
    rl_key_addr(&u1, NULL, 0);
    struct sockaddr_un_like {
        sa_family_t f;
        char path[20];
    } un = {AF_UNIX, "/tmp/x"};
    rl_key_addr(&u2, (struct sockaddr *)&un, sizeof(un));
    ck_assert_int_eq(check(rl, &u1, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &u2, RL_CLS_READ, T0, NULL), RL_REJECT);
    rl_destroy(&rl);
}
END_TEST

/* ---- config ---- */

START_TEST(directives_parse_render_and_round_trip)
{
    struct cfg *d = cfg_create();
    ck_assert_int_eq(d->ratelimit_buckets, 65536);
    for (int k = 0; k < CFG_RL_NCLASS; k++)
        ck_assert_int_eq(d->ratelimit[k].rate, 0);
    const struct cfg_rate *auth = cfg_ratelimit_command(d, "AUTH");
    ck_assert_ptr_nonnull(auth);
    ck_assert_int_eq(auth->rate, 10);
    ck_assert_int_eq(auth->period_ms, 1000);
    ck_assert_int_eq(auth->burst, 20);

    struct cfg *c = load("ratelimit read 10000/1s burst 20000\n"
                         "ratelimit write 100/s\n"
                         "ratelimit admin 5/250ms burst 1\n"
                         "ratelimit admin 6/1m\n" /* replaces the line above */
                         "ratelimit-command AUTH off\n"
                         "ratelimit-command get 7/2s burst 9\n"
                         "ratelimit-command ping off\n"
                         "ratelimit-buckets 128\n");
    ck_assert_int_eq(c->ratelimit[CFG_RL_READ].rate, 10000);
    ck_assert_int_eq(c->ratelimit[CFG_RL_READ].period_ms, 1000);
    ck_assert_int_eq(c->ratelimit[CFG_RL_READ].burst, 20000);
    ck_assert_int_eq(c->ratelimit[CFG_RL_WRITE].burst, 100); /* burst defaults to RATE */
    ck_assert_int_eq(c->ratelimit[CFG_RL_ADMIN].rate, 6);
    ck_assert_int_eq(c->ratelimit[CFG_RL_ADMIN].period_ms, 60000);
    ck_assert_uint_eq(c->nratelimit_cmds, 3);
    ck_assert_str_eq(c->ratelimit_cmds[0].name, "auth");
    ck_assert_int_eq(c->ratelimit_cmds[0].r.rate, 0);
    ck_assert_int_eq(c->ratelimit_buckets, 128);

    char buf[512];
    ck_assert_int_eq(cfg_get(c, "ratelimit", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "read 10000/1000ms burst 20000\nwrite 100/1000ms burst 100\n"
                          "admin 6/60000ms burst 6");
    ck_assert_int_eq(cfg_get(c, "ratelimit-command", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "auth off\nget 7/2000ms burst 9\nping off");

    /* serialized, and read back over the defaults: equal */
    char *text = cfg_serialize(c, NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, "\nratelimit read 10000/1s burst 20000\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nratelimit-command auth off\n"));
    struct cfg *back = load(text);
    free(text);
    ck_assert_int_eq(cfg_diff(c, back, NULL, NULL), 0);

    /* CONFIG SET: the limits are reloadable, the table size is not */
    struct cfg_error err;
    ck_assert_int_eq(cfg_set(back, "ratelimit", "read off", &err), HKV_OK);
    ck_assert_int_eq(back->ratelimit[CFG_RL_READ].rate, 0);
    ck_assert_int_eq(cfg_set(back, "ratelimit-command", "auth 3/1s", &err), HKV_OK);
    ck_assert_int_eq(cfg_ratelimit_command(back, "auth")->rate, 3);
    ck_assert_int_ne(cfg_set(back, "ratelimit-buckets", "1024", &err), HKV_OK);
    ck_assert_int_ne(cfg_set(back, "ratelimit", "read 1/0s", &err), HKV_OK);
    struct cfg *m = cfg_reload_merge(d, back);
    ck_assert_int_eq(m->ratelimit_buckets, 65536); /* restart-only: the live value stays */
    ck_assert_int_eq(cfg_ratelimit_command(m, "auth")->rate, 3);
    cfg_destroy(&m);
    cfg_destroy(&back);
    cfg_destroy(&c);
    cfg_destroy(&d);
}
END_TEST

START_TEST(bad_directives_are_refused_with_a_reason)
{
    ck_assert(load_fails("ratelimit read 10\n", "RATE/PERIOD"));
    ck_assert(load_fails("ratelimit\n", "read, write or admin"));
    ck_assert(load_fails("ratelimit reads 1/1s\n", "read, write or admin"));
    ck_assert(load_fails("ratelimit read 0/1s\n", "RATE needs"));
    ck_assert(load_fails("ratelimit read -1/1s\n", "RATE needs"));
    ck_assert(load_fails("ratelimit read 10/0\n", "PERIOD"));
    ck_assert(load_fails("ratelimit read 10/2d\n", "PERIOD"));
    ck_assert(load_fails("ratelimit read 10/1s burst\n", "RATE/PERIOD [burst N]"));
    ck_assert(load_fails("ratelimit read 10/1s bust 5\n", "unknown keyword"));
    ck_assert(load_fails("ratelimit read 10/1s burst 0\n", "burst needs"));
    ck_assert(load_fails("ratelimit read 2000000/1ms\n", "nanosecond"));
    ck_assert(load_fails("ratelimit read 1/24h burst 1000000000\n", "36 years"));
    ck_assert(load_fails("ratelimit-command 1/1s\n", "command name"));
    ck_assert(load_fails("ratelimit-command get\n", "RATE/PERIOD"));
    ck_assert(load_fails("ratelimit-command \"a b\" 1/1s\n", "command name"));
    ck_assert(load_fails("ratelimit-buckets 63\n", "ratelimit-buckets"));
    ck_assert(load_fails("ratelimit-buckets 16777217\n", "ratelimit-buckets"));
}
END_TEST

START_TEST(commands_map_to_their_class_or_their_own_limit)
{
    struct rl *rl = mk(1024);
    const uint16_t *map = rl_class_map(rl);
    ck_assert_ptr_nonnull(rl_class_map(NULL));
    ck_assert_int_eq(rl_class_map(NULL)[CMD_GET], RL_CLS_NONE);
    struct cfg *d = cfg_create();
    ck_assert_int_eq(rl_configure(rl, d), 0); /* defaults: only AUTH is limited */
    const struct cmd_def *auth = cmd_lookup("auth", 4);
    for (int id = 0; id < CMD_COUNT; id++) {
        const char *name = cmd_get((enum cmd_id)id)->name;
        /* HELLO (which may carry AUTH) is charged to AUTH's bucket */
        int limited = strcmp(name, "auth") == 0 || strcmp(name, "hello") == 0;
        ck_assert_int_eq(map[id], limited ? RL_CLS_CMD0 + (int)auth->id : RL_CLS_NONE);
    }
    struct cfg *c = load("ratelimit read 100/1s\nratelimit write 10/1s\nratelimit admin 1/1s\n"
                         "ratelimit-command mget 5/1s\nratelimit-command exists off\n"
                         "ratelimit-command nosuchcommand 1/1s\n");
    ck_assert_int_eq(rl_configure(rl, c), 1); /* one name matched nothing */
    ck_assert_int_eq(map[CMD_GET], RL_CLS_READ);
    ck_assert_int_eq(map[CMD_TTL], RL_CLS_READ);
    ck_assert_int_eq(map[CMD_SET], RL_CLS_WRITE);
    ck_assert_int_eq(map[CMD_INCRBY], RL_CLS_WRITE);
    ck_assert_int_eq(map[CMD_CONFIG], RL_CLS_ADMIN);
    ck_assert_int_eq(map[CMD_PING], RL_CLS_NONE);
    ck_assert_int_eq(map[CMD_INFO], RL_CLS_NONE);
    ck_assert_int_eq(map[CMD_MGET], RL_CLS_CMD0 + CMD_MGET);
    ck_assert_int_eq(map[CMD_EXISTS], RL_CLS_NONE); /* off: exempt from its class too */
    struct cfg *h = load("ratelimit-command hello off\n");
    rl_configure(rl, h);
    ck_assert_int_eq(map[CMD_HELLO], RL_CLS_NONE);
    ck_assert_int_eq(map[auth->id], RL_CLS_CMD0 + (int)auth->id);
    cfg_destroy(&h);
    rl_configure(rl, c);
    /* rules take effect at once, and a reload keeps the buckets */
    struct rl_key k = key4("203.0.113.9");
    ck_assert_int_eq(check(rl, &k, map[CMD_CONFIG], T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &k, map[CMD_CONFIG], T0, NULL), RL_REJECT);
    ck_assert_int_eq(rl_configure(rl, c), 1);
    ck_assert_int_eq(check(rl, &k, map[CMD_CONFIG], T0, NULL), RL_REJECT);
    ck_assert_int_eq(rl_configure(rl, d), 0);
    ck_assert_int_eq(map[CMD_CONFIG], RL_CLS_NONE);
    struct rl_stats st;
    rl_stats(rl, T0, &st);
    ck_assert_int_eq(st.rules, 1);
    cfg_destroy(&c);
    cfg_destroy(&d);
    rl_destroy(&rl);
}
END_TEST

/* ---- failing open ---- */

START_TEST(full_table_lets_new_clients_through_and_counts_them)
{
    struct rl *rl = mk(64);
    uint32_t ns, per, probe;
    rl_test_geometry(rl, &ns, &per, &probe);
    ck_assert_uint_eq(ns * per, 64);
    rl_test_rule(rl, RL_CLS_READ, 1, 3600 * 1000, 1); /* buckets stay in debt for an hour */
    const uint32_t n = 1000;
    for (uint32_t i = 0; i < n; i++) {
        struct rl_key k = nth(i);
        ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
    }
    struct rl_stats st;
    rl_stats(rl, T0, &st);
    ck_assert_uint_eq(st.capacity, 64);
    ck_assert_uint_le(st.buckets, 64);
    ck_assert_uint_ge(st.buckets, 16);
    uint64_t fo = st.counters[RL_CTR_ratelimit_failopen];
    ck_assert_uint_ge(fo, n - 64);
    ck_assert_uint_eq(fo, st.counters[RL_CTR_ratelimit_failopen_full]);
    ck_assert_uint_eq(st.counters[RL_CTR_ratelimit_allowed] + fo, n);
    /* every further new client: allowed, and counted */
    for (uint32_t i = 0; i < 100; i++) {
        struct rl_key k = nth(100000 + i);
        int64_t fo0 = (int64_t)ctr(rl, RL_CTR_ratelimit_failopen);
        ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
        ck_assert_int_le((int64_t)ctr(rl, RL_CTR_ratelimit_failopen), fo0 + 1);
    }
    ck_assert_uint_ge(ctr(rl, RL_CTR_ratelimit_failopen), fo + 90);
    /* clients that have a bucket are still limited */
    struct rl_key first = nth(0);
    ck_assert_int_eq(check(rl, &first, RL_CLS_READ, T0, NULL), RL_REJECT);
    ck_assert_uint_ge(ctr(rl, RL_CTR_ratelimit_rejected), 1);
    /* an hour later every bucket is full again: free for new clients */
    int64_t later = T0 + 3601 * NS_S;
    rl_stats(rl, later, &st);
    ck_assert_uint_eq(st.buckets, 0);
    uint64_t fo2 = ctr(rl, RL_CTR_ratelimit_failopen);
    for (uint32_t i = 0; i < 32; i++) {
        struct rl_key k = nth(200000 + i);
        ck_assert_int_eq(check(rl, &k, RL_CLS_READ, later, NULL), RL_ALLOW);
    }
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), fo2);
    rl_destroy(&rl);
}
END_TEST

/* Forks a child that takes key's stripe lock through the test hook (and,
 * with mid_write, dies inside a bucket's re-assignment); returns its pid once
 * it holds the lock.  The child waits to be killed. */
static pid_t hold_in_child(struct rl *rl, const struct rl_key *k, int cls, int mid_write)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        char ok = rl_test_hold_stripe(rl, k, cls, mid_write) == HKV_OK ? 'y' : 'n';
        if (write(fds[1], &ok, 1) != 1)
            _exit(1);
        for (int i = 0; i < 600; i++) /* bounded: the test kills it long before */
            sleep(1);
        _exit(0);
    }
    close(fds[1]);
    char got = 0;
    ck_assert_int_eq(read(fds[0], &got, 1), 1);
    close(fds[0]);
    ck_assert_int_eq(got, 'y');
    return pid;
}

static void kill_child(pid_t pid)
{
    int status;
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status));
}

/* A client (after `from`) whose bucket falls in stripe s, or not in it. */
static struct rl_key client_in(struct rl *rl, uint32_t s, int in, uint32_t *from)
{
    for (uint32_t i = *from; i < *from + 100000; i++) {
        struct rl_key k = nth(i);
        if ((rl_test_stripe(rl, &k, RL_CLS_READ) == s) == in) {
            *from = i + 1;
            return k;
        }
    }
    ck_abort_msg("no client found for stripe %u", s);
    return nth(0);
}

START_TEST(killed_lock_holder_mid_write_is_repaired)
{
    struct rl *rl = mk(4096);
    rl_test_rule(rl, RL_CLS_READ, 2, 3600 * 1000, 2);
    struct rl_key k = key4("192.0.2.50");
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
    pid_t pid = hold_in_child(rl, &k, RL_CLS_READ, 1);
    kill_child(pid);
    /* the bucket was left changing hands and its lock owner is dead: the
     * next check repairs it (a full bucket) and decides */
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_lock_repairs), 1);
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
    int64_t retry;
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, &retry), RL_REJECT);
    ck_assert_int_gt(retry, 1000);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), 0);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_lock_repairs), 1);
    rl_destroy(&rl);
}
END_TEST

START_TEST(killed_lock_holder_is_repaired_by_a_new_client)
{
    struct rl *rl = mk(4096);
    rl_test_rule(rl, RL_CLS_READ, 1, 3600 * 1000, 1);
    struct rl_key k = key4("192.0.2.60");
    uint32_t s = rl_test_stripe(rl, &k, RL_CLS_READ), from = 0;
    pid_t pid = hold_in_child(rl, &k, RL_CLS_READ, 0);
    kill_child(pid);
    struct rl_key nk = client_in(rl, s, 1, &from);
    ck_assert_int_eq(check(rl, &nk, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &nk, RL_CLS_READ, T0, NULL), RL_REJECT);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_lock_repairs), 1);
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_REJECT);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), 0);
    rl_destroy(&rl);
}
END_TEST

START_TEST(others_still_rejected_while_one_stripe_is_broken)
{
    struct rl *rl = mk(4096);
    uint32_t ns, per, probe;
    rl_test_geometry(rl, &ns, &per, &probe);
    ck_assert_uint_ge(ns, 2);
    rl_test_rule(rl, RL_CLS_READ, 1, 3600 * 1000, 1);
    struct rl_key old = key4("192.0.2.70"); /* has a bucket before the stripe breaks */
    uint32_t s = rl_test_stripe(rl, &old, RL_CLS_READ), from = 0;
    ck_assert_int_eq(check(rl, &old, RL_CLS_READ, T0, NULL), RL_ALLOW);
    pid_t pid = hold_in_child(rl, &old, RL_CLS_READ, 0); /* alive, and never lets go */

    /* a known client of the broken stripe: still limited (no lock needed) */
    ck_assert_int_eq(check(rl, &old, RL_CLS_READ, T0, NULL), RL_REJECT);
    /* clients of every other stripe, new ones included: limited */
    for (int i = 0; i < 50; i++) {
        struct rl_key k = client_in(rl, s, 0, &from);
        ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
        ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_REJECT);
    }
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), 0);
    /* new clients of the broken stripe: let through, counted, never blocked */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 10; i++) {
        struct rl_key k = client_in(rl, s, 1, &from);
        ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
        ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    ck_assert_msg(ms < 100, "20 checks against a held lock took %.1f ms", ms);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), 20);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen_busy), 20);
    kill_child(pid);
    /* once the holder is gone the stripe decides again */
    struct rl_key k = client_in(rl, s, 1, &from);
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_REJECT);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_lock_repairs), 1);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), 20);
    rl_destroy(&rl);
}
END_TEST

START_TEST(scribbled_header_fails_open)
{
    struct rl *rl = mk(1024);
    rl_test_rule(rl, RL_CLS_READ, 1, 3600 * 1000, 1);
    struct rl_key k = key4("192.0.2.80");
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_REJECT);
    rl_test_scribble_header(rl);
    ck_assert_int_eq(rl_attach(rl), HKV_ECORRUPT);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
    struct rl_stats st;
    rl_stats(rl, T0, &st);
    ck_assert_uint_eq(st.counters[RL_CTR_ratelimit_failopen], 5);
    ck_assert_int_eq(rl_attach(NULL), HKV_ECORRUPT);
    rl_destroy(&rl);
    rl_destroy(&rl); /* NULL-safe */
    struct rl_opts o = {.buckets = 63};
    ck_assert_int_eq(rl_create(&o, &rl), HKV_EINVAL);
    ck_assert_ptr_null(rl);
}
END_TEST

/* ---- across processes ---- */

START_TEST(two_processes_share_one_bucket)
{
    struct rl *rl = mk(4096);
    rl_test_rule(rl, RL_CLS_READ, 10, 3600 * 1000, 10);
    struct rl_key k = key4("192.0.2.90");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int ok = 0;
        for (int i = 0; i < 6; i++)
            ok += rl_check(rl, &k, RL_CLS_READ, T0, NULL) == RL_ALLOW;
        _exit(ok == 6 ? 0 : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_ALLOW);
    ck_assert_int_eq(check(rl, &k, RL_CLS_READ, T0, NULL), RL_REJECT);

    /* four processes at once on one bucket of 1000: exactly 1000 allowed */
    rl_reset_counters(rl);
    rl_test_rule(rl, RL_CLS_WRITE, 1000, 3600 * 1000, 1000);
    pid_t kids[4];
    for (int p = 0; p < 4; p++) {
        kids[p] = fork();
        ck_assert_int_ge(kids[p], 0);
        if (kids[p] == 0) {
            for (int i = 0; i < 500; i++)
                rl_check(rl, &k, RL_CLS_WRITE, T0 + i, NULL);
            _exit(0);
        }
    }
    for (int p = 0; p < 4; p++) {
        ck_assert_int_eq(waitpid(kids[p], &status, 0), kids[p]);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_allowed), 1000);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_rejected), 1000);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_failopen), 0);
    rl_destroy(&rl);
}
END_TEST

/* ---- cost ---- */

START_TEST(check_cost_measured)
{
    struct rl *rl = mk(65536);
    rl_test_rule(rl, RL_CLS_READ, 1000000000, 1000, 1000000000);
    const uint16_t *map = rl_class_map(NULL);
    struct rl_key k = key4("192.0.2.100");
    const int n = 2000000;
    volatile int sink = 0;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++)
        if (map[CMD_GET] != RL_CLS_NONE)
            sink += rl_check(rl, &k, RL_CLS_READ, T0, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double off = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / n;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++)
        sink += rl_check(rl, &k, RL_CLS_READ, rl_now(), NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double on = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / n;
    /* many clients: the table's lines are not all in cache */
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++) {
        struct rl_key kk = k;
        kk.addr[3] = (uint8_t)i;
        kk.addr[2] = (uint8_t)(i >> 8);
        kk.addr[1] = (uint8_t)(i >> 16 & 0x1f);
        sink += rl_check(rl, &kk, RL_CLS_READ, rl_now(), NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double many = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / n;
    fprintf(stderr, "ratelimit: unlimited command %.2f ns/check (the map branch); limited, one "
                    "client %.1f ns/check; a new client each check (locked insert) %.1f ns/check (incl. clock)\n",
            off, on, many);
    ck_assert_uint_eq(ctr(rl, RL_CTR_ratelimit_rejected), 0);
    ck_assert(sink == 0);
    ck_assert_msg(on < 5000, "%.1f ns a check", on);
    rl_destroy(&rl);
}
END_TEST

Suite *ratelimit_suite(void)
{
    Suite *s = suite_create("ratelimit");
    TCase *tc = tcase_create("bucket");
    tcase_add_test(tc, burst_then_rate_then_refill);
    tcase_add_test(tc, a_class_without_a_rule_is_not_counted);
    tcase_add_test(tc, ipv6_by_64_ipv4_by_32_users_and_classes_apart);
    suite_add_tcase(s, tc);

    tc = tcase_create("config");
    tcase_add_test(tc, directives_parse_render_and_round_trip);
    tcase_add_test(tc, bad_directives_are_refused_with_a_reason);
    tcase_add_test(tc, commands_map_to_their_class_or_their_own_limit);
    suite_add_tcase(s, tc);

    tc = tcase_create("failopen");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, full_table_lets_new_clients_through_and_counts_them);
    tcase_add_test(tc, killed_lock_holder_mid_write_is_repaired);
    tcase_add_test(tc, killed_lock_holder_is_repaired_by_a_new_client);
    tcase_add_test(tc, others_still_rejected_while_one_stripe_is_broken);
    tcase_add_test(tc, scribbled_header_fails_open);
    suite_add_tcase(s, tc);

    tc = tcase_create("processes");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, two_processes_share_one_bucket);
    suite_add_tcase(s, tc);

    tc = tcase_create("cost");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, check_cost_measured);
    suite_add_tcase(s, tc);
    return s;
}
