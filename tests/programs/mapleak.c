/*
 * tests/programs/mapleak.c — a program that maps memory itself, with known
 * results (docs/system-provider.md, VirtualAllocation): each function below
 * leaves a known number of mapped bytes, so `ltr analyze --mapped` can be
 * checked to the byte and by stack.
 *   leak_maps:   8 anonymous maps of 64 KiB, 3 unmapped again: 327680 bytes
 *   punch_hole:  one map of 256 KiB, its middle 64 KiB unmapped: 196608 bytes
 *                in two ranges
 *   grow_map:    64 KiB mremap'ed to 192 KiB (it may move): 196608 bytes
 *                under the mremap's stack (grow_map)
 *   file_map:    a file mapped and unmapped: nothing
 *   give_back:   madvise(MADV_DONTNEED) of one of leak_maps' maps: the
 *                mapping stays, 65536 bytes given back
 *   move_break:  sbrk up 64 KiB and down 32 KiB: 32768 bytes of break
 * With LTR_TEST_GATE=FILE in its environment it says "waiting" and waits
 * (a minute at most) for FILE to exist first: a test attaches the agent
 * late meanwhile (ltr start --pid), so the calls go through its GOT hooks.
 * Built without frame pointers and optimized, like the other heap targets;
 * noinline keeps each stack apart.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define KIB 1024ul
#define NOINLINE __attribute__((noinline))

static void *map_anon(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memset(p, 1, n);
    return p;
}

static void *kept[8];

NOINLINE void leak_maps(void)
{
    for (int i = 0; i < 8; i++)
        kept[i] = map_anon(64 * KIB);
    for (int i = 0; i < 3; i++)
        munmap(kept[i], 64 * KIB);
}

NOINLINE void punch_hole(void)
{
    char *p = map_anon(256 * KIB);
    munmap(p + 96 * KIB, 64 * KIB);
}

NOINLINE void grow_map(void)
{
    void *p = map_anon(64 * KIB);
    void *q = mremap(p, 64 * KIB, 192 * KIB, MREMAP_MAYMOVE);
    if (q == MAP_FAILED) {
        perror("mremap");
        exit(1);
    }
}

NOINLINE void file_map(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p != MAP_FAILED)
        munmap(p, 4096);
}

NOINLINE void give_back(void)
{
    madvise(kept[7], 64 * KIB, MADV_DONTNEED);
}

static void gate(void)
{
    const char *go = getenv("LTR_TEST_GATE");
    if (!go)
        return;
    printf("waiting\n");
    fflush(stdout);
    for (int i = 0; i < 6000 && access(go, F_OK) != 0; i++)
        usleep(10000);
}

NOINLINE void move_break(void)
{
    /* nothing allocates in between: malloc takes a moved break as foreign */
    if (sbrk(64 * KIB) == (void *)-1 || sbrk(-(intptr_t)(32 * KIB)) == (void *)-1)
        exit(1);
}

int main(int argc, char **argv)
{
    gate();
    leak_maps();
    punch_hole();
    grow_map();
    file_map(argc > 1 ? argv[1] : argv[0]);
    give_back();
    move_break();
    errno = 0;
    int rc = munmap((char *)kept[7] + 1, 4096); /* not page-aligned: EINVAL, nothing recorded */
    printf("mapped %lu munmap %d errno %d\n", (5 * 64 + 192 + 192 + 32) * KIB, rc, errno);
    return 0;
}
