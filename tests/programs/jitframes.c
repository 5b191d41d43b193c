/*
 * tests/programs/jitframes.c — allocations under frames of JIT-compiled
 * code that keep a frame pointer, as V8's (node) and a JVM's do: code copied
 * into executable pages it maps, with no unwind information anywhere, each
 * function with locals below its saved frame pointer. The call chain is
 *     main -> outer_c -> [jit A] -> middle_c -> [jit B] -> malloc
 * 300 blocks of 1000 bytes kept (argv[1] sets the count). Made for
 * test_unwind: the agent's unwinder steps over such frames by their frame
 * pointer; the names middle_c, outer_c and main must be in every stack.
 * With argv[2] "nofp", B zeroes the frame pointer before its call instead
 * (push rbp; xor ebp,ebp; call; pop rbp; ret): no frame chain to follow,
 * where libunwind ends the stack.
 * x86-64 only (the copied code); elsewhere it exits 77.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef void *(*alloc_fn)(size_t);

/* push rbp; mov rbp,rsp; sub rsp,48; mov [rbp-8],rdi; movabs rax,TARGET;
 * call rax; mov rdi,[rbp-8]; leave; ret — a frame with locals, as a JIT's */
static const uint8_t framed[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x30, 0x48, 0x89, 0x7d, 0xf8,
                                 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xd0, 0x48, 0x8b, 0x7d, 0xf8, 0xc9, 0xc3};
/* push rbp; xor ebp,ebp; movabs rax,TARGET; call rax; pop rbp; ret */
static const uint8_t zeroed[] = {0x55, 0x31, 0xed, 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xd0, 0x5d, 0xc3};

static alloc_fn jit_compile(void *target, bool zero_bp)
{
    uint8_t code[sizeof framed];
    size_t len = zero_bp ? sizeof zeroed : sizeof framed;
    memcpy(code, zero_bp ? zeroed : framed, len);
    memcpy(code + (zero_bp ? 5 : 14), &target, sizeof target);
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return NULL;
    memcpy(page, code, len);
    if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0)
        return NULL;
    return (alloc_fn)page;
}

static alloc_fn jit_a, jit_b;
static volatile size_t sink;

__attribute__((noinline)) void *middle_c(size_t n)
{
    char pad[64]; /* an SP-based frame of its own between the two JIT frames */
    memset(pad, (int)n, sizeof pad);
    sink += pad[n % sizeof pad];
    void *p = jit_b(n);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *outer_c(size_t n)
{
    void *p = jit_a(n);
    __asm__ volatile("" ::: "memory");
    return p;
}

int main(int argc, char **argv)
{
#if !defined(__x86_64__)
    (void)argc;
    (void)argv;
    return 77;
#else
    int count = argc > 1 ? atoi(argv[1]) : 300;
    jit_b = jit_compile((void *)malloc, argc > 2 && !strcmp(argv[2], "nofp"));
    jit_a = jit_compile((void *)middle_c, false);
    if (!jit_a || !jit_b)
        return 1;
    for (int i = 0; i < count; i++) {
        char *p = outer_c(1000);
        if (p)
            p[0] = 1; /* kept */
    }
    return 0;
#endif
}
