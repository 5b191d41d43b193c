/*
 * tests/agent/test_procmaps.c — agent/procmaps.c: the lines of
 * /proc/self/maps as the agent reads them on kernels before 6.11 (range,
 * permissions, name), and the absolute path of an object the loader names
 * by a relative one (dlopen("./x.so")), which the MODULE records and the
 * unwinder need: the file, wherever the working directory is now.
 */
#include "agent/procmaps.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct seen {
    uintptr_t addr;
    char perms[5], name[PATH_MAX];
    int lines, found;
} seen;

static bool note(uintptr_t lo, uintptr_t hi, const char *perms, const char *name, void *ctx)
{
    seen *s = ctx;
    s->lines++;
    if (s->addr >= lo && s->addr < hi) {
        memcpy(s->perms, perms, 4);
        snprintf(s->name, sizeof s->name, "%s", name);
        s->found++;
    }
    return true;
}

static seen scan(uintptr_t addr)
{
    seen s = {.addr = addr};
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    procmaps_each(fd, note, &s);
    close(fd);
    return s;
}

static char *exe_path(void)
{
    static char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = 0;
    return exe;
}

/* The line of this test's own code names the program; an anonymous
 * mapping's names nothing; every line is read (more than a buffer's worth
 * of them, with a few hundred mappings of our own). */
static void test_lines_read(void **state)
{
    (void)state;
    seen code = scan((uintptr_t)&test_lines_read);
    assert_int_equal(code.found, 1);
    assert_string_equal(code.name, exe_path());
    assert_int_equal(code.perms[2], 'x');
    enum { N = 300 };
    void *maps[N];
    long page = sysconf(_SC_PAGESIZE);
    for (int i = 0; i < N; i++) { /* alternate protections: none merges with its neighbour */
        maps[i] = mmap(NULL, (size_t)page, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        assert_true(maps[i] != MAP_FAILED);
    }
    seen anon = scan((uintptr_t)maps[N / 2]);
    assert_int_equal(anon.found, 1);
    assert_string_equal(anon.name, "");
    assert_int_equal(anon.perms[0], 'r');
    seen last = scan((uintptr_t)maps[N - 1]);
    assert_int_equal(last.found, 1);
    assert_true(last.lines > N);
    for (int i = 0; i < N; i++)
        munmap(maps[i], (size_t)page);
}

/* An object named by a relative path gets the file's absolute one, from the
 * mapping at its first segment, whatever the working directory; an
 * absolute name stays; the main program's empty one is NULL. */
static void test_relative_name_made_absolute(void **state)
{
    (void)state;
    ElfW(Phdr) ph[2] = {{.p_type = PT_NOTE}, {.p_type = PT_LOAD, .p_vaddr = (uintptr_t)&test_lines_read}};
    struct dl_phdr_info info = {.dlpi_addr = 0, .dlpi_name = "./not-here.so", .dlpi_phdr = ph, .dlpi_phnum = 2};
    assert_int_equal(chdir("/"), 0);
    char *p = procmaps_object_path(&info);
    assert_non_null(p);
    assert_string_equal(p, exe_path());
    free(p);
    info.dlpi_name = "/some/where.so";
    p = procmaps_object_path(&info);
    assert_string_equal(p, "/some/where.so");
    free(p);
    void *anon = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ph[1].p_vaddr = (uintptr_t)anon; /* no file there: the loader's name, as it is */
    info.dlpi_name = "./rel.so";
    p = procmaps_object_path(&info);
    assert_string_equal(p, "./rel.so");
    free(p);
    munmap(anon, 4096);
    /* a name with no path (the vDSO's) is not looked for: as it is, even
     * where a file is mapped at its segment */
    ph[1].p_vaddr = (uintptr_t)&test_lines_read;
    info.dlpi_name = "linux-vdso.so.1";
    p = procmaps_object_path(&info);
    assert_string_equal(p, "linux-vdso.so.1");
    free(p);
    info.dlpi_name = "";
    assert_null(procmaps_object_path(&info));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_read),
        cmocka_unit_test(test_relative_name_made_absolute),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
