/*
 * watch/bundle.c — `ltr watch --support-bundle`: beside each saved trace, a
 * .tar.zst (`tar --zstd -xf` opens it) with what a colleague needs to read
 * the trace without the machine: the process's /proc facts at the trigger,
 * the profile, `ltr status` then, the monitor's history, the recorder's log
 * and the host's facts (docs/watch.md lists the entries).
 *
 * The environment is never taken (/proc/PID/environ holds secrets). Every
 * file that could not be read is named in MISSING.txt with the reason, so the
 * bundle never says it holds more than it does. The archive is written to a
 * temporary file in FILE's directory and takes its name only when complete
 * (ltr_publish): a failed bundle leaves nothing, and a file or symlink
 * planted there is neither followed nor replaced. libarchive writes the tar
 * and its zstd filter.
 */
#include "watch/watch.h"
#include "prim/prim.h"
#include "system/system.h"
#include "watch/archivelib.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* libarchive's soname since 3.0 */
ltr_lazylib ltr_libarchive = {"libarchive.so.13", "to write support bundles", NULL};

#define BUNDLE_FILE_MAX (16u << 20) /* a /proc file or log larger is cut (maps of huge programs) */
#define BUNDLE_LOG_TAIL (4u << 20)  /* the recorder's log: its last 4 MiB */

int ltr_watch_bundle_path(const char *trace, char *out, size_t size)
{
    const char *slash = strrchr(trace, '/'), *dot = strrchr(trace, '.');
    size_t stem = dot && dot > (slash ? slash + 1 : trace) ? (size_t)(dot - trace) : strlen(trace);
    int len = snprintf(out, size, "%.*s.tar.zst", (int)stem, trace);
    return len < 0 || (size_t)len >= size ? -ENAMETOOLONG : 0;
}

typedef struct bundle {
    struct archive *a;
    const char *top;   /* the directory every entry is under */
    char *missing;     /* MISSING.txt, built as entries fail */
    size_t missing_len;
    FILE *missing_f;
    int failed;        /* errno of the first archive error */
    char why[256];
} bundle;

static void add(bundle *b, const char *name, const void *data, size_t len)
{
    if (b->failed)
        return;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", b->top, name);
    struct archive_entry *e = archive_entry_new();
    if (!e) {
        b->failed = ENOMEM;
        return;
    }
    archive_entry_set_pathname(e, path);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0600);
    archive_entry_set_size(e, (la_int64_t)len);
    archive_entry_set_mtime(e, time(NULL), 0);
    if (archive_write_header(b->a, e) != ARCHIVE_OK || (len && archive_write_data(b->a, data, len) != (la_ssize_t)len)) {
        b->failed = archive_errno(b->a) ? archive_errno(b->a) : EIO;
        snprintf(b->why, sizeof b->why, "%s", archive_error_string(b->a) ? archive_error_string(b->a) : "write");
    }
    archive_entry_free(e);
}

static void add_text(bundle *b, const char *name, const char *text)
{
    add(b, name, text, strlen(text));
}

/* A file read whole (up to max; with tail, its last max bytes), as it is
 * now: /proc files have no size to trust. A file that cannot be read is
 * named in MISSING.txt. The tail is the recorder's log, in the runtime
 * directory: a symlink there is not followed. */
static void add_file_at(bundle *b, const char *name, int dir, const char *at, const char *path, size_t max,
                        bool tail)
{
    int fd = openat(dir, at, O_RDONLY | O_CLOEXEC | (tail ? O_NOFOLLOW : 0));
    if (fd < 0) {
        fprintf(b->missing_f, "%s: %s: %s\n", name, path, strerror(errno));
        return;
    }
    struct stat st;
    if (tail && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size > max)
        lseek(fd, st.st_size - (off_t)max, SEEK_SET);
    char *buf = malloc(max);
    size_t len = 0;
    ssize_t n = 0;
    while (buf && len < max && (n = read(fd, buf + len, max - len)) > 0)
        len += (size_t)n;
    int e = !buf ? ENOMEM : n < 0 ? errno : 0;
    close(fd);
    if (e)
        fprintf(b->missing_f, "%s: %s: %s\n", name, path, strerror(e));
    else
        add(b, name, buf, len);
    if (!e && len == max)
        fprintf(b->missing_f, "%s: cut at %zu bytes\n", name, max);
    free(buf);
}

static void add_file(bundle *b, const char *name, const char *path, size_t max, bool tail)
{
    add_file_at(b, name, AT_FDCWD, path, path, max, tail);
}

/* The watched process's files, read through its /proc directory opened
 * while the pid was still its own: a process that ended leaves its pid
 * free, and the bundle of a watch by pid had the next process of that pid
 * as its process (its command line with a password on it, its maps). */
static void add_proc(bundle *b, uint32_t pid, uint64_t start_ticks)
{
    /* not environ: it holds secrets */
    static const char *const files[] = {"status", "smaps_rollup", "maps", "limits", "cmdline", "stat", "io"};
    char dir[32];
    snprintf(dir, sizeof dir, "/proc/%u", pid);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), gone = errno;
    if (fd >= 0 && start_ticks && ltr_proc_start_ticks((pid_t)pid) != start_ticks) {
        fprintf(b->missing_f, "proc/: %s: pid %u is another process's now (the one watched ended)\n", dir, pid);
        close(fd);
        return;
    }
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char name[64], path[64];
        snprintf(name, sizeof name, "proc/%s", files[i]);
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (fd >= 0)
            add_file_at(b, name, fd, files[i], path, BUNDLE_FILE_MAX, false);
        else
            fprintf(b->missing_f, "%s: %s: %s\n", name, path, strerror(gone));
    }
    if (fd >= 0)
        close(fd);
}

static void add_host(bundle *b)
{
    struct utsname u;
    char text[1024];
    if (uname(&u) == 0) {
        snprintf(text, sizeof text, "%s %s %s %s %s\ncpus online: %ld, configured: %ld\n", u.sysname, u.nodename,
                 u.release, u.version, u.machine, sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF));
        add_text(b, "host/uname.txt", text);
    } else {
        fprintf(b->missing_f, "host/uname.txt: uname: %s\n", strerror(errno));
    }
    static const char *const files[][2] = {
        {"host/meminfo", "/proc/meminfo"}, {"host/cpuinfo", "/proc/cpuinfo"},
        {"host/uptime", "/proc/uptime"},   {"host/loadavg", "/proc/loadavg"},
        {"host/os-release", "/etc/os-release"}, {"host/kernel-cmdline", "/proc/cmdline"},
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        add_file(b, files[i][0], files[i][1], BUNDLE_FILE_MAX, false);
}

static void add_readme(bundle *b, const ltr_watch_bundle *in)
{
    char when[64], why[512], text[2048];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %z", localtime_r(&now, &tm));
    const char *condition = in->condition ? in->condition : "";
    /* a trace saved as the process ended is no trigger's: the bundle says why it was saved */
    if (in->at_exit)
        snprintf(why, sizeof why, "saved at %s, as pid %u ended: %s", when, in->pid, condition);
    else
        snprintf(why, sizeof why, "trigger %u at %s: pid %u: %s", in->trigger, when, in->pid, condition);
    snprintf(text, sizeof text,
             "ltr watch support bundle\n\n"
             "%s\n"
             "trace: %s (ltr analyze it)\n\n"
             "proc/         the process's /proc/PID files at the trigger (not environ; of a process\n"
             "              that ended, what /proc still showed: MISSING.txt names the rest)\n"
             "profile.txt   what the session recorded, as 'ltr profiles --details' says\n"
             "status.txt    'ltr status' of the session at the trigger\n"
             "monitor.txt   the watch's polls (the last %u), as --monitor prints them\n"
             "recorder.log  the session recorder's log (its last %u MiB)\n"
             "host/         the machine: kernel, CPUs, memory, uptime, load, OS\n"
             "MISSING.txt   what could not be read, and why (absent: nothing)\n",
             why, in->trace ? in->trace : "",
             LTR_WATCH_HISTORY, BUNDLE_LOG_TAIL >> 20);
    add_text(b, "README.txt", text);
}

static void add_all(bundle *b, const ltr_watch_bundle *in)
{
    add_readme(b, in);
    add_proc(b, in->pid, in->start_ticks);
    if (in->profile_text)
        add_text(b, "profile.txt", in->profile_text);
    if (in->status_text)
        add_text(b, "status.txt", in->status_text);
    else
        fprintf(b->missing_f, "status.txt: %s\n", in->status_error ? in->status_error : "no status");
    add(b, "monitor.txt", in->history ? in->history : "", in->history ? in->history_len : 0);
    if (in->log_path)
        add_file(b, "recorder.log", in->log_path, BUNDLE_LOG_TAIL, true);
    add_host(b);
    fflush(b->missing_f);
    if (b->missing_len)
        add(b, "MISSING.txt", b->missing, b->missing_len);
}

/* The archive of what fill adds into fd. 0, or -errno with err. */
static int write_archive(int fd, const char *top, void (*fill)(bundle *, const ltr_watch_bundle *),
                         const ltr_watch_bundle *in, ltr_error *err)
{
    bundle b = {.top = top, .a = archive_write_new()};
    b.missing_f = open_memstream(&b.missing, &b.missing_len);
    if (!b.a || !b.missing_f) {
        if (b.a)
            archive_write_free(b.a);
        if (b.missing_f)
            fclose(b.missing_f);
        free(b.missing);
        return ltr_fail(err, ENOMEM, "out of memory");
    }
    if (archive_write_add_filter_zstd(b.a) != ARCHIVE_OK || archive_write_set_format_pax_restricted(b.a) != ARCHIVE_OK ||
        archive_write_open_fd(b.a, fd) != ARCHIVE_OK) {
        b.failed = EIO;
        snprintf(b.why, sizeof b.why, "%s", archive_error_string(b.a) ? archive_error_string(b.a) : "libarchive");
    }
    fill(&b, in);
    if (archive_write_close(b.a) != ARCHIVE_OK && !b.failed) {
        b.failed = archive_errno(b.a) ? archive_errno(b.a) : EIO;
        snprintf(b.why, sizeof b.why, "%s", archive_error_string(b.a) ? archive_error_string(b.a) : "close");
    }
    archive_write_free(b.a);
    fclose(b.missing_f);
    free(b.missing);
    return b.failed ? ltr_fail(err, b.failed, "%s", b.why) : 0;
}

int ltr_watch_bundle_write(const char *path, const ltr_watch_bundle *in, ltr_error *err)
{
    char tmp[PATH_MAX], top[NAME_MAX + 1];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    size_t blen = strlen(base), ext = strlen(".tar.zst");
    snprintf(top, sizeof top, "%.*s", (int)(blen > ext ? blen - ext : blen), base);
    int rc = ltr_temp_name(tmp, sizeof tmp, path);
    if (rc < 0)
        return ltr_fail(err, -rc, "%s: the name is too long", path);
    int fd = ltr_create_temp(tmp); /* 0600: the bundle holds the process's maps and command line */
    if (fd < 0)
        return ltr_fail(err, -fd, "%s: a temporary file beside it: %s", path, strerror(-fd));
    rc = write_archive(fd, top, add_all, in, err);
    if (rc == 0 && fsync(fd) != 0)
        rc = ltr_fail(err, errno, "%s: %s", path, strerror(errno));
    if (close(fd) != 0 && rc == 0)
        rc = ltr_fail(err, errno, "%s: %s", path, strerror(errno));
    if (rc == 0 && (rc = ltr_publish(tmp, path, false)) < 0) /* never over a file or symlink there */
        rc = ltr_fail(err, -rc, "%s: %s%s", path, strerror(-rc),
                      rc == -EEXIST ? " (a file of that name appeared: it is left as it is)" : "");
    else if (rc) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        ltr_fail(err, -rc, "%s: %s", path, why);
    }
    if (rc)
        unlink(tmp);
    return rc;
}

/* One small file: a bundle's way through libarchive, every function on it. */
static void add_probe(bundle *b, const ltr_watch_bundle *in)
{
    (void)in;
    add_text(b, "probe.txt", "probe");
}

int ltr_watch_bundle_check(ltr_error *err)
{
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return ltr_fail(err, errno, "/dev/null: %s", strerror(errno));
    int rc = write_archive(fd, "probe", add_probe, NULL, err);
    close(fd);
    if (rc) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        ltr_fail(err, -rc, "--support-bundle: libarchive cannot write one here: %s", why);
    }
    return rc;
}
