/* The text escapers of the reports (text.h), below both the suite report (report.c) and the coverage report
 * (coverage.c). */
#include "verify/report/text.h"

#include "verify/iut/iut_proc.h"

#include <stdlib.h>
#include <string.h>

char *fr_report_json_utf8(char *txt) {
    size_t n = strlen(txt);
    char *tmp = malloc(4 * n + 1);
    if (!tmp) { /* NULL, never the text unchecked: the caller reports out of memory */
        free(txt);
        return NULL;
    }
    fr_utf8_sanitize(txt, n, tmp, 4 * n + 1);
    if (!strcmp(tmp, txt)) {
        free(tmp);
        return txt;
    }
    /* fr_utf8_sanitize wrote \xNN for invalid bytes (control characters are already escaped by cJSON); a JSON
     * string needs the backslash itself escaped. */
    char *out = malloc(5 * n + 1);
    if (!out) {
        free(tmp);
        free(txt);
        return NULL;
    }
    size_t k = 0, i = 0, j = 0;
    while (txt[i]) {
        if (!strncmp(tmp + j, "\\x", 2) && strncmp(txt + i, "\\x", 2) != 0) {
            out[k++] = '\\';
            memcpy(out + k, tmp + j, 4);
            k += 4;
            j += 4;
            i += 1;
        } else {
            out[k++] = txt[i++];
            j++;
        }
    }
    out[k] = '\0';
    free(tmp);
    free(txt);
    return out;
}

void fr_report_html_text(FILE *f, const char *raw) {
    size_t n = strlen(raw);
    char small[1024], *buf = 4 * n + 1 <= sizeof small ? small : malloc(4 * n + 1);
    if (!buf) return;
    fr_utf8_sanitize(raw, n, buf, 4 * n + 1);
    const char *s = buf;
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
    if (buf != small) free(buf);
}
