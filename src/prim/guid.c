/*
 * prim/guid.c — GUID text form and the name-derived provider GUID of ETW
 * TraceLogging/EventSource, so a provider named the same on Windows and on
 * Linux has the same GUID and a .wprp file can name it either way.
 */
#include <ltr/common.h>

#include "prim/sha1.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

void ltr_guid_format(const ltr_guid *g, char out[37])
{
    const uint8_t *b = g->b;
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

int ltr_guid_parse(const char *text, ltr_guid *out)
{
    size_t n = strlen(text);
    if (n == 38 && text[0] == '{' && text[37] == '}') {
        text++;
        n = 36;
    }
    if (n != 36)
        return -1;
    int k = 0;
    for (size_t i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (text[i] != '-')
                return -1;
            i++;
            continue;
        }
        int hi = hexval((unsigned char)text[i]), lo = hexval((unsigned char)text[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out->b[k++] = (uint8_t)(hi << 4 | lo);
        i += 2;
    }
    return 0;
}

void ltr_guid_from_name(const char *name, ltr_guid *out)
{
    /* The namespace of EventSource.GetGuid: 482C2DB2-C390-47C8-87F8-1A15BFC130FB */
    static const uint8_t ns[16] = {0x48, 0x2C, 0x2D, 0xB2, 0xC3, 0x90, 0x47, 0xC8,
                                   0x87, 0xF8, 0x1A, 0x15, 0xBF, 0xC1, 0x30, 0xFB};
    ltr_sha1 ctx;
    ltr_sha1_init(&ctx);
    ltr_sha1_update(&ctx, ns, sizeof ns);
    /* Upper-cased UTF-16BE. Provider names are ASCII in practice; other bytes
     * are widened as Latin-1, which matches .NET for that range. */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        uint8_t be[2] = {0, (uint8_t)toupper(*p)};
        ltr_sha1_update(&ctx, be, 2);
    }
    uint8_t h[LTR_SHA1_DIGEST_SIZE];
    ltr_sha1_digest(&ctx, h);
    h[7] = (uint8_t)((h[7] & 0x0F) | 0x50);
    /* .NET reads the first three fields little-endian; our bytes are text order. */
    const uint8_t order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
    for (int i = 0; i < 16; i++)
        out->b[i] = h[order[i]];
}
