/*
 * check_commands.c - every data command over real sockets against the real
 * daemon: exact replies and Redis's error texts, binary safety, pipelining
 * with in-order replies, multi-key commands split across owners, SCAN across
 * owners, expiries, counters.  The fixture has 2 hot and 2 cold owners and a
 * hot class (h:*) beside the cold default, so a multi-key command whose keys
 * mix both classes touches all four owners.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"

#define FIXTURE                                                                          \
    "edge-workers 1\nhot-owners 2\ncold-owners 2\n"                                       \
    "class live pattern h:* pool hot fresh 1s keep 1m\nclass default pool cold\n"

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

#define EXPECT_SIMPLE(want, ...)                                               \
    do {                                                                       \
        struct h_reply *r_ = h_call(fd, __VA_ARGS__, NULL);                    \
        ck_assert_msg(r_->v->type == RESP_SIMPLE, "%s: got %s", #__VA_ARGS__, r_->raw); \
        ck_assert_msg(h_str_is(r_->v, want), "%s: got %s", #__VA_ARGS__, r_->raw);      \
        h_free(r_);                                                            \
    } while (0)
#define EXPECT_INT(want, ...)                                                  \
    do {                                                                       \
        struct h_reply *r_ = h_call(fd, __VA_ARGS__, NULL);                    \
        ck_assert_msg(r_->v->type == RESP_INT, "%s: got %s", #__VA_ARGS__, r_->raw); \
        ck_assert_int_eq(r_->v->integer, want);                                \
        h_free(r_);                                                            \
    } while (0)
#define EXPECT_BULK(want, ...)                                                 \
    do {                                                                       \
        struct h_reply *r_ = h_call(fd, __VA_ARGS__, NULL);                    \
        ck_assert_msg(r_->v->type == RESP_BULK, "%s: got %s", #__VA_ARGS__, r_->raw); \
        ck_assert_uint_eq(r_->v->len, strlen(want));                           \
        ck_assert(memcmp(r_->v->str, want, r_->v->len) == 0);                  \
        h_free(r_);                                                            \
    } while (0)
#define EXPECT_NIL(...)                                                        \
    do {                                                                       \
        struct h_reply *r_ = h_call(fd, __VA_ARGS__, NULL);                    \
        ck_assert_msg(r_->v->type == RESP_NULL, "%s: got %s", #__VA_ARGS__, r_->raw); \
        h_free(r_);                                                            \
    } while (0)
#define EXPECT_ERR(want, ...)                                                  \
    do {                                                                       \
        struct h_reply *r_ = h_call(fd, __VA_ARGS__, NULL);                    \
        ck_assert_msg(r_->v->type == RESP_ERROR, "%s: got %s", #__VA_ARGS__, r_->raw); \
        ck_assert_msg(h_str_is(r_->v, want), "%s: got %s", #__VA_ARGS__, r_->raw);     \
        h_free(r_);                                                            \
    } while (0)

/* Strings may hold '\0'; the parser's str is then not a C string. */
static int bulk_is(const struct resp_value *v, const void *p, size_t n)
{
    return v->type == RESP_BULK && v->len == n && memcmp(v->str, p, n) == 0;
}

START_TEST(set_and_get_with_every_option)
{
    up();
    EXPECT_SIMPLE("OK", "SET", "k", "v1");
    EXPECT_BULK("v1", "GET", "k");
    EXPECT_NIL("GET", "missing");
    EXPECT_NIL("SET", "k", "v2", "NX");
    EXPECT_BULK("v1", "GET", "k");
    EXPECT_SIMPLE("OK", "SET", "k", "v2", "XX");
    EXPECT_NIL("SET", "nokey", "v", "XX");
    EXPECT_NIL("GET", "nokey");
    EXPECT_BULK("v2", "SET", "k", "v3", "GET");
    EXPECT_NIL("SET", "fresh", "v", "GET");
    EXPECT_BULK("v", "GET", "fresh");
    EXPECT_BULK("v3", "SET", "k", "v4", "NX", "GET"); /* NX fails, old value comes back */
    EXPECT_BULK("v3", "GET", "k");
    EXPECT_SIMPLE("OK", "SET", "k", "v5", "EX", "100");
    EXPECT_INT(100, "TTL", "k");
    EXPECT_SIMPLE("OK", "SET", "k", "v6", "KEEPTTL");
    EXPECT_INT(100, "TTL", "k");
    EXPECT_SIMPLE("OK", "SET", "k", "v7");
    EXPECT_INT(-1, "TTL", "k");
    EXPECT_SIMPLE("OK", "SET", "k", "v", "PX", "100000");
    EXPECT_SIMPLE("OK", "SET", "k", "v", "EXAT", "9999999999");
    EXPECT_SIMPLE("OK", "SET", "k", "v", "PXAT", "9999999999000");
    /* Redis's errors, in Redis's order: options first, then the number. */
    EXPECT_ERR("ERR syntax error", "SET", "k", "v", "NX", "XX");
    EXPECT_ERR("ERR syntax error", "SET", "k", "v", "EX", "10", "PX", "10");
    EXPECT_ERR("ERR syntax error", "SET", "k", "v", "EX");
    EXPECT_ERR("ERR syntax error", "SET", "k", "v", "KEEPTTL", "EX", "10");
    EXPECT_ERR("ERR syntax error", "SET", "k", "v", "BOGUS");
    EXPECT_ERR("ERR syntax error", "SET", "k", "v", "EX", "abc", "NX", "XX");
    EXPECT_ERR("ERR value is not an integer or out of range", "SET", "k", "v", "EX", "abc");
    EXPECT_ERR("ERR invalid expire time in 'set' command", "SET", "k", "v", "EX", "0");
    EXPECT_ERR("ERR invalid expire time in 'set' command", "SET", "k", "v", "PX", "-5");
    EXPECT_ERR("ERR invalid expire time in 'set' command", "SET", "k", "v", "EX",
               "9223372036854775807");
    EXPECT_ERR("ERR wrong number of arguments for 'set' command", "SET", "k");
    EXPECT_ERR("ERR wrong number of arguments for 'get' command", "GET", "a", "b");
    /* SETEX PSETEX SETNX GETSET */
    EXPECT_SIMPLE("OK", "SETEX", "sx", "50", "v");
    EXPECT_INT(50, "TTL", "sx");
    EXPECT_ERR("ERR invalid expire time in 'setex' command", "SETEX", "sx", "0", "v");
    EXPECT_ERR("ERR value is not an integer or out of range", "SETEX", "sx", "x", "v");
    EXPECT_SIMPLE("OK", "PSETEX", "psx", "50000", "v");
    EXPECT_INT(50, "TTL", "psx");
    EXPECT_ERR("ERR invalid expire time in 'psetex' command", "PSETEX", "sx", "-1", "v");
    EXPECT_INT(1, "SETNX", "nx1", "a");
    EXPECT_INT(0, "SETNX", "nx1", "b");
    EXPECT_BULK("a", "GETSET", "nx1", "c");
    EXPECT_NIL("GETSET", "gs-new", "c");
    EXPECT_BULK("c", "GET", "gs-new");
    down();
}
END_TEST

START_TEST(values_and_keys_are_binary_safe)
{
    up();
    char key[] = {'b', '\0', 'k', '\r', '\n', (char)0xff};
    char val[256];
    for (int i = 0; i < 256; i++)
        val[i] = (char)i;
    struct hkv_buf b = HKV_BUF_INIT;
    resp_add_array(&b, 3);
    resp_add_bulk(&b, "SET", 3);
    resp_add_bulk(&b, key, sizeof(key));
    resp_add_bulk(&b, val, sizeof(val));
    resp_add_array(&b, 2);
    resp_add_bulk(&b, "GET", 3);
    resp_add_bulk(&b, key, sizeof(key));
    resp_add_array(&b, 2);
    resp_add_bulk(&b, "STRLEN", 6);
    resp_add_bulk(&b, key, sizeof(key));
    ck_assert_int_eq(h_send(fd, buf_head(&b), buf_unread(&b)), 0);
    buf_deinit(&b);
    struct h_reply *r = h_read(fd);
    ck_assert(h_str_is(r->v, "OK"));
    h_free(r);
    r = h_read(fd);
    ck_assert(bulk_is(r->v, val, sizeof(val)));
    h_free(r);
    r = h_read(fd);
    ck_assert_int_eq(r->v->integer, 256);
    h_free(r);
    /* A large value too. */
    size_t big = 1 << 20;
    char *v = malloc(big + 1);
    for (size_t i = 0; i < big; i++)
        v[i] = (char)('a' + i % 26);
    v[big] = '\0';
    EXPECT_SIMPLE("OK", "SET", "big", v);
    r = h_call(fd, "GET", "big", NULL);
    ck_assert(bulk_is(r->v, v, big));
    h_free(r);
    free(v);
    down();
}
END_TEST

START_TEST(keys_expire_and_ttls_follow_redis)
{
    up();
    EXPECT_SIMPLE("OK", "SET", "e1", "v", "PX", "100");
    EXPECT_BULK("v", "GET", "e1");
    h_sleep_ms(250);
    EXPECT_NIL("GET", "e1");
    EXPECT_INT(0, "EXISTS", "e1");
    EXPECT_INT(-2, "TTL", "e1");
    EXPECT_INT(-2, "PTTL", "e1");
    EXPECT_SIMPLE("OK", "SET", "e2", "v");
    EXPECT_INT(-1, "TTL", "e2");
    EXPECT_INT(1, "EXPIRE", "e2", "100");
    EXPECT_INT(100, "TTL", "e2");
    struct h_reply *r = h_call(fd, "PTTL", "e2", NULL);
    ck_assert(r->v->integer > 99000 && r->v->integer <= 100000);
    h_free(r);
    EXPECT_INT(1, "PEXPIRE", "e2", "200000");
    EXPECT_INT(200, "TTL", "e2");
    EXPECT_INT(1, "EXPIREAT", "e2", "9999999999");
    EXPECT_INT(1, "PERSIST", "e2");
    EXPECT_INT(0, "PERSIST", "e2");
    EXPECT_INT(-1, "TTL", "e2");
    EXPECT_INT(0, "EXPIRE", "nokey", "10");
    EXPECT_INT(0, "PERSIST", "nokey");
    /* Flags (Redis 7). */
    EXPECT_INT(1, "EXPIRE", "e2", "100", "NX");
    EXPECT_INT(0, "EXPIRE", "e2", "100", "NX");
    EXPECT_INT(1, "EXPIRE", "e2", "200", "GT");
    EXPECT_INT(0, "EXPIRE", "e2", "50", "GT");
    EXPECT_INT(1, "EXPIRE", "e2", "50", "LT");
    EXPECT_INT(1, "EXPIRE", "e2", "60", "XX");
    EXPECT_ERR("ERR NX and XX, GT or LT options at the same time are not compatible", "EXPIRE",
               "e2", "10", "NX", "XX");
    EXPECT_ERR("ERR GT and LT options at the same time are not compatible", "EXPIRE", "e2", "10",
               "GT", "LT");
    EXPECT_ERR("ERR Unsupported option foo", "EXPIRE", "e2", "10", "foo");
    EXPECT_ERR("ERR value is not an integer or out of range", "EXPIRE", "e2", "ten");
    EXPECT_ERR("ERR invalid expire time in 'expire' command", "EXPIRE", "e2",
               "9223372036854775807");
    /* A negative expire deletes, as in Redis. */
    EXPECT_INT(1, "EXPIRE", "e2", "-1");
    EXPECT_NIL("GET", "e2");
    /* GETEX */
    EXPECT_SIMPLE("OK", "SET", "gx", "val");
    EXPECT_BULK("val", "GETEX", "gx");
    EXPECT_INT(-1, "TTL", "gx");
    EXPECT_BULK("val", "GETEX", "gx", "EX", "100");
    EXPECT_INT(100, "TTL", "gx");
    EXPECT_BULK("val", "GETEX", "gx", "PERSIST");
    EXPECT_INT(-1, "TTL", "gx");
    EXPECT_BULK("val", "GETEX", "gx", "PX", "100");
    h_sleep_ms(250);
    EXPECT_NIL("GET", "gx");
    EXPECT_NIL("GETEX", "gx", "EX", "10");
    EXPECT_ERR("ERR syntax error", "GETEX", "gx", "NX");
    EXPECT_ERR("ERR syntax error", "GETEX", "gx", "EX", "1", "PERSIST");
    /* Redis checks the expiry once the key is found (a missing key is nil) */
    EXPECT_NIL("GETEX", "gx", "EX", "0");
    EXPECT_SIMPLE("OK", "SET", "gx", "val");
    EXPECT_ERR("ERR invalid expire time in 'getex' command", "GETEX", "gx", "EX", "0");
    down();
}
END_TEST

START_TEST(counters_follow_redis)
{
    up();
    EXPECT_INT(1, "INCR", "c");
    EXPECT_INT(2, "INCR", "c");
    EXPECT_INT(12, "INCRBY", "c", "10");
    EXPECT_INT(11, "DECR", "c");
    EXPECT_INT(1, "DECRBY", "c", "10");
    EXPECT_INT(-5, "INCRBY", "c", "-6");
    EXPECT_BULK("-5", "GET", "c");
    EXPECT_SIMPLE("OK", "SET", "c", "9223372036854775806");
    EXPECT_INT(9223372036854775807LL, "INCR", "c");
    EXPECT_ERR("ERR increment or decrement would overflow", "INCR", "c");
    EXPECT_SIMPLE("OK", "SET", "s", "abc");
    EXPECT_ERR("ERR value is not an integer or out of range", "INCR", "s");
    EXPECT_ERR("ERR value is not an integer or out of range", "INCRBY", "c", "1.5");
    EXPECT_ERR("ERR value is not an integer or out of range", "INCRBY", "c", "01");
    EXPECT_ERR("ERR decrement would overflow", "DECRBY", "c", "-9223372036854775808");
    EXPECT_SIMPLE("OK", "SET", "t", "10", "EX", "100");
    EXPECT_INT(11, "INCR", "t");
    EXPECT_INT(100, "TTL", "t"); /* INCR keeps the expiry */
    down();
}
END_TEST

START_TEST(other_string_commands)
{
    up();
    EXPECT_SIMPLE("OK", "SET", "g", "abc");
    EXPECT_INT(3, "STRLEN", "g");
    EXPECT_INT(0, "STRLEN", "nokey");
    EXPECT_SIMPLE("string", "TYPE", "g");
    EXPECT_SIMPLE("none", "TYPE", "nokey");
    EXPECT_BULK("abc", "GETDEL", "g");
    EXPECT_NIL("GETDEL", "g");
    EXPECT_NIL("GET", "g");
    EXPECT_ERR("ERR unknown command 'NOPE', with args beginning with: 'x' ", "NOPE", "x");
    down();
}
END_TEST

static void mkey(char *buf, size_t len, int i)
{
    snprintf(buf, len, "%s%d", i % 2 ? "h:" : "c:", i);
}

START_TEST(multi_key_commands_span_owners_in_key_order)
{
    up();
    enum { N = 40 };
    const char *w[2 * N + 2];
    char keys[N][16], vals[N][16];
    w[0] = "MSET";
    for (int i = 0; i < N; i++) {
        mkey(keys[i], sizeof(keys[i]), i);
        snprintf(vals[i], sizeof(vals[i]), "v%d", i);
        w[1 + 2 * i] = keys[i];
        w[2 + 2 * i] = vals[i];
    }
    struct h_reply *r = h_cmd(fd, 1 + 2 * N, w);
    ck_assert(h_str_is(r->v, "OK"));
    h_free(r);
    /* Every owner got some of the keys. */
    char field[64];
    int64_t total = 0;
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < 2; i++) {
            int64_t end = h_now_ms() + 3000, keys_n = 0;
            snprintf(field, sizeof(field), "owner_%s_%d", p ? "cold" : "hot", i);
            while (h_now_ms() < end) {
                char line[512];
                if (h_info_field(d.port, field, line, sizeof(line)) == 0) {
                    char *k = strstr(line, ",keys=");
                    keys_n = k ? atoll(k + 6) : 0;
                    if (keys_n > 0)
                        break;
                }
                h_sleep_ms(100);
            }
            ck_assert_msg(keys_n > 0, "%s holds none of the keys", field);
            total += keys_n;
        }
    ck_assert_int_eq(total, N);
    EXPECT_INT(N, "DBSIZE");
    /* MGET answers in key order, with nil for the missing. */
    w[0] = "MGET";
    for (int i = 0; i < N; i++)
        w[1 + i] = keys[i];
    w[N + 1] = "h:missing";
    r = h_cmd(fd, N + 2, w);
    ck_assert_int_eq(r->v->type, RESP_ARRAY);
    ck_assert_uint_eq(r->v->n, N + 1);
    for (int i = 0; i < N; i++)
        ck_assert_msg(bulk_is(&r->v->elems[i], vals[i], strlen(vals[i])), "MGET item %d", i);
    ck_assert_int_eq(r->v->elems[N].type, RESP_NULL);
    h_free(r);
    w[0] = "EXISTS";
    w[N + 1] = keys[0]; /* counted twice, as Redis does */
    r = h_cmd(fd, N + 2, w);
    ck_assert_int_eq(r->v->integer, N + 1);
    h_free(r);
    EXPECT_ERR("ERR wrong number of arguments for 'mset' command", "MSET", "a", "1", "b");
    /* DEL and UNLINK count what they removed, across owners. */
    w[0] = "DEL";
    r = h_cmd(fd, N / 2 + 1, w);
    ck_assert_int_eq(r->v->integer, N / 2);
    h_free(r);
    w[0] = "UNLINK";
    r = h_cmd(fd, N + 1, w);
    ck_assert_int_eq(r->v->integer, N / 2);
    h_free(r);
    EXPECT_INT(0, "DBSIZE");
    down();
}
END_TEST

START_TEST(scan_visits_every_key_of_every_owner)
{
    up();
    enum { N = 300 };
    char k[32];
    for (int i = 0; i < N; i++) {
        mkey(k, sizeof(k), i);
        EXPECT_SIMPLE("OK", "SET", k, "x");
    }
    static char seen[N];
    memset(seen, 0, sizeof(seen));
    char cursor[32] = "0";
    int rounds = 0, found = 0;
    do {
        struct h_reply *r = h_call(fd, "SCAN", cursor, "COUNT", "7", NULL);
        ck_assert_int_eq(r->v->type, RESP_ARRAY);
        ck_assert_uint_eq(r->v->n, 2);
        snprintf(cursor, sizeof(cursor), "%.*s", (int)r->v->elems[0].len, r->v->elems[0].str);
        struct resp_value *ks = &r->v->elems[1];
        for (size_t i = 0; i < ks->n; i++) {
            int n = atoi(ks->elems[i].str + 2);
            ck_assert(n >= 0 && n < N);
            found += !seen[n];
            seen[n] = 1;
        }
        h_free(r);
        ck_assert_int_lt(++rounds, 2000);
    } while (strcmp(cursor, "0") != 0);
    ck_assert_int_eq(found, N);
    /* MATCH filters; TYPE string is every key, other types none. */
    memset(seen, 0, sizeof(seen));
    strcpy(cursor, "0");
    found = rounds = 0;
    do {
        struct h_reply *r = h_call(fd, "SCAN", cursor, "MATCH", "h:*", "COUNT", "50", "TYPE", "string", NULL);
        snprintf(cursor, sizeof(cursor), "%.*s", (int)r->v->elems[0].len, r->v->elems[0].str);
        for (size_t i = 0; i < r->v->elems[1].n; i++) {
            ck_assert(strncmp(r->v->elems[1].elems[i].str, "h:", 2) == 0);
            found++;
        }
        h_free(r);
        ck_assert_int_lt(++rounds, 2000);
    } while (strcmp(cursor, "0") != 0);
    ck_assert_int_eq(found, N / 2);
    struct h_reply *r = h_call(fd, "SCAN", "0", "TYPE", "hash", NULL);
    ck_assert_uint_eq(r->v->elems[1].n, 0);
    h_free(r);
    EXPECT_ERR("ERR invalid cursor", "SCAN", "abc");
    EXPECT_ERR("ERR syntax error", "SCAN", "0", "COUNT", "0");
    EXPECT_ERR("ERR syntax error", "SCAN", "0", "FOO", "1");
    down();
}
END_TEST

/* Reads until `n` replies have arrived or 10 s passed; returns the replies
 * as parsed values in *out (caller frees). */
static int read_replies(int n, struct resp_value **out, char **raw)
{
    size_t cap = 1 << 16, len = 0, off = 0;
    char *buf = malloc(cap);
    int got = 0;
    int64_t end = h_now_ms() + 10000;
    while (got < n && h_now_ms() < end) {
        size_t used;
        struct resp_value *v;
        while (got < n && off < len && resp_parse_reply(buf + off, len - off, &used, &v) == HKV_OK) {
            out[got++] = v;
            off += used;
        }
        if (got == n)
            break;
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t r = recv(fd, buf + len, cap - len, 0);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    *raw = buf; /* the values point into it */
    return got;
}

START_TEST(pipelined_mixed_commands_answer_in_order)
{
    up();
    enum { N = 1000 };
    struct hkv_buf b = HKV_BUF_INIT;
    char k[32], v[32];
    for (int i = 0; i < N; i++) {
        int kind = i % 5;
        snprintf(k, sizeof(k), "%s%d", i % 2 ? "h:p" : "p", i / 5);
        snprintf(v, sizeof(v), "%d", i / 5);
        if (kind == 0) {
            resp_add_array(&b, 3);
            resp_add_bulk_str(&b, "SET");
            resp_add_bulk_str(&b, k);
            resp_add_bulk_str(&b, v);
        } else if (kind == 1) {
            resp_add_array(&b, 2);
            resp_add_bulk_str(&b, "GET");
            snprintf(k, sizeof(k), "%s%d", (i - 1) % 2 ? "h:p" : "p", i / 5);
            resp_add_bulk_str(&b, k);
        } else if (kind == 2) {
            resp_add_array(&b, 2);
            resp_add_bulk_str(&b, "PING");
            resp_add_bulk_str(&b, v);
        } else if (kind == 3) {
            resp_add_array(&b, 2);
            resp_add_bulk_str(&b, "INCR");
            resp_add_bulk_str(&b, "h:counter");
        } else {
            resp_add_array(&b, 2);
            resp_add_bulk_str(&b, "ECHO");
            resp_add_bulk_str(&b, v);
        }
    }
    ck_assert_int_eq(h_send(fd, buf_head(&b), buf_unread(&b)), 0); /* one write */
    buf_deinit(&b);
    static struct resp_value *rep[N];
    char *raw;
    int got = read_replies(N, rep, &raw);
    ck_assert_int_eq(got, N);
    int incr = 0;
    for (int i = 0; i < N; i++) {
        snprintf(v, sizeof(v), "%d", i / 5);
        switch (i % 5) {
        case 0:
            ck_assert_msg(rep[i]->type == RESP_SIMPLE, "reply %d", i);
            break;
        case 1: /* the client's own SET just before: read-your-writes */
        case 2:
        case 4:
            ck_assert_msg(bulk_is(rep[i], v, strlen(v)), "reply %d is not %s", i, v);
            break;
        case 3:
            ck_assert_int_eq(rep[i]->type, RESP_INT);
            ck_assert_int_eq(rep[i]->integer, ++incr);
            break;
        }
        resp_value_free(&rep[i]);
    }
    free(raw);
    EXPECT_SIMPLE("PONG", "PING");
    down();
}
END_TEST

START_TEST(client_gone_with_requests_in_flight_harms_nothing)
{
    up();
    for (int round = 0; round < 5; round++) {
        int c = h_connect(d.port);
        struct hkv_buf b = HKV_BUF_INIT;
        for (int i = 0; i < 500; i++) {
            resp_add_array(&b, i % 2 ? 3 : 2);
            resp_add_bulk_str(&b, i % 2 ? "SET" : "GET");
            resp_add_bulk_str(&b, "h:gone");
            if (i % 2)
                resp_add_bulk_str(&b, "v");
        }
        h_send(c, buf_head(&b), buf_unread(&b));
        buf_deinit(&b);
        close(c); /* before the answers */
    }
    h_sleep_ms(200);
    EXPECT_SIMPLE("PONG", "PING");
    EXPECT_BULK("v", "GET", "h:gone");
    ck_assert_int_eq(h_info_int(d.port, "edge_connected_clients"), 2);
    down();
}
END_TEST

START_TEST(info_shows_stats_owners_and_keyspace)
{
    up();
    EXPECT_SIMPLE("OK", "SET", "h:i", "1");
    EXPECT_SIMPLE("OK", "SET", "i", "1");
    ck_assert_int_ge(h_info_int(d.port, "total_commands_processed"), 2);
    ck_assert_int_ge(h_info_int(d.port, "instantaneous_ops_per_sec"), 0);
    ck_assert_int_eq(h_info_int(d.port, "write_retries"), 0);
    ck_assert_int_eq(h_info_int(d.port, "write_failures"), 0);
    ck_assert_int_eq(h_info_int(d.port, "rejected_connections"), 0);
    int64_t end = h_now_ms() + 5000;
    char db0[128] = "";
    while (h_now_ms() < end) {
        if (h_info_field(d.port, "db0", db0, sizeof(db0)) == 0 && strncmp(db0, "keys=2,", 7) == 0)
            break;
        h_sleep_ms(100);
    }
    ck_assert_str_eq(db0, "keys=2,expires=0,avg_ttl=0");
    ck_assert_int_eq(h_info_int(d.port, "owner_keys"), 2);
    ck_assert_int_ge(h_info_int(d.port, "owner_writes"), 2);
    ck_assert_int_eq(h_info_int(d.port, "owners_answering"), 4);
    char line[512];
    ck_assert_int_eq(h_info_field(d.port, "owner_hot_0", line, sizeof(line)), 0);
    ck_assert_ptr_nonnull(strstr(line, "reads="));
    EXPECT_SIMPLE("OK", "CONFIG", "RESETSTAT");
    down();
}
END_TEST

/* A client that sends its commands and half-closes (`printf ... | nc -N`)
 * still gets every reply, including those owed by owners, then EOF. */
START_TEST(half_closed_client_gets_its_replies)
{
    struct daemon dm;
    ck_assert_int_eq(h_start(&dm, "edge-workers 1\nhot-owners 1\ncold-owners 1\n"), 0);
    int cfd = h_connect(dm.port);
    ck_assert_int_ge(cfd, 0);
    const char req[] = "SET hc:k v\r\nGET hc:k\r\nPING\r\n";
    ck_assert_int_eq(h_send(cfd, req, sizeof(req) - 1), 0);
    ck_assert_int_eq(shutdown(cfd, SHUT_WR), 0);
    char got[256];
    size_t n = 0;
    int64_t end = h_now_ms() + 5000;
    while (n < sizeof(got) - 1 && h_now_ms() < end) {
        ssize_t r = recv(cfd, got + n, sizeof(got) - 1 - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    got[n] = '\0';
    close(cfd);
    ck_assert_str_eq(got, "+OK\r\n$1\r\nv\r\n+PONG\r\n");
    h_stop(&dm);
}
END_TEST

Suite *commands_suite(void)
{
    Suite *s = suite_create("commands");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"set_get", set_and_get_with_every_option},
        {"binary", values_and_keys_are_binary_safe},
        {"expiry", keys_expire_and_ttls_follow_redis},
        {"counters", counters_follow_redis},
        {"strings", other_string_commands},
        {"multi_key", multi_key_commands_span_owners_in_key_order},
        {"scan", scan_visits_every_key_of_every_owner},
        {"pipeline", pipelined_mixed_commands_answer_in_order},
        {"client_gone", client_gone_with_requests_in_flight_harms_nothing},
        {"info", info_shows_stats_owners_and_keyspace},
        {"half_close", half_closed_client_gets_its_replies},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
