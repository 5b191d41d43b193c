/*
 * tests/profiles/helpers.c — shared helpers of the profile tests (see .h).
 */
#include "profiles/helpers.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static char dir[256];

static void remove_dir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

const char *tmp_dir(void)
{
    if (!*dir) {
        snprintf(dir, sizeof dir, "/tmp/ltr-profiles-test-XXXXXX");
        if (!mkdtemp(dir))
            abort();
        atexit(remove_dir);
    }
    return dir;
}

const char *write_file(const char *name, const char *text)
{
    static char paths[8][512];
    static int slot;
    char *p = paths[slot++ % 8];
    snprintf(p, 512, "%s/%s", tmp_dir(), name);
    FILE *f = fopen(p, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
    return p;
}

const char *write_wprp(const char *name, const char *body)
{
    char *text = NULL;
    if (asprintf(&text,
                 "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
                 "<WindowsPerformanceRecorder Version=\"1.0\">\n<Profiles>\n%s\n</Profiles>\n"
                 "</WindowsPerformanceRecorder>\n",
                 body) < 0)
        abort();
    const char *p = write_file(name, text);
    free(text);
    return p;
}

const char *builtin_dir(void)
{
    static char p[512];
    const char *src = getenv("LTR_SOURCE_DIR");
    snprintf(p, sizeof p, "%s/profiles", src ? src : ".");
    return p;
}

const char *wprp_dir(void)
{
    static char p[512];
    const char *src = getenv("LTR_SOURCE_DIR");
    snprintf(p, sizeof p, "%s/tests/profiles/wprp", src ? src : ".");
    return p;
}

int resolve(ltr_plan **out, bool filemode, ...)
{
    const char *specs[16];
    size_t n = 0;
    va_list ap;
    va_start(ap, filemode);
    for (const char *s; n < 16 && (s = va_arg(ap, const char *));)
        specs[n++] = s;
    va_end(ap);
    ltr_profile_request req = {specs, n, filemode, builtin_dir()};
    return ltr_profiles_resolve(&req, out);
}

const ltr_diag *find_diag(const ltr_diag_list *l, ltr_diag_severity sev, const char *text)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].severity == sev && strstr(l->v[i].msg, text))
            return &l->v[i];
    return NULL;
}

void dump_diags(const ltr_diag_list *l)
{
    char line[2048];
    for (size_t i = 0; i < l->n; i++) {
        ltr_diag_format(&l->v[i], line, sizeof line);
        fprintf(stderr, "  %s\n", line);
    }
}

const ltr_plan_provider *find_provider(const ltr_plan *p, const char *guid)
{
    for (size_t i = 0; i < p->nproviders; i++) {
        char g[37];
        ltr_guid_format(&p->providers[i].guid, g);
        if (strcasecmp(g, guid) == 0)
            return &p->providers[i];
    }
    return NULL;
}

const ltr_plan_collector *find_collector(const ltr_plan *p, const char *name)
{
    for (size_t i = 0; i < p->ncollectors; i++)
        if (strcmp(p->collectors[i].name, name) == 0)
            return &p->collectors[i];
    return NULL;
}

const ltr_plan_syskw *find_syskw(const ltr_plan *p, const char *name)
{
    for (size_t i = 0; i < p->nsyskw; i++)
        if (strcasecmp(p->syskw[i].name, name) == 0)
            return &p->syskw[i];
    return NULL;
}
