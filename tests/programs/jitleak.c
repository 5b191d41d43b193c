/*
 * tests/programs/jitleak.c — a program with JIT-compiled code, as node or a
 * JVM has: it copies a small function into an executable page it maps,
 * calls malloc from there (64 blocks of 4 KiB kept: a leak in no ELF
 * module), and writes its own perf map, /tmp/perf-PID.map, as node
 * --perf-basic-prof does: the page first as "stale_jit_function", then as
 * "jit_leaky_function" (the last entry wins, as in perf). How the map is
 * left is the first argument, for the refusals of test_jit:
 *   map      the map, a regular file of this user, mode 0644
 *   symlink  the name a symlink to such a file (PATH.target)
 *   fifo     the name a FIFO (nothing opens it here)
 *   other    the map owned by nobody (uid 65534; needs root)
 *   writable the map writable by anyone (mode 0666)
 *   hostile  a map of junk: binary bytes, a line of 1 MiB, a name with
 *            escape sequences (ESC ] 0 ; PWN BEL ESC [ 2 J) for the page
 * It prints "jitleak pid N" on stderr; the test removes /tmp/perf-N.map*.
 * x86-64 only (the copied code); elsewhere it exits 77.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef void *(*alloc_fn)(size_t);

/* sub rsp,8; movabs rax,MALLOC; call rax; add rsp,8; ret: the call keeps
 * the stack aligned, the return address lies inside the page */
static alloc_fn jit_compile(void)
{
    uint8_t code[] = {0x48, 0x83, 0xec, 0x08, 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xd0,
                      0x48, 0x83, 0xc4, 0x08, 0xc3};
    alloc_fn target = malloc;
    memcpy(code + 6, &target, sizeof target);
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return NULL;
    memcpy(page, code, sizeof code);
    if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0)
        return NULL;
    return (alloc_fn)page;
}

static int write_map(const char *path, uintptr_t start, const char *mode, mode_t perm)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    if (!strcmp(mode, "hostile")) {
        for (int i = 0; i < 4096; i++)
            fputc((i * 131) & 0xff, f);
        fputc('\n', f);
        for (int i = 0; i < (1 << 20); i++)
            fputc('a', f);
        fprintf(f, "\n%lx 40 \x1b]0;PWN\x07\x1b[2Jjit_escape\n", (unsigned long)start);
    } else {
        fprintf(f, "%lx 40 stale_jit_function\n", (unsigned long)start);
        fprintf(f, "%lx 40 jit_leaky_function\n", (unsigned long)start);
    }
    int rc = fclose(f);
    return rc == 0 ? chmod(path, perm) : rc;
}

int main(int argc, char **argv)
{
#if !defined(__x86_64__)
    (void)argc;
    (void)argv;
    return 77;
#else
    const char *mode = argc > 1 ? argv[1] : "map";
    alloc_fn jit = jit_compile();
    if (!jit)
        return 1;
    char path[64], target[80];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    snprintf(target, sizeof target, "%s.target", path);
    fprintf(stderr, "jitleak pid %d\n", (int)getpid());
    int rc = 0;
    if (!strcmp(mode, "symlink"))
        rc = write_map(target, (uintptr_t)jit, mode, 0644) || symlink(target, path);
    else if (!strcmp(mode, "fifo"))
        rc = mkfifo(path, 0644);
    else
        rc = write_map(path, (uintptr_t)jit, mode, !strcmp(mode, "writable") ? 0666 : 0644);
    if (!rc && !strcmp(mode, "other"))
        rc = chown(path, 65534, 65534);
    if (rc) {
        perror(path);
        return 1;
    }
    for (int i = 0; i < 64; i++) {
        char *p = jit(4096);
        if (p)
            p[0] = 1; /* kept: the leak the analysis names */
    }
    return 0;
#endif
}
