/*
 * check_strops_bits.c - proto/strops' bit and sequence commands as Redis
 * 7.0 answers them: SETBIT / GETBIT, BITCOUNT, BITPOS and LCS, and how
 * replies encode under RESP2 and RESP3 (the others: check_strops.c).  Every expected reply was observed from Debian's
 * redis-server 7.0.15 with the same value and arguments; limit cases ran
 * with `CONFIG SET proto-max-bulk-len 1048576` where env.max_len is 1 MB.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/strops.h"
#include "tests/unit/strops_fixture.h"

/* ---- SETBIT / GETBIT ----------------------------------------------------- */

START_TEST(setbit_replies_old_bit_and_grows)
{
    CK_INT(strops_setbit(&env, key(), A("7"), A("1"), &res), 0);
    CK_STORED("\x01");
    keep();
    CK_INT(strops_setbit(&env, key(), A("7"), A("1"), &res), 1);
    ck_assert_int_eq(res.store, 0);       /* nothing changed */
    CK_INT(strops_setbit(&env, key(), A("7"), A("0"), &res), 1);
    CK_STORED("\x00");
    keep();
    CK_INT(strops_setbit(&env, key(), A("100"), A("0"), &res), 0);
    ck_assert_int_eq(res.store, 1);       /* grown to 13 bytes: STRLEN b -> 13 */
    ck_assert_uint_eq(res.value_len, 13);
    /* a zero bit on an absent key still creates it: GET nb -> "\x00" */
    CK_INT(strops_setbit(&env, NULL, A("3"), A("0"), &res), 0);
    CK_STORED("\x00");
    KEY_SET("12345");
    CK_INT(strops_setbit(&env, key(), A("0"), A("1"), &res), 0);
    CK_STORED("\xb1" "2345");
}
END_TEST

START_TEST(setbit_errors)
{
    const char *ebit = "ERR bit is not an integer or out of range";
    const char *eoff = "ERR bit offset is not an integer or out of range";
    static const char *badbit[] = { "2", "-1", "x", " 1", "01", "9223372036854775808" };
    for (size_t i = 0; i < sizeof(badbit) / sizeof(badbit[0]); i++) {
        struct resp_slice a = { badbit[i], strlen(badbit[i]) };
        CK_ERR(strops_setbit(&env, NULL, A("0"), &a, &res), HKV_EINVAL, ebit);
    }
    CK_ERR(strops_setbit(&env, NULL, A("-1"), A("1"), &res), HKV_EINVAL, eoff);
    CK_ERR(strops_setbit(&env, NULL, A("x"), A("1"), &res), HKV_EINVAL, eoff);
    CK_ERR(strops_setbit(&env, NULL, A("+1"), A("1"), &res), HKV_EINVAL, eoff);
    /* the offset is checked first */
    CK_ERR(strops_setbit(&env, NULL, A("x"), A("2"), &res), HKV_EINVAL, eoff);
    /* 512 MB: bit 4294967295 is the last one */
    CK_ERR(strops_setbit(&env, NULL, A("4294967296"), A("0"), &res), HKV_ETOOBIG, eoff);
    CK_ERR(strops_setbit(&env, NULL, A("4294967296"), A("2"), &res), HKV_ETOOBIG, eoff);
    CK_ERR(strops_getbit(&env, NULL, A("4294967296"), &res), HKV_ETOOBIG, eoff);
    CK_INT(strops_getbit(&env, NULL, A("4294967295"), &res), 0);
    CK_ERR(strops_getbit(&env, NULL, A("x"), &res), HKV_EINVAL, eoff);
    CK_ERR(strops_getbit(&env, NULL, A("-1"), &res), HKV_EINVAL, eoff);
}
END_TEST

START_TEST(setbit_limit_is_the_parameter)
{
    env.max_len = MB;
    CK_INT(strops_setbit(&env, NULL, A("8388607"), A("1"), &res), 0);
    ck_assert_int_eq(res.store, 1);
    ck_assert_uint_eq(res.value_len, MB);
    ck_assert_int_eq((unsigned char)res.value[MB - 1], 0x01);
    CK_ERR(strops_setbit(&env, NULL, A("8388608"), A("1"), &res), HKV_ETOOBIG,
           "ERR bit offset is not an integer or out of range");
    CK_ERR(strops_getbit(&env, NULL, A("8388608"), &res), HKV_ETOOBIG,
           "ERR bit offset is not an integer or out of range");
    CK_INT(strops_getbit(&env, NULL, A("8388607"), &res), 0);
}
END_TEST

START_TEST(getbit_reads_bits_msb_first)
{
    KEY_SET("\xff\xf0\x00");
    CK_INT(strops_getbit(&env, key(), A("0"), &res), 1);
    CK_INT(strops_getbit(&env, key(), A("11"), &res), 1);
    CK_INT(strops_getbit(&env, key(), A("12"), &res), 0);
    CK_INT(strops_getbit(&env, key(), A("23"), &res), 0);
    CK_INT(strops_getbit(&env, key(), A("24"), &res), 0);
    CK_INT(strops_getbit(&env, key(), A("1000000"), &res), 0);
    CK_INT(strops_getbit(&env, NULL, A("3"), &res), 0);
    ck_assert_int_eq(res.store, 0);
}
END_TEST

/* ---- BITCOUNT ------------------------------------------------------------ */

static hkv_status bitcount(const struct resp_slice *cur, const char *line)
{
    struct resp_slice a[8];
    int n = split(line, a, 8);
    return strops_bitcount(&env, cur, a, n, &res);
}

START_TEST(bitcount_ranges_in_bytes_and_bits)
{
    KEY_SET("\xff\xf0\x00");
    struct { const char *args; int64_t want; } c[] = {
        { "", 12 }, { "0 0", 8 }, { "1 1", 4 }, { "1 -1", 4 }, { "0 -1 bit", 12 },
        { "5 12 bit", 7 }, { "5 12 BIT", 7 }, { "5 12 byte", 0 },
        { "-1 -2 foo", 0 },           /* empty negative range answered before BIT|BYTE */
        { "-100 100", 12 }, { "-100 -100", 8 }, { "2 1", 0 }, { "3 5", 0 },
        { "0 -100", 8 }, { "0 -100 bit", 1 },
        { "-9223372036854775808 9223372036854775807", 12 },
        { "-9223372036854775808 9223372036854775807 bit", 12 },
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        hkv_status st = bitcount(key(), c[i].args);
        ck_assert_msg(st == HKV_OK && res.reply.type == STROPS_R_INT &&
                      res.reply.integer == c[i].want,
                      "BITCOUNT s %s: st %d, got %lld, want %lld", c[i].args, st,
                      (long long)res.reply.integer, (long long)c[i].want);
    }
    KEY_SET("\xff\xff\xff");
    CK_INT(bitcount(key(), "-100 -200"), 0);
    KEY_SET("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00");
    CK_INT(bitcount(key(), "3 165 bit"), 157);
}
END_TEST

START_TEST(bitcount_absent_empty_and_errors)
{
    /* an absent key answers 0 before its arguments are read */
    CK_INT(bitcount(NULL, ""), 0);
    CK_INT(bitcount(NULL, "x"), 0);
    CK_INT(bitcount(NULL, "1 2 3 4 5"), 0);
    KEY_SET("");
    CK_INT(bitcount(key(), ""), 0);
    CK_INT(bitcount(key(), "0 -1"), 0);
    CK_INT(bitcount(key(), "0 -1 bit"), 0);
    KEY_SET("\xff\xf0\x00");
    CK_ERR(bitcount(key(), "5 12 foo"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(bitcount(key(), "-5 -2 foo"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(bitcount(key(), "1"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(bitcount(key(), "1 2 bit x"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(bitcount(key(), "x 2"), HKV_EINVAL, E_INT);
    CK_ERR(bitcount(key(), "1 x"), HKV_EINVAL, E_INT);
    CK_ERR(bitcount(key(), "x y foo"), HKV_EINVAL, E_INT);
}
END_TEST

/* ---- BITPOS -------------------------------------------------------------- */

static hkv_status bitpos(const struct resp_slice *cur, const char *line)
{
    struct resp_slice a[8];
    int n = split(line, a, 8);
    return strops_bitpos(&env, cur, a, n, &res);
}

struct bitpos_case {
    const char *args;
    int64_t want;
};

static void bitpos_table(const struct bitpos_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        hkv_status st = bitpos(key(), c[i].args);
        ck_assert_msg(st == HKV_OK && res.reply.type == STROPS_R_INT &&
                      res.reply.integer == c[i].want,
                      "BITPOS %s: st %d, got %lld, want %lld", c[i].args, st,
                      (long long)res.reply.integer, (long long)c[i].want);
    }
}

START_TEST(bitpos_zero_without_end_finds_the_bit_after_the_string)
{
    KEY_SET("\xff\xff\xff");
    static const struct bitpos_case c[] = {
        { "0", 24 }, { "1", 0 }, { "0 0", 24 }, { "0 1", 24 }, { "0 -1", 24 },
        { "0 0 -1", -1 },             /* an explicit end: no padding */
        { "0 5", -1 },                /* start past the end: empty range */
        { "0 0 -1 bit", -1 }, { "0 3 10 bit", -1 },
        { "1 -100 -200", 0 },         /* both clamp to byte 0 (BITCOUNT says 0 here) */
        { "0 -100 -200", -1 },
        { "0 -9223372036854775808 9223372036854775807", -1 },
        { "0 -9223372036854775808", 24 },
    };
    bitpos_table(c, sizeof(c) / sizeof(c[0]));
    KEY_SET("\xff");
    static const struct bitpos_case one[] = {
        { "0 0 0", -1 }, { "0 0", 8 }, { "0 3 -1 bit", -1 }, { "0 3 7 bit", -1 },
        { "1 3 7 bit", 3 },
    };
    bitpos_table(one, sizeof(one) / sizeof(one[0]));
}
END_TEST

START_TEST(bitpos_searches_ranges)
{
    KEY_SET("\x00\x00\x00");
    static const struct bitpos_case z[] = {
        { "1", -1 }, { "0", 0 }, { "1 0 -1", -1 }, { "1 0 -1 bit", -1 }, { "0 5 -1 bit", 5 },
    };
    bitpos_table(z, sizeof(z) / sizeof(z[0]));
    KEY_SET("\x00\xff\xf0");
    static const struct bitpos_case s[] = {
        { "1", 8 }, { "0", 0 }, { "1 2", 16 }, { "0 1", 20 }, { "0 1 -1", 20 },
        { "0 1 1", -1 }, { "1 7 15 bit", 8 }, { "0 8 19 bit", -1 }, { "0 8 20 bit", 20 },
        { "0 8 -1 bit", 20 }, { "1 -1 -1", 16 }, { "1 -1 -2", -1 }, { "1 2 1", -1 },
        { "1 -9223372036854775808 9223372036854775807 bit", 8 },
    };
    bitpos_table(s, sizeof(s) / sizeof(s[0]));
    /* long runs: the word-at-a-time skip and the edge bytes */
    KEY_SET("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00");
    static const struct bitpos_case w[] = {
        { "0", 160 }, { "0 0 -2", -1 }, { "0 0 -2 byte", -1 }, { "1 19 20", 152 },
        { "0 3 165 bit", 160 }, { "0 3 159 bit", -1 },
    };
    bitpos_table(w, sizeof(w) / sizeof(w[0]));
    KEY_SET("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10");
    static const struct bitpos_case t[] = {
        { "1", 155 }, { "1 1 -1 bit", 155 }, { "1 0 150 bit", -1 }, { "0 8 -1 bit", 8 },
    };
    bitpos_table(t, sizeof(t) / sizeof(t[0]));
}
END_TEST

START_TEST(bitpos_absent_empty_and_errors)
{
    CK_INT(bitpos(NULL, "0"), 0);
    CK_INT(bitpos(NULL, "1"), -1);
    CK_INT(bitpos(NULL, "0 x y z w"), 0);    /* range not read for an absent key */
    CK_ERR(bitpos(NULL, "2"), HKV_EINVAL, "ERR The bit argument must be 1 or 0.");
    CK_ERR(bitpos(NULL, "x"), HKV_EINVAL, E_INT);
    KEY_SET("");
    CK_INT(bitpos(key(), "0"), -1);          /* an empty string is not an absent key */
    CK_INT(bitpos(key(), "1"), -1);
    CK_INT(bitpos(key(), "0 0"), -1);
    KEY_SET("\x00\xff\xf0");
    CK_ERR(bitpos(key(), "2"), HKV_EINVAL, "ERR The bit argument must be 1 or 0.");
    CK_ERR(bitpos(key(), "-1"), HKV_EINVAL, "ERR The bit argument must be 1 or 0.");
    CK_ERR(bitpos(key(), "x"), HKV_EINVAL, E_INT);
    CK_ERR(bitpos(key(), "01"), HKV_EINVAL, E_INT);
    CK_ERR(bitpos(key(), "1 x"), HKV_EINVAL, E_INT);
    CK_ERR(bitpos(key(), "1 0 x"), HKV_EINVAL, E_INT);
    CK_ERR(bitpos(key(), "1 0 1 foo"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(bitpos(key(), "1 0 1 bit extra"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(bitpos(key(), "1 x 1 foo"), HKV_EINVAL, E_INT);
    CK_ERR(bitpos(key(), "1 0 x foo"), HKV_EINVAL, E_SYNTAX);   /* BIT|BYTE before end */
    KEY_SET("\xff\xff\xff");
    CK_ERR(bitpos(key(), "0 3 bit"), HKV_EINVAL, E_INT);        /* "bit" read as the end */
    CK_ERR(strops_bitpos(&env, key(), NULL, 0, &res), HKV_EINVAL,
           "ERR wrong number of arguments for 'bitpos' command");
}
END_TEST

/* ---- LCS ----------------------------------------------------------------- */

static hkv_status lcs(const struct resp_slice *a, const struct resp_slice *b, const char *line)
{
    struct resp_slice args[8];
    int n = split(line, args, 8);
    return strops_lcs(&env, a, b, args, n, &res);
}

static void ck_match(size_t i, uint32_t as, uint32_t ae, uint32_t bs, uint32_t be)
{
    ck_assert_uint_lt(i, res.reply.nmatches);
    const struct strops_match *m = &res.reply.matches[i];
    ck_assert_msg(m->a_start == as && m->a_end == ae && m->b_start == bs && m->b_end == be &&
                  m->len == ae - as + 1,
                  "match %zu: [[%u,%u],[%u,%u],%u]", i, m->a_start, m->a_end, m->b_start,
                  m->b_end, m->len);
}

START_TEST(lcs_string_len_and_idx)
{
    const struct resp_slice *a = A("ohmytext"), *b = A("mynewtext");
    CK_BULK(lcs(a, b, ""), "mytext");
    CK_INT(lcs(a, b, "len"), 6);
    CK_INT(lcs(a, b, "LEN"), 6);
    CK_INT(lcs(a, b, "len len"), 6);
    CK_BULK(lcs(a, b, "withmatchlen"), "mytext");     /* ignored without IDX */
    CK_BULK(lcs(a, b, "minmatchlen 3"), "mytext");

    ck_assert_int_eq(lcs(a, b, "idx"), HKV_OK);
    ck_assert_int_eq(res.reply.type, STROPS_R_LCS_IDX);
    ck_assert_int_eq(res.reply.integer, 6);
    ck_assert_int_eq(res.reply.withmatchlen, 0);
    ck_assert_uint_eq(res.reply.nmatches, 2);
    ck_match(0, 4, 7, 5, 8);
    ck_match(1, 2, 3, 0, 1);

    ck_assert_int_eq(lcs(a, b, "idx minmatchlen 4 withmatchlen"), HKV_OK);
    ck_assert_int_eq(res.reply.withmatchlen, 1);
    ck_assert_uint_eq(res.reply.nmatches, 1);
    ck_match(0, 4, 7, 5, 8);
    ck_assert_int_eq(res.reply.integer, 6);            /* len is the whole LCS's */

    ck_assert_int_eq(lcs(a, b, "minmatchlen -5 idx"), HKV_OK);   /* negative = 0 */
    ck_assert_uint_eq(res.reply.nmatches, 2);
    ck_assert_int_eq(lcs(a, b, "IdX MinMatchLen 2 WithMatchLen"), HKV_OK);
    ck_assert_uint_eq(res.reply.nmatches, 2);
    ck_assert_int_eq(res.reply.withmatchlen, 1);

    ck_assert_int_eq(lcs(a, a, "idx withmatchlen"), HKV_OK);
    ck_assert_uint_eq(res.reply.nmatches, 1);
    ck_match(0, 0, 7, 0, 7);
    ck_assert_int_eq(res.reply.integer, 8);
    ck_assert_int_eq(res.store, 0);
}
END_TEST

START_TEST(lcs_absent_keys_are_empty_strings)
{
    CK_BULK(lcs(A("ohmytext"), NULL, ""), "");
    CK_INT(lcs(NULL, NULL, "len"), 0);
    ck_assert_int_eq(lcs(NULL, NULL, "idx"), HKV_OK);
    ck_assert_int_eq(res.reply.type, STROPS_R_LCS_IDX);
    ck_assert_uint_eq(res.reply.nmatches, 0);
    ck_assert_int_eq(res.reply.integer, 0);
}
END_TEST

START_TEST(lcs_option_errors_in_redis_order)
{
    const struct resp_slice *a = A("ohmytext"), *b = A("mynewtext");
    const char *both = "ERR If you want both the length and indexes, please just use IDX.";
    CK_ERR(lcs(a, b, "len idx"), HKV_EINVAL, both);
    CK_ERR(lcs(a, b, "idx len"), HKV_EINVAL, both);
    CK_ERR(lcs(a, b, "foo"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(lcs(a, b, "minmatchlen"), HKV_EINVAL, E_SYNTAX);   /* no value: not an option */
    CK_ERR(lcs(a, b, "minmatchlen x"), HKV_EINVAL, E_INT);
    CK_ERR(lcs(a, b, "len minmatchlen x"), HKV_EINVAL, E_INT);
    CK_ERR(lcs(a, b, "foo minmatchlen x"), HKV_EINVAL, E_SYNTAX);
    CK_ERR(lcs(a, b, "minmatchlen x foo"), HKV_EINVAL, E_INT);
    CK_ERR(lcs(a, b, "len idx foo"), HKV_EINVAL, E_SYNTAX);   /* options before the clash */
    CK_ERR(lcs(a, b, "minmatchlen 9223372036854775808"), HKV_EINVAL, E_INT);
}
END_TEST

START_TEST(lcs_table_bounded_by_proto_max_bulk_len)
{
    env.max_len = MB;
    char sa[512], sb[511];
    memset(sa, 'a', sizeof(sa));
    memset(sb, 'b', sizeof(sb));
    struct resp_slice a511 = { sa, 511 }, a512 = { sa, 512 }, b511 = { sb, 511 };
    const char *toobig =
        "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";
    CK_INT(lcs(&a511, &b511, "len"), 0);             /* 512 * 512 * 4 = 1 MB: fits */
    CK_BULK(lcs(&a511, &b511, ""), "");
    CK_ERR(lcs(&a512, &b511, "len"), HKV_ETOOBIG, toobig);
    CK_ERR(lcs(&a512, &b511, ""), HKV_ETOOBIG, toobig);
    CK_BULK(lcs(&a512, NULL, ""), "");
    /* LEN needs two rows, not the table */
    buf_deinit(&work);
    CK_INT(lcs(&a511, &a511, "len"), 511);
    ck_assert_uint_lt(work.cap, 64 * 1024);
}
END_TEST

/* The walk back follows Redis's tie rule; these answers came from 7.0.15. */
START_TEST(lcs_ties_resolved_as_redis)
{
    CK_BULK(lcs(A("abcbdab"), A("bdcaba"), ""), "bdab");
    ck_assert_int_eq(lcs(A("abcbdab"), A("bdcaba"), "idx withmatchlen"), HKV_OK);
    ck_assert_uint_eq(res.reply.nmatches, 2);
    ck_match(0, 5, 6, 3, 4);
    ck_match(1, 3, 4, 0, 1);
    ck_assert_int_eq(res.reply.integer, 4);
    CK_BULK(lcs(A("abab"), A("baba"), ""), "bab");
    ck_assert_int_eq(lcs(A("abab"), A("baba"), "idx withmatchlen"), HKV_OK);
    ck_assert_uint_eq(res.reply.nmatches, 1);
    ck_match(0, 1, 3, 0, 2);
}
END_TEST

/* ---- reply encoding ------------------------------------------------------ */

static void ck_encoded(int proto, const char *want)
{
    struct hkv_buf out = HKV_BUF_INIT;
    ck_assert_int_eq(strops_reply_encode(&out, proto, &res.reply), HKV_OK);
    ck_assert_msg(out.len == strlen(want) && memcmp(out.data, want, out.len) == 0,
                  "encoded '%.*s', want '%s'", (int)out.len, out.data, want);
    buf_deinit(&out);
}

START_TEST(replies_encode_as_redis_writes_them)
{
    const struct resp_slice *a = A("ohmytext"), *b = A("mynewtext");
    lcs(a, b, "idx withmatchlen");
    const char *body =
        "$7\r\nmatches\r\n*2\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n"
        "*3\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n:2\r\n$3\r\nlen\r\n:6\r\n";
    char want[256];
    snprintf(want, sizeof(want), "*4\r\n%s", body);
    ck_encoded(2, want);
    snprintf(want, sizeof(want), "%%2\r\n%s", body);
    ck_encoded(3, want);
    lcs(a, b, "idx minmatchlen 3");
    ck_encoded(2, "*4\r\n$7\r\nmatches\r\n*1\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n"
                  "$3\r\nlen\r\n:6\r\n");
    ck_encoded(3, "%2\r\n$7\r\nmatches\r\n*1\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n"
                  "$3\r\nlen\r\n:6\r\n");
    lcs(a, b, "");
    ck_encoded(3, "$6\r\nmytext\r\n");
    strops_getrange(&env, NULL, A("0"), A("-1"), &res);
    ck_encoded(2, "$0\r\n\r\n");
    strops_incrbyfloat(&env, NULL, A("nan"), &res);
    ck_encoded(3, "-ERR value is not a valid float\r\n");
    lcs(a, b, "len");
    ck_encoded(2, ":6\r\n");
}
END_TEST

Suite *strops_bits_suite(void)
{
    Suite *s = suite_create("strops_bits");
    struct {
        const char *name;
        const TTest *tests[8];
    } groups[] = {
        { "setbit_getbit", { setbit_replies_old_bit_and_grows, setbit_errors,
                             setbit_limit_is_the_parameter, getbit_reads_bits_msb_first } },
        { "bitcount", { bitcount_ranges_in_bytes_and_bits, bitcount_absent_empty_and_errors } },
        { "bitpos", { bitpos_zero_without_end_finds_the_bit_after_the_string,
                      bitpos_searches_ranges, bitpos_absent_empty_and_errors } },
        { "lcs", { lcs_string_len_and_idx, lcs_absent_keys_are_empty_strings,
                   lcs_option_errors_in_redis_order, lcs_table_bounded_by_proto_max_bulk_len,
                   lcs_ties_resolved_as_redis } },
        { "encode", { replies_encode_as_redis_writes_them } },
    };
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
        TCase *tc = tcase_create(groups[g].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        for (size_t i = 0; i < 8 && groups[g].tests[i] != NULL; i++)
            tcase_add_test(tc, groups[g].tests[i]);
        suite_add_tcase(s, tc);
    }
    return s;
}
