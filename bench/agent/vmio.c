/*
 * bench/agent/vmio.c — the cost to a traced program of the agent's
 * VirtualAllocation and FileIO hooks (docs/benchmarks.md, "Mappings and
 * files"): nanoseconds per mmap+munmap pair (64 KiB, anonymous, untouched),
 * per write of 64 bytes to /dev/null, per pread of 64 bytes of a file, per
 * open+close of a file, and per readlink of /proc/self/fd/N (what a recorded
 * open adds of its own). Run plain, with the agent preloaded and no
 * session, and under sessions with and without the keywords
 * (bench/agent/vmio.sh).
 * Usage: vmio FILE [ITERATIONS]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    long n = argc > 2 ? atol(argv[2]) : 200000;
    char buf[64] = {0};
    int file = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    int null = open("/dev/null", O_WRONLY);
    if (file < 0 || null < 0 || pwrite(file, buf, sizeof buf, 4096) != sizeof buf)
        return 1;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        void *p = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED || munmap(p, 64 << 10))
            return 1;
    }
    double t1 = now();
    for (long i = 0; i < n; i++)
        if (write(null, buf, sizeof buf) != sizeof buf)
            return 1;
    double t2 = now();
    for (long i = 0; i < n; i++)
        if (pread(file, buf, sizeof buf, 64) != sizeof buf)
            return 1;
    double t3 = now();
    long m = n / 10;
    for (long i = 0; i < m; i++) {
        int fd = open(argv[1], O_RDONLY);
        if (fd < 0 || close(fd))
            return 1;
    }
    double t4 = now();
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", file);
    for (long i = 0; i < m; i++)
        if (readlink(link, target, sizeof target) <= 0)
            return 1;
    double t5 = now();
    printf("mmap+munmap %.0f ns, write %.0f ns, pread %.0f ns, open+close %.0f ns, readlink %.0f ns\n",
           (t1 - t0) / n, (t2 - t1) / n, (t3 - t2) / n, (t4 - t3) / m, (t5 - t4) / m);
    close(file);
    close(null);
    unlink(argv[1]);
    return 0;
}
