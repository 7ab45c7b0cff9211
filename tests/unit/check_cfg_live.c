/*
 * check_cfg_live.c - the configuration library on a running daemon's side:
 * serialize and diff, the reload merge (restart-only values kept, request
 * limits against the running frame), CONFIG GET/SET, a config's reference
 * count, and the HTTP front door's directives (content types, ports, CIDR
 * ranges) and leaf-moves' cluster of one.
 */
#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/cfg.h"
#include "tests/unit/cfg_fixture.h"

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

Suite *cfg_live_suite(void)
{
    Suite *s = suite_create("cfg_live");
    cfg_test_add(s, "leaf_moves", leaf_moves_is_for_a_single_host_and_makes_a_cluster_of_one,
                 NULL, NULL);
    cfg_test_add(s, "serialize", serialize_round_trips_to_an_equal_config, NULL, NULL);
    cfg_test_add(s, "diff_reload", diff_reports_each_changed_directive_once,
                 reload_merge_keeps_restart_only_values, NULL);
    cfg_test_add(s, "get_set", config_get_renders_redis_style,
                 config_set_changes_only_reloadable_non_path_values, NULL);
    cfg_test_add(s, "references", config_lives_until_its_last_reference_goes, NULL, NULL);
    cfg_test_add(s, "frame", request_limits_must_fit_an_owner_frame,
                 reload_merge_is_checked_against_the_running_frame, NULL);
    cfg_test_add(s, "http", class_content_type_is_parsed_rendered_and_checked,
                 http_ports_differ_and_https_needs_a_certificate, cidr_ranges_match_addresses);
    return s;
}
