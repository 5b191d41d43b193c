/*
 * system/pressure.c — how long tasks of this machine waited for a CPU, from
 * the kernel's pressure stall information (/proc/pressure/cpu, "some"
 * total: microseconds during which at least one runnable task had no CPU).
 * The recorder reads it to tell whether the CPU it spends on compression is
 * taken from someone (recorder/drain.c). Absent where the kernel has no PSI
 * (CONFIG_PSI off, or psi=0 on its command line).
 */
#include "system/system.h"
#include "prim/prim.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int ltr_cpu_waited_us(uint64_t *us)
{
    char buf[512];
    ssize_t len = ltr_read_small_file("/proc/pressure/cpu", buf, sizeof buf);
    if (len < 0)
        return (int)len;
    const char *total = strncmp(buf, "some ", 5) == 0 ? strstr(buf, " total=") : NULL;
    if (!total || sscanf(total, " total=%" SCNu64, us) != 1)
        return -EPROTO;
    return 0;
}
