/*
 * check_hostile_conn.c - hostile clients against the real daemon, at the
 * connection and command level: a flood of pipelined PINGs never read
 * (closed at the output limit), maxclients + 1 (refused, then accepted
 * again), 2000 idle connections (a normal client still served, then timed
 * out), wrong arity and unknown commands, INCRBY overflow and negative
 * EXPIRE (Redis's replies, the connection kept).  The protocol attacks,
 * and the latency bound every attack is held to: check_hostile.c.
 */
#include "tests/fault/hostile_fixture.h"

#define NPINGS 1000000
static const char PING_MB[] = "*1\r\n$4\r\nPING\r\n";
#define PING_LEN (sizeof(PING_MB) - 1)
static char *pings;

struct flood_out {
    int connect_failed;
    size_t sent;
    int closed;
    int64_t close_ms, sent_ms;
};

/* Sends the 1M PINGs as fast as the socket takes them, never reading (a
 * 4 KB receive buffer, so the replies back up into the daemon quickly). */
static void flood(int port, int budget_ms, struct flood_out *o)
{
    memset(o, 0, sizeof(*o));
    o->close_ms = o->sent_ms = -1;
    int64_t t0 = h_now_ms(), end = t0 + budget_ms;
    int fd = connect_nb(port, 4096);
    if (fd < 0) {
        o->connect_failed = 1;
        return;
    }
    size_t len = (size_t)NPINGS * PING_LEN;
    while (!o->closed && h_now_ms() < end) {
        if (o->sent == len && o->sent_ms < 0)
            o->sent_ms = h_now_ms() - t0;
        struct pollfd p = {fd, POLLRDHUP | (o->sent < len ? POLLOUT : 0), 0};
        if (poll(&p, 1, 20) < 0)
            continue;
        if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) {
            o->closed = p.revents & POLLERR ? CL_RESET : CL_EOF;
            break;
        }
        if (o->sent < len && (p.revents & POLLOUT)) {
            size_t c = len - o->sent > 262144 ? 262144 : len - o->sent;
            ssize_t n = send(fd, pings + o->sent, c, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0)
                o->sent += (size_t)n;
            else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                o->closed = CL_RESET;
        }
    }
    if (o->closed)
        o->close_ms = h_now_ms() - t0;
    close(fd);
}

static int flood_round(struct atk *a, long i)
{
    struct flood_out o;
    flood(a->port, 8000, &o);
    if (o.connect_failed || !o.closed) {
        snprintf(a->bad_msg, sizeof(a->bad_msg), "round %ld: %s after %zu PINGs", i,
                 o.connect_failed ? "connect failed" : "not closed", o.sent / PING_LEN);
        return -1;
    }
    return 0;
}

/* pending output of the one other client, from CLIENT LIST (omem=) */
static long other_omem(int fd, const char *addr_port)
{
    struct h_reply *r = h_cmdv(fd, "CLIENT", "LIST", NULL);
    if (r == NULL)
        return -1;
    long v = -1;
    char key[96];
    snprintf(key, sizeof(key), "addr=%s ", addr_port);
    const char *p = strstr(r->v->str, key);
    if (p != NULL) {
        const char *m = strstr(p, " omem=");
        const char *nl = strchr(p, '\n');
        if (m != NULL && (nl == NULL || m < nl))
            v = atol(m + 6);
    }
    h_free(r);
    return v;
}

START_TEST(pipelined_pings_never_read_closed_at_output_limit)
{
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 50\nclient-output-buffer-limit 1mb 512kb 1s\n");
    struct lat u;
    baseline(d.port, "ping-flood", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    pings = malloc((size_t)NPINGS * PING_LEN);
    for (size_t i = 0; i < NPINGS; i++)
        memcpy(pings + i * PING_LEN, PING_MB, PING_LEN);
    struct rss r;
    rss_start(&r, &d);

    struct flood_out o;
    flood(d.port, 10000, &o);
    printf("[hostile] ping-flood: sent 1M x \"*1\\r\\n$4\\r\\nPING\\r\\n\" (never reading, "
           "SO_RCVBUF 4 KB): %zu PINGs (%zu bytes) taken%s, %s after %lld ms\n",
           o.sent / PING_LEN, o.sent, o.sent_ms >= 0 ? " (all)" : "", closed_str(o.closed),
           (long long)o.close_ms);
    h_sleep_ms(200);
    int hard = log_count(&d, "over the hard limit"), soft = log_count(&d, "over the soft limit");
    printf("[hostile] ping-flood: daemon log: %d hard-limit close(s), %d soft-limit close(s)\n",
           hard, soft);
    log_show(&d, "output buffer over", 1);
    ck_assert_msg(!o.connect_failed, "connect failed");
    ck_assert_msg(o.closed != CL_OPEN, "a client that never reads was not closed in 10 s");
    ck_assert_int_ge(hard + soft, 1);

    during(d.port, "ping-flood", &u, flood_round, NULL);
    rss_stop(&r, "ping-flood");
    free(pings);
    pings = NULL;

    /* Large replies: 16 KB of pipelined GETs of a cached 300 KB value (600+
     * replies, 190 MB if all were buffered), never read: closed at the hard
     * limit, and the edge's peak RSS (VmHWM) stays small. */
    {
        int c2 = h_connect(d.port);
        ck_assert_int_ge(c2, 0);
        size_t bl;
        char *bv = filled("", 'w', 300 * 1024, "", &bl);
        struct h_reply *br = h_cmdv(c2, "SET", "big:w", bv, NULL);
        ck_assert_ptr_nonnull(br);
        h_free(br);
        free(bv);
        for (int i = 0; i < 3; i++) { /* into the colo cache */
            br = h_cmdv(c2, "GET", "big:w", NULL);
            ck_assert_ptr_nonnull(br);
            h_free(br);
        }
        close(c2);
        static const char g1[] = "*2\r\n$3\r\nGET\r\n$5\r\nbig:w\r\n";
        size_t ng = 16384 / (sizeof(g1) - 1);
        char *gs = malloc(ng * (sizeof(g1) - 1));
        for (size_t i = 0; i < ng; i++)
            memcpy(gs + i * (sizeof(g1) - 1), g1, sizeof(g1) - 1);
        long hwm0 = h_proc_kb(edges[0], "VmHWM");
        int hard0 = log_count(&d, "over the hard limit");
        int g = connect_nb(d.port, 4096);
        ck_assert_int_ge(g, 0);
        ck_assert_int_eq(send(g, gs, ng * (sizeof(g1) - 1), MSG_NOSIGNAL),
                         (ssize_t)(ng * (sizeof(g1) - 1)));
        free(gs);
        int64_t gend = h_now_ms() + 5000;
        while (log_count(&d, "over the hard limit") == hard0 && h_now_ms() < gend)
            h_sleep_ms(20);
        close(g);
        long hwm = h_proc_kb(edges[0], "VmHWM");
        printf("[hostile] ping-flood/big-GETs: %zu pipelined GETs of a 300 KB value, never read "
               "-> %s; edge VmHWM %ld kB before, %ld kB after\n", ng,
               log_count(&d, "over the hard limit") > hard0 ? "closed at the hard limit"
                                                             : "NOT closed in 5 s",
               hwm0, hwm);
        log_show(&d, "over the hard limit", 1);
        ck_assert_int_gt(log_count(&d, "over the hard limit"), hard0);
        ck_assert_msg(hwm < RSS_LIMIT_KB, "edge peak RSS %ld kB", hwm);
    }

    /* The soft limit alone: GETs of a 200 KB value, one at a time, never
     * read, until the client's pending output (CLIENT LIST omem) is over
     * 512 KB (it stays under the 1 MB hard limit); closed ~1 s later. */
    int ctl = h_connect(d.port);
    ck_assert_int_ge(ctl, 0);
    size_t vl;
    char *val = filled("", 'v', 200 * 1024, "", &vl);
    struct h_reply *sr = h_cmdv(ctl, "SET", "big:v", val, NULL);
    ck_assert_ptr_nonnull(sr);
    h_free(sr);
    free(val);
    int fd = connect_nb(d.port, 4096);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in me;
    socklen_t ml = sizeof(me);
    getsockname(fd, (struct sockaddr *)&me, &ml);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(me.sin_port));
    static const char get[] = "*2\r\n$3\r\nGET\r\n$5\r\nbig:v\r\n";
    long omem = 0;
    int ngets = 0;
    int64_t over_at = -1;
    for (; ngets < 40 && over_at < 0; ngets++) {
        ck_assert_int_eq(send(fd, get, sizeof(get) - 1, MSG_NOSIGNAL), (ssize_t)(sizeof(get) - 1));
        for (int k = 0; k < 20; k++) {
            h_sleep_ms(10);
            omem = other_omem(ctl, addr);
            if (omem > 512 * 1024) {
                over_at = h_now_ms();
                break;
            }
        }
    }
    printf("[hostile] ping-flood/soft: %d GETs of a 200 KB value, never read -> omem %ld bytes\n",
           ngets, omem);
    ck_assert_msg(over_at > 0, "pending output never passed the soft limit (omem %ld)", omem);
    /* Watched from the daemon's side (CLIENT LIST): reading the socket here
     * would drain the output the limit is about. */
    int64_t cat = -1;
    while (h_now_ms() < over_at + 5000) {
        if (other_omem(ctl, addr) < 0) {
            cat = h_now_ms();
            break;
        }
        h_sleep_ms(20);
    }
    close(fd);
    close(ctl);
    printf("[hostile] ping-flood/soft: %s %lld ms after passing 512 KB (soft limit 1 s)\n",
           cat > 0 ? "closed" : "NOT closed", (long long)(cat > 0 ? cat - over_at : -1));
    log_show(&d, "over the soft limit", 1);
    ck_assert_msg(cat > 0, "not closed 5 s over the soft limit");
    ck_assert_msg(cat - over_at >= 800, "closed %lld ms over the soft limit (< 1 s)",
                  (long long)(cat - over_at));
    ck_assert_msg(cat - over_at <= 1000 + 1000, "closed %lld ms over the soft limit (> 2 s)",
                  (long long)(cat - over_at));
    ck_assert_int_ge(log_count(&d, "over the soft limit"), 1);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 7. maxclients + 1 connections
 * ================================================================================ */

#define MAXCL 50
static const char MAXCL_ERR[] = "-ERR max number of clients reached\r\n";

/* A connection over the limit: reads the reply and whether it was closed. */
static int try_extra(int port, char *reply, size_t cap, int *closed, int64_t *close_ms)
{
    struct outcome o;
    blast(port, "", 0, 2000, &o);
    snprintf(reply, cap, "%s", o.nreplies ? o.first_raw : "");
    *closed = o.closed;
    *close_ms = o.close_ms;
    return o.connect_failed ? -1 : 0;
}

static int maxcl_round(struct atk *a, long i)
{
    char reply[256];
    int closed;
    int64_t ms;
    if (try_extra(a->port, reply, sizeof(reply), &closed, &ms) != 0 ||
        strcmp(reply, MAXCL_ERR) != 0 || closed == CL_OPEN) {
        char e[300];
        esc(reply, strlen(reply), e, sizeof(e));
        snprintf(a->bad_msg, sizeof(a->bad_msg), "extra connection got \"%s\", %s", e,
                 closed_str(closed));
        return -1;
    }
    return 0;
}

static int ping_fd(int fd)
{
    struct h_reply *r = h_cmdv(fd, "PING", NULL);
    int ok = r != NULL && r->v->type == RESP_SIMPLE && strcmp(r->raw, "+PONG\r\n") == 0;
    h_free(r);
    return ok;
}

START_TEST(maxclients_plus_one_rejected_then_accepted_again)
{
    struct daemon d;
    char conf[256];
    /* two edges: the limit is for all edges together */
    snprintf(conf, sizeof(conf), "timeout 0\nmaxclients %d\nedge-workers 2\n", MAXCL);
    start(&d, conf);
    struct lat u;
    baseline(d.port, "maxclients", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);

    int normal = h_connect(d.port);
    ck_assert_int_ge(normal, 0);
    ck_assert(ping_fd(normal));
    /* wait until only the normal client and the INFO connection are counted */
    int64_t end = h_now_ms() + 3000;
    while (h_info_int(d.port, "connected_clients") != 2 && h_now_ms() < end)
        h_sleep_ms(20);
    int fds[MAXCL];
    int nf = 0;
    for (; nf < MAXCL - 1; nf++) {
        fds[nf] = h_connect(d.port);
        ck_assert_int_ge(fds[nf], 0);
        ck_assert_msg(ping_fd(fds[nf]), "connection %d of %d was not served", nf + 2, MAXCL);
    }
    char reply[256], e[300];
    int closed;
    int64_t cms;
    ck_assert_int_eq(try_extra(d.port, reply, sizeof(reply), &closed, &cms), 0);
    esc(reply, strlen(reply), e, sizeof(e));
    printf("[hostile] maxclients: %d connections open (maxclients %d), connection %d got \"%s\", "
           "%s after %lld ms\n", nf + 1, MAXCL, MAXCL + 1, e, closed_str(closed), (long long)cms);
    ck_assert_str_eq(reply, MAXCL_ERR);
    ck_assert_int_ne(closed, CL_OPEN);

    /* The normal client (connected before the limit) keeps being served while
     * new connections hammer the full server. */
    struct atk a;
    struct lat L;
    long rounds = 0;
    for (int attempt = 1; attempt <= LAT_ATTEMPTS; attempt++) {
        char l[64];
        snprintf(l, sizeof(l), "maxclients during (attempt %d)", attempt);
        atk_start(&a, d.port, maxcl_round, NULL);
        measure_fd(normal, l, &L);
        atk_stop(&a, "maxclients");
        rounds += a.rounds;
        report_latency("maxclients", &u, &L);
        if (lat_within(&u, &L))
            break;
    }
    assert_latency("maxclients", &u, &L);
    int64_t rej = h_info_int(d.port, "rejected_connections");
    (void)rej; /* INFO needs a connection: over the limit it is refused */

    /* Close 10; 10 new ones are accepted (bounded retry while the daemon
     * notices the closes), and the 11th is refused again. */
    for (int i = 0; i < 10; i++)
        close(fds[--nf]);
    int accepted = 0;
    end = h_now_ms() + 3000;
    while (accepted < 10 && h_now_ms() < end) {
        int fd = h_connect(d.port);
        if (fd >= 0 && ping_fd(fd)) {
            fds[nf++] = fd;
            accepted++;
        } else {
            if (fd >= 0)
                close(fd);
            h_sleep_ms(20);
        }
    }
    ck_assert_int_eq(try_extra(d.port, reply, sizeof(reply), &closed, &cms), 0);
    esc(reply, strlen(reply), e, sizeof(e));
    printf("[hostile] maxclients: after closing 10, %d new connections accepted; the next got "
           "\"%s\", %s\n", accepted, e, closed_str(closed));
    ck_assert_int_eq(accepted, 10);
    ck_assert_str_eq(reply, MAXCL_ERR);
    for (int i = 0; i < nf; i++)
        close(fds[i]);
    close(normal);
    end = h_now_ms() + 3000;
    while (!h_ping(d.port) && h_now_ms() < end)
        h_sleep_ms(20);
    rej = h_info_int(d.port, "rejected_connections");
    printf("[hostile] maxclients: INFO rejected_connections %lld\n", (long long)rej);
    ck_assert_int_ge(rej, 2 + rounds);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 8. 2,000 idle connections (slowloris)
 * ================================================================================ */

#define IDLE_N 2000

START_TEST(idle_connections_2000_normal_client_served_then_timed_out)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < IDLE_N + 500) {
        rl.rlim_cur = rl.rlim_max < IDLE_N + 1000 ? rl.rlim_max : IDLE_N + 1000;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    ck_assert_msg(rl.rlim_cur >= IDLE_N + 100, "RLIMIT_NOFILE %llu too low",
                  (unsigned long long)rl.rlim_cur);
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 3000\n");
    struct lat u;
    baseline(d.port, "slowloris", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    struct rss r;
    rss_start(&r, &d);

    int *fds = calloc(IDLE_N, sizeof(int));
    int64_t *at = calloc(IDLE_N, sizeof(int64_t)), *cat = calloc(IDLE_N, sizeof(int64_t));
    /* Connected in batches of 100, each waited for until the daemon has
     * accepted it: a faster burst overflows the listen queue (the edge's
     * evconnlistener re-listens with libevent's backlog of 128) and the
     * kernel drops SYNs, which costs those clients a 1 s retransmit. */
    int64_t t0 = h_now_ms();
    int n = 0, stalls = 0;
    while (n < IDLE_N && h_now_ms() < t0 + 15000) {
        int b = 0;
        for (; b < 100 && n < IDLE_N; b++, n++) {
            int64_t c0 = h_now_ms();
            fds[n] = h_connect(d.port);
            if (fds[n] < 0)
                break;
            at[n] = h_now_ms();
            if (at[n] - c0 > 500)
                stalls++;
        }
        if (b < 100 && n < IDLE_N)
            break;
        int64_t wend = h_now_ms() + 3000;
        while (h_info_int(d.port, "connected_clients") < n + 1 && h_now_ms() < wend)
            h_sleep_ms(2);
    }
    int64_t t1 = h_now_ms();
    int64_t conn = h_info_int(d.port, "connected_clients");
    printf("[hostile] slowloris: opened %d idle connections (sending nothing) in %lld ms, %d "
           "connect(s) took over 500 ms; INFO connected_clients %lld\n", n,
           (long long)(t1 - t0), stalls, (long long)conn);
    ck_assert_int_eq(n, IDLE_N);
    ck_assert_msg(t1 - at[0] < 1500, "connecting took %lld ms: the first ones time out before "
                  "the measurement", (long long)(t1 - at[0]));
    ck_assert_int_ge(conn, IDLE_N);

    struct lat L1, L2;
    measure(d.port, "slowloris during (idle)", &L1);
    report_latency("slowloris (idle)", &u, &L1);
    /* again across the timeout: the first connections close ~2 s after open */
    int64_t w = at[0] + 1950 - h_now_ms();
    if (w > 0)
        h_sleep_ms((int)w);
    measure(d.port, "slowloris during (timeouts firing)", &L2);
    report_latency("slowloris (timeouts firing)", &u, &L2);

    int replies = 0;
    int closed = wait_closed(fds, n, at[n - 1] + 2000 + 4000, cat, &replies);
    int64_t mn = -1, mx = -1;
    int early = 0;
    for (int i = 0; i < n; i++) {
        if (cat[i] < 0)
            continue;
        int64_t t = cat[i] - at[i];
        if (t < 1900)
            early++;
        if (mn < 0 || t < mn)
            mn = t;
        if (t > mx)
            mx = t;
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    printf("[hostile] slowloris: %d of %d closed by the daemon, idle time at close %lld..%lld ms "
           "(timeout 2000 ms), %d before 1900 ms, %d got bytes\n",
           closed, n, (long long)mn, (long long)mx, early, replies);
    rss_stop(&r, "slowloris");
    free(fds);
    free(at);
    free(cat);
    assert_latency("slowloris (idle)", &u, &L1);
    assert_latency("slowloris (timeouts firing)", &u, &L2);
    ck_assert_int_eq(closed, IDLE_N);
    ck_assert_int_eq(early, 0);
    ck_assert_int_eq(replies, 0);
    ck_assert_msg(mx <= 2000 + 1500, "closed late: %lld ms idle", (long long)mx);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 9. Wrong arity and unknown commands: error, connection kept
 * ================================================================================ */

struct cmd_case {
    const char *what;
    const char *data;
    const char *reply;  /* exact expected reply */
};

static const struct cmd_case cmd_cases[] = {
    {"GET (no key)", "*1\r\n$3\r\nGET\r\n",
     "-ERR wrong number of arguments for 'get' command\r\n"},
    {"GET a b", "*3\r\n$3\r\nGET\r\n$1\r\na\r\n$1\r\nb\r\n",
     "-ERR wrong number of arguments for 'get' command\r\n"},
    {"SET k", "*2\r\n$3\r\nSET\r\n$1\r\nk\r\n",
     "-ERR wrong number of arguments for 'set' command\r\n"},
    {"inline 'incrby n'", "incrby n\r\n",
     "-ERR wrong number of arguments for 'incrby' command\r\n"},
    {"EXPIRE k", "*2\r\n$6\r\nEXPIRE\r\n$1\r\nk\r\n",
     "-ERR wrong number of arguments for 'expire' command\r\n"},
    {"FOOBAR a b", "*3\r\n$6\r\nFOOBAR\r\n$1\r\na\r\n$1\r\nb\r\n",
     "-ERR unknown command 'FOOBAR', with args beginning with: 'a' 'b' \r\n"},
    {"inline 'nosuchcmd'", "nosuchcmd\r\n",
     "-ERR unknown command 'nosuchcmd', with args beginning with: \r\n"},
    /* a command name with CRLF inside must not inject a reply */
    {"'FOO\\r\\n+OK\\r\\n' (CRLF in the name)", "*1\r\n$10\r\nFOO\r\n+OK\r\n\r\n",
     "-ERR unknown command 'FOO  +OK  ', with args beginning with: \r\n"},
};
#define NCMD ((int)(sizeof(cmd_cases) / sizeof(cmd_cases[0])))

/* Each case then a PING on the same connection: the error, then +PONG. */
static int cmd_one(int port, const struct cmd_case *cc, struct outcome *o)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s*1\r\n$4\r\nPING\r\n", cc->data);
    blast(port, buf, strlen(buf), 100, o);
    if (o->nreplies != 2 || strcmp(o->first_raw, cc->reply) != 0 || o->closed != CL_OPEN ||
        strcmp(o->last, "+PONG\\r\\n") != 0)
        return -1;
    return 0;
}

static int cmd_round(struct atk *a, long i)
{
    const struct cmd_case *cc = &cmd_cases[i % NCMD];
    struct outcome o;
    if (cmd_one(a->port, cc, &o) != 0) {
        snprintf(a->bad_msg, sizeof(a->bad_msg), "%s: got \"%s\" then \"%s\", %s", cc->what,
                 o.first, o.last, closed_str(o.closed));
        return -1;
    }
    return 0;
}

START_TEST(wrong_arity_and_unknown_commands_error_and_keep_connection)
{
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 50\n");
    struct lat u;
    baseline(d.port, "arity", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    for (int i = 0; i < NCMD; i++) {
        struct outcome o;
        int rc = cmd_one(d.port, &cmd_cases[i], &o);
        char want[200];
        esc(cmd_cases[i].reply, strlen(cmd_cases[i].reply), want, sizeof(want));
        printf("[hostile] arity: sent %s + PING -> \"%s\" then \"%s\", %s\n", cmd_cases[i].what,
               o.first, o.last, o.closed == CL_OPEN ? "connection kept" : closed_str(o.closed));
        ck_assert_msg(rc == 0, "%s: expected \"%s\" then +PONG on a kept connection", 
                      cmd_cases[i].what, want);
    }
    /* A long unknown command with many arguments: one error line, kept. */
    {
        char *p = malloc(64 * 1024);
        size_t n = (size_t)snprintf(p, 64 * 1024, "*1001\r\n$200\r\n");
        memset(p + n, 'Z', 200);
        n += 200;
        memcpy(p + n, "\r\n", 2);
        n += 2;
        for (int i = 0; i < 1000; i++)
            n += (size_t)snprintf(p + n, 64 * 1024 - n, "$10\r\narg%07d\r\n", i);
        n += (size_t)snprintf(p + n, 64 * 1024 - n, "*1\r\n$4\r\nPING\r\n");
        struct outcome o;
        blast(d.port, p, n, 100, &o);
        free(p);
        print_outcome("arity", "unknown 200-byte command name with 1000 args + PING", &o);
        ck_assert_int_eq(o.nreplies, 2);
        ck_assert_int_eq(o.closed, CL_OPEN);
        ck_assert(strncmp(o.first_raw, "-ERR unknown command '", 22) == 0);
        ck_assert_msg(strlen(o.first_raw) < 512, "error line %zu bytes", strlen(o.first_raw));
        ck_assert_str_eq(o.last, "+PONG\\r\\n");
    }
    during(d.port, "arity", &u, cmd_round, NULL);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* ================================================================================
 * 10. INCRBY overflow and negative EXPIRE
 * ================================================================================ */

struct step {
    const char *words[6];
    const char *reply;
};

static const struct step num_steps[] = {
    {{"SET", "n", "9223372036854775807"}, "+OK\r\n"},
    {{"INCRBY", "n", "1"}, "-ERR increment or decrement would overflow\r\n"},
    {{"INCR", "n"}, "-ERR increment or decrement would overflow\r\n"},
    {{"GET", "n"}, "$19\r\n9223372036854775807\r\n"},
    {{"SET", "m", "-9223372036854775808"}, "+OK\r\n"},
    {{"DECR", "m"}, "-ERR increment or decrement would overflow\r\n"},
    {{"INCRBY", "m", "-1"}, "-ERR increment or decrement would overflow\r\n"},
    {{"DECRBY", "m", "-9223372036854775808"}, "-ERR decrement would overflow\r\n"},
    {{"INCRBY", "n", "9223372036854775808"}, "-ERR value is not an integer or out of range\r\n"},
    {{"INCRBY", "n", "abc"}, "-ERR value is not an integer or out of range\r\n"},
    {{"SET", "s", "abc"}, "+OK\r\n"},
    {{"INCR", "s"}, "-ERR value is not an integer or out of range\r\n"},
    {{"SET", "k", "v"}, "+OK\r\n"},
    {{"EXPIRE", "k", "-1"}, ":1\r\n"},
    {{"GET", "k"}, "$-1\r\n"},
    {{"EXISTS", "k"}, ":0\r\n"},
    {{"EXPIRE", "k", "-1"}, ":0\r\n"},
    {{"SET", "k2", "v"}, "+OK\r\n"},
    {{"PEXPIRE", "k2", "-100"}, ":1\r\n"},
    {{"GET", "k2"}, "$-1\r\n"},
    {{"SET", "k3", "v"}, "+OK\r\n"},
    {{"EXPIRE", "k3", "9223372036854775807"}, "-ERR invalid expire time in 'expire' command\r\n"},
    {{"EXPIRE", "k3", "-9223372036854775808"}, "-ERR invalid expire time in 'expire' command\r\n"},
    {{"GET", "k3"}, "$1\r\nv\r\n"},
    {{"SET", "k4", "v", "EX", "-1"}, "-ERR invalid expire time in 'set' command\r\n"},
    {{"SET", "k4", "v", "EX", "0"}, "-ERR invalid expire time in 'set' command\r\n"},
    {{"GET", "k4"}, "$-1\r\n"},
};
#define NSTEPS ((int)(sizeof(num_steps) / sizeof(num_steps[0])))

/* Runs the steps with keys prefixed by `pre`; 0 or -1 with *fail = the step. */
static int run_steps(int fd, const char *pre, int verbose, int *fail, char *got, size_t cap)
{
    for (int i = 0; i < NSTEPS; i++) {
        const struct step *s = &num_steps[i];
        const char *w[6];
        char key[64];
        int n = 0;
        for (; n < 6 && s->words[n] != NULL; n++)
            w[n] = s->words[n];
        snprintf(key, sizeof(key), "%s%s", pre, s->words[1]);
        w[1] = key;
        struct h_reply *r = h_cmd(fd, n, w);
        const char *raw = r != NULL ? r->raw : "(no reply)";
        esc(raw, strlen(raw), got, cap);
        if (verbose) {
            char cmd[160] = "";
            size_t o = 0;
            for (int j = 0; j < n; j++)
                o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, "%s%s", j ? " " : "", w[j]);
            printf("[hostile] numbers: %s -> \"%s\"\n", cmd, got);
        }
        int ok = r != NULL && strcmp(r->raw, s->reply) == 0;
        h_free(r);
        if (!ok) {
            *fail = i;
            return -1;
        }
    }
    return 0;
}

static int num_round(struct atk *a, long i)
{
    int fd = h_connect(a->port);
    if (fd < 0) {
        snprintf(a->bad_msg, sizeof(a->bad_msg), "connect failed");
        return -1;
    }
    char pre[32], got[200];
    snprintf(pre, sizeof(pre), "atk%ld:", i);
    int fail = -1;
    int rc = run_steps(fd, pre, 0, &fail, got, sizeof(got));
    close(fd);
    if (rc != 0)
        snprintf(a->bad_msg, sizeof(a->bad_msg), "step %d (%s %s): got \"%s\"", fail,
                 num_steps[fail].words[0], num_steps[fail].words[1], got);
    return rc;
}

START_TEST(incrby_overflow_and_negative_expire_get_redis_replies)
{
    struct daemon d;
    start(&d, "timeout 2s\nmaxclients 50\n");
    struct lat u;
    baseline(d.port, "numbers", &u);
    pid_t edges[16];
    int ne = edge_pids(&d, edges, 16);
    int fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
    int fail = -1;
    char got[200];
    int rc = run_steps(fd, "", 1, &fail, got, sizeof(got));
    if (rc != 0) {
        char want[200];
        esc(num_steps[fail].reply, strlen(num_steps[fail].reply), want, sizeof(want));
        close(fd);
        ck_abort_msg("%s %s: expected \"%s\", got \"%s\"", num_steps[fail].words[0],
                     num_steps[fail].words[1], want, got);
    }
    ck_assert(ping_fd(fd)); /* the connection is kept after every error */
    close(fd);
    during(d.port, "numbers", &u, num_round, NULL);
    assert_daemon_fine(&d, edges, ne);
    stop(&d);
}
END_TEST

/* Check forks each test and a failed assertion ends the child: keep every
 * report line, so line-buffer stdout in the child. */

Suite *hostile_conn_suite(void)
{
    Suite *s = suite_create("hostile_conn");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"ping_flood", pipelined_pings_never_read_closed_at_output_limit},
        {"maxclients", maxclients_plus_one_rejected_then_accepted_again},
        {"slowloris", idle_connections_2000_normal_client_served_then_timed_out},
        {"arity", wrong_arity_and_unknown_commands_error_and_keep_connection},
        {"numbers", incrby_overflow_and_negative_expire_get_redis_replies},
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
