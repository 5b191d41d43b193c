/*
 * base/units.c — sizes with units, parsed and printed (units.h).
 */
#include "base/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    int shift;
} units[] = {
    {"", 0},    {"b", 0},    {"k", 10},   {"kb", 10},  {"kib", 10}, {"m", 20},   {"mb", 20},
    {"mib", 20}, {"g", 30},  {"gb", 30},  {"gib", 30}, {"t", 40},   {"tb", 40},  {"tib", 40},
};

int ltr_size_parse(const char *text, uint64_t *out)
{
    if (!text || !isdigit((unsigned char)*text))
        return -EINVAL; /* no sign, no leading space, no "inf" or "nan" */
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text)
        return -EINVAL;
    while (*end == ' ')
        end++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].name))
            continue;
        double bytes = ldexp(v, units[i].shift);
        if (bytes >= ldexp(1.0, 62))
            return -ERANGE;
        *out = (uint64_t)(bytes + 0.5);
        return 0;
    }
    return -EINVAL;
}

char *ltr_size_format(uint64_t bytes, char *out, size_t size)
{
    static const char *names[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(out, size, "%llu B", (unsigned long long)bytes);
        return out;
    }
    double v = (double)bytes / 1024;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    snprintf(out, size, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, names[u]);
    return out;
}

char *ltr_size_format_signed(int64_t bytes, char *out, size_t size)
{
    char mag[32];
    uint64_t m = bytes < 0 ? (uint64_t)0 - (uint64_t)bytes : (uint64_t)bytes;
    ltr_size_format(m, mag, sizeof mag);
    snprintf(out, size, "%s%s", bytes > 0 ? "+" : bytes < 0 ? "-" : "", mag);
    return out;
}
