/*
 * symbols/perfmap.c — a program's perf map of its JIT code (perfmap.h),
 * opened with perf's trust rules and read into disjoint address ranges.
 *
 * Entries may overlap (a JIT reuses the memory of code it dropped), and the
 * last written wins: a sweep over the entries' bounds with a heap of the
 * entries open there, newest on top, turns them into ranges that do not
 * overlap, so a lookup is a binary search whatever the map holds (n log n
 * for a map of a million lines, where a scan per address would not end).
 */
#include "symbols/perfmap.h"
#include "prim/prim.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINE_MAX_BYTES (SYM_PERFMAP_MAX_NAME + 64) /* a longer line is skipped, whatever it holds */

typedef struct pm_entry {
    uint64_t start, end;
    uint32_t seq;  /* the line's order: the higher wins */
    uint32_t name; /* offset in names */
} pm_entry;

typedef struct pm_range {
    uint64_t start, end;
    uint32_t name;
} pm_range;

struct sym_perfmap {
    pm_entry *entries;
    size_t n, cap;
    char *names;
    size_t names_len, names_cap;
    pm_range *ranges;
    size_t nranges;
    size_t skipped;
};

static int reserve(void **v, size_t *cap, size_t need, size_t esize)
{
    return ltr_reserve(v, cap, need - 1, esize, 1024);
}

/* Hex digits at *p, an optional 0x first; 0 when there are none or too many. */
static int parse_hex(const char **p, const char *end, uint64_t *v)
{
    const char *s = *p;
    if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    uint64_t x = 0;
    int digits = 0;
    for (; s < end; s++, digits++) {
        int c = (unsigned char)*s, d = c >= '0' && c <= '9' ? c - '0'
                                     : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
        if (d < 0)
            break;
        x = x << 4 | (uint64_t)d;
    }
    if (!digits || digits > 16)
        return 0;
    *v = x;
    *p = s;
    return 1;
}

/* One line (no newline): "START SIZE name". Returns 0, -1 to skip it, -ENOMEM. */
static int add_line(sym_perfmap *m, const char *s, size_t len)
{
    const char *end = s + len, *p = s;
    uint64_t start, size;
    if (!parse_hex(&p, end, &start) || p >= end || *p++ != ' ' || !parse_hex(&p, end, &size) || p >= end ||
        *p++ != ' ' || p >= end || !size)
        return -1;
    size_t nlen = strnlen(p, (size_t)(end - p)); /* a NUL ends the name as C strings see it */
    if (nlen > SYM_PERFMAP_MAX_NAME) { /* cut where a UTF-8 character starts */
        nlen = SYM_PERFMAP_MAX_NAME;
        while (nlen > 0 && ((uint8_t)p[nlen] & 0xc0) == 0x80)
            nlen--;
    }
    if (!nlen || m->n >= SYM_PERFMAP_MAX_ENTRIES || m->names_len + nlen + 1 > UINT32_MAX)
        return -1;
    if (reserve((void **)&m->entries, &m->cap, m->n + 1, sizeof *m->entries) ||
        reserve((void **)&m->names, &m->names_cap, m->names_len + nlen + 1, 1))
        return -ENOMEM;
    uint64_t last = start + size < start ? UINT64_MAX : start + size;
    m->entries[m->n] = (pm_entry){start, last, (uint32_t)m->n, (uint32_t)m->names_len};
    m->n++;
    memcpy(m->names + m->names_len, p, nlen);
    m->names[m->names_len + nlen] = 0;
    m->names_len += nlen + 1;
    return 0;
}

/* Reads fd line by line into m; a line over LINE_MAX_BYTES is skipped to its end. */
static int read_lines(sym_perfmap *m, int fd, uint64_t max_bytes)
{
    char line[LINE_MAX_BYTES];
    char buf[65536];
    size_t len = 0;
    int too_long = 0;
    uint64_t total = 0;
    for (;;) {
        size_t want = max_bytes - total < sizeof buf ? (size_t)(max_bytes - total) : sizeof buf;
        ssize_t got = want ? read(fd, buf, want) : 0;
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) /* the end, a read error, or the bound: what was read stands */
            break;
        total += (uint64_t)got;
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] != '\n') {
                if (len < sizeof line)
                    line[len++] = buf[i];
                else
                    too_long = 1;
                continue;
            }
            int rc = too_long ? -1 : add_line(m, line, len);
            if (rc == -ENOMEM)
                return rc;
            m->skipped += rc < 0 && len;
            len = 0;
            too_long = 0;
        }
    }
    int rc = len && !too_long ? add_line(m, line, len) : -1; /* a last line without its newline */
    m->skipped += rc == -1 && len;
    return rc == -ENOMEM ? rc : 0;
}

static int by_start(const void *x, const void *y)
{
    const pm_entry *a = x, *b = y;
    return a->start < b->start ? -1 : a->start > b->start;
}

static int by_value(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* A max-heap of entry indexes by seq: the newest open entry on top. */
static void heap_push(const pm_entry *e, uint32_t *h, size_t *n, uint32_t v)
{
    size_t i = (*n)++;
    for (; i && e[h[(i - 1) / 2]].seq < e[v].seq; i = (i - 1) / 2)
        h[i] = h[(i - 1) / 2];
    h[i] = v;
}

static void heap_pop(const pm_entry *e, uint32_t *h, size_t *n)
{
    uint32_t v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && e[h[c + 1]].seq > e[h[c]].seq)
            c++;
        if (e[h[c]].seq <= e[v].seq)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = v;
}

static void add_range(sym_perfmap *m, uint64_t start, uint64_t end, uint32_t name)
{
    pm_range *last = m->nranges ? &m->ranges[m->nranges - 1] : NULL;
    if (last && last->end == start && last->name == name)
        last->end = end;
    else
        m->ranges[m->nranges++] = (pm_range){start, end, name};
}

/* The sweep (see the top): ranges that do not overlap, each the newest entry's there. */
static int flatten(sym_perfmap *m)
{
    if (!m->n)
        return 0;
    qsort(m->entries, m->n, sizeof *m->entries, by_start);
    uint64_t *pts = malloc(2 * m->n * sizeof *pts);
    uint32_t *heap = malloc(m->n * sizeof *heap);
    m->ranges = malloc(2 * m->n * sizeof *m->ranges);
    if (!pts || !heap || !m->ranges) {
        free(pts);
        free(heap);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->n; i++) {
        pts[2 * i] = m->entries[i].start;
        pts[2 * i + 1] = m->entries[i].end;
    }
    qsort(pts, 2 * m->n, sizeof *pts, by_value);
    size_t nh = 0, next = 0;
    for (size_t k = 0; k < 2 * m->n; k++) {
        if (k && pts[k] == pts[k - 1])
            continue;
        while (next < m->n && m->entries[next].start <= pts[k])
            heap_push(m->entries, heap, &nh, (uint32_t)next++);
        while (nh && m->entries[heap[0]].end <= pts[k])
            heap_pop(m->entries, heap, &nh);
        size_t k2 = k + 1;
        while (k2 < 2 * m->n && pts[k2] == pts[k])
            k2++;
        if (nh && k2 < 2 * m->n)
            add_range(m, pts[k], pts[k2], m->entries[heap[0]].name);
    }
    free(pts);
    free(heap);
    free(m->entries); /* the ranges say all that is looked up */
    m->entries = NULL;
    return 0;
}

sym_perfmap *sym_perfmap_read(int fd, uint64_t max_bytes)
{
    sym_perfmap *m = calloc(1, sizeof *m);
    if (m && (read_lines(m, fd, max_bytes) < 0 || flatten(m) < 0)) {
        sym_perfmap_free(m);
        return NULL;
    }
    return m;
}

void sym_perfmap_free(sym_perfmap *m)
{
    if (!m)
        return;
    free(m->entries);
    free(m->names);
    free(m->ranges);
    free(m);
}

const char *sym_perfmap_find(const sym_perfmap *m, uint64_t addr)
{
    size_t lo = 0, hi = m ? m->nranges : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->ranges[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < (m ? m->nranges : 0) && m->ranges[lo].start <= addr ? m->names + m->ranges[lo].name : NULL;
}

size_t sym_perfmap_entries(const sym_perfmap *m) { return m->n; }
size_t sym_perfmap_skipped(const sym_perfmap *m) { return m->skipped; }

/* What is wrong with the file st for a process of uid or uid2, in why; 0
 * if nothing. mounted: it is a mount of its own, not its directory's file. */
static int untrusted(const struct stat *st, bool mounted, uid_t uid, uid_t uid2, const char *whose, char *why,
                     size_t whysize)
{
    char who[64], user[64];
    if (S_ISLNK(st->st_mode))
        snprintf(why, whysize, "it is a symbolic link, never followed (/tmp is everyone's)");
    else if (!S_ISREG(st->st_mode))
        snprintf(why, whysize, "it is not a regular file (%s)", S_ISFIFO(st->st_mode) ? "a FIFO"
                                                             : S_ISDIR(st->st_mode)  ? "a directory"
                                                                                     : "a device or socket");
    else if (st->st_uid != 0 && st->st_uid != uid && st->st_uid != uid2)
        snprintf(why, whysize, "it is owned by %s, not by %s (%s) or root: anyone may write a file in /tmp",
                 ltr_user_name(st->st_uid, who, sizeof who), whose, ltr_user_name(uid, user, sizeof user));
    else if (mounted) /* the process's own mount namespace: any file it can name, root's too */
        snprintf(why, whysize, "it is another file mounted over that name (a bind mount), not one written there");
    else if (st->st_nlink > 1) /* where hard links to others' files may be made (fs.protected_hardlinks=0) */
        snprintf(why, whysize, "it has %llu names (hard links), so it may be another file than one written there",
                 (unsigned long long)st->st_nlink);
    else if (st->st_mode & S_IWOTH)
        snprintf(why, whysize, "any user may write it (mode %03o)", (unsigned)(st->st_mode & 0777));
    else if ((uint64_t)st->st_size > SYM_PERFMAP_MAX_BYTES)
        snprintf(why, whysize, "it holds %llu MiB, more than the %llu MiB read",
                 (unsigned long long)(st->st_size >> 20), (unsigned long long)(SYM_PERFMAP_MAX_BYTES >> 20));
    else
        return 0;
    return -EPERM;
}

/* The mount fd (O_PATH) is on; 0 when the kernel does not say (before 5.8). */
static uint64_t mount_of(int fd)
{
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) != 0 || !(sx.stx_mask & STATX_MNT_ID))
        return 0;
    return sx.stx_mnt_id;
}

/* path's directory (O_PATH), its name in it at *name; -errno. */
static int open_dir_of(const char *path, const char **name)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX] = ".";
    *name = slash ? slash + 1 : path;
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    return dfd < 0 ? -errno : dfd;
}

int sym_perfmap_open(const char *path, uid_t uid, uid_t uid2, const char *whose, int *fd, char *why, size_t whysize)
{
    /* O_PATH runs no driver's open and waits on no FIFO; with O_NOFOLLOW it
     * is the link itself when the name is one: what is checked, by fstat, is
     * what is then opened (through /proc/self/fd), whatever the name by then.
     * The name is looked up in its directory opened first, so that a mount
     * over it shows as one (another mount than the directory's). */
    *fd = -1;
    const char *name;
    int dfd = open_dir_of(path, &name), pfd = dfd < 0 ? dfd : openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0) {
        int e = dfd < 0 ? -dfd : errno;
        if (dfd >= 0)
            close(dfd);
        snprintf(why, whysize, "%s", strerror(e));
        return -e;
    }
    uint64_t at = mount_of(pfd), dir_at = mount_of(dfd);
    close(dfd);
    struct stat st;
    int rc = fstat(pfd, &st) == 0 ? untrusted(&st, at != dir_at, uid, uid2, whose, why, whysize) : -errno;
    char again[64];
    snprintf(again, sizeof again, "/proc/self/fd/%d", pfd);
    if (rc == 0 && (*fd = open(again, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) < 0)
        rc = -errno;
    if (rc < 0 && rc != -EPERM)
        snprintf(why, whysize, "%s", strerror(-rc));
    close(pfd);
    return rc;
}

/* The process's real and effective user (/proc/PID/status's Uid line); 0 if it cannot be read. */
static int proc_users(uint32_t pid, uid_t *ruid, uid_t *euid)
{
    char path[64], status[16384];
    snprintf(path, sizeof path, "/proc/%u/status", pid);
    if (ltr_read_small_file(path, status, sizeof status) <= 0)
        return 0;
    const char *u = strstr(status, "\nUid:");
    unsigned r, e;
    if (!u || sscanf(u + 5, "%u %u", &r, &e) != 2)
        return 0;
    *ruid = r;
    *euid = e;
    return 1;
}

int sym_perfmap_load(uint32_t pid, int ended, sym_perfmap **out, char *path, size_t pathsize, char *why,
                     size_t whysize)
{
    *out = NULL;
    uid_t ruid, euid;
    /* a zombie has a status but no root: it ended, as far as its map goes */
    uint32_t own = !ended && ltr_pid_alive((pid_t)pid) ? ltr_proc_own_pid(pid) : 0;
    int fd, rc;
    if (own && proc_users(pid, &ruid, &euid)) {
        snprintf(path, pathsize, "/proc/%u/root/tmp/perf-%u.map", pid, own);
        rc = sym_perfmap_open(path, ruid, euid, "the process's user", &fd, why, whysize);
    } else { /* ended: its /tmp and pid were this one's, as far as can be told */
        snprintf(path, pathsize, "/tmp/perf-%u.map", pid);
        rc = sym_perfmap_open(path, geteuid(), geteuid(), "this user (the process has ended)", &fd, why, whysize);
    }
    if (rc < 0)
        return rc;
    *out = sym_perfmap_read(fd, SYM_PERFMAP_MAX_BYTES);
    close(fd);
    if (!*out) {
        snprintf(why, whysize, "out of memory");
        return -ENOMEM;
    }
    return 0;
}
