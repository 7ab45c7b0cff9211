/*
 * check_compat.c - Redis 7.0 compatibility of what issue 13 lists beyond the
 * data commands, against the real daemon: the protocol and error texts
 * (each expected reply here was read from redis-server 7.0.15), CLIENT
 * LIST / INFO / KILL across edges, INFO's Redis sections summed over
 * processes, WAIT, MONITOR and CLIENT META / GETMETA.  The fixture runs two
 * edges, so what spans edges is tested across them (h_edge_pair).
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/harness.h"

#define FIXTURE "edge-workers 2\nhot-owners 1\ncold-owners 1\n"

static struct daemon d;
static int fd = -1;

static void up(void)
{
    ck_assert_int_eq(h_start(&d, FIXTURE), 0);
    fd = h_connect(d.port);
    ck_assert_int_ge(fd, 0);
}

static void down(void)
{
    if (fd >= 0)
        close(fd);
    fd = -1;
    ck_assert_int_eq(WEXITSTATUS(h_stop(&d)), 0);
}

/* The reply to words on fd must be exactly `raw`. */
#define EXPECT_ON(cfd, want_, ...)                                                \
    do {                                                                          \
        struct h_reply *r_ = h_call(cfd, __VA_ARGS__, NULL);                      \
        ck_assert_msg(strcmp(r_->raw, want_) == 0, "%s: expected %s, got %s", #__VA_ARGS__, \
                      want_, r_->raw);                                            \
        h_free(r_);                                                               \
    } while (0)
#define EXPECT(want_, ...) EXPECT_ON(fd, want_, __VA_ARGS__)

/* Sends raw bytes and returns the next reply (NULL if the connection
 * closed or nothing came). */
static struct h_reply *raw_cmd(int cfd, const char *bytes, size_t n)
{
    ck_assert_int_eq(h_send(cfd, bytes, n), 0);
    return h_read(cfd);
}

#define EXPECT_RAW(bytes, want_)                                                  \
    do {                                                                          \
        struct h_reply *r_ = raw_cmd(fd, bytes, sizeof(bytes) - 1);               \
        ck_assert_msg(r_ != NULL, "no reply to %s", #bytes);                      \
        ck_assert_msg(strcmp(r_->raw, want_) == 0, "%s: expected %s, got %s", #bytes, want_, \
                      r_->raw);                                                   \
        h_free(r_);                                                               \
    } while (0)

/* ---- the protocol ------------------------------------------------------------- */

START_TEST(negative_multibulk_count_is_skipped)
{
    up();
    EXPECT_RAW("*-10\r\n*1\r\n$4\r\nPING\r\n", "+PONG\r\n");
    EXPECT_RAW("*-2147483648\r\nPING\r\n", "+PONG\r\n");
    down();
}
END_TEST

START_TEST(errors_quote_arguments_as_redis)
{
    up();
    char l300[301], want[512];
    memset(l300, 'L', 300);
    l300[300] = '\0';
    /* unknown command: the arguments while the text is under 128 bytes */
    snprintf(want, sizeof(want),
             "-ERR unknown command 'FOOBAR', with args beginning with: '%.128s' \r\n", l300);
    EXPECT(want, "FOOBAR", l300, "x");
    /* an argument quoted at the end loses its line ending (Redis trims) */
    EXPECT_RAW("*4\r\n$6\r\nEXPIRE\r\n$1\r\nk\r\n$3\r\n100\r\n$3\r\nx\r\n\r\n",
               "-ERR Unsupported option x\r\n");
    /* and is quoted whole */
    snprintf(want, sizeof(want), "-ERR Unsupported option %s\r\n", l300);
    EXPECT(want, "EXPIRE", "k", "100", l300);
    down();
}
END_TEST

/* ---- connection commands ---------------------------------------------------------- */

START_TEST(select_answers_redis_errors)
{
    up();
    EXPECT("+OK\r\n", "SELECT", "0");
    EXPECT("-ERR value is not an integer or out of range\r\n", "SELECT", "abc");
    EXPECT("-ERR value is not an integer or out of range\r\n", "SELECT", "");
    EXPECT("-ERR value is not an integer or out of range\r\n", "SELECT", "00");
    EXPECT("-ERR value is out of range, value must between -2147483648 and 2147483647\r\n",
           "SELECT", "99999999999");
    EXPECT("-ERR DB index is out of range\r\n", "SELECT", "1");
    EXPECT("-ERR DB index is out of range\r\n", "SELECT", "-1");
    down();
}
END_TEST

START_TEST(hello_runs_its_options_in_order)
{
    up();
    EXPECT("-ERR Protocol version is not an integer or out of range\r\n", "HELLO", "abc");
    EXPECT("-ERR Protocol version is not an integer or out of range\r\n", "HELLO", "02");
    EXPECT("-NOPROTO unsupported protocol version\r\n", "HELLO", "4");
    EXPECT("-NOPROTO unsupported protocol version\r\n", "HELLO", "-1");
    /* AUTH is tried as it is read: a bad password before a bad option */
    EXPECT("-WRONGPASS invalid username-password pair or user is disabled.\r\n", "HELLO", "2",
           "AUTH", "nobody", "pw", "h:3");
    EXPECT("-ERR Syntax error in HELLO option 'h:3'\r\n", "HELLO", "2", "h:3", "AUTH", "nobody",
           "pw");
    /* a name set before a bad option stays set, as in Redis */
    EXPECT("-ERR Syntax error in HELLO option 'bogus'\r\n", "HELLO", "3", "SETNAME", "early",
           "bogus");
    EXPECT("$5\r\nearly\r\n", "CLIENT", "GETNAME");
    down();
}
END_TEST

START_TEST(client_setname_takes_any_length)
{
    up();
    char name[1001];
    memset(name, 'x', 1000);
    name[1000] = '\0';
    EXPECT("+OK\r\n", "CLIENT", "SETNAME", name);
    struct h_reply *r = h_call(fd, "CLIENT", "GETNAME", NULL);
    ck_assert_int_eq(r->v->len, 1000);
    h_free(r);
    EXPECT("-ERR Client names cannot contain spaces, newlines or special characters.\r\n",
           "CLIENT", "SETNAME", "a b");
    EXPECT("+OK\r\n", "CLIENT", "SETNAME", "");
    EXPECT("$-1\r\n", "CLIENT", "GETNAME");
    down();
}
END_TEST

/* ---- subcommands ------------------------------------------------------------------ */

START_TEST(subcommand_errors_are_redis_texts)
{
    up();
    EXPECT("-ERR wrong number of arguments for 'config|get' command\r\n", "CONFIG", "GET");
    EXPECT("-ERR wrong number of arguments for 'config' command\r\n", "CONFIG");
    EXPECT("-ERR wrong number of arguments for 'client' command\r\n", "CLIENT");
    EXPECT("-ERR wrong number of arguments for 'client|setname' command\r\n", "CLIENT",
           "SETNAME");
    EXPECT("-ERR wrong number of arguments for 'client|id' command\r\n", "CLIENT", "ID", "x");
    EXPECT("-ERR wrong number of arguments for 'command|count' command\r\n", "COMMAND", "COUNT",
           "x");
    EXPECT("-ERR unknown subcommand 'bogus'. Try CONFIG HELP.\r\n", "CONFIG", "bogus");
    EXPECT("-ERR unknown subcommand 'BOGUS'. Try CLIENT HELP.\r\n", "client", "BOGUS");
    EXPECT("-ERR unknown subcommand 'bogus'. Try COMMAND HELP.\r\n", "COMMAND", "bogus", "x");
    EXPECT("-ERR syntax error\r\n", "CLIENT", "LIST", "x");
    EXPECT("-ERR Unknown client type 'bogus'\r\n", "CLIENT", "LIST", "TYPE", "bogus");
    EXPECT("-ERR Invalid client ID\r\n", "CLIENT", "LIST", "ID", "1", "abc");
    EXPECT("-ERR syntax error\r\n", "CONFIG", "SET", "timeout", "0", "bogus");
    down();
}
END_TEST

START_TEST(config_set_refuses_with_redis_texts)
{
    up();
    EXPECT("-ERR Unknown option or number of arguments for CONFIG SET - 'nonexistent'\r\n",
           "CONFIG", "SET", "nonexistent", "1");
    EXPECT("-ERR Unknown option or number of arguments for CONFIG SET - ''\r\n", "CONFIG", "SET",
           "", "");
    /* every name is checked before any value */
    EXPECT("-ERR Unknown option or number of arguments for CONFIG SET - 'bogus'\r\n", "CONFIG",
           "SET", "timeout", "abc", "bogus", "1");
    EXPECT("-ERR CONFIG SET failed (possibly related to argument 'TIMEOUT') - duplicate "
           "parameter\r\n", "CONFIG", "SET", "timeout", "1", "TIMEOUT", "2");
    EXPECT("-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't "
           "be parsed into an integer\r\n", "CONFIG", "SET", "TIMEOUT", "abc");
    EXPECT("-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't "
           "be parsed into an integer\r\n", "CONFIG", "SET", "timeout", "abc");
    /* a NUL in the value: Redis's reason for the option, not a text check */
    EXPECT_RAW("*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$7\r\ntimeout\r\n$2\r\n7\0\r\n",
               "-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument "
               "couldn't be parsed into an integer\r\n");
    EXPECT("-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument must be "
           "between 0 and 2147483647 inclusive\r\n", "CONFIG", "SET", "timeout", "-1");
    EXPECT("-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument "
           "couldn't be parsed into an integer\r\n", "CONFIG", "SET", "maxclients", "abc");
    EXPECT("-ERR CONFIG SET failed (possibly related to argument 'protected-mode') - argument "
           "must be 'yes' or 'no'\r\n", "CONFIG", "SET", "protected-mode", "maybe");
    EXPECT("-ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - "
           "argument must be a memory value\r\n", "CONFIG", "SET", "client-query-buffer-limit",
           "abc");
    EXPECT("+OK\r\n", "CONFIG", "SET", "TIMEOUT", "0");
    down();
}
END_TEST

START_TEST(config_get_echoes_the_name_asked)
{
    up();
    EXPECT("*2\r\n$10\r\nMAXCLIENTS\r\n$5\r\n10000\r\n", "CONFIG", "GET", "MAXCLIENTS");
    EXPECT("*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n", "CONFIG", "GET", "MAXCLI*");
    /* a directive asked twice is listed once, as first asked */
    EXPECT("*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n", "CONFIG", "GET", "maxclients",
           "MAXCLIENTS");
    EXPECT("*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n", "CONFIG", "GET", "timeout");
    down();
}
END_TEST

/* ---- string commands' edge cases ------------------------------------------------- */

START_TEST(repeated_expiry_option_takes_the_last)
{
    up();
    EXPECT("+OK\r\n", "SET", "k", "v", "EX", "100", "EX", "5000");
    struct h_reply *r = h_call(fd, "TTL", "k", NULL);
    ck_assert_msg(r->v->integer > 4000 && r->v->integer <= 5000, "TTL %s", r->raw);
    h_free(r);
    EXPECT("-ERR syntax error\r\n", "SET", "k", "v", "EX", "100", "PX", "200");
    EXPECT("$1\r\nv\r\n", "GETEX", "k", "PX", "100000", "PX", "9000000");
    r = h_call(fd, "TTL", "k", NULL);
    ck_assert_msg(r->v->integer > 8000 && r->v->integer <= 9000, "TTL %s", r->raw);
    h_free(r);
    down();
}
END_TEST

START_TEST(getex_of_a_missing_key_is_nil_before_its_expiry_is_checked)
{
    up();
    EXPECT("$-1\r\n", "GETEX", "missing", "EX", "abc");
    EXPECT("$-1\r\n", "GETEX", "missing", "EX", "0");
    EXPECT("+OK\r\n", "SET", "kk", "v");
    EXPECT("-ERR value is not an integer or out of range\r\n", "GETEX", "kk", "EX", "abc");
    EXPECT("-ERR invalid expire time in 'getex' command\r\n", "GETEX", "kk", "EX", "0");
    EXPECT(":-1\r\n", "TTL", "kk");
    EXPECT("-ERR syntax error\r\n", "GETEX", "missing", "EX");
    down();
}
END_TEST

START_TEST(incr_of_a_value_with_a_nul_is_not_an_integer)
{
    up();
    EXPECT_RAW("*3\r\n$3\r\nSET\r\n$1\r\nn\r\n$2\r\n3\0\r\n", "+OK\r\n");
    EXPECT("-ERR value is not an integer or out of range\r\n", "INCR", "n");
    EXPECT("+OK\r\n", "SET", "m", "-0");
    EXPECT("-ERR value is not an integer or out of range\r\n", "INCRBY", "m", "1");
    EXPECT("+OK\r\n", "SET", "o", "9223372036854775807");
    EXPECT("-ERR increment or decrement would overflow\r\n", "INCR", "o");
    down();
}
END_TEST

START_TEST(scan_reads_its_cursor_as_redis)
{
    up();
    EXPECT("+OK\r\n", "SET", "a", "1");
    EXPECT("*2\r\n$1\r\n0\r\n*0\r\n", "SCAN", "-1");
    struct h_reply *r = h_call(fd, "SCAN", "", "COUNT", "1000", NULL);
    ck_assert_msg(r->v->type == RESP_ARRAY && r->v->n == 2, "SCAN \"\": %s", r->raw);
    h_free(r);
    r = h_call(fd, "SCAN", "+0", NULL);
    ck_assert_msg(r->v->type == RESP_ARRAY && r->v->n == 2, "SCAN +0: %s", r->raw);
    h_free(r);
    EXPECT("-ERR invalid cursor\r\n", "SCAN", " 0");
    EXPECT("-ERR invalid cursor\r\n", "SCAN", "1.5");
    EXPECT("-ERR invalid cursor\r\n", "SCAN", "18446744073709551616");
    down();
}
END_TEST

/* ---- CLIENT across edges -------------------------------------------------------- */

/* The value of `field` in a CLIENT INFO / LIST line (copied into out). */
static const char *field_of(const char *line, const char *field, char *out, size_t len)
{
    char key[64];
    snprintf(key, sizeof(key), " %s=", field);
    const char *p = strstr(line, key);
    if (p == NULL && strncmp(line, key + 1, strlen(key) - 1) == 0)
        p = line - 1;
    ck_assert_msg(p != NULL, "no %s= in %s", field, line);
    p += strlen(key);
    size_t n = strcspn(p, " \n");
    snprintf(out, len, "%.*s", (int)n, p);
    return out;
}

/* Two connections on different edges, named alpha and beta. */
static void named_pair(int *a, int *b)
{
    ck_assert_int_eq(h_edge_pair(&d, a, b), 0);
    EXPECT_ON(*a, "+OK\r\n", "CLIENT", "SETNAME", "alpha");
    EXPECT_ON(*b, "+OK\r\n", "CLIENT", "SETNAME", "beta");
}

START_TEST(client_list_shows_the_clients_of_every_edge)
{
    up();
    int a, b;
    named_pair(&a, &b);
    struct h_reply *r = h_call(a, "CLIENT", "LIST", NULL);
    ck_assert_msg(strstr(r->raw, "name=alpha") && strstr(r->raw, "name=beta"),
                  "CLIENT LIST on one edge misses the other's client: %s", r->raw);
    /* Redis 7.0's fields, in its order, on every line */
    static const char fields[] =
        "id= addr= laddr= fd= name= age= idle= flags= db= sub= psub= ssub= multi= qbuf= "
        "qbuf-free= argv-mem= multi-mem= rbs= rbp= obl= oll= omem= tot-mem= events= cmd= "
        "user= redir= resp=";
    for (const char *line = r->v->str; line < r->v->str + r->v->len;) {
        const char *nl = memchr(line, '\n', (size_t)(r->v->str + r->v->len - line));
        ck_assert_ptr_nonnull(nl);
        char got[1024] = "", *g = got;
        for (const char *p = line; p < nl;) {
            const char *eq = memchr(p, '=', (size_t)(nl - p));
            const char *sp = memchr(p, ' ', (size_t)(nl - p));
            ck_assert_ptr_nonnull(eq);
            g += snprintf(g, sizeof(got) - (size_t)(g - got), "%s%.*s", g == got ? "" : " ",
                          (int)(eq - p + 1), p);
            p = sp != NULL ? sp + 1 : nl;
        }
        ck_assert_str_eq(got, fields);
        line = nl + 1;
    }
    h_free(r);
    char id_a[32], id_b[32];
    r = h_call(b, "CLIENT", "INFO", NULL);
    ck_assert_str_eq(field_of(r->v->str, "cmd", id_a, sizeof(id_a)), "client|info");
    ck_assert_str_eq(field_of(r->v->str, "name", id_a, sizeof(id_a)), "beta");
    field_of(r->v->str, "id", id_b, sizeof(id_b));
    h_free(r);
    r = h_call(a, "CLIENT", "ID", NULL);
    snprintf(id_a, sizeof(id_a), "%lld", (long long)r->v->integer);
    h_free(r);
    ck_assert_str_ne(id_a, id_b); /* ids are unique on the host */
    /* CLIENT LIST ID finds the other edge's client */
    r = h_call(a, "CLIENT", "LIST", "ID", id_b, NULL);
    ck_assert_msg(strstr(r->raw, "name=beta") && !strstr(r->raw, "name=alpha"), "%s", r->raw);
    h_free(r);
    close(a);
    close(b);
    down();
}
END_TEST

START_TEST(client_kill_closes_a_client_of_another_edge)
{
    up();
    int a, b;
    named_pair(&a, &b);
    char id_b[32], addr_b[64];
    struct h_reply *r = h_call(b, "CLIENT", "INFO", NULL);
    field_of(r->v->str, "id", id_b, sizeof(id_b));
    field_of(r->v->str, "addr", addr_b, sizeof(addr_b));
    h_free(r);
    EXPECT_ON(a, ":0\r\n", "CLIENT", "KILL", "ID", "999999");
    EXPECT_ON(a, ":1\r\n", "CLIENT", "KILL", "ID", id_b);
    /* answered once it is done: b is closed, and gone from every list */
    ck_assert_msg(h_cmdv(b, "PING", NULL) == NULL, "the killed client still answers");
    r = h_call(a, "CLIENT", "LIST", NULL);
    ck_assert_msg(strstr(r->raw, "name=beta") == NULL, "killed client still listed: %s", r->raw);
    h_free(r);
    close(b);
    /* the old form, by address, and USER with SKIPME */
    ck_assert_int_eq(h_edge_pair(&d, &b, &fd), 0);
    close(fd);
    fd = h_connect(d.port);
    r = h_call(b, "CLIENT", "INFO", NULL);
    field_of(r->v->str, "addr", addr_b, sizeof(addr_b));
    h_free(r);
    EXPECT_ON(a, "+OK\r\n", "CLIENT", "KILL", addr_b);
    ck_assert_msg(h_cmdv(b, "PING", NULL) == NULL, "killed by address, still answers");
    close(b);
    EXPECT_ON(a, "-ERR No such client\r\n", "CLIENT", "KILL", addr_b);
    EXPECT_ON(a, "-ERR No such user 'nobody'\r\n", "CLIENT", "KILL", "USER", "nobody");
    EXPECT_ON(a, "-ERR client-id should be greater than 0\r\n", "CLIENT", "KILL", "ID", "abc");
    r = h_call(a, "CLIENT", "KILL", "USER", "default", "SKIPME", "yes", NULL);
    ck_assert_msg(r->v->type == RESP_INT && r->v->integer >= 1, "%s", r->raw);
    h_free(r);
    EXPECT_ON(a, "+PONG\r\n", "PING"); /* skipped itself */
    ck_assert_msg(h_cmdv(fd, "PING", NULL) == NULL, "USER default left a client open");
    close(a);
    down();
}
END_TEST

/* ---- INFO ------------------------------------------------------------------------ */

/* INFO [section] on cfd as a NUL-terminated string (the caller frees). */
static char *info_on(int cfd, const char *section)
{
    struct h_reply *r = section ? h_call(cfd, "INFO", section, NULL) : h_call(cfd, "INFO", NULL);
    ck_assert_msg(r->v->type == RESP_BULK, "INFO: %s", r->raw);
    char *t = strndup(r->v->str, r->v->len);
    h_free(r);
    return t;
}

/* The value of "field:" in an INFO text, as a number (-1 if absent). */
static double info_num(const char *text, const char *field)
{
    char key[128];
    snprintf(key, sizeof(key), "\n%s:", field);
    const char *p = strstr(text, key);
    return p != NULL ? atof(p + strlen(key)) : -1;
}

START_TEST(info_has_redis_sections_in_redis_order)
{
    up();
    char *t = info_on(fd, NULL);
    static const char *const order[] = {"# Server", "# Clients", "# Memory", "# Persistence",
                                        "# Stats", "# Replication", "# CPU", "# Modules",
                                        "# Errorstats", "# Cluster", "# Keyspace"};
    const char *at = t;
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        const char *p = strstr(at, order[i]);
        ck_assert_msg(p != NULL, "INFO: no %s after the sections before it", order[i]);
        at = p;
    }
    ck_assert_ptr_null(strstr(t, "# Commandstats")); /* only with all or by name */
    /* (under ASan, malloc is not glibc's: the heaps read 0, the segments remain) */
    double used = info_num(t, "used_memory"), rss = info_num(t, "used_memory_rss");
    ck_assert_msg(used > 10000, "used_memory %.0f", used);
    ck_assert_msg(rss > used / 2 && rss > 1000000, "used_memory_rss %.0f (used %.0f)", rss, used);
    ck_assert_msg(info_num(t, "used_memory_peak") >= used, "used_memory_peak %.0f, used %.0f",
                  info_num(t, "used_memory_peak"), used);
    ck_assert_msg(info_num(t, "used_cpu_user") >= 0 && info_num(t, "used_cpu_sys") >= 0,
                  "used_cpu_user %f, used_cpu_sys %f", info_num(t, "used_cpu_user"),
                  info_num(t, "used_cpu_sys"));
    ck_assert_msg(info_num(t, "used_cpu_user_children") == 0, "used_cpu_user_children");
    ck_assert_msg(strstr(t, "\nrole:master\r\n") && strstr(t, "\nconnected_slaves:0\r\n") &&
                  strstr(t, "\nloading:0\r\n") && strstr(t, "\naof_enabled:0\r\n") &&
                  strstr(t, "\ncluster_enabled:0\r\n") && strstr(t, "\nmaxmemory_policy:"),
                  "Redis's fields missing from INFO");
    free(t);
    t = info_on(fd, "all");
    ck_assert_msg(strstr(t, "# Commandstats\r\n") != NULL && strstr(t, "# Latencystats\r\n"),
                  "INFO all without Commandstats or Latencystats");
    free(t);
    for (int i = 0; i < 50; i++)
        EXPECT("+PONG\r\n", "PING");
    t = info_on(fd, "latencystats");
    const char *l = strstr(t, "latency_percentiles_usec_ping:p50=");
    ck_assert_msg(l != NULL, "%s", t);
    double p50 = atof(l + strlen("latency_percentiles_usec_ping:p50="));
    double p99 = atof(strstr(l, ",p99=") + 5), p999 = atof(strstr(l, ",p99.9=") + 7);
    ck_assert_msg(p50 > 0 && p50 <= p99 && p99 <= p999 && p999 < 1e6, "%s", l);
    free(t);
    down();
}
END_TEST

START_TEST(info_keyspace_counts_keys_and_expires_at_once)
{
    up();
    EXPECT("+OK\r\n", "SET", "a", "1", "EX", "100");
    EXPECT("+OK\r\n", "SET", "b", "2");
    EXPECT("+OK\r\n", "SET", "c", "3", "PX", "50000");
    char *t = info_on(fd, "keyspace");
    char keys[64];
    const char *db = strstr(t, "db0:");
    ck_assert_msg(db != NULL, "%s", t);
    snprintf(keys, sizeof(keys), "%.*s", (int)strcspn(db, ",\r"), db);
    ck_assert_str_eq(keys, "db0:keys=3");
    ck_assert_ptr_nonnull(strstr(db, ",expires=2,avg_ttl="));
    long ttl = atol(strstr(db, "avg_ttl=") + 8);
    ck_assert_msg(ttl > 60000 && ttl <= 75000, "avg_ttl %ld (keys of 100 s and 50 s)", ttl);
    free(t);
    down();
}
END_TEST

START_TEST(info_commandstats_sum_both_edges_and_resetstat_zeroes_them)
{
    up();
    int a, b;
    ck_assert_int_eq(h_edge_pair(&d, &a, &b), 0);
    for (int i = 0; i < 3; i++)
        EXPECT_ON(a, "+OK\r\n", "SET", "k", "v");
    EXPECT_ON(a, "-ERR wrong number of arguments for 'set' command\r\n", "SET", "k");
    EXPECT_ON(b, "$1\r\nv\r\n", "GET", "k");
    EXPECT_ON(b, "$1\r\nv\r\n", "GET", "k");
    EXPECT_ON(b, "-ERR value is not an integer or out of range\r\n", "INCR", "k");
    EXPECT_ON(b, "+OK\r\n", "CLIENT", "SETNAME", "x");
    EXPECT_ON(b, "-NOPROTO unsupported protocol version\r\n", "HELLO", "4");
    char *t = info_on(a, "commandstats");
    ck_assert_msg(strstr(t, "cmdstat_set:calls=3,") && strstr(t, "rejected_calls=1,failed_calls=0"),
                  "SET on edge a: %s", t);
    ck_assert_msg(strstr(t, "cmdstat_get:calls=2,"), "GET on edge b: %s", t);
    const char *incr = strstr(t, "cmdstat_incr:calls=1,");
    ck_assert_msg(incr && strstr(incr, "rejected_calls=0,failed_calls=1"), "INCR: %s", t);
    ck_assert_msg(strstr(t, "cmdstat_client|setname:calls=1,"), "CLIENT SETNAME: %s", t);
    free(t);
    t = info_on(b, "errorstats");
    ck_assert_msg(strstr(t, "errorstat_ERR:count=2\r\n") && strstr(t, "errorstat_NOPROTO:count=1"),
                  "errorstats: %s", t);
    free(t);
    t = info_on(a, "stats");
    ck_assert_msg(info_num(t, "total_error_replies") == 3, "total_error_replies %.0f",
                  info_num(t, "total_error_replies"));
    free(t);
    EXPECT_ON(b, "+OK\r\n", "CONFIG", "RESETSTAT");
    t = info_on(a, "commandstats");
    ck_assert_msg(!strstr(t, "cmdstat_set:") && !strstr(t, "cmdstat_get:") &&
                  !strstr(t, "cmdstat_incr:"), "after RESETSTAT: %s", t);
    free(t);
    t = info_on(a, "errorstats");
    ck_assert_msg(!strstr(t, "errorstat_"), "after RESETSTAT: %s", t);
    free(t);
    close(a);
    close(b);
    down();
}
END_TEST

/* ---- WAIT, MONITOR, GETMETA -------------------------------------------------------- */

START_TEST(wait_answers_no_replicas_at_once)
{
    up();
    int64_t t0 = h_now_ms();
    EXPECT(":0\r\n", "WAIT", "1", "0"); /* Redis with no replica would block for ever */
    EXPECT(":0\r\n", "WAIT", "3", "5000");
    EXPECT(":0\r\n", "WAIT", "-1", "10");
    ck_assert_msg(h_now_ms() - t0 < 2000, "WAIT waited");
    EXPECT("-ERR value is not an integer or out of range\r\n", "WAIT", "x", "0");
    EXPECT("-ERR timeout is not an integer or out of range\r\n", "WAIT", "0", "x");
    EXPECT("-ERR timeout is negative\r\n", "WAIT", "1", "-1");
    EXPECT("-ERR wrong number of arguments for 'wait' command\r\n", "WAIT", "1");
    down();
}
END_TEST

/* Reads from a MONITOR connection until `want` shows up (or 5 s). */
static int monitor_sees(int m, char *acc, size_t cap, size_t *len, const char *want)
{
    int64_t end = h_now_ms() + 5000;
    while (strstr(acc, want) == NULL && h_now_ms() < end && *len + 1 < cap) {
        struct h_reply *r = h_read(m);
        if (r == NULL)
            return 0;
        *len += (size_t)snprintf(acc + *len, cap - *len, "%s", r->raw);
        h_free(r);
    }
    return strstr(acc, want) != NULL;
}

START_TEST(monitor_shows_the_commands_of_every_edge)
{
    up();
    int m, b;
    ck_assert_int_eq(h_edge_pair(&d, &m, &b), 0);
    EXPECT_ON(m, "+OK\r\n", "MONITOR");
    EXPECT_ON(b, "+OK\r\n", "SET", "mon:key", "a\"b\n");
    EXPECT_ON(b, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH",
              "someone", "secret");
    EXPECT_ON(b, "*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n", "CONFIG", "GET", "timeout");
    EXPECT_ON(b, "+PONG\r\n", "PING");
    EXPECT_ON(fd, "$7\r\nfrom-fd\r\n", "PING", "from-fd");
    static char acc[65536];
    size_t len = 0;
    acc[0] = '\0';
    ck_assert_msg(monitor_sees(m, acc, sizeof(acc), &len, "\"PING\"\r\n"), "MONITOR: %s", acc);
    ck_assert_msg(monitor_sees(m, acc, sizeof(acc), &len, "\"from-fd\""), "MONITOR: %s", acc);
    /* Redis's line: +secs.usecs [0 addr] then each argument quoted and escaped */
    const char *set = strstr(acc, "] \"SET\" \"mon:key\" \"a\\\"b\\n\"\r\n");
    ck_assert_msg(set != NULL && acc[0] == '+' && strstr(acc, " [0 127.0.0.1:"), "%s", acc);
    ck_assert_msg(strstr(acc, "\"AUTH\" \"(redacted)\" \"(redacted)\"") != NULL, "%s", acc);
    ck_assert_msg(strstr(acc, "secret") == NULL && strstr(acc, "CONFIG") == NULL, "%s", acc);
    /* a MONITOR client may not touch keys, and is listed with flags=O */
    EXPECT_ON(m, "-ERR Replica can't interact with the keyspace\r\n", "GET", "mon:key");
    struct h_reply *r = h_call(b, "CLIENT", "LIST", NULL);
    ck_assert_msg(strstr(r->raw, "flags=O") != NULL, "%s", r->raw);
    h_free(r);
    close(m);
    close(b);
    down();
}
END_TEST

START_TEST(monitor_client_past_its_output_limit_is_closed)
{
    ck_assert_int_eq(h_start(&d, FIXTURE "client-output-buffer-limit 64kb 32kb 1s\n"), 0);
    fd = h_connect(d.port);
    int m = h_connect(d.port);
    ck_assert_int_ge(m, 0);
    int small = 4096;
    setsockopt(m, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    EXPECT_ON(m, "+OK\r\n", "MONITOR");
    /* never read: a few MB of monitored traffic fills the limit */
    char val[4096];
    memset(val, 'v', sizeof(val) - 1);
    val[sizeof(val) - 1] = '\0';
    int closed = 0;
    for (int i = 0; i < 2000 && !closed; i++) {
        EXPECT("+OK\r\n", "SET", "mon:big", val);
        if (i % 100 == 99) {
            struct h_reply *r = h_call(fd, "CLIENT", "LIST", NULL);
            closed = strstr(r->raw, "flags=O") == NULL;
            h_free(r);
        }
    }
    ck_assert_msg(closed, "a MONITOR client that never reads is still open");
    close(m);
    down();
}
END_TEST

START_TEST(getmeta_gives_the_value_and_its_facts)
{
    up();
    EXPECT("+OK\r\n", "SET", "gm", "hello");
    /* RESP2: a flat array [value, v, age_ms, n, stamp, n, stale, 0/1, degraded, 0/1] */
    struct h_reply *r = h_call(fd, "GETMETA", "gm", NULL);
    ck_assert_msg(r->v->type == RESP_ARRAY && r->v->n == 10, "%s", r->raw);
    static const char head2[] = "*10\r\n$5\r\nvalue\r\n$5\r\nhello\r\n$6\r\nage_ms\r\n:";
    ck_assert_msg(strncmp(r->raw, head2, strlen(head2)) == 0, "%s", r->raw);
    ck_assert_msg(strstr(r->raw, "$5\r\nstamp\r\n:") && strstr(r->raw, "$5\r\nstale\r\n:0\r\n") &&
                  strstr(r->raw, "$8\r\ndegraded\r\n:0\r\n"), "%s", r->raw);
    ck_assert_int_gt(r->v->elems[5].integer, 0); /* the owner's stamp */
    h_free(r);
    /* RESP3: a map; a missing key's value is null */
    r = h_call(fd, "HELLO", "3", NULL);
    h_free(r);
    r = h_call(fd, "GETMETA", "missing", NULL);
    static const char head3[] = "%5\r\n$5\r\nvalue\r\n_\r\n$6\r\nage_ms\r\n:";
    ck_assert_msg(strncmp(r->raw, head3, strlen(head3)) == 0, "%s", r->raw);
    ck_assert_msg(strstr(r->raw, "$5\r\nstale\r\n#f\r\n") != NULL, "%s", r->raw);
    h_free(r);
    /* CLIENT META ON: the same facts as an attribute before a GET's reply */
    EXPECT("+OK\r\n", "CLIENT", "META", "ON");
    r = h_call(fd, "GET", "gm", NULL);
    ck_assert_msg(r->v->attr != NULL && strstr(r->raw, "age_ms") && strstr(r->raw, "stamp"),
                  "%s", r->raw);
    h_free(r);
    EXPECT("-ERR wrong number of arguments for 'getmeta' command\r\n", "GETMETA");
    down();
}
END_TEST

/* ---- COMMAND ------------------------------------------------------------------------ */

START_TEST(command_describes_commands_as_redis)
{
    up();
    /* redis-server 7.0.15's own bytes (RESP2) */
    EXPECT("*1\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
           "*3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n"
           "+RO\r\n+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n"
           "$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n"
           "$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n"
           "$5\r\nlimit\r\n:0\r\n*0\r\n", "COMMAND", "INFO", "get");
    EXPECT("*1\r\n$-1\r\n", "COMMAND", "INFO", "bogus");
    EXPECT("*2\r\n$3\r\nget\r\n*10\r\n$7\r\nsummary\r\n$22\r\nGet the value of a key\r\n"
           "$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$6\r\nstring\r\n$10\r\ncomplexity\r\n"
           "$4\r\nO(1)\r\n$9\r\narguments\r\n*1\r\n*6\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\n"
           "type\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n", "COMMAND", "DOCS", "get");
    EXPECT("*2\r\n$1\r\na\r\n$1\r\nb\r\n", "COMMAND", "GETKEYS", "mset", "a", "1", "b", "2");
    EXPECT("-ERR Invalid command specified\r\n", "COMMAND", "GETKEYS", "foo", "x");
    EXPECT("-ERR The command has no key arguments\r\n", "COMMAND", "GETKEYS", "config", "get", "x");
    EXPECT("-ERR Invalid number of arguments specified for command\r\n", "COMMAND", "GETKEYS",
           "set", "a");
    EXPECT("*2\r\n$10\r\nconfig|get\r\n$10\r\nconfig|set\r\n", "COMMAND", "LIST", "FILTERBY",
           "PATTERN", "config|?et");
    struct h_reply *r = h_call(fd, "COMMAND", "INFO", "getmeta", NULL);
    ck_assert_msg(strstr(r->raw, "$7\r\ngetmeta\r\n:2\r\n") != NULL, "%s", r->raw);
    h_free(r);
    down();
}
END_TEST

Suite *compat_suite(void)
{
    Suite *s = suite_create("compat");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"protocol", negative_multibulk_count_is_skipped},
        {"protocol", errors_quote_arguments_as_redis},
        {"connection", select_answers_redis_errors},
        {"connection", hello_runs_its_options_in_order},
        {"connection", client_setname_takes_any_length},
        {"subcommands", subcommand_errors_are_redis_texts},
        {"subcommands", config_set_refuses_with_redis_texts},
        {"subcommands", config_get_echoes_the_name_asked},
        {"strings", repeated_expiry_option_takes_the_last},
        {"strings", getex_of_a_missing_key_is_nil_before_its_expiry_is_checked},
        {"strings", incr_of_a_value_with_a_nul_is_not_an_integer},
        {"strings", scan_reads_its_cursor_as_redis},
        {"clients", client_list_shows_the_clients_of_every_edge},
        {"clients", client_kill_closes_a_client_of_another_edge},
        {"info", info_has_redis_sections_in_redis_order},
        {"info", info_keyspace_counts_keys_and_expires_at_once},
        {"info", info_commandstats_sum_both_edges_and_resetstat_zeroes_them},
        {"wait", wait_answers_no_replicas_at_once},
        {"monitor", monitor_shows_the_commands_of_every_edge},
        {"monitor", monitor_client_past_its_output_limit_is_closed},
        {"getmeta", getmeta_gives_the_value_and_its_facts},
        {"command", command_describes_commands_as_redis},
    };
    TCase *tc = NULL;
    const char *cur = "";
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (strcmp(cases[i].name, cur) != 0) {
            tc = tcase_create(cases[i].name);
            tcase_set_timeout(tc, 60);
            suite_add_tcase(s, tc);
            cur = cases[i].name;
        }
        tcase_add_test(tc, cases[i].t);
    }
    return s;
}
