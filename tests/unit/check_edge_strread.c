/* check_edge_strread.c - the reads the edge computes over a value it read
 * (server/edge/edge_strread.h: GETRANGE SUBSTR GETBIT BITCOUNT BITPOS LCS,
 * and STRLEN TYPE of edge_read.c) and the commands it hands to the keys'
 * owner as words (edge_call.h: APPEND ...), in this process
 * (edge_fixture.h).  The answers are Redis's documented examples; a value
 * read once is computed over from the colo cache afterwards; a CALL goes to
 * the owner as its words and its RESP reply comes back as it is. */
#include "tests/unit/edge_fixture.h"

static struct {
    int gets, calls;
    char call_words[8][32];
    uint32_t call_nargs;
} O;

static const struct {
    const char *key;
    const char *val;
    size_t len;
} VALUES[] = {
    {"s", "This is a string", 16},
    {"foobar", "foobar", 6},
    {"bits", "\xff\xf0\x00", 3},
    {"bits2", "\x00\xff\xf0", 3},
    {"k1", "ohmytext", 8},
    {"k2", "mynewtext", 9},
    {"hw", "hello world", 11},
};

static void owner(struct fake_owner *fo, struct fo_conn *fc, const struct wire_msg *m)
{
    struct hkv_buf b = HKV_BUF_INIT;
    if (m->type == WIRE_STATS) {
        wire_put_stats_reply(&b, m->id, NULL, 0);
    } else if (m->type == WIRE_GET) {
        O.gets++;
        struct wire_item items[4];
        ck_assert_uint_le(m->u.get.nkeys, 4);
        for (uint32_t k = 0; k < m->u.get.nkeys; k++) {
            items[k] = (struct wire_item){false, wire_cstr(""), 0, 0};
            for (size_t i = 0; i < sizeof(VALUES) / sizeof(VALUES[0]); i++)
                if (strlen(VALUES[i].key) == m->u.get.keys[k].len &&
                    memcmp(VALUES[i].key, m->u.get.keys[k].p, m->u.get.keys[k].len) == 0)
                    items[k] = (struct wire_item){true, wire_slice(VALUES[i].val, VALUES[i].len),
                                                  (hkv_stamp)(i + 1), 0};
        }
        if (m->u.get.nkeys > 1)
            wire_put_values(&b, m->id, items, m->u.get.nkeys);
        else if (items[0].found)
            wire_put_value(&b, m->id, items[0].value, items[0].stamp, 0);
        else
            wire_put_notfound(&b, m->id, 0);
    } else if (m->type == WIRE_CALL) {
        O.calls++;
        O.call_nargs = m->u.call.nargs;
        for (uint32_t i = 0; i < m->u.call.nargs && i < 8; i++)
            snprintf(O.call_words[i], sizeof(O.call_words[i]), "%.*s",
                     (int)m->u.call.args[i].len, m->u.call.args[i].p);
        wire_put_resp(&b, m->id, wire_cstr(":42\r\n"), NULL, 0);
    }
    if (buf_unread(&b) > 0)
        fo_reply(fc, &b);
    buf_deinit(&b);
}

static void long_fresh(struct cfg *cfg)
{
    struct cfg_error err;
    ck_assert_int_eq(cfg_set(cfg, "class", "default fresh 60s keep 120s", &err), HKV_OK);
}

static void setup(void)
{
    memset(&O, 0, sizeof(O));
    ef_setup(1, owner, long_fresh);
}

static void teardown(void)
{
    ef_teardown();
}

START_TEST(getrange_takes_inclusive_offsets_from_either_end)
{
    int fd = ef_client();
    ef_call(fd, "$4\r\nThis\r\n", "GETRANGE", "s", "0", "3", NULL);
    ef_call(fd, "$3\r\ning\r\n", "GETRANGE", "s", "-3", "-1", NULL);
    ef_call(fd, "$16\r\nThis is a string\r\n", "GETRANGE", "s", "0", "-1", NULL);
    ef_call(fd, "$6\r\nstring\r\n", "GETRANGE", "s", "10", "100", NULL);
    ef_call(fd, "$0\r\n\r\n", "GETRANGE", "s", "5", "2", NULL);
    ef_call(fd, "$0\r\n\r\n", "GETRANGE", "nokey", "0", "-1", NULL);
    ef_call(fd, "$4\r\nThis\r\n", "SUBSTR", "s", "0", "3", NULL);
    ef_call(fd, "-ERR value is not an integer or out of range\r\n", "GETRANGE", "s", "a", "1",
            NULL);
    ck_assert_int_eq(O.gets, 2); /* s once, nokey once: then the colo cache */
}
END_TEST

START_TEST(strlen_and_type_read_the_value)
{
    int fd = ef_client();
    ef_call(fd, ":11\r\n", "STRLEN", "hw", NULL);
    ef_call(fd, ":0\r\n", "STRLEN", "nokey", NULL);
    ef_call(fd, "+string\r\n", "TYPE", "hw", NULL);
    ef_call(fd, "+none\r\n", "TYPE", "nokey", NULL);
}
END_TEST

START_TEST(bitcount_counts_set_bits_by_byte_or_bit_range)
{
    int fd = ef_client();
    ef_call(fd, ":26\r\n", "BITCOUNT", "foobar", NULL);
    ef_call(fd, ":4\r\n", "BITCOUNT", "foobar", "0", "0", NULL);
    ef_call(fd, ":6\r\n", "BITCOUNT", "foobar", "1", "1", NULL);
    ef_call(fd, ":6\r\n", "BITCOUNT", "foobar", "1", "1", "BYTE", NULL); /* BYTE: the default */
    ef_call(fd, ":17\r\n", "BITCOUNT", "foobar", "5", "30", "BIT", NULL);
    ef_call(fd, ":0\r\n", "BITCOUNT", "nokey", NULL);
    ef_call(fd, "-ERR syntax error\r\n", "BITCOUNT", "foobar", "1", "1", "WORD", NULL);
}
END_TEST

START_TEST(bitpos_finds_the_first_bit_of_a_value)
{
    int fd = ef_client();
    ef_call(fd, ":12\r\n", "BITPOS", "bits", "0", NULL);
    ef_call(fd, ":8\r\n", "BITPOS", "bits2", "1", "0", NULL);
    ef_call(fd, ":16\r\n", "BITPOS", "bits2", "1", "2", NULL);
    ef_call(fd, ":8\r\n", "BITPOS", "bits2", "1", "7", "15", "BIT", NULL);
    ef_call(fd, ":-1\r\n", "BITPOS", "bits2", "1", "0", "7", "BIT", NULL); /* a clear range */
    ef_call(fd, ":0\r\n", "BITPOS", "nokey", "0", NULL);
    ef_call(fd, ":-1\r\n", "BITPOS", "nokey", "1", NULL);
    ef_call(fd, "-ERR The bit argument must be 1 or 0.\r\n", "BITPOS", "bits", "2", NULL);
}
END_TEST

START_TEST(getbit_reads_one_bit)
{
    int fd = ef_client();
    ef_call(fd, ":1\r\n", "GETBIT", "bits", "0", NULL);
    ef_call(fd, ":1\r\n", "GETBIT", "bits", "11", NULL);
    ef_call(fd, ":0\r\n", "GETBIT", "bits", "12", NULL);
    ef_call(fd, ":0\r\n", "GETBIT", "bits", "1000", NULL); /* past the end */
    ef_call(fd, ":0\r\n", "GETBIT", "nokey", "3", NULL);
    ef_call(fd, "-ERR bit offset is not an integer or out of range\r\n", "GETBIT", "bits", "-1",
            NULL);
}
END_TEST

START_TEST(lcs_of_two_values)
{
    int fd = ef_client();
    ef_call(fd, "$6\r\nmytext\r\n", "LCS", "k1", "k2", NULL);
    ef_call(fd, ":6\r\n", "LCS", "k1", "k2", "LEN", NULL);
    ef_call(fd, "$0\r\n\r\n", "LCS", "k1", "nokey", NULL);
}
END_TEST

START_TEST(a_call_command_goes_to_the_owner_as_its_words)
{
    int fd = ef_client();
    ef_call(fd, ":42\r\n", "APPEND", "k", "tail", NULL);
    ck_assert_int_eq(O.calls, 1);
    ck_assert_uint_eq(O.call_nargs, 3);
    ck_assert_str_eq(O.call_words[0], "APPEND");
    ck_assert_str_eq(O.call_words[1], "k");
    ck_assert_str_eq(O.call_words[2], "tail");
    ef_call(fd, ":42\r\n", "SETRANGE", "k", "3", "xy", NULL);
    ck_assert_uint_eq(O.call_nargs, 4);
    ck_assert_str_eq(O.call_words[0], "SETRANGE");
    ck_assert_int_eq(O.calls, 2);
    /* its arity is checked at the edge like any command's */
    ef_call(fd, "-ERR wrong number of arguments for 'append' command\r\n", "APPEND", "k", NULL);
    ck_assert_int_eq(O.calls, 2);
}
END_TEST

Suite *edge_strread_suite(void)
{
    Suite *s = suite_create("edge_strread");
    TCase *tc = tcase_create("computed");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, getrange_takes_inclusive_offsets_from_either_end);
    tcase_add_test(tc, strlen_and_type_read_the_value);
    tcase_add_test(tc, bitcount_counts_set_bits_by_byte_or_bit_range);
    tcase_add_test(tc, bitpos_finds_the_first_bit_of_a_value);
    tcase_add_test(tc, getbit_reads_one_bit);
    tcase_add_test(tc, lcs_of_two_values);
    suite_add_tcase(s, tc);
    tc = tcase_create("call");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_call_command_goes_to_the_owner_as_its_words);
    suite_add_tcase(s, tc);
    return s;
}
