/*
 * tests/fuzz/fuzz_cpublock.c — fuzz target of the recorder's reading of a
 * CPU's buffer (ring.h, "per-CPU buffers"; format/cpublock.c): the input is
 * the buffer's committed bytes as a traced program may have left them in
 * shared memory, any bytes at all. ltr_cpu_records_prefix frames them, and
 * ltr_writer_cpu_block splits that prefix by thread into a trace (in a
 * memfd, through the real writer, which re-encodes the heap layouts'
 * addresses as references); the trace is then read back whole. No input may
 * make either read or write out of bounds.
 */
#include "fuzz_input.h"

#include "base/heap_events.h"
#include "format/compact.h"
#include "format/writer.h"

#include <ltr/trace.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* The heap agent's layouts as ids 1 to 3 (docs/heap-events.md), so that
 * records naming them go through the writer's address references (format 4,
 * format/refwrite.c) on their way to the file. */
static void heap_layouts(ltr_bytes *b)
{
    static const char *const names[3] = {"Alloc", "Free", "Realloc"};
    static const char *const fields[3][5] = {{"address", "size", "stack", "function"},
                                             {"address", "function"},
                                             {"old_address", "address", "size", "stack", "function"}};
    static const uint8_t types[3][5] = {{16, 14, 14, 1}, {16, 1}, {16, 16, 14, 14, 1}};
    static const uint16_t counts[3] = {4, 2, 5};
    ltr_guid g;
    ltr_guid_from_name(LTR_HEAP_PROVIDER, &g);
    for (uint16_t id = 1; id <= 3; id++) {
        size_t r = ltr_bytes_record_begin(b, LTR_META_LAYOUT);
        ltr_bytes_put_u32(b, id);
        ltr_bytes_put_mem(b, g.b, 16);
        ltr_bytes_put_u16(b, id);
        ltr_bytes_put_u8(b, 5);
        ltr_bytes_put_u8(b, 0);
        ltr_bytes_put_u64(b, 0);
        ltr_bytes_put_str(b, names[id - 1]);
        ltr_bytes_put_u16(b, counts[id - 1]);
        for (unsigned i = 0; i < counts[id - 1]; i++) {
            ltr_bytes_put_u8(b, types[id - 1][i]);
            ltr_bytes_put_str(b, fields[id - 1][i]);
        }
        ltr_bytes_record_end(b, r);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0; /* a buffer of ltr record's is 16 KB; ltr start's at most 16 MB, framed the same */
    uint32_t count;
    size_t len = ltr_cpu_records_prefix(data, size, &count);
    if (len > size)
        abort();
    int fd = memfd_create("fuzz-cpublock", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int keep = dup(fd); /* the writer closes its own */
    ltr_writer *w;
    ltr_error err;
    if (ltr_writer_open_fd(&w, fd, path, &err) != 0)
        abort();
    ltr_bytes meta = {0};
    heap_layouts(&meta);
    if (meta.failed || ltr_writer_metadata(w, meta.data, meta.len, &err) != 0)
        abort();
    ltr_bytes_free(&meta);
    ltr_block_info info = {.collector = 0, .pid = 7, .tid = 0, .seq = 1, .event_count = count};
    int rc = ltr_writer_cpu_block(w, &info, data, len, &err);
    if (rc == 0)
        rc = ltr_writer_flush(w, 0, &err);
    ltr_writer_close(w);
    if (rc == 0) {
        /* Events of layouts 1 to 3 are heap events, re-encoded with address
         * references; others name layouts no METADATA described: each is
         * damage of its own, and the reader still walks every record. */
        snprintf(path, sizeof path, "/proc/self/fd/%d", keep);
        ltr_trace *t;
        if (ltr_trace_open(path, &t, &err) == 0) {
            const ltr_event *ev;
            while (ltr_trace_next(t, &ev, &err) > 0)
                ;
            ltr_trace_summary s;
            ltr_trace_summarize(t, &s);
            ltr_trace_close(t);
        }
    }
    close(keep);
    return 0;
}
