/*
 * cli/cmd-profiles.c — `ltr profiles`: lists the built-in recording profiles
 * or a .wprp file's, and with --details shows what starting a profile would
 * do on Linux. The reading, inheritance and mapping are in src/profiles; this
 * file parses options and prints.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "prim/prim.h"
#include "profiles/profiles.h"

static const char usage[] =
    "ltr profiles [FILE.wprp] | ltr profiles [FILE.wprp!]Name[.light|.verbose]... --details "
    "[--filemode]\n"
    "       ltr profiles --export [FILE.wprp!]Name OUT.wprp [--force]";

static void print_help(void)
{
    printf("usage: %s\n\n"
           "Lists recording profiles: ltr's built-in ones, or those of a Windows Performance\n"
           "Recorder .wprp file, with their detail levels, logging modes and description.\n\n"
           "  --details    show what starting the profiles would do: collectors and their\n"
           "               buffers, providers with keywords, levels and stacks, and what each\n"
           "               becomes on Linux\n"
           "  --filemode   with --details: the File variants (default: Memory, as ltr start)\n"
           "  --export     write every variant of the profile (Light and Verbose, File and\n"
           "               Memory) to OUT.wprp, with what it inherits resolved and the\n"
           "               collectors and providers it uses, so the file stands alone\n"
           "               (WPR's -exportprofile); an existing OUT.wprp is kept unless --force;\n"
           "               '-' writes it to standard output\n"
           "  --help       this text\n\n"
           "A name without .light or .verbose means Verbose, as in WPR.\n"
           "Built-in profiles are read from %s\n"
           "(LTR_PROFILE_DIR overrides).\n\n"
           "exit status: 0 done (warnings on stderr), 1 an error in a profile, a profile\n"
           "that does not exist, or OUT.wprp not written (it exists, or a write failed),\n"
           "2 bad usage.\n",
           usage, ltr_profiles_builtin_dir());
}

static void print_diags(const ltr_diag_list *l)
{
    char line[2048];
    for (size_t i = 0; i < l->n; i++) {
        ltr_diag_format(&l->v[i], line, sizeof line);
        cli_say("profiles", "%s", line); /* names from the file: shown without control characters */
    }
}

static const char *levels_text(unsigned levels)
{
    return levels == (LTR_PROFILE_LIGHT | LTR_PROFILE_VERBOSE) ? "Light,Verbose"
           : levels == LTR_PROFILE_LIGHT                       ? "Light"
                                                               : "Verbose";
}

static const char *modes_text(unsigned modes)
{
    return modes == (LTR_PROFILE_FILEMODE | LTR_PROFILE_MEMORYMODE) ? "File,Memory"
           : modes == LTR_PROFILE_FILEMODE                          ? "File"
                                                                    : "Memory";
}

/* A profile whose variants are not every level in every mode (a file with
 * Light.File, Verbose.File and Verbose.Memory) says which it has under its
 * row: "Light,Verbose  File,Memory" alone promised a Light.Memory that
 * 'ltr start' then refused. */
static void say_missing_variants(const ltr_profile_info *p)
{
    unsigned all = 0;
    for (int l = LTR_PROFILE_LIGHT; l <= LTR_PROFILE_VERBOSE; l++)
        for (int m = LTR_PROFILE_FILEMODE; m <= LTR_PROFILE_MEMORYMODE; m++)
            if ((p->levels & (unsigned)l) && (p->modes & (unsigned)m))
                all |= LTR_PROFILE_VARIANT(l, m);
    if (p->variants == all)
        return;
    char have[128];
    ltr_profile_variants_text(p->variants, have, sizeof have);
    printf("  %-24s only %s\n", "", have);
}

static int list(const char *file)
{
    ltr_profile_list *l = NULL;
    int rc = ltr_profiles_list(file, NULL, &l);
    if (!l)
        return cli_fail("profiles", "out of memory");
    print_diags(&l->diags);
    if (l->n) {
        printf("%s:\n", file ? file : "Built-in profiles");
        printf("  %-24s %-14s %-12s %s\n", "NAME", "DETAIL LEVELS", "MODES", "DESCRIPTION");
    } else if (rc == 0) {
        printf("%s: no profiles\n", file ? file : "built-in profiles");
    }
    for (size_t i = 0; i < l->n; i++) { /* a file from the web names them: shown without control characters */
        char name[512], desc[2048];
        const char *d = l->v[i].description ? l->v[i].description : "";
        name[ltr_shown_text(l->v[i].name, strnlen(l->v[i].name, sizeof name - 1), name, false)] = 0;
        desc[ltr_shown_text(d, strnlen(d, sizeof desc - 1), desc, false)] = 0;
        printf("  %-24s %-14s %-12s %s\n", name, levels_text(l->v[i].levels), modes_text(l->v[i].modes), desc);
        say_missing_variants(&l->v[i]);
    }
    ltr_profile_list_free(l);
    return rc ? 1 : 0;
}

static int details(char **specs, int n, bool filemode)
{
    ltr_profile_request req = {(const char *const *)specs, (size_t)n, filemode, NULL};
    ltr_plan *p = NULL;
    int rc = ltr_profiles_describe(&req, &p);
    if (!p)
        return cli_fail("profiles", "out of memory");
    print_diags(&p->diags);
    if (rc == 0) { /* names from a .wprp file: shown without control characters */
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        if (m) {
            ltr_plan_write_text(m, p);
            if (fclose(m) == 0)
                fwrite(text, 1, ltr_shown_text(text, len, text, true), stdout);
            free(text);
        }
    }
    ltr_plan_free(p);
    return rc ? 1 : 0;
}

static int write_text(FILE *f, void *text)
{
    return fputs(text, f) < 0 ? -EIO : 0;
}

static int export(const char *spec, const char *path, bool force)
{
    ltr_diag_list diags = {0};
    char *xml = ltr_profiles_export(spec, NULL, &diags);
    print_diags(&diags);
    ltr_diag_list_free(&diags);
    if (!xml)
        return 1;
    int rc = cli_write_output("profiles", path, force, write_text, xml); /* '-': it was a file named '-' */
    free(xml);
    if (!rc && strcmp(path, "-") != 0)
        printf("profile %s written to %s\n", spec, path);
    return rc;
}

int cmd_profiles(int argc, char **argv)
{
    static const struct option opts[] = {
        {"details", no_argument, NULL, 'd'},
        {"filemode", no_argument, NULL, 'f'},
        {"export", no_argument, NULL, 'e'},
        {"force", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool want_details = false, filemode = false, want_export = false, force = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'd')
            want_details = true;
        else if (c == 'f')
            filemode = true;
        else if (c == 'e')
            want_export = true;
        else if (c == 'F')
            force = true;
        else if (c == 'h')
            return print_help(), 0;
        else
            return cli_usage_error("profiles", usage);
    }
    int npos = argc - optind;
    if (want_export && (want_details || filemode))
        return cli_fail("profiles", "--export writes every variant: it takes neither --details nor --filemode"), 2;
    if (force && !want_export)
        return cli_fail("profiles", "--force only applies with --export"), 2;
    if (want_export) {
        if (npos != 2)
            return cli_fail("profiles", "--export needs a profile and a file: --export [FILE.wprp!]Name OUT.wprp"), 2;
        return export(argv[optind], argv[optind + 1], force);
    }
    if (!want_details && filemode)
        return cli_fail("profiles", "--filemode only applies with --details");
    if (want_details) {
        if (npos < 1)
            return cli_fail("profiles", "--details needs a profile: [FILE.wprp!]Name[.light|.verbose]");
        return details(argv + optind, npos, filemode);
    }
    if (npos > 1)
        return cli_usage_error("profiles", usage);
    if (npos == 1 && strchr(argv[optind], '!'))
        return cli_fail("profiles", "'%s' names a profile; add --details to see what it starts",
                        argv[optind]);
    return list(npos ? argv[optind] : NULL);
}
