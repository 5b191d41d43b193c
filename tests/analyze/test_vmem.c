/*
 * tests/analyze/test_vmem.c — the mapping model (src/analyze/vmem.h) on
 * hand-made sequences: a partial munmap cuts a range (both ends, a hole in
 * the middle: two ranges), an munmap across several ranges, mremap moving
 * and growing under its own stack and keeping the old range's kind, MAP_FIXED
 * over older ranges, unmaps of bytes never seen mapped counted apart, the
 * window (events after its end ignored, ranges mapped before it not
 * "inside"), the ranking by stack; and the same events through the model's
 * sink ops (AN_OP_VM_*) in time order whatever the order they come in.
 */
#include "analyze/model.h"
#include "analyze/sink.h"
#include "analyze/vmem.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define K 1024ull
#define END UINT64_MAX

static uint64_t held(const an_vmem *v, uint32_t pid)
{
    const an_vm_proc *p = an_vmem_proc(v, pid);
    return p ? an_vmem_outstanding(p) : 0;
}

static void test_partial_unmap(void **state)
{
    (void)state;
    an_vmem v;
    an_vmem_init(&v, 0, END);
    an_vmem_map(&v, 1, 10, 0x100000, 256 * K, 7, AN_VM_ANON);
    an_vmem_unmap(&v, 1, 20, 0x100000 + 96 * K, 64 * K); /* a hole */
    const an_vm_proc *p = an_vmem_proc(&v, 1);
    assert_int_equal(p->n, 2);
    assert_int_equal(held(&v, 1), 192 * K);
    assert_int_equal(p->r[0].end, 0x100000 + 96 * K);
    assert_int_equal(p->r[1].start, 0x100000 + 160 * K);
    an_vmem_unmap(&v, 1, 30, 0x100000, 32 * K);            /* the head */
    an_vmem_unmap(&v, 1, 40, 0x100000 + 224 * K, 32 * K);  /* the tail */
    assert_int_equal(held(&v, 1), 128 * K);
    /* across both ranges and the hole between them: only mapped bytes count */
    an_vmem_unmap(&v, 1, 50, 0x100000 + 64 * K, 128 * K);
    assert_int_equal(held(&v, 1), 64 * K);
    assert_int_equal(p->unmap_bytes, 64 * K + 32 * K + 32 * K + 64 * K);
    assert_int_equal(p->unseen_bytes, 64 * K); /* the hole, unmapped twice */
    assert_int_equal(p->unseen_calls, 1);
    an_vmem_free(&v);
}

static void test_remap(void **state)
{
    (void)state;
    an_vmem v;
    an_vmem_init(&v, 0, END);
    an_vmem_map(&v, 1, 10, 0x200000, 64 * K, 1, AN_VM_FILE);
    an_vmem_remap(&v, 1, 20, 0x200000, 64 * K, 0x900000, 192 * K, 2); /* moved and grown */
    assert_int_equal(held(&v, 1), 192 * K);
    size_t n;
    an_vm_stack *s = an_vmem_ranked(&v, 1, 0, &n);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].stack, 2); /* the mremap's, as a Realloc's */
    assert_int_equal(s[0].bytes, 192 * K);
    assert_int_equal(s[0].kinds, AN_VM_FILE); /* the old range's kind */
    free(s);
    /* shrunk in place */
    an_vmem_remap(&v, 1, 30, 0x900000, 192 * K, 0x900000, 16 * K, 3);
    assert_int_equal(held(&v, 1), 16 * K);
    assert_int_equal(an_vmem_proc(&v, 1)->remaps, 2);
    an_vmem_free(&v);
}

static void test_fixed_and_unseen(void **state)
{
    (void)state;
    an_vmem v;
    an_vmem_init(&v, 0, END);
    an_vmem_map(&v, 1, 10, 0x300000, 128 * K, 1, AN_VM_ANON);
    an_vmem_map(&v, 1, 20, 0x300000 + 64 * K, 128 * K, 2, AN_VM_ANON); /* MAP_FIXED over half */
    assert_int_equal(held(&v, 1), 192 * K);
    size_t n;
    an_vm_stack *s = an_vmem_ranked(&v, 1, 0, &n);
    assert_int_equal(n, 2);
    assert_int_equal(s[0].stack, 2);
    assert_int_equal(s[0].bytes, 128 * K);
    assert_int_equal(s[1].bytes, 64 * K);
    free(s);
    an_vmem_unmap(&v, 1, 30, 0x800000, 8 * K); /* never mapped */
    an_vmem_unmap(&v, 2, 30, 0x800000, 8 * K); /* another process */
    assert_int_equal(held(&v, 1), 192 * K);
    assert_int_equal(an_vmem_proc(&v, 1)->unseen_bytes, 8 * K);
    assert_int_equal(an_vmem_proc(&v, 2)->unseen_bytes, 8 * K);
    an_vmem_free(&v);
}

static void test_window(void **state)
{
    (void)state;
    an_vmem v;
    an_vmem_init(&v, 100, 200);
    an_vmem_map(&v, 1, 50, 0x100000, 4 * K, 1, AN_VM_ANON);  /* before: outstanding, not inside */
    an_vmem_map(&v, 1, 150, 0x200000, 8 * K, 2, AN_VM_ANON); /* inside */
    an_vmem_map(&v, 1, 250, 0x300000, 16 * K, 3, AN_VM_ANON); /* after the window: not seen */
    an_vmem_unmap(&v, 1, 260, 0x100000, 4 * K);                /* after: the range stays */
    an_vmem_discard(&v, 1, 160, 8 * K);
    const an_vm_proc *p = an_vmem_proc(&v, 1);
    assert_int_equal(held(&v, 1), 12 * K);
    assert_int_equal(p->maps, 1);
    assert_int_equal(p->map_bytes, 8 * K);
    assert_int_equal(p->discard_bytes, 8 * K);
    size_t n;
    an_vm_stack *s = an_vmem_ranked(&v, 0, 1, &n);
    assert_int_equal(n, 2);
    assert_int_equal(s[0].inside, 8 * K);
    assert_int_equal(s[1].inside, 0);
    free(s);
    an_vmem_free(&v);
}

/* Through the model's sink, threads merged in time order: thread 2's unmap
 * committed before thread 1's map of the same range still ends it. */
static void test_through_sink(void **state)
{
    (void)state;
    an_model m;
    an_model_init(&m, 0, END);
    an_sink *sk = an_sink_new(&m, 0, 1, 0);
    assert_non_null(sk);
    size_t room;
    an_event *e = an_sink_room(sk, 9, AN_VM_TID(2), &room);
    e[0] = (an_event){.ts = 30, .addr = 0x100000, .size = 64 * K, .op = AN_OP_VM_UNMAP};
    an_sink_commit(sk, 9, AN_VM_TID(2), 1);
    e = an_sink_room(sk, 9, AN_VM_TID(1), &room);
    assert_true(room >= 3);
    e[0] = (an_event){.ts = 10, .addr = 0x100000, .size = 128 * K, .stack = 5, .old_addr = AN_VM_ANON,
                      .op = AN_OP_VM_MAP};
    e[1] = (an_event){.ts = 20, .addr = 0x400000, .size = 4 * K, .stack = 6, .old_addr = AN_VM_ANON,
                      .op = AN_OP_VM_MAP};
    e[2] = (an_event){.ts = 40, .addr = 0x400000, .size = 4 * K, .op = AN_OP_VM_REMAP_FROM};
    an_sink_commit(sk, 9, AN_VM_TID(1), 3);
    e = an_sink_room(sk, 9, AN_VM_TID(1), &room);
    e[0] = (an_event){.ts = 40, .addr = 0x500000, .size = 12 * K, .stack = 7, .op = AN_OP_VM_REMAP_TO};
    an_sink_commit(sk, 9, AN_VM_TID(1), 1);
    an_sink_close(sk);
    assert_int_equal(held(&m.vm, 9), 64 * K + 12 * K);
    assert_int_equal(an_vmem_proc(&m.vm, 9)->unseen_bytes, 0);
    assert_int_equal(m.nprocs, 0); /* no heap process made of it */
    an_model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partial_unmap), cmocka_unit_test(test_remap),
        cmocka_unit_test(test_fixed_and_unseen), cmocka_unit_test(test_window),
        cmocka_unit_test(test_through_sink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
