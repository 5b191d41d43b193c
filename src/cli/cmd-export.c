/*
 * cli/cmd-export.c — `ltr export TRACE --format pprof|folded|json|csv -o OUT`:
 * the analysis in a form other tools read (go tool pprof, flamegraph.pl,
 * scripts, spreadsheets). The work is src/analyze's.
 */
#include "cli/analysis-args.h"
#include "cli/cli.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define USAGE                                                                                    \
    "ltr export TRACE --format pprof|folded|json|csv -o OUT [--force] [--from T] [--to T]\n"       \
    "                 [--pid P] [--debug-dir DIRS] [--cpu]"

static void help(void)
{
    printf("usage: " USAGE "\n\n"
           "Writes the heap analysis of TRACE (see 'ltr analyze --help') to OUT:\n"
           "  pprof   gzipped profile.proto for 'go tool pprof', sample types\n"
           "          alloc_objects, alloc_space, inuse_objects, inuse_space\n"
           "  folded  one line per stack, 'process;outer;...;inner BYTES', for flamegraph.pl;\n"
           "          BYTES = outstanding at the window's end\n"
           "  json    the report of 'ltr analyze --format json', every stack\n"
           "  csv     one row per stack, every stack\n"
           "With --cpu, the CPU samples instead (SampledProfile): pprof with one sample\n"
           "type (samples, count), folded 'process;outer;...;inner SAMPLES', or json.\n\n"
           "options: --from T, --to T, --pid P, --debug-dir DIRS as for ltr analyze;\n"
           "  -o, --output OUT  the file to write ('-' = standard output); an existing\n"
           "                    OUT is refused\n"
           "  --force           replace an existing OUT\n\n"
           "exit status: 0 done, 1 the trace could not be read, OUT not written, or the\n"
           "window or --pid is not one of the trace (as for ltr analyze),\n"
           "2 bad usage, 3 the trace is damaged (its intact part was exported).\n");
}

static int write_stdout(ltr_analysis *a, const cli_analysis_args *args)
{
    if (ltr_analysis_write(a, stdout, args->format, 0) < 0)
        return cli_fail("export", "writing to standard output failed");
    return 0;
}

/* OUT is written as a new temporary beside it, then takes its name: never
 * through a symlink, never over a file unless --force (prim/files.c). */
static int write_out(ltr_analysis *a, const cli_analysis_args *args)
{
    if (!strcmp(args->output, "-"))
        return write_stdout(a, args);
    char tmp[4200];
    if (ltr_temp_name(tmp, sizeof tmp, args->output) < 0)
        return cli_fail("export", "%s: path too long", args->output);
    int fd = ltr_create_temp(tmp);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
    if (!f) {
        int e = fd < 0 ? -fd : errno;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return cli_fail("export", "cannot create %s: %s", args->output, strerror(e));
    }
    int rc = ltr_analysis_write(a, f, args->format, 0);
    if (fclose(f) != 0 && rc >= 0)
        rc = -EIO;
    if (rc >= 0)
        rc = ltr_publish(tmp, args->output, args->force);
    if (rc < 0)
        unlink(tmp);
    if (rc == -EEXIST) {
        ltr_error err;
        ltr_fail_exists(&err, args->output);
        return cli_fail("export", "%s", err.msg);
    }
    if (rc < 0)
        return cli_fail("export", "writing %s failed: %s", args->output, strerror(-rc));
    return 0;
}

int cmd_export(int argc, char **argv)
{
    cli_analysis_args args;
    unsigned formats = 1u << LTR_REPORT_PPROF | 1u << LTR_REPORT_FOLDED | 1u << LTR_REPORT_JSON |
                       1u << LTR_REPORT_CSV;
    int rc = cli_analysis_parse("export", argc, argv, USAGE, help, formats, 1, &args);
    if (rc >= 0)
        return rc;
    if (strcmp(args.output, "-") != 0 && cli_refuse_existing("export", args.output, args.force))
        return 1;
    ltr_analysis *a = cli_analysis_run("export", &args);
    if (!a)
        return 1;
    rc = write_out(a, &args);
    if (rc == 0)
        rc = cli_analysis_status("export", a);
    for (size_t i = 0; rc != 1 && i < ltr_analysis_warning_count(a); i++)
        cli_warn("export", "%s", ltr_analysis_warning_at(a, i));
    ltr_analysis_free(a);
    return rc;
}
