/*
 * tests/fuzz/fuzz_input.c — the in-memory input files of fuzz_input.h, and
 * the CRC rewriting the trace targets share.
 */
#include "fuzz_input.h"

#include "format/chunk.h"
#include "base/records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *in_memfd(int *fdp, char *path, size_t pathsize, const uint8_t *data, size_t size)
{
    int fd = *fdp;
    if (fd < 0) {
        fd = memfd_create("ltr-fuzz-input", MFD_CLOEXEC);
        if (fd < 0) {
            perror("fuzz: memfd_create");
            abort();
        }
        snprintf(path, pathsize, "/proc/self/fd/%d", fd);
        *fdp = fd;
    }
    if (ftruncate(fd, 0) != 0) {
        perror("fuzz: ftruncate");
        abort();
    }
    size_t done = 0;
    while (done < size) {
        ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
        if (n <= 0) {
            perror("fuzz: pwrite");
            abort();
        }
        done += (size_t)n;
    }
    return path;
}

const char *fuzz_input_path(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    return in_memfd(&fd, path, sizeof path, data, size);
}

const char *fuzz_second_input_path(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    return in_memfd(&fd, path, sizeof path, data, size);
}

static void fix_crcs(uint8_t *p, size_t len)
{
    if (len < LTR_FILE_HEADER_SIZE || ltr_get_u32(p + 12) != 0)
        return;
    size_t pos = LTR_FILE_HEADER_SIZE;
    while (len - pos >= LTR_CHUNK_HEADER_SIZE && memcmp(p + pos, LTR_CHUNK_MAGIC, 4) == 0) {
        uint8_t *h = p + pos;
        size_t payload = ltr_get_u32(h + 8);
        size_t left = len - pos - LTR_CHUNK_HEADER_SIZE;
        if (payload <= left)
            ltr_put_u32(h + 24, ltr_crc32(h + LTR_CHUNK_HEADER_SIZE, payload));
        ltr_put_u32(h + 28, ltr_crc32(h, 28));
        if (payload > left)
            break;
        pos += LTR_CHUNK_HEADER_SIZE + payload;
    }
}

uint8_t *fuzz_fixed_copy(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        abort();
    memcpy(copy, data, size);
    fix_crcs(copy, size);
    return copy;
}
