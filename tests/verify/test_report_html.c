/* fr_report_html_text, the one HTML text escaper of the suite report and the coverage report: markup characters are
 * escaped, invalid UTF-8 and control bytes become visible \xNN text, valid UTF-8 passes unchanged. */
#include "common/check.h"
#include "verify/report/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s through fr_report_html_text, as a malloc'd string. */
static char *html(const char *s) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    fr_report_html_text(f, s);
    fclose(f);
    return buf;
}

static void expect(const char *in, const char *want) {
    char *got = html(in);
    CHECK(got && !strcmp(got, want), "'%s' -> '%s', want '%s'", in, got ? got : "(null)", want);
    free(got);
}

int main(void) {
    expect("plain text", "plain text");
    expect("<b>a & \"q\"</b>", "&lt;b&gt;a &amp; &quot;q&quot;&lt;/b&gt;");
    expect("mode=5 x \xc3\xa9", "mode=5 x \xc3\xa9");           /* valid UTF-8 (e acute) kept */
    expect("bad \xff byte", "bad \\xFF byte");                  /* invalid UTF-8 */
    expect("bell\a", "bell\\x07");                              /* control character */
    expect("", "");
    return fr_test_exit("test_report_html");
}
