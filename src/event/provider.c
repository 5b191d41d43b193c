/*
 * event/provider.c — the public provider API of include/ltr/provider.h:
 * registration against the per-user registry, event layouts registered once
 * per session into its metadata region, and the encoding of field values.
 */
#include "event/event.h"
#include "event/producer.h"
#include "base/records.h"
#include "prim/prim.h"

#include <errno.h>
#include <string.h>

const uint32_t ltr_never_enabled = 0;

static const ltr_field_desc marker_fields[] = {{"text", LTR_TYPE_STRING}};
LTR_PROVIDER_DEFINE(ltr_builtin_provider, "ltr");
LTR_EVENT_DEFINE(ltr_marker_event, ltr_builtin_provider, 1, LTR_LEVEL_CRITICAL, 0, "Marker",
                 marker_fields);

static void ensure_guid(ltr_provider *p)
{
    if (!p->guid_given) {
        ltr_guid_from_name(p->name, &p->guid);
        p->guid_given = 1;
    }
}

int ltr_provider_register(ltr_provider *p)
{
    ltr_error err;
    ensure_guid(p);
    ltr_registry *reg = ltr_registry_get(&err);
    if (!reg)
        return -err.code;
    /* A session that enables the provider has claimed its slot already: no
     * lock then. Claiming takes the registry's lock, for a bounded time: a
     * recorder stopped while it holds it must not hang the program. */
    ltr_reg_provider *slot = ltr_registry_find_provider(reg, &p->guid);
    if (!slot) {
        int rc = ltr_registry_lock_by(ltr_now_ns() + LTR_REGISTRY_WAIT_NS);
        if (rc)
            return rc;
        slot = ltr_registry_provider(reg, &p->guid, p->name);
        ltr_registry_unlock();
    }
    if (!slot)
        return -ENOSPC;
    p->internal = slot;
    __atomic_store_n(&p->state, (const uint32_t *)&slot->sessions, __ATOMIC_RELEASE);
    return 0;
}

void ltr_provider_unregister(ltr_provider *p)
{
    __atomic_store_n(&p->state, &ltr_never_enabled, __ATOMIC_RELEASE);
    p->internal = NULL;
}

bool ltr_event_enabled(const ltr_event_desc *d)
{
    const ltr_provider *p = d->provider;
    uint32_t mask = __atomic_load_n(p->state, __ATOMIC_RELAXED);
    const ltr_reg_provider *slot = p->internal;
    for (unsigned s = 0; mask && slot && s < LTR_MAX_SESSIONS; s++)
        if ((mask & (1u << s)) && ltr_reg_wants(slot, s, d->level, d->keywords))
            return true;
    return false;
}

/* ---- layouts -------------------------------------------------------------- */

size_t ltr_event_layout_records(ltr_event_desc *d, uint32_t id, uint32_t pid, ltr_bytes *b)
{
    ltr_provider *p = d->provider;
    ensure_guid(p);
    size_t rec = ltr_bytes_record_begin(b, LTR_META_PROVIDER);
    ltr_bytes_put_mem(b, p->guid.b, 16);
    ltr_bytes_put_str(b, p->name);
    ltr_bytes_put_u32(b, pid);
    ltr_bytes_record_end(b, rec);
    size_t lay = ltr_bytes_record_begin(b, LTR_META_LAYOUT);
    ltr_bytes_put_u32(b, id);
    ltr_bytes_put_mem(b, p->guid.b, 16);
    ltr_bytes_put_u16(b, d->id);
    ltr_bytes_put_u8(b, d->level);
    ltr_bytes_put_u8(b, d->opcode);
    ltr_bytes_put_u64(b, d->keywords);
    ltr_bytes_put_str(b, d->name);
    ltr_bytes_put_u16(b, d->field_count);
    for (uint16_t i = 0; i < d->field_count; i++) {
        ltr_bytes_put_u8(b, (uint8_t)d->fields[i].type);
        ltr_bytes_put_str(b, d->fields[i].name);
    }
    ltr_bytes_put_u32(b, pid);
    ltr_bytes_record_end(b, lay);
    return lay;
}

static int append_layout(ltr_attach *a, ltr_event_desc *d, uint32_t id)
{
    ltr_bytes b = {0};
    size_t lay = ltr_event_layout_records(d, id, a->pid, &b);
    int rc = b.failed ? -ENOMEM : ltr_producer_meta_append(a, b.data, (uint32_t)lay);
    if (!rc)
        rc = ltr_producer_meta_append(a, b.data + lay, (uint32_t)(b.len - lay));
    ltr_bytes_free(&b);
    return rc;
}

/* The layout id of d in the session of attachment a, registering it once
 * per process. 0 on failure. A fork child describes its layouts again,
 * under ids of its own (the cache's key holds the pid the attachment was
 * made by): its LAYOUT records name it, and a memory-mode recorder that let
 * its parent's go with the parent (recorder/kept.c) still has them. */
static uint32_t layout_id(ltr_event_desc *d, ltr_attach *a, unsigned s)
{
    uint64_t inc = atomic_load_explicit(&a->incarnation, memory_order_relaxed);
    uint32_t key = inc ? (uint32_t)inc ^ a->pid * 0x9e3779b1u : 0;
    key += inc && !key; /* 0 is an empty cache's */
    uint64_t cached = __atomic_load_n(&d->layout_cache[s], __ATOMIC_ACQUIRE);
    if (cached >> 32 == key)
        return (uint32_t)cached;
    ensure_guid(d->provider);
    uint32_t id = atomic_fetch_add(&a->shm->next_layout_id, 1) + 1;
    if (append_layout(a, d, id) != 0)
        return 0;
    /* Two threads may race here; both layouts are valid, the later one is cached. */
    __atomic_store_n(&d->layout_cache[s], (uint64_t)key << 32 | id, __ATOMIC_RELEASE);
    return id;
}

uint32_t ltr_event_layout_id(ltr_event_desc *d, ltr_attach *a, unsigned s)
{
    return layout_id(d, a, s);
}

/* ---- encoding ------------------------------------------------------------- */

static size_t fixed_size(ltr_type t)
{
    switch (t) {
    case LTR_TYPE_U8: case LTR_TYPE_I8: case LTR_TYPE_BOOL: return 1;
    case LTR_TYPE_U16: case LTR_TYPE_I16: return 2;
    case LTR_TYPE_U32: case LTR_TYPE_I32: return 4;
    case LTR_TYPE_U64: case LTR_TYPE_I64: case LTR_TYPE_F64: case LTR_TYPE_POINTER: return 8;
    default: return 0;
    }
}

static size_t value_len(const ltr_value *v)
{
    if (v->type == LTR_TYPE_STRING) {
        size_t n = v->len == UINT32_MAX ? (v->v.p ? strlen(v->v.p) : 0) : v->len;
        return n > 65535 ? 65535 : n;
    }
    return v->len;
}

static bool is_varint(ltr_type t) { return t == LTR_TYPE_UVAR || t == LTR_TYPE_IVAR || t == LTR_TYPE_PVAR; }

/* What a varint field stores: the value, zigzagged if signed. */
static uint64_t varint_bits(const ltr_value *v)
{
    return v->type == LTR_TYPE_IVAR ? ltr_zigzag(v->v.i) : v->v.u;
}

/* Payload size, or -1 when the values do not match the fields. */
static long payload_size(const ltr_event_desc *d, const ltr_value *v, size_t n)
{
    if (n != d->field_count)
        return -1;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].type != d->fields[i].type)
            return -1;
        if (v[i].type == LTR_TYPE_STRING)
            total += 2 + value_len(&v[i]);
        else if (v[i].type == LTR_TYPE_BLOB)
            total += 4 + (size_t)v[i].len;
        else if (is_varint(v[i].type))
            total += ltr_uvar_len(varint_bits(&v[i]));
        else
            total += fixed_size(v[i].type);
        if (total > (size_t)UINT32_MAX / 2)
            return (long)UINT32_MAX / 2;
    }
    return (long)total;
}

static void encode(uint8_t *p, const ltr_value *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = value_len(&v[i]);
        if (is_varint(v[i].type)) {
            p += ltr_put_uvar(p, varint_bits(&v[i]));
            continue;
        }
        switch (v[i].type) {
        case LTR_TYPE_STRING:
            ltr_put_u16(p, (uint16_t)len);
            if (len)
                memcpy(p + 2, v[i].v.p, len);
            p += 2 + len;
            break;
        case LTR_TYPE_BLOB:
            ltr_put_u32(p, (uint32_t)len);
            if (len)
                memcpy(p + 4, v[i].v.p, len);
            p += 4 + len;
            break;
        default: {
            /* Little-endian: the low bytes come first. Constant-size copies
             * compile to single stores; a variable one is a call (15% of the
             * write path in bench/write-path.sh). */
            size_t w = fixed_size(v[i].type);
            if (w == 8)
                memcpy(p, &v[i].v.u, 8);
            else if (w == 4)
                memcpy(p, &v[i].v.u, 4);
            else if (w == 2)
                memcpy(p, &v[i].v.u, 2);
            else
                memcpy(p, &v[i].v.u, 1);
            p += w;
        }
        }
    }
}

/* ---- writing -------------------------------------------------------------- */

static int write_one(ltr_attach *a, unsigned s, unsigned c, ltr_event_desc *d, const ltr_value *v,
                     size_t n, long payload, uint64_t ts)
{
    if (payload > (long)LTR_MAX_EVENT_PAYLOAD) {
        ltr_producer_count_lost(a, c);
        return -ENOSPC;
    }
    uint32_t id = layout_id(d, a, s);
    if (!id) {
        ltr_producer_count_lost(a, c);
        return -ENOSPC;
    }
    bool lost;
    ltr_cevent_in in = {.layout = id, .payload = (uint32_t)payload, .ts = ts};
    uint8_t *p = ltr_producer_reserve_event(a, s, c, &in, &lost);
    if (!p)
        return lost ? -ENOSPC : -ESRCH;
    encode(p, v, n);
    return ltr_producer_commit() ? 0 : -ENOSPC;
}

/* The session runs but this process could not attach: the event is lost, and
 * counted in the registry, the one place both sides share. */
static int count_unattached(ltr_registry *reg, unsigned s, unsigned c)
{
    ltr_event_count_unattached(reg, s, c);
    return -ENOSPC;
}

void ltr_event_count_unattached(ltr_registry *reg, unsigned s, unsigned c)
{
    atomic_fetch_add_explicit(&reg->sessions[s].unattached_lost[c & 3], 1, memory_order_relaxed);
    ltr_producer_note_unattached(s, c);
}

int ltr_event_write_values(ltr_event_desc *d, const ltr_value *values, size_t n,
                           ltr_write_result *result)
{
    ltr_write_result res = {0, 0};
    const ltr_provider *p = d->provider;
    uint32_t mask = __atomic_load_n(p->state, __ATOMIC_RELAXED);
    const ltr_reg_provider *slot = p->internal;
    long payload = payload_size(d, values, n);
    int rc = 0;
    if (payload < 0)
        rc = -EINVAL;
    ltr_error err;
    ltr_registry *reg = mask && !rc ? ltr_registry_get(&err) : NULL;
    uint64_t ts = reg ? ltr_now_ns() : 0;
    for (unsigned s = 0; reg && slot && s < LTR_MAX_SESSIONS && (mask >> s); s++) {
        if (!(mask & (1u << s)) || !ltr_reg_wants(slot, s, d->level, d->keywords))
            continue;
        bool unreachable;
        unsigned c = atomic_load(&slot->per[s].collector);
        ltr_attach *a = ltr_producer_session(reg, s, &unreachable);
        int w = a ? write_one(a, s, c, d, values, n, payload, ts)
                  : unreachable ? count_unattached(reg, s, c) : -ESRCH;
        if (w == 0)
            res.sessions_written++;
        else if (w == -ENOSPC)
            res.sessions_lost++;
        if (w && !rc)
            rc = w == -ESRCH ? 0 : w; /* a session that just ended is not an error */
    }
    if (result)
        *result = res;
    return rc;
}

void ltr_flush_thread(void)
{
    ltr_producer_flush_thread();
}
