/* The pairwise coverage report of a run (docs/coverage.md): which pairs of option-matrix values (matrix.h) the run's
 * generated cases exercised, against the pairs validation allows. Printed by `flashref suite`, written into the JSON
 * ("coverage") and the HTML report.
 *
 *   fr_coverage_report cr;  fr_coverage_report_of(r, &cr, &err);  ... cr.covered / cr.allowed ...
 *   fr_coverage_report_free(&cr);
 */
#ifndef FR_VERIFY_COVERAGE_H
#define FR_VERIFY_COVERAGE_H

#include <stdio.h>

#include "verify/suite/suite.h"

typedef struct fr_coverage_report {
    fr_coverage cv;
    uint8_t *allowed_map; /* [fr_coverage_npairs()] */
    int cases;            /* generated cases counted (regression directories carry no cell) */
    int allowed, covered; /* allowed pairs; allowed pairs with a hit */
    int outside;          /* pairs hit that the draws did not find allowed (a validated case shows them) */
} fr_coverage_report;

/* The coverage of r's generated cases; or, with r NULL, of the coverage cv already filled (cv is then taken over). */
fr_status fr_coverage_report_of(const fr_suite_result *r, fr_coverage_report *cr, fr_error *err);
fr_status fr_coverage_report_from(fr_coverage *cv, int cases, fr_coverage_report *cr, fr_error *err);
void fr_coverage_report_free(fr_coverage_report *cr);

/* One line: "coverage: 2486/2486 allowed pairs of axis values (19 axes) in 180 generated cases". */
void fr_coverage_print_line(FILE *f, const fr_coverage_report *cr);
/* The table: one row per pair of axes (covered / allowed), then every uncovered allowed pair (at most max_list). */
void fr_coverage_print_table(FILE *f, const fr_coverage_report *cr, int max_list);
/* An HTML section (h2, table, list of gaps). */
void fr_coverage_html(FILE *f, const fr_coverage_report *cr);
/* A cJSON object (returned as void * to keep cJSON out of this header): axes, counts, per axis pair, gaps. */
void *fr_coverage_json(const fr_coverage_report *cr);

#endif
