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
 * A writer waiting in open() of the FIFO is let through by any open of its
 * read side: still waiting afterwards means no one opened it.
 */
#include "system/internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char box[64], lib[128], fifo[128], real_file[128];
static int swap_armed; /* the next stat() of lib swaps it to the FIFO */

/* libdw's stat() lands here (the executable's definition comes first). */
int stat(const char *restrict path, struct stat *restrict st)
{
    static int (*real)(const char *restrict, struct stat *restrict);
    if (!real)
        real = (int (*)(const char *restrict, struct stat *restrict))dlsym(RTLD_NEXT, "stat");
    int rc = real(path, st);
    if (swap_armed && !strcmp(path, lib)) {
        swap_armed = 0;
        char tmp[160];
        snprintf(tmp, sizeof tmp, "%s.new", lib);
        if (symlink(fifo, tmp) != 0 || rename(tmp, lib) != 0)
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
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp /proc/%d/exe %s", getpid(), real_file);
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
    pid_t w = fork();
    assert_true(w >= 0);
    if (w == 0) {
        alarm(2); /* still waiting then: no one opened the FIFO */
        _exit(open(fifo, O_WRONLY) >= 0 ? 0 : 1);
    }
    usleep(200 * 1000); /* the writer waits in open() */
    return w;
}

static void expect_fifo_unopened(pid_t writer)
{
    int st;
    assert_int_equal(waitpid(writer, &st, 0), writer);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGALRM)
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
    swap_armed = 1;
    module_elf_found();
    swap_armed = 0;
    expect_fifo_unopened(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regular_file_found),
        cmocka_unit_test(test_fifo_not_opened),
        cmocka_unit_test(test_swap_after_stat_not_opened),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
