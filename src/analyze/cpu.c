/*
 * analyze/cpu.c — `ltr analyze --cpu` and `ltr export --cpu`: the system
 * provider's CPU samples (docs/system-provider.md, SampledProfile) of the
 * window, counted by process and stack. The recorder unwound and named each
 * stack already (outermost first, ';' between frames); here they are
 * counted, demangled and ranked by samples, or written as folded stacks or
 * a pprof profile (one sample type: samples, count).
 */
#include "analyze/internal.h"
#include "base/records.h"
#include "base/system_events.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fnv(const char *s, size_t n, uint32_t pid)
{
    uint64_t h = an_hash_bytes(AN_HASH_START ^ pid, s, n);
    return h ? h : 1;
}

typedef struct cpu_name {
    uint64_t pid;
    char name[16];
} cpu_name;

/* A process's command name from the system provider's process events, for
 * processes the trace has no PROCESS record of (they were not attached). */
static void note_name(ltr_analysis *a, const ltr_event *ev)
{
    uint64_t pid;
    const char *name;
    size_t len;
    int created;
    if (ltr_event_get_u64(ev, "pid", &pid) || ltr_event_get_str(ev, "name", &name, &len) || !len)
        return;
    cpu_name *e = an_hmap_put(&a->cpu_names, pid, &created);
    if (e)
        snprintf(e->name, sizeof e->name, "%.*s", (int)(len < 15 ? len : 15), name);
}

const char *an_process_name_shown(const ltr_analysis *a, uint32_t pid, char *buf, size_t size)
{
    const char *exe = an_process_exe(a, pid);
    const cpu_name *e = *exe ? NULL : an_hmap_get(&a->cpu_names, pid);
    if (!e)
        return an_process_exe_shown(a, pid, buf, size);
    size_t len = strlen(e->name); /* 15 at most (cpu_name) */
    if (len >= size)
        len = size - 1;
    buf[ltr_shown_text(e->name, len, buf, false)] = 0;
    return buf;
}

#define PROCESS_NAME_MAX 1024
static const char *process_name(const ltr_analysis *a, uint32_t pid, char *buf)
{
    return an_process_name_shown(a, pid, buf, PROCESS_NAME_MAX);
}

/* The last component of the name (folded stacks' root), as a line shows it,
 * in buf: taken before the name is cut to buf, not from what is left of a
 * long path. */
static const char *process_base(const ltr_analysis *a, uint32_t pid, char *buf)
{
    const char *exe = an_process_exe(a, pid);
    const cpu_name *e = *exe ? NULL : an_hmap_get(&a->cpu_names, pid);
    const char *name = e ? e->name : exe, *b = strrchr(name, '/');
    name = b ? b + 1 : name;
    buf[ltr_shown_text(name, strnlen(name, PROCESS_NAME_MAX - 1), buf, false)] = 0;
    return buf;
}

int an_cpu_feed(ltr_analysis *a, const ltr_event *ev)
{
    const ltr_layout *l = ev->layout;
    if (!l || !l->provider || memcmp(l->provider->guid.b, a->system_guid.b, 16))
        return 0;
    if (l->event_id == LTR_SYS_EV_PROCESS_START || l->event_id == LTR_SYS_EV_PROCESS_EXEC) {
        note_name(a, ev);
        return 1;
    }
    if (l->event_id == LTR_SYS_EV_CPU_SAMPLES_LOST) {
        uint64_t n = 0;
        ltr_event_get_u64(ev, "samples", &n);
        a->cpu_lost += n;
        return 1;
    }
    if (l->event_id != LTR_SYS_EV_CPU_SAMPLE)
        return 0;
    uint64_t pid;
    const char *stack;
    size_t len;
    if (ltr_event_get_u64(ev, "pid", &pid) || pid > UINT32_MAX || ltr_event_get_str(ev, "stack", &stack, &len))
        return 1;
    if ((a->pid_set && pid != a->pid) || ev->ts < a->model.from || ev->ts > a->model.to)
        return 1;
    a->cpu_samples++;
    uint64_t key = fnv(stack, len, (uint32_t)pid);
    int created;
    an_cpu_stack *e = an_hmap_put(&a->cpu, key, &created);
    if (!e) {
        a->model.oom = 1;
        return 1;
    }
    if (created) {
        e->pid = (uint32_t)pid;
        e->text = malloc(len + 1);
        if (e->text) {
            memcpy(e->text, stack, len);
            e->text[len] = 0;
        }
    }
    e->samples++;
    return 1;
}

void an_cpu_free(ltr_analysis *a)
{
    size_t pos = 0;
    an_cpu_stack *e;
    while ((e = an_hmap_next(&a->cpu, &pos)))
        free(e->text);
    an_hmap_free(&a->cpu);
    an_hmap_free(&a->cpu_names);
}

static int by_samples(const void *x, const void *y)
{
    const an_cpu_stack *a = *(an_cpu_stack *const *)x, *b = *(an_cpu_stack *const *)y;
    if (a->samples != b->samples)
        return a->samples < b->samples ? 1 : -1;
    return a->pid != b->pid ? (a->pid < b->pid ? -1 : 1) : strcmp(a->text ? a->text : "", b->text ? b->text : "");
}

/* Every stack, most samples first; *n of them (malloc'd, entries owned by a). */
an_cpu_stack **an_cpu_ranked(const ltr_analysis *a, size_t *n)
{
    an_cpu_stack **v = malloc((a->cpu.n + 1) * sizeof *v);
    size_t k = 0, pos = 0;
    an_cpu_stack *e;
    while (v && (e = an_hmap_next(&a->cpu, &pos)))
        if (e->text)
            v[k++] = e;
    if (v)
        qsort(v, k, sizeof *v, by_samples);
    *n = v ? k : 0;
    return v;
}

/* One frame's name as people read it: demangled, without a symbol version. */
static char *frame_name(const char *s, size_t n)
{
    char *raw = strndup(s, n);
    if (!raw)
        return NULL;
    char *at = strstr(raw, "@@");
    if (!at)
        at = strchr(raw, '@');
    if (at && at != raw)
        *at = 0;
    char *d = ltr_demangle(raw);
    if (d) {
        free(raw);
        return d;
    }
    return raw;
}

/* Calls f for each frame of a stack text, outermost first. */
static void each_frame(const char *text, void (*f)(void *arg, const char *name, size_t i), void *arg)
{
    size_t i = 0;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, ";");
        char *name = frame_name(p, n);
        f(arg, name ? name : "??", i++);
        free(name);
        p += n + (p[n] == ';');
    }
}

typedef struct frame_list {
    char **v;
    size_t n;
} frame_list;

static void collect(void *arg, const char *name, size_t i)
{
    (void)i;
    frame_list *l = arg;
    char **v = realloc(l->v, (l->n + 1) * sizeof *v);
    if (!v)
        return;
    l->v = v;
    l->v[l->n] = strdup(name);
    if (l->v[l->n])
        l->n++;
}

static void frames_free(frame_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

char **an_cpu_frames(const char *text, size_t *n)
{
    frame_list l = {0};
    each_frame(text, collect, &l);
    *n = l.n;
    return l.v;
}

void an_cpu_frames_free(char **v, size_t n)
{
    frame_list l = {v, n};
    frames_free(&l);
}

static int write_text(ltr_analysis *a, FILE *out, unsigned top)
{
    fprintf(out, "trace: %s\nwindow: %.6f s .. %.6f s\n", ltr_trace_path(a->trace), an_seconds(a, a->win_start),
            an_seconds(a, a->win_end));
    if (a->cpu_lost)
        fprintf(out, "warning: %llu CPU sample(s) were lost while recording (the recorder fell behind)\n",
                (unsigned long long)a->cpu_lost);
    size_t n;
    an_cpu_stack **v = an_cpu_ranked(a, &n);
    fprintf(out, "\n%llu CPU sample(s) (1 ms of CPU each) in %zu stack(s)%s\n", (unsigned long long)a->cpu_samples, n,
            a->cpu_samples ? "; stacks by samples:"
                           : ": the trace has no CPU samples (SampledProfile) in the window: the general profile "
                             "records them, e.g. 'ltr start general heap --pid P' (where perf_event_open is "
                             "permitted)");
    char name[PROCESS_NAME_MAX];
    for (size_t i = 0; i < n && (!top || i < top); i++) {
        fprintf(out, "  #%zu %llu sample%s (%.1f%%), process %u %s\n", i + 1, (unsigned long long)v[i]->samples,
                v[i]->samples == 1 ? "" : "s", 100.0 * (double)v[i]->samples / (double)a->cpu_samples, v[i]->pid,
                process_name(a, v[i]->pid, name));
        frame_list l = {0};
        each_frame(v[i]->text, collect, &l);
        for (size_t k = l.n; k-- > 0;) /* innermost first, as the heap report */
            fprintf(out, "        %s\n", l.v[k]);
        frames_free(&l);
    }
    free(v);
    return 0;
}

/* As every JSON string ltr writes (ltr_print_json_string): the frames' names
 * come from the sampled programs' symbol tables, and a byte that is not
 * UTF-8 made the whole report unreadable as JSON. */
static void json_str(FILE *out, const char *s)
{
    ltr_print_json_string(out, s, strlen(s));
}

static int write_json(ltr_analysis *a, FILE *out, unsigned top)
{
    size_t n;
    an_cpu_stack **v = an_cpu_ranked(a, &n);
    fprintf(out, "{\"version\":1,\"trace\":");
    json_str(out, ltr_trace_path(a->trace));
    fprintf(out, ",\"cpu_samples\":%llu,\"cpu_samples_lost\":%llu,\"stacks\":[", (unsigned long long)a->cpu_samples,
            (unsigned long long)a->cpu_lost);
    for (size_t i = 0; i < n && (!top || i < top); i++) {
        fprintf(out, "%s{\"pid\":%u,\"samples\":%llu,\"frames\":[", i ? "," : "", v[i]->pid,
                (unsigned long long)v[i]->samples);
        frame_list l = {0};
        each_frame(v[i]->text, collect, &l);
        for (size_t k = l.n; k-- > 0;) {
            if (k + 1 < l.n)
                fputc(',', out);
            json_str(out, l.v[k]);
        }
        frames_free(&l);
        fprintf(out, "]}");
    }
    fprintf(out, "]}\n");
    free(v);
    return 0;
}

/* Folded stacks: "process;outer;...;inner count", what flamegraph.pl reads;
 * stacks whose names read the same once demangled are one line. */
static int write_folded(ltr_analysis *a, FILE *out)
{
    an_folded f;
    if (an_folded_open(&f) != 0)
        return -ENOMEM;
    size_t n;
    an_cpu_stack **v = an_cpu_ranked(a, &n);
    char name[PROCESS_NAME_MAX];
    FILE *m;
    for (size_t i = 0; i < n && (m = an_folded_begin(&f)); i++) {
        const char *base = process_base(a, v[i]->pid, name);
        for (const char *c = *base ? base : "pid"; *c; c++) /* a ';' or ' ' would split it */
            fputc(*c == ';' || *c == ' ' ? '_' : *c, m);
        fprintf(m, "-%u", v[i]->pid);
        frame_list l = {0};
        each_frame(v[i]->text, collect, &l);
        for (size_t k = 0; k < l.n; k++) { /* names of the program's choosing: no control character either */
            fputc(';', m);
            l.v[k][ltr_shown_text(l.v[k], strlen(l.v[k]), l.v[k], false)] = 0;
            for (const char *c = l.v[k]; *c; c++)
                fputc(*c == ';' || *c == ' ' ? '_' : *c, m);
        }
        frames_free(&l);
        an_folded_end(&f, v[i]->samples);
    }
    free(v);
    an_folded_finish(&f, out);
    return f.failed ? -ENOMEM : 0;
}

int an_cpu_write(ltr_analysis *a, FILE *out, ltr_report_format fmt, unsigned top)
{
    switch (fmt) {
    case LTR_REPORT_TEXT: return write_text(a, out, top);
    case LTR_REPORT_JSON: return write_json(a, out, top);
    case LTR_REPORT_FOLDED: return write_folded(a, out);
    case LTR_REPORT_PPROF: return an_cpu_write_pprof(a, out);
    default: return -EINVAL;
    }
}
