/*
 * tests/fuzz/fuzz_cpublock.c — fuzz target of the recorder's reading of a
 * CPU's buffer (ring.h, "per-CPU buffers"; format/cpublock.c): the input is
 * the buffer's committed bytes as a traced program may have left them in
 * shared memory, any bytes at all. ltr_cpu_records_prefix frames them, and
 * ltr_writer_cpu_block splits that prefix by thread into a trace (in a
 * memfd, through the real writer); the trace is then read back whole. No
 * input may make either read or write out of bounds.
 */
#include "fuzz_input.h"

#include "format/compact.h"
#include "format/writer.h"

#include <ltr/trace.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

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
    ltr_block_info info = {.collector = 0, .pid = 7, .tid = 0, .seq = 1, .event_count = count};
    int rc = ltr_writer_cpu_block(w, &info, data, len, &err);
    if (rc == 0)
        rc = ltr_writer_flush(w, 0, &err);
    ltr_writer_close(w);
    if (rc == 0) {
        /* Events name layouts no METADATA described: each is damage of its
         * own, and the reader still walks every record the split wrote. */
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
