/*
 * tests/fuzz/fuzz_trace.c — fuzz target of the trace reader, through the
 * public API of include/ltr/trace.h only, used the way `ltr dump`, `ltr info`
 * and `ltr analyze` use it: open, read every event, print it as text and
 * JSON, read each of its fields by index and by name, find its call stack,
 * then walk every metadata table, the key/value lists, the counters and the
 * damage list, and read the whole file once more with ltr_trace_scan; then
 * analyze it as `ltr analyze` does, whose fast path decodes blocks itself
 * (compact and column blocks: src/analyze/blocks.c), twice, two ways that must
 * agree (analyze() says which). With the analysis (once), 240 s
 * ran 42 771 inputs (177 a second) and reached 2 587 edges; 600 s without
 * it had reached 1 275.
 *
 * The input is a trace file. Chunk CRCs would stop almost every mutation at
 * the first check, so before the reader sees it, the harness rewrites the
 * CRCs of the chunks that follow one another from the file header on (both
 * CRCs, wherever a whole payload is present): mutations reach the parsers of
 * the chunk contents. An input whose reserved header field (bytes 12..15) is
 * not zero is passed through untouched, which keeps the CRC and resync paths
 * reachable too. Seeds are stored uncompressed for the same reason.
 */
#include "fuzz_input.h"

#include <ltr/trace.h>

#include "analyze/analyze.h"
#include "format/chunk.h"
#include "base/records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *sink(void)
{
    static FILE *f;
    if (!f && !(f = fopen("/dev/null", "w")))
        abort();
    return f;
}

static void use_fields(ltr_trace *t, const ltr_event *ev)
{
    const ltr_layout *l = ev->layout;
    for (unsigned i = 0; i <= l->field_count; i++) {
        ltr_trace_value v;
        if (ltr_event_field(ev, i, &v) == 0 && (v.type == LTR_TYPE_STRING || v.type == LTR_TYPE_BLOB))
            ltr_print_json_string(sink(), v.bytes.data, v.bytes.len);
    }
    for (unsigned i = 0; i < l->field_count; i++) {
        const char *name = l->fields[i].name;
        uint64_t u;
        int64_t s;
        double d;
        const char *str;
        const uint8_t *blob;
        size_t len;
        (void)ltr_event_field_index(ev, name);
        (void)ltr_event_get_i64(ev, name, &s);
        (void)ltr_event_get_f64(ev, name, &d);
        (void)ltr_event_get_str(ev, name, &str, &len);
        (void)ltr_event_get_blob(ev, name, &blob, &len);
        /* what analyze does with a heap event's stack */
        if (ltr_event_get_u64(ev, name, &u) == 0 && strcmp(name, "stack") == 0 && u)
            (void)ltr_trace_stack_find(t, ev->pid, (uint32_t)u);
    }
    (void)ltr_event_get_u64(ev, "no such field", &(uint64_t){0});
}

static void use_event(ltr_trace *t, const ltr_event *ev)
{
    uint64_t origin = ltr_trace_origin_ns(t);
    ltr_event_print_text(sink(), ev, origin);
    ltr_event_print_json(sink(), ev, origin);
    use_fields(t, ev);
    (void)ltr_trace_process_find(t, ev->pid);
    (void)ltr_trace_thread_find(t, ev->pid, ev->tid);
}

static void use_kv(const ltr_trace *t, ltr_kv_list list)
{
    size_t n = ltr_trace_kv_count(t, list);
    for (size_t i = 0; i <= n; i++) {
        const char *k, *v;
        if (ltr_trace_kv_at(t, list, i, &k, &v) == 0)
            fprintf(sink(), "%s=%s %s\n", k, v, ltr_trace_kv(t, list, k) ? "" : "?");
    }
}

/* What `ltr info` prints: every table, counters and damage. */
static void use_tables(ltr_trace *t)
{
    FILE *o = sink();
    use_kv(t, LTR_KV_HEADER);
    use_kv(t, LTR_KV_END);
    for (size_t i = 0; i < ltr_trace_provider_count(t); i++) {
        const ltr_trace_provider *p = ltr_trace_provider_at(t, i);
        fprintf(o, "%s %d %llu\n", p->name, p->named, (unsigned long long)p->events);
        (void)ltr_trace_provider_find(t, &p->guid);
    }
    for (size_t i = 0; i < ltr_trace_layout_count(t); i++) {
        const ltr_layout *l = ltr_trace_layout_at(t, i);
        fprintf(o, "%u %s %s\n", l->id, l->name, l->provider->name);
        for (unsigned f = 0; f < l->field_count; f++)
            fprintf(o, " %s:%s", l->fields[f].name, ltr_type_name(l->fields[f].type));
        (void)ltr_trace_layout_find(t, l->id);
    }
    for (size_t i = 0; i < ltr_trace_process_count(t); i++) {
        const ltr_process *p = ltr_trace_process_at(t, i);
        fprintf(o, "%u %s", p->pid, p->exe);
        for (uint32_t a = 0; a < p->argc; a++)
            fprintf(o, " %s", p->argv[a]);
    }
    for (size_t i = 0; i < ltr_trace_thread_count(t); i++)
        fprintf(o, "%u %s\n", ltr_trace_thread_at(t, i)->tid, ltr_trace_thread_at(t, i)->name);
    for (size_t i = 0; i < ltr_trace_stack_count(t); i++) {
        const ltr_stack *s = ltr_trace_stack_at(t, i);
        for (unsigned f = 0; f < s->frame_count; f++)
            fprintf(o, " %llx", (unsigned long long)s->frames[f]);
    }
    for (size_t i = 0; i < ltr_trace_module_count(t); i++) {
        const ltr_module *m = ltr_trace_module_at(t, i);
        fprintf(o, "%s %u", m->path, m->build_id_len);
        for (unsigned b = 0; b < m->build_id_len; b++)
            fprintf(o, "%02x", m->build_id[b]);
        for (unsigned s = 0; s < m->segment_count; s++)
            fprintf(o, " %llx-%llx", (unsigned long long)m->segments[s].start,
                    (unsigned long long)m->segments[s].end);
    }
    if (ltr_trace_has_counters(t)) {
        for (size_t i = 0; i < ltr_trace_collector_count(t); i++)
            fprintf(o, "%s\n", ltr_trace_collector_at(t, i)->name);
        for (size_t i = 0; i < ltr_trace_process_lost_count(t); i++)
            fprintf(o, "%u\n", ltr_trace_process_lost_at(t, i)->pid);
    }
    for (size_t i = 0; i < ltr_trace_damage_count(t); i++) {
        char line[512];
        ltr_damage_format(ltr_trace_damage_at(t, i), line, sizeof line);
        fprintf(o, "%s %s\n", line, ltr_damage_kind_name(ltr_trace_damage_at(t, i)->kind));
    }
}

/* The JSON report of the trace (malloc'd), or NULL when it is refused. */
static char *analyze_once(const char *path)
{
    ltr_analysis *a;
    ltr_error err;
    /* No separate debug files: the seeds' frames are in this machine's
     * libc, and with libc6-dbg installed every input's analysis read its
     * compressed DWARF (0.8 s of the 3.1 s an input took at load 13; 84
     * inputs in 60 s, 1 a second); the frames are still named from the
     * modules' own symbol tables. */
    ltr_analyze_opts o = {.debug_path = "/nonexistent/ltr-fuzz"};
    if (ltr_analysis_run(path, &o, &a, &err) != 0)
        return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        abort();
    (void)ltr_analysis_write(a, f, LTR_REPORT_JSON, 10);
    fclose(f);
    ltr_analysis_free(a);
    return text;
}

/* What `ltr analyze` does with the trace: its own decoding of blocks (the
 * fast path reads compact and column blocks itself), the model, the report;
 * twice: with column blocks' values decoded whole, 512 records a column at
 * a time (analyze/blocks.c, run_decoded), and read a record at a time from
 * the columns (LTR_ANALYZE_AHEAD=0): the two ways must give the same report
 * for any input, damaged or not, or the fuzzer stops here. */
static void analyze(const char *path)
{
    char *decoded = analyze_once(path);
    setenv("LTR_ANALYZE_AHEAD", "0", 1);
    char *interleaved = analyze_once(path);
    unsetenv("LTR_ANALYZE_AHEAD");
    if (!decoded != !interleaved || (decoded && strcmp(decoded, interleaved) != 0)) {
        fprintf(stderr, "the two ways of reading column blocks disagree:\n%s\n----\n%s\n",
                decoded ? decoded : "(refused)", interleaved ? interleaved : "(refused)");
        abort();
    }
    free(decoded);
    free(interleaved);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = fuzz_fixed_copy(data, size);
    const char *path = fuzz_input_path(copy, size);
    free(copy);

    ltr_trace *t = NULL;
    ltr_error err;
    if (ltr_trace_open(path, &t, &err) != 0)
        return 0;
    (void)ltr_trace_version(t);
    const ltr_event *ev;
    while (ltr_trace_next(t, &ev, &err) == 1)
        use_event(t, ev);
    use_tables(t);
    ltr_trace_summary sum;
    if (ltr_trace_scan(t, &sum, &err) == 0)
        use_tables(t);
    (void)ltr_trace_complete(t);
    ltr_trace_close(t);
    analyze(path);
    return 0;
}
