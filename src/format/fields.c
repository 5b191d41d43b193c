/*
 * format/fields.c — event payloads: checks a payload against its layout once,
 * while streaming, recording where each field starts; typed field access then
 * only reads inside those checked bounds.
 */
#include "format/reader.h"

#include <errno.h>
#include <stdlib.h>

int ltr_type_fixed_size(unsigned type)
{
    switch (type) {
    case LTR_TYPE_U8: case LTR_TYPE_I8: case LTR_TYPE_BOOL: return 1;
    case LTR_TYPE_U16: case LTR_TYPE_I16: return 2;
    case LTR_TYPE_U32: case LTR_TYPE_I32: return 4;
    case LTR_TYPE_U64: case LTR_TYPE_I64: case LTR_TYPE_F64: case LTR_TYPE_POINTER: return 8;
    case LTR_TYPE_STRING: case LTR_TYPE_BLOB:
    case LTR_TYPE_UVAR: case LTR_TYPE_IVAR: case LTR_TYPE_PVAR: case LTR_TYPE_PNEW: case LTR_TYPE_PREF: return 0;
    }
    return -1;
}

const char *ltr_type_name(ltr_type type)
{
    static const char *const names[] = {"?", "u8", "u16", "u32", "u64", "i8", "i16", "i32",
                                        "i64", "f64", "string", "blob", "pointer", "bool",
                                        "uvar", "ivar", "pvar", "pnew", "pref"};
    return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : "?";
}

/* Size of the field at p (size bytes left), or -1 if it runs past them. */
static int is_varint(ltr_type t) { return t == LTR_TYPE_UVAR || t == LTR_TYPE_IVAR || t == LTR_TYPE_PVAR; }

static int is_ref(ltr_type t) { return t == LTR_TYPE_PNEW || t == LTR_TYPE_PREF; }

/* A pnew or pref: uvar code, and when the code is 0 the address itself as a uvar. */
static int64_t ref_size(const uint8_t *p, size_t left)
{
    uint64_t code, unused;
    size_t n = ltr_get_uvar(p, left, &code);
    size_t m = n && code == 0 ? ltr_get_uvar(p + n, left - n, &unused) : 1;
    return n && m ? (int64_t)(n + (code == 0 ? m : 0)) : -1;
}

int64_t ltr_field_size(ltr_type type, const uint8_t *p, size_t left)
{
    int fixed = ltr_type_fixed_size(type);
    int64_t need;
    uint64_t unused;
    if (fixed > 0)
        need = fixed;
    else if (is_ref(type))
        need = ref_size(p, left);
    else if (is_varint(type))
        need = (int64_t)ltr_get_uvar(p, left, &unused) ?: -1; /* a bad varint is a short payload */
    else if (type == LTR_TYPE_STRING)
        need = left >= 2 ? 2 + (int64_t)ltr_get_u16(p) : -1;
    else
        need = left >= 4 ? 4 + (int64_t)ltr_get_u32(p) : -1;
    return need >= 0 && (uint64_t)need <= left ? need : -1;
}

const uint32_t *ltr_payload_offsets(ltr_trace *t, const ltr_layout_rec *l, const uint8_t *p,
                                    uint32_t size)
{
    unsigned n = l->pub.field_count;
    if (l->fixed_offsets)
        return l->fixed_offsets[n] <= size ? l->fixed_offsets : NULL;
    if (t->offcap < n + 1) {
        uint32_t *o = realloc(t->offsets, (n + 1) * sizeof *o);
        if (!o)
            return NULL;
        t->offsets = o;
        t->offcap = n + 1;
    }
    uint32_t off = 0;
    for (unsigned i = 0; i < n; i++) {
        t->offsets[i] = off;
        int64_t fs = ltr_field_size(l->fields[i].type, p + off, size - off);
        if (fs < 0)
            return NULL;
        off += (uint32_t)fs;
    }
    t->offsets[n] = off; /* bytes after the last field are ignored (room for growth) */
    return t->offsets;
}

/* A pnew or pref field's code, and the address when stored as itself. */
static void stored_ref(const ltr_event *ev, int index, ltr_refev *e, int k)
{
    const uint8_t *p = ev->payload + ev->field_offsets[index];
    size_t left = ev->payload_size - ev->field_offsets[index];
    size_t n = ltr_get_uvar(p, left, &e->code[k]); /* checked by the offsets */
    e->has[k] = 1;
    if (e->code[k] == 0)
        ltr_get_uvar(p + n, left - n, &e->addr[k]);
}

int ltr_event_refs(ltr_trace *t, const ltr_layout_rec *l)
{
    const ltr_event *ev = &t->ev;
    ltr_refev e = {0};
    if (l->pnew >= 0)
        stored_ref(ev, l->pnew, &e, 0);
    if (l->pref >= 0)
        stored_ref(ev, l->pref, &e, 1);
    if (l->msize >= 0) {
        const uint8_t *p = ev->payload + ev->field_offsets[l->msize];
        ltr_get_uvar(p, ev->payload_size - ev->field_offsets[l->msize], &e.size);
    }
    int rc = ltr_refseq_resolve_event(t->blk_refs, &e);
    ltr_refseq_commit_event(t->blk_refs, &e); /* unresolved values hold their places, unknown */
    t->ev.addresses[0] = e.addr[0];
    t->ev.addresses[1] = e.addr[1];
    return rc;
}

static int64_t sign_extend(uint64_t v, int bytes)
{
    int shift = 64 - 8 * bytes;
    return (int64_t)(v << shift) >> shift;
}

/* Varint fields read as the fixed type they stand for, so that every consumer
 * of values (printing, export, analysis) handles them without knowing them. */
static int varint_value(ltr_type type, const uint8_t *p, size_t len, ltr_trace_value *out)
{
    uint64_t v;
    if (!ltr_get_uvar(p, len, &v))
        return -EBADMSG;
    if (type == LTR_TYPE_IVAR) {
        out->type = LTR_TYPE_I64;
        out->i = ltr_unzigzag(v);
    } else {
        out->type = type == LTR_TYPE_PVAR ? LTR_TYPE_POINTER : LTR_TYPE_U64;
        out->u = v;
    }
    return 0;
}

int ltr_event_field(const ltr_event *ev, unsigned index, ltr_trace_value *out)
{
    const ltr_layout *l = ev->layout;
    if (!l || index >= l->field_count)
        return -ERANGE;
    uint32_t off = ev->field_offsets[index], end = ev->field_offsets[index + 1];
    if (end > ev->payload_size || off > end)
        return -EBADMSG;
    const uint8_t *p = ev->payload + off;
    ltr_type type = l->fields[index].type;
    out->type = type;
    int fixed = ltr_type_fixed_size(type);
    if (is_ref(type)) { /* resolved when the event was read */
        out->type = LTR_TYPE_POINTER;
        out->u = ev->addresses[type == LTR_TYPE_PREF];
        return 0;
    }
    if (is_varint(type))
        return varint_value(type, p, end - off, out);
    if (fixed > 0) {
        uint64_t v = 0;
        memcpy(&v, p, (size_t)fixed); /* little-endian host: low bytes first */
        if (type >= LTR_TYPE_I8 && type <= LTR_TYPE_I64)
            out->i = sign_extend(v, fixed);
        else if (type == LTR_TYPE_F64)
            memcpy(&out->f, &v, 8);
        else
            out->u = type == LTR_TYPE_BOOL ? v != 0 : v;
        return 0;
    }
    size_t hdr = type == LTR_TYPE_STRING ? 2 : 4;
    out->bytes.data = p + hdr;
    out->bytes.len = end - off - hdr;
    return 0;
}

int ltr_event_field_index(const ltr_event *ev, const char *name)
{
    const ltr_layout *l = ev->layout;
    for (unsigned i = 0; l && i < l->field_count; i++)
        if (!strcmp(l->fields[i].name, name))
            return (int)i;
    return -ENOENT;
}

static int field_by_name(const ltr_event *ev, const char *name, ltr_trace_value *v)
{
    int i = ltr_event_field_index(ev, name);
    return i < 0 ? i : ltr_event_field(ev, (unsigned)i, v);
}

static int is_unsigned(ltr_type t)
{
    return (t >= LTR_TYPE_U8 && t <= LTR_TYPE_U64) || t == LTR_TYPE_POINTER || t == LTR_TYPE_BOOL;
}

static int is_signed(ltr_type t) { return t >= LTR_TYPE_I8 && t <= LTR_TYPE_I64; }

int ltr_event_get_u64(const ltr_event *ev, const char *name, uint64_t *out)
{
    ltr_trace_value v;
    int rc = field_by_name(ev, name, &v);
    if (rc < 0)
        return rc;
    if (!is_unsigned(v.type))
        return -EINVAL;
    *out = v.u;
    return 0;
}

int ltr_event_get_i64(const ltr_event *ev, const char *name, int64_t *out)
{
    ltr_trace_value v;
    int rc = field_by_name(ev, name, &v);
    if (rc < 0)
        return rc;
    if (is_signed(v.type))
        *out = v.i;
    else if (is_unsigned(v.type) && v.u <= INT64_MAX)
        *out = (int64_t)v.u;
    else
        return -EINVAL;
    return 0;
}

int ltr_event_get_f64(const ltr_event *ev, const char *name, double *out)
{
    ltr_trace_value v;
    int rc = field_by_name(ev, name, &v);
    if (rc < 0)
        return rc;
    if (v.type == LTR_TYPE_F64)
        *out = v.f;
    else if (is_signed(v.type))
        *out = (double)v.i;
    else if (is_unsigned(v.type))
        *out = (double)v.u;
    else
        return -EINVAL;
    return 0;
}

static int get_bytes(const ltr_event *ev, const char *name, ltr_type want, const uint8_t **p, size_t *len)
{
    ltr_trace_value v;
    int rc = field_by_name(ev, name, &v);
    if (rc < 0)
        return rc;
    if (v.type != want)
        return -EINVAL;
    *p = v.bytes.data;
    *len = v.bytes.len;
    return 0;
}

int ltr_event_get_str(const ltr_event *ev, const char *name, const char **s, size_t *len)
{
    const uint8_t *p;
    int rc = get_bytes(ev, name, LTR_TYPE_STRING, &p, len);
    if (rc == 0)
        *s = (const char *)p;
    return rc;
}

int ltr_event_get_blob(const ltr_event *ev, const char *name, const uint8_t **p, size_t *len)
{
    return get_bytes(ev, name, LTR_TYPE_BLOB, p, len);
}
