/*
 * tests/analyze/test_decode.c — the analyzer's heap event decoder
 * (src/analyze/source.c) on hand-built events: fixed-size fields read at
 * their settled offsets (format version 1 traces), LEB128 fields (compact
 * encoding), a fixed field after a variable one (the reader's offsets are
 * used), layouts of other providers, and heap layouts it must refuse; the
 * fast path's varint decoding (varint.h) against the reader's; and the
 * shared header of the heap provider (base/heap_events.h) against the
 * documented contract.
 */
#include "analyze/internal.h"
#include "base/varint.h"
#include "base/heap_events.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

static ltr_trace_provider heap_provider(void)
{
    ltr_trace_provider p = {.name = LTR_HEAP_PROVIDER, .named = 1};
    ltr_guid_from_name(LTR_HEAP_PROVIDER, &p.guid);
    return p;
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static size_t put_leb(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        p[n] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
        v >>= 7;
        n++;
    } while (v);
    return n;
}

static void test_fixed_fields(void **state)
{
    (void)state;
    ltr_trace_provider prov = heap_provider();
    /* a Realloc whose fields come in the documented order, plus a field after them */
    const ltr_field fields[] = {{"old_address", LTR_TYPE_POINTER}, {"address", LTR_TYPE_POINTER},
                                {"size", LTR_TYPE_U64}, {"stack", LTR_TYPE_U32}, {"function", LTR_TYPE_U8}};
    ltr_layout l = {.id = 7, .provider = &prov, .event_id = LTR_HEAP_EV_REALLOC, .name = "Realloc",
                    .field_count = 5, .fields = fields};
    uint8_t payload[29];
    put_le(payload, 0x7f0000001000, 8);
    put_le(payload + 8, 0x7f0000002000, 8);
    put_le(payload + 16, 123456789012, 8);
    put_le(payload + 24, 42, 4);
    payload[28] = 3;
    const uint32_t offs[] = {0, 8, 16, 24, 28, 29};
    ltr_event ev = {.layout = &l, .payload = payload, .payload_size = sizeof payload, .field_offsets = offs};
    an_decoder *d = an_decoder_new();
    assert_non_null(d);
    an_heap_event h;
    for (int round = 0; round < 2; round++) { /* the second time from the layout cache */
        an_decode(d, &ev, &h);
        assert_int_equal(h.kind, AN_REALLOC);
        assert_int_equal(h.old_addr, 0x7f0000001000);
        assert_int_equal(h.addr, 0x7f0000002000);
        assert_int_equal(h.size, 123456789012);
        assert_int_equal(h.stack, 42);
    }
    an_decoder_free(d);
}

static void test_varint_fields(void **state)
{
    (void)state;
    ltr_trace_provider prov = heap_provider();
    const ltr_field fields[] = {{"address", LTR_TYPE_PVAR}, {"size", LTR_TYPE_UVAR},
                                {"stack", LTR_TYPE_UVAR}, {"function", LTR_TYPE_U8}};
    ltr_layout l = {.id = 1, .provider = &prov, .event_id = LTR_HEAP_EV_ALLOC, .name = "Alloc",
                    .field_count = 4, .fields = fields};
    uint8_t payload[32];
    uint32_t offs[5] = {0};
    const uint64_t values[3] = {0xffffffffffffffffull, 300, 1}; /* 10, 2 and 1 bytes */
    for (int i = 0; i < 3; i++)
        offs[i + 1] = offs[i] + (uint32_t)put_leb(payload + offs[i], values[i]);
    payload[offs[3]] = 1;
    offs[4] = offs[3] + 1;
    ltr_event ev = {.layout = &l, .payload = payload, .payload_size = offs[4], .field_offsets = offs};
    an_decoder *d = an_decoder_new();
    an_heap_event h;
    an_decode(d, &ev, &h);
    assert_int_equal(h.kind, AN_ALLOC);
    assert_true(h.addr == values[0]);
    assert_int_equal(h.size, 300);
    assert_int_equal(h.stack, 1);
    an_decoder_free(d);
}

/* A fixed field placed after a variable one is found through the reader's offsets. */
static void test_offsets_from_reader(void **state)
{
    (void)state;
    ltr_trace_provider prov = heap_provider();
    const ltr_field fields[] = {{"note", LTR_TYPE_STRING}, {"address", LTR_TYPE_U64}};
    ltr_layout l = {.id = 2, .provider = &prov, .event_id = LTR_HEAP_EV_FREE, .name = "Free",
                    .field_count = 2, .fields = fields};
    uint8_t payload[2 + 3 + 8] = {3, 0, 'a', 'b', 'c'};
    put_le(payload + 5, 0xabcdef, 8);
    const uint32_t offs[] = {0, 5, 13};
    ltr_event ev = {.layout = &l, .payload = payload, .payload_size = sizeof payload, .field_offsets = offs};
    an_decoder *d = an_decoder_new();
    an_heap_event h;
    an_decode(d, &ev, &h);
    assert_int_equal(h.kind, AN_FREE);
    assert_int_equal(h.addr, 0xabcdef);
    an_decoder_free(d);
}

static void test_other_and_bad_layouts(void **state)
{
    (void)state;
    ltr_trace_provider prov = heap_provider(), other = {.name = "Other", .named = 1};
    ltr_guid_from_name("Other", &other.guid);
    const ltr_field addr_only[] = {{"address", LTR_TYPE_POINTER}};
    const ltr_field signed_size[] = {{"address", LTR_TYPE_POINTER}, {"size", LTR_TYPE_I64},
                                     {"stack", LTR_TYPE_U32}};
    uint8_t payload[24] = {0};
    const uint32_t offs[] = {0, 8, 16, 20};
    ltr_layout not_heap = {.id = 1, .provider = &other, .event_id = LTR_HEAP_EV_ALLOC,
                           .field_count = 1, .fields = addr_only};
    ltr_layout no_size = {.id = 2, .provider = &prov, .event_id = LTR_HEAP_EV_ALLOC,
                          .field_count = 1, .fields = addr_only};
    ltr_layout bad_type = {.id = 3, .provider = &prov, .event_id = LTR_HEAP_EV_ALLOC,
                           .field_count = 3, .fields = signed_size};
    ltr_layout unknown_id = {.id = 4, .provider = &prov, .event_id = 9, .field_count = 1, .fields = addr_only};
    const struct { ltr_layout *l; an_heap_kind kind; } cases[] = {
        {&not_heap, AN_NOT_HEAP}, {&no_size, AN_BAD_HEAP}, {&bad_type, AN_BAD_HEAP}, {&unknown_id, AN_NOT_HEAP}};
    an_decoder *d = an_decoder_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ltr_event ev = {.layout = cases[i].l, .payload = payload, .payload_size = sizeof payload,
                        .field_offsets = offs};
        an_heap_event h;
        an_decode(d, &ev, &h);
        assert_int_equal(h.kind, cases[i].kind);
    }
    an_decoder_free(d);
}

/* The fast path's varint (base/varint.h) against the reader's
 * ltr_get_uvar on one buffer: same length (0 = refused) and, when accepted,
 * same value, for every cut `left` and every readable span beyond it. */
static void check_uvar_like_reader(const uint8_t *buf, size_t size)
{
    for (size_t left = 0; left <= size; left++) {
        uint64_t want = 0;
        size_t wn = ltr_get_uvar(buf, left, &want);
        for (size_t readable = left; readable <= size; readable++) {
            uint64_t got = 0;
            size_t gn = an_uvar(buf, left, readable, &got);
            assert_int_equal(gn, wn);
            if (wn)
                assert_true(got == want);
        }
    }
}

static void test_fast_varints(void **state)
{
    (void)state;
    /* every length from 1 to 10 bytes, followed by bytes with and without the continuation bit */
    for (int bits = 0; bits <= 64; bits++) {
        uint64_t v = bits == 64 ? UINT64_MAX : bits ? (1ull << bits) - 1 : 0;
        for (int fill = 0; fill < 2; fill++) {
            uint8_t buf[16];
            memset(buf, fill ? 0xff : 0x00, sizeof buf);
            put_leb(buf, v);
            check_uvar_like_reader(buf, sizeof buf);
            put_leb(buf, v ^ 0x5555555555555555ull);
            check_uvar_like_reader(buf, sizeof buf);
        }
    }
    /* malformed: continuation bits throughout, and a tenth byte that overflows */
    uint8_t runon[16];
    memset(runon, 0x80, sizeof runon);
    check_uvar_like_reader(runon, sizeof runon);
    runon[9] = 0x02;
    check_uvar_like_reader(runon, sizeof runon);
}

/* The shared names are docs/heap-events.md's, which never change: traces
 * written by earlier agents must still be read. */
static void test_heap_contract(void **state)
{
    (void)state;
    assert_string_equal(LTR_HEAP_PROVIDER, "Ltr.Heap");
    assert_int_equal(LTR_HEAP_EV_ALLOC, 1);
    assert_int_equal(LTR_HEAP_EV_FREE, 2);
    assert_int_equal(LTR_HEAP_EV_REALLOC, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_fields),
        cmocka_unit_test(test_varint_fields),
        cmocka_unit_test(test_offsets_from_reader),
        cmocka_unit_test(test_other_and_bad_layouts),
        cmocka_unit_test(test_fast_varints),
        cmocka_unit_test(test_heap_contract),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
