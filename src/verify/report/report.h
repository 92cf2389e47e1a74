/* Suite results for people and machines: the closing summary table, --json FILE (every number), --report FILE.html
 * (one self-contained page: summary, failing cases, heat map, row-gain histogram, error vs sequence length) and the
 * run history (JSON lines: what changed since the last run of the same implementation and set). */
#ifndef FR_VERIFY_REPORT_H
#define FR_VERIFY_REPORT_H

#include <stdio.h>

#include "verify/suite/suite.h"

typedef struct fr_report_meta {
    const char *impl; /* IUT spec */
    const char *set;  /* set name, or "verify" */
    uint64_t seed;
    const fr_judge_opts *judge;
} fr_report_meta;

/* The closing summary table (categories: passed/total, warn, fail, skip) and the conclusion line. */
void fr_report_summary(FILE *f, const fr_suite_result *r, const fr_report_meta *m);
/* One line for a case: "FAIL  name  [category]  diagnosis: why". */
void fr_report_case_line(FILE *f, const fr_case_result *c);
/* One case's record of the JSON result (cJSON object; the caller owns it). */
struct cJSON *fr_report_case_json(const fr_case_result *c);
/* The thresholds in force, one line each. */
void fr_report_thresholds(FILE *f, const fr_judge_opts *o);

fr_status fr_report_json(const char *path, const fr_suite_result *r, const fr_report_meta *m, fr_error *err);
fr_status fr_report_html(const char *path, const fr_suite_result *r, const fr_report_meta *m, fr_error *err);

/* History: appends this run to path (JSON lines) after printing to f what changed since the last run with the same
 * impl and set found there (verdict changes per case, new and removed cases). */
fr_status fr_report_history(const char *path, FILE *f, const fr_suite_result *r, const fr_report_meta *m,
                            fr_error *err);

#endif
