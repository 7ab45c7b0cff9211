/*
 * check_cfg.c - the configuration library's file side: defaults and the
 * documented table, the file syntax and its error messages, units, quotes,
 * includes and the command line (classes and globs: check_cfg_class.c;
 * serialize, reload merge, CONFIG GET/SET: check_cfg_live.c).
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

#include "tests/unit/cfg_fixture.h"

/* ---- helpers ---- */

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

Suite *cfg_suite(void)
{
    Suite *s = suite_create("cfg");
    cfg_test_add(s, "defaults", defaults_match_the_documented_values,
                 option_table_lists_every_directive_once, NULL);
    cfg_test_add(s, "docs", option_syntax_states_type_and_bounds,
                 conf_man_page_lists_exactly_the_option_table, NULL);
    cfg_test_add(s, "valid_file", valid_file_sets_every_value_it_names,
                 example_config_parses_and_validates, NULL);
    cfg_test_add(s, "errors", errors_name_the_file_line_and_reason, errors_for_values_with_units,
                 missing_oversized_and_long_line_files);
    cfg_test_add(s, "units", sizes_take_decimal_and_binary_units, durations_take_units_and_decimals,
                 NULL);
    cfg_test_add(s, "quotes", quotes_and_escapes, NULL, NULL);
    cfg_test_add(s, "ratios", ratios_take_a_fraction_with_three_decimals_at_most, NULL, NULL);
    cfg_test_add(s, "include", include_resolves_against_the_including_file,
                 include_loop_and_depth_are_refused, NULL);
    cfg_test_add(s, "command_line", command_line_overrides_the_file, NULL, NULL);
    return s;
}
