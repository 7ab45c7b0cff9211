/*
 * runner.c - the one Check runner.  The Makefile generates suites.h from the
 * test file names; `hkvtest unit` runs tests/unit, `hkvtest integration` runs
 * tests/integration and tests/fault, `hkvtest all` runs everything.  Fork mode
 * stays on (a crash fails one test); CK_FORK=no is for valgrind only.
 *
 * Each suite runs in an SRunner of its own, so its wall time can be printed
 * ("suite reload: 42.1 s ...": Check has no per-suite hook): the run is quiet
 * but for those lines and the failures, and the last line is Check's summary
 * over all suites, in Check's words ("100%: Checks: N, Failures: 0, Errors: 0").
 * CK_VERBOSITY (silent|minimal|normal|verbose) still makes Check talk, per
 * suite.  CK_RUN_SUITE / CK_RUN_CASE narrow the run as usual (a suite left
 * with no test prints nothing).  Check would overwrite CK_XML_LOG_FILE_NAME
 * and CK_LOG_FILE_NAME at every SRunner, so each suite logs to a file of its
 * own and the runner joins them into the one file asked for.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SUITE(kind, name) Suite *name##_suite(void);
#include "suites.h"
#undef SUITE

static int wanted(const char *kind, const char *which)
{
    if (strcmp(which, "all") == 0)
        return 1;
    if (strcmp(which, "integration") == 0)
        return strcmp(kind, "integration") == 0 || strcmp(kind, "fault") == 0;
    return strcmp(kind, which) == 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Check's own percentage: 100 when nothing failed, else the share passed. */
static int percent_passed(int run, int bad)
{
    if (bad == 0)
        return 100;
    return run == 0 ? 0 : (int)((float)(run - bad) / (float)run * 100.0f);
}

/* The logs asked for through the environment, joined over the suites. */
struct joined_log {
    const char *path;  /* where the whole run's log goes; NULL: none asked */
    char part[300];    /* the current suite's own file */
    FILE *out;
    int xml;
};

static void log_open(struct joined_log *l, const char *env, int xml)
{
    memset(l, 0, sizeof(*l));
    l->xml = xml;
    l->path = getenv(env);
    if (l->path == NULL || l->path[0] == '\0' || strcmp(l->path, "-") == 0) {
        l->path = NULL; /* "-" is stdout: Check's own per-suite output is fine */
        return;
    }
    snprintf(l->part, sizeof(l->part), "%s.part.%d", l->path, (int)getpid());
    l->out = fopen(l->path, "w");
    if (l->out == NULL) {
        perror(l->path);
        l->path = NULL;
        return;
    }
    if (xml) {
        char when[64];
        time_t t = time(NULL);
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
        fprintf(l->out, "<?xml version=\"1.0\"?>\n"
                        "<testsuites xmlns=\"http://check.sourceforge.net/ns\">\n"
                        "  <datetime>%s</datetime>\n", when);
    }
    fflush(l->out); /* nothing buffered for the forked tests to write again */
}

/* Appends the suite's file to the joined log: for XML, its <suite> blocks. */
static void log_take(struct joined_log *l)
{
    if (l->path == NULL)
        return;
    FILE *in = fopen(l->part, "r");
    if (in == NULL)
        return;
    char line[8192];
    int inside = !l->xml;
    while (fgets(line, sizeof(line), in) != NULL) {
        if (l->xml && strstr(line, "<suite>") != NULL)
            inside = 1;
        if (inside)
            fputs(line, l->out);
        if (l->xml && strstr(line, "</suite>") != NULL)
            inside = 0;
    }
    fclose(in);
    fflush(l->out);
    unlink(l->part);
}

static void log_close(struct joined_log *l, double seconds)
{
    if (l->path == NULL)
        return;
    if (l->xml)
        fprintf(l->out, "  <duration>%f</duration>\n</testsuites>\n", seconds);
    fclose(l->out);
}

/* What the whole run adds up to. */
struct totals {
    enum print_output mode;
    struct joined_log xml, text;
    int suites, run, failed, errors;
    char bad[4096]; /* names of the suites that failed */
};

/* Runs one suite in an SRunner of its own and prints its wall time. */
static void run_suite(struct totals *t, Suite *s, const char *kind, const char *name)
{
    SRunner *sr = srunner_create(s);
    if (t->xml.path != NULL)
        srunner_set_xml(sr, t->xml.part);
    if (t->text.path != NULL)
        srunner_set_log(sr, t->text.part);
    double t0 = now_s();
    srunner_run_all(sr, t->mode);
    double dt = now_s() - t0;
    log_take(&t->xml);
    log_take(&t->text);

    int n = srunner_ntests_run(sr), f = 0, e = 0;
    TestResult **res = srunner_failures(sr);
    for (int i = 0; i < srunner_ntests_failed(sr); i++) {
        if (tr_rtype(res[i]) == CK_ERROR)
            e++;
        else
            f++;
    }
    free(res);
    t->suites++;
    if (n > 0)
        printf("suite %s: %.1f s (%s, %d checks%s)\n", name, dt, kind, n,
               f + e > 0 ? ", FAILED" : "");
    if (f + e > 0) {
        if (t->mode == CK_SILENT)
            srunner_print(sr, CK_NORMAL); /* Check's lines for what failed */
        size_t l = strlen(t->bad);
        snprintf(t->bad + l, sizeof(t->bad) - l, " %s", name);
    }
    fflush(stdout);
    t->run += n;
    t->failed += f;
    t->errors += e;
    srunner_free(sr);
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "all";
    static struct totals t;
    double t_all = now_s();

    t.mode = getenv("CK_VERBOSITY") != NULL ? CK_ENV : CK_SILENT;
    log_open(&t.xml, "CK_XML_LOG_FILE_NAME", 1);
    log_open(&t.text, "CK_LOG_FILE_NAME", 0);
#define SUITE(kind, name)                                  \
    if (wanted(#kind, which))                              \
        run_suite(&t, name##_suite(), #kind, #name);
#include "suites.h"
#undef SUITE

    double total = now_s() - t_all;
    log_close(&t.xml, total);
    log_close(&t.text, total);
    if (t.suites == 0) {
        fprintf(stderr, "hkvtest: no suites for '%s' (unit|integration|all)\n", which);
        return 2;
    }
    printf("%d suites in %.1f s%s%s\n", t.suites, total, t.bad[0] != '\0' ? "; failed:" : "",
           t.bad);
    printf("%d%%: Checks: %d, Failures: %d, Errors: %d\n",
           percent_passed(t.run, t.failed + t.errors), t.run, t.failed, t.errors);
    return t.failed + t.errors == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
