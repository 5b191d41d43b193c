/*
 * report/report.h — `ltr report`: the analysis as one self-contained HTML
 * page (docs/report.md). The page carries its data (the analyzer's JSON
 * report and its Chrome trace events: outstanding bytes over time, memory
 * counters, markers, snapshots) and its code (uPlot, d3, d3-flame-graph,
 * report.js), so it opens with no network and no file beside it.
 */
#ifndef LTR_REPORT_REPORT_H
#define LTR_REPORT_REPORT_H

#include <ltr/common.h>

#include <stdio.h>

#include "analyze/analyze.h"

/* The options an analysis for the page needs (a series over time, the
 * page's frames): set them on o before ltr_analysis_run. */
void ltr_report_opts(ltr_analyze_opts *o);
/* Writes the page of a, run with ltr_report_opts, to out. The stacks: the
 * top per process of each ranking (top, 0: all). 0, or -errno with err. */
int ltr_report_write(ltr_analysis *a, FILE *out, unsigned top, ltr_error *err);

#endif
