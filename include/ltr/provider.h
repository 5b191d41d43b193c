/*
 * ltr/provider.h — define providers and write events from a C program.
 *
 * A provider is a named source of events (its GUID is derived from the name
 * the way ETW TraceLogging derives one, or given). An event has an id, a level
 * (1 critical .. 5 verbose), keyword bits and typed fields. Sessions started
 * with `ltr start --provider NAME[:KEYWORDS[:LEVEL]]` receive the events they
 * asked for; enablement changes reach a running process at once.
 *
 *     LTR_PROVIDER_DEFINE(my_provider, "MyCompany.MyService");
 *     static const ltr_field_desc req_fields[] = {
 *         {"bytes", LTR_TYPE_U64}, {"path", LTR_TYPE_STRING}};
 *     LTR_EVENT_DEFINE(ev_request, my_provider, 1, LTR_LEVEL_INFO, 0x1, "Request", req_fields);
 *
 *     ltr_provider_register(&my_provider);
 *     LTR_WRITE(&ev_request, LTR_U64(n), LTR_STR(path));
 *     ltr_provider_unregister(&my_provider);
 *
 * When no session enables the provider, LTR_WRITE costs a load of the
 * provider's state pointer, a load of the state word and a branch.
 * Writing never blocks and never takes a lock: with no free buffer the event
 * is dropped and counted as lost.
 */
#ifndef LTR_PROVIDER_H
#define LTR_PROVIDER_H

#include <ltr/common.h>

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LTR_MAX_SESSIONS_PER_USER 32

typedef struct ltr_field_desc {
    const char *name;
    ltr_type type;
} ltr_field_desc;

typedef struct ltr_provider {
    const char *name;
    ltr_guid guid;
    int guid_given;               /* 0: derived from the name at registration */
    const uint32_t *volatile state; /* internal: bit s = enabled in session slot s */
    void *internal;
    uint64_t meta_written;        /* internal: sessions that hold its PROVIDER record */
} ltr_provider;

typedef struct ltr_event_desc {
    ltr_provider *provider;
    uint16_t id;
    uint8_t level;
    uint8_t opcode;
    uint64_t keywords;
    const char *name;
    const ltr_field_desc *fields;
    uint16_t field_count;
    /* internal: one entry per session slot of the registry (whose count,
     * LTR_MAX_SESSIONS, lib/provider-abi.c asserts to be this one) */
    uint64_t layout_cache[LTR_MAX_SESSIONS_PER_USER];
} ltr_event_desc;

/* A field value. Use the LTR_U64(), LTR_STR()... constructors. */
typedef struct ltr_value {
    ltr_type type;
    uint32_t len; /* strings and blobs */
    union {
        uint64_t u;
        int64_t i;
        double f;
        const void *p;
    } v;
} ltr_value;

LTR_API extern const uint32_t ltr_never_enabled;

#define LTR_PROVIDER_DEFINE(var, pname) \
    ltr_provider var = {.name = (pname), .state = &ltr_never_enabled}
/* guid: an ltr_guid initializer, e.g. {{0x3a, 0x1f, ...}} */
#define LTR_PROVIDER_DEFINE_GUID(var, pname, ...) \
    ltr_provider var = {.name = (pname), .guid = __VA_ARGS__, .guid_given = 1, .state = &ltr_never_enabled}
#define LTR_EVENT_DEFINE(var, prov, eid, lvl, kw, ename, field_array)                        \
    ltr_event_desc var = {.provider = &(prov), .id = (eid), .level = (lvl), .keywords = (kw), \
                          .name = (ename), .fields = (field_array),                         \
                          .field_count = sizeof(field_array) / sizeof((field_array)[0])}
#define LTR_EVENT_DEFINE_NOFIELDS(var, prov, eid, lvl, kw, ename) \
    ltr_event_desc var = {.provider = &(prov), .id = (eid), .level = (lvl), .keywords = (kw), .name = (ename)}

#define LTR_U8(x) ((ltr_value){.type = LTR_TYPE_U8, .v.u = (uint8_t)(x)})
#define LTR_U16(x) ((ltr_value){.type = LTR_TYPE_U16, .v.u = (uint16_t)(x)})
#define LTR_U32(x) ((ltr_value){.type = LTR_TYPE_U32, .v.u = (uint32_t)(x)})
#define LTR_U64(x) ((ltr_value){.type = LTR_TYPE_U64, .v.u = (uint64_t)(x)})
#define LTR_I8(x) ((ltr_value){.type = LTR_TYPE_I8, .v.i = (int8_t)(x)})
#define LTR_I16(x) ((ltr_value){.type = LTR_TYPE_I16, .v.i = (int16_t)(x)})
#define LTR_I32(x) ((ltr_value){.type = LTR_TYPE_I32, .v.i = (int32_t)(x)})
#define LTR_I64(x) ((ltr_value){.type = LTR_TYPE_I64, .v.i = (int64_t)(x)})
#define LTR_F64(x) ((ltr_value){.type = LTR_TYPE_F64, .v.f = (double)(x)})
#define LTR_BOOL(x) ((ltr_value){.type = LTR_TYPE_BOOL, .v.u = !!(x)})
#define LTR_PTR(x) ((ltr_value){.type = LTR_TYPE_POINTER, .v.u = (uint64_t)(uintptr_t)(x)})
/* Variable-length integers: smaller in the trace when values are small. */
#define LTR_UVAR(x) ((ltr_value){.type = LTR_TYPE_UVAR, .v.u = (uint64_t)(x)})
#define LTR_IVAR(x) ((ltr_value){.type = LTR_TYPE_IVAR, .v.i = (int64_t)(x)})
#define LTR_PVAR(x) ((ltr_value){.type = LTR_TYPE_PVAR, .v.u = (uint64_t)(uintptr_t)(x)})
#define LTR_STR(s) ((ltr_value){.type = LTR_TYPE_STRING, .len = UINT32_MAX, .v.p = (s)})
#define LTR_STRN(s, n) ((ltr_value){.type = LTR_TYPE_STRING, .len = (uint32_t)(n), .v.p = (s)})
#define LTR_BLOB(ptr, n) ((ltr_value){.type = LTR_TYPE_BLOB, .len = (uint32_t)(n), .v.p = (ptr)})

/* Registers a provider with this user's sessions. Returns 0, or a negative
 * errno (the provider then stays disabled, writes cost nothing). It never
 * waits on ltr for more than a quarter of a second: a recorder that holds the
 * registry's lock longer (stopped) makes it fail with -ETIMEDOUT. */
LTR_API int ltr_provider_register(ltr_provider *p);
LTR_API void ltr_provider_unregister(ltr_provider *p);

/* True when some session enables the provider at all. */
static inline bool ltr_provider_enabled(const ltr_provider *p)
{
    return __builtin_expect(__atomic_load_n(p->state, __ATOMIC_RELAXED) != 0, 0);
}
/* True when some session wants this event (level and keywords). */
LTR_API bool ltr_event_enabled(const ltr_event_desc *d);

/* Result of a write, for programs and tests that count. */
typedef struct ltr_write_result {
    uint32_t sessions_written; /* sessions the event went into */
    uint32_t sessions_lost;    /* sessions that wanted it but it was dropped (counted there) */
} ltr_write_result;

/* Writes an event with `n` values in the order of the event's fields. Values
 * whose type differs from the field's make the call return -EINVAL and write
 * nothing. Returns 0 when the event went everywhere it was wanted. */
LTR_API int ltr_event_write_values(ltr_event_desc *d, const ltr_value *values, size_t n,
                                   ltr_write_result *result);

#define LTR_WRITE(desc, ...)                                                           \
    do {                                                                               \
        if (ltr_provider_enabled((desc)->provider)) {                                  \
            const ltr_value ltr_v_[] = {__VA_ARGS__};                                  \
            ltr_event_write_values((desc), ltr_v_, sizeof ltr_v_ / sizeof ltr_v_[0], NULL); \
        }                                                                              \
    } while (0)
#define LTR_WRITE0(desc)                                             \
    do {                                                             \
        if (ltr_provider_enabled((desc)->provider))                  \
            ltr_event_write_values((desc), NULL, 0, NULL);           \
    } while (0)

/* Hands this thread's partly filled buffers to the recorder now (they are
 * handed over anyway when the thread or the process ends). */
LTR_API void ltr_flush_thread(void);

#ifdef __cplusplus
}
#endif
#endif
