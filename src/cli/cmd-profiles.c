/*
 * cli/cmd-profiles.c — `ltr profiles`: lists the built-in recording profiles
 * or a .wprp file's, and with --details shows what starting a profile would
 * do on Linux. The reading, inheritance and mapping are in src/profiles; this
 * file parses options and prints.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "profiles/profiles.h"

static const char usage[] =
    "ltr profiles [FILE.wprp] | ltr profiles [FILE.wprp!]Name[.light|.verbose]... --details "
    "[--filemode]";

static void print_help(void)
{
    printf("usage: %s\n\n"
           "Lists recording profiles: ltr's built-in ones, or those of a Windows Performance\n"
           "Recorder .wprp file, with their detail levels, logging modes and description.\n\n"
           "  --details    show what starting the profiles would do: collectors and their\n"
           "               buffers, providers with keywords, levels and stacks, and what each\n"
           "               becomes on Linux\n"
           "  --filemode   with --details: the File variants (default: Memory, as ltr start)\n"
           "  --help       this text\n\n"
           "A name without .light or .verbose means Verbose, as in WPR.\n"
           "Built-in profiles are read from %s\n"
           "(LTR_PROFILE_DIR overrides).\n\n"
           "exit status: 0 done (warnings on stderr), 1 an error in a profile or a\n"
           "profile that does not exist, 2 bad usage.\n",
           usage, ltr_profiles_builtin_dir());
}

static void print_diags(const ltr_diag_list *l)
{
    char line[2048];
    for (size_t i = 0; i < l->n; i++) {
        ltr_diag_format(&l->v[i], line, sizeof line);
        fprintf(stderr, "ltr profiles: %s\n", line);
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
    for (size_t i = 0; i < l->n; i++)
        printf("  %-24s %-14s %-12s %s\n", l->v[i].name, levels_text(l->v[i].levels),
               modes_text(l->v[i].modes), l->v[i].description ? l->v[i].description : "");
    ltr_profile_list_free(l);
    return rc ? 1 : 0;
}

static const char *kind_text(ltr_collector_kind k)
{
    return k == LTR_COLLECTOR_SYSTEM ? "system" : k == LTR_COLLECTOR_EVENT ? "event" : "heap";
}

static void print_collectors(const ltr_plan *p)
{
    printf("Collectors:\n");
    for (size_t i = 0; i < p->ncollectors; i++) {
        const ltr_plan_collector *c = &p->collectors[i];
        printf("  %s (%s collector): buffers of %" PRIu32 " KB, %" PRIu32 "%s\n", c->name,
               kind_text(c->kind), c->buffer_size_kb, c->buffers,
               c->buffers_percent ? "% of total memory" : " of them");
    }
}

static void print_system(const ltr_plan *p)
{
    if (!p->nsyskw)
        return;
    printf("System keywords:\n");
    for (size_t i = 0; i < p->nsyskw; i++) {
        const ltr_plan_syskw *k = &p->syskw[i];
        if (k->linux_part)
            printf("  %-22s -> %s%s\n", k->name, k->linux_part,
                   k->available ? "" : " (not yet available in ltr)");
        else
            printf("  %-22s -> nothing on Linux (skipped)\n", k->name);
    }
    if (p->system_interval_ms)
        printf("Memory counters every %u ms (MemoryInfoInterval)\n", p->system_interval_ms);
    if (p->nsysstacks) {
        printf("System stacks:");
        for (size_t i = 0; i < p->nsysstacks; i++)
            printf("%s %s", i ? "," : "", p->sysstacks[i]);
        printf("\n");
    }
}

static void print_providers(const ltr_plan *p)
{
    if (!p->nproviders)
        return;
    printf("Providers:\n");
    for (size_t i = 0; i < p->nproviders; i++) {
        const ltr_plan_provider *v = &p->providers[i];
        char guid[37];
        ltr_guid_format(&v->guid, guid);
        printf("  %s\n    keywords 0x%" PRIx64 ", level %u, stacks %s", v->name, v->keywords,
               (unsigned)v->level, v->stacks ? "yes" : "no");
        if (v->capture_state_on_save)
            printf(", capture state on save 0x%" PRIx64, v->capture_state_on_save);
        printf("\n    -> ltr provider {%s}%s in collector '%s'\n", guid,
               v->guid_given ? "" : " (GUID derived from the name)",
               p->collectors[v->collector].name);
    }
}

static void print_heap(const ltr_plan *p)
{
    const ltr_plan_heap *h = &p->heap;
    if (!h->enabled && !h->snapshot)
        return;
    printf("Heap:\n");
    if (h->enabled) {
        printf("  heap tracing in collector '%s' of ", p->collectors[h->collector].name);
        if (!h->npids && !h->nprocess_names)
            printf("the processes set up with 'ltr heaptracingconfig' or launched with 'ltr run'");
        for (size_t i = 0; i < h->npids; i++)
            printf("%spid %" PRIu32, i ? ", " : "", h->pids[i]);
        for (size_t i = 0; i < h->nprocess_names; i++)
            printf("%s%s", i || h->npids ? ", " : "", h->process_names[i]);
        printf("\n");
    }
    if (h->snapshot)
        printf("  heap snapshots of the processes set up with 'ltr snapshotconfig'\n");
}

static void print_skipped(const ltr_plan *p)
{
    if (!p->nskipped)
        return;
    printf("Skipped (no meaning on Linux):\n");
    for (size_t i = 0; i < p->nskipped; i++)
        printf("  %s: %s\n", p->skipped[i].what, p->skipped[i].reason);
}

static int details(char **specs, int n, bool filemode)
{
    ltr_profile_request req = {(const char *const *)specs, (size_t)n, filemode, NULL};
    ltr_plan *p = NULL;
    int rc = ltr_profiles_describe(&req, &p);
    if (!p)
        return cli_fail("profiles", "out of memory");
    print_diags(&p->diags);
    if (rc == 0) {
        for (size_t i = 0; i < p->nprofiles; i++) {
            char have[128];
            ltr_profile_variants_text(p->variants[i], have, sizeof have);
            printf("Profile: %s\n  variants of its name: %s\n", p->profiles[i], have);
        }
        printf("Logging mode: %s%s\n", p->mode == LTR_PLAN_FILE ? "file" : "memory",
               p->strict ? " (strict)" : "");
        print_collectors(p);
        print_system(p);
        print_providers(p);
        print_heap(p);
        print_skipped(p);
    }
    ltr_plan_free(p);
    return rc ? 1 : 0;
}

int cmd_profiles(int argc, char **argv)
{
    static const struct option opts[] = {
        {"details", no_argument, NULL, 'd'},
        {"filemode", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool want_details = false, filemode = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'd')
            want_details = true;
        else if (c == 'f')
            filemode = true;
        else if (c == 'h')
            return print_help(), 0;
        else
            return cli_usage_error("profiles", usage);
    }
    int npos = argc - optind;
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
