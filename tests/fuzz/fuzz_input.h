/*
 * tests/fuzz/fuzz_input.h — what the fuzz targets share: the libFuzzer entry
 * point they each define, and a path for the input bytes. The trace reader
 * and the profile loader take a path, so each input is put in one anonymous
 * in-memory file (memfd) reused for every input, opened through /proc: a run
 * never writes a file anywhere.
 */
#ifndef LTR_TESTS_FUZZ_INPUT_H
#define LTR_TESTS_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

/* Defined by each target (fuzz_trace.c, fuzz_wprp.c); called by libFuzzer in
 * the fuzz build and by replay.c in the normal builds. Always returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* "/proc/self/fd/N" holding exactly these bytes, valid until the next call;
 * aborts if the memfd cannot be made (nothing could be tested). */
const char *fuzz_input_path(const uint8_t *data, size_t size);
/* The same in a second memfd, for a target that needs two files at once
 * (fuzz_merge). */
const char *fuzz_second_input_path(const uint8_t *data, size_t size);

/* A copy of a trace input (malloc'd, the caller frees it) whose chain of
 * chunks after the file header has its CRCs rewritten, so that mutations
 * reach the chunks' parsers instead of stopping at the first check; a file
 * whose reserved header field (bytes 12..15) is not zero is copied as it
 * is, which keeps the damage and resync paths reachable. */
uint8_t *fuzz_fixed_copy(const uint8_t *data, size_t size);

#endif
