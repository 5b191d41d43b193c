/*
 * bench/peers/lttng_tp.h — the LTTng-UST tracepoint that mirrors the event of
 * bench/write_path.c (a u64 and a u32), for the side-by-side write-path run.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER ltr_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(LTR_BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define LTR_BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(ltr_bench, tick,
    LTTNG_UST_TP_ARGS(uint64_t, seq, uint32_t, value),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, seq, seq)
        lttng_ust_field_integer(uint32_t, value, value)))

#endif

#include <lttng/tracepoint-event.h>
