/*
 * tests/event/test_registry.c — the registry's session slots as recorders
 * end them. A recorder ends its session twice (at stop, and again as it
 * exits), and between the two another recorder may claim the freed slot:
 * the second end must leave that session alone. When it cleared the slot's
 * provider bits regardless, a traced program of the new session stopped
 * writing without a loss being counted (`ltr record` of two commands at
 * once, 1 run in about 200: tests/e2e/test_merge.c saw a trace of 28 913
 * events instead of 2 097 181, "0 lost").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "event/registry.h"
#include "prim/prim.h"
#include "util/testutil.h"

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

int main(void)
{
    tu_sandbox(); /* a registry of our own (LTR_RUNTIME_DIR) */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_end_leaves_the_next_session),
        cmocka_unit_test(test_reap_frees_only_the_dead),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tu_sandbox_end();
    return rc;
}
