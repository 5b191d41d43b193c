/*
 * recorder/layouts.c — `ltr providers --details`: the events of a provider
 * and their fields, as the layouts its programs registered in this session
 * say. The layouts are LAYOUT records of the session's shared metadata
 * region (docs/trace-format.md, "METADATA records"), which traced programs
 * write: read with every length checked against the region, so a program
 * that scribbled there gives a short answer, never a wild read.
 */
#include "recorder/internal.h"
#include "event/shm.h"
#include "prim/prim.h"

#include <ltr/trace.h>
#include <stdio.h>
#include <string.h>

/* Names come from traced programs: shown as every name of a trace is
 * (ltr_shown_text), so a control character (a terminal escape, a newline
 * that would forge a line, a C1 CSI, which C0's '?' alone let through to
 * root's terminal) or a bidirectional control becomes '?'. */
static void put_name(ltr_bytes *out, const uint8_t *p, size_t n)
{
    uint8_t *o = ltr_bytes_grow(out, n);
    if (o) /* '?' for a whole character: never longer */
        out->len -= n - ltr_shown_text((const char *)p, n, (char *)o, false);
}

/* One LAYOUT body as a line: "Name id=N event=E level=L opcode=O
 * keywords=0xK fields=a:u64,b:string". 0, or -1 if it is not whole. */
static int layout_line(const uint8_t *p, size_t len, const ltr_guid *want, ltr_bytes *out)
{
    if (len < 4 + 16 + 2 + 1 + 1 + 8 + 2 || memcmp(p + 4, want->b, 16))
        return -1;
    uint32_t id = ltr_get_u32(p);
    uint16_t event = ltr_get_u16(p + 20), nlen = ltr_get_u16(p + 32);
    uint8_t level = p[22], opcode = p[23];
    uint64_t kw = ltr_get_u64(p + 24);
    size_t at = 34;
    if (nlen > len - at)
        return -1;
    char line[512];
    put_name(out, p + at, nlen);
    int n = snprintf(line, sizeof line, " id=%u event=%u level=%u opcode=%u keywords=0x%llx fields=", id, event, level,
                     opcode, (unsigned long long)kw);
    at += nlen;
    if (at + 2 > len)
        return -1;
    uint16_t nfields = ltr_get_u16(p + at);
    at += 2;
    ltr_bytes_put_mem(out, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    for (uint16_t f = 0; f < nfields; f++) {
        if (at + 3 > len)
            return -1;
        uint8_t type = p[at];
        uint16_t fl = ltr_get_u16(p + at + 1);
        at += 3;
        if (fl > len - at)
            return -1;
        if (f)
            ltr_bytes_put_u8(out, ',');
        put_name(out, p + at, fl);
        n = snprintf(line, sizeof line, ":%s", ltr_type_name((ltr_type)type));
        ltr_bytes_put_mem(out, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        at += fl;
    }
    ltr_bytes_put_u8(out, '\n');
    return 0;
}

void rec_layouts_text(recorder *r, const ltr_guid *g, ltr_bytes *out)
{
    /* the layouts pulled so far, kept by the recorder: the region forgets what it read */
    rec_pull_metadata(r);
    const uint8_t *meta = r->layouts.data;
    uint64_t used = r->layouts.len;
    for (uint64_t off = 0; off + 8 <= used;) {
        uint16_t kind = ltr_get_u16(meta + off);
        uint32_t size = ltr_get_u32(meta + off + 4);
        if (size < 8 || size > used - off)
            break;
        if (kind == LTR_META_LAYOUT)
            layout_line(meta + off + 8, size - 8, g, out);
        off += size;
    }
    ltr_bytes_put_u8(out, 0);
}
