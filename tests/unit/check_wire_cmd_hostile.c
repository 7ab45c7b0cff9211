/*
 * check_wire_cmd_hostile.c - the command-carrying kinds (CALL, EXEC, RESP)
 * refuse hostile input before allocating: counts over the bound or lying,
 * shapes past argv, every truncation, trailing bytes and wrong field counts.
 */
#include "tests/unit/wire_fixture.h"

START_TEST(command_counts_over_max_items_are_etoobig_before_allocation)
{
    struct wire_decoder small;
    struct wire_msg m;
    const char *why;
    struct wire_slice a[5] = { S("SET"), S("a"), S("b"), S("c"), S("d") };
    struct wire_watch w[5] = { { S("a"), 1 }, { S("b"), 2 }, { S("c"), 3 }, { S("d"), 4 },
                               { S("e"), 5 } };
    struct wire_cmd one[5] = { { a, 1 }, { a, 1 }, { a, 1 }, { a, 1 }, { a, 1 } };
    struct wire_cmd three = { a, 3 };
    static const char *const over = "too many watches and arguments in one EXEC";
    wire_decoder_init(&small, 4);

    /* CALL of 5 args */
    ck_assert_int_eq(wire_put_call(&buf, 1, rid(1, 0, 0), 2, a, 5), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, &why), HKV_ETOOBIG);
    ck_assert_str_eq(why, "too many arguments in one message");
    ck_assert_uint_eq(m.type, WIRE_CALL);
    ck_assert_uint_eq(m.id, 1);
    /* EXEC with 5 watches */
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 2, rid(1, 0, 0), 2, w, 5, one, 1), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, &why), HKV_ETOOBIG);
    ck_assert_str_eq(why, over);
    ck_assert_uint_eq(m.id, 2);
    /* EXEC with 5 one-arg commands */
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 3, rid(1, 0, 0), 2, NULL, 0, one, 5), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, &why), HKV_ETOOBIG);
    ck_assert_str_eq(why, over);
    /* EXEC whose lists are each within the limit but not their sum: 2
     * watches + a command of 3 args, and 1 watch + two commands of 1 and 3 */
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 4, rid(1, 0, 0), 2, w, 2, &three, 1), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, &why), HKV_ETOOBIG);
    ck_assert_str_eq(why, over);
    struct wire_cmd two[2] = { { a, 1 }, { a, 3 } };
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 5, rid(1, 0, 0), 2, w, 1, two, 2), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, &why), HKV_ETOOBIG);
    ck_assert_str_eq(why, over);
    ck_assert_uint_eq(m.type, WIRE_EXEC);
    ck_assert_uint_eq(m.id, 5);
    /* RESP with 5 changes */
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_resp(&buf, 6, S(":1\r\n"), w, 5), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, &why), HKV_ETOOBIG);
    ck_assert_str_eq(why, "too many changes in one message");
    /* none of them cost an allocation */
    ck_assert_ptr_null(small.arena);

    /* at the limit, each is fine: 4 args, 4 = 2 watches + 2 args, 4 changes */
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_call(&buf, 7, rid(1, 0, 0), 2, a, 4), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.call.nargs, 4);
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 8, rid(1, 0, 0), 2, w, 2, one, 2), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.exec.nwatch, 2);
    ck_assert_uint_eq(m.u.exec.ncmds, 2);
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_exec(&buf, 9, rid(1, 0, 0), 2, NULL, 0, &(struct wire_cmd){ a, 4 },
                                   1), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.exec.cmds[0].nargs, 4);
    buf_reset(&buf);
    ck_assert_int_eq(wire_put_resp(&buf, 10, S(":1\r\n"), w, 4), HKV_OK);
    ck_assert_int_eq(decode_with(&small, &m, NULL), HKV_OK);
    ck_assert_uint_eq(m.u.resp.nchanges, 4);
    wire_decoder_deinit(&small);
}
END_TEST

START_TEST(lying_command_counts_refused_without_allocation)
{
    static const struct { uint8_t b[24]; size_t n; } cases[] = {
        /* CALL args array32 of 16M */
        { { 0x97, WIRE_CALL, 0x01, 0x01, 0x00, 0x00, 0x02, 0xdd, 0x01, 0x00, 0x00, 0x00, 0xa1,
            'x' }, 14 },
        /* EXEC watch array32 of 16M */
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0xdd, 0x01, 0x00, 0x00, 0x00, 0x91,
            0x91, 0xa1, 'x' }, 16 },
        /* EXEC cmds array32 of 4G - 1 */
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x90, 0xdd, 0xff, 0xff, 0xff, 0xff,
            0x91, 0xa1, 'x' }, 16 },
        /* EXEC second command's argv array16 of 65535 */
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x90, 0x92, 0x91, 0xa1, 'x', 0xdc, 0xff,
            0xff, 0xa1, 'x' }, 17 },
        /* RESP changes array32 of 16M; reply bin32 longer than the frame */
        { { 0x94, WIRE_RESP, 0x01, 0xa1, '+', 0xdd, 0x01, 0x00, 0x00, 0x00, 0x90 }, 11 },
        { { 0x94, WIRE_RESP, 0x01, 0xc6, 0x7f, 0xff, 0xff, 0xff, '+', 0x90 }, 10 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wire_msg m;
        const char *why = NULL;
        ck_assert_msg(decode_raw(cases[i].b, cases[i].n, &m, &why) == HKV_EPROTO, "case %zu", i);
        ck_assert_msg(strcmp(why, "count larger than frame") == 0 ||
                      strcmp(why, "length larger than frame") == 0, "case %zu: %s", i, why);
    }
    ck_assert_ptr_null(dec.arena);
    ck_assert_uint_eq(dec.arena_cap, 0);
}
END_TEST

START_TEST(command_kinds_never_descend_past_argv)
{
    /* 100k nested one-element arrays where an arg, a command or a watch
     * entry starts: refused on the first array the schema did not ask for */
    static const struct { uint8_t pre[8]; size_t n; const char *why; } cases[] = {
        { { 0x97, WIRE_CALL, 0x01, 0x01, 0x00, 0x00, 0x02, 0x91 }, 8, "expected bytes" },
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02, 0x90 }, 8, "expected bytes" },
        { { 0x98, WIRE_EXEC, 0x01, 0x01, 0x00, 0x00, 0x02 }, 7,
          "key/version pair: wrong field count" },
        { { 0x94, WIRE_RESP, 0x01, 0xa1, '+' }, 5, "key/version pair: wrong field count" },
    };
    size_t deep = 100000;
    uint8_t *f = malloc(deep + 16);
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wire_msg m;
        const char *why = NULL;
        memcpy(f, cases[i].pre, cases[i].n);
        memset(f + cases[i].n, 0x91, deep);
        f[cases[i].n + deep] = 0x00;
        ck_assert_msg(decode_raw(f, cases[i].n + deep + 1, &m, &why) == HKV_EPROTO, "case %zu", i);
        ck_assert_msg(strcmp(why, cases[i].why) == 0, "case %zu: %s", i, why);
    }
    free(f);
}
END_TEST

START_TEST(every_truncation_of_a_command_frame_refused)
{
    put_one_of_each_command_kind();
    const char *at = buf.data, *end = buf.data + buf.len;
    int frames = 0;
    while (at < end) {
        const char *p;
        size_t plen, used;
        ck_assert_int_eq(wire_next_frame(at, (size_t)(end - at), 0, &p, &plen, &used), HKV_OK);
        for (size_t n = 0; n < plen; n++) {
            struct wire_msg m;
            const char *why = NULL;
            ck_assert_msg(wire_decode(&dec, p, n, &m, &why) == HKV_EPROTO, "frame %d at %zu",
                          frames, n);
            ck_assert_ptr_nonnull(why);
        }
        struct wire_msg m;
        ck_assert_int_eq(wire_decode(&dec, p, plen, &m, NULL), HKV_OK);
        ck_assert_uint_eq(m.id, 400 + (unsigned)frames);
        at += used;
        frames++;
    }
    ck_assert_int_eq(frames, 3);
}
END_TEST

Suite *wire_cmd_hostile_suite(void)
{
    Suite *s = suite_create("wire_cmd_hostile");
    struct { const char *name; const TTest *tests[12]; } groups[] = {
        { "command_limits",
          { command_counts_over_max_items_are_etoobig_before_allocation,
            lying_command_counts_refused_without_allocation,
            command_kinds_never_descend_past_argv } },
        { "command_truncation", { every_truncation_of_a_command_frame_refused } },
    };
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        TCase *tc = tcase_create(groups[g].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        for (size_t t = 0; t < 12 && groups[g].tests[t] != NULL; t++)
            tcase_add_test(tc, groups[g].tests[t]);
        suite_add_tcase(s, tc);
    }
    return s;
}
