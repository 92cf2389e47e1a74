/* What the commands of the flashref tool share (cli.h): the help flags and the rank of this process. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
    return 0;
}

#ifdef FR_HAVE_MPI
static fr_dist g_dist = {0, 1, 0};
fr_dist *cli_dist_state(void) { return &g_dist; }
int cli_rank(void) { return g_dist.rank; }
int cli_size(void) { return g_dist.size; }
const fr_dist *cli_dist(void) { return &g_dist; }
void cli_dist_stats(const char *what, int64_t bytes) {
    const char *v = getenv("FLASHREF_DIST_STATS");
    if (v && !strcmp(v, "1"))
        fprintf(stderr, "flashref %s: dist: rank %d of %d wrote %lld bytes\n", what, g_dist.rank, g_dist.size,
                (long long)bytes);
}
void cli_dist_read_stats(const char *what, int64_t read, int64_t total) {
    const char *v = getenv("FLASHREF_DIST_STATS");
    if (v && !strcmp(v, "1"))
        fprintf(stderr, "flashref %s: dist: rank %d of %d read %lld of %lld query bytes\n", what, g_dist.rank,
                g_dist.size, (long long)read, (long long)total);
}
#else
int cli_rank(void) { return 0; }
int cli_size(void) { return 1; }
#endif
