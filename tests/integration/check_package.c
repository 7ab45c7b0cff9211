/*
 * check_package.c - what `make deb` and `make install` produce, used as an
 * admin would: the .deb ($HOTKVD_DEB, built by make before the run) is
 * unpacked into a temp root with dpkg-deb -x, and the installed binary runs
 * with the installed config (--test-config, then a real start on an
 * ephemeral port with port and dir overridden on the command line).  The
 * static checks run the tools Debian judges packages with: lintian (no
 * errors), systemd-analyze verify (no complaint about the unit, its binary
 * or its man pages), groff (no warning in the pages), logrotate -d.
 *
 * Each test works in the runner's fixture dir (h_fixture_dir), which the
 * runner removes after the test, pass or fail.  A tool that is not installed
 * (no systemd-analyze, no lintian) skips its check with a printed reason;
 * `make test` installs lintian through scripts/install-deps.sh.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"

#define OUT_MAX (256 * 1024)
static char out[OUT_MAX];

static const char *deb_path(void)
{
    const char *p = getenv("HOTKVD_DEB");
    ck_assert_msg(p != NULL, "HOTKVD_DEB is not set (run through make integration or make test)");
    ck_assert_msg(access(p, R_OK) == 0, "no package at %s (make deb)", p);
    return p;
}

/* Runs a shell command line; its exit code, with its output in `out`. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    static char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    return h_run(argv, NULL, out, sizeof(out), 60000);
}

/* The last command's output into buf (ck-fails if it does not fit). */
static void keep_out(char *buf, size_t len)
{
    size_t n = strlen(out);
    ck_assert_msg(n < len, "output of %zu bytes does not fit %zu", n, len);
    memcpy(buf, out, n + 1);
}

/* Unpacks the package into <fixture>/root; returns that path. */
static const char *unpack(void)
{
    static char root[512];
    snprintf(root, sizeof(root), "%s/root", h_fixture_dir);
    ck_assert_msg(sh("dpkg-deb -x '%s' '%s'", deb_path(), root) == 0, "dpkg-deb -x: %s", out);
    return root;
}

static void assert_file(const char *root, const char *path, mode_t mode)
{
    char p[1024];
    struct stat st;
    snprintf(p, sizeof(p), "%s%s", root, path);
    ck_assert_msg(stat(p, &st) == 0 && S_ISREG(st.st_mode), "%s is not in the package", path);
    ck_assert_msg((st.st_mode & 07777) == mode, "%s has mode %o, not %o", path,
                  (unsigned)(st.st_mode & 07777), (unsigned)mode);
}

/* The package's control field `name` (trailing newline removed) into buf. */
static void control_field(const char *name, char *buf, size_t len)
{
    ck_assert_int_eq(sh("dpkg-deb -f '%s' %s", deb_path(), name), 0);
    keep_out(buf, len);
    buf[strcspn(buf, "\n")] = '\0';
}

/* 1 if the Depends field `dep` ("a (>= 1), b, c") names package `pkg`. */
static int depends_on(const char *dep, const char *pkg)
{
    size_t n = strlen(pkg);
    for (const char *p = dep; *p != '\0';) {
        p += strspn(p, " ,|");
        size_t w = strcspn(p, " ,|(");
        if (w == n && strncmp(p, pkg, n) == 0)
            return 1;
        p += w;
        p += strcspn(p, ",|");
    }
    return 0;
}

static int have(const char *tool)
{
    if (access(tool, X_OK) == 0)
        return 1;
    fprintf(stderr, "package: %s is not installed, check skipped\n", tool);
    return 0;
}

START_TEST(package_holds_every_file_with_conffiles_and_one_version)
{
    const char *root = unpack();
    assert_file(root, "/usr/bin/hotkvd", 0755);
    assert_file(root, "/etc/hotkvd/hotkvd.conf", 0644);      /* postinst: 0640 root:hotkvd */
    assert_file(root, "/etc/logrotate.d/hotkvd", 0644);
    assert_file(root, "/lib/systemd/system/hotkvd.service", 0644);
    assert_file(root, "/usr/share/man/man8/hotkvd.8.gz", 0644);
    assert_file(root, "/usr/share/man/man5/hotkvd.conf.5.gz", 0644);
    assert_file(root, "/usr/share/doc/hotkvd/copyright", 0644);
    assert_file(root, "/usr/share/doc/hotkvd/changelog.gz", 0644);
    assert_file(root, "/usr/share/doc/hotkvd/README.md", 0644);
    assert_file(root, "/usr/share/doc/hotkvd/examples/hotkvd.conf.example", 0644);

    /* Every file under /etc is a conffile (kept across upgrades), and only those. */
    ck_assert_int_eq(sh("dpkg-deb --ctrl-tarfile '%s' | tar -xOf - ./conffiles | sort", deb_path()),
                     0);
    char conffiles[512];
    keep_out(conffiles, sizeof(conffiles));
    ck_assert_int_eq(sh("cd '%s' && find etc -type f | sed 's|^|/|' | sort", root), 0);
    ck_assert_str_eq(conffiles, out);
    ck_assert_str_eq(conffiles, "/etc/hotkvd/hotkvd.conf\n/etc/logrotate.d/hotkvd\n");

    /* One version: the package's is the binary's. */
    char version[64], want[96];
    control_field("Version", version, sizeof(version));
    ck_assert_int_eq(sh("'%s/usr/bin/hotkvd' --version", root), 0);
    snprintf(want, sizeof(want), "hotkvd %s\n", version);
    ck_assert_str_eq(out, want);

    /* Depends names the package of every library the binary needs. */
    char depends[1024];
    control_field("Depends", depends, sizeof(depends));
    ck_assert_int_eq(sh("objdump -p '%s/usr/bin/hotkvd' | awk '/NEEDED/ {print $2}'", root), 0);
    char needed[1024];
    keep_out(needed, sizeof(needed));
    int nlibs = 0;
    for (char *save = NULL, *lib = strtok_r(needed, "\n", &save); lib != NULL;
         lib = strtok_r(NULL, "\n", &save), nlibs++) {
        /* "libssl3:amd64: /usr/lib/.../libssl.so.3" -> libssl3, one per line */
        ck_assert_int_eq(sh("dpkg -S '*/%s' | sed 's/: \\/.*//' | tr ',' '\\n' "
                            "| sed 's/^ *//; s/:.*//' | sort -u", lib),
                         0);
        int found = 0;
        for (char *s2 = NULL, *pkg = strtok_r(out, "\n", &s2); pkg != NULL && !found;
             pkg = strtok_r(NULL, "\n", &s2))
            found = depends_on(depends, pkg);
        ck_assert_msg(found, "Depends (%s) names no package holding %s", depends, lib);
    }
    ck_assert_int_ge(nlibs, 4); /* libc, libevent, libsqlite3, libssl/libcrypto */

    /* The installed config page is the one the unit suite checked against
     * the option table. */
    const char *page = getenv("HOTKVD_CONF_MAN");
    ck_assert_ptr_nonnull(page);
    ck_assert_msg(sh("zcat '%s/usr/share/man/man5/hotkvd.conf.5.gz' | cmp - '%s'", root, page) == 0,
                  "the packaged hotkvd.conf(5) is not the built one: %s", out);
}
END_TEST

START_TEST(installed_binary_validates_and_serves_the_installed_config)
{
    const char *root = unpack();
    char bin[600], conf[600];
    snprintf(bin, sizeof(bin), "%s/usr/bin/hotkvd", root);
    snprintf(conf, sizeof(conf), "%s/etc/hotkvd/hotkvd.conf", root);

    /* The installed config puts the data where the unit lets it write. */
    ck_assert_int_eq(sh("grep -x 'dir /var/lib/hotkvd' '%s'", conf), 0);
    ck_assert_int_eq(sh("'%s' --test-config '%s'", bin, conf), 0);
    ck_assert_msg(strstr(out, "is valid") != NULL, "%s", out);
    ck_assert_int_eq(sh("'%s' --test-config '%s' --port 99999", bin, conf), 1);

    /* A real start: the installed binary and config, port and dir overridden
     * as README shows, in the fixture dir. */
    struct daemon d;
    memset(&d, 0, sizeof(d));
    ck_assert_int_lt(snprintf(d.dir, sizeof(d.dir), "%.200s/data", h_fixture_dir),
                     (int)sizeof(d.dir));
    ck_assert_int_eq(mkdir(d.dir, 0700), 0);
    snprintf(d.log, sizeof(d.log), "%s/hotkvd.log", d.dir);
    d.port = h_free_port();
    char port[16];
    snprintf(port, sizeof(port), "%d", d.port);
    setenv("HOTKVD_BIN", bin, 1); /* h_spawn runs $HOTKVD_BIN; this test process only */
    char *argv[] = {"hotkvd", conf, "--port", port, "--dir", d.dir, "--logfile", d.log, NULL};
    d.pid = h_spawn(argv, NULL);
    int64_t end = h_now_ms() + 10000;
    int up = 0;
    while (!up && h_now_ms() < end && h_alive(d.pid)) {
        up = h_ping(d.port);
        if (!up)
            h_sleep_ms(50);
    }
    if (!up)
        h_dump_log(&d);
    ck_assert_msg(up, "the installed hotkvd did not answer PING on port %d", d.port);
    char version[64], info[64];
    control_field("Version", version, sizeof(version));
    ck_assert_int_eq(h_info_field(d.port, "hotkvd_version", info, sizeof(info)), 0);
    ck_assert_str_eq(info, version);
    int status = h_halt(&d); /* SIGTERM to the master's PID */
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

/* systemd-analyze verify exits 0 even for a line it ignores, so the check is
 * "no output at all".  The unit's binary path points into the temp root (it
 * must exist), and MANPATH lets verify find the man pages it documents. */
START_TEST(unit_passes_systemd_analyze_verify)
{
    if (!have("/usr/bin/systemd-analyze"))
        return;
    const char *root = unpack();
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/verify", h_fixture_dir);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    ck_assert_int_eq(sh("sed 's|/usr/bin/hotkvd|%s/usr/bin/hotkvd|g' "
                        "'%s/lib/systemd/system/hotkvd.service' > '%s/hotkvd.service'",
                        root, root, dir),
                     0);
    int rc = sh("MANPATH='%s/usr/share/man' systemd-analyze verify '%s/hotkvd.service'", root, dir);
    ck_assert_msg(rc == 0 && out[0] == '\0', "systemd-analyze verify (exit %d):\n%s", rc, out);
}
END_TEST

START_TEST(lintian_reports_no_errors)
{
    if (!have("/usr/bin/lintian"))
        return;
    int rc = sh("lintian --allow-root --fail-on error --pedantic '%s'", deb_path());
    if (out[0] != '\0')
        fprintf(stderr, "lintian (warnings, info and pedantic tags are not failures):\n%s", out);
    ck_assert_msg(rc == 0, "lintian exit %d", rc);
    ck_assert_msg(strstr(out, "E: ") == NULL, "lintian reports errors");
}
END_TEST

START_TEST(man_pages_have_no_groff_warning)
{
    const char *root = unpack();
    const char *pages[] = {"man8/hotkvd.8.gz", "man5/hotkvd.conf.5.gz"};
    for (size_t i = 0; i < 2; i++) {
        int rc = sh("zcat '%s/usr/share/man/%s' | groff -man -ww -z", root, pages[i]);
        ck_assert_msg(rc == 0 && out[0] == '\0', "%s: %s", pages[i], out);
        /* and it renders: the page's NAME line is there */
        ck_assert_int_eq(sh("MANWIDTH=80 man -l '%s/usr/share/man/%s' | grep -q '^NAME'", root,
                            pages[i]),
                         0);
    }
}
END_TEST

/* The user and group need not exist on the test machine: check the snippet
 * as root:root, which changes nothing else in it. */
START_TEST(logrotate_snippet_parses)
{
    if (!have("/usr/sbin/logrotate"))
        return;
    const char *root = unpack();
    int rc = sh("sed 's/hotkvd adm/root root/' '%s/etc/logrotate.d/hotkvd' > '%s/lr.conf' && "
                "logrotate -d --state '%s/lr.state' '%s/lr.conf' 2>&1",
                root, h_fixture_dir, h_fixture_dir, h_fixture_dir);
    ck_assert_msg(rc == 0 && strstr(out, "error") == NULL, "logrotate -d: %s", out);
    ck_assert_msg(strstr(out, "rotating pattern: /var/log/hotkvd/*.log") != NULL, "%s", out);
}
END_TEST

/* make install/uninstall with another PREFIX and a DESTDIR: paths in the
 * unit follow PREFIX, an existing config is never replaced, uninstall keeps
 * an edited config and removes an untouched logrotate snippet. */
START_TEST(make_install_follows_prefix_and_uninstall_keeps_edited_config)
{
    const char *variant = getenv("HOTKVD_VARIANT");
    ck_assert_ptr_nonnull(variant);
    unsetenv("MAKEFLAGS");  /* not the parent make's jobserver */
    unsetenv("MFLAGS");
    unsetenv("MAKELEVEL");
    char make[1024];
    snprintf(make, sizeof(make), "make -s --no-print-directory VARIANT=%s PREFIX=/opt/hk "
             "DESTDIR=%s/dest", variant, h_fixture_dir);
    const char *d = h_fixture_dir;

    ck_assert_msg(sh("%s install", make) == 0, "make install: %s", out);
    assert_file(d, "/dest/opt/hk/bin/hotkvd", 0755);
    assert_file(d, "/dest/opt/hk/etc/hotkvd/hotkvd.conf", 0644);
    assert_file(d, "/dest/opt/hk/etc/logrotate.d/hotkvd", 0644);
    assert_file(d, "/dest/opt/hk/lib/systemd/system/hotkvd.service", 0644);
    assert_file(d, "/dest/opt/hk/lib/sysusers.d/hotkvd.conf", 0644);
    assert_file(d, "/dest/opt/hk/share/man/man8/hotkvd.8", 0644);
    assert_file(d, "/dest/opt/hk/share/man/man5/hotkvd.conf.5", 0644);
    ck_assert_int_eq(sh("grep -x 'ExecStart=/opt/hk/bin/hotkvd /opt/hk/etc/hotkvd/hotkvd.conf' "
                        "'%s/dest/opt/hk/lib/systemd/system/hotkvd.service'", d),
                     0);
    ck_assert_int_eq(sh("! grep -E '(=| )(/usr/bin/hotkvd|/etc/hotkvd/)' "
                        "'%s/dest/opt/hk/lib/systemd/system/hotkvd.service'", d),
                     0);
    ck_assert_int_eq(sh("grep -q '/opt/hk/etc/hotkvd/hotkvd.conf' "
                        "'%s/dest/opt/hk/share/man/man8/hotkvd.8'", d),
                     0);

    /* The admin edits the config; a second install keeps it. */
    ck_assert_int_eq(sh("echo 'port 7000' >> '%s/dest/opt/hk/etc/hotkvd/hotkvd.conf'", d), 0);
    ck_assert_msg(sh("%s install", make) == 0, "make install: %s", out);
    ck_assert_msg(strstr(out, "keeping") != NULL, "%s", out);
    ck_assert_int_eq(sh("tail -1 '%s/dest/opt/hk/etc/hotkvd/hotkvd.conf'", d), 0);
    ck_assert_str_eq(out, "port 7000\n");

    ck_assert_msg(sh("%s uninstall", make) == 0, "make uninstall: %s", out);
    ck_assert_int_eq(sh("cd '%s/dest' && find . -type f | sort", d), 0);
    ck_assert_str_eq(out, "./opt/hk/etc/hotkvd/hotkvd.conf\n");
}
END_TEST

Suite *package_suite(void)
{
    Suite *s = suite_create("package");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"contents", package_holds_every_file_with_conffiles_and_one_version},
        {"runs", installed_binary_validates_and_serves_the_installed_config},
        {"unit", unit_passes_systemd_analyze_verify},
        {"lintian", lintian_reports_no_errors},
        {"man", man_pages_have_no_groff_warning},
        {"logrotate", logrotate_snippet_parses},
        {"make_install", make_install_follows_prefix_and_uninstall_keeps_edited_config},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 120);
        tcase_add_unchecked_fixture(tc, h_dir_setup, h_dir_teardown);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}
