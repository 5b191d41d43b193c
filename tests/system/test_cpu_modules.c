/*
 * tests/system/test_cpu_modules.c — how the CPU sampler's libdw finds a
 * target's module files (system/cpu.c, sys_proc_dwfl_callbacks): the path
 * comes from the target's mappings, and the target can swap what is there.
 * A symlink at the path swapped from a regular file to a FIFO just after a
 * stat() of it (this test's stat() does the swap, as a target racing the
 * sampler would) must not get the FIFO opened: libdw's own
 * dwfl_linux_proc_find_elf stat()s and then open()s without O_NONBLOCK,
 * which left the sampling thread waiting on the FIFO for good. A FIFO there
 * from the start is not opened either, and a regular file is found.
 * A mapping whose name ends in " (deleted)" (a file named so on purpose,
 * still there) is not opened by that name at all, so the same swap after
 * libdw's stat() of it gets no FIFO opened: its ELF comes from the inode
 * mapped (/proc/PID/map_files), and the vDSO's from memory, as before.
 * A writer waiting in open() of the FIFO is let through by any open of its
 * read side: still waiting afterwards means no one opened it. And a frame
 * is a module's only inside its loaded segments, not in anonymous memory
 * between two mappings of one file; its offset is an ELF virtual address.
 */
#include "system/internal.h"
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char box[64], lib[128], fifo[128], real_file[128], gone[128];
static const char *swap_armed; /* the next stat() of this name swaps it to the FIFO */

/* libdw's stat() lands here (the executable's definition comes first). */
int stat(const char *restrict path, struct stat *restrict st)
{
    static int (*real)(const char *restrict, struct stat *restrict);
    if (!real)
        real = (int (*)(const char *restrict, struct stat *restrict))dlsym(RTLD_NEXT, "stat");
    int rc = real(path, st);
    if (swap_armed && !strcmp(path, swap_armed)) {
        char tmp[160];
        snprintf(tmp, sizeof tmp, "%s.new", swap_armed);
        swap_armed = NULL;
        if (symlink(fifo, tmp) != 0 || rename(tmp, path) != 0)
            abort();
    }
    return rc;
}

static int setup(void **state)
{
    (void)state;
    snprintf(box, sizeof box, "/tmp/ltr-cpumod-XXXXXX");
    if (!mkdtemp(box))
        return -1;
    snprintf(lib, sizeof lib, "%s/libtarget.so", box);
    snprintf(fifo, sizeof fifo, "%s/fifo", box);
    snprintf(real_file, sizeof real_file, "%s/real.so", box);
    snprintf(gone, sizeof gone, "%s/libgone.so (deleted)", box);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp /proc/%d/exe %s && cp %s '%s'", getpid(), real_file, real_file, gone);
    return system(cmd) == 0 && mkfifo(fifo, 0600) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", box);
    return system(cmd) == 0 ? 0 : -1;
}

static pid_t start_writer(void)
{
    return tu_fifo_writer(fifo);
}

static void expect_fifo_unopened(pid_t writer)
{
    if (tu_fifo_opened(writer))
        fail_msg("the FIFO at the module's path was opened");
}

/* Asks libdw for the ELF of a module at lib, as the sampler's Dwfl does. */
static int module_elf_found(void)
{
    Dwfl *d = dwfl_begin(&sys_proc_dwfl_callbacks);
    assert_non_null(d);
    dwfl_report_begin(d);
    Dwfl_Module *m = dwfl_report_module(d, lib, 0x10000, 0x20000);
    assert_non_null(m);
    dwfl_report_end(d, NULL, NULL);
    Dwarf_Addr bias;
    int found = dwfl_module_getelf(m, &bias) != NULL;
    dwfl_end(d);
    return found;
}

static void link_to(const char *target)
{
    unlink(lib);
    assert_int_equal(symlink(target, lib), 0);
}

static void test_regular_file_found(void **state)
{
    (void)state;
    link_to(real_file);
    assert_true(module_elf_found());
}

static void test_fifo_not_opened(void **state)
{
    (void)state;
    link_to(fifo);
    pid_t w = start_writer();
    assert_false(module_elf_found());
    expect_fifo_unopened(w);
}

static void test_swap_after_stat_not_opened(void **state)
{
    (void)state;
    link_to(real_file);
    pid_t w = start_writer();
    swap_armed = lib;
    module_elf_found();
    swap_armed = NULL;
    expect_fifo_unopened(w);
}

/* The ELF of this process's module at addr, through a Dwfl as the sampler
 * makes it (sys_proc_dwfl_report: this process's /proc/PID/maps). */
static int own_module_elf_found(uint64_t addr, const char *name_ends)
{
    sys_mod_data mods;
    Dwfl *d = sys_proc_dwfl_report((uint32_t)getpid(), &mods);
    assert_non_null(d);
    Dwfl_Module *m = dwfl_addrmodule(d, addr);
    assert_non_null(m);
    const char *name = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    size_t n = strlen(name), k = strlen(name_ends);
    if (n < k || strcmp(name + n - k, name_ends))
        fail_msg("the module at %#llx is %s", (unsigned long long)addr, name);
    Dwarf_Addr bias;
    int found = dwfl_module_getelf(m, &bias) != NULL;
    dwfl_end(d);
    return found;
}

/* Whether this process may follow its own /proc/self/map_files links
 * (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), tried on its mapping at addr:
 * without, a "(deleted)" module has no file, by design. */
static bool map_files_open(uint64_t addr)
{
    char path[128], line[4200];
    FILE *f = fopen("/proc/self/maps", "re");
    assert_non_null(f);
    unsigned long long lo = 0, hi = 0;
    while (fgets(line, sizeof line, f) && !(sscanf(line, "%llx-%llx", &lo, &hi) == 2 && lo == addr))
        lo = 0;
    fclose(f);
    assert_int_equal(lo, addr);
    snprintf(path, sizeof path, "/proc/self/map_files/%llx-%llx", lo, hi);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

/* A mapped file named "libgone.so (deleted)" that is still there, swapped
 * for a symlink to a FIFO just after libdw's stat() of the name (libdw's
 * own find_elf then open()ed the FIFO, blocking): the FIFO is never
 * opened, and the ELF is the file mapped, found through map_files. */
static void test_deleted_name_opened_as_mapped(void **state)
{
    (void)state;
    int fd = open(gone, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    void *at = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    assert_true(at != MAP_FAILED);
    close(fd);
    pid_t w = start_writer();
    swap_armed = gone;
    int found = own_module_elf_found((uint64_t)(uintptr_t)at, "/libgone.so (deleted)");
    swap_armed = NULL;
    expect_fifo_unopened(w);
    bool may = map_files_open((uint64_t)(uintptr_t)at);
    munmap(at, (size_t)st.st_size);
    if (may)
        assert_true(found);
    else
        assert_false(found); /* no capability: the module goes unnamed */
}

/* The vDSO (not a file: "[vdso: PID]") is still read from memory. */
static void test_vdso_found(void **state)
{
    (void)state;
    uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
    if (!vdso)
        skip();
    assert_true(own_module_elf_found(vdso, "]"));
}

/* A frame's module is the one whose range holds it: libdw's dwfl_addrmodule
 * on a Dwfl made from /proc/PID/maps answers the highest module (ld.so) for
 * any address above it, which named the frames of a target's new image after
 * an exec (and a return address of 0, minus 1) "ld-linux...+0x9869df095d". */
static void test_addr_outside_modules(void **state)
{
    (void)state;
    sys_mod_data mods;
    Dwfl *d = sys_proc_dwfl_report((uint32_t)getpid(), &mods);
    assert_non_null(d);
    uint64_t start = 0, top = 0;
    assert_non_null(sys_addr_module(d, (uint64_t)(uintptr_t)&malloc, &start)); /* libc's code */
    assert_true(start <= (uint64_t)(uintptr_t)&malloc);
    /* the highest file mapping's end: every address from there up is in no module */
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[512];
    unsigned long long lo, hi;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && strchr(line, '/') && hi > top && hi < 0xffff800000000000ull)
            top = hi;
    fclose(f);
    int local;
    assert_null(sys_addr_module(d, UINT64_MAX, &start));
    assert_null(sys_addr_module(d, top + 0x1000000000ull, &start));
    if ((uint64_t)(uintptr_t)&local > top) /* the stack, above every module */
        assert_null(sys_addr_module(d, (uint64_t)(uintptr_t)&local, &start));
    dwfl_end(d);
}

/* The range of the executable's mappings, and the start of the next file
 * mapping above them (0: none). */
static void exe_span(uint64_t *lo, uint64_t *hi, uint64_t *next)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[4608];
    unsigned long long a, b;
    *lo = *hi = *next = 0;
    while (fgets(line, sizeof line, f)) {
        char *path = strchr(line, '/'), *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        if (sscanf(line, "%llx-%llx", &a, &b) != 2 || !path)
            continue;
        if (!strcmp(path, exe)) {
            *lo = *lo ? *lo : a;
            *hi = b;
        } else if (*hi && !*next) {
            *next = a;
        }
    }
    fclose(f);
}

/* A file mapped twice with no other file between (node remaps its builtins'
 * text, /usr/bin/node at 0x400000 and again at 0x7f...): libdw makes one
 * module from the first mapping to the second, and the JIT code between
 * them, anonymous, was the executable's: CPU samples of node named it
 * "node+0x7f4b7ebc7374" where the heap's stacks of the same trace say
 * "?? 0x7f4b7efc7375". A frame is a module's only inside its segments. */
static void test_anon_between_two_mappings_of_a_file(void **state)
{
    (void)state;
    uint64_t lo, hi, next;
    exe_span(&lo, &hi, &next);
    long page = sysconf(_SC_PAGESIZE);
    if (!lo || !next || next - hi < (256ull << 20))
        skip();
    int fd = open("/proc/self/exe", O_RDONLY);
    assert_true(fd >= 0);
    void *want_copy = (void *)(uintptr_t)(next - (64ull << 20));
    void *want_anon = (void *)(uintptr_t)(next - (128ull << 20));
    void *copy = mmap(want_copy, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
    void *anon = mmap(want_anon, (size_t)page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    close(fd);
    if (copy != want_copy || anon != want_anon)
        skip(); /* the room was taken */
    sys_mod_data mods;
    Dwfl *d = sys_proc_dwfl_report((uint32_t)getpid(), &mods);
    assert_non_null(d);
    uint64_t start = 0;
    assert_non_null(sys_addr_module(d, (uint64_t)(uintptr_t)&test_anon_between_two_mappings_of_a_file, &start));
    assert_int_equal(start, lo);
    Dwfl_Module *m = sys_addr_module(d, (uint64_t)(uintptr_t)anon + 16, &start);
    if (m)
        fail_msg("an anonymous page at %p is the module at 0x%llx's (its range 0x%llx-0x%llx, mapped again at %p)",
                 anon, (unsigned long long)start, (unsigned long long)lo, (unsigned long long)hi, copy);
    dwfl_end(d);
    munmap(copy, (size_t)page);
    munmap(anon, (size_t)page);
}

/* Process pid's entry point (AT_ENTRY) and its executable's e_entry: the
 * same code, as an address in the process and as an ELF virtual address. */
static void entry_points(pid_t pid, uint64_t *at, uint64_t *elf)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/auxv", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    uint64_t kv[2];
    *at = *elf = 0;
    while (fread(kv, sizeof kv, 1, f) == 1 && kv[0] != AT_NULL)
        if (kv[0] == AT_ENTRY)
            *at = kv[1];
    fclose(f);
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(fseek(f, 24, SEEK_SET), 0); /* Elf64_Ehdr.e_entry */
    assert_int_equal(fread(elf, sizeof *elf, 1, f), 1);
    fclose(f);
    assert_true(*at && *elf);
}

static void expect_entry_offset(pid_t pid)
{
    uint64_t at, elf, start = 0;
    entry_points(pid, &at, &elf);
    sys_mod_data mods;
    Dwfl *d = sys_proc_dwfl_report((uint32_t)pid, &mods);
    assert_non_null(d);
    Dwfl_Module *m = sys_addr_module(d, at, &start);
    assert_non_null(m);
    uint64_t got = sys_elf_vaddr(m, at, start);
    if (got != elf)
        fail_msg("pid %d's entry point 0x%llx is its module's 0x%llx, not the ELF's 0x%llx (start 0x%llx)",
                 (int)pid, (unsigned long long)at, (unsigned long long)got, (unsigned long long)elf,
                 (unsigned long long)start);
    dwfl_end(d);
}

/* A frame that the sampler names module+0xOFFSET has for offset the ELF
 * virtual address, as the heap's frames and addr2line -e: in a program
 * built with -pie (this test) and without (busy-nopie, whose code starts
 * at 0x400000: pc less the module's start said 0x12b2 in busy_spin, at
 * 0x4011f0..0x4012e0). */
static void test_offsets_are_elf_addresses(void **state)
{
    (void)state;
    expect_entry_offset(getpid());
    int in[2], out[2]; /* close-on-exec: a child that keeps no end of its stdin ends when the test does */
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    pid_t p = fork();
    if (p == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execl(tu_test_bin("ltr-test-busy-nopie"), "ltr-test-busy-nopie", "1", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    char buf[8] = {0};
    assert_int_equal(read(out[0], buf, 6), 6); /* "ready": exec'd and waiting */
    expect_entry_offset(p);
    assert_int_equal(write(in[1], "g", 1), 1);
    int st;
    assert_int_equal(waitpid(p, &st, 0), p);
    close(in[1]);
    close(out[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regular_file_found),
        cmocka_unit_test(test_offsets_are_elf_addresses),
        cmocka_unit_test(test_fifo_not_opened),
        cmocka_unit_test(test_swap_after_stat_not_opened),
        cmocka_unit_test(test_deleted_name_opened_as_mapped),
        cmocka_unit_test(test_vdso_found),
        cmocka_unit_test(test_addr_outside_modules),
        cmocka_unit_test(test_anon_between_two_mappings_of_a_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
