/*
 * cli/cmd-info.c — `ltr info TRACE [--json]`: what a trace holds. One scan of
 * the file (ltr_trace_scan, the reader's) collects the header, processes,
 * providers with event counts, the last counters and any damage; this file
 * only prints them, as text for people or one JSON object for scripts.
 */
#include "cli/cli.h"

#include <ltr/trace.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define USAGE "ltr info TRACE [--json]"

static void help(void)
{
    printf("usage: " USAGE "\n\n"
           "Shows what TRACE holds: the session settings (name, mode, buffers,\n"
           "providers, profiles), the host, start time and duration, the description,\n"
           "processes and providers with their event counts, the counters of events\n"
           "and buffers written, lost and overwritten per collector, events lost per\n"
           "process, damage found, and whether the trace is complete or cut short.\n\n"
           "options:\n"
           "  --json     print one JSON object instead of text\n"
           "  -h, --help this text\n\n"
           "exit status:\n"
           "  0  done (a trace cut short without damage is not an error)\n"
           "  1  the trace could not be opened or read (missing, not an ltr trace, I/O error)\n"
           "  2  bad usage\n"
           "  3  the trace is damaged: what could be read is shown, the damage is listed\n");
}

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
        const char *a = p->argv[i];
        int plain = *a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789-_./=:,+@%") == strlen(a);
        if (i)
            putc(' ', out);
        if (plain) {
            fputs(a, out);
            continue;
        }
        putc('\'', out);
        for (; *a; a++)
            fputs(*a == '\'' ? "'\\''" : (char[]){*a, 0}, out);
        putc('\'', out);
    }
}

/* ---- text ---- */

static void text_header(const ltr_trace *t, const ltr_trace_summary *s)
{
    char iso[64];
    iso_start(t, iso, sizeof iso);
    printf("trace:       %s\n", ltr_trace_path(t));
    printf("format:      version %u, %" PRIu64 " bytes, %" PRIu64 " chunks\n", ltr_trace_version(t),
           s->file_size, s->chunks);
    printf("state:       %s\n", s->complete ? "complete" : "cut short (no END chunk)");
    printf("session:     %s\n", hdr(t, "session.name"));
    printf("mode:        %s (trace kind %s)\n", hdr(t, "session.mode"), hdr(t, "trace.kind"));
    printf("buffers:     %s x %s bytes\n", hdr(t, "session.buffers"), hdr(t, "session.buffer_size"));
    printf("providers:   %s\n", hdr(t, "session.providers"));
    printf("profiles:    %s\n", hdr(t, "session.profiles"));
    printf("host:        %s (%s, %s CPUs, %s bytes of RAM)\n", hdr(t, "host.name"),
           hdr(t, "host.machine"), hdr(t, "host.cpus"), hdr(t, "host.memory"));
    printf("os:          %s\n", hdr(t, "host.os"));
    printf("kernel:      %s\n", hdr(t, "host.kernel"));
    printf("recorded by: ltr %s\n", hdr(t, "ltr.version"));
    printf("started:     %s\n", *iso ? iso : "-");
    uint64_t d;
    if (duration(t, s, &d) == 0)
        printf("duration:    %" PRIu64 ".%09" PRIu64 " s%s\n", d / 1000000000u, d % 1000000000u,
               s->complete ? "" : " (to the last event)");
    const char *desc = ltr_trace_kv(t, LTR_KV_END, "session.description");
    printf("description: %s\n", desc ? desc : "");
    printf("events:      %" PRIu64 " in %" PRIu64 " buffer blocks\n", s->events, s->blocks);
}

static void text_tables(const ltr_trace *t)
{
    printf("\nprocesses:\n  %-8s %-8s %-10s %s\n", "PID", "PPID", "EVENTS", "EXECUTABLE / COMMAND LINE");
    for (size_t i = 0; i < ltr_trace_process_count(t); i++) {
        const ltr_process *p = ltr_trace_process_at(t, i);
        printf("  %-8u %-8u %-10" PRIu64 " %s\n", p->pid, p->ppid, p->events,
               p->known ? p->exe : "(no process record)");
        if (p->argc) {
            printf("  %-28s ", "");
            print_cmdline(stdout, p);
            putchar('\n');
        }
    }
    printf("\nproviders:\n  %-36s %-10s %s\n", "GUID", "EVENTS", "NAME");
    for (size_t i = 0; i < ltr_trace_provider_count(t); i++) {
        const ltr_trace_provider *p = ltr_trace_provider_at(t, i);
        char g[37];
        ltr_guid_format(&p->guid, g);
        printf("  %-36s %-10" PRIu64 " %s\n", g, p->events, p->named ? p->name : "(no provider record)");
    }
}

static void text_counters(const ltr_trace *t)
{
    printf("\ncounters%s:\n", ltr_trace_has_counters(t) ? " (last COUNTERS chunk)" : ": none in the trace");
    for (size_t i = 0; i < ltr_trace_collector_count(t); i++) {
        const ltr_collector_counters *c = ltr_trace_collector_at(t, i);
        printf("  collector %u %s (%u x %u bytes)\n", c->collector, c->name, c->buffers, c->buffer_size);
        printf("    events:  %" PRIu64 " written, %" PRIu64 " lost, %" PRIu64 " overwritten\n",
               c->events_written, c->events_lost, c->events_overwritten);
        printf("    buffers: %" PRIu64 " written, %" PRIu64 " lost, %" PRIu64 " overwritten\n",
               c->buffers_written, c->buffers_lost, c->buffers_overwritten);
        if (c->shm_damage)
            printf("    shared memory damage: %" PRIu64 " place(s) skipped\n", c->shm_damage);
    }
    if (ltr_trace_process_lost_count(t))
        printf("\nlost per process:\n");
    for (size_t i = 0; i < ltr_trace_process_lost_count(t); i++) {
        const ltr_process_lost *l = ltr_trace_process_lost_at(t, i);
        printf("  pid %u, collector %u: %" PRIu64 " events lost, %" PRIu64 " buffers lost\n", l->pid,
               l->collector, l->events_lost, l->buffers_lost);
    }
}

static void text_damage(const ltr_trace *t, const ltr_trace_summary *s)
{
    if (s->damage)
        printf("\ndamage:      %" PRIu64 " problem(s)\n", s->damage);
    else
        printf("\ndamage:      none\n");
    for (size_t i = 0; i < ltr_trace_damage_count(t); i++) {
        char line[400];
        ltr_damage_format(ltr_trace_damage_at(t, i), line, sizeof line);
        printf("  %s\n", line);
    }
}

/* ---- JSON ---- */

static void jstr(const char *s) { ltr_print_json_string(stdout, s, strlen(s)); }

static void jkey(const char *k)
{
    jstr(k);
    putchar(':');
}

static void json_kv(const ltr_trace *t, ltr_kv_list list)
{
    putchar('{');
    const char *k, *v;
    for (size_t i = 0; ltr_trace_kv_at(t, list, i, &k, &v) == 0; i++) {
        if (i)
            putchar(',');
        jkey(k);
        jstr(v);
    }
    putchar('}');
}

static void json_summary(const ltr_trace *t, const ltr_trace_summary *s)
{
    char iso[64];
    iso_start(t, iso, sizeof iso);
    printf("{\"trace\":");
    jstr(ltr_trace_path(t));
    printf(",\"version\":%u,\"file_size\":%" PRIu64 ",\"chunks\":%" PRIu64 ",\"complete\":%s",
           ltr_trace_version(t), s->file_size, s->chunks, s->complete ? "true" : "false");
    printf(",\"events\":%" PRIu64 ",\"blocks\":%" PRIu64, s->events, s->blocks);
    if (s->events)
        printf(",\"first_ts\":%" PRIu64 ",\"last_ts\":%" PRIu64, s->first_ts, s->last_ts);
    printf(",\"start\":");
    jstr(iso);
    uint64_t d;
    if (duration(t, s, &d) == 0)
        printf(",\"duration_ns\":%" PRIu64, d);
    printf(",\"header\":");
    json_kv(t, LTR_KV_HEADER);
    printf(",\"end\":");
    json_kv(t, LTR_KV_END);
}

static void json_processes(const ltr_trace *t)
{
    printf(",\"processes\":[");
    for (size_t i = 0; i < ltr_trace_process_count(t); i++) {
        const ltr_process *p = ltr_trace_process_at(t, i);
        printf("%s{\"pid\":%u,\"ppid\":%u,\"known\":%s,\"events\":%" PRIu64 ",\"exe\":", i ? "," : "",
               p->pid, p->ppid, p->known ? "true" : "false", p->events);
        jstr(p->exe);
        printf(",\"argv\":[");
        for (uint32_t a = 0; a < p->argc; a++) {
            if (a)
                putchar(',');
            jstr(p->argv[a]);
        }
        printf("]}");
    }
    printf("],\"providers\":[");
    for (size_t i = 0; i < ltr_trace_provider_count(t); i++) {
        const ltr_trace_provider *p = ltr_trace_provider_at(t, i);
        char g[37];
        ltr_guid_format(&p->guid, g);
        printf("%s{\"guid\":\"%s\",\"name\":", i ? "," : "", g);
        jstr(p->name);
        printf(",\"named\":%s,\"events\":%" PRIu64 "}", p->named ? "true" : "false", p->events);
    }
    putchar(']');
}

static void json_counters(const ltr_trace *t)
{
    printf(",\"collectors\":[");
    for (size_t i = 0; i < ltr_trace_collector_count(t); i++) {
        const ltr_collector_counters *c = ltr_trace_collector_at(t, i);
        printf("%s{\"collector\":%u,\"name\":", i ? "," : "", c->collector);
        jstr(c->name);
        printf(",\"buffer_size\":%u,\"buffers\":%u,\"events_written\":%" PRIu64 ",\"events_lost\":%" PRIu64
               ",\"events_overwritten\":%" PRIu64 ",\"buffers_written\":%" PRIu64
               ",\"buffers_lost\":%" PRIu64 ",\"buffers_overwritten\":%" PRIu64 ",\"shm_damage\":%" PRIu64 "}",
               c->buffer_size, c->buffers, c->events_written, c->events_lost, c->events_overwritten,
               c->buffers_written, c->buffers_lost, c->buffers_overwritten, c->shm_damage);
    }
    printf("],\"lost_per_process\":[");
    for (size_t i = 0; i < ltr_trace_process_lost_count(t); i++) {
        const ltr_process_lost *l = ltr_trace_process_lost_at(t, i);
        printf("%s{\"pid\":%u,\"collector\":%u,\"events_lost\":%" PRIu64 ",\"buffers_lost\":%" PRIu64 "}",
               i ? "," : "", l->pid, l->collector, l->events_lost, l->buffers_lost);
    }
    putchar(']');
}

static void json_damage(const ltr_trace *t, const ltr_trace_summary *s)
{
    printf(",\"damage_count\":%" PRIu64 ",\"damage\":[", s->damage);
    for (size_t i = 0; i < ltr_trace_damage_count(t); i++) {
        const ltr_damage *d = ltr_trace_damage_at(t, i);
        printf("%s{\"offset\":%" PRIu64 ",\"length\":%" PRIu64 ",\"chunk_seq\":%" PRId64
               ",\"count\":%" PRIu64 ",\"kind\":",
               i ? "," : "", d->offset, d->length, d->chunk_seq, d->count);
        jstr(ltr_damage_kind_name(d->kind));
        printf(",\"detail\":");
        jstr(d->detail);
        putchar('}');
    }
    printf("]}\n");
}

static int info(ltr_trace *t, int json)
{
    ltr_trace_summary s;
    ltr_error err = {0};
    if (ltr_trace_scan(t, &s, &err) < 0)
        return cli_fail("info", "%s", err.msg);
    if (json) {
        json_summary(t, &s);
        json_processes(t);
        json_counters(t);
        json_damage(t, &s);
    } else {
        text_header(t, &s);
        text_tables(t);
        text_counters(t);
        text_damage(t, &s);
    }
    if (fflush(stdout) != 0)
        return cli_fail("info", "writing the output failed");
    uint64_t shm = 0;
    for (size_t i = 0; i < ltr_trace_collector_count(t); i++)
        shm += ltr_trace_collector_at(t, i)->shm_damage;
    if (shm)
        cli_warn("info", "while recording, %" PRIu64 " place(s) of the session's shared memory were found "
                 "written over (by a traced program) and skipped: events may be missing", shm);
    if (s.damage) {
        cli_warn("info", "%s is damaged (%" PRIu64 " problem(s)); what could be read is shown",
                 ltr_trace_path(t), s.damage);
        return 3;
    }
    return 0;
}

int cmd_info(int argc, char **argv)
{
    const char *path;
    int json;
    int rc = cli_trace_args("info", argc, argv, USAGE, help, &path, &json);
    if (rc >= 0)
        return rc;
    ltr_trace *t;
    ltr_error err = {0};
    if (ltr_trace_open(path, &t, &err) < 0)
        return cli_fail("info", "%s", err.msg);
    int status = info(t, json);
    ltr_trace_close(t);
    return status;
}
