/*
 * check_durable.c - the durable-file helper (storage/durable.h): a replace
 * leaves the new contents whole and no temporary beside them; a replace
 * that fails before its rename (the temporary cannot be made, the rename is
 * refused) leaves the old file exactly as it was and no temporary; a path
 * too long for the temporary's name is refused without touching anything;
 * appends land in order, whole; the sync calls report what cannot be
 * synced.  Everything happens in the fixture's temp dir.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/hkv.h"
#include "storage/durable.h"
#include "tests/harness.h"

static void path_of(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", h_fixture_dir, name);
}

/* The whole file, NUL-terminated (the tests write text). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "re");
    ck_assert_ptr_nonnull(f);
    static char text[4096];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* Entries of the fixture dir whose name starts with prefix. */
static int count_entries(const char *prefix)
{
    DIR *d = opendir(h_fixture_dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

START_TEST(replace_writes_every_piece_and_leaves_no_temporary)
{
    char path[512];
    path_of(path, sizeof(path), "rp.file");
    struct iovec parts[3] = {{"head:", 5}, {"", 0}, {"body\n", 5}};
    ck_assert_int_eq(durable_replace(path, parts, 3, 0), HKV_OK);
    ck_assert_str_eq(slurp(path), "head:body\n");
    /* a shorter replacement is the whole file, not a prefix over the old */
    ck_assert_int_eq(durable_replace_buf(path, "x", 1, DURABLE_TMP_PID), HKV_OK);
    ck_assert_str_eq(slurp(path), "x");
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    ck_assert_int_eq(count_entries("rp.file"), 1);
}
END_TEST

START_TEST(temporary_that_cannot_be_made_leaves_the_old_file)
{
    char path[512], tmp[560];
    path_of(path, sizeof(path), "tm.file");
    ck_assert_int_eq(durable_replace_buf(path, "old", 3, 0), HKV_OK);
    /* a directory where each flavour's temporary would go */
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    ck_assert_int_eq(mkdir(tmp, 0700), 0);
    ck_assert_int_eq(durable_replace_buf(path, "new", 3, 0), HKV_EIO);
    ck_assert_str_eq(slurp(path), "old");
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    ck_assert_int_eq(mkdir(tmp, 0700), 0);
    ck_assert_int_eq(durable_replace_buf(path, "new", 3, DURABLE_TMP_PID), HKV_EIO);
    ck_assert_str_eq(slurp(path), "old");
    rmdir(tmp);
    /* the pid flavour's way is clear again; the plain one's still blocked */
    ck_assert_int_eq(durable_replace_buf(path, "new", 3, DURABLE_TMP_PID), HKV_OK);
    ck_assert_str_eq(slurp(path), "new");
    ck_assert_int_eq(count_entries("tm.file"), 2); /* the file and the blocking dir */
}
END_TEST

START_TEST(refused_rename_removes_the_temporary)
{
    char path[512], inside[560];
    path_of(path, sizeof(path), "rn.dir");
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(inside, sizeof(inside), "%s/keep", path);
    ck_assert_int_eq(durable_replace_buf(inside, "k", 1, 0), HKV_OK);
    /* a file cannot be renamed over a directory */
    ck_assert_int_eq(durable_replace_buf(path, "new", 3, DURABLE_TMP_PID), HKV_EIO);
    ck_assert_str_eq(slurp(inside), "k");
    ck_assert_int_eq(count_entries("rn.dir"), 1);
}
END_TEST

START_TEST(missing_directory_and_long_path_are_errors)
{
    char path[512];
    path_of(path, sizeof(path), "no-such-dir/file");
    ck_assert_int_eq(durable_replace_buf(path, "x", 1, 0), HKV_EIO);
    ck_assert_int_eq(durable_replace_buf(path, "x", 1, DURABLE_DIR_LAX), HKV_EIO);
    ck_assert_int_eq(durable_sync_dir(path), HKV_EIO);
    size_t n = 5000;
    char *big = malloc(n + 1);
    ck_assert_ptr_nonnull(big);
    memset(big, 'a', n);
    big[n] = '\0';
    ck_assert_int_eq(durable_replace_buf(big, "x", 1, 0), HKV_EINVAL);
    ck_assert_int_eq(durable_sync_dir(big), HKV_EINVAL);
    free(big);
    ck_assert_int_eq(durable_sync_dir(h_fixture_dir), HKV_OK); /* its parent: /tmp */
}
END_TEST

START_TEST(appends_land_in_order_and_sync)
{
    char path[512];
    path_of(path, sizeof(path), "ap.log");
    ck_assert_int_eq(durable_replace_buf(path, "M", 1, 0), HKV_OK);
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(durable_write_all(fd, "one,", 4), HKV_OK);
    ck_assert_int_eq(durable_write_all(fd, "", 0), HKV_OK);
    ck_assert_int_eq(durable_write_all(fd, "two", 3), HKV_OK);
    ck_assert_int_eq(durable_sync(fd), HKV_OK);
    close(fd);
    ck_assert_str_eq(slurp(path), "Mone,two");
    /* a descriptor that cannot take the bytes, or cannot be synced */
    fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(durable_write_all(fd, "x", 1), HKV_EIO);
    close(fd);
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(durable_sync(p[1]), HKV_EIO);
    close(p[0]);
    close(p[1]);
    ck_assert_str_eq(slurp(path), "Mone,two");
}
END_TEST

Suite *durable_suite(void)
{
    Suite *s = suite_create("durable");
    TCase *tc = tcase_create("durable");
    tcase_add_unchecked_fixture(tc, h_dir_setup, h_dir_teardown);
    tcase_add_test(tc, replace_writes_every_piece_and_leaves_no_temporary);
    tcase_add_test(tc, temporary_that_cannot_be_made_leaves_the_old_file);
    tcase_add_test(tc, refused_rename_removes_the_temporary);
    tcase_add_test(tc, missing_directory_and_long_path_are_errors);
    tcase_add_test(tc, appends_land_in_order_and_sync);
    suite_add_tcase(s, tc);
    return s;
}
