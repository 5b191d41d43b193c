/*
 * tests/fuzz/seeds.c — makes the trace seeds of tests/fuzz/corpus/trace (not
 * run by the tests; the seeds are committed). `fuzz_seeds gen DIR` writes
 * small known traces with the format tests' generator (tests/format/gen.c);
 * `fuzz_seeds raw IN OUT` rewrites any trace, e.g. one from `ltr record`,
 * with every chunk stored uncompressed, so that mutations of the seeds reach
 * the record parsers instead of failing in zstd.
 */
#include "../format/gen.h"

#include "format/chunk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* Appends one chunk, uncompressed; 0, or -1 if it does not decompress. */
static int put_raw_chunk(ltr_bytes *out, const ltr_chunk_header *h, const uint8_t *payload)
{
    uint8_t *raw = malloc(h->raw_size ? h->raw_size : 1);
    if (!raw)
        return -1;
    size_t n = h->payload_size;
    if (h->flags & LTR_CHUNK_FLAG_ZSTD)
        n = ZSTD_decompress(raw, h->raw_size, payload, h->payload_size);
    else
        memcpy(raw, payload, n);
    if (ZSTD_isError(n) || n != h->raw_size) {
        free(raw);
        return -1;
    }
    ltr_chunk_header c = *h;
    c.flags = 0;
    c.payload_size = (uint32_t)n;
    c.payload_crc = ltr_crc32(raw, n);
    ltr_chunk_header_encode(&c, ltr_bytes_grow(out, LTR_CHUNK_HEADER_SIZE));
    ltr_bytes_put_mem(out, raw, n);
    free(raw);
    return 0;
}

static int uncompress_trace(const char *in, const char *outpath)
{
    size_t len;
    uint8_t *p = gen_slurp(in, &len);
    if (!p || len < LTR_FILE_HEADER_SIZE) {
        fprintf(stderr, "%s: cannot read a trace\n", in);
        free(p);
        return -1;
    }
    ltr_bytes out = {0};
    ltr_bytes_put_mem(&out, p, LTR_FILE_HEADER_SIZE);
    size_t pos = LTR_FILE_HEADER_SIZE;
    int rc = 0;
    while (rc == 0 && len - pos >= LTR_CHUNK_HEADER_SIZE) {
        ltr_chunk_header h;
        if (ltr_chunk_header_decode(p + pos, &h) != LTR_CHUNK_OK ||
            h.payload_size > len - pos - LTR_CHUNK_HEADER_SIZE ||
            put_raw_chunk(&out, &h, p + pos + LTR_CHUNK_HEADER_SIZE) != 0) {
            fprintf(stderr, "%s: damaged chunk at offset %zu\n", in, pos);
            rc = -1;
        }
        pos += LTR_CHUNK_HEADER_SIZE + h.payload_size;
    }
    if (rc == 0)
        rc = out.failed ? -1 : gen_spit(outpath, out.data, out.len);
    ltr_bytes_free(&out);
    free(p);
    return rc;
}

static int gen_seed(const char *dir, const char *name, const gen_opts *o)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    const char *tmp = gen_tmp(name);
    int rc = gen_write(tmp, o, NULL) == 0 ? uncompress_trace(tmp, path) : -1;
    remove(tmp);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "gen") == 0) {
        gen_opts compact = {.blocks = 3, .events_per_block = 4, .chunk_target = 0, .with_end = 1};
        gen_opts fixed = {.blocks = 2, .events_per_block = 3, .chunk_target = 1 << 20, .with_end = 1,
                          .fixed = 1};
        gen_opts cut = {.blocks = 1, .events_per_block = 6, .chunk_target = 0, .with_end = 0};
        return gen_seed(argv[2], "gen-compact.ltr", &compact) || gen_seed(argv[2], "gen-fixed.ltr", &fixed) ||
               gen_seed(argv[2], "gen-no-end.ltr", &cut);
    }
    if (argc == 4 && strcmp(argv[1], "raw") == 0)
        return uncompress_trace(argv[2], argv[3]) ? 1 : 0;
    fprintf(stderr, "usage: fuzz_seeds gen DIR | fuzz_seeds raw IN.ltr OUT.ltr\n");
    return 2;
}
