/*
 * cli/cmd-providers.c — `ltr providers [--session NAME] [--details
 * NAME|GUID]` (WPR's -providers): the providers this user's programs and
 * sessions have named, the sessions that enable each, and with --details the
 * events and fields a provider's programs registered in those sessions. The
 * registry and the recorders answer (recorder/providers.h); this file prints.
 */
#include "cli/cli.h"
#include "recorder/client.h"
#include "recorder/providers.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USAGE "ltr providers [--session NAME] [--details NAME|GUID]"

static void help(void)
{
    printf("usage: " USAGE "\n\n"
           "Lists the providers this user's programs and sessions have named (a program\n"
           "names its provider when it first writes or checks an event; a session when it\n"
           "enables one), each with its GUID and the running sessions that enable it, at\n"
           "what level and keywords. The list is this user's registry: a provider stays in\n"
           "it after its programs exit.\n\n"
           "  --session NAME        only the providers that session enables\n"
           "  --details NAME|GUID   one provider: the sessions that enable it and, from each,\n"
           "                        the events and fields its programs registered there (as\n"
           "                        the layouts in use say: an event never written yet in a\n"
           "                        session is not known there)\n"
           "  -h, --help            this text\n\n"
           "exit status: 0 done; 1 the registry could not be read, no provider of that\n"
           "name or GUID, or no session of that name; 2 bad usage.\n");
}

static void keywords(const ltr_provider_enable *e, char *out, size_t size)
{
    if (!e->any && !e->all)
        snprintf(out, size, "any");
    else if (!e->all)
        snprintf(out, size, "0x%" PRIx64, e->any);
    else
        snprintf(out, size, "0x%" PRIx64 " (all of 0x%" PRIx64 ")", e->any, e->all);
}

static bool enabled_in(const ltr_provider_info *p, const char *session)
{
    for (unsigned i = 0; i < p->nenabled; i++)
        if (!strcmp(p->enabled[i].session, session))
            return true;
    return false;
}

static void print_enables(const ltr_provider_info *p)
{
    if (!p->nenabled)
        printf(" -");
    for (unsigned i = 0; i < p->nenabled; i++) {
        char kw[64];
        keywords(&p->enabled[i], kw, sizeof kw);
        printf("%s %s (level %u, keywords %s)", i ? "," : "", p->enabled[i].session, p->enabled[i].level, kw);
    }
    printf("\n");
}

static int list(const ltr_provider_info *v, int n, const char *session)
{
    int shown = 0;
    printf("%-32s %-36s  %s\n", "PROVIDER", "GUID", "ENABLED BY");
    for (int i = 0; i < n; i++) {
        if (session && !enabled_in(&v[i], session))
            continue;
        char guid[37];
        ltr_guid_format(&v[i].guid, guid);
        printf("%-32s %-36s ", v[i].name[0] ? v[i].name : "(no name)", guid);
        print_enables(&v[i]);
        shown++;
    }
    if (!shown)
        printf("(none%s%s)\n", session ? " enabled by session " : "", session ? session : "");
    return 0;
}

static int details(const ltr_provider_info *p, const char *session)
{
    char guid[37];
    ltr_guid_format(&p->guid, guid);
    printf("provider %s {%s}\nenabled by:", p->name, guid);
    print_enables(p);
    int rc = 0;
    for (unsigned i = 0; i < p->nenabled; i++) {
        if (session && strcmp(session, p->enabled[i].session))
            continue;
        char *text = NULL;
        ltr_error err;
        if (ltr_client_layouts(p->enabled[i].session, &p->guid, &text, &err)) {
            cli_warn("providers", "session '%s': %s", p->enabled[i].session, err.msg);
            rc = 1;
            continue;
        }
        printf("\nevents registered in session '%s':\n", p->enabled[i].session);
        if (!text[0])
            printf("  (none yet: its programs have written no event in this session)\n");
        for (char *line = text, *nl; *line; line = nl ? nl + 1 : line + strlen(line)) {
            nl = strchr(line, '\n');
            printf("  %.*s\n", (int)(nl ? nl - line : (long)strlen(line)), line);
        }
        free(text);
    }
    if (!p->nenabled)
        printf("\nno running session enables it: its events are known to a session once its programs\n"
               "write them there\n");
    return rc;
}

int cmd_providers(int argc, char **argv)
{
    static const struct option opts[] = {{"session", required_argument, 0, 's'},
                                         {"details", required_argument, 0, 'd'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *session = NULL, *which = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's': session = optarg; break;
        case 'd': which = optarg; break;
        case 'h': help(); return 0;
        default: return cli_usage_error("providers", USAGE);
        }
    }
    if (optind < argc)
        return cli_usage_error("providers", USAGE);
    ltr_error err;
    if (session) {
        char names[64][64];
        int ns = ltr_client_sessions(names, 64, &err), found = 0;
        for (int i = 0; i < ns && !found; i++)
            found = !strcmp(names[i], session);
        if (!found)
            return cli_fail("providers", "no session named '%s' is running ('ltr status' lists them)", session);
    }
    /* 2.9 MB: on the heap, not in the program's .bss, which LeakSanitizer
     * reads whole at every exit of an ASan build's ltr (a page fault a page,
     * 11 to 15 us on the PVM guest, whatever the command) */
    ltr_provider_info *v = calloc(LTR_MAX_PROVIDERS, sizeof *v);
    if (!v)
        return cli_fail("providers", "out of memory");
    int n = ltr_providers_list(v, LTR_MAX_PROVIDERS, &err), rc;
    const ltr_provider_info *p = n < 0 || !which ? NULL : ltr_providers_find(v, n, which);
    if (n < 0)
        rc = cli_fail("providers", "%s", err.msg);
    else if (!which)
        rc = list(v, n, session);
    else if (!p)
        rc = cli_fail("providers", "no provider named or with the GUID '%s' is known ('ltr providers' lists "
                      "them)", which);
    else
        rc = details(p, session);
    free(v);
    return rc;
}
