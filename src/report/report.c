/*
 * report/report.c — writes the page of `ltr report` (report.h): a template
 * of a few lines around four pieces: the styles (uPlot's, d3-flame-graph's,
 * report.css), the data as two JSON scripts (the analyzer's JSON report, the
 * stacks' frames as the text report shows them, and its Chrome trace
 * events), the libraries, and report.js, which draws the page from the data.
 * The analysis reduces the data before it reaches the page: the top stacks
 * per process, at most AN_PAGE_STACKS of each ranking in all, and at most
 * 2048 points per process over time, whatever the trace's size.
 */
#include "report/report.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct ltr_report_asset {
    const char *name;
    const unsigned char *data;
    size_t size;
};
extern const struct ltr_report_asset ltr_report_assets[]; /* assets.c, made by embed.cmake */

void ltr_report_opts(ltr_analyze_opts *o)
{
    o->series = 1;       /* outstanding bytes over time, markers */
    o->full_stacks = 0;  /* the page's frames are the text report's */
    o->page_frames = 1;
    o->trend = 2;        /* with periodic heap snapshots: each stack's verdict (leak, plateau, noise); */
                         /* none asked of a trace without them (every page said it had none) */
}

static const struct ltr_report_asset *asset(const char *name)
{
    for (const struct ltr_report_asset *a = ltr_report_assets; a->name; a++)
        if (!strcmp(a->name, name))
            return a;
    return NULL;
}

static void put_asset(FILE *out, const char *name)
{
    const struct ltr_report_asset *a = asset(name);
    if (a)
        fwrite(a->data, 1, a->size, out);
}

/* One of the analyzer's outputs as a JSON script element: every '<' written
 * "\u003c" (the same string to JSON: a '<' is only ever inside a string), so
 * that no name can end the script ("</script") nor put the HTML parser in
 * its escaped script states ("<!--<script" would make the element run on
 * over the next ones, and the page show nothing). */
static int data_script(ltr_analysis *a, FILE *out, const char *id, ltr_report_format fmt, unsigned top)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return -ENOMEM;
    int rc = ltr_analysis_write(a, m, fmt, top);
    fclose(m);
    if (rc == 0) {
        fprintf(out, "<script type=\"application/json\" id=\"%s\">", id);
        /* a run at a time between the '<' escaped: a byte at a time was
         * half of the report's time (a review, 1762 processes) */
        for (size_t i = 0; i < len;) {
            const char *lt = memchr(buf + i, '<', len - i);
            size_t run = lt ? (size_t)(lt - (buf + i)) : len - i;
            fwrite(buf + i, 1, run, out);
            i += run;
            if (lt) {
                fputs("\\u003c", out);
                i++;
            }
        }
        fputs("</script>\n", out);
    }
    free(buf);
    return rc;
}

int ltr_report_write(ltr_analysis *a, FILE *out, unsigned top, ltr_error *err)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width\">\n"
          /* nothing is fetched, whatever a traced program named its functions */
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
          "<title>ltr report</title>\n<style>\n",
          out);
    put_asset(out, "uPlot.min.css");
    put_asset(out, "d3-flamegraph.css");
    put_asset(out, "report.css");
    fputs("</style>\n</head><body>\n"
          "<header><h1>ltr report</h1><div id=\"trace\"></div><div id=\"warnings\"></div></header>\n"
          "<section><h2>Memory over time</h2><div id=\"timeline\"></div>"
          "<div id=\"range\">Drag across the chart to see the stacks of that time range.</div></section>\n"
          "<section><h2>Stacks holding memory</h2><table id=\"stacks\"></table></section>\n"
          "<section><h2>Flame graph</h2><div id=\"flame-controls\"></div><div id=\"flame\"></div></section>\n"
          "<section id=\"snapshots-section\"><h2>Heap snapshots</h2><div id=\"snapshots\"></div></section>\n"
          "<pre id=\"selfcheck\" hidden></pre>\n",
          out);
    int rc = data_script(a, out, "analysis", LTR_REPORT_JSON, top);
    if (rc == 0)
        rc = data_script(a, out, "timeline-data", LTR_REPORT_CHROME, 0);
    if (rc)
        return ltr_fail(err, -rc, "the report's data could not be written: %s", strerror(-rc));
    static const char *const scripts[] = {"d3.min.js", "d3-flamegraph.umd.min.js", "uPlot.iife.min.js", "report.js"};
    for (size_t i = 0; i < sizeof scripts / sizeof *scripts; i++) {
        fputs("<script>\n", out);
        put_asset(out, scripts[i]);
        fputs("\n</script>\n", out);
    }
    fputs("</body></html>\n", out);
    if (fflush(out) != 0 || ferror(out))
        return ltr_fail(err, EIO, "writing the page failed: %s", strerror(errno));
    return 0;
}
