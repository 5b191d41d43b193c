#!/usr/bin/env python3
# bench/format/columns.py TRACE... — where a trace's bytes are: for each
# column of its EVENTS column blocks (docs/trace-format.md, "Column blocks"),
# the bytes raw and compressed apart at zstd level 7, and the pnew and pref
# codes' counts by kind; then the EVENTS chunks as stored and recompressed at
# level 7 (the writer compresses at level 3 while the machine's tasks wait
# for a CPU, so sizes of traces recorded under load are compared so).
# Columns are named L<layout id>.f<field> (t<type>, x<transform>): the heap
# layouts' pnew field is type 17, pref 18 (format/refs.h). What session 36
# measured node's trace with (docs/benchmarks.md, "Addresses stored as
# differences"). A block's time column stored as runs (format 8, flag bit 7)
# is counted as "time (runs)", apart from those stored delta by delta.
# Reads libzstd through ctypes: Debian's python3 has no zstd.
import collections
import ctypes
import signal
import struct
import sys

zstd = ctypes.CDLL("libzstd.so.1")
zstd.ZSTD_compress.restype = ctypes.c_size_t
zstd.ZSTD_decompress.restype = ctypes.c_size_t
zstd.ZSTD_compressBound.restype = ctypes.c_size_t
zstd.ZSTD_isError.restype = ctypes.c_uint

PNEW, PREF = 17, 18
FLAG_COMPACT, FLAG_REFS, FLAG_COLUMNS, FLAG_TIME_RUNS = 0x2, 0x4, 0x8, 0x80


def decompress(data, raw):
    out = ctypes.create_string_buffer(raw)
    n = zstd.ZSTD_decompress(out, raw, data, len(data))
    if zstd.ZSTD_isError(n) or n != raw:
        sys.exit("a chunk does not decompress: not an intact ltr trace")
    return out.raw[:n]


def compressed(data, level=7):
    if not data:
        return 0
    cap = zstd.ZSTD_compressBound(len(data))
    out = ctypes.create_string_buffer(cap)
    return zstd.ZSTD_compress(out, cap, bytes(data), len(data), level)


def uvar(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def chunks(data):
    """(type, raw payload) of each chunk, after the file header."""
    if data[:8] != b"LTRTRACE":
        sys.exit("not an ltr trace")
    i = 16
    while i + 32 <= len(data):
        if data[i:i + 4] != b"LTRC":
            sys.exit("no chunk at offset %d: not an intact ltr trace" % i)
        typ, flags, size, raw = struct.unpack_from("<HHII", data, i + 4)
        payload = data[i + 32:i + 32 + size]
        if len(payload) < size:
            sys.exit("the chunk at offset %d is cut short: a trace still being written, or damaged" % i)
        yield typ, decompress(payload, raw) if flags & 1 else payload
        i += 32 + size


def block_columns(body, flags=0):
    """(name, bytes) of each column of a column block (flags: the block's;
    format 8's time column as runs is named apart)."""
    k = 0
    n, k = uvar(body, k)
    names = ["layout", "time (runs)" if flags & FLAG_TIME_RUNS else "time"]
    for _ in range(n):
        lid, k = uvar(body, k)
        shape, k = uvar(body, k)
        nf = shape - 1 if shape else 0
        types, tr = body[k:k + nf], body[k + nf:k + 2 * nf]
        k += 2 * nf
        if shape == 0:
            names.append("L%d.whole" % lid)
        names += ["L%d.f%d (t%d, x%d)" % (lid, f, types[f], tr[f]) for f in range(nf)]
    for name in names:
        ln, k = uvar(body, k)
        yield name, body[k:k + ln]
        k += ln


def code_kinds(column, pref, counts):
    """Counts a pnew or pref column's values by how they are told."""
    k = 0
    while k < len(column):
        c, k = uvar(column, k)
        if c == 0:
            _, k = uvar(column, k)
            counts["as itself"] += 1
        elif pref:
            counts["after the previous free's" if c == 1 else "reference"] += 1
        else:
            counts["list place" if c <= 16 else "next" if c == 17 else "same" if c == 18 else "reference"] += 1


def report(path):
    cols = collections.defaultdict(bytearray)
    rows = bytearray()
    stored = level7 = 0
    kinds = collections.defaultdict(collections.Counter)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        sys.exit("%s: %s" % (path, e.strerror))
    for typ, p in chunks(data):
        if typ != 3:
            continue
        stored += len(p)
        level7 += compressed(p)
        j = 0
        while j < len(p):
            flags, = struct.unpack_from("<H", p, j + 6)
            count, length = struct.unpack_from("<II", p, j + 24)
            header = 32 + (8 if flags & FLAG_COMPACT else 0) + (16 if flags & FLAG_COMPACT and flags & FLAG_REFS else 0)
            body = p[j + header:j + header + length]
            if flags & FLAG_COLUMNS:
                for name, column in block_columns(body, flags):
                    cols[name] += column
                    if "(t%d," % PNEW in name or "(t%d," % PREF in name:
                        code_kinds(column, "(t%d," % PREF in name, kinds[name])
            else:
                rows += body
            j += header + length
    print("%s: EVENTS chunks %d bytes raw, %d recompressed at level 7" % (path, stored, level7))
    for name in sorted(cols):
        print("  %-22s raw %10d  zstd -7 %9d" % (name, len(cols[name]), compressed(cols[name])))
        if name in kinds:
            print("      " + ", ".join("%s %d" % kv for kv in kinds[name].most_common()))
    if rows:
        print("  %-22s raw %10d  zstd -7 %9d" % ("blocks in rows", len(rows), compressed(rows)))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit("usage: bench/format/columns.py TRACE...")
    for trace in sys.argv[1:]:
        report(trace)
