/*
 * tests/recorder/test_heaprun.c — whether a process has the heap agent
 * loaded (ltr_heap_agent_loaded, what `ltr start --pid` warns with), read
 * from its maps: this process before and after it maps a file of the agent's
 * name, and a process that is gone.
 */
#include "recorder/heaprun.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_this_process(void **state)
{
    (void)state;
    assert_int_equal(ltr_heap_agent_loaded((uint32_t)getpid()), 0);
    char dir[] = "/tmp/ltr-heaprun-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/libltr-heap.so", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 4096), 0);
    void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    unlink(path);
    rmdir(dir);
    assert_true(p != MAP_FAILED);
    int loaded = ltr_heap_agent_loaded((uint32_t)getpid());
    munmap(p, 4096);
    assert_int_equal(loaded, 1);
    assert_int_equal(ltr_heap_agent_loaded((uint32_t)getpid()), 0);
}

static void test_gone_process(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    assert_int_equal(ltr_heap_agent_loaded((uint32_t)pid), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_this_process),
        cmocka_unit_test(test_gone_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
