/*
 * check_hostile.c - hostile clients against the real daemon.  One TCase per
 * attack.  Each starts the daemon with limits suited to the attack, measures
 * a normal client's GET latency unloaded and again while the attack runs
 * (from a thread of this process), checks the outcome the attacker gets
 * (reply text, connection closed or kept, time to close, edge RSS), and
 * prints what it sent and what happened ("[hostile] ..." lines).
 *
 * The latency bound: p99 during the attack <= 2 x max(p99 unloaded, 5 ms).
 * The 5 ms floor is there because an unloaded p99 on loopback is ~0.1 ms and
 * the test box may have 2 cores shared by the daemon, the attacker, the
 * measuring client and whatever else builds or tests there: twice 0.1 ms is
 * below scheduler noise, and a 1 ms floor was crossed (p99 4.1 ms) on a box
 * running other suites at once.  An edge the attack starves answers in tens
 * or hundreds of ms, far over 10 ms.
 * The attacker threads run at nice 19 (a real attacker is not on the server's
 * CPU; here it is, and it must not be what the measurement sees).  A
 * measurement over the bound is repeated up to LAT_ATTEMPTS times (unloaded,
 * then loaded again), because the box is shared with other builds and test
 * suites; every attempt is printed.
 *
 * Every loop is bounded in time and count, every socket is closed, and the
 * daemon is stopped by pid (h_stop).  TLS and password attacks live with the
 * TLS and AUTH tests; the connection-level attacks (floods, maxclients,
 * idle connections, arity, numbers) in check_hostile_conn.c.
 */
#include "tests/fault/hostile_fixture.h"

#define E_MB "ERR Protocol error: invalid multibulk length"
#define E_BL "ERR Protocol error: invalid bulk length"

struct bad_case {
    const char *what;   /* printable */
    const char *data;
    const char *err;    /* expected error text; NULL: expect +PONG and kept */
};

static const struct bad_case bad_cases[] = {
    {"*-", "*-\r\n", E_MB},
    {"*abc", "*abc\r\n", E_MB},
    {"*+1", "*+1\r\n", E_MB},
    {"*2^31 (2147483648)", "*2147483648\r\n", E_MB},
    {"*2^63 (9223372036854775808)", "*9223372036854775808\r\n", E_MB},
    {"*2^64 (18446744073709551616)", "*18446744073709551616\r\n", E_MB},
    {"*1 $-2", "*1\r\n$-2\r\n", E_BL},
    {"*1 $-1", "*1\r\n$-1\r\n", E_BL},
    {"*1 $2^31 (over proto-max-bulk-len)", "*1\r\n$2147483648\r\n", E_BL},
    {"*1 $2^63-1", "*1\r\n$9223372036854775807\r\n", E_BL},
    {"*1 $2^63", "*1\r\n$9223372036854775808\r\n", E_BL},
    {"*1 $-2^63", "*1\r\n$-9223372036854775808\r\n", E_BL},
    {"*1 $03 (leading zero)", "*1\r\n$03\r\nGET\r\n", E_BL},
    {"*1 $abc", "*1\r\n$abc\r\n", E_BL},
    {"*1 GET (no $)", "*1\r\nGET\r\n", "ERR Protocol error: expected '$', got 'G'"},
    {"*2 $3 GET $1 kX (no CRLF after bulk)", "*2\r\n$3\r\nGET\r\n$1\r\nkX\r\n",
     "ERR Protocol error: expected CRLF after bulk data"},
    /* control: empty multibulks (any count below 1, as Redis) are skipped,
     * then a PING is answered */
    {"*0 *-1 *-5 PING (control)", "*0\r\n*-1\r\n*-5\r\n*1\r\n$4\r\nPING\r\n", NULL},
};
#define NBAD ((int)(sizeof(bad_cases) / sizeof(bad_cases[0])))

/* 0 if the outcome is the expected one. */
static int bad_check(const struct bad_case *bc, const struct outcome *o)
{
    if (o->connect_failed)
        return -1;
    if (bc->err == NULL)
        return o->nreplies == 1 && strcmp(o->first_raw, "+PONG\r\n") == 0 && o->closed == CL_OPEN
                   ? 0
                   : -1;
    return o->nreplies == 1 && first_is(o, bc->err) && o->closed != CL_OPEN ? 0 : -1;
}

static int bad_round(struct atk *a, long i)
{
    const struct bad_case *bc = &bad_cases[i % NBAD];
    struct outcome o;
    blast(a->port, bc->data, strlen(bc->data), bc->err ? 2000 : 50, &o);
    if (bad_check(bc, &o) != 0) {
        snprintf(a->bad_msg, sizeof(a->bad_msg), "%s: got \"%s\", %s", bc->what, o.first,
                 closed_str(o.closed));
        return -1;
    }
    return 0;
}

START_TEST(bad_lengths_get_protocol_error_and_close)
{
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 50\n");
    struct lat u;
    baseline(d.port, "bad-lengths", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    int64_t perr0 = h_info_int(d.port, "protocol_errors");
    for (int i = 0; i < NBAD; i++) {
        const struct bad_case *bc = &bad_cases[i];
        struct outcome o;
        blast(d.port, bc->data, strlen(bc->data), bc->err ? 3000 : 300, &o);
        print_outcome("bad-lengths", bc->what, &o);
        ck_assert_msg(bad_check(bc, &o) == 0, "%s: expected \"-%s\" and %s, got \"%s\", %s",
                      bc->what, bc->err ? bc->err : "+PONG", bc->err ? "closed" : "kept",
                      o.first, closed_str(o.closed));
        if (bc->err)
            ck_assert_msg(o.close_ms < 1000, "%s: closed only after %lld ms", bc->what,
                          (long long)o.close_ms);
    }
    /* A protocol error after a request that waits for an owner: the owed
     * reply still comes first, then the error, then the close. */
    {
        static const char req[] = "SET ord:k v\r\nGET ord:k\r\n*abc\r\n";
        struct outcome o;
        blast(d.port, req, sizeof(req) - 1, 3000, &o);
        print_outcome("bad-lengths", "'SET ord:k v' 'GET ord:k' then *abc, in one write", &o);
        ck_assert_msg(o.nreplies == 3 && strcmp(o.first_raw, "+OK\r\n") == 0 &&
                      strcmp(o.last, "-" E_MB "\\r\\n") == 0 && o.closed != CL_OPEN,
                      "owed replies then the error: got %d replies, first \"%s\", last \"%s\", %s",
                      o.nreplies, o.first, o.last, closed_str(o.closed));
    }
    int64_t perr = h_info_int(d.port, "protocol_errors") - perr0;
    printf("[hostile] bad-lengths: INFO protocol_errors +%lld\n", (long long)perr);
    ck_assert_int_eq(perr, NBAD - 1 + 1);
    during(d.port, "bad-lengths", &u, bad_round, NULL);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 2. A 70 KB line without CRLF;  3. an inline request over 64 KB
 * ================================================================================ */

struct big_line {
    const char *what;
    char *data;
    size_t len;
    const char *err;
};

static struct big_line long_lines[3];
static struct big_line big_inlines[3];

static void make_lines(void)
{
    size_t n;
    /* 70 KB without CRLF: inline text, a `*` count, a `$` length. */
    long_lines[0] = (struct big_line){"70 KB of 'a' (inline, no newline)",
                                      filled("", 'a', 70 * 1024, "", &n), 0,
                                      "ERR Protocol error: too big inline request"};
    long_lines[0].len = n;
    long_lines[1] = (struct big_line){"'*' + 70 KB of '1' (multibulk count, no CRLF)",
                                      filled("*", '1', 70 * 1024, "", &n), 0,
                                      "ERR Protocol error: too big mbulk count string"};
    long_lines[1].len = n;
    long_lines[2] = (struct big_line){"'*1\\r\\n$' + 70 KB of '1' (bulk length, no CRLF)",
                                      filled("*1\r\n$", '1', 70 * 1024, "", &n), 0,
                                      "ERR Protocol error: too big bulk count string"};
    long_lines[2].len = n;
    /* Inline requests over 64 KB, complete with their newline. */
    big_inlines[0] = (struct big_line){"inline 'SET k <70 KB>\\r\\n'",
                                       filled("SET k ", 'v', 70 * 1024, "\r\n", &n), 0,
                                       "ERR Protocol error: too big inline request"};
    big_inlines[0].len = n;
    big_inlines[1] = (struct big_line){"inline 'GET <65537-byte key>\\n'",
                                       filled("GET ", 'k', 65537, "\n", &n), 0,
                                       "ERR Protocol error: too big inline request"};
    big_inlines[1].len = n;
    /* Just under the limit: served. */
    big_inlines[2] = (struct big_line){"inline 'SET k <60 KB>\\r\\n' (under the limit, control)",
                                       filled("SET k ", 'v', 60 * 1024, "\r\n", &n), 0, NULL};
    big_inlines[2].len = n;
}

static void free_lines(void)
{
    for (int i = 0; i < 3; i++) {
        free(long_lines[i].data);
        free(big_inlines[i].data);
        long_lines[i].data = big_inlines[i].data = NULL;
    }
}

static int line_check(const struct big_line *b, const struct outcome *o)
{
    if (o->connect_failed)
        return -1;
    if (b->err == NULL)
        return o->nreplies == 1 && strcmp(o->first_raw, "+OK\r\n") == 0 && o->closed == CL_OPEN
                   ? 0 : -1;
    return o->nreplies == 1 && first_is(o, b->err) && o->closed != CL_OPEN ? 0 : -1;
}

static int line_round(struct atk *a, long i)
{
    const struct big_line *set = a->arg;
    const struct big_line *b = &set[i % 3];
    struct outcome o;
    blast(a->port, b->data, b->len, b->err ? 2000 : 200, &o);
    if (line_check(b, &o) != 0) {
        snprintf(a->bad_msg, sizeof(a->bad_msg), "%s: got \"%s\", %s", b->what, o.first,
                 closed_str(o.closed));
        return -1;
    }
    return 0;
}

static void run_lines(const char *label, struct big_line *set)
{
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 50\nclient-query-buffer-limit 1mb\n");
    struct lat u;
    baseline(d.port, label, &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    for (int i = 0; i < 3; i++) {
        struct outcome o;
        blast(d.port, set[i].data, set[i].len, set[i].err ? 3000 : 300, &o);
        print_outcome(label, set[i].what, &o);
        ck_assert_msg(line_check(&set[i], &o) == 0, "%s: expected \"%s\" and %s, got \"%s\", %s",
                      set[i].what, set[i].err ? set[i].err : "+OK", set[i].err ? "closed" : "kept",
                      o.first, closed_str(o.closed));
    }
    during(d.port, label, &u, line_round, set);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}

START_TEST(line_70kb_without_crlf_gets_error_and_close)
{
    make_lines();
    run_lines("70KB-line", long_lines);
    free_lines();
}
END_TEST

START_TEST(inline_over_64kb_gets_error_and_close)
{
    make_lines();
    run_lines("big-inline", big_inlines);
    free_lines();
}
END_TEST

/* ================================================================================
 * 4. NUL and junk streams
 * ================================================================================ */

#define JUNK_LEN (1024 * 1024)

struct junk {
    const char *what;
    char *data;
};
static struct junk junks[4];

static uint64_t xs(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void make_junk(uint64_t seed)
{
    for (int k = 0; k < 4; k++)
        junks[k].data = malloc(JUNK_LEN);
    uint64_t s = seed;
    /* random bytes (NULs included) */
    junks[0].what = "1 MB of random bytes (xorshift seed 0x5eed)";
    for (size_t i = 0; i < JUNK_LEN; i++)
        junks[0].data[i] = (char)(xs(&s) >> 24);
    if (junks[0].data[0] == '*')
        junks[0].data[0] = 'x';
    /* all NUL */
    junks[1].what = "1 MB of NUL bytes";
    memset(junks[1].data, 0, JUNK_LEN);
    /* random after a '*': the multibulk path */
    junks[2].what = "'*' + 1 MB of random bytes";
    memcpy(junks[2].data, junks[0].data, JUNK_LEN);
    junks[2].data[0] = '*';
    /* a valid header, then random bytes where the bulk header should be */
    junks[3].what = "'*3\\r\\n$3\\r\\nSET\\r\\n' + random bytes";
    memcpy(junks[3].data, junks[0].data, JUNK_LEN);
    memcpy(junks[3].data, "*3\r\n$3\r\nSET\r\n", 13);
    if (junks[3].data[13] == '$')
        junks[3].data[13] = 'x';
}

static void free_junk(void)
{
    for (int k = 0; k < 4; k++) {
        free(junks[k].data);
        junks[k].data = NULL;
    }
}

/* Junk must end in a protocol error (or the query buffer limit) and a close.
 * Random inline lines before the fatal one may be answered as unknown
 * commands, as Redis does. */
static int junk_check(const struct outcome *o)
{
    if (o->connect_failed || o->closed == CL_OPEN || o->nreplies < 1)
        return -1;
    return strncmp(o->last, "-ERR Protocol error: ", 21) == 0 ? 0 : -1;
}

static int junk_round(struct atk *a, long i)
{
    const struct junk *j = &junks[i % 4];
    struct outcome o;
    blast(a->port, j->data, JUNK_LEN, 3000, &o);
    if (junk_check(&o) != 0) {
        snprintf(a->bad_msg, sizeof(a->bad_msg), "%s: last reply \"%s\", %s", j->what, o.last,
                 closed_str(o.closed));
        return -1;
    }
    return 0;
}

START_TEST(junk_and_nul_streams_get_error_and_close)
{
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 50\nclient-query-buffer-limit 1mb\n");
    struct lat u;
    baseline(d.port, "junk", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    make_junk(0x5eed);
    struct rss r;
    rss_start(&r, &d);
    for (int k = 0; k < 4; k++) {
        struct outcome o;
        blast(d.port, junks[k].data, JUNK_LEN, 3000, &o);
        print_outcome("junk", junks[k].what, &o);
        ck_assert_msg(junk_check(&o) == 0, "%s: expected a protocol error and a close, got "
                      "last reply \"%s\", %s", junks[k].what, o.last, closed_str(o.closed));
    }
    /* "\0\n" lines are empty requests (sdssplitargs stops at the NUL), as in
     * Redis: skipped, the connection kept. */
    {
        size_t n = 200000;
        char *p = malloc(n * 2 + 14);
        for (size_t i = 0; i < n; i++) {
            p[2 * i] = '\0';
            p[2 * i + 1] = '\n';
        }
        memcpy(p + 2 * n, "*1\r\n$4\r\nPING\r\n", 14);
        struct outcome o;
        blast(d.port, p, 2 * n + 14, 500, &o);
        print_outcome("junk", "200000 x \"\\0\\n\" then PING (control)", &o);
        ck_assert_msg(o.nreplies == 1 && strcmp(o.first_raw, "+PONG\r\n") == 0 &&
                      o.closed == CL_OPEN, "NUL lines: got \"%s\", %s", o.first,
                      closed_str(o.closed));
        free(p);
    }
    during(d.port, "junk", &u, junk_round, NULL);
    rss_stop(&r, "junk");
    free_junk();
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 5. A declared 1 GB bulk followed by silence
 * ================================================================================ */

#define GB_HEAD "*3\r\n$3\r\nSET\r\n$5\r\nbig:k\r\n$1073741824\r\n"
enum { SILENT_N = 20, TIMEOUT_MS = 2000 };

START_TEST(declared_1gb_bulk_then_silence_closed_at_timeout)
{
    struct daemon d;
    /* proto-max-bulk-len over 1 GB so that the header is accepted and the
     * daemon has to wait for the body. */
    start(&d, "timeout 2s\nmaxclients 100\nproto-max-bulk-len 2gb\n"
              "client-query-buffer-limit 1mb\nclient-output-buffer-limit 1mb 512kb 1s\n");
    struct lat u;
    baseline(d.port, "1GB-bulk", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    struct rss r;
    rss_start(&r, &d);

    /* SILENT_N connections declare 1 GB, send 16 KB of it, and go silent. */
    size_t hl;
    char *msg = filled(GB_HEAD, 'x', 16384, "", &hl);
    int fds[SILENT_N];
    int64_t sent_at[SILENT_N], close_at[SILENT_N];
    for (int i = 0; i < SILENT_N; i++) {
        fds[i] = h_connect(d.port);
        ck_assert_int_ge(fds[i], 0);
        ck_assert_int_eq(h_send(fds[i], msg, hl), 0);
        sent_at[i] = h_now_ms();
    }
    free(msg);
    printf("[hostile] 1GB-bulk: %d connections sent \"%s\" + 16384 bytes of body, then "
           "nothing\n", SILENT_N, "*3\\r\\n$3\\r\\nSET\\r\\n$5\\r\\nbig:k\\r\\n$1073741824\\r\\n");
    /* measured while the silent connections are held (the attack is static:
     * a repeat measures again, against the same unloaded baseline) */
    struct lat L;
    for (int attempt = 1; attempt <= LAT_ATTEMPTS; attempt++) {
        char l[64];
        snprintf(l, sizeof(l), "1GB-bulk during (attempt %d)", attempt);
        measure(d.port, l, &L);
        report_latency("1GB-bulk", &u, &L);
        if (lat_within(&u, &L) || h_now_ms() - sent_at[SILENT_N - 1] > TIMEOUT_MS - 700)
            break;
    }
    int replies = 0;
    int closed = wait_closed(fds, SILENT_N, sent_at[SILENT_N - 1] + TIMEOUT_MS + 4000, close_at,
                             &replies);
    int64_t mn = -1, mx = -1;
    for (int i = 0; i < SILENT_N; i++) {
        if (close_at[i] < 0)
            continue;
        int64_t t = close_at[i] - sent_at[i];
        if (mn < 0 || t < mn)
            mn = t;
        if (t > mx)
            mx = t;
    }
    for (int i = 0; i < SILENT_N; i++)
        close(fds[i]);
    printf("[hostile] 1GB-bulk: %d of %d closed, %d got bytes first, silence before close "
           "%lld..%lld ms (timeout %d ms)\n",
           closed, SILENT_N, replies, (long long)mn, (long long)mx, TIMEOUT_MS);
    log_show(&d, "idle for", 2);
    assert_latency("1GB-bulk", &u, &L);
    ck_assert_int_eq(closed, SILENT_N);
    ck_assert_int_eq(replies, 0);
    ck_assert_msg(mn >= TIMEOUT_MS - 100, "closed before the timeout: %lld ms", (long long)mn);
    ck_assert_msg(mx <= TIMEOUT_MS + 1500, "closed late: %lld ms", (long long)mx);

    /* The same header, then the body streamed as fast as the daemon takes it:
     * closed at client-query-buffer-limit (1 MB), never buffering 1 GB. */
    size_t sl;
    char *stream = filled(GB_HEAD, 'x', 64u << 20, "", &sl);
    struct outcome o;
    blast(d.port, stream, sl, 3000, &o);
    free(stream);
    print_outcome("1GB-bulk", "the 1 GB header + up to 64 MB of body, streamed", &o);
    log_show(&d, "query buffer", 1);
    ck_assert_msg(o.closed != CL_OPEN, "streaming a 1 GB bulk was not cut off");
    ck_assert_msg(o.sent < sl, "all 64 MB were taken before the close");
    rss_stop(&r, "1GB-bulk");
    ck_assert_msg(r.max_anon < 64 * 1024, "edge anonymous memory reached %ld kB", r.max_anon);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 6. 1M pipelined PINGs never read
 * ================================================================================ */

Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"bad_lengths", bad_lengths_get_protocol_error_and_close},
        {"line_70kb", line_70kb_without_crlf_gets_error_and_close},
        {"inline_64kb", inline_over_64kb_gets_error_and_close},
        {"junk", junk_and_nul_streams_get_error_and_close},
        {"bulk_1gb_silence", declared_1gb_bulk_then_silence_closed_at_timeout},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_checked_fixture(tc, unbuffer, NULL);
        tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
