/*
 * tests/analyze/test_fit.c — the text report's rules in-process: which
 * frames are hidden (frames.c) and that a stack is never hidden whole, how a
 * frame is shortened to a width and a sentence wrapped (fit.c), and that a
 * stack's AIFO blocks allocated over the window rank above one allocated at
 * once (model.c's held times, rank.c's weight). The rankings kept from the
 * symbolizing, one process at a time, are the writers' lists exactly: each
 * process's (the text's, an_ranked_of) and every process's together (the
 * JSON's, an_ranked_all).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "analyze/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ltr_sym_frame fn(const char *name)
{
    return (ltr_sym_frame){.function = name, .module = "/usr/bin/prog", .offset = 0x1234, .file = "/src/a.cpp",
                           .line = 7};
}

static void test_hidden_frames(void **state)
{
    (void)state;
    ltr_sym_frame f[] = {
        fn("operator new(unsigned long)"), fn("std::__new_allocator<char>::allocate(unsigned long, void const*)"),
        fn("std::vector<char, std::allocator<char> >::vector(unsigned long)"), fn("grow_cache(int)"),
        fn("std::map<int, int>::operator[](int const&)"), /* not at the inner end: kept */
        fn("main"), fn("__libc_start_call_main"), fn("__libc_start_main_impl"), fn("_start"),
    };
    size_t first, end;
    an_frames_trim(f, 9, &first, &end);
    assert_int_equal(first, 3);
    assert_int_equal(end, 6);
    ltr_sym_frame thread[] = {fn("worker"), fn("start_thread"), fn("clone3")};
    an_frames_trim(thread, 3, &first, &end);
    assert_int_equal(first, 0);
    assert_int_equal(end, 1);
    ltr_sym_frame only[] = {fn("std::thread::_State_impl::_M_run()"), fn("clone3")}; /* all hidden: all shown */
    an_frames_trim(only, 2, &first, &end);
    assert_int_equal(first, 0);
    assert_int_equal(end, 2);
    /* Rust: the standard library's frames (by their files) before the
     * program's first own one; a C++ namespace core:: of the program's own
     * is not Rust's library */
    ltr_sym_frame rs[] = {fn("alloc::alloc::alloc"), fn("<alloc::alloc::Global as core::alloc::Allocator>::allocate"),
                          fn("alloc::raw_vec::RawVecInner<A>::try_allocate_in"), fn("alloc::vec::from_elem"),
                          fn("hashbrown::raw::RawTableInner::new_uninitialized"), fn("__rust_alloc"),
                          fn("rl::leak_some"), fn("rl::main"), fn("core::ops::function::FnOnce::call_once")};
    rs[0].file = "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/alloc/src/alloc.rs";
    rs[1].file = "library/alloc/src/alloc.rs";
    rs[2].file = "/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/lib/rustlib/src/rust/library/alloc/src/raw_vec/mod.rs";
    rs[3].file = "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/alloc/src/vec/mod.rs";
    rs[4].file = "/rust/deps/hashbrown-0.16.1/src/raw/mod.rs";
    rs[6].file = rs[7].file = "/src/rl.rs";
    rs[8].file = "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs";
    an_frames_trim(rs, 9, &first, &end);
    assert_int_equal(first, 6);
    assert_int_equal(end, 8); /* ends at rl::main: not call_once, std::rt::lang_start..., rustc's C main */
    assert_true(an_frame_is_startup(&rs[8])); /* pprof's locations too */
    ltr_sym_frame rt[] = {fn("rl::main"), fn("core::ops::function::FnOnce::call_once"),
                          fn("std::rt::lang_start_internal"), fn("main"), fn("__libc_start_call_main")};
    rt[1].file = rt[2].file = rs[8].file;
    an_frames_trim(rt, 5, &first, &end);
    assert_int_equal(first, 0);
    assert_int_equal(end, 1);
    ltr_sym_frame cmain[] = {fn("grow"), fn("main"), fn("__libc_start_call_main")}; /* C's main stays */
    an_frames_trim(cmain, 3, &first, &end);
    assert_int_equal(end, 2);
    /* CPython's allocator: by its file (obmalloc.c), or its entry points' names without DWARF */
    ltr_sym_frame py[] = {fn("arena_map_get"), fn("new_arena"), fn("_PyObject_Malloc"), fn("_PyObject_GC_New"),
                          fn("PyList_New"), fn("main")};
    py[0].file = py[1].file = "/tmp/python-build/Python-3.11.7/Objects/obmalloc.c";
    py[3].file = "Modules/gcmodule.c";
    an_frames_trim(py, 6, &first, &end);
    assert_int_equal(first, 3); /* starts at _PyObject_GC_New, what asked */
    ltr_sym_frame raw[] = {fn("PyMem_RawMalloc"), fn("my_ext_alloc")};
    an_frames_trim(raw, 2, &first, &end);
    assert_int_equal(first, 1);
    ltr_sym_frame notpy = fn("pool_alloc");
    notpy.file = "/src/myObjects/obmalloc.c"; /* not a path's component: the program's own */
    assert_false(an_frame_is_allocator(&notpy));
    ltr_sym_frame cxx_core = fn("core::Engine::load(int)");
    cxx_core.file = "/src/engine/core.cpp";
    assert_false(an_frame_is_allocator(&cxx_core));
    ltr_sym_frame mine = fn("std_like_but_mine()"), noname = {.address = 0x10};
    assert_false(an_frame_is_allocator(&mine));
    assert_false(an_frame_is_allocator(&noname));
    assert_false(an_frame_is_startup(&noname));
}

static void test_fit_frame(void **state)
{
    (void)state;
    ltr_sym_frame f = fn("std::_Rb_tree_iterator<std::pair<int const, std::vector<char, std::allocator<char> > > > "
                         "std::_Rb_tree<int, std::pair<int const, std::vector<char> > >::_M_emplace_hint_unique<"
                         "std::piecewise_construct_t const&>(std::_Rb_tree_const_iterator<int>, int const&)");
    f.file = "/usr/include/c++/12/bits/stl_tree.h";
    char out[4096];
    an_fit_frame(&f, 0, out, sizeof out); /* no width: whole */
    assert_non_null(strstr(out, "piecewise_construct_t"));
    an_fit_frame(&f, 280, out, sizeof out); /* parameters go first (309 columns whole) */
    assert_true(strlen(out) <= 280);
    assert_non_null(strstr(out, "_M_emplace_hint_unique<std::piecewise_construct_t const&>(...)"));
    an_fit_frame(&f, 120, out, sizeof out); /* then template arguments */
    assert_true(strlen(out) <= 120);
    assert_non_null(strstr(out, "std::_Rb_tree<...>::_M_emplace_hint_unique<...>(...)"));
    assert_non_null(strstr(out, "prog+0x1234"));
    an_fit_frame(&f, 40, out, sizeof out); /* then cut */
    assert_int_equal(strlen(out), 40);
    assert_string_equal(out + 37, "...");
    ltr_sym_frame op = fn("Matrix::operator<<(int) const");
    an_fit_frame(&op, 30, out, sizeof out);
    assert_non_null(strstr(out, "operator<<(...)")); /* an operator's own '<' is not a template */
}

static void test_fit_text(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    an_fit_text(f, "\none two three four five six seven", 10);
    an_fit_line(f, "a line that is too long for it", 12);
    fclose(f);
    assert_string_equal(buf, "\none two\nthree four\nfive six\nseven\na line th...\n");
    free(buf);
    /* piped (width 0) a line is whole, however long (a copy into 4 KiB cut
     * a threads line of 400 threads); cut to a width wider than that too */
    char line[10001];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = 0;
    f = open_memstream(&buf, &len);
    an_fit_line(f, line, 0);
    fclose(f);
    assert_int_equal(len, sizeof line); /* its 10 000 bytes and the newline */
    free(buf);
    f = open_memstream(&buf, &len);
    an_fit_line(f, line, 5000);
    fclose(f);
    assert_int_equal(len, 5001);
    assert_memory_equal(buf + 4997, "...\n", 4);
    free(buf);
}

static const an_stack *stack_named(const an_proc *p, uint32_t id)
{
    for (size_t i = 0; i < p->nstacks; i++)
        if (p->stacks[i].stack_id == id)
            return &p->stacks[i];
    return NULL;
}

/* A steady leak (stack 1: 100 blocks over 100 s) and a one-time allocation a
 * little larger (stack 2: one block at 0 s) in a window of 100 s. */
static void test_steady_above_once(void **state)
{
    (void)state;
    an_model m;
    an_model_init(&m, 0, UINT64_MAX);
    an_model_alloc(&m, 1, 1, 1000, 0x100000, 110 * 1024, 2);
    for (uint64_t i = 0; i < 100; i++)
        an_model_alloc(&m, 1, 1, 1000 + i * 1000000000ull, 0x200000 + i * 0x1000, 1024, 1);
    an_model_finish(&m);
    const an_stack *leak = stack_named(m.procs[0], 1), *once = stack_named(m.procs[0], 2);
    assert_non_null(leak);
    assert_non_null(once);
    assert_int_equal(leak->held_first, 1000);
    assert_int_equal(leak->held_last, 1000 + 99 * 1000000000ull);
    assert_int_equal(once->held_first, once->held_last);
    ltr_analysis a;
    memset(&a, 0, sizeof a);
    a.model = m;
    a.win_start = 1000;
    a.win_end = 1000 + 100 * 1000000000ull;
    assert_true(an_held_spread(&a, leak) > 0.98);
    assert_true(an_held_spread(&a, once) == 0);
    size_t n;
    an_entry *e = an_ranked(&a, NULL, AN_RANK_OUTSTANDING, 0, &n);
    assert_int_equal(n, 2);
    assert_int_equal(e[0].stack->stack_id, 1); /* 100 KiB grown steadily above 110 KiB at once */
    assert_true(e[0].bytes < e[1].bytes);
    free(e);
    an_model_free(&m);
}

/* Three processes, met in the order 3, 1, 2, each with stacks of sizes that
 * tie across them, some blocks freed: the lists kept of each process (as
 * symbolize.c keeps them) give the very lists an_ranked makes of all. */
static void test_kept_rankings_are_the_writers(void **state)
{
    (void)state;
    static const uint32_t pids[] = {3, 1, 2};
    an_model m;
    an_model_init(&m, 0, UINT64_MAX);
    uint64_t ts = 1000, addr = 0x100000;
    for (int k = 0; k < 3; k++)
        for (uint32_t stack = 1; stack <= 6; stack++)
            for (uint32_t i = 0; i < stack % 4 + 1; i++, ts += 1000, addr += 0x1000) {
                an_model_alloc(&m, pids[k], pids[k], ts, addr, 64u << (stack % 3), stack);
                if ((i + stack) % 3 == 0)
                    an_model_free_block(&m, pids[k], pids[k], ts + 500, addr);
            }
    an_model_finish(&m);
    ltr_analysis a;
    memset(&a, 0, sizeof a);
    a.model = m;
    a.win_start = 1000;
    a.win_end = ts;
    for (size_t i = 0; i < m.nprocs; i++)
        for (an_rank r = AN_RANK_OUTSTANDING; r <= AN_RANK_TEMPORARY; r++) {
            size_t n;
            an_entry *e = an_ranked(&a, m.procs[i], r, 2, &n);
            an_ranked_keep(&a, m.procs[i], r, 2, e, n);
            free(e);
        }
    an_ranked_kept_all(&a);
    for (an_rank r = AN_RANK_OUTSTANDING; r <= AN_RANK_TEMPORARY; r++) {
        size_t n, nk;
        an_entry *want = an_ranked(&a, NULL, r, 2, &n), *got = an_ranked_all(&a, r, 2, &nk);
        assert_int_equal(nk, n);
        assert_true(n >= 3 || r == AN_RANK_TEMPORARY);
        for (size_t i = 0; i < n; i++) {
            assert_ptr_equal(got[i].stack, want[i].stack);
            assert_int_equal(got[i].type, want[i].type);
        }
        free(want);
        free(got);
        for (size_t k = 0; k < m.nprocs; k++) {
            want = an_ranked(&a, m.procs[k], r, 2, &n);
            got = an_ranked_of(&a, m.procs[k], r, 2, &nk);
            assert_int_equal(nk, n);
            for (size_t i = 0; i < n; i++)
                assert_ptr_equal(got[i].stack, want[i].stack);
            free(want);
            free(got);
        }
    }
    an_ranked_forget(&a);
    an_model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hidden_frames),
        cmocka_unit_test(test_fit_frame),
        cmocka_unit_test(test_fit_text),
        cmocka_unit_test(test_steady_above_once),
        cmocka_unit_test(test_kept_rankings_are_the_writers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
