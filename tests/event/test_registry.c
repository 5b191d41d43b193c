/*
 * tests/event/test_registry.c — the registry's session slots as recorders
 * end them. A recorder ends its session twice (at stop, and again as it
 * exits), and between the two another recorder may claim the freed slot:
 * the second end must leave that session alone. When it cleared the slot's
 * provider bits regardless, a traced program of the new session stopped
 * writing without a loss being counted (`ltr record` of two commands at
 * once, 1 run in about 200: tests/e2e/test_merge.c saw a trace of 28 913
 * events instead of 2 097 181, "0 lost"). And slots a hostile writer of
 * the registry forged: nothing outside the runtime directory is reached.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "event/producer.h"
#include "event/registry.h"
#include "prim/prim.h"
#include "util/testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static ltr_reg_provider *provider(ltr_registry *reg, const char *name)
{
    ltr_guid g;
    ltr_guid_from_name(name, &g);
    ltr_reg_provider *p = ltr_registry_provider(reg, &g, name);
    assert_non_null(p);
    return p;
}

/* What setup.c does once a recorder has its slot, in short. */
static void publish(ltr_registry *reg, unsigned s, uint64_t inc, ltr_reg_provider *p)
{
    snprintf(reg->sessions[s].name, sizeof reg->sessions[s].name, "s%u", s);
    reg->sessions[s].recorder_pid = (uint32_t)getpid();
    atomic_store(&reg->sessions[s].incarnation, inc);
    atomic_fetch_or(&p->sessions, 1u << s);
}

static void test_second_end_leaves_the_next_session(void **state)
{
    (void)state;
    ltr_error err = {0};
    ltr_registry *reg = ltr_registry_get(&err);
    assert_non_null(reg);
    ltr_registry_lock();
    ltr_reg_provider *heap = provider(reg, "Test.Heap"), *other = provider(reg, "Test.Other");
    const unsigned s = 3;
    publish(reg, s, 41, heap);
    publish(reg, s + 1, 43, other); /* a neighbour, never touched */
    assert_true(ltr_registry_release(reg, s, 41)); /* the first recorder stops */
    assert_int_equal(atomic_load(&reg->sessions[s].incarnation), 0);
    assert_false(atomic_load(&heap->sessions) & (1u << s));
    publish(reg, s, 42, heap); /* another claims the slot at once */
    assert_false(ltr_registry_release(reg, s, 41)); /* the first one exits */
    assert_int_equal(atomic_load(&reg->sessions[s].incarnation), 42);
    assert_true(atomic_load(&heap->sessions) & (1u << s));
    assert_false(ltr_registry_release(reg, s, 0)); /* a recorder that never published */
    assert_true(atomic_load(&heap->sessions) & (1u << s));
    assert_true(ltr_registry_release(reg, s, 42));
    assert_false(atomic_load(&heap->sessions) & (1u << s));
    assert_int_equal(atomic_load(&reg->sessions[s + 1].incarnation), 43);
    assert_true(atomic_load(&other->sessions) & (1u << (s + 1)));
    assert_true(ltr_registry_release(reg, s + 1, 43));
    ltr_registry_unlock();
}

static bool lives_if_53(const ltr_reg_session *rs, uint64_t inc, void *ctx)
{
    (void)rs;
    (void)ctx;
    return inc == 53;
}

/* A slot whose recorder is gone is reaped; a live one is kept. */
static void test_reap_frees_only_the_dead(void **state)
{
    (void)state;
    ltr_error err = {0};
    ltr_registry *reg = ltr_registry_get(&err);
    assert_non_null(reg);
    ltr_registry_lock();
    ltr_reg_provider *heap = provider(reg, "Test.Heap");
    publish(reg, 5, 51, heap);
    publish(reg, 6, 52, heap);
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    assert_true(child > 0);
    int st;
    waitpid(child, &st, 0);
    reg->sessions[6].recorder_pid = (uint32_t)child; /* gone now */
    /* one whose pid is gone from here but which the recorder's side says
     * lives (its record locked: a recorder in another pid namespace) stays */
    publish(reg, 7, 53, heap);
    reg->sessions[7].recorder_pid = (uint32_t)child;
    ltr_registry_reap(reg, lives_if_53, NULL);
    assert_int_equal(atomic_load(&reg->sessions[7].incarnation), 53);
    assert_true(atomic_load(&heap->sessions) & (1u << 7));
    assert_true(ltr_registry_release(reg, 7, 53));
    assert_int_equal(atomic_load(&reg->sessions[5].incarnation), 51);
    assert_true(atomic_load(&heap->sessions) & (1u << 5));
    assert_int_equal(atomic_load(&reg->sessions[6].incarnation), 0);
    assert_false(atomic_load(&heap->sessions) & (1u << 6));
    assert_true(ltr_registry_release(reg, 5, 51));
    ltr_registry_unlock();
}

/* A listening socket at path, non-blocking: accept says whether anyone connected. */
static int listener(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof sa.sun_path);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 8), 0);
    return fd;
}

static bool connected(int listen_fd)
{
    int fd = accept(listen_fd, NULL, NULL);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

static void forge(ltr_registry *reg, unsigned s, const char *name, size_t len, uint64_t inc, pid_t pid)
{
    memcpy(reg->sessions[s].name, name, len); /* len: 64 leaves it without its 0 */
    reg->sessions[s].recorder_pid = (uint32_t)pid;
    atomic_store(&reg->sessions[s].incarnation, inc);
}

/* Any process that maps the registry can write it: a root service's
 * worker made www-data after the agent mapped root's (docs/design.md, "A
 * shim in every process"). Names that are no session names made root's
 * traced programs and root's `ltr status` go outside the runtime
 * directory: "../out/y" was a socket of the writer's, which the producer
 * attached to (its events and stacks to the writer) and `ltr status` and
 * `ltr marker` asked; "../out/x" with a dead pid made `ltr status` open
 * the writer's file "../out/x.77.session" (a FIFO: it waited on it, or a
 * file it held locked kept the forged session). A name without its 0 and
 * one with a terminal escape were shown. Now each is cleared, with a
 * warning; nothing outside is touched. And a next incarnation written 0
 * gave a new session incarnation 0, a free slot's. */
static void test_forged_sessions_reach_nothing_outside(void **state)
{
    (void)state;
    ltr_error err = {0};
    ltr_registry *reg = ltr_registry_get(&err);
    assert_non_null(reg);
    const char *box = getenv("TMPDIR");
    char out[300], path[400];
    snprintf(out, sizeof out, "%s/out", box);
    assert_int_equal(mkdir(out, 0700), 0);
    snprintf(path, sizeof path, "%s/y.sock", out);
    int ysock = listener(path);
    snprintf(path, sizeof path, "%s/x.77.session", out);
    assert_int_equal(mkfifo(path, 0600), 0);
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    int st;
    waitpid(gone, &st, 0);
    char unended[LTR_SESSION_NAME_MAX];
    memset(unended, 'a', sizeof unended);
    ltr_registry_lock();
    forge(reg, 8, "../out/y", 9, 76, getpid());
    forge(reg, 9, "../out/x", 9, 77, gone);
    forge(reg, 10, unended, sizeof unended, 78, getpid());
    static const char escape[] = "\033]2;owned\007";
    forge(reg, 11, escape, sizeof escape, 79, getpid());
    ltr_registry_unlock();

    bool unreachable;
    assert_null(ltr_producer_session(reg, 8, &unreachable)); /* a traced program of the user */
    assert_false(connected(ysock));

    pid_t fifo = tu_fifo_writer(path);
    tu_result r = tu_run("%s status", tu_ltr());
    bool opened = tu_fifo_opened(fifo);
    if (r.status != 0 || !strstr(r.out, "no session is running") || !strstr(r.err, "4 session(s) listed") ||
        strchr(r.out, '\033') || strchr(r.err, '\033'))
        fail_msg("status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    assert_false(opened);
    assert_false(connected(ysock));
    for (unsigned s = 8; s < 12; s++)
        assert_int_equal(atomic_load(&reg->sessions[s].incarnation), 0);

    ltr_registry_lock();
    forge(reg, 8, "../out/y", 9, 76, getpid());
    ltr_registry_unlock();
    r = tu_run("%s marker hello", tu_ltr());
    if (r.status != 1 || !strstr(r.err, "no session is running"))
        fail_msg("status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    assert_false(connected(ysock));
    close(ysock);

    atomic_store(&reg->next_incarnation, 0);
    r = tu_run("%s start --instance inc0 --filemode -o %s/inc0.ltr >/dev/null && %s status; "
               "%s cancel --instance inc0 >/dev/null", tu_ltr(), box, tu_ltr(), tu_ltr());
    if (r.status != 0 || !strstr(r.out, "inc0") || strstr(r.out, "no session is running"))
        fail_msg("the session is not listed: status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
}

int main(void)
{
    tu_sandbox(); /* a registry of our own (LTR_RUNTIME_DIR) */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_end_leaves_the_next_session),
        cmocka_unit_test(test_reap_frees_only_the_dead),
        cmocka_unit_test(test_forged_sessions_reach_nothing_outside),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tu_sandbox_end();
    return rc;
}
