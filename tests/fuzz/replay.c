/* The committed fuzz corpora replayed as regression inputs in every build (make test), without libFuzzer: this
 * main() calls a fuzz target's LLVMFuzzerTestOneInput on each file of the folders or files named (a target aborts on
 * a failed check, so a regression fails the test, naming the input).
 *   replay_NAME PATH...   (a folder: every regular file in it) */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_current[4200]; /* the input being replayed: a target's abort() names it */

static void on_fatal(int sig) {
    static const char pre[] = "replay: this input failed: ";
    ssize_t r = write(2, pre, sizeof pre - 1);
    r = write(2, g_current, strlen(g_current));
    r = write(2, "\n", 1);
    (void)r;
    signal(sig, SIG_DFL);
    raise(sig);
}

static int one(const char *path) {
    snprintf(g_current, sizeof g_current, "%s", path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 0;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            uint8_t *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    fclose(f);
    if (!buf) return 0;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 1;
}

int main(int argc, char **argv) {
    signal(SIGABRT, on_fatal);
    signal(SIGSEGV, on_fatal);
    signal(SIGBUS, on_fatal);
    int done = 0, wanted = 0;
    for (int a = 1; a < argc; a++) {
        struct stat sb;
        if (stat(argv[a], &sb) != 0) {
            fprintf(stderr, "replay: %s: missing\n", argv[a]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            wanted++, done += one(argv[a]);
            continue;
        }
        DIR *d = opendir(argv[a]);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[a], e->d_name);
            if (e->d_name[0] == '.' || stat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
            wanted++, done += one(p);
        }
        if (d) closedir(d);
    }
    printf("replay: %d of %d inputs replayed\n", done, wanted);
    return done == wanted && done > 0 ? 0 : 1;
}
