/*
 * check_notify_flags.c - notify-keyspace-events' letters (proto/notify.h),
 * as Redis 7.0's keyspaceEventsStringToFlags reads them.
 */
#include <check.h>

#include "proto/notify.h"

START_TEST(letters_and_the_alias)
{
    unsigned f = 99;
    ck_assert_int_eq(notify_parse("", &f), 0);
    ck_assert_uint_eq(f, 0);
    ck_assert_int_eq(notify_parse("KEA", &f), 0);
    ck_assert(f & NOTIFY_KEYSPACE);
    ck_assert(f & NOTIFY_KEYEVENT);
    ck_assert(f & NOTIFY_GENERIC);
    ck_assert(f & NOTIFY_STRING);
    ck_assert(f & NOTIFY_EXPIRED);
    ck_assert(!(f & NOTIFY_KEY_MISS)); /* A leaves out m and n, as Redis */
    ck_assert(!(f & NOTIFY_NEW));
    ck_assert_int_eq(notify_parse("Ex", &f), 0);
    ck_assert_uint_eq(f, NOTIFY_KEYEVENT | NOTIFY_EXPIRED);
    ck_assert_int_eq(notify_parse("g$lshzxetmdnKE", &f), 0);
    ck_assert(f & NOTIFY_NEW);
    ck_assert(f & NOTIFY_KEY_MISS);
}
END_TEST

START_TEST(an_unknown_letter_is_refused_and_leaves_flags_alone)
{
    unsigned f = 7;
    ck_assert_int_eq(notify_parse("KEQ", &f), -1);
    ck_assert_uint_eq(f, 7);
    ck_assert_int_eq(notify_parse("k", &f), -1); /* case matters, as in Redis */
    ck_assert_int_eq(notify_parse(" K", &f), -1);
}
END_TEST

START_TEST(an_event_is_wanted_with_its_class_and_k_or_e)
{
    ck_assert(!notify_wants(NOTIFY_GENERIC | NOTIFY_STRING, NEV_SET)); /* neither K nor E */
    ck_assert(notify_wants(NOTIFY_KEYSPACE | NOTIFY_STRING, NEV_SET));
    ck_assert(!notify_wants(NOTIFY_KEYSPACE | NOTIFY_STRING, NEV_DEL));
    ck_assert(notify_wants(NOTIFY_KEYEVENT | NOTIFY_GENERIC, NEV_RENAME_TO));
    ck_assert(notify_wants(NOTIFY_KEYEVENT | NOTIFY_EXPIRED, NEV_EXPIRED));
    ck_assert(!notify_wants(NOTIFY_KEYEVENT | NOTIFY_GENERIC, NEV_EXPIRED));
    ck_assert_str_eq(notify_event_name(NEV_RENAME_FROM), "rename_from");
    ck_assert_str_eq(notify_event_name(NEV_INCRBYFLOAT), "incrbyfloat");
    ck_assert_str_eq(notify_event_name(NEV_COUNT), "");
    for (int e = 0; e < NEV_COUNT; e++) {
        ck_assert_ptr_nonnull(notify_event_name((enum notify_event)e));
        ck_assert_uint_ne(notify_event_class((enum notify_event)e), 0);
    }
}
END_TEST

Suite *notify_flags_suite(void)
{
    Suite *s = suite_create("notify_flags");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, letters_and_the_alias);
    tcase_add_test(tc, an_unknown_letter_is_refused_and_leaves_flags_alone);
    tcase_add_test(tc, an_event_is_wanted_with_its_class_and_k_or_e);
    suite_add_tcase(s, tc);
    return s;
}
