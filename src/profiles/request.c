/*
 * profiles/request.c — the entry points of profiles.h: parsing profile specs,
 * loading the built-in and named files into one catalog, choosing the variant
 * each spec means, and listing a file's profiles.
 */
#include "profiles/profiles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "profiles/catalog.h"
#include "profiles/inherit.h"
#include "profiles/plan.h"

typedef struct spec {
    char *file;   /* NULL: a built-in profile */
    char *name;
    int level;    /* LTR_PROFILE_LIGHT / _VERBOSE, 0 when not given */
} spec;

/* `[FILE.wprp!]Name[.light|.verbose]` */
static int parse_spec(const char *text, spec *s, ltr_diag_list *diags)
{
    memset(s, 0, sizeof *s);
    const char *bang = strrchr(text, '!');
    if (bang) {
        s->file = strndup(text, (size_t)(bang - text));
        text = bang + 1;
    }
    size_t len = strlen(text);
    if (!bang && len > 5 && strcasecmp(text + len - 5, ".wprp") == 0) {
        s->file = prof_strdup(text); /* WPR's `-start FILE.wprp`: its one Name, found once loaded */
        return 0;
    }
    s->name = prof_strdup(text);
    char *dot = strrchr(s->name, '.');
    if (dot && strcasecmp(dot, ".light") == 0)
        s->level = LTR_PROFILE_LIGHT;
    else if (dot && strcasecmp(dot, ".verbose") == 0)
        s->level = LTR_PROFILE_VERBOSE;
    if (s->level)
        *dot = 0;
    if (!*s->name || (s->file && !*s->file)) {
        ltr_diag_add(diags, LTR_DIAG_ERROR, NULL, 0, text,
                     "not a profile: expected [FILE.wprp!]Name[.light|.verbose]");
        return -1;
    }
    return 0;
}

static void spec_free(spec *s)
{
    free(s->file);
    free(s->name);
}

/* DetailLevel and LoggingMode of a resolved profile, with WPR's defaults
 * (Verbose, File). Returns -1, reported, for any other value. */
static int variant_of(wprp_catalog *c, const wprp_node *r, int *level, int *mode)
{
    const char *l = wprp_node_value(r, "DetailLevel"), *m = wprp_node_value(r, "LoggingMode");
    *level = !l || strcasecmp(l, "Verbose") == 0 ? LTR_PROFILE_VERBOSE
             : strcasecmp(l, "Light") == 0       ? LTR_PROFILE_LIGHT
                                                 : 0;
    *mode = !m || strcasecmp(m, "File") == 0 ? LTR_PROFILE_FILEMODE
            : strcasecmp(m, "Memory") == 0   ? LTR_PROFILE_MEMORYMODE
                                             : 0;
    if (!*level)
        ltr_diag_add(c->diags, LTR_DIAG_ERROR, r->file, r->line, r->id,
                     "DetailLevel=\"%s\": expected Light or Verbose", l);
    if (!*mode)
        ltr_diag_add(c->diags, LTR_DIAG_ERROR, r->file, r->line, r->id,
                     "LoggingMode=\"%s\": expected File or Memory", m);
    return *level && *mode ? 0 : -1;
}

/* Profiles the spec can mean: those of its file, or the listed built-ins. */
static bool in_scope(const wprp_node *n, const char *file)
{
    if (n->kind != WPRP_PROFILE)
        return false;
    return file ? strcmp(n->file, file) == 0 : n->builtin;
}

typedef struct match {
    wprp_node *v[4]; /* [level-1][mode-1]: Light/Verbose x File/Memory */
    unsigned variants; /* LTR_PROFILE_VARIANT of each found */
    bool broken;       /* a profile of that Name whose inheritance failed (reported) */
} match;

static void find_variants(wprp_catalog *c, const char *file, const char *name, match *m)
{
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < c->n; i++) {
        wprp_node *n = c->nodes[i];
        const char *own = wprp_node_value(n, "Name");
        if (!in_scope(n, file) || (own && strcasecmp(own, name) != 0))
            continue; /* resolving only candidates keeps unrelated faults quiet */
        const wprp_node *r = wprp_resolve(c, n);
        if (!r && own)
            m->broken = true;
        const char *rn = r ? wprp_node_value(r, "Name") : NULL;
        int level, mode;
        if (!rn || strcasecmp(rn, name) != 0 || variant_of(c, r, &level, &mode) != 0)
            continue;
        m->v[(level - 1) * 2 + (mode - 1)] = n; /* a later definition wins */
        m->variants |= LTR_PROFILE_VARIANT(level, mode);
    }
}

unsigned prof_find_variants(wprp_catalog *c, const char *file, const char *name, wprp_node *v[4])
{
    match m;
    find_variants(c, file, name, &m);
    memcpy(v, m.v, sizeof m.v);
    return m.variants;
}

static const char *level_name(int l)
{
    return l == LTR_PROFILE_LIGHT ? "Light" : "Verbose";
}

static const char *mode_name(int m)
{
    return m == LTR_PROFILE_FILEMODE ? "File" : "Memory";
}

void ltr_profile_variants_text(unsigned variants, char *out, size_t size)
{
    size_t used = 0;
    if (size)
        *out = 0;
    for (int i = 0; i < 4 && used < size; i++)
        if (variants & (1u << i))
            used += (size_t)snprintf(out + used, size - used, "%s%s.%s", used ? ", " : "",
                                     level_name(i / 2 + 1), mode_name(i % 2 + 1));
}

/* The detail levels (LTR_PROFILE_LIGHT | LTR_PROFILE_VERBOSE) of a variant set. */
static unsigned levels_of(unsigned variants)
{
    unsigned levels = 0;
    for (int l = LTR_PROFILE_LIGHT; l <= LTR_PROFILE_VERBOSE; l++)
        for (int m = LTR_PROFILE_FILEMODE; m <= LTR_PROFILE_MEMORYMODE; m++)
            if (variants & LTR_PROFILE_VARIANT(l, m))
                levels |= (unsigned)l;
    return levels;
}

/* `heap.Medium`: a detail level that does not exist, or a name of its own?
 * When the text before the last dot names a profile, the user meant a level;
 * the error says which levels that profile has. */
static bool report_unknown_level(wprp_catalog *c, const spec *s, const char *file)
{
    const char *dot = strrchr(s->name, '.');
    if (!dot || !dot[1])
        return false;
    char *base = strndup(s->name, (size_t)(dot - s->name));
    if (!base)
        abort();
    match m;
    find_variants(c, file, base, &m);
    unsigned levels = levels_of(m.variants);
    if (levels == (LTR_PROFILE_LIGHT | LTR_PROFILE_VERBOSE))
        ltr_diag_add(c->diags, LTR_DIAG_ERROR, file, 0, s->name,
                     "'%s' is not a detail level of %s: it has Light and Verbose (%s.light, "
                     "%s.verbose)", dot + 1, base, base, base);
    else if (levels)
        ltr_diag_add(c->diags, LTR_DIAG_ERROR, file, 0, s->name,
                     "'%s' is not a detail level of %s: it has %s only (%s.%s)", dot + 1, base,
                     level_name((int)levels), base, levels == LTR_PROFILE_LIGHT ? "light" : "verbose");
    free(base);
    return m.variants != 0;
}

/* Why the variant asked for is not there, and the nearest that is: the other
 * detail level in this mode, else this level in the other mode, else both. */
static void report_no_variant(wprp_catalog *c, const spec *s, const char *file, const match *m,
                              int level, int mode)
{
    char have[128];
    ltr_profile_variants_text(m->variants, have, sizeof have);
    int olevel = level == LTR_PROFILE_LIGHT ? LTR_PROFILE_VERBOSE : LTR_PROFILE_LIGHT;
    int omode = mode == LTR_PROFILE_FILEMODE ? LTR_PROFILE_MEMORYMODE : LTR_PROFILE_FILEMODE;
    bool by_level = m->variants & LTR_PROFILE_VARIANT(olevel, mode);
    bool by_mode = !by_level && (m->variants & LTR_PROFILE_VARIANT(level, omode));
    int want = by_mode ? level : olevel;
    char *hint = prof_asprintf("%s; use %s.%s%s",
                               s->level || by_mode ? ""
                               : "; a name without a detail level means Verbose, as in WPR",
                               s->name, want == LTR_PROFILE_LIGHT ? "light" : "verbose",
                               by_level                          ? ""
                               : omode == LTR_PROFILE_FILEMODE ? " with --filemode"
                                                               : " without --filemode");
    ltr_diag_add(c->diags, LTR_DIAG_ERROR, file, 0, s->name, "no %s %s variant in %s (it has %s)%s",
                 level_name(level), mode_name(mode), file ? file : "the built-in profiles", have,
                 hint);
    free(hint);
}

/* A profile's Id (Name.Level.Mode, as the file writes it) where its Name was
 * expected, if the name is one: the Id's profile, else NULL. */
static const wprp_node *profile_by_id(const wprp_catalog *c, const char *file, const char *name)
{
    for (size_t i = 0; i < c->n; i++)
        if (in_scope(c->nodes[i], file) && c->nodes[i]->id && strcasecmp(c->nodes[i]->id, name) == 0)
            return c->nodes[i];
    return NULL;
}

/* No profile of the spec's name: said, with what the user likely meant: a
 * profile's Id given for its Name (a WPR user's `CPU-SampleOnly.Light.File`;
 * a .wprp file given without '!Name' is name_the_file's). */
static void report_no_profile(wprp_catalog *c, const spec *s, const char *file)
{
    const char *in = file ? file : "the built-in profiles";
    const wprp_node *by_id = profile_by_id(c, file, s->name);
    by_id = by_id ? wprp_resolve(c, (wprp_node *)by_id) : NULL; /* its Name may be its Base='s */
    const char *name = by_id ? wprp_node_value(by_id, "Name") : NULL;
    if (name) {
        const char *l = wprp_node_value(by_id, "DetailLevel"), *m = wprp_node_value(by_id, "LoggingMode");
        ltr_diag_add(c->diags, LTR_DIAG_ERROR, file, 0, s->name,
                     "no profile of that name in %s: '%s' is a profile's Id; name it as WPR does, by its Name "
                     "and detail level: '%s.%s'%s", in, s->name, name,
                     l && strcasecmp(l, "Light") == 0 ? "light" : "verbose",
                     m && strcasecmp(m, "Memory") == 0 ? " (memory mode: without --filemode)"
                                                       : " with --filemode");
    } else
        ltr_diag_add(c->diags, LTR_DIAG_ERROR, file, 0, s->name, "no profile of that name in %s", in);
}

/* The variant a spec means: its level (Verbose when not given, as in WPR's
 * `-start Name`) in the mode. Returns NULL, reported, when there is none. */
static wprp_node *choose(wprp_catalog *c, const spec *s, const char *file, bool filemode,
                         unsigned *variants)
{
    match m;
    find_variants(c, file, s->name, &m);
    if (!m.variants) {
        if (!s->level && report_unknown_level(c, s, file))
            return NULL;
        /* its Base= cycle or missing base is the error, said already: "no
         * profile of that name" after it told the user theirs was not there */
        if (m.broken)
            return NULL;
        report_no_profile(c, s, file);
        return NULL;
    }
    int mode = filemode ? LTR_PROFILE_FILEMODE : LTR_PROFILE_MEMORYMODE;
    int level = s->level ? s->level : LTR_PROFILE_VERBOSE;
    wprp_node *n = m.v[(level - 1) * 2 + (mode - 1)];
    if (!n)
        report_no_variant(c, s, file, &m, level, mode);
    *variants = m.variants;
    return n;
}

static ltr_plan *new_plan(bool filemode)
{
    ltr_plan *p = calloc(1, sizeof *p);
    if (p)
        p->mode = filemode ? LTR_PLAN_FILE : LTR_PLAN_MEMORY;
    return p;
}

static int load_builtins(wprp_catalog *c, const char *dir)
{
    return wprp_catalog_load_dir(c, dir ? dir : ltr_profiles_builtin_dir());
}

/* Loads every file the specs name, so that each can use the others' ids. */
static int load_spec_files(wprp_catalog *c, spec *specs, size_t n, const char **files)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        files[i] = NULL;
        if (specs[i].file && wprp_catalog_load(c, specs[i].file, false, &files[i]) != 0)
            rc = -1;
    }
    return rc;
}

/* A file named without '!Name' (`wpr -start wsl.wprp`, as Microsoft's own
 * instructions write it) means its profiles' Name, which WPR's authoring
 * rules make one per file; a file of several names (MSO-Scripts' Heap.wprp
 * has five) is an error that lists them. Returns 0 with s->name set. */
static int name_the_file(wprp_catalog *c, spec *s, const char *file)
{
    const char *names[16]; /* the first 16 told; MSO-Scripts' files have 6 at most */
    size_t count = 0;
    for (size_t i = 0; i < c->n; i++) {
        const wprp_node *r = in_scope(c->nodes[i], file) ? wprp_resolve(c, c->nodes[i]) : NULL;
        const char *name = r ? wprp_node_value(r, "Name") : NULL;
        bool seen = !name || !*name;
        for (size_t k = 0; k < count && k < 16 && !seen; k++)
            seen = strcasecmp(names[k], name) == 0;
        if (!seen && count++ < 16)
            names[count - 1] = name;
    }
    if (count == 1) {
        s->name = prof_strdup(names[0]);
        return 0;
    }
    char list[512] = "";
    for (size_t k = 0, used = 0; k < count && k < 16 && used < sizeof list; k++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "", names[k]);
    if (count)
        ltr_diag_add(c->diags, LTR_DIAG_ERROR, file, 0, NULL,
                     "its profiles have %zu names (%s%s): name one, as '%s!%s'", count, list,
                     count > 16 ? ", ..." : "", s->file, names[0]);
    else
        ltr_diag_add(c->diags, LTR_DIAG_ERROR, file, 0, NULL, "the file defines no profile");
    return -1;
}

static void add_spec(wprp_catalog *c, ltr_plan *plan, spec *s, const char *file,
                     bool filemode, bool describe)
{
    if (!s->name && name_the_file(c, s, file) != 0)
        return;
    unsigned variants = 0;
    wprp_node *n = choose(c, s, file, filemode, &variants);
    if (!n)
        return;
    char *label = file ? prof_asprintf("%s!%s", file, n->id) : prof_strdup(n->id);
    size_t before = plan->nprofiles;
    plan_add_profile(c, plan, n, label, describe ? PLAN_CHECK_DESCRIBE : PLAN_CHECK_START);
    free(label);
    if (plan->nprofiles == before)
        return;
    unsigned *v = realloc(plan->variants, plan->nprofiles * sizeof *v);
    if (!v)
        abort();
    memset(v + before, 0, (plan->nprofiles - before) * sizeof *v);
    v[plan->nprofiles - 1] = variants;
    plan->variants = v;
}

static int resolve_plan(const ltr_profile_request *req, bool describe, ltr_plan **out)
{
    ltr_plan *plan = new_plan(req->filemode);
    *out = plan;
    if (!plan)
        return -1;
    wprp_catalog cat;
    wprp_catalog_init(&cat, &plan->diags);
    spec *specs = calloc(req->nspecs + 1, sizeof *specs);
    const char **files = calloc(req->nspecs + 1, sizeof *files);
    if (!specs || !files)
        abort();
    size_t parsed = 0;
    int rc = 0;
    for (; parsed < req->nspecs; parsed++)
        if (parse_spec(req->specs[parsed], &specs[parsed], &plan->diags) != 0)
            rc = -1;
    if (!req->nspecs)
        ltr_diag_add(&plan->diags, LTR_DIAG_ERROR, NULL, 0, NULL, "no profile given");
    if (rc == 0 && req->nspecs) {
        load_builtins(&cat, req->builtin_dir);
        if (load_spec_files(&cat, specs, req->nspecs, files) == 0)
            for (size_t i = 0; i < req->nspecs; i++)
                add_spec(&cat, plan, &specs[i], files[i], req->filemode, describe);
    }
    for (size_t i = 0; i < parsed; i++)
        spec_free(&specs[i]);
    free(specs);
    free(files);
    wprp_catalog_free(&cat);
    return plan->diags.errors ? -1 : 0;
}

int ltr_profiles_resolve(const ltr_profile_request *req, ltr_plan **out)
{
    return resolve_plan(req, false, out);
}

int ltr_profiles_describe(const ltr_profile_request *req, ltr_plan **out)
{
    return resolve_plan(req, true, out);
}

void ltr_plan_free(ltr_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nprofiles; i++)
        free(p->profiles[i]);
    free(p->profiles);
    free(p->variants);
    for (size_t i = 0; i < p->ncollectors; i++)
        free(p->collectors[i].name);
    free(p->collectors);
    for (size_t i = 0; i < p->nproviders; i++)
        free(p->providers[i].name);
    free(p->providers);
    for (size_t i = 0; i < p->nsyskw; i++)
        free(p->syskw[i].name);
    free(p->syskw);
    for (size_t i = 0; i < p->nsysstacks; i++)
        free(p->sysstacks[i]);
    free(p->sysstacks);
    free(p->heap.pids);
    for (size_t i = 0; i < p->heap.nprocess_names; i++)
        free(p->heap.process_names[i]);
    free(p->heap.process_names);
    for (size_t i = 0; i < p->nskipped; i++) {
        free(p->skipped[i].what);
        free(p->skipped[i].reason);
        free(p->skipped[i].file);
    }
    free(p->skipped);
    ltr_diag_list_free(&p->diags);
    free(p);
}

/* ---- listing -------------------------------------------------------------- */

static ltr_profile_info *info_for(ltr_profile_list *l, const char *name, const char *file)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcasecmp(l->v[i].name, name) == 0)
            return &l->v[i];
    ltr_profile_info *v = realloc(l->v, (l->n + 1) * sizeof *v);
    if (!v)
        abort();
    l->v = v;
    l->v[l->n] = (ltr_profile_info){.name = prof_strdup(name), .file = prof_strdup(file)};
    return &l->v[l->n++];
}

/* Builds a throwaway plan of one variant, to report what using it would. */
static void try_variant(wprp_catalog *c, wprp_node *n, int mode)
{
    ltr_plan *p = new_plan(mode == LTR_PROFILE_FILEMODE);
    if (!p)
        abort();
    plan_add_profile(c, p, n, n->id, PLAN_CHECK_NONE);
    ltr_plan_free(p);
}

static void list_node(wprp_catalog *c, ltr_profile_list *l, wprp_node *n)
{
    const wprp_node *r = wprp_resolve(c, n);
    const char *name = r ? wprp_node_value(r, "Name") : NULL;
    int level, mode;
    if (!r)
        return;
    if (!name || !*name) {
        ltr_diag_add(c->diags, LTR_DIAG_ERROR, r->file, r->line, r->id,
                     "Profile without a Name attribute");
        return;
    }
    const char *internal = wprp_node_value(r, "Internal");
    bool hidden = false;
    if (n->builtin && internal && plan_parse_bool(internal, &hidden) == 0 && hidden)
        return;
    if (variant_of(c, r, &level, &mode) != 0)
        return;
    ltr_profile_info *info = info_for(l, name, n->file);
    info->levels |= (unsigned)level;
    info->modes |= (unsigned)mode;
    info->variants |= LTR_PROFILE_VARIANT(level, mode);
    const char *d = wprp_node_value(r, "Description");
    if (!info->description && d && *d)
        info->description = prof_strdup(d);
    try_variant(c, n, mode);
}

int ltr_profiles_list(const char *file, const char *builtin_dir, ltr_profile_list **out)
{
    ltr_profile_list *l = calloc(1, sizeof *l);
    *out = l;
    if (!l)
        return -1;
    wprp_catalog cat;
    wprp_catalog_init(&cat, &l->diags);
    load_builtins(&cat, builtin_dir);
    const char *scope = NULL;
    if (!file || wprp_catalog_load(&cat, file, false, &scope) == 0 || scope)
        for (size_t i = 0; i < cat.n; i++)
            if (in_scope(cat.nodes[i], scope))
                list_node(&cat, l, cat.nodes[i]);
    if (file && !scope && !l->diags.errors)
        ltr_diag_add(&l->diags, LTR_DIAG_ERROR, file, 0, NULL, "cannot load the file");
    wprp_catalog_free(&cat);
    return l->diags.errors ? -1 : 0;
}

void ltr_profile_list_free(ltr_profile_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].name);
        free(l->v[i].description);
        free(l->v[i].file);
    }
    free(l->v);
    ltr_diag_list_free(&l->diags);
    free(l);
}
