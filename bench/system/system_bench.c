/*
 * bench/system/system_bench.c — what the system provider costs: the time of
 * one memory sample of a process (/proc/PID/status and /proc/PID/stat) and
 * of the machine (/proc/meminfo), as the recorder's thread takes them once
 * per interval per target. Usage: system_bench [PID] [N]; prints µs per read.
 */
#include "system/system.h"
#include "prim/prim.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    pid_t pid = argc > 1 ? atoi(argv[1]) : getpid();
    int n = argc > 2 ? atoi(argv[2]) : 20000;
    ltr_proc_memory m;
    uint64_t t0 = ltr_now_ns();
    for (int i = 0; i < n; i++)
        if (ltr_proc_memory_read(pid, &m) != 0)
            return fprintf(stderr, "process %d: cannot read its counters\n", (int)pid), 1;
    uint64_t t1 = ltr_now_ns();
    uint64_t total, avail;
    for (int i = 0; i < n; i++)
        ltr_system_memory_read(&total, &avail);
    uint64_t t2 = ltr_now_ns();
    printf("process sample (status + stat of pid %d): %.2f us\n", (int)pid, (double)(t1 - t0) / n / 1e3);
    printf("machine sample (/proc/meminfo): %.2f us\n", (double)(t2 - t1) / n / 1e3);
    return 0;
}
