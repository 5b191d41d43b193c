/*
 * tests/e2e/test_partial_flushes.c — the recorder's partial flushes end to
 * end: a file-mode session of a producer that writes an event every 1.2 s
 * (tests/programs/slow_producer.c) holds them in one buffer written in
 * pieces, each a compact block (docs/trace-format.md; the blocks themselves
 * are tests/format/test_compact.c).
 */
#include "base/records.h" /* LTR_BLOCK_FLAG_COMPACT */
#include "util/testutil.h"

#include <ltr/trace.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

static void test_recorder_partial_flushes(void **state)
{
    tu_sandbox();
    const char *ltr = tu_ltr(), *dir = getenv("TMPDIR");
    tu_result r = tu_run("%s start --filemode --provider Test.Slow -o %s/p.ltr >/dev/null && %s 3; "
                         "s=$?; %s stop %s/partial.ltr >/dev/null && exit $s",
                         ltr, dir, tu_test_bin("slow_producer"), ltr, dir);
    if (r.status != 0)
        fail_msg("session failed (%d): %s", r.status, r.err);
    tu_free(&r);
    char trace[600];
    snprintf(trace, sizeof trace, "%s/partial.ltr", dir);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(trace, &t, &err), 0);
    const ltr_event *ev;
    uint64_t last = 0, seq = 0;
    int n = 0;
    while (ltr_trace_next(t, &ev, &err) > 0) {
        uint64_t i, at;
        int64_t neg;
        assert_int_equal(ltr_event_get_u64(ev, "i", &i), 0);
        assert_int_equal(ltr_event_get_i64(ev, "neg", &neg), 0);
        assert_int_equal(ltr_event_get_u64(ev, "at", &at), 0);
        assert_true(i == (uint64_t)n * 1000 && neg == -n && at == 0x7f0000000000ull + (uint64_t)n);
        if (n++ == 0)
            seq = ev->buffer_seq;
        assert_true(ev->buffer_seq == seq); /* one buffer ... */
        assert_true(ev->block_flags & LTR_BLOCK_FLAG_COMPACT);
        assert_true(ev->ts > last + 1000000000ull);
        last = ev->ts;
    }
    ltr_trace_summary s;
    ltr_trace_summarize(t, &s);
    assert_int_equal(n, 3);
    assert_int_equal(s.damage, 0);
    assert_true(s.blocks >= 3); /* ... written in pieces */
    const char *end = ltr_trace_kv(t, LTR_KV_END, "clock.end_ns");
    assert_non_null(end);
    assert_true(s.first_ts >= ltr_trace_origin_ns(t) && s.last_ts <= strtoull(end, NULL, 10));
    ltr_trace_close(t);
    tu_sandbox_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorder_partial_flushes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
