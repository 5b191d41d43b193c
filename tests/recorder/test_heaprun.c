/*
 * tests/recorder/test_heaprun.c — whether a process has the heap agent
 * loaded (ltr_heap_agent_loaded, what `ltr start --pid` warns with), read
 * from its maps: this process before and after it maps a file of the agent's
 * name, and a process that is gone. And whether a session limited to --pid
 * processes or names takes a command `ltr run` launches
 * (ltr_session_takes_command, what it warns with).
 */
#include "recorder/heaprun.h"
#include "recorder/client.h"

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

/* 'ltr run -- ./app' into 'ltr start heap --name sqlite3' recorded nothing
 * and said nothing: such a session takes only commands of its names, by the
 * name given or the file it resolves to; an unlimited session takes any. */
static void test_session_takes_command(void **state)
{
    (void)state;
    static ltr_session_status st;
    memset(&st, 0, sizeof st);
    assert_true(ltr_session_takes_command(&st, "./app"));
    snprintf(st.names, sizeof st.names, "sqlite3/myservice");
    assert_false(ltr_session_takes_command(&st, "./app"));
    assert_true(ltr_session_takes_command(&st, "/usr/local/bin/myservice"));
    assert_true(ltr_session_takes_command(&st, "sqlite3"));
    assert_false(ltr_session_takes_command(&st, "sqlite")); /* a prefix is not the name */
    char dir[] = "/tmp/ltr-takes-XXXXXX", target[64], link[64];
    assert_non_null(mkdtemp(dir));
    snprintf(target, sizeof target, "%s/myservice", dir);
    snprintf(link, sizeof link, "%s/svc", dir);
    int fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(symlink(target, link), 0);
    bool via_link = ltr_session_takes_command(&st, link); /* svc runs myservice */
    unlink(link);
    unlink(target);
    rmdir(dir);
    assert_true(via_link);
    st.names[0] = 0;
    st.nwanted = 1;
    st.wanted[0] = 4321;
    assert_false(ltr_session_takes_command(&st, "./app"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_this_process),
        cmocka_unit_test(test_gone_process),
        cmocka_unit_test(test_session_takes_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
