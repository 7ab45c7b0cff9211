/*
 * runner.c - the one Check runner.  The Makefile generates suites.h from the
 * test file names; `hkvtest unit` runs tests/unit, `hkvtest integration` runs
 * tests/integration and tests/fault, `hkvtest all` runs everything.  Fork mode
 * stays on (a crash fails one test); CK_FORK=no is for valgrind only.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "all";
    SRunner *sr = NULL;

#define SUITE(kind, name)                                   \
    if (wanted(#kind, which)) {                             \
        if (sr == NULL)                                     \
            sr = srunner_create(name##_suite());            \
        else                                                \
            srunner_add_suite(sr, name##_suite());          \
    }
#include "suites.h"
#undef SUITE

    if (sr == NULL) {
        fprintf(stderr, "hkvtest: no suites for '%s' (unit|integration|all)\n", which);
        return 2;
    }
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
