/* libFuzzer: the persistent protocol's reader (docs/exec-protocol.md) on what a runner may write to its stdout: the
 * line splitter of fr_proc_poll (fr_proc_feed_lines) and the status-line parser (fr_exec_status_parse,
 * fr_exec_worker_status). The input is the runner's stdout; its first byte picks how the bytes arrive (the pipe's
 * read sizes). Checked on every input:
 * - the lines and what they parse to do not depend on how the bytes were split into reads;
 * - a message is NUL-terminated within its buffer, valid UTF-8, with no control character but tab;
 * - a parsed status line written back ("flashref-status: CODE MESSAGE") parses to the same code and message;
 * - a worker's status is an error status the verifier may pass on (never FR_OK, FR_E_UNSUPPORTED or
 *   FR_E_NOT_AVAILABLE), and the rest of the message lies inside it. */
#include "verify/iut/iut_internal.h"
#include "verify/iut/iut_proc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MSG = 300 };

typedef struct parsed {
    int n;            /* lines seen */
    uint64_t hash;    /* of every line's bytes and what it parsed to */
} parsed;

static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * UINT64_C(1099511628211);
    return h;
}

/* Valid UTF-8 with no control character but tab. */
static int clean_utf8(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        if (*p < 0x20 && *p != '\t') return 0;
        if (*p == 0x7f) return 0;
        int extra = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : -1;
        if (extra < 0) return 0;
        for (int k = 1; k <= extra; k++)
            if ((p[k] & 0xc0) != 0x80) return 0;
        p += extra + 1;
    }
    return 1;
}

static void check_msg(const char *msg) {
    if (!memchr(msg, '\0', MSG) || !clean_utf8(msg)) abort();
}

static bool on_line(void *ud, const char *line, size_t n, bool cut) {
    (void)cut; /* a cut line is parsed as given, as the verifier does */
    parsed *ps = ud;
    if (line[n] != '\0') abort();
    ps->n++;
    ps->hash = mix(ps->hash, line, n + 1);
    long code = 0;
    char msg[MSG];
    memset(msg, 0x55, sizeof msg);
    bool is = fr_exec_status_parse(line, n, &code, msg, sizeof msg);
    ps->hash = mix(ps->hash, &is, sizeof is);
    if (!is) return false;
    check_msg(msg);
    ps->hash = mix(ps->hash, &code, sizeof code);
    ps->hash = mix(ps->hash, msg, strlen(msg));
    if (code == -1 && strncmp(msg, "malformed status line: ", 23) != 0) {
        /* -1 written by the runner itself (-1, -0001 ...) parses as -1 with its message: only then may the prefix be
         * absent */
        const char *p = line + 16;
        while (*p == ' ') p++;
        if (strtol(p, NULL, 10) != -1) abort();
    }
    if (strncmp(msg, "malformed status line: ", 23) != 0 && (!*msg || msg[strlen(msg) - 1] != ' ')) {
        char again[400], msg2[MSG];
        long code2 = 0;
        int w = snprintf(again, sizeof again, "flashref-status: %ld %s", code, msg);
        if (w < 0 || (size_t)w >= sizeof again) abort();
        if (!fr_exec_status_parse(again, (size_t)w, &code2, msg2, sizeof msg2)) abort();
        if (code2 != code || strcmp(msg, msg2) != 0) abort();
    }
    const char *rest = NULL;
    fr_status st = fr_exec_worker_status(msg, &rest);
    if (st == FR_OK || st == FR_E_UNSUPPORTED || st == FR_E_NOT_AVAILABLE || (int)st < 0 || st >= FR_STATUS_COUNT)
        abort();
    if (!rest || rest < msg || rest > msg + strlen(msg)) abort();
    return true;
}

static parsed feed(const uint8_t *data, size_t size, unsigned split) {
    static fr_proc ls; /* only its line buffer is used */
    memset(&ls, 0, sizeof ls);
    parsed ps = {0, UINT64_C(1469598103934665603)};
    size_t at = 0;
    unsigned s = split | 1;
    while (at < size) {
        size_t chunk = split == 0 ? size : 1 + (s % 97);
        s = s * 1103515245u + 12345u;
        if (chunk > size - at) chunk = size - at;
        fr_proc_feed_lines(&ls, (const char *)data + at, chunk, on_line, &ps);
        at += chunk;
    }
    return ps;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    unsigned split = data[0];
    data++, size--;
    parsed whole = feed(data, size, 0), pieces = feed(data, size, split ? split : 1);
    if (whole.n != pieces.n || whole.hash != pieces.hash) abort();
    return 0;
}
