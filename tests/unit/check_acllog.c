/*
 * check_acllog.c - the host's ACL LOG ring (server/core/acllog.h): Redis
 * 7.0's grouping (an equal denial within 60 s among the ten newest counts
 * into that entry and moves it to the front), the trim to acllog-max-len
 * (and a lowered one), newest-first reads, RESET, the field bounds, and a
 * lock left by a dead process taken over.
 */
#include <check.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/core/acllog.h"

static struct acllog *L;
static struct acllog_entry out[ACLLOG_CAP];

static void setup(void)
{
    L = calloc(1, sizeof(*L));
    ck_assert_ptr_nonnull(L);
}

static void teardown(void)
{
    free(L);
}

static int deny(enum acllog_reason r, const char *object, const char *user, int64_t now,
                uint32_t max)
{
    struct acllog_in in = {.reason = r, .context = ACLLOG_TOPLEVEL, .object = object,
                           .object_len = strlen(object), .user = user, .user_len = strlen(user),
                           .info = "id=1", .info_len = 4};
    return acllog_add(L, &in, now, max);
}

static int obj_is(const struct acllog_entry *e, const char *want)
{
    return e->object_len == strlen(want) && memcmp(e->object, want, e->object_len) == 0;
}

START_TEST(groups_equal_denials_and_moves_them_first)
{
    ck_assert_int_eq(deny(ACLLOG_AUTH, "AUTH", "bob", 1000, 128), 0);
    ck_assert_int_eq(deny(ACLLOG_COMMAND, "set", "ro", 1001, 128), 0);
    ck_assert_int_eq(deny(ACLLOG_AUTH, "AUTH", "bob", 2000, 128), 0); /* into the first */
    ck_assert_int_eq(acllog_read(L, out, 10, 128), 2);
    ck_assert(obj_is(&out[0], "AUTH"));
    ck_assert_uint_eq(out[0].count, 2);
    ck_assert_int_eq(out[0].updated_ms, 2000);
    ck_assert(obj_is(&out[1], "set"));
    ck_assert_uint_eq(out[1].count, 1);
    /* another user, another reason, or past 60 s of the entry's last update: new */
    deny(ACLLOG_AUTH, "AUTH", "alice", 2001, 128);
    deny(ACLLOG_KEY, "AUTH", "bob", 2002, 128);
    deny(ACLLOG_AUTH, "AUTH", "bob", 2000 + ACLLOG_GROUP_MS + 1, 128);
    ck_assert_int_eq(acllog_read(L, out, 10, 128), 5);
    ck_assert_uint_eq(out[0].count, 1);
    /* only the ten newest are looked at: an old equal entry is not reused */
    for (int i = 0; i < 10; i++) {
        char o[16];
        snprintf(o, sizeof(o), "k%d", i);
        deny(ACLLOG_KEY, o, "ro", 70000 + i, 128);
    }
    deny(ACLLOG_COMMAND, "set", "ro", 70020, 128); /* "set" is 14th newest */
    ck_assert_int_eq(acllog_read(L, out, 100, 128), 16);
    ck_assert(obj_is(&out[0], "set"));
    ck_assert_uint_eq(out[0].count, 1);
    /* an equal entry third newest moves to the front, the two newer behind it */
    deny(ACLLOG_KEY, "k8", "ro", 70030, 128);
    ck_assert_int_eq(acllog_read(L, out, 3, 128), 3);
    ck_assert(obj_is(&out[0], "k8"));
    ck_assert_uint_eq(out[0].count, 2);
    ck_assert(obj_is(&out[1], "set"));
    ck_assert(obj_is(&out[2], "k9"));
}
END_TEST

START_TEST(trims_to_max_len_and_resets)
{
    for (int i = 0; i < 300; i++) {
        char o[16];
        snprintf(o, sizeof(o), "k%d", i);
        deny(ACLLOG_KEY, o, "ro", i, 128);
    }
    ck_assert_int_eq(acllog_read(L, out, ACLLOG_CAP, 128), 128);
    ck_assert(obj_is(&out[0], "k299"));
    ck_assert(obj_is(&out[127], "k172"));
    /* a lowered acllog-max-len shows at most that many at once, and trims at
     * the next denial */
    ck_assert_int_eq(acllog_read(L, out, ACLLOG_CAP, 5), 5);
    deny(ACLLOG_KEY, "new", "ro", 400, 5);
    ck_assert_int_eq(acllog_read(L, out, ACLLOG_CAP, 128), 5);
    ck_assert(obj_is(&out[0], "new"));
    ck_assert(obj_is(&out[4], "k296"));
    ck_assert_int_eq(deny(ACLLOG_KEY, "none", "ro", 401, 0), 0); /* 0: nothing kept */
    ck_assert_int_eq(acllog_read(L, out, ACLLOG_CAP, 128), 5);
    ck_assert_int_eq(acllog_reset(L), 0);
    ck_assert_int_eq(acllog_read(L, out, ACLLOG_CAP, 128), 0);
    /* past ACLLOG_CAP entries the ring wraps and keeps the newest */
    for (int i = 0; i < ACLLOG_CAP + 50; i++) {
        char o[16];
        snprintf(o, sizeof(o), "w%d", i);
        deny(ACLLOG_KEY, o, "ro", i, ACLLOG_CAP + 5);
    }
    ck_assert_int_eq(acllog_read(L, out, ACLLOG_CAP, ACLLOG_CAP), ACLLOG_CAP);
    char last[16];
    snprintf(last, sizeof(last), "w%d", ACLLOG_CAP + 49);
    ck_assert(obj_is(&out[0], last));
    ck_assert(obj_is(&out[ACLLOG_CAP - 1], "w50"));
}
END_TEST

START_TEST(fields_are_bounded)
{
    char big[1000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    struct acllog_in in = {.reason = ACLLOG_AUTH, .object = big, .object_len = 999, .user = big,
                           .user_len = 999, .info = big, .info_len = 999};
    ck_assert_int_eq(acllog_add(L, &in, 1, 128), 0);
    ck_assert_int_eq(acllog_add(L, &in, 2, 128), 0); /* equal after the cut: grouped */
    ck_assert_int_eq(acllog_read(L, out, 10, 128), 1);
    ck_assert_uint_eq(out[0].object_len, ACLLOG_OBJECT);
    ck_assert_uint_eq(out[0].user_len, ACLLOG_USER);
    ck_assert_uint_eq(out[0].info_len, ACLLOG_INFO);
    ck_assert_uint_eq(out[0].count, 2);
    ck_assert_str_eq(acllog_reason_name(out[0].reason), "auth");
    ck_assert_str_eq(acllog_context_name(ACLLOG_MULTI), "multi");
}
END_TEST

START_TEST(a_dead_holders_lock_is_taken_over)
{
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(p, NULL, 0), p);
    atomic_store(&L->lock, (int32_t)p); /* it "died holding the lock" */
    ck_assert_int_eq(deny(ACLLOG_AUTH, "AUTH", "bob", 1, 128), 0);
    ck_assert_int_eq(atomic_load(&L->lock), 0);
    /* a live holder (this process's parent) is waited for briefly, then the
     * denial is dropped and counted */
    atomic_store(&L->lock, (int32_t)getppid());
    ck_assert_int_eq(deny(ACLLOG_AUTH, "AUTH", "carol", 2, 128), -1);
    ck_assert_uint_eq(atomic_load(&L->dropped), 1);
    ck_assert_int_eq(acllog_read(L, out, 10, 128), -1);
    atomic_store(&L->lock, 0);
    ck_assert_int_eq(acllog_read(L, out, 10, 128), 1);
}
END_TEST

Suite *acllog_suite(void)
{
    Suite *s = suite_create("acllog");
    TCase *tc = tcase_create("ring");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, groups_equal_denials_and_moves_them_first);
    tcase_add_test(tc, trims_to_max_len_and_resets);
    tcase_add_test(tc, fields_are_bounded);
    tcase_add_test(tc, a_dead_holders_lock_is_taken_over);
    suite_add_tcase(s, tc);
    return s;
}
