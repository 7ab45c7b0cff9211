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
 * HKV_TEST_JOBS=N runs N suites at a time (run_parallel, below).
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
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

/* The part file of the suite run by process pid. */
static void log_part(const struct joined_log *l, int pid, char *out, size_t len)
{
    snprintf(out, len, "%s.part.%d", l->path != NULL ? l->path : "", pid);
}

/* Appends a suite's part file to the joined log: for XML, its <suite> blocks. */
static void log_take(struct joined_log *l, const char *part)
{
    if (l->path == NULL)
        return;
    FILE *in = fopen(part, "r");
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
    unlink(part);
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
    char why[64];   /* a file every suite's process appends its failures' lines to */
};

/* One suite's result. */
struct outcome {
    int n, f, e;
    double dt;
};

/* Runs one suite in an SRunner of its own (its logs into this process's
 * part files) and prints its wall time, and Check's lines for what failed. */
static struct outcome run_one(struct totals *t, Suite *s, const char *kind, const char *name)
{
    char xml_part[300], text_part[300];
    log_part(&t->xml, (int)getpid(), xml_part, sizeof(xml_part));
    log_part(&t->text, (int)getpid(), text_part, sizeof(text_part));
    SRunner *sr = srunner_create(s);
    if (t->xml.path != NULL)
        srunner_set_xml(sr, xml_part);
    if (t->text.path != NULL)
        srunner_set_log(sr, text_part);
    struct outcome o = {0};
    double t0 = now_s();
    srunner_run_all(sr, t->mode);
    o.dt = now_s() - t0;
    o.n = srunner_ntests_run(sr);
    TestResult **res = srunner_failures(sr);
    FILE *why = srunner_ntests_failed(sr) > 0 ? fopen(t->why, "a") : NULL;
    for (int i = 0; i < srunner_ntests_failed(sr); i++) {
        if (tr_rtype(res[i]) == CK_ERROR)
            o.e++;
        else
            o.f++;
        if (why != NULL) /* repeated at the end of the run: a log's tail says why */
            fprintf(why, "  %s: %s:%d: %s: %.600s\n", name, tr_lfile(res[i]), tr_lno(res[i]),
                    tr_tcname(res[i]), tr_msg(res[i]));
    }
    if (why != NULL)
        fclose(why);
    free(res);
    if (o.n > 0)
        printf("suite %s: %.1f s (%s, %d checks%s)\n", name, o.dt, kind, o.n,
               o.f + o.e > 0 ? ", FAILED" : "");
    if (o.f + o.e > 0 && t->mode == CK_SILENT)
        srunner_print(sr, CK_NORMAL);
    fflush(stdout);
    srunner_free(sr);
    return o;
}

/* Adds a suite run by process pid to the totals and the joined logs. */
static void account(struct totals *t, const char *name, int pid, const struct outcome *o)
{
    char part[300];
    log_part(&t->xml, pid, part, sizeof(part));
    log_take(&t->xml, part);
    log_part(&t->text, pid, part, sizeof(part));
    log_take(&t->text, part);
    t->suites++;
    t->run += o->n;
    t->failed += o->f;
    t->errors += o->e;
    if (o->f + o->e > 0) {
        size_t l = strlen(t->bad);
        snprintf(t->bad + l, sizeof(t->bad) - l, " %s", name);
    }
}

/* The suites of a run, in the order of suites.h. */
struct entry {
    Suite *(*make)(void);
    const char *kind, *name;
};

/* 1 if name is one of the words (comma- or space-separated) of env. */
static int named_in(const char *env, const char *name)
{
    const char *a = getenv(env);
    size_t n = strlen(name);
    for (const char *p = a; p != NULL && *p;) {
        p += strspn(p, " ,");
        size_t w = strcspn(p, " ,");
        if (w == n && strncmp(p, name, n) == 0)
            return 1;
        p += w;
    }
    return 0;
}

static int alone(const char *name)
{
    return named_in("HKV_TEST_ALONE", name);
}

/* HKV_TEST_JOBS=N (N > 1): N suites at a time, each in a process of its
 * own whose output is held in a file and printed whole when the suite ends,
 * so the lines of two suites never mix.  Most daemon-level suites spend
 * their time waiting on the daemon, so two at a time nearly halve the run;
 * the suites named in HKV_TEST_ALONE (those that drive a load of their own
 * and judge what the daemon does under it, or run a whole cluster) run with
 * no other suite beside them. */
static void run_parallel(struct totals *t, const struct entry *list, int count, int jobs)
{
    int alone_running = 0;
    struct slot {
        pid_t pid;
        int res, idx;
        char out[64];
    } slots[16];
    int next = 0, running = 0;
    if (jobs > 16)
        jobs = 16;
    for (int i = 0; i < jobs; i++)
        slots[i].pid = 0;
    while (next < count || running > 0) {
        for (int i = 0; i < jobs && next < count && !alone_running; i++) {
            if (slots[i].pid != 0)
                continue;
            if (alone(list[next].name)) {
                if (running > 0)
                    break; /* it starts once the others are done */
                alone_running = 1;
            }
            struct slot *sl = &slots[i];
            int p[2];
            snprintf(sl->out, sizeof(sl->out), "/tmp/hkvtest-suite-XXXXXX");
            int ofd = mkstemp(sl->out);
            if (ofd < 0 || pipe(p) != 0) {
                perror("hkvtest");
                exit(2);
            }
            sl->idx = next++;
            fflush(stdout);
            fflush(stderr);
            pid_t pid = fork();
            if (pid == 0) {
                /* The suite sees the descriptors a suite run alone sees:
                 * 0-2, nothing else open to hand its tests and daemons (the
                 * result pipe out of the way, closed at exec). */
                close(p[0]);
                for (int j = 0; j < jobs; j++)
                    if (j != i && slots[j].pid != 0)
                        close(slots[j].res);
                int res = fcntl(p[1], F_DUPFD_CLOEXEC, 200);
                close(p[1]);
                dup2(ofd, 1);
                dup2(ofd, 2);
                close(ofd);
                const struct entry *e = &list[sl->idx];
                struct outcome o = run_one(t, e->make(), e->kind, e->name);
                fflush(stdout);
                if (res < 0 || write(res, &o, sizeof(o)) != (ssize_t)sizeof(o))
                    _exit(3);
                _exit(0);
            }
            close(ofd);
            close(p[1]);
            sl->pid = pid;
            sl->res = p[0];
            running++;
        }
        int status;
        pid_t done = wait(&status);
        if (done < 0) {
            perror("hkvtest: wait");
            exit(2);
        }
        for (int i = 0; i < jobs && done > 0; i++) {
            struct slot *sl = &slots[i];
            if (sl->pid != done)
                continue;
            const struct entry *e = &list[sl->idx];
            struct outcome o = {.n = 1, .e = 1}; /* no result: the suite's process died */
            if (read(sl->res, &o, sizeof(o)) != (ssize_t)sizeof(o))
                printf("suite %s: its process ended without a result (status %d)\n", e->name,
                       status);
            close(sl->res);
            FILE *f = fopen(sl->out, "r");
            char buf[8192];
            size_t k;
            while (f != NULL && (k = fread(buf, 1, sizeof(buf), f)) > 0)
                fwrite(buf, 1, k, stdout);
            if (f != NULL)
                fclose(f);
            unlink(sl->out);
            fflush(stdout);
            account(t, e->name, (int)done, &o);
            if (alone(e->name))
                alone_running = 0;
            sl->pid = 0;
            running--;
        }
    }
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "all";
    static struct totals t;
    static struct entry list[512];
    int count = 0;
    const char *jobs_env = getenv("HKV_TEST_JOBS");
    int jobs = jobs_env != NULL ? atoi(jobs_env) : 1;
    double t_all = now_s();

    t.mode = getenv("CK_VERBOSITY") != NULL ? CK_ENV : CK_SILENT;
    snprintf(t.why, sizeof(t.why), "/tmp/hkvtest-failed-%d", (int)getpid());
    unlink(t.why);
    log_open(&t.xml, "CK_XML_LOG_FILE_NAME", 1);
    log_open(&t.text, "CK_LOG_FILE_NAME", 0);
#define SUITE(kind, name)                                                      \
    if (wanted(#kind, which) && count < 512)                                   \
        list[count++] = (struct entry){name##_suite, #kind, #name};
#include "suites.h"
#undef SUITE
    if (jobs > 1) {
        /* The long suites first (HKV_TEST_FIRST), so none starts last
         * beside an idle slot; those that run alone at the end, together,
         * so the others are drained for them once. */
        static struct entry order[512];
        int k = 0;
        for (int pass = 0; pass < 3; pass++)
            for (int i = 0; i < count; i++) {
                int first = named_in("HKV_TEST_FIRST", list[i].name), lone = alone(list[i].name);
                if ((pass == 0 && first && !lone) || (pass == 1 && !first && !lone) ||
                    (pass == 2 && lone))
                    order[k++] = list[i];
            }
        run_parallel(&t, order, k, jobs);
    } else {
        for (int i = 0; i < count; i++) {
            struct outcome o = run_one(&t, list[i].make(), list[i].kind, list[i].name);
            account(&t, list[i].name, (int)getpid(), &o);
        }
    }

    double total = now_s() - t_all;
    log_close(&t.xml, total);
    log_close(&t.text, total);
    if (t.suites == 0) {
        fprintf(stderr, "hkvtest: no suites for '%s' (unit|integration|all)\n", which);
        return 2;
    }
    FILE *why = fopen(t.why, "r");
    if (why != NULL) {
        char line[1024];
        printf("what failed:\n");
        for (int i = 0; i < 40 && fgets(line, sizeof(line), why) != NULL; i++)
            fputs(line, stdout);
        fclose(why);
    }
    unlink(t.why);
    printf("%d suites in %.1f s%s%s\n", t.suites, total, t.bad[0] != '\0' ? "; failed:" : "",
           t.bad);
    printf("%d%%: Checks: %d, Failures: %d, Errors: %d\n",
           percent_passed(t.run, t.failed + t.errors), t.run, t.failed, t.errors);
    return t.failed + t.errors == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
