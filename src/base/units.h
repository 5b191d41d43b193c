/*
 * base/units.h — byte sizes as people write and read them: "40M", "40MB",
 * "3G", "512KiB" in options (binary multiples: K = KB = KiB = 1024, as
 * free(1), ps and WPR's own sizes count), and "3.0 GiB" in what ltr prints.
 */
#ifndef LTR_BASE_UNITS_H
#define LTR_BASE_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Parses a size: a decimal number (a fraction allowed: "1.5G") and an
 * optional unit B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB (any case), no
 * space required between them. Returns 0, -EINVAL (not a size), or -ERANGE
 * (above 2^62 bytes). */
int ltr_size_parse(const char *text, uint64_t *out);
/* "123 B", "40.0 KiB", "3.00 GiB": three significant digits. Returns out. */
char *ltr_size_format(uint64_t bytes, char *out, size_t size);
/* A signed size: "+40.0 MiB", "-1.2 KiB", "0 B". Returns out. */
char *ltr_size_format_signed(int64_t bytes, char *out, size_t size);

#endif
