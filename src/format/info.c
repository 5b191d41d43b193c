/*
 * format/info.c — the summary `ltr info` shows of a trace, and its text and
 * JSON writers (format/info.h). Everything here reads through the public
 * reader (ltr/trace.h), as any program reading traces could.
 */
#include "format/info.h"
#include "format/blocks.h"
#include "format/symchunk.h"
#include "prim/prim.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A header value, or "-" when the trace does not say. */
static const char *hdr(const ltr_trace *t, const char *key)
{
    const char *v = ltr_trace_kv(t, LTR_KV_HEADER, key);
    return v && *v ? v : "-";
}

static int kv_u64(const ltr_trace *t, ltr_kv_list list, const char *key, uint64_t *out)
{
    const char *v = ltr_trace_kv(t, list, key);
    char *end;
    if (!v || !*v)
        return -1;
    *out = strtoull(v, &end, 10);
    return *end ? -1 : 0;
}

/* "2026-11-21T04:43:08.123456789Z", or "" if the header has no wall clock. */
static void iso_start(const ltr_trace *t, char *buf, size_t cap)
{
    uint64_t ns;
    buf[0] = 0;
    if (kv_u64(t, LTR_KV_HEADER, "clock.wall_start_ns", &ns) < 0)
        return;
    time_t secs = (time_t)(ns / 1000000000u);
    struct tm tm;
    if (!gmtime_r(&secs, &tm))
        return;
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, cap - n, ".%09" PRIu64 "Z", ns % 1000000000u);
}

/* Duration in ns: END's clock if present, else up to the last event. */
static int duration(const ltr_trace *t, const ltr_trace_summary *s, uint64_t *out)
{
    uint64_t start, end;
    if (kv_u64(t, LTR_KV_HEADER, "clock.start_ns", &start) < 0)
        return -1;
    if (kv_u64(t, LTR_KV_END, "clock.end_ns", &end) < 0) {
        if (!s->events)
            return -1;
        end = s->last_ts;
    }
    *out = end > start ? end - start : 0;
    return 0;
}

/* Arguments joined by spaces, quoted for a shell when they need it. */
static void print_cmdline(FILE *out, const ltr_process *p)
{
    for (uint32_t i = 0; i < p->argc; i++) {
        /* an argument on the line: no newline nor control character of the program's */
        size_t len = strlen(p->argv[i]);
        char *shown = malloc(len + 1);
        if (!shown)
            return;
        shown[ltr_shown_text(p->argv[i], len, shown, false)] = 0;
        const char *a = shown;
        int plain = *a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789-_./=:,+@%") == strlen(a);
        if (i)
            putc(' ', out);
        if (plain) {
            fputs(a, out);
        } else {
            putc('\'', out);
            for (; *a; a++)
                fputs(*a == '\'' ? "'\\''" : (char[]){*a, 0}, out);
            putc('\'', out);
        }
        free(shown);
    }
}

/* ---- text ---- */

static void text_header(FILE *out, const ltr_trace *t, const ltr_trace_info *in)
{
    const ltr_trace_summary *s = &in->summary;
    fprintf(out, "trace:       %s\n", ltr_trace_path(t));
    fprintf(out, "format:      version %u, %" PRIu64 " bytes, %" PRIu64 " chunks\n", ltr_trace_version(t),
           s->file_size, s->chunks);
    fprintf(out, "state:       %s\n", s->complete ? "complete" : "cut short (no END chunk)");
    fprintf(out, "session:     %s\n", hdr(t, "session.name"));
    fprintf(out, "mode:        %s (trace kind %s)\n", hdr(t, "session.mode"), hdr(t, "trace.kind"));
    fprintf(out, "buffers:     %s x %s bytes\n", hdr(t, "session.buffers"), hdr(t, "session.buffer_size"));
    fprintf(out, "providers:   %s\n", hdr(t, "session.providers"));
    fprintf(out, "profiles:    %s\n", hdr(t, "session.profiles"));
    fprintf(out, "host:        %s (%s, %s CPUs, %s bytes of RAM)\n", hdr(t, "host.name"),
           hdr(t, "host.machine"), hdr(t, "host.cpus"), hdr(t, "host.memory"));
    fprintf(out, "os:          %s\n", hdr(t, "host.os"));
    fprintf(out, "kernel:      %s\n", hdr(t, "host.kernel"));
    fprintf(out, "recorded by: ltr %s\n", hdr(t, "ltr.version"));
    fprintf(out, "started:     %s\n", *in->start ? in->start : "-");
    if (in->has_duration)
        fprintf(out, "duration:    %" PRIu64 ".%09" PRIu64 " s%s\n", in->duration_ns / 1000000000u,
                in->duration_ns % 1000000000u, s->complete ? "" : " (to the last event)");
    const char *desc = ltr_trace_kv(t, LTR_KV_END, "session.description");
    fprintf(out, "description: %s\n", desc ? desc : "");
    /* a block: one buffer, or a thread's consecutive ones (writer.c) */
    fprintf(out, "events:      %" PRIu64 " in %" PRIu64 " blocks\n", s->events, s->blocks);
    uint64_t named = ltr_trace_symbol_entries(t);
    if (named)
        fprintf(out, "symbols:     %" PRIu64 " addresses named where it was recorded\n", named);
    else
        fprintf(out, "symbols:     none in the trace: frames are named where their files are (ltr symbolize)\n");
}

static void text_tables(FILE *out, const ltr_trace *t)
{
    fprintf(out, "\nprocesses:\n  %-8s %-8s %-10s %s\n", "PID", "PPID", "EVENTS", "EXECUTABLE / COMMAND LINE");
    for (size_t i = 0; i < ltr_trace_process_count(t); i++) {
        const ltr_process *p = ltr_trace_process_at(t, i);
        /* on one line (the program chose its path), and whole, however long */
        size_t len = p->known ? strlen(p->exe) : 0;
        char *exe = p->known ? malloc(len + 1) : NULL;
        if (exe)
            exe[ltr_shown_text(p->exe, len, exe, false)] = 0;
        fprintf(out, "  %-8u %-8u %-10" PRIu64 " %s\n", p->pid, p->ppid, p->events,
                exe ? exe : p->known ? "(out of memory)" : "(no process record)");
        free(exe);
        if (p->argc) {
            fprintf(out, "  %-28s ", "");
            print_cmdline(out, p);
            putc('\n', out);
        }
    }
    fprintf(out, "\nproviders:\n  %-36s %-10s %s\n", "GUID", "EVENTS", "NAME");
    for (size_t i = 0; i < ltr_trace_provider_count(t); i++) {
        const ltr_trace_provider *p = ltr_trace_provider_at(t, i);
        char g[37];
        ltr_guid_format(&p->guid, g);
        fprintf(out, "  %-36s %-10" PRIu64 " %s\n", g, p->events, p->named ? p->name : "(no provider record)");
    }
}

uint64_t ltr_trace_unwritten(const ltr_trace *t, char *why, size_t n)
{
    uint64_t unwritten = 0;
    for (size_t i = 0; i < ltr_trace_collector_count(t); i++)
        unwritten += ltr_trace_collector_at(t, i)->events_unwritten;
    const char *limit = ltr_trace_kv(t, LTR_KV_HEADER, "session.max_file_size");
    unsigned long long bytes = limit ? strtoull(limit, NULL, 10) : 0;
    if (bytes)
        snprintf(why, n, "a write to it failed (a full disk, an I/O error), or the session's --max-file-size "
                 "of %llu bytes was reached", bytes);
    else
        snprintf(why, n, "a write to it failed (a full disk, an I/O error)");
    return unwritten;
}

static void text_counters(FILE *out, const ltr_trace *t)
{
    fprintf(out, "\ncounters%s:\n", ltr_trace_has_counters(t) ? " (last COUNTERS chunk)" : ": none in the trace");
    for (size_t i = 0; i < ltr_trace_collector_count(t); i++) {
        const ltr_collector_counters *c = ltr_trace_collector_at(t, i);
        fprintf(out, "  collector %u %s (%u x %u bytes)\n", c->collector, c->name, c->buffers, c->buffer_size);
        fprintf(out, "    events:  %" PRIu64 " written, %" PRIu64 " lost, %" PRIu64 " overwritten\n",
               c->events_written, c->events_lost, c->events_overwritten);
        fprintf(out, "    buffers: %" PRIu64 " written, %" PRIu64 " lost, %" PRIu64 " overwritten\n",
               c->buffers_written, c->buffers_lost, c->buffers_overwritten);
        if (c->shm_damage)
            fprintf(out, "    shared memory damage: %" PRIu64 " place(s) skipped\n", c->shm_damage);
        if (c->events_unwritten)
            fprintf(out, "    of the events lost, %" PRIu64 " could not be written to the file\n", c->events_unwritten);
        if (c->metadata_lost)
            fprintf(out, "    metadata records lost: %" PRIu64 " (stacks, modules or layouts missing)\n",
                    c->metadata_lost);
    }
    if (ltr_trace_process_lost_count(t))
        fprintf(out, "\nlost per process:\n");
    for (size_t i = 0; i < ltr_trace_process_lost_count(t); i++) {
        const ltr_process_lost *l = ltr_trace_process_lost_at(t, i);
        fprintf(out, "  pid %u, collector %u: %" PRIu64 " events lost, %" PRIu64 " buffers lost\n", l->pid,
               l->collector, l->events_lost, l->buffers_lost);
    }
}

static void text_damage(FILE *out, const ltr_trace *t, const ltr_trace_info *in)
{
    uint64_t damage = in->summary.damage - in->forged;
    if (damage)
        fprintf(out, "\ndamage:      %" PRIu64 " problem(s)", damage);
    else
        fprintf(out, "\ndamage:      none");
    if (in->forged) /* listed below with the damage, not counted in it */
        fprintf(out, "; %" PRIu64 " record(s) another traced program wrote about a process, left out", in->forged);
    putc('\n', out);
    for (size_t i = 0; i < ltr_trace_damage_count(t); i++) {
        char line[400];
        ltr_damage_format(ltr_trace_damage_at(t, i), line, sizeof line);
        fprintf(out, "  %s\n", line);
    }
}

/* ---- JSON ---- */

static void jstr(FILE *out, const char *s) { ltr_print_json_string(out, s, strlen(s)); }

static void jkey(FILE *out, const char *k)
{
    jstr(out, k);
    putc(':', out);
}

static void json_kv(FILE *out, const ltr_trace *t, ltr_kv_list list)
{
    putc('{', out);
    const char *k, *v;
    for (size_t i = 0; ltr_trace_kv_at(t, list, i, &k, &v) == 0; i++) {
        if (i)
            putc(',', out);
        jkey(out, k);
        jstr(out, v);
    }
    putc('}', out);
}

static void json_summary(FILE *out, const ltr_trace *t, const ltr_trace_info *in)
{
    const ltr_trace_summary *s = &in->summary;
    fprintf(out, "{\"trace\":");
    jstr(out, ltr_trace_path(t));
    fprintf(out, ",\"version\":%u,\"file_size\":%" PRIu64 ",\"chunks\":%" PRIu64 ",\"complete\":%s",
           ltr_trace_version(t), s->file_size, s->chunks, s->complete ? "true" : "false");
    fprintf(out, ",\"events\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"symbols\":%" PRIu64
            ",\"events_layout_lost\":%" PRIu64, s->events, s->blocks, ltr_trace_symbol_entries(t),
            s->events_layout_lost);
    if (s->events)
        fprintf(out, ",\"first_ts\":%" PRIu64 ",\"last_ts\":%" PRIu64, s->first_ts, s->last_ts);
    fprintf(out, ",\"start\":");
    jstr(out, in->start);
    if (in->has_duration)
        fprintf(out, ",\"duration_ns\":%" PRIu64, in->duration_ns);
    fprintf(out, ",\"header\":");
    json_kv(out, t, LTR_KV_HEADER);
    fprintf(out, ",\"end\":");
    json_kv(out, t, LTR_KV_END);
}

static void json_processes(FILE *out, const ltr_trace *t)
{
    fprintf(out, ",\"processes\":[");
    for (size_t i = 0; i < ltr_trace_process_count(t); i++) {
        const ltr_process *p = ltr_trace_process_at(t, i);
        fprintf(out, "%s{\"pid\":%u,\"ppid\":%u,\"known\":%s,\"events\":%" PRIu64 ",\"exe\":", i ? "," : "",
               p->pid, p->ppid, p->known ? "true" : "false", p->events);
        jstr(out, p->exe);
        fprintf(out, ",\"argv\":[");
        for (uint32_t a = 0; a < p->argc; a++) {
            if (a)
                putc(',', out);
            jstr(out, p->argv[a]);
        }
        fprintf(out, "]}");
    }
    fprintf(out, "],\"providers\":[");
    for (size_t i = 0; i < ltr_trace_provider_count(t); i++) {
        const ltr_trace_provider *p = ltr_trace_provider_at(t, i);
        char g[37];
        ltr_guid_format(&p->guid, g);
        fprintf(out, "%s{\"guid\":\"%s\",\"name\":", i ? "," : "", g);
        jstr(out, p->name);
        fprintf(out, ",\"named\":%s,\"events\":%" PRIu64 "}", p->named ? "true" : "false", p->events);
    }
    putc(']', out);
}

static void json_counters(FILE *out, const ltr_trace *t)
{
    fprintf(out, ",\"collectors\":[");
    for (size_t i = 0; i < ltr_trace_collector_count(t); i++) {
        const ltr_collector_counters *c = ltr_trace_collector_at(t, i);
        fprintf(out, "%s{\"collector\":%u,\"name\":", i ? "," : "", c->collector);
        jstr(out, c->name);
        fprintf(out, ",\"buffer_size\":%u,\"buffers\":%u,\"events_written\":%" PRIu64 ",\"events_lost\":%" PRIu64
               ",\"events_overwritten\":%" PRIu64 ",\"buffers_written\":%" PRIu64
               ",\"buffers_lost\":%" PRIu64 ",\"buffers_overwritten\":%" PRIu64 ",\"shm_damage\":%" PRIu64
               ",\"metadata_lost\":%" PRIu64 ",\"events_unwritten\":%" PRIu64 "}",
               c->buffer_size, c->buffers, c->events_written, c->events_lost, c->events_overwritten,
               c->buffers_written, c->buffers_lost, c->buffers_overwritten, c->shm_damage, c->metadata_lost,
               c->events_unwritten);
    }
    fprintf(out, "],\"lost_per_process\":[");
    for (size_t i = 0; i < ltr_trace_process_lost_count(t); i++) {
        const ltr_process_lost *l = ltr_trace_process_lost_at(t, i);
        fprintf(out, "%s{\"pid\":%u,\"collector\":%u,\"events_lost\":%" PRIu64 ",\"buffers_lost\":%" PRIu64 "}",
               i ? "," : "", l->pid, l->collector, l->events_lost, l->buffers_lost);
    }
    putc(']', out);
}

static void json_damage(FILE *out, const ltr_trace *t, const ltr_trace_info *in)
{
    fprintf(out, ",\"damage_count\":%" PRIu64 ",\"forged_count\":%" PRIu64 ",\"damage\":[",
            in->summary.damage - in->forged, in->forged);
    for (size_t i = 0; i < ltr_trace_damage_count(t); i++) {
        const ltr_damage *d = ltr_trace_damage_at(t, i);
        fprintf(out, "%s{\"offset\":%" PRIu64 ",\"length\":%" PRIu64 ",\"chunk_seq\":%" PRId64
               ",\"count\":%" PRIu64 ",\"kind\":",
               i ? "," : "", d->offset, d->length, d->chunk_seq, d->count);
        jstr(out, ltr_damage_kind_name(d->kind));
        fprintf(out, ",\"detail\":");
        jstr(out, d->detail);
        putc('}', out);
    }
    fprintf(out, "]}\n");
}

int ltr_trace_info_scan(ltr_trace *t, ltr_trace_info *info, ltr_error *err)
{
    memset(info, 0, sizeof *info);
    int rc = ltr_trace_scan(t, &info->summary, err);
    if (rc < 0)
        return rc;
    iso_start(t, info->start, sizeof info->start);
    info->has_duration = duration(t, &info->summary, &info->duration_ns) == 0;
    info->forged = ltr_trace_forged_count(t);
    for (size_t i = 0; i < ltr_trace_collector_count(t); i++) {
        info->shm_damage += ltr_trace_collector_at(t, i)->shm_damage;
        info->metadata_lost += ltr_trace_collector_at(t, i)->metadata_lost;
    }
    return 0;
}

/* The text names executables, command lines and providers that the traced
 * programs, or whoever wrote the trace, chose: it is made whole, then shown
 * without a control character (ltr_shown_text), so that none acts on the
 * terminal it is read on. */
void ltr_trace_info_write_text(FILE *out, const ltr_trace *t, const ltr_trace_info *info)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    FILE *to = m ? m : out; /* out of memory: unfiltered rather than nothing */
    text_header(to, t, info);
    text_tables(to, t);
    text_counters(to, t);
    text_damage(to, t, info);
    if (m && fclose(m) == 0) {
        len = ltr_shown_text(text, len, text, true);
        fwrite(text, 1, len, out);
    }
    free(text);
}

void ltr_trace_info_write_json(FILE *out, const ltr_trace *t, const ltr_trace_info *info)
{
    json_summary(out, t, info);
    json_processes(out, t);
    json_counters(out, t);
    json_damage(out, t, info);
}
