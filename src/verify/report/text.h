/* The text escapers of the reports: what an implementation or a user wrote (case names, runner messages, the --impl
 * spec) made safe for the JSON and the HTML the reports write. Shared by the suite report (report.c) and the coverage
 * report (coverage.c), below both. */
#ifndef FR_VERIFY_REPORT_TEXT_H
#define FR_VERIFY_REPORT_TEXT_H

#include <stdio.h>

/* Writes s as HTML text: < > & " escaped, an invalid UTF-8 byte or a control character as the text \xNN
 * (fr_utf8_sanitize). */
void fr_report_html_text(FILE *f, const char *s);

/* cJSON copies bytes >= 0x80 through unchecked: a runner's stderr or a directory name may not be UTF-8. Every
 * invalid byte (they can only be inside strings) becomes the text \xNN, written as "\\xNN" in JSON. Returns a new
 * malloc'd text (or txt itself when it was valid; txt is freed when a new one is returned); NULL (txt freed) when
 * out of memory. */
char *fr_report_json_utf8(char *txt);

#endif
