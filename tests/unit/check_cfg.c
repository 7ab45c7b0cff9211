/*
 * check_cfg.c - the configuration library: defaults, the file syntax and its
 * error messages, units, includes, classes and their lookup, globs,
 * validation, serialize/diff/reload merge, and CONFIG GET/SET.
 *
 * Files are written with mkstemp/mkdtemp under /tmp and removed by the test
 * that made them; expected error messages are compared whole, location
 * included, because the message is what a user fixing a file reads.
 */
#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/cfg.h"

/* ---- helpers ---- */

static char *write_tmp(const char *text)
{
    char *path = strdup("/tmp/hkvcfgXXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    size_t n = strlen(text);
    ck_assert_int_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
    return path;
}

/* Writes dir/name (dir from mkdtemp) and returns the malloc'd path. */
static char *write_in(const char *dir, const char *name, const char *text)
{
    char *path = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void drop(char *path)
{
    unlink(path);
    free(path);
}

static hkv_status load_str(struct cfg *c, const char *text, struct cfg_error *err)
{
    return cfg_load_text(c, text, strlen(text), "t.conf", err);
}

/* Loads text as a file and checks the error is exactly "PATH:suffix". */
static void expect_file_error(const char *text, const char *suffix)
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

static hkv_status set1(struct cfg *c, const char *name, const char *value, struct cfg_error *err)
{
    char *argv[] = { (char *)name, (char *)value };
    return cfg_apply(c, 2, argv, "test", err);
}

static int64_t size_of(const char *v, hkv_status *st)
{
    struct cfg *c = cfg_create();
    struct cfg_error err;
    *st = set1(c, "owner-maxmemory", v, &err);
    int64_t r = c->owner_maxmemory;
    cfg_destroy(&c);
    return r;
}

static int64_t ms_of(const char *name, const char *v, hkv_status *st)
{
    struct cfg *c = cfg_create();
    struct cfg_error err;
    *st = set1(c, name, v, &err);
    int64_t r = strcmp(name, "timeout") == 0 ? c->timeout_ms : c->write_timeout_ms;
    cfg_destroy(&c);
    return r;
}

/* ---- defaults ---- */

START_TEST(defaults_match_the_documented_values)
{
    struct cfg *c = cfg_create();
    struct cfg_error err;
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(c->nbind, 1);
    ck_assert_str_eq(c->bind[0], "127.0.0.1");
    ck_assert_int_eq(c->port, 6380);
    ck_assert_str_eq(c->dir, ".");
    ck_assert_str_eq(c->pidfile, "");
    ck_assert_str_eq(c->logfile, "");
    ck_assert_int_eq(c->loglevel, CFG_LOG_NOTICE);
    ck_assert_str_eq(c->colo, "a");
    ck_assert_int_eq(c->edge_workers, 2);
    ck_assert_int_eq(c->hot_owners, 2);
    ck_assert_int_eq(c->cold_owners, 1);
    ck_assert_int_eq(c->maxclients, 10000);
    ck_assert_int_eq(c->timeout_ms, 0);
    ck_assert_int_eq(c->tcp_keepalive_ms, 300000);
    ck_assert_int_eq(c->proto_max_bulk_len, 16LL << 20);
    ck_assert_int_eq(c->proto_max_args, 1048576);
    ck_assert_int_eq(c->client_query_buffer_limit, 1LL << 30);
    ck_assert_int_eq(c->client_output_hard, 256LL << 20);
    ck_assert_int_eq(c->client_output_soft, 64LL << 20);
    ck_assert_int_eq(c->client_output_soft_ms, 60000);
    ck_assert_int_eq(c->shutdown_timeout_ms, 10000);
    ck_assert_int_eq(c->wire_max_frame, 64LL << 20);
    ck_assert_int_eq(c->write_timeout_ms, 8000);
    ck_assert_uint_eq(c->nwrite_retry_backoff, 2);
    ck_assert_int_eq(c->write_retry_backoff_ms[0], 1500);
    ck_assert_int_eq(c->write_retry_backoff_ms[1], 3000);
    ck_assert_int_eq(c->write_deadline_ms, 28500);
    ck_assert_int_eq(c->owner_maxmemory, 0);
    ck_assert_int_eq(c->persist_interval_ms, 100);
    ck_assert_int_eq(c->persist_max_dirty, 256LL << 20);
    ck_assert_int_eq(c->durable_timeout_ms, 5000);
    ck_assert_int_eq(c->tombstone_ttl_ms, 600000);
    ck_assert_uint_eq(c->nclasses, 1);
    const struct cfg_class *d = &c->classes[0];
    ck_assert_str_eq(d->name, "default");
    ck_assert_uint_eq(d->npatterns, 0);
    ck_assert_int_eq(d->pool, CFG_POOL_COLD);
    ck_assert_int_eq(d->fresh_ms, 1000);
    ck_assert_int_eq(d->keep_ms, 60000);
    ck_assert_int_eq(d->durability, CFG_DUR_LEDGER);
    ck_assert_int_eq(d->on_timeout, CFG_ONTO_DEGRADE);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_OK);
    cfg_destroy(&c);
    ck_assert_ptr_null(c);
    cfg_destroy(&c);   /* NULL-safe */
}
END_TEST

START_TEST(option_table_lists_every_directive_once)
{
    size_t n = cfg_option_count();
    ck_assert_uint_ge(n, 28);
    /* Every directive of the table is documented, set, in the example file. */
    FILE *f = fopen("hotkvd.conf.example", "r");
    ck_assert_ptr_nonnull(f);
    static char text[256 * 1024];
    size_t len = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[len] = '\0';
    for (size_t i = 0; i < n; i++) {
        char want[96];
        snprintf(want, sizeof(want), "\n%s ", cfg_option_name(i));
        ck_assert_msg(strstr(text, want) != NULL, "'%s' is not in hotkvd.conf.example",
                      cfg_option_name(i));
    }
    int saw_class = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++)
            ck_assert_str_ne(cfg_option_name(i), cfg_option_name(j));
        if (strcmp(cfg_option_name(i), "class") == 0) {
            saw_class = 1;
            ck_assert_int_eq(cfg_option_flags(i), CFG_F_RELOADABLE | CFG_F_MULTI);
        }
        if (strcmp(cfg_option_name(i), "port") == 0)
            ck_assert_int_eq(cfg_option_flags(i), 0);
        if (strcmp(cfg_option_name(i), "logfile") == 0)
            ck_assert_int_eq(cfg_option_flags(i), CFG_F_RELOADABLE | CFG_F_PATH);
    }
    ck_assert(saw_class);
    ck_assert_ptr_null(cfg_option_name(n));
    ck_assert_str_eq(cfg_loglevel_name(CFG_LOG_WARNING), "warning");
}
END_TEST

/* ---- the table for people: hotkvd.conf(5) ---- */

static size_t option_index(const char *name)
{
    for (size_t i = 0; i < cfg_option_count(); i++)
        if (strcmp(cfg_option_name(i), name) == 0)
            return i;
    ck_abort_msg("no directive '%s' in the option table", name);
    return 0;
}

START_TEST(option_syntax_states_type_and_bounds)
{
    char buf[256];
    cfg_option_syntax(option_index("port"), buf, sizeof(buf));
    ck_assert_str_eq(buf, "an integer from 0 to 65535");
    cfg_option_syntax(option_index("proto-max-bulk-len"), buf, sizeof(buf));
    ck_assert_str_eq(buf, "a size from 1mb to 4gb");
    cfg_option_syntax(option_index("persist-max-dirty"), buf, sizeof(buf));
    ck_assert_str_eq(buf, "a size of at least 1mb");
    cfg_option_syntax(option_index("shutdown-timeout"), buf, sizeof(buf));
    ck_assert_str_eq(buf, "a duration from 0 to 1h");
    cfg_option_syntax(option_index("loglevel"), buf, sizeof(buf));
    ck_assert_str_eq(buf, "one of debug, verbose, notice, warning, nothing");
    cfg_option_syntax(option_index("owner-push"), buf, sizeof(buf));
    ck_assert_str_eq(buf, "yes or no");
    cfg_option_syntax(option_index("bind"), buf, sizeof(buf));
    ck_assert_str_eq(buf, "1 to 16 words");
    cfg_option_syntax(option_index("class"), buf, sizeof(buf));
    ck_assert_str_eq(buf, "");   /* the doc states a special's syntax */
    ck_assert_str_eq(cfg_option_default(option_index("port")), "6380");
    ck_assert_str_eq(cfg_option_doc(option_index("port")), "TCP port for clients");
    ck_assert_ptr_null(cfg_option_doc(cfg_option_count()));
    cfg_option_syntax(cfg_option_count(), buf, sizeof(buf));
    ck_assert_str_eq(buf, "");
}
END_TEST

/* The generated hotkvd.conf(5) (its path from the Makefile) names each
 * directive of the table exactly once in DIRECTIVES, as a ".TP" / ".B name"
 * entry, and names nothing else there: the manual and the parser cannot
 * drift. */
START_TEST(conf_man_page_lists_exactly_the_option_table)
{
    const char *path = getenv("HOTKVD_CONF_MAN");
    ck_assert_msg(path != NULL, "HOTKVD_CONF_MAN is not set (run through make unit)");
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t n = cfg_option_count();
    int *seen = calloc(n, sizeof(int));
    char line[1024], prev[1024] = "";
    int in_directives = 0, entries = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, ".SH ", 4) == 0)
            in_directives = strcmp(line, ".SH DIRECTIVES") == 0;
        else if (in_directives && strcmp(prev, ".TP") == 0 && strncmp(line, ".B ", 3) == 0) {
            /* roff's "\-" is the directive's "-" */
            char name[256];
            size_t k = 0;
            for (const char *p = line + 3; *p != '\0' && k < sizeof(name) - 1; p++)
                if (!(p[0] == '\\' && p[1] == '-'))
                    name[k++] = *p;
            name[k] = '\0';
            size_t i = 0;
            while (i < n && strcmp(cfg_option_name(i), name) != 0)
                i++;
            ck_assert_msg(i < n, "%s lists '%s', which the option table lacks", path, name);
            ck_assert_msg(seen[i] == 0, "%s lists '%s' twice", path, name);
            seen[i] = 1;
            entries++;
        }
        snprintf(prev, sizeof(prev), "%s", line);
    }
    fclose(f);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(seen[i], "'%s' is not in %s", cfg_option_name(i), path);
    ck_assert_int_eq(entries, (int)n);
    free(seen);
}
END_TEST

/* ---- a valid file ---- */

START_TEST(valid_file_sets_every_value_it_names)
{
    const char *text =
        "# a comment\n"
        "   # an indented comment\n"
        "\n"
        "bind 127.0.0.1 ::1\n"
        "PORT 7000\n"
        "dir /var/lib/hotkvd\n"
        "pidfile /run/hotkvd.pid\n"
        "logfile \"/var/log/hot kvd.log\"\n"
        "loglevel WARNING\n"
        "colo eu-west_1\n"
        "edge-workers 8\r\n"
        "hot-owners 4\n"
        "cold-owners 0\n"
        "maxclients 50000\n"
        "timeout 5m\n"
        "tcp-keepalive 60\n"
        "proto-max-bulk-len 1gb\n"
        "proto-max-args 1024\n"
        "client-query-buffer-limit 64mb\n"
        "client-output-buffer-limit 0 32mb 10s\n"
        "shutdown-timeout 2.5s\n"
        "wire-max-frame 80mb\n"
        "write-timeout 2s\n"
        "write-retry-backoff 100ms 200ms 400ms\n"
        "write-deadline 10s\n"
        "owner-maxmemory 2gb\n"
        "persist-interval 50ms\n"
        "persist-max-dirty 1gb\n"
        "durable-timeout 1s\n"
        "tombstone-ttl 1h\n"
        "class live pattern draw:* pool hot\n"
        "class default pool hot fresh 2s keep 2m\n";
    char *path = write_tmp(text);
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_int_eq(cfg_load_file(c, path, &err), HKV_OK);
    ck_assert_uint_eq(c->nbind, 2);
    ck_assert_str_eq(c->bind[1], "::1");
    ck_assert_int_eq(c->port, 7000);
    ck_assert_str_eq(c->dir, "/var/lib/hotkvd");
    ck_assert_str_eq(c->pidfile, "/run/hotkvd.pid");
    ck_assert_str_eq(c->logfile, "/var/log/hot kvd.log");
    ck_assert_int_eq(c->loglevel, CFG_LOG_WARNING);
    ck_assert_str_eq(c->colo, "eu-west_1");
    ck_assert_int_eq(c->edge_workers, 8);
    ck_assert_int_eq(c->hot_owners, 4);
    ck_assert_int_eq(c->cold_owners, 0);
    ck_assert_int_eq(c->maxclients, 50000);
    ck_assert_int_eq(c->timeout_ms, 300000);
    ck_assert_int_eq(c->tcp_keepalive_ms, 60000);
    ck_assert_int_eq(c->proto_max_bulk_len, 1LL << 30);
    ck_assert_int_eq(c->proto_max_args, 1024);
    ck_assert_int_eq(c->client_query_buffer_limit, 64LL << 20);
    ck_assert_int_eq(c->client_output_hard, 0);
    ck_assert_int_eq(c->client_output_soft, 32LL << 20);
    ck_assert_int_eq(c->client_output_soft_ms, 10000);
    ck_assert_int_eq(c->shutdown_timeout_ms, 2500);
    ck_assert_int_eq(c->wire_max_frame, 80LL << 20);
    ck_assert_int_eq(c->write_timeout_ms, 2000);
    ck_assert_uint_eq(c->nwrite_retry_backoff, 3);
    ck_assert_int_eq(c->write_retry_backoff_ms[2], 400);
    ck_assert_int_eq(c->write_deadline_ms, 10000);
    ck_assert_int_eq(c->owner_maxmemory, 2LL << 30);
    ck_assert_int_eq(c->persist_interval_ms, 50);
    ck_assert_int_eq(c->persist_max_dirty, 1LL << 30);
    ck_assert_int_eq(c->durable_timeout_ms, 1000);
    ck_assert_int_eq(c->tombstone_ttl_ms, 3600000);
    ck_assert_uint_eq(c->nclasses, 2);
    ck_assert_int_eq(c->classes[1].pool, CFG_POOL_HOT);
    ck_assert_int_eq(c->classes[1].keep_ms, 120000);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_OK);
    drop(path);
    cfg_destroy(&c);
}
END_TEST

START_TEST(example_config_parses_and_validates)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    hkv_status st = cfg_load_file(c, "hotkvd.conf.example", &err);
    ck_assert_msg(st == HKV_OK, "%s", err.msg);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_OK);
    ck_assert_str_eq(c->bind[0], "127.0.0.1");
    ck_assert_int_eq(c->port, 6380);
    ck_assert_int_ge(c->hot_owners, 1);
    ck_assert_int_ge(c->cold_owners, 1);
    const struct cfg_class *k = cfg_class_for(c, "draw:42", 7);
    ck_assert_str_eq(k->name, "live");
    ck_assert_int_eq(k->pool, CFG_POOL_HOT);
    ck_assert_int_eq(k->keep_ms, 300000);
    /* every directive but `class` is written in the example at its default */
    struct cfg *d = cfg_create();
    int n = cfg_diff(c, d, NULL, NULL);
    ck_assert_int_eq(n, 1);
    cfg_destroy(&d);
    cfg_destroy(&c);
}
END_TEST

/* ---- errors ---- */

START_TEST(errors_name_the_file_line_and_reason)
{
    expect_file_error("port 6380\n\nprot 1\n", "3: unknown directive 'prot'");
    expect_file_error("# x\n\nport abc\n",
                      "3: 'port' needs an integer between 0 and 65535, got 'abc'");
    expect_file_error("port 65536\n", "1: 'port' needs an integer between 0 and 65535, got "
                                      "'65536'");
    expect_file_error("port -1\n", "1: 'port' needs an integer between 0 and 65535, got '-1'");
    expect_file_error("port 1 2\n", "1: 'port' takes 1 argument, got 2");
    expect_file_error("\nport\n", "2: 'port' takes 1 argument, got 0");
    expect_file_error("dir \"abc\n", "1: unterminated quoted string");
    expect_file_error("dir 'abc\n", "1: unterminated quoted string");
    expect_file_error("dir \"a\"b\n", "1: closing quote must be followed by a space");
    expect_file_error("dir \"\\x4g\"\n", "1: bad \\x escape (needs two hex digits, not 00)");
    expect_file_error("dir \"a\\x00b\"\n", "1: bad \\x escape (needs two hex digits, not 00)");
    expect_file_error("loglevel loud\n",
                      "1: 'loglevel' needs one of debug|verbose|notice|warning|nothing, got "
                      "'loud'");
    expect_file_error("colo bad.name\n",
                      "1: 'colo' needs 1 to 32 characters of [A-Za-z0-9_-], got 'bad.name'");
    expect_file_error("colo abcdefghijabcdefghijabcdefghijabc\n",
                      "1: 'colo' needs 1 to 32 characters of [A-Za-z0-9_-], got "
                      "'abcdefghijabcdefghijabcdefghijabc'");
    expect_file_error("dir \"\"\n", "1: 'dir' needs a non-empty value, got ''");
    expect_file_error("bind\n", "1: 'bind' takes 1 to 16 arguments, got 0");
    expect_file_error("maxclients 0\n",
                      "1: 'maxclients' needs an integer between 1 and 1000000, got '0'");
    expect_file_error("client-output-buffer-limit 1mb 2mb\n",
                      "1: 'client-output-buffer-limit' takes 3 arguments (HARD SOFT "
                      "SOFT-DURATION), got 2");
    expect_file_error("timeout 1.5ms\n",
                      "1: 'timeout' needs a duration between 0 and 8760h (e.g. 1.5s, 200ms; "
                      "whole ms), got '1.5ms'");
}
END_TEST

START_TEST(errors_for_values_with_units)
{
    expect_file_error("proto-max-bulk-len 99999999999gb\n",
                      "1: 'proto-max-bulk-len' needs a size between 1mb and 4gb (e.g. 64mb), "
                      "got '99999999999gb'");
    expect_file_error("write-timeout soon\n",
                      "1: 'write-timeout' needs a duration between 1ms and 1h (e.g. 1.5s, "
                      "200ms; whole ms), got 'soon'");
    expect_file_error("write-retry-backoff 1s 2h\n",
                      "1: each of 'write-retry-backoff' needs a duration between 0 and 1h (e.g. "
                      "1.5s, 200ms; whole ms), got '2h'");
    expect_file_error("write-retry-backoff 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n",
                      "1: 'write-retry-backoff' takes 0 to 16 arguments, got 17");
}
END_TEST

START_TEST(missing_oversized_and_long_line_files)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_int_eq(cfg_load_file(c, "/tmp/hkv-no-such-dir/x.conf", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg,
                     "cannot open '/tmp/hkv-no-such-dir/x.conf': No such file or directory");

    /* a file over 16 MB is refused before it is parsed */
    char *big = write_tmp("");
    ck_assert_int_eq(truncate(big, (16 << 20) + 1), 0);
    ck_assert_int_eq(cfg_load_file(c, big, &err), HKV_EINVAL);
    char want[256];
    snprintf(want, sizeof(want), "'%s' is larger than 16 MB", big);
    ck_assert_str_eq(err.msg, want);
    drop(big);

    /* a 100 KB line is fine */
    size_t n = 100000;
    char *text = malloc(n + 16);
    strcpy(text, "dir ");
    memset(text + 4, 'a', n);
    strcpy(text + 4 + n, "\nport 1\n");
    char *path = write_tmp(text);
    ck_assert_int_eq(cfg_load_file(c, path, &err), HKV_OK);
    ck_assert_uint_eq(strlen(c->dir), n);
    ck_assert_int_eq(c->port, 1);
    drop(path);
    free(text);
    cfg_destroy(&c);
}
END_TEST

/* ---- units ---- */

START_TEST(sizes_take_decimal_and_binary_units)
{
    hkv_status st;
    ck_assert_int_eq(size_of("0", &st), 0);
    ck_assert_int_eq(st, HKV_OK);
    ck_assert_int_eq(size_of("1k", &st), 1000);
    ck_assert_int_eq(size_of("1kb", &st), 1024);
    ck_assert_int_eq(size_of("1KB", &st), 1024);
    ck_assert_int_eq(size_of("3m", &st), 3000000);
    ck_assert_int_eq(size_of("3Mb", &st), 3LL << 20);
    ck_assert_int_eq(size_of("2g", &st), 2000000000LL);
    ck_assert_int_eq(size_of("2gb", &st), 2LL << 30);
    ck_assert_int_eq(size_of("9223372036854775807", &st), INT64_MAX);
    ck_assert_int_eq(st, HKV_OK);
    const char *bad[] = { "9223372036854775808", "99999999999gb", "8589934592gb", "-1", "1.5mb",
                          "1tb", "kb", "", "1 kb", "0x10" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_of(bad[i], &st);
        ck_assert_msg(st == HKV_EINVAL, "'%s' accepted", bad[i]);
    }
    /* bounds: proto-max-bulk-len is 1mb..4gb */
    struct cfg *c = cfg_create();
    struct cfg_error err;
    ck_assert_int_eq(set1(c, "proto-max-bulk-len", "1mb", &err), HKV_OK);
    ck_assert_int_eq(set1(c, "proto-max-bulk-len", "1048575", &err), HKV_EINVAL);
    ck_assert_int_eq(set1(c, "proto-max-bulk-len", "4gb", &err), HKV_OK);
    ck_assert_int_eq(c->proto_max_bulk_len, 4LL << 30);
    ck_assert_int_eq(set1(c, "proto-max-bulk-len", "4294967297", &err), HKV_EINVAL);
    ck_assert_int_eq(c->proto_max_bulk_len, 4LL << 30);   /* unchanged by the refusal */
    cfg_destroy(&c);
}
END_TEST

START_TEST(durations_take_units_and_decimals)
{
    hkv_status st;
    ck_assert_int_eq(ms_of("timeout", "0", &st), 0);
    ck_assert_int_eq(st, HKV_OK);
    ck_assert_int_eq(ms_of("timeout", "2", &st), 2000);
    ck_assert_int_eq(ms_of("timeout", "0.25", &st), 250);
    ck_assert_int_eq(ms_of("timeout", "1.5s", &st), 1500);
    ck_assert_int_eq(ms_of("timeout", "1200ms", &st), 1200);
    ck_assert_int_eq(ms_of("timeout", "1200MS", &st), 1200);
    ck_assert_int_eq(ms_of("timeout", "10m", &st), 600000);
    ck_assert_int_eq(ms_of("timeout", "1.5h", &st), 5400000);
    ck_assert_int_eq(ms_of("timeout", "2H", &st), 7200000);
    ck_assert_int_eq(ms_of("timeout", "0.001", &st), 1);
    ck_assert_int_eq(ms_of("timeout", "365d", &st), 0);
    ck_assert_int_eq(st, HKV_EINVAL);
    const char *bad[] = { "1.5ms", "0.0001", "1x", "", ".5s", "5.", "-1s", "1.5.5s",
                          "99999999999999999999h", "9000h", "1 s" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ms_of("timeout", bad[i], &st);
        ck_assert_msg(st == HKV_EINVAL, "'%s' accepted", bad[i]);
    }
    /* write-timeout is 1ms..1h */
    ck_assert_int_eq(ms_of("write-timeout", "1ms", &st), 1);
    ck_assert_int_eq(ms_of("write-timeout", "1h", &st), 3600000);
    ms_of("write-timeout", "0", &st);
    ck_assert_int_eq(st, HKV_EINVAL);
    ms_of("write-timeout", "3600001ms", &st);
    ck_assert_int_eq(st, HKV_EINVAL);
}
END_TEST

START_TEST(ratios_take_a_fraction_with_three_decimals_at_most)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    char buf[64];
    ck_assert_int_eq(c->move_busy_threshold, 700);
    ck_assert_int_eq(cfg_get(c, "move-busy-threshold", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "0.7");
    const struct { const char *in; int permille; } good[] = {
        {"0.7", 700}, {".25", 250}, {"1", 1000}, {"0.125", 125}, {"1.0", 1000}, {"0.01", 10},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        ck_assert_msg(set1(c, "move-busy-threshold", good[i].in, &err) == HKV_OK, "%s: %s",
                      good[i].in, err.msg);
        ck_assert_int_eq(c->move_busy_threshold, good[i].permille);
    }
    ck_assert_int_eq(cfg_get(c, "move-busy-threshold", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "0.01");
    const char *bad[] = {"0", "1.001", "0.1234", "x", ".", "", "-0.5", "0.5x", "2", "0.009"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(set1(c, "move-busy-threshold", bad[i], &err) == HKV_EINVAL, "'%s' accepted",
                      bad[i]);
        ck_assert_int_eq(c->move_busy_threshold, 10); /* unchanged by the refusal */
    }
    ck_assert_ptr_nonnull(strstr(err.msg, "needs a fraction between 0.01 and 1"));
    cfg_destroy(&c);
}
END_TEST

/* ---- quotes ---- */

START_TEST(quotes_and_escapes)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_int_eq(load_str(c, "dir \"a b\\tc\\n\\\\\\\"\\x41\\x7e\"\n", &err), HKV_OK);
    ck_assert_str_eq(c->dir, "a b\tc\n\\\"A~");
    ck_assert_int_eq(load_str(c, "dir 'it\\'s \\n \"raw\"'\n", &err), HKV_OK);
    ck_assert_str_eq(c->dir, "it's \\n \"raw\"");
    ck_assert_int_eq(load_str(c, "pidfile \"\"\n", &err), HKV_OK);
    ck_assert_str_eq(c->pidfile, "");
    ck_assert_int_eq(load_str(c, "dir x\"y z\"\n", &err), HKV_OK);   /* quote mid-word */
    ck_assert_str_eq(c->dir, "xy z");
    ck_assert_int_eq(load_str(c, "bind \"10.0.0.1\"\t'10.0.0.2'  \r\n", &err), HKV_OK);
    ck_assert_uint_eq(c->nbind, 2);
    ck_assert_str_eq(c->bind[1], "10.0.0.2");
    ck_assert_int_eq(load_str(c, "port 1\nport 2\n# port 3\n", &err), HKV_OK);
    ck_assert_int_eq(c->port, 2);   /* the last occurrence wins */
    ck_assert_int_eq(load_str(c, "port 6380 # trailing\n", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "t.conf:1: 'port' takes 1 argument, got 3");
    ck_assert_int_eq(load_str(c, "\n\ndir 'x\n", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "t.conf:3: unterminated quoted string");
    ck_assert_int_eq(cfg_load_text(c, "port 5\0port 6\n", 14, "nul", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "nul:1: NUL byte in line");
    cfg_destroy(&c);
}
END_TEST

/* ---- include ---- */

START_TEST(include_resolves_against_the_including_file)
{
    char dir[] = "/tmp/hkvcfgdXXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char sub[64];
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    char *b = write_in(sub, "b.conf", "maxclients 5\n");
    char *a = write_in(sub, "a.conf", "port 7001\ninclude b.conf\n");
    char *m = write_in(dir, "main.conf", "port 7000\ninclude sub/a.conf\nloglevel debug\n");
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_msg(cfg_load_file(c, m, &err) == HKV_OK, "%s", err.msg);
    ck_assert_int_eq(c->port, 7001);
    ck_assert_int_eq(c->maxclients, 5);
    ck_assert_int_eq(c->loglevel, CFG_LOG_DEBUG);

    /* an error inside an included file names that file */
    char *bad = write_in(sub, "bad.conf", "\nprot 1\n");
    char *m2 = write_in(dir, "m2.conf", "include sub/bad.conf\n");
    char want[512];
    ck_assert_int_eq(cfg_load_file(c, m2, &err), HKV_EINVAL);
    snprintf(want, sizeof(want), "%s/sub/bad.conf:2: unknown directive 'prot'", dir);
    ck_assert_str_eq(err.msg, want);

    /* a missing include names the including line */
    char *m3 = write_in(dir, "m3.conf", "port 1\ninclude nope.conf\n");
    ck_assert_int_eq(cfg_load_file(c, m3, &err), HKV_EINVAL);
    snprintf(want, sizeof(want),
             "%s/m3.conf:2: cannot open '%s/nope.conf': No such file or directory", dir, dir);
    ck_assert_str_eq(err.msg, want);

    /* include takes exactly one argument; text has no directory to include from */
    char *m4 = write_in(dir, "m4.conf", "include\n");
    ck_assert_int_eq(cfg_load_file(c, m4, &err), HKV_EINVAL);
    snprintf(want, sizeof(want), "%s/m4.conf:1: 'include' takes 1 argument, got 0", dir);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(load_str(c, "include x.conf\n", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "t.conf:1: 'include' is not allowed here (no file to be relative to)");

    cfg_destroy(&c);
    drop(m4);
    drop(m3);
    drop(m2);
    drop(bad);
    drop(m);
    drop(a);
    drop(b);
    rmdir(sub);
    rmdir(dir);
}
END_TEST

START_TEST(include_loop_and_depth_are_refused)
{
    char dir[] = "/tmp/hkvcfgdXXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char *a = write_in(dir, "a.conf", "include b.conf\n");
    char *b = write_in(dir, "b.conf", "port 1\ninclude a.conf\n");
    char *s = write_in(dir, "self.conf", "include self.conf\n");
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    char want[512];
    ck_assert_int_eq(cfg_load_file(c, a, &err), HKV_EINVAL);
    snprintf(want, sizeof(want), "%s/b.conf:2: include loop: '%s/a.conf' is already being read",
             dir, dir);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(cfg_load_file(c, s, &err), HKV_EINVAL);
    snprintf(want, sizeof(want),
             "%s/self.conf:1: include loop: '%s/self.conf' is already being read", dir, dir);
    ck_assert_str_eq(err.msg, want);

    /* a chain of 16 files is fine, 17 is not */
    char *chain[18];
    for (int i = 0; i < 18; i++) {
        char name[32], text[64];
        snprintf(name, sizeof(name), "c%02d.conf", i);
        if (i < 17)
            snprintf(text, sizeof(text), "include c%02d.conf\n", i + 1);
        else
            snprintf(text, sizeof(text), "port 9\n");
        chain[i] = write_in(dir, name, text);
    }
    ck_assert_int_eq(cfg_load_file(c, chain[2], &err), HKV_OK);   /* c02..c17: 16 files */
    ck_assert_int_eq(c->port, 9);
    ck_assert_int_eq(cfg_load_file(c, chain[1], &err), HKV_EINVAL);
    snprintf(want, sizeof(want),
             "%s/c16.conf:1: includes nested deeper than 16 files at '%s/c17.conf'", dir, dir);
    ck_assert_str_eq(err.msg, want);
    for (int i = 0; i < 18; i++)
        drop(chain[i]);
    cfg_destroy(&c);
    drop(s);
    drop(a);
    drop(b);
    rmdir(dir);
}
END_TEST

/* ---- command line ---- */

START_TEST(command_line_overrides_the_file)
{
    char *path = write_tmp("port 7000\nloglevel warning\n");
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_int_eq(cfg_load_file(c, path, &err), HKV_OK);
    char *a1[] = { "port", "7100" };
    char *a2[] = { "--loglevel", "debug" };
    char *a3[] = { "bind", "0.0.0.0", "::" };
    ck_assert_int_eq(cfg_apply(c, 2, a1, "command line", &err), HKV_OK);
    ck_assert_int_eq(cfg_apply(c, 2, a2, "command line", &err), HKV_OK);
    ck_assert_int_eq(cfg_apply(c, 3, a3, "command line", &err), HKV_OK);
    ck_assert_int_eq(c->port, 7100);
    ck_assert_int_eq(c->loglevel, CFG_LOG_DEBUG);
    ck_assert_uint_eq(c->nbind, 2);
    ck_assert_str_eq(c->bind[1], "::");
    char *b1[] = { "nope", "1" };
    ck_assert_int_eq(cfg_apply(c, 2, b1, "command line", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "command line: unknown directive 'nope'");
    char *b2[] = { "port", "x y" };
    ck_assert_int_eq(cfg_apply(c, 2, b2, "command line", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg,
                     "command line: 'port' needs an integer between 0 and 65535, got 'x y'");
    ck_assert_int_eq(cfg_apply(c, 0, b2, "command line", &err), HKV_EINVAL);
    ck_assert_int_eq(c->port, 7100);
    drop(path);
    cfg_destroy(&c);
}
END_TEST

/* ---- classes ---- */

/* cfg_class_for compares a pattern's literal prefix itself and leaves a
 * pattern with a wildcard inside to the glob matcher: every shape must
 * still match exactly as a glob does. */
START_TEST(class_patterns_match_as_globs_whatever_their_shape)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    const char *text =
        "class exact pattern user\n"
        "class pre pattern ab*\n"
        "class mid pattern x*z\n"
        "class one pattern k?y pattern [pq]:*\n"
        "class default\n";
    ck_assert_msg(load_str(c, text, &err) == HKV_OK, "%s", err.msg);
    static const struct { const char *key; size_t len; const char *cls; } cases[] = {
        {"user", 4, "exact"}, {"use", 3, "default"}, {"users", 5, "default"},
        {"ab", 2, "pre"}, {"abc", 3, "pre"}, {"ab\0x", 4, "pre"}, {"a", 1, "default"},
        {"", 0, "default"}, {"xz", 2, "mid"}, {"xyz", 3, "mid"}, {"xy", 2, "default"},
        {"key", 3, "one"}, {"ky", 2, "default"}, {"p:1", 3, "one"}, {"r:1", 3, "default"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ck_assert_msg(strcmp(cfg_class_for(c, cases[i].key, cases[i].len)->name, cases[i].cls) == 0,
                      "key %zu (%.*s): class %s, want %s", i, (int)cases[i].len, cases[i].key,
                      cfg_class_for(c, cases[i].key, cases[i].len)->name, cases[i].cls);
    cfg_destroy(&c);
}
END_TEST

START_TEST(class_lines_build_classes_in_file_order)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    const char *text =
        "class live pattern draw:* pattern \"score:*\" pool hot fresh 1s keep 5m\n"
        "class money on-timeout error durability durable pattern balance:*\n"
        "class wide pattern * pool hot\n"
        "class default fresh 500ms keep 30s pool hot\n";
    ck_assert_msg(load_str(c, text, &err) == HKV_OK, "%s", err.msg);
    ck_assert_uint_eq(c->nclasses, 4);
    ck_assert_str_eq(c->classes[0].name, "live");
    ck_assert_str_eq(c->classes[1].name, "money");
    ck_assert_str_eq(c->classes[2].name, "wide");
    ck_assert_str_eq(c->classes[3].name, "default");
    const struct cfg_class *live = cfg_class_named(c, "live");
    ck_assert_uint_eq(live->npatterns, 2);
    ck_assert_str_eq(live->patterns[1], "score:*");
    ck_assert_int_eq(live->pool, CFG_POOL_HOT);
    ck_assert_int_eq(live->fresh_ms, 1000);
    ck_assert_int_eq(live->keep_ms, 300000);
    ck_assert_int_eq(live->durability, CFG_DUR_LEDGER);
    ck_assert_int_eq(live->on_timeout, CFG_ONTO_DEGRADE);
    const struct cfg_class *money = cfg_class_named(c, "money");
    ck_assert_int_eq(money->pool, CFG_POOL_COLD);   /* omitted fields take defaults */
    ck_assert_int_eq(money->fresh_ms, 1000);
    ck_assert_int_eq(money->keep_ms, 60000);
    ck_assert_int_eq(money->durability, CFG_DUR_DURABLE);
    ck_assert_int_eq(money->on_timeout, CFG_ONTO_ERROR);
    ck_assert_int_eq(c->classes[3].fresh_ms, 500);
    ck_assert_int_eq(c->classes[3].pool, CFG_POOL_HOT);
    ck_assert_ptr_null(cfg_class_named(c, "nope"));

    /* first match in file order wins; `wide` catches the rest before default */
    ck_assert_str_eq(cfg_class_for(c, "draw:1", 6)->name, "live");
    ck_assert_str_eq(cfg_class_for(c, "score:x", 7)->name, "live");
    ck_assert_str_eq(cfg_class_for(c, "balance:7", 9)->name, "money");
    ck_assert_str_eq(cfg_class_for(c, "other", 5)->name, "wide");
    ck_assert_str_eq(cfg_class_for(c, "draw:1\0tail", 11)->name, "live");

    /* a repeated name replaces in place; a line states the whole class */
    ck_assert_int_eq(load_str(c, "class live pattern tip:*\nclass wide pattern w:*\n", &err),
                     HKV_OK);
    ck_assert_uint_eq(c->nclasses, 4);
    ck_assert_str_eq(c->classes[0].name, "live");
    ck_assert_uint_eq(c->classes[0].npatterns, 1);
    ck_assert_int_eq(c->classes[0].pool, CFG_POOL_COLD);
    ck_assert_str_eq(cfg_class_for(c, "tip:1", 5)->name, "live");
    ck_assert_str_eq(cfg_class_for(c, "draw:1", 6)->name, "default");
    ck_assert_int_eq(cfg_validate(c, &err), HKV_OK);
    cfg_destroy(&c);
}
END_TEST

START_TEST(class_errors_are_reported_at_their_line)
{
    expect_file_error("class x pool hot\n",
                      "1: class 'x' has no pattern: no key could ever use it");
    expect_file_error("class default pattern a*\n",
                      "1: class 'default' cannot have patterns: it catches every key no other "
                      "class matches");
    expect_file_error("class\n", "1: 'class' needs a name");
    expect_file_error("class bad.name pattern x\n",
                      "1: class name needs 1 to 63 characters of [A-Za-z0-9_-], got 'bad.name'");
    expect_file_error("class x pattern a pool warm\n",
                      "1: class 'x': 'pool' needs hot or cold, got 'warm'");
    expect_file_error("class x pattern a colour red\n",
                      "1: class 'x': unknown keyword 'colour' (pattern, pool, fresh, keep, "
                      "durability, on-timeout, content-type)");
    expect_file_error("class x pattern a pool\n", "1: class 'x': 'pool' needs a value");
    expect_file_error("class x pattern a pool hot pool cold\n",
                      "1: class 'x': 'pool' given twice");
    expect_file_error("class x pattern a fresh soon\n",
                      "1: class 'x': 'fresh' needs a duration between 0 and 8760h (e.g. 1.5s, "
                      "200ms; whole ms), got 'soon'");
    expect_file_error("class x pattern a durability maybe\n",
                      "1: class 'x': 'durability' needs ledger or durable, got 'maybe'");
    expect_file_error("class x pattern a on-timeout panic\n",
                      "1: class 'x': 'on-timeout' needs degrade or error, got 'panic'");
}
END_TEST

START_TEST(validation_catches_cross_directive_mistakes)
{
    struct {
        const char *text;
        const char *msg;
    } cases[] = {
        { "class x pattern a fresh 10s keep 5s\n",
          "class 'x': keep (5s) must be at least fresh (10s)" },
        { "class default fresh 2m keep 1m\n",
          "class 'default': keep (1m) must be at least fresh (2m)" },
        { "hot-owners 0\nclass live pattern a pool hot\n",
          "class 'live' uses the hot pool but hot-owners is 0" },
        { "cold-owners 0\n", "class 'default' uses the cold pool but cold-owners is 0" },
        { "hot-owners 0\ncold-owners 0\n", "hot-owners + cold-owners must be at least 1 (0 only in a cluster)" },
        { "write-timeout 30s\n", "write-deadline (28500ms) must be at least write-timeout (30s)" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cfg *c = cfg_create();
        struct cfg_error err = { "" };
        ck_assert_int_eq(load_str(c, cases[i].text, &err), HKV_OK);
        ck_assert_int_eq(cfg_validate(c, &err), HKV_EINVAL);
        ck_assert_str_eq(err.msg, cases[i].msg);
        cfg_destroy(&c);
    }
    /* what no file can express but a caller could build */
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    c->edge_workers = 0;
    ck_assert_int_eq(cfg_validate(c, &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "edge-workers must be at least 1");
    c->edge_workers = 1;
    size_t n = c->nbind;
    c->nbind = 0;
    ck_assert_int_eq(cfg_validate(c, &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "at least one bind address is needed");
    c->nbind = n;
    ck_assert_int_eq(cfg_validate(c, &err), HKV_OK);
    cfg_destroy(&c);
}
END_TEST

/* ---- glob ---- */

static int gm(const char *p, const char *s)
{
    return cfg_glob_match(p, strlen(p), s, strlen(s), 0);
}

START_TEST(glob_matches_redis_semantics)
{
    ck_assert_int_eq(gm("*", ""), 1);
    ck_assert_int_eq(gm("*", "anything"), 1);
    ck_assert_int_eq(gm("", ""), 1);
    ck_assert_int_eq(gm("", "a"), 0);
    ck_assert_int_eq(gm("draw:*", "draw:"), 1);
    ck_assert_int_eq(gm("draw:*", "draw:42"), 1);
    ck_assert_int_eq(gm("draw:*", "drew:42"), 0);
    ck_assert_int_eq(gm("*:42", "draw:42"), 1);
    ck_assert_int_eq(gm("*:42", "draw:421"), 0);
    ck_assert_int_eq(gm("a*b*c", "axxbyyc"), 1);
    ck_assert_int_eq(gm("a*b*c", "axxbyy"), 0);
    ck_assert_int_eq(gm("h?llo", "hello"), 1);
    ck_assert_int_eq(gm("h?llo", "hllo"), 0);
    ck_assert_int_eq(gm("h[ae]llo", "hallo"), 1);
    ck_assert_int_eq(gm("h[ae]llo", "hillo"), 0);
    ck_assert_int_eq(gm("h[^e]llo", "hallo"), 1);
    ck_assert_int_eq(gm("h[^e]llo", "hello"), 0);
    ck_assert_int_eq(gm("h[a-c]llo", "hbllo"), 1);
    ck_assert_int_eq(gm("h[c-a]llo", "hbllo"), 1);   /* reversed range */
    ck_assert_int_eq(gm("h[a-c]llo", "hdllo"), 0);
    ck_assert_int_eq(gm("[\\]]", "]"), 1);
    ck_assert_int_eq(gm("a\\*b", "a*b"), 1);
    ck_assert_int_eq(gm("a\\*b", "axb"), 0);
    ck_assert_int_eq(gm("a\\?", "a?"), 1);
    ck_assert_int_eq(gm("**a**", "xxaxx"), 1);
    ck_assert_int_eq(gm("[abc", "b"), 1);            /* open class ends the pattern */
    ck_assert_int_eq(cfg_glob_match("Draw:*", 6, "dRAW:1", 6, 1), 1);
    ck_assert_int_eq(cfg_glob_match("Draw:*", 6, "dRAW:1", 6, 0), 0);
    ck_assert_int_eq(cfg_glob_match("[A-C]x", 6, "bx", 2, 1), 1);
    /* binary safe: NUL bytes in both */
    ck_assert_int_eq(cfg_glob_match("a\0*z", 4, "a\0\0yz", 5, 0), 1);
    ck_assert_int_eq(cfg_glob_match("a?b", 3, "a\0b", 3, 0), 1);
    ck_assert_int_eq(cfg_glob_match("a*", 2, "b\0", 2, 0), 0);
}
END_TEST

START_TEST(glob_pathological_pattern_finishes_fast)
{
    size_t n = 200000;
    char *s = malloc(n);
    memset(s, 'a', n);
    const char *p = "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b";
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(cfg_glob_match(p, strlen(p), s, n, 0), 0);
    ck_assert_int_eq(cfg_glob_match("*a*a*a*a*a*a*", 13, s, n, 0), 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ck_assert_msg(secs < 2.0, "took %.2fs", secs);
    free(s);
}
END_TEST

/* ---- serialize, diff, reload ---- */

static const char *busy =
    "bind 127.0.0.1 \"10.0.0.1\"\n"
    "port 7001\n"
    "dir \"/data/with space\"\n"
    "logfile \"/tmp/q\\\"uote\\\\back\\ttab\"\n"
    "loglevel verbose\n"
    "colo eu_1\n"
    "timeout 1.5s\n"
    "proto-max-bulk-len 1000000000\n"
    "client-output-buffer-limit 1k 1kb 1500ms\n"
    "write-retry-backoff\n"
    "owner-maxmemory 12345\n"
    "class live pattern \"draw:*\" pattern 'sp ace*' pattern \"#hash\" pool hot fresh 1s "
    "keep 5m\n"
    "class esc pattern \"a\\\\*\\x01\" durability durable on-timeout error\n"
    "class default fresh 250ms keep 2h\n";

START_TEST(serialize_round_trips_to_an_equal_config)
{
    struct cfg *a = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_msg(load_str(a, busy, &err) == HKV_OK, "%s", err.msg);
    ck_assert_uint_eq(a->nwrite_retry_backoff, 0);
    size_t len = 0;
    char *text = cfg_serialize(a, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(strlen(text), len);
    ck_assert_ptr_nonnull(strstr(text, "port 7001\n"));
    ck_assert_ptr_nonnull(strstr(text, "timeout 1500ms\n"));
    ck_assert_ptr_nonnull(strstr(text, "proto-max-bulk-len 1000000000\n"));
    ck_assert_ptr_nonnull(strstr(text, "client-output-buffer-limit 1000 1kb 1500ms\n"));
    ck_assert_ptr_nonnull(strstr(text, "write-retry-backoff\n"));
    ck_assert_ptr_nonnull(strstr(text, "dir \"/data/with space\"\n"));
    ck_assert_ptr_nonnull(strstr(text, "class live pattern draw:* pattern \"sp ace*\" pattern "
                                       "\"#hash\" pool hot fresh 1s keep 5m durability ledger "
                                       "on-timeout degrade\n"));
    struct cfg *b = cfg_create();
    ck_assert_msg(cfg_load_text(b, text, len, "serialized", &err) == HKV_OK, "%s", err.msg);
    ck_assert_int_eq(cfg_diff(a, b, NULL, NULL), 0);
    ck_assert_str_eq(b->classes[1].patterns[0], "a\\*\x01");
    char *again = cfg_serialize(b, NULL);
    ck_assert_str_eq(again, text);

    /* the defaults round-trip too, and a dup is equal */
    struct cfg *d = cfg_create(), *e = cfg_create(), *f = cfg_dup(a);
    char *dt = cfg_serialize(d, &len);
    ck_assert_int_eq(cfg_load_text(e, dt, len, "defaults", &err), HKV_OK);
    ck_assert_int_eq(cfg_diff(d, e, NULL, NULL), 0);
    ck_assert_int_eq(cfg_diff(a, f, NULL, NULL), 0);
    free(dt);
    free(again);
    free(text);
    cfg_destroy(&f);
    cfg_destroy(&e);
    cfg_destroy(&d);
    cfg_destroy(&b);
    cfg_destroy(&a);
}
END_TEST

struct seen {
    char names[32][64];
    int flags[32];
    int n;
};

static void collect(const char *name, int flags, void *arg)
{
    struct seen *s = arg;
    snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
    s->flags[s->n++] = flags;
}

START_TEST(diff_reports_each_changed_directive_once)
{
    struct cfg *a = cfg_create(), *b = cfg_create();
    struct cfg_error err = { "" };
    struct seen s = { .n = 0 };
    ck_assert_int_eq(cfg_diff(a, b, collect, &s), 0);
    ck_assert_int_eq(load_str(b, "port 1\nmaxclients 7\nclass x pattern x*\nclass y pattern y*\n"
                                 "client-output-buffer-limit 256mb 64mb 61s\n", &err), HKV_OK);
    ck_assert_int_eq(cfg_diff(a, b, collect, &s), 4);
    ck_assert_int_eq(s.n, 4);
    ck_assert_str_eq(s.names[0], "port");
    ck_assert_int_eq(s.flags[0], 0);
    ck_assert_str_eq(s.names[1], "maxclients");
    ck_assert_int_eq(s.flags[1], CFG_F_RELOADABLE);
    ck_assert_str_eq(s.names[2], "client-output-buffer-limit");
    ck_assert_str_eq(s.names[3], "class");
    ck_assert_int_eq(s.flags[3], CFG_F_RELOADABLE | CFG_F_MULTI);
    cfg_destroy(&a);
    cfg_destroy(&b);
}
END_TEST

START_TEST(reload_merge_keeps_restart_only_values)
{
    struct cfg *live = cfg_create(), *next = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_int_eq(load_str(live, "port 7000\nbind 10.0.0.1\nmaxclients 10\n", &err), HKV_OK);
    ck_assert_int_eq(load_str(next, "port 7001\nbind 10.0.0.2 10.0.0.3\ndir /x\nmaxclients 20\n"
                                    "loglevel debug\nwire-max-frame 1mb\ncolo b\n"
                                    "class hot pattern h:* pool hot\n", &err), HKV_OK);
    struct cfg *m = cfg_reload_merge(live, next);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(m->port, 7000);
    ck_assert_uint_eq(m->nbind, 1);
    ck_assert_str_eq(m->bind[0], "10.0.0.1");
    ck_assert_str_eq(m->dir, ".");
    ck_assert_str_eq(m->colo, "a");
    ck_assert_int_eq(m->wire_max_frame, 64LL << 20);
    ck_assert_int_eq(m->maxclients, 20);
    ck_assert_int_eq(m->loglevel, CFG_LOG_DEBUG);
    ck_assert_uint_eq(m->nclasses, 2);
    ck_assert_str_eq(m->classes[0].name, "hot");
    /* what differs from live now is only reloadable */
    struct seen s = { .n = 0 };
    ck_assert_int_eq(cfg_diff(live, m, collect, &s), 3);
    for (int i = 0; i < s.n; i++)
        ck_assert_int_ne(s.flags[i] & CFG_F_RELOADABLE, 0);
    cfg_destroy(&m);
    cfg_destroy(&live);
    cfg_destroy(&next);
}
END_TEST

/* ---- CONFIG GET / SET ---- */

START_TEST(config_get_renders_redis_style)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    char buf[512];
    ck_assert_int_eq(cfg_get(c, "port", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "6380");
    ck_assert_int_eq(cfg_get(c, "LOGLEVEL", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "notice");
    ck_assert_int_eq(cfg_get(c, "proto-max-bulk-len", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "16777216");
    ck_assert_int_eq(cfg_get(c, "write-deadline", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "28500ms");
    ck_assert_int_eq(cfg_get(c, "timeout", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "0"); /* whole seconds bare, as Redis */
    ck_assert_int_eq(cfg_get(c, "write-retry-backoff", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "1500ms 3000ms");
    ck_assert_int_eq(cfg_get(c, "client-output-buffer-limit", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "268435456 67108864 60");
    ck_assert_int_eq(cfg_get(c, "pidfile", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "");
    ck_assert_int_eq(cfg_get(c, "class", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "default pool cold fresh 1000ms keep 60000ms durability ledger "
                          "on-timeout degrade");
    ck_assert_int_eq(load_str(c, "bind 127.0.0.1 ::1\nclass a pattern \"x y\"\n", &err), HKV_OK);
    ck_assert_int_eq(cfg_get(c, "bind", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "127.0.0.1 ::1");
    ck_assert_int_eq(cfg_get(c, "class", buf, sizeof(buf)), HKV_OK);
    ck_assert_str_eq(buf, "a pattern \"x y\" pool cold fresh 1000ms keep 60000ms durability "
                          "ledger on-timeout degrade\ndefault pool cold fresh 1000ms keep "
                          "60000ms durability ledger on-timeout degrade");
    ck_assert_int_eq(cfg_get(c, "nope", buf, sizeof(buf)), HKV_ENOENT);
    ck_assert_int_eq(cfg_get(c, "port", buf, 4), HKV_EFULL);
    ck_assert_int_eq(cfg_get(c, "port", buf, 5), HKV_OK);
    cfg_destroy(&c);
}
END_TEST

START_TEST(config_set_changes_only_reloadable_non_path_values)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    char buf[256];
    ck_assert_int_eq(cfg_set(c, "maxclients", "500", &err), HKV_OK);
    ck_assert_int_eq(c->maxclients, 500);
    ck_assert_int_eq(cfg_set(c, "write-retry-backoff", "1s 2s 4s", &err), HKV_OK);
    ck_assert_uint_eq(c->nwrite_retry_backoff, 3);
    ck_assert_int_eq(c->write_retry_backoff_ms[2], 4000);
    ck_assert_int_eq(cfg_set(c, "class", "live pattern \"draw:*\" pool hot", &err), HKV_OK);
    ck_assert_str_eq(cfg_class_for(c, "draw:9", 6)->name, "live");
    /* what GET returns, SET accepts unchanged */
    ck_assert_int_eq(cfg_set(c, "write-deadline", "30s", &err), HKV_OK);
    ck_assert_int_eq(cfg_get(c, "write-deadline", buf, sizeof(buf)), HKV_OK);
    ck_assert_int_eq(cfg_set(c, "write-deadline", buf, &err), HKV_OK);
    ck_assert_int_eq(c->write_deadline_ms, 30000);

    ck_assert_int_eq(cfg_set(c, "port", "7000", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "'port' is restart-only; edit the config file and restart");
    ck_assert_int_eq(cfg_set(c, "logfile", "/tmp/x", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "'logfile' is a path and cannot be set at runtime; edit the config "
                              "file and reload");
    ck_assert_int_eq(cfg_set(c, "dir", "/tmp", &err), HKV_EINVAL);
    ck_assert_int_eq(cfg_set(c, "nope", "1", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "unknown directive 'nope'");
    ck_assert_int_eq(cfg_set(c, "maxclients", "lots", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "'maxclients' needs an integer between 1 and 1000000, got 'lots'");
    ck_assert_int_eq(cfg_set(c, "maxclients", "\"1", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "unterminated quoted string");
    /* a SET that would break the whole config is refused and changes nothing */
    ck_assert_int_eq(cfg_set(c, "write-timeout", "31s", &err), HKV_EINVAL);
    ck_assert_str_eq(err.msg, "write-deadline (30s) must be at least write-timeout (31s)");
    ck_assert_int_eq(c->write_timeout_ms, 8000);
    ck_assert_int_eq(c->port, 6380);
    ck_assert_int_eq(c->maxclients, 500);
    cfg_destroy(&c);
}
END_TEST

/* An owner closes its link on a frame over wire-max-frame, so every
 * single-key command a client may send (a key and a value, each up to
 * proto-max-bulk-len, within client-query-buffer-limit) must fit one, with
 * 1kb for the frame's other fields; the error names the line to fix. */
START_TEST(request_limits_must_fit_an_owner_frame)
{
    struct {
        const char *text;
        const char *msg; /* NULL: valid */
    } cases[] = {
        { "", NULL },                                               /* the defaults */
        { "proto-max-bulk-len 64mb\n",
          "t.conf:1: a command's key and value (each up to proto-max-bulk-len 64mb, together at "
          "most client-query-buffer-limit 1gb) must fit in one owner-link frame: wire-max-frame "
          "is 64mb and needs at least 131073kb (lower proto-max-bulk-len or raise "
          "wire-max-frame, which takes a restart)" },
        { "# a comment\nwire-max-frame 16mb\n",
          "t.conf:2: a command's key and value (each up to proto-max-bulk-len 16mb, together at "
          "most client-query-buffer-limit 1gb) must fit in one owner-link frame: wire-max-frame "
          "is 16mb and needs at least 32769kb (lower proto-max-bulk-len or raise "
          "wire-max-frame, which takes a restart)" },
        { "client-query-buffer-limit 8mb\nwire-max-frame 16mb\n", NULL },
        { "proto-max-bulk-len 2gb\nclient-query-buffer-limit 1mb\n", NULL },
        { "proto-max-bulk-len 1mb\nwire-max-frame 2098176\n", NULL },    /* 2mb + 1kb */
        { "proto-max-bulk-len 1mb\nwire-max-frame 2098175\n", "t.conf:1: " },
        { "proto-max-bulk-len 1gb\nwire-max-frame 4gb\n", NULL },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cfg *c = cfg_create();
        struct cfg_error err = { "" };
        ck_assert_int_eq(load_str(c, cases[i].text, &err), HKV_OK);
        hkv_status st = cfg_validate(c, &err);
        if (cases[i].msg == NULL)
            ck_assert_msg(st == HKV_OK, "case %zu refused: %s", i, err.msg);
        else if (strlen(cases[i].msg) < 20)
            ck_assert_msg(st == HKV_EINVAL && strncmp(err.msg, cases[i].msg,
                                                      strlen(cases[i].msg)) == 0,
                          "case %zu: %s", i, err.msg);
        else
            ck_assert_str_eq(err.msg, cases[i].msg);
        cfg_destroy(&c);
    }
    /* the command line and CONFIG SET name themselves */
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    char *argv[] = { "--proto-max-bulk-len", "40mb" };
    ck_assert_int_eq(cfg_apply(c, 2, argv, "command line", &err), HKV_OK);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_EINVAL);
    ck_assert_msg(strncmp(err.msg, "command line: a command's key", 29) == 0, "%s", err.msg);
    cfg_destroy(&c);
    c = cfg_create();
    ck_assert_int_eq(cfg_set(c, "proto-max-bulk-len", "40mb", &err), HKV_EINVAL);
    ck_assert_msg(strncmp(err.msg, "CONFIG SET: a command's key", 27) == 0, "%s", err.msg);
    ck_assert_int_eq(c->proto_max_bulk_len, 16LL << 20);  /* unchanged */
    ck_assert_int_eq(cfg_set(c, "proto-max-bulk-len", "32mb", &err), HKV_EINVAL);
    ck_assert_int_eq(cfg_set(c, "proto-max-bulk-len", "31mb", &err), HKV_OK);
    cfg_destroy(&c);
}
END_TEST

/* wire-max-frame is restart-only: a reload that raises both it and
 * proto-max-bulk-len keeps the running frame, and the merged config (what
 * would run) is refused, naming the file's line. */
START_TEST(reload_merge_is_checked_against_the_running_frame)
{
    struct cfg *live = cfg_create(), *next = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_int_eq(load_str(next, "wire-max-frame 1gb\nproto-max-bulk-len 256mb\n", &err),
                     HKV_OK);
    ck_assert_int_eq(cfg_validate(next, &err), HKV_OK);
    struct cfg *m = cfg_reload_merge(live, next);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(m->wire_max_frame, 64LL << 20);
    ck_assert_int_eq(cfg_validate(m, &err), HKV_EINVAL);
    ck_assert_msg(strncmp(err.msg, "t.conf:2: ", 10) == 0, "%s", err.msg);
    cfg_destroy(&m);
    cfg_destroy(&live);
    cfg_destroy(&next);
}
END_TEST

/* A reload drops the process's reference; whatever still reads the old
 * config holds its own, and the last one frees it (ASan/valgrind would
 * report a read after free or a leak here). */
START_TEST(config_lives_until_its_last_reference_goes)
{
    struct cfg *live = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_int_eq(load_str(live, "class strict pattern \"e:*\" on-timeout error\n", &err),
                     HKV_OK);
    struct cfg *held = cfg_ref(live);
    ck_assert_ptr_eq(held, live);
    const struct cfg_class *k = cfg_class_for(held, "e:1", 3);
    cfg_destroy(&live);          /* the reload's drop */
    ck_assert_ptr_null(live);
    ck_assert_str_eq(k->name, "strict");
    ck_assert_int_eq(k->on_timeout, CFG_ONTO_ERROR);
    /* CONFIG SET swaps values in place; the references stay with the object */
    struct cfg *again = cfg_ref(held);
    ck_assert_int_eq(cfg_set(held, "maxclients", "77", &err), HKV_OK);
    ck_assert_int_eq(again->maxclients, 77);
    cfg_destroy(&again);
    ck_assert_int_eq(held->maxclients, 77);
    cfg_destroy(&held);
    struct cfg *orig = cfg_create(), *copy = cfg_dup(orig);
    ck_assert_ptr_nonnull(copy);
    cfg_destroy(&orig);
    cfg_destroy(&copy);          /* a copy has a reference of its own */
    ck_assert_ptr_null(copy);
    cfg_destroy(&orig);          /* NULL-safe */
}
END_TEST

/* ---- the HTTP front door's directives ---------------------------------------- */

START_TEST(class_content_type_is_parsed_rendered_and_checked)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_int_eq(load_str(c, "class j pattern j:* content-type \"application/json; "
                                 "charset=utf-8\"\n", &err), HKV_OK);
    ck_assert_str_eq(cfg_class_for(c, "j:1", 3)->content_type, "application/json; charset=utf-8");
    ck_assert_str_eq(cfg_class_for(c, "other", 5)->content_type, "application/octet-stream");
    char buf[512];
    ck_assert_int_eq(cfg_get(c, "class", buf, sizeof(buf)), HKV_OK);
    /* named only when it is not the default, so older lines read as before */
    ck_assert_str_eq(buf, "j pattern j:* pool cold fresh 1000ms keep 60000ms durability ledger "
                          "on-timeout degrade content-type \"application/json; charset=utf-8\"\n"
                          "default pool cold fresh 1000ms keep 60000ms durability ledger "
                          "on-timeout degrade");
    size_t len = 0;
    char *text = cfg_serialize(c, &len);
    struct cfg *back = cfg_create();
    ck_assert_int_eq(cfg_load_text(back, text, len, "serialized", &err), HKV_OK);
    ck_assert_int_eq(cfg_diff(c, back, NULL, NULL), 0);
    free(text);
    cfg_destroy(&back);
    cfg_destroy(&c);
    expect_file_error("class x pattern a content-type json\n",
                      "1: class 'x': 'content-type' needs a media type of 3 to 127 printable "
                      "characters with a '/' (text/plain; charset=utf-8), got 'json'");
    expect_file_error("class x pattern a content-type \"text/plain\\r\\nX: y\"\n",
                      "1: class 'x': 'content-type' needs a media type of 3 to 127 printable "
                      "characters with a '/' (text/plain; charset=utf-8), got 'text/plain??X: y'");
}
END_TEST

START_TEST(http_ports_differ_and_https_needs_a_certificate)
{
    struct {
        const char *text;
        const char *msg;
    } cases[] = {
        { "http-port 6380\n", "http-port and port must differ (both 6380)" },
        { "http-port 7000\nhttps-port 7000\ntls-cert-file c\ntls-key-file k\n"
          "tls-auth-clients no\n", "https-port and http-port must differ (both 7000)" },
        { "https-port 7001\n", "https-port needs tls-cert-file and tls-key-file" },
        { "https-port 7001\ntls-cert-file c\ntls-key-file k\n",
          "tls-auth-clients yes needs tls-ca-cert-file" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cfg *c = cfg_create();
        struct cfg_error err = { "" };
        ck_assert_int_eq(load_str(c, cases[i].text, &err), HKV_OK);
        ck_assert_int_eq(cfg_validate(c, &err), HKV_EINVAL);
        ck_assert_str_eq(err.msg, cases[i].msg);
        cfg_destroy(&c);
    }
    struct cfg *c = cfg_create();
    struct cfg_error err = { "" };
    ck_assert_int_eq(load_str(c, "http-port 7000\nhttp-metrics-allow 10.0.0.0/8 any\n", &err),
                     HKV_OK);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_OK);
    ck_assert_int_eq(load_str(c, "http-metrics-allow 10.0.0.0/33\n", &err), HKV_EINVAL);
    ck_assert_int_eq(load_str(c, "http-metrics-allow localhost\n", &err), HKV_EINVAL);
    cfg_destroy(&c);
}
END_TEST

START_TEST(cidr_ranges_match_addresses)
{
    struct cfg_cidr r;
    struct sockaddr_in in = {.sin_family = AF_INET};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
    ck_assert_int_eq(cfg_cidr_parse("10.1.0.0/16", &r), HKV_OK);
    inet_pton(AF_INET, "10.1.200.3", &in.sin_addr);
    ck_assert_int_eq(cfg_cidr_match(&r, (struct sockaddr *)&in), 1);
    inet_pton(AF_INET, "10.2.0.1", &in.sin_addr);
    ck_assert_int_eq(cfg_cidr_match(&r, (struct sockaddr *)&in), 0);
    /* an IPv4-mapped peer of a dual-stack socket is its IPv4 address */
    inet_pton(AF_INET6, "::ffff:10.1.0.9", &in6.sin6_addr);
    ck_assert_int_eq(cfg_cidr_match(&r, (struct sockaddr *)&in6), 1);
    ck_assert_int_eq(cfg_cidr_parse("::1", &r), HKV_OK);
    inet_pton(AF_INET6, "::1", &in6.sin6_addr);
    ck_assert_int_eq(cfg_cidr_match(&r, (struct sockaddr *)&in6), 1);
    ck_assert_int_eq(cfg_cidr_match(&r, (struct sockaddr *)&in), 0);
    ck_assert_int_eq(cfg_cidr_parse("127.0.0.1/7", &r), HKV_OK);
    inet_pton(AF_INET, "126.9.9.9", &in.sin_addr);
    ck_assert_int_eq(cfg_cidr_match(&r, (struct sockaddr *)&in), 1);
    ck_assert_int_eq(cfg_cidr_parse("any", &r), HKV_OK);
    ck_assert_int_eq(cfg_cidr_match(&r, NULL), 1);
    ck_assert_int_eq(cfg_cidr_parse("1.2.3.4/", &r), HKV_EINVAL);
    ck_assert_int_eq(cfg_cidr_parse("/8", &r), HKV_EINVAL);
    ck_assert_int_eq(cfg_cidr_parse("::1/129", &r), HKV_EINVAL);
}
END_TEST

/* leaf-moves: a single host only; the cluster of one it runs as */
START_TEST(leaf_moves_is_for_a_single_host_and_makes_a_cluster_of_one)
{
    struct cfg_error err;
    struct cfg *c = cfg_create();
    ck_assert_int_eq(c->leaf_moves, 0);
    ck_assert_int_eq(cfg_local_map(c), 0);
    ck_assert_int_eq(cfg_local_cluster(c), HKV_OK);
    ck_assert_str_eq(c->cluster, ""); /* default: the fixed map, as always */
    ck_assert_int_eq(load_str(c, "leaf-moves yes\ncolo east\nhot-owners 2\n", &err), HKV_OK);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_OK);
    ck_assert_int_eq(cfg_local_map(c), 1);
    ck_assert_int_eq(cfg_local_cluster(c), HKV_OK);
    ck_assert_str_eq(c->cluster, CFG_LOCAL_CLUSTER);
    ck_assert_str_eq(c->host, "east");
    /* what the children receive says the same and validates */
    ck_assert_int_eq(cfg_validate(c, &err), HKV_OK);
    ck_assert_int_eq(cfg_local_map(c), 1);
    cfg_destroy(&c);
    /* not with a cluster of etcd's */
    c = cfg_create();
    ck_assert_int_eq(load_str(c, "leaf-moves yes\ncluster prod\nhost h1\n", &err), HKV_OK);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "leaf-moves is for a single host"));
    cfg_destroy(&c);
    /* no owner-port (every owner is local), and owners are needed */
    c = cfg_create();
    ck_assert_int_eq(load_str(c, "leaf-moves yes\nowner-port 7000\n", &err), HKV_OK);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "owner-port is for a cluster"));
    cfg_destroy(&c);
    c = cfg_create();
    ck_assert_int_eq(load_str(c, "leaf-moves yes\nhot-owners 0\ncold-owners 0\n", &err), HKV_OK);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_EINVAL);
    cfg_destroy(&c);
    /* a bad value */
    c = cfg_create();
    ck_assert_int_eq(load_str(c, "leaf-moves maybe\n", &err), HKV_EINVAL);
    cfg_destroy(&c);
    /* replicas: followers live in the leaf map (a cluster's, or leaf-moves') */
    c = cfg_create();
    ck_assert_int_eq(load_str(c, "replicas 1\n", &err), HKV_OK);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "replicas needs a cluster or leaf-moves yes"));
    cfg_destroy(&c);
    c = cfg_create();
    ck_assert_int_eq(load_str(c, "replicas 2\nleaf-moves yes\nzone eu-1\n", &err), HKV_OK);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_OK);
    cfg_destroy(&c);
    c = cfg_create();
    ck_assert_int_eq(load_str(c, "zone \"a b\"\n", &err), HKV_OK);
    ck_assert_int_eq(cfg_validate(c, &err), HKV_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "zone"));
    cfg_destroy(&c);
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t1, const TTest *t2, const TTest *t3)
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

Suite *cfg_suite(void)
{
    Suite *s = suite_create("cfg");
    add(s, "leaf_moves", leaf_moves_is_for_a_single_host_and_makes_a_cluster_of_one, NULL, NULL);
    add(s, "defaults", defaults_match_the_documented_values,
        option_table_lists_every_directive_once, NULL);
    add(s, "docs", option_syntax_states_type_and_bounds,
        conf_man_page_lists_exactly_the_option_table, NULL);
    add(s, "valid_file", valid_file_sets_every_value_it_names,
        example_config_parses_and_validates, NULL);
    add(s, "errors", errors_name_the_file_line_and_reason, errors_for_values_with_units,
        missing_oversized_and_long_line_files);
    add(s, "units", sizes_take_decimal_and_binary_units, durations_take_units_and_decimals,
        NULL);
    add(s, "quotes", quotes_and_escapes, NULL, NULL);
    add(s, "ratios", ratios_take_a_fraction_with_three_decimals_at_most, NULL, NULL);
    add(s, "include", include_resolves_against_the_including_file,
        include_loop_and_depth_are_refused, NULL);
    add(s, "command_line", command_line_overrides_the_file, NULL, NULL);
    add(s, "classes", class_lines_build_classes_in_file_order,
        class_errors_are_reported_at_their_line, validation_catches_cross_directive_mistakes);
    add(s, "glob", glob_matches_redis_semantics, glob_pathological_pattern_finishes_fast,
        class_patterns_match_as_globs_whatever_their_shape);
    add(s, "serialize", serialize_round_trips_to_an_equal_config, NULL, NULL);
    add(s, "diff_reload", diff_reports_each_changed_directive_once,
        reload_merge_keeps_restart_only_values, NULL);
    add(s, "get_set", config_get_renders_redis_style,
        config_set_changes_only_reloadable_non_path_values, NULL);
    add(s, "references", config_lives_until_its_last_reference_goes, NULL, NULL);
    add(s, "frame", request_limits_must_fit_an_owner_frame,
        reload_merge_is_checked_against_the_running_frame, NULL);
    add(s, "http", class_content_type_is_parsed_rendered_and_checked,
        http_ports_differ_and_https_needs_a_certificate, cidr_ranges_match_addresses);
    return s;
}
