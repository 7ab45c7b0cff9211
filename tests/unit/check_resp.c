/*
 * check_resp.c - proto/resp: the request parser (multibulk, inline, limits,
 * incremental feeding, HTTP and junk); the reply encoders and the reply
 * parser: check_resp_reply.c.
 *
 * The incremental tests describe every parse result as a string and compare
 * the sequence seen by feeding a buffer in one call with the sequence seen by
 * feeding it one byte at a time, each call with a freshly allocated copy of
 * the prefix so the parser can never rely on the buffer staying in place.
 */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/resp.h"

/* ---- helpers ------------------------------------------------------------ */

static const struct resp_limits small_limits = { 100, 10, 64 };

/* Appends a printable description of one resp_parse result to out. */
static void describe(char *out, size_t cap, int rc, size_t consumed,
                     const struct resp_req *req, const char *err)
{
    size_t o = strlen(out);
    o += (size_t)snprintf(out + o, cap - o, "rc=%d", rc);
    if (rc == HKV_OK) {
        o += (size_t)snprintf(out + o, cap - o, " c=%zu argc=%d [", consumed, req->argc);
        for (int i = 0; i < req->argc && o < cap - 8; i++) {
            for (size_t j = 0; j < req->argv[i].len && o < cap - 8; j++) {
                unsigned char ch = (unsigned char)req->argv[i].p[j];
                if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '|')
                    out[o++] = (char)ch;
                else
                    o += (size_t)snprintf(out + o, cap - o, "\\%02x", ch);
            }
            out[o++] = '|';
        }
        o += (size_t)snprintf(out + o, cap - o, "]");
    } else if (rc != HKV_EAGAIN) {
        o += (size_t)snprintf(out + o, cap - o, " err=%s", err);
    }
    snprintf(out + o, cap - o, ";");
}

/* Parses everything in buf with one call per request. */
static void parse_whole(const struct resp_limits *lim, const char *buf, size_t len,
                        char *out, size_t cap)
{
    struct resp_parser p;
    resp_parser_init(&p, lim);
    size_t off = 0;
    out[0] = '\0';
    for (;;) {
        size_t consumed = 99;
        struct resp_req req = { 0, NULL };
        const char *err = NULL;
        int rc = resp_parse(&p, buf + off, len - off, &consumed, &req, &err);
        describe(out, cap, rc, consumed, &req, err);
        if (rc != HKV_OK)
            break;
        ck_assert_uint_le(consumed, len - off);
        ck_assert_uint_gt(consumed, 0);
        off += consumed;
    }
    resp_parser_deinit(&p);
}

/* Feeds buf one byte more per call (a new copy every time). */
static void parse_bytewise(const struct resp_limits *lim, const char *buf, size_t len,
                           char *out, size_t cap)
{
    struct resp_parser p;
    resp_parser_init(&p, lim);
    size_t off = 0;
    out[0] = '\0';
    for (size_t end = 0; end <= len; end++) {
        for (;;) {
            size_t n = end - off;
            char *copy = malloc(n ? n : 1);
            ck_assert_ptr_nonnull(copy);
            memcpy(copy, buf + off, n);
            size_t consumed = 99;
            struct resp_req req = { 0, NULL };
            const char *err = NULL;
            int rc = resp_parse(&p, copy, n, &consumed, &req, &err);
            if (rc == HKV_EAGAIN) {
                ck_assert_uint_eq(consumed, 0);
                free(copy);
                if (end == len)
                    describe(out, cap, rc, consumed, &req, err);
                break;
            }
            describe(out, cap, rc, consumed, &req, err);
            free(copy);
            if (rc != HKV_OK) {
                resp_parser_deinit(&p);
                return;
            }
            ck_assert_uint_le(consumed, n);
            off += consumed;
        }
    }
    resp_parser_deinit(&p);
}

/* One parse of a buffer holding one request. */
struct one {
    int rc;
    size_t consumed;
    struct resp_req req;
    const char *err;
    struct resp_parser p;
};

static void parse_one(struct one *o, const struct resp_limits *lim, const char *buf, size_t len)
{
    resp_parser_init(&o->p, lim);
    o->consumed = 0;
    o->req.argc = -1;
    o->req.argv = NULL;
    o->err = NULL;
    o->rc = resp_parse(&o->p, buf, len, &o->consumed, &o->req, &o->err);
}

static void expect_error(const struct resp_limits *lim, const char *buf, size_t len, int rc,
                         const char *err)
{
    struct one o;
    parse_one(&o, lim, buf, len);
    ck_assert_msg(o.rc == rc, "input '%.*s': rc %d, expected %d (%s)", (int)(len > 40 ? 40 : len),
                  buf, o.rc, rc, o.err ? o.err : "-");
    ck_assert_str_eq(o.err, err);
    ck_assert_uint_eq(o.consumed, 0);
    resp_parser_deinit(&o.p);
    /* The same verdict byte by byte. */
    char whole[512], bytewise[512];
    parse_whole(lim, buf, len, whole, sizeof(whole));
    parse_bytewise(lim, buf, len, bytewise, sizeof(bytewise));
    ck_assert_str_eq(whole, bytewise);
}

#define EXPECT_ERR(lim, lit, rc, err) expect_error(lim, lit, sizeof(lit) - 1, rc, err)

static void expect_args(const char *buf, size_t len, size_t consumed, int argc, ...)
{
    struct one o;
    parse_one(&o, NULL, buf, len);
    ck_assert_msg(o.rc == HKV_OK, "rc %d err %s", o.rc, o.err ? o.err : "-");
    ck_assert_uint_eq(o.consumed, consumed);
    ck_assert_int_eq(o.req.argc, argc);
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++) {
        const char *a = va_arg(ap, const char *);
        size_t alen = va_arg(ap, size_t);
        ck_assert_uint_eq(o.req.argv[i].len, alen);
        ck_assert_mem_eq(o.req.argv[i].p, a, alen);
    }
    va_end(ap);
    resp_parser_deinit(&o.p);
}

#define A(lit) (lit), (sizeof(lit) - 1)
#define EXPECT_ARGS(lit, consumed, argc, ...) \
    expect_args(lit, sizeof(lit) - 1, consumed, argc, __VA_ARGS__)

/* ---- multibulk ---------------------------------------------------------- */

START_TEST(multibulk_whole_request_parses)
{
    EXPECT_ARGS("*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", 22, 2, A("GET"), A("key"));
    EXPECT_ARGS("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", 26, 3, A("SET"), A("k"), A(""));
    /* Binary-safe: CR, LF and NUL inside a bulk. */
    EXPECT_ARGS("*1\r\n$5\r\na\r\n\0b\r\n", 15, 1, A("a\r\n\0b"));
}
END_TEST

START_TEST(multibulk_pipelined_requests_parse_one_at_a_time)
{
    const char in[] = "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n*0\r\nPING\r\n";
    char out[1024];
    parse_whole(NULL, in, sizeof(in) - 1, out, sizeof(out));
    ck_assert_str_eq(out, "rc=0 c=14 argc=1 [PING|];rc=0 c=20 argc=2 [GET|a|];"
                          "rc=0 c=4 argc=0 [];rc=0 c=6 argc=1 [PING|];rc=-1;");
}
END_TEST

START_TEST(argv_is_reused_and_grows_only_as_arguments_arrive)
{
    struct resp_parser p;
    resp_parser_init(&p, NULL);
    const char in[] = "*1000000\r\n$1\r\na\r\n$1\r\nb\r\n";
    size_t consumed;
    struct resp_req req;
    const char *err;
    ck_assert_int_eq(resp_parse(&p, in, sizeof(in) - 1, &consumed, &req, &err), HKV_EAGAIN);
    ck_assert_int_le(p.cap, 8);
    resp_parser_reset(&p);

    /* 20 arguments: the arrays double 8 -> 16 -> 32, and are kept. */
    char big[512];
    size_t n = (size_t)snprintf(big, sizeof(big), "*20\r\n");
    for (int i = 0; i < 20; i++)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "$2\r\n%02d\r\n", i);
    ck_assert_int_eq(resp_parse(&p, big, n, &consumed, &req, &err), HKV_OK);
    ck_assert_int_eq(req.argc, 20);
    ck_assert_int_eq(p.cap, 32);
    ck_assert_mem_eq(req.argv[19].p, "19", 2);
    struct resp_slice *first = req.argv;
    ck_assert_int_eq(resp_parse(&p, big, n, &consumed, &req, &err), HKV_OK);
    ck_assert_ptr_eq(req.argv, first);
    resp_parser_deinit(&p);
}
END_TEST

START_TEST(partial_request_keeps_offsets_not_rescanning)
{
    struct resp_parser p;
    resp_parser_init(&p, NULL);
    const char in[] = "*2\r\n$3\r\nGET\r\n$100\r\n";
    size_t consumed;
    struct resp_req req;
    const char *err;
    ck_assert_int_eq(resp_parse(&p, in, sizeof(in) - 1, &consumed, &req, &err), HKV_EAGAIN);
    ck_assert_uint_eq(p.pos, sizeof(in) - 1);   /* waiting for the bulk body */
    ck_assert_int_eq(p.argc, 1);
    /* A header without its CRLF yet: the search resumes where it stopped. */
    resp_parser_reset(&p);
    ck_assert_int_eq(resp_parse(&p, "*2\r\n$12345", 10, &consumed, &req, &err), HKV_EAGAIN);
    ck_assert_uint_eq(p.scanned, 10);
    ck_assert_int_eq(resp_parse(&p, "*2\r\n$12345\r", 11, &consumed, &req, &err), HKV_EAGAIN);
    ck_assert_uint_eq(p.scanned, 10);           /* parked on the CR */
    ck_assert_int_eq(resp_parse(&p, "*2\r\n$12345\r\n", 12, &consumed, &req, &err), HKV_EAGAIN);
    ck_assert_uint_eq(p.pos, 12);
    resp_parser_deinit(&p);
}
END_TEST

/* ---- incremental feeding ---------------------------------------------- */

static void check_every_split(const struct resp_limits *lim, const char *buf, size_t len)
{
    char whole[4096], bytewise[4096];
    parse_whole(lim, buf, len, whole, sizeof(whole));
    parse_bytewise(lim, buf, len, bytewise, sizeof(bytewise));
    ck_assert_str_eq(whole, bytewise);
}

#define SPLIT(lim, lit) check_every_split(lim, lit, sizeof(lit) - 1)

START_TEST(every_byte_boundary_gives_the_same_requests)
{
    SPLIT(NULL, "*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nva\r\nl\r\n"
                "PING\r\nset \"a b\" 'c'\nECHO x\r\n*0\r\n\r\n*1\r\n$0\r\n\r\n");
    SPLIT(NULL, "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI");            /* trailing partial */
    SPLIT(NULL, "*1\r\n$4\r\nPING\r\n*1\r\nX");                    /* then an error */
    SPLIT(NULL, "PING\r\n\"unbalanced\r\n");
    SPLIT(&small_limits, "*1\r\n$100\r\n"
                         "0123456789012345678901234567890123456789012345678901234567890123456789"
                         "012345678901234567890123456789\r\n*1\r\n$101\r\n");
    SPLIT(&small_limits, "PING\r\n0123456789012345678901234567890123456789012345678901234567890123\r\n"
                         "01234567890123456789012345678901234567890123456789012345678901234\r\n");
    SPLIT(&small_limits, "*1\r\n$000000000000000000000000000000000000000000000000000000000000001\r\n");
    SPLIT(&small_limits, "*1\r\n$0000000000000000000000000000000000000000000000000000000000000001\r\n");
    SPLIT(&small_limits, "*00000000000000000000000000000000000000000000000000000000000000001\r\n");
    SPLIT(&small_limits, "*11\r\n");
    SPLIT(NULL, "*1\r\n$3\r\nabcXY");
}
END_TEST

START_TEST(consumed_marks_the_end_of_each_request)
{
    const char in[] = "PING\n*1\r\n$1\r\nx\r\nA B\r\n";
    char out[512];
    parse_bytewise(NULL, in, sizeof(in) - 1, out, sizeof(out));
    ck_assert_str_eq(out, "rc=0 c=5 argc=1 [PING|];rc=0 c=11 argc=1 [x|];"
                          "rc=0 c=5 argc=2 [A|B|];rc=-1;");
}
END_TEST

/* ---- inline ------------------------------------------------------------- */

START_TEST(inline_splits_on_blanks)
{
    EXPECT_ARGS("PING\r\n", 6, 1, A("PING"));
    EXPECT_ARGS("PING\n", 5, 1, A("PING"));
    EXPECT_ARGS("  set\tk  v \r\n", 13, 3, A("set"), A("k"), A("v"));
    EXPECT_ARGS("a\rb\r\n", 5, 2, A("a"), A("b"));
    /* \v ends no unquoted argument (sdssplitargs), but separates arguments. */
    EXPECT_ARGS("a\vb \vc\r\n", 8, 2, A("a\vb"), A("c"));
    /* A NUL ends the line's arguments, as in sdssplitargs. */
    EXPECT_ARGS("GET a\0b c\r\n", 11, 2, A("GET"), A("a"));
}
END_TEST

START_TEST(inline_quotes_and_escapes_follow_sdssplitargs)
{
    EXPECT_ARGS("set \"a b\" 'c d'\r\n", 17, 3, A("set"), A("a b"), A("c d"));
    EXPECT_ARGS("\"\\x41\\n\\r\\t\\b\\a\\\\\\\"z\"\r\n", 23, 1, A("A\n\r\t\b\a\\\"z"));
    EXPECT_ARGS("\"\\x4a\\x4B\\xZZ\\q\"\n", 17, 1, A("JKxZZq"));
    EXPECT_ARGS("'it\\'s' 'a\\nb'\r\n", 16, 2, A("it's"), A("a\\nb"));
    EXPECT_ARGS("foo\"bar baz\" x\r\n", 16, 2, A("foobar baz"), A("x"));
    EXPECT_ARGS("\"\" ''\r\n", 7, 2, A(""), A(""));
    EXPECT_ARGS("\"a\"\tb\r\n", 7, 2, A("a"), A("b"));
    EXPECT_ARGS("\"\\x00\"\r\n", 8, 1, A("\0"));
    /* Quoted and plain arguments mixed: the quoted one lives in scratch. */
    EXPECT_ARGS("x \"y\" z \"w\"\r\n", 13, 4, A("x"), A("y"), A("z"), A("w"));
}
END_TEST

START_TEST(inline_unbalanced_quotes_are_an_error)
{
    const char *e = "ERR Protocol error: unbalanced quotes in request";
    EXPECT_ERR(NULL, "set \"foo bar\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "set \"foo\"bar\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "set 'foo\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "set 'foo'bar\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "\"abc\\\"\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "\"ab\0c\"\r\n", HKV_EPROTO, e);
}
END_TEST

/* ---- limits and bad lengths ---------------------------------------------- */

START_TEST(bad_multibulk_counts_are_rejected)
{
    const char *e = "ERR Protocol error: invalid multibulk length";
    EXPECT_ERR(NULL, "*-\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*-0\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*abc\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*+1\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*01\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*1 \r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*1\rX", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*2147483648\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*9223372036854775807\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*9223372036854775808\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*99999999999999999999999\r\n", HKV_EPROTO, e);
    EXPECT_ERR(&small_limits, "*11\r\n", HKV_ETOOBIG, e);
}
END_TEST

START_TEST(bad_bulk_lengths_are_rejected)
{
    const char *e = "ERR Protocol error: invalid bulk length";
    EXPECT_ERR(NULL, "*1\r\n$-1\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*1\r\n$-2\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*1\r\n$abc\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*1\r\n$\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*1\r\n$03\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*1\r\n$3\rX", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "*1\r\n$2147483648\r\n", HKV_ETOOBIG, e);       /* 2^31 */
    EXPECT_ERR(NULL, "*1\r\n$536870913\r\n", HKV_ETOOBIG, e);        /* 512 MB + 1 */
    EXPECT_ERR(NULL, "*1\r\n$9223372036854775807\r\n", HKV_ETOOBIG, e);
    EXPECT_ERR(NULL, "*1\r\n$9223372036854775808\r\n", HKV_EPROTO, e); /* 2^63 */
    EXPECT_ERR(NULL, "*1\r\n$18446744073709551616\r\n", HKV_EPROTO, e);
    EXPECT_ERR(&small_limits, "*1\r\n$101\r\n", HKV_ETOOBIG, e);
}
END_TEST

START_TEST(bulk_at_the_limit_waits_for_its_bytes)
{
    struct one o;
    parse_one(&o, NULL, "*1\r\n$536870912\r\n", 17);
    ck_assert_int_eq(o.rc, HKV_EAGAIN);
    resp_parser_deinit(&o.p);
    parse_one(&o, &small_limits, "*1\r\n$100\r\n", 10);
    ck_assert_int_eq(o.rc, HKV_EAGAIN);
    resp_parser_deinit(&o.p);
}
END_TEST

START_TEST(expected_dollar_names_the_byte)
{
    EXPECT_ERR(NULL, "*1\r\nPING\r\n", HKV_EPROTO, "ERR Protocol error: expected '$', got 'P'");
    EXPECT_ERR(NULL, "*2\r\n$1\r\na\r\n:1\r\n", HKV_EPROTO,
               "ERR Protocol error: expected '$', got ':'");
    EXPECT_ERR(NULL, "*1\r\n\r\n", HKV_EPROTO, "ERR Protocol error: expected '$', got ' '");
}
END_TEST

START_TEST(bulk_without_crlf_is_rejected)
{
    EXPECT_ERR(NULL, "*1\r\n$3\r\nabcXY", HKV_EPROTO,
               "ERR Protocol error: expected CRLF after bulk data");
    EXPECT_ERR(NULL, "*1\r\n$3\r\nabcd\r\n", HKV_EPROTO,
               "ERR Protocol error: expected CRLF after bulk data");
}
END_TEST

/* A line of n filler bytes after `prefix`, without a newline. */
static char *long_line(const char *prefix, char fill, size_t n, size_t *len)
{
    size_t pl = strlen(prefix);
    char *s = malloc(pl + n + 2);
    memcpy(s, prefix, pl);
    memset(s + pl, fill, n);
    *len = pl + n;
    return s;
}

START_TEST(long_header_and_inline_lines_are_rejected_at_64k)
{
    size_t len;
    struct one o;
    char *s;

    /* A `*` line: 65536 bytes without CR wait, 65537 are too many. */
    s = long_line("*", '1', 65535, &len);
    parse_one(&o, NULL, s, len);
    ck_assert_int_eq(o.rc, HKV_EAGAIN);
    resp_parser_deinit(&o.p);
    s[len++] = '1';
    parse_one(&o, NULL, s, len);
    ck_assert_int_eq(o.rc, HKV_ETOOBIG);
    ck_assert_str_eq(o.err, "ERR Protocol error: too big mbulk count string");
    resp_parser_deinit(&o.p);
    free(s);

    /* A `$` line. */
    s = long_line("*1\r\n$", '1', 65535, &len);
    parse_one(&o, NULL, s, len);
    ck_assert_int_eq(o.rc, HKV_EAGAIN);
    resp_parser_deinit(&o.p);
    s[len++] = '1';
    parse_one(&o, NULL, s, len);
    ck_assert_int_eq(o.rc, HKV_ETOOBIG);
    ck_assert_str_eq(o.err, "ERR Protocol error: too big bulk count string");
    resp_parser_deinit(&o.p);
    free(s);

    /* An inline line, also when its newline is already there. */
    s = long_line("", 'a', 65536, &len);
    parse_one(&o, NULL, s, len);
    ck_assert_int_eq(o.rc, HKV_EAGAIN);
    resp_parser_deinit(&o.p);
    s[len] = '\n';
    parse_one(&o, NULL, s, len + 1);
    ck_assert_int_eq(o.rc, HKV_OK);
    ck_assert_uint_eq(o.consumed, 65537);
    resp_parser_deinit(&o.p);
    s[len++] = 'a';
    parse_one(&o, NULL, s, len);
    ck_assert_int_eq(o.rc, HKV_ETOOBIG);
    ck_assert_str_eq(o.err, "ERR Protocol error: too big inline request");
    resp_parser_deinit(&o.p);
    s[len] = '\n';
    parse_one(&o, NULL, s, len + 1);
    ck_assert_int_eq(o.rc, HKV_ETOOBIG);
    ck_assert_str_eq(o.err, "ERR Protocol error: too big inline request");
    resp_parser_deinit(&o.p);
    free(s);

    /* Configured limits apply the same way. */
    EXPECT_ERR(&small_limits,
               "01234567890123456789012345678901234567890123456789012345678901234", HKV_ETOOBIG,
               "ERR Protocol error: too big inline request");
    EXPECT_ERR(&small_limits,
               "*1\r\n$00000000000000000000000000000000000000000000000000000000000000001",
               HKV_ETOOBIG, "ERR Protocol error: too big bulk count string");
}
END_TEST

START_TEST(inline_argument_count_is_bounded)
{
    EXPECT_ERR(&small_limits, "a b c d e f g h i j k\r\n", HKV_ETOOBIG,
               "ERR Protocol error: too many arguments in inline request");
    struct one o;
    parse_one(&o, &small_limits, "a b c d e f g h i j\r\n", 21);
    ck_assert_int_eq(o.rc, HKV_OK);
    ck_assert_int_eq(o.req.argc, 10);
    resp_parser_deinit(&o.p);
}
END_TEST

/* ---- argc 0 --------------------------------------------------------------- */

START_TEST(empty_requests_give_argc_zero)
{
    static const struct { const char *in; size_t len, consumed; } cases[] = {
        { "*0\r\n", 4, 4 },
        { "*-1\r\n", 5, 5 },
        { "*-2\r\n", 5, 5 },          /* Redis skips any count below 1 */
        { "*-10\r\n", 6, 6 },
        { "*-2147483648\r\n", 14, 14 },
        { "\r\n", 2, 2 },
        { "\n", 1, 1 },
        { "  \t \r\n", 6, 6 },
        { "\0\0\0\r\n", 5, 5 },
        { "*0\r\n*1\r\n$1\r\na\r\n", 15, 4 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct one o;
        parse_one(&o, NULL, cases[i].in, cases[i].len);
        ck_assert_int_eq(o.rc, HKV_OK);
        ck_assert_int_eq(o.req.argc, 0);
        ck_assert_uint_eq(o.consumed, cases[i].consumed);
        resp_parser_deinit(&o.p);
    }
}
END_TEST

/* ---- HTTP and junk -------------------------------------------------------- */

START_TEST(http_requests_are_refused)
{
    const char *e = "ERR Protocol error: HTTP request on the Redis port";
    EXPECT_ERR(NULL, "POST / HTTP/1.1\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "post /x HTTP/1.0\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "GET / HTTP/1.1\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "GET /index.html HTTP/1.0\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "Host: example.com\r\n", HKV_EPROTO, e);
    EXPECT_ERR(NULL, "host: x\r\n", HKV_EPROTO, e);
    /* Redis commands that merely start like HTTP still parse. */
    EXPECT_ARGS("GET /key\r\n", 10, 2, A("GET"), A("/key"));
    EXPECT_ARGS("GET a HTTP/1.1\r\n", 16, 3, A("GET"), A("a"), A("HTTP/1.1"));
    EXPECT_ARGS("*1\r\n$4\r\nPOST\r\n", 14, 1, A("POST"));
    EXPECT_ARGS("Hostname\r\n", 10, 1, A("Hostname"));
}
END_TEST

START_TEST(junk_streams_end_in_an_error_without_growing)
{
    size_t len = 200000;
    char *zeros = calloc(1, len);
    struct one o;
    parse_one(&o, NULL, zeros, len);
    ck_assert_int_eq(o.rc, HKV_ETOOBIG);
    ck_assert_str_eq(o.err, "ERR Protocol error: too big inline request");
    ck_assert_int_eq(o.p.cap, 0);
    ck_assert_uint_eq(o.p.scratch_cap, 0);
    resp_parser_deinit(&o.p);
    free(zeros);

    char junk[4096];
    unsigned x = 12345;
    for (size_t i = 0; i < sizeof(junk); i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (char)(x >> 16);
    }
    check_every_split(&small_limits, junk, sizeof(junk));
}
END_TEST

Suite *resp_suite(void)
{
    Suite *s = suite_create("resp");
    struct {
        const char *name;
        const TTest *tests[8];
    } groups[] = {
        { "multibulk", { multibulk_whole_request_parses,
                         multibulk_pipelined_requests_parse_one_at_a_time,
                         argv_is_reused_and_grows_only_as_arguments_arrive,
                         partial_request_keeps_offsets_not_rescanning } },
        { "incremental", { every_byte_boundary_gives_the_same_requests,
                           consumed_marks_the_end_of_each_request } },
        { "inline", { inline_splits_on_blanks, inline_quotes_and_escapes_follow_sdssplitargs,
                      inline_unbalanced_quotes_are_an_error } },
        { "limits", { bad_multibulk_counts_are_rejected, bad_bulk_lengths_are_rejected,
                      bulk_at_the_limit_waits_for_its_bytes, expected_dollar_names_the_byte,
                      bulk_without_crlf_is_rejected,
                      long_header_and_inline_lines_are_rejected_at_64k,
                      inline_argument_count_is_bounded } },
        { "empty", { empty_requests_give_argc_zero } },
        { "http_junk", { http_requests_are_refused,
                         junk_streams_end_in_an_error_without_growing } },
    };
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
        TCase *tc = tcase_create(groups[g].name);
        tcase_set_timeout(tc, 60);
        for (size_t t = 0; t < 8 && groups[g].tests[t] != NULL; t++)
            tcase_add_test(tc, groups[g].tests[t]);
        suite_add_tcase(s, tc);
    }
    return s;
}
