/*
 * format/print.c — events as one line of text or one JSON object, for `ltr
 * dump` and every later tool that prints events. Written for volume (millions
 * of lines): no printf on the hot path, the stream locked once per event.
 * Strings are escaped so a line stays one line and JSON stays valid whatever
 * bytes a payload holds.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* fwrite_unlocked: the stream is locked once per event */
#endif
#include "format/reader.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

static void put_mem(FILE *out, const void *p, size_t n) { fwrite_unlocked(p, 1, n, out); }
static void put_s(FILE *out, const char *s) { put_mem(out, s, strlen(s)); }

static void put_u64(FILE *out, uint64_t v)
{
    char buf[24], *p = buf + sizeof buf;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put_mem(out, p, (size_t)(buf + sizeof buf - p));
}

static void put_i64(FILE *out, int64_t v)
{
    if (v < 0) {
        putc_unlocked('-', out);
        put_u64(out, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u64(out, (uint64_t)v);
    }
}

static void put_hex(FILE *out, const uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        putc_unlocked(digits[p[i] >> 4], out);
        putc_unlocked(digits[p[i] & 15], out);
    }
}

static void put_pointer(FILE *out, uint64_t v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
    put_mem(out, buf, (size_t)n);
}

/* Shortest "%.*g" that reads back as the same double. */
static void put_f64(FILE *out, double v)
{
    char buf[40];
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    put_mem(out, buf, (size_t)n);
}

void ltr_print_seconds(FILE *out, uint64_t ts, uint64_t origin_ns)
{
    uint64_t d = ts >= origin_ns ? ts - origin_ns : origin_ns - ts;
    char buf[40];
    int n = snprintf(buf, sizeof buf, "%s%llu.%09llu", ts >= origin_ns ? "" : "-",
                     (unsigned long long)(d / 1000000000u), (unsigned long long)(d % 1000000000u));
    put_mem(out, buf, (size_t)n);
}

/* Length of the valid UTF-8 sequence at p (n bytes left), or 0 if invalid. */
static size_t utf8_len(const uint8_t *p, size_t n)
{
    uint8_t c = p[0];
    size_t len;
    uint32_t min, cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, min = 0x80, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, min = 0x800, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, min = 0x10000, cp = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* A simple escape for a control or quote character, or NULL. */
static const char *short_escape(uint8_t c)
{
    switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    }
    return NULL;
}

/* Whether the character of len bytes at p is one that valid UTF-8 carries
 * but a terminal acts on or that reorders the text after it: a C1 control
 * (U+0080..U+009F: U+009B is CSI) or a bidirectional control (U+202A..U+202E,
 * U+2066..U+2069). The strings printed come from traced programs. */
static bool acts(const uint8_t *p, size_t len)
{
    if (len == 2)
        return p[0] == 0xc2 && p[1] <= 0x9f;
    if (len != 3 || p[0] != 0xe2)
        return false;
    return (p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xae) || (p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9);
}

/* Escaped bytes: valid UTF-8 copied, the rest escaped (and the characters
 * acts() names); json selects \u00XX and \ufffd over the text form's \xNN. */
static void put_escaped(FILE *out, const uint8_t *p, size_t n, int json)
{
    char buf[8];
    for (size_t i = 0; i < n;) {
        size_t run = 0; /* plain printable ASCII goes out in one piece */
        while (i + run < n && p[i + run] >= 0x20 && p[i + run] < 0x7f && p[i + run] != '"' &&
               p[i + run] != '\\')
            run++;
        if (run) {
            put_mem(out, p + i, run);
            i += run;
            continue;
        }
        uint8_t c = p[i];
        size_t len = utf8_len(p + i, n - i);
        const char *esc = c < 0x80 ? short_escape(c) : NULL;
        if (esc) {
            put_s(out, esc);
        } else if (len == 0 || c < 0x20 || c == 0x7f) {
            if (json && len == 0)
                put_s(out, "\\ufffd");
            else
                put_mem(out, buf, (size_t)snprintf(buf, sizeof buf, json ? "\\u%04x" : "\\x%02x", c));
            len = 1;
        } else if (acts(p + i, len)) {
            uint32_t cp = len == 2 ? (uint32_t)(p[i] & 0x1f) << 6 | (p[i + 1] & 0x3f)
                                   : (uint32_t)(p[i] & 0x0f) << 12 | (uint32_t)(p[i + 1] & 0x3f) << 6 | (p[i + 2] & 0x3f);
            if (json)
                put_mem(out, buf, (size_t)snprintf(buf, sizeof buf, "\\u%04x", (unsigned)cp));
            else
                for (size_t k = 0; k < len; k++)
                    put_mem(out, buf, (size_t)snprintf(buf, sizeof buf, "\\x%02x", p[i + k]));
        } else {
            put_mem(out, p + i, len);
        }
        i += len;
    }
}

void ltr_print_json_string(FILE *out, const void *s, size_t len)
{
    putc_unlocked('"', out);
    put_escaped(out, s, len, 1);
    putc_unlocked('"', out);
}

static void put_value(FILE *out, const ltr_trace_value *v, int json)
{
    switch (v->type) {
    case LTR_TYPE_I8: case LTR_TYPE_I16: case LTR_TYPE_I32: case LTR_TYPE_I64:
        put_i64(out, v->i);
        break;
    case LTR_TYPE_F64:
        if (json && !isfinite(v->f))
            put_s(out, isnan(v->f) ? "\"NaN\"" : v->f > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        else
            put_f64(out, v->f);
        break;
    case LTR_TYPE_STRING:
        putc_unlocked('"', out);
        put_escaped(out, v->bytes.data, v->bytes.len, json);
        putc_unlocked('"', out);
        break;
    case LTR_TYPE_BLOB:
        if (json)
            putc_unlocked('"', out);
        put_hex(out, v->bytes.data, v->bytes.len);
        if (json)
            putc_unlocked('"', out);
        break;
    case LTR_TYPE_POINTER:
        if (json)
            putc_unlocked('"', out);
        put_pointer(out, v->u);
        if (json)
            putc_unlocked('"', out);
        break;
    case LTR_TYPE_BOOL:
        put_s(out, v->u ? "true" : "false");
        break;
    default:
        put_u64(out, v->u);
        break;
    }
}

static void put_name(FILE *out, const char *s, int json)
{
    if (json)
        ltr_print_json_string(out, s, strlen(s));
    else
        put_escaped(out, (const uint8_t *)s, strlen(s), 0);
}

static const char *provider_name(const ltr_event *ev)
{
    return ev->layout->provider ? ev->layout->provider->name : "?";
}

static int finish(FILE *out)
{
    int bad = ferror(out);
    funlockfile(out);
    return bad ? -EIO : 0;
}

int ltr_event_print_text(FILE *out, const ltr_event *ev, uint64_t origin_ns)
{
    const ltr_layout *l = ev->layout;
    flockfile(out);
    ltr_print_seconds(out, ev->ts, origin_ns);
    putc_unlocked(' ', out);
    put_u64(out, ev->pid);
    putc_unlocked('/', out);
    put_u64(out, ev->tid);
    putc_unlocked(' ', out);
    put_name(out, provider_name(ev), 0);
    putc_unlocked('/', out);
    put_name(out, l->name, 0);
    for (unsigned i = 0; i < l->field_count; i++) {
        ltr_trace_value v;
        if (ltr_event_field(ev, i, &v) < 0)
            break;
        putc_unlocked(' ', out);
        put_name(out, l->fields[i].name, 0);
        putc_unlocked('=', out);
        put_value(out, &v, 0);
    }
    return finish(out);
}

static void put_key_u64(FILE *out, const char *key, uint64_t v)
{
    put_s(out, key);
    put_u64(out, v);
}

int ltr_event_print_json(FILE *out, const ltr_event *ev, uint64_t origin_ns)
{
    const ltr_layout *l = ev->layout;
    flockfile(out);
    put_s(out, "{\"t\":");
    ltr_print_seconds(out, ev->ts, origin_ns);
    put_key_u64(out, ",\"ts\":", ev->ts);
    put_key_u64(out, ",\"pid\":", ev->pid);
    put_key_u64(out, ",\"tid\":", ev->tid);
    put_key_u64(out, ",\"collector\":", ev->collector);
    put_s(out, ",\"provider\":");
    put_name(out, provider_name(ev), 1);
    put_s(out, ",\"event\":");
    put_name(out, l->name, 1);
    put_key_u64(out, ",\"id\":", l->event_id);
    put_key_u64(out, ",\"level\":", l->level);
    put_s(out, ",\"fields\":{");
    for (unsigned i = 0; i < l->field_count; i++) {
        ltr_trace_value v;
        if (ltr_event_field(ev, i, &v) < 0)
            break;
        if (i)
            putc_unlocked(',', out);
        put_name(out, l->fields[i].name, 1);
        putc_unlocked(':', out);
        put_value(out, &v, 1);
    }
    put_s(out, "}}");
    return finish(out);
}
