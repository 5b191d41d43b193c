/*
 * lib/trace-abi.c — compile-time checks of the ABI of libltr-trace.so: the
 * numbers include/ltr/trace.h states must be those of the trace format
 * (base/records.h), or the build stops.
 */
#include <ltr/trace.h>

#include "base/records.h"

#include <assert.h>

/* ltr_trace_kv's lists are named by the chunk types that carry them. */
static_assert(LTR_KV_HEADER == (int)LTR_CHUNK_HEADER, "LTR_KV_HEADER is the HEADER chunk type");
static_assert(LTR_KV_END == (int)LTR_CHUNK_END, "LTR_KV_END is the END chunk type");
