/*
 * tests/fuzz/test_findings.c — findings of the fuzz targets whose fix is more
 * than the absence of a crash (the replay tests cover those): what reading
 * the regression input costs. What the ltr command says about one is
 * tests/e2e/test_findings_cli.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ltr/trace.h>

static const char *regression(const char *name)
{
    static char path[4096];
    const char *src = getenv("LTR_SOURCE_DIR");
    assert_non_null(src);
    snprintf(path, sizeof path, "%s/tests/fuzz/regressions/%s", src, name);
    return path;
}

/* In a child: reads the trace to the end and checks the stack of node
 * 0xffffff of pid 100..103 is its one frame; exits 0 if all is as written. */
static void read_nodes_trace(const char *path)
{
    ltr_trace *t;
    ltr_error err;
    const ltr_event *ev;
    if (ltr_trace_open(path, &t, &err) != 0)
        _exit(10);
    while (ltr_trace_next(t, &ev, &err) == 1)
        ;
    for (uint32_t p = 0; p < 4; p++) {
        const ltr_stack *s = ltr_trace_stack_find(t, 100 + p, 0xffffff);
        if (!s || s->frame_count != 1 || s->frames[0] != 0x401000 + p)
            _exit(11 + (int)p);
    }
    ltr_trace_close(t);
    _exit(0);
}

/* Frame node tables were arrays indexed by node id: a 200-byte trace naming
 * node 2^24 - 1 in four processes made the reader allocate and clear 1 GiB
 * (8 GiB and 111 s of `ltr info` for 32 processes in 1 kB). */
static void frame_node_ids_cost_only_the_nodes(void **state)
{
    const char *f = regression("trace/frame-node-ids-near-2-24.ltr");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        read_nodes_trace(f);
    int status;
    struct rusage ru;
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* ru_maxrss is in KiB; the tables of four one-node processes fit in far
     * less than this bound, whatever sanitizer the build has. */
    assert_true(ru.ru_maxrss < 256 * 1024);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(frame_node_ids_cost_only_the_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
