/*
 * tests/programs/reuse.c — heap-target's "reuse" mode: allocations whose stacks
 * would come out wrong if the agent's unwinder reused the outer part of a
 * thread's previous walk when it must not (src/agent/unwind.c). One inner
 * function (leaf, called by mid) is reached through two outer chains
 * (outer_a, outer_b: same frame size, called from the same place) so that
 * leaf's frame has the same return address and CFA under both while mid's
 * caller differs; the recursion above them goes deeper and shallower between
 * allocations; some calls go through a function with a frame pointer and a
 * variable-size frame (CFA from BP, inner frames moved); some allocations
 * longjmp out of the frames they were made in. The size of each allocation
 * names its path (REUSE_* below), so test_heap.c checks every frame of every
 * stack (test_stacks_reusing_outer_frames); test_unwind.c runs it against
 * libunwind. Mode "guesses" makes stacks whose CFAs repeat while their
 * frames do not (below).
 */
#include <alloca.h>
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

/* size = REUSE_SIZE_BASE + code; code bit 0: outer_b (else outer_a), bits
 * 1-4: recursion levels below the first, bit 5: through fp_frame, bit 6:
 * longjmp out after the allocation */
#define REUSE_SIZE_BASE 200000u
#define REUSE_B 1u
#define REUSE_DEPTH_SHIFT 1
#define REUSE_FP 32u
#define REUSE_JUMP 64u
#define REUSE_CALLS 4000

volatile int reuse_sink;
static jmp_buf reuse_env;
static void *reuse_kept;

__attribute__((noinline)) void *reuse_leaf(unsigned code)
{
    void *p = malloc(REUSE_SIZE_BASE + code);
    reuse_sink = 1;
    if (code & REUSE_JUMP) {
        reuse_kept = p;
        longjmp(reuse_env, 1);
    }
    return p;
}

__attribute__((noinline)) void *reuse_mid(unsigned code)
{
    void *p = reuse_leaf(code);
    reuse_sink = 2;
    return p;
}

/* Same body and frame, a distinct constant: GCC does not fold them. */
#define REUSE_OUTER(X, K)                                                                          \
    __attribute__((noinline)) void *reuse_outer_##X(unsigned code)                                 \
    {                                                                                              \
        void *p = reuse_mid(code);                                                                 \
        reuse_sink = K;                                                                            \
        return p;                                                                                  \
    }
REUSE_OUTER(a, 3)
REUSE_OUTER(b, 4)

void *(*volatile reuse_outer[2])(unsigned) = {reuse_outer_a, reuse_outer_b};

__attribute__((noinline)) void *reuse_rec(unsigned levels, unsigned code)
{
    void *p = levels ? reuse_rec(levels - 1, code) : reuse_outer[code & REUSE_B](code);
    reuse_sink = (int)levels;
    return p;
}

/* BP-based CFA, and a frame whose size depends on the call: the frames
 * inside move by its alloca. */
__attribute__((noinline, optimize("no-omit-frame-pointer"))) void *reuse_fp(unsigned code)
{
    volatile char *pad = alloca(16 + 16 * (code & 7u));
    pad[0] = 0;
    void *p = reuse_rec((code >> REUSE_DEPTH_SHIFT) & 15u, code);
    reuse_sink = pad[0];
    return p;
}

__attribute__((noinline)) void *reuse_step(unsigned code)
{
    if ((code & REUSE_JUMP) && setjmp(reuse_env))
        return reuse_kept;
    return code & REUSE_FP ? reuse_fp(code) : reuse_rec((code >> REUSE_DEPTH_SHIFT) & 15u, code);
}

static void print_fn(const char *name, void *fn)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) && sym)
        printf("%s %p %lu\n", name, fn, (unsigned long)sym->st_size);
}

/* Prints "name start size" of each function, then allocates. Codes follow
 * each other so that consecutive stacks alternate the two outer chains,
 * change depth by a few levels either way, and jump now and then. */
void mode_reuse(void)
{
    print_fn("reuse_leaf", (void *)reuse_leaf);
    print_fn("reuse_mid", (void *)reuse_mid);
    print_fn("reuse_outer_a", (void *)reuse_outer_a);
    print_fn("reuse_outer_b", (void *)reuse_outer_b);
    print_fn("reuse_rec", (void *)reuse_rec);
    print_fn("reuse_fp", (void *)reuse_fp);
    print_fn("reuse_step", (void *)reuse_step);
    fflush(stdout);
    unsigned depth = 4, rnd = 12345;
    for (unsigned i = 0; i < REUSE_CALLS; i++) {
        rnd = rnd * 1103515245u + 12345u;
        unsigned r = rnd >> 16;
        depth = (depth + 16 + (r & 3) - 2 + (r & 4 ? 1 : 0)) % 16;
        unsigned code = (i & 1) | depth << REUSE_DEPTH_SHIFT | (r & 0x30 ? 0 : REUSE_FP) |
                        (r & 0x1c0 ? 0 : REUSE_JUMP);
        free(reuse_step(code));
    }
}

/* Mode "phases N": 2000 allocations whose consecutive stacks share only
 * their few outermost frames (each call moves the frames below reuse_fp,
 * alternately by 16 bytes), then N from one stack 20 frames deep. The agent
 * stops recording its walks in the first phase (little to reuse there) and
 * must take them up again in the second (test_unwind.c counts the frames
 * reused). */
void mode_phases(unsigned same)
{
    for (unsigned i = 0; i < 2000; i++)
        free(reuse_step((i & 1) | 15u << REUSE_DEPTH_SHIFT | REUSE_FP));
    for (unsigned i = 0; i < same; i++)
        free(reuse_step(15u << REUSE_DEPTH_SHIFT));
}

/* Two callers of the recursion, of the same frame, called from the same
 * place: the stacks below them are alike, CFAs and all, while the return
 * address into them differs. */
#define REUSE_TOP(X, K)                                                                            \
    __attribute__((noinline)) void *reuse_top_##X(unsigned code)                                   \
    {                                                                                              \
        void *p = reuse_rec(15, code);                                                             \
        reuse_sink = K;                                                                            \
        return p;                                                                                  \
    }
REUSE_TOP(a, 5)
REUSE_TOP(b, 6)

void *(*volatile reuse_top[2])(unsigned) = {reuse_top_a, reuse_top_b};

/* Mode "guesses N": N allocations 20 frames deep whose consecutive stacks
 * differ only in a frame near their outermost (reuse_top_a, then _b), as
 * the deep workload's differ in their innermost: the previous walk has
 * little to reuse (the agent pauses its recording), but every CFA is the
 * same, so a plain walk steps over its frames at guessed CFAs
 * (test_unwind.c counts them). */
void mode_guesses(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        free(reuse_top[i & 1](15u << REUSE_DEPTH_SHIFT));
}
