/*
 * cfg_fixture.h - what the configuration suites (check_cfg.c,
 * check_cfg_live.c) share: files under /tmp written and removed by the test
 * that made them, a text loaded as a file named t.conf, an expected file
 * error compared whole (the message is what a user fixing a file reads), and
 * the test-case builder.
 */
#ifndef HKV_TESTS_CFG_FIXTURE_H
#define HKV_TESTS_CFG_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/cfg.h"

static inline char *write_tmp(const char *text)
{
    char *path = strdup("/tmp/hkvcfgXXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    size_t n = strlen(text);
    ck_assert_int_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
    return path;
}


static inline void drop(char *path)
{
    unlink(path);
    free(path);
}

static inline hkv_status load_str(struct cfg *c, const char *text, struct cfg_error *err)
{
    return cfg_load_text(c, text, strlen(text), "t.conf", err);
}

/* Loads text as a file and checks the error is exactly "PATH:suffix". */
static inline void expect_file_error(const char *text, const char *suffix)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    char *path = write_tmp(text);
    char want[1024];
    snprintf(want, sizeof(want), "%s:%s", path, suffix);
    ck_assert_int_eq(cfg_load_file(c, path, &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, want);
    drop(path);
    cfg_destroy(&c);
}

/* One test case of up to three tests. */
static inline void cfg_test_add(Suite *s, const char *name, const TTest *t1, const TTest *t2, const TTest *t3)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, t1);
    if (t2 != NULL)
        tcase_add_test(tc, t2);
    if (t3 != NULL)
        tcase_add_test(tc, t3);
    suite_add_tcase(s, tc);
}

#endif
