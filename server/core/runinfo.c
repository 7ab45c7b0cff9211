/* runinfo.c - the run id and config path of INFO server; see runinfo.h. */
#include "server/core/runinfo.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static char run_id[41];
static char config_file[PATH_MAX];

void runinfo_init(const char *config_path)
{
    unsigned char r[20];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        /* no entropy source: the start time and pid still tell runs apart */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned long long x = (unsigned long long)ts.tv_sec * 1000000007ULL ^
                               (unsigned long long)ts.tv_nsec ^ ((unsigned long long)getpid() << 40);
        for (size_t i = 0; i < sizeof(r); i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            r[i] = (unsigned char)(x >> 56);
        }
    }
    for (size_t i = 0; i < sizeof(r); i++)
        snprintf(run_id + 2 * i, 3, "%02x", r[i]);
    config_file[0] = '\0';
    if (config_path != NULL && realpath(config_path, config_file) == NULL)
        config_file[0] = '\0';
}

const char *runinfo_run_id(void)
{
    return run_id;
}

const char *runinfo_config_file(void)
{
    return config_file;
}
