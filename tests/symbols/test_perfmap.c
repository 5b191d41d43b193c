/*
 * tests/symbols/test_perfmap.c — src/symbols/perfmap.c's reading of a perf
 * map (/tmp/perf-PID.map, JIT code's names): of entries that overlap in any
 * way, the last written holds each byte it covers, the others keep what is
 * left of theirs; lines that are not "hex hex name" and lines past the
 * bound are skipped without ending the read; and the trust rules refuse
 * what /tmp's other users could have put there, and a map too big to read.
 */
#include "symbols/perfmap.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

/* The map of text, read through a pipe as a file would be. */
static sym_perfmap *read_text(const char *text, size_t len)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fflush(f);
    rewind(f);
    sym_perfmap *m = sym_perfmap_read(fileno(f), SYM_PERFMAP_MAX_BYTES);
    fclose(f);
    assert_non_null(m);
    return m;
}

static void name_is(const sym_perfmap *m, uint64_t addr, const char *want)
{
    const char *got = sym_perfmap_find(m, addr);
    if (!want != !got || (want && got && strcmp(got, want)))
        fprintf(stderr, "0x%llx: got %s, want %s\n", (unsigned long long)addr, got ? got : "NULL",
                want ? want : "NULL");
    if (!want)
        assert_null(got);
    else
        assert_string_equal(got ? got : "", want);
}

/* a 0x100 wide; b later inside it; c later across a's end; a2 rewrites a's start; d before all */
static void last_entry_wins(void **state)
{
    (void)state;
    const char *text = "1000 100 a\n"
                       "1040 20 b\n"
                       "10f0 20 c\n"
                       "0x1000 10 a2\n"
                       "f00 10 d\n";
    sym_perfmap *m = read_text(text, strlen(text));
    name_is(m, 0xeff, NULL);
    name_is(m, 0xf00, "d");
    name_is(m, 0xf10, NULL);
    name_is(m, 0x1000, "a2");
    name_is(m, 0x100f, "a2");
    name_is(m, 0x1010, "a");
    name_is(m, 0x1040, "b");
    name_is(m, 0x105f, "b");
    name_is(m, 0x1060, "a");
    name_is(m, 0x10ef, "a");
    name_is(m, 0x10f0, "c");
    name_is(m, 0x110f, "c");
    name_is(m, 0x1110, NULL);
    assert_int_equal(sym_perfmap_entries(m), 5);
    sym_perfmap_free(m);
}

/* Junk, a NUL, a 1 MiB line, a line without its newline: skipped or read, the read goes on. */
static void junk_skipped(void **state)
{
    (void)state;
    size_t big = (1u << 20) + 10;
    char *text = malloc(big + 200);
    assert_non_null(text);
    size_t n = 0;
    n += (size_t)sprintf(text + n, "zz 10 bad\n2000 0 empty\n2000 10\n");
    text[n++] = '\x01';
    text[n++] = '\n';
    memset(text + n, 'a', big);
    n += big;
    n += (size_t)sprintf(text + n, "\n2000 10 good one\n3000 10 with");
    text[n++] = 0;
    n += (size_t)sprintf(text + n, "nul\n4000 ffffffffffffffff huge\n5000 10 last");
    sym_perfmap *m = read_text(text, n);
    name_is(m, 0x2005, "good one");
    name_is(m, 0x3000, "with");
    name_is(m, 0x4000, "huge");
    name_is(m, UINT64_MAX - 1, "huge");
    name_is(m, 0x5000, "last"); /* written after huge, which holds it too */
    assert_int_equal(sym_perfmap_entries(m), 4);
    assert_int_equal(sym_perfmap_skipped(m), 5);
    sym_perfmap_free(m);
    free(text);
}

/* Past SYM_PERFMAP_MAX_ENTRIES, lines are skipped and counted, not kept: the memory of the read is bounded. */
static void entries_bounded(void **state)
{
    (void)state;
    size_t cap = (size_t)SYM_PERFMAP_MAX_ENTRIES + 2, n = 0;
    char *text = malloc(cap * 24);
    assert_non_null(text);
    for (size_t i = 0; i < cap; i++)
        n += (size_t)sprintf(text + n, "%zx 1 %s\n", i, i + 1 < cap ? "f" : "past");
    sym_perfmap *m = read_text(text, n);
    assert_int_equal(sym_perfmap_entries(m), SYM_PERFMAP_MAX_ENTRIES);
    assert_int_equal(sym_perfmap_skipped(m), 2);
    name_is(m, SYM_PERFMAP_MAX_ENTRIES - 1, "f");
    name_is(m, cap - 1, NULL);
    sym_perfmap_free(m);
    free(text);
}

static void untrusted_refused(void **state)
{
    (void)state;
    char dir[] = "/tmp/ltr-perfmap-XXXXXX", path[128], link[128], why[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/perf-1.map", dir);
    snprintf(link, sizeof link, "%s/perf-2.map", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("1000 10 f\n", f);
    fclose(f);
    int fd;
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(sym_perfmap_open(path, geteuid(), geteuid(), "u", &fd, why, sizeof why), 0);
    close(fd);
    assert_int_equal(sym_perfmap_open(path, geteuid() + 1, geteuid() + 1, "u", &fd, why, sizeof why),
                     geteuid() == 0 ? 0 : -1); /* root's file is trusted */
    if (fd >= 0)
        close(fd);
    assert_int_equal(chmod(path, 0646), 0);
    assert_true(sym_perfmap_open(path, geteuid(), geteuid(), "u", &fd, why, sizeof why) < 0);
    assert_non_null(strstr(why, "any user may write it"));
    assert_int_equal(symlink(path, link), 0);
    assert_true(sym_perfmap_open(link, geteuid(), geteuid(), "u", &fd, why, sizeof why) < 0);
    assert_non_null(strstr(why, "symbolic link"));
    unlink(link);
    assert_int_equal(mkfifo(link, 0644), 0);
    assert_true(sym_perfmap_open(link, geteuid(), geteuid(), "u", &fd, why, sizeof why) < 0);
    assert_non_null(strstr(why, "a FIFO"));
    unlink(link);
    assert_int_equal(sym_perfmap_open(link, geteuid(), geteuid(), "u", &fd, why, sizeof why), -2); /* -ENOENT */
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(truncate(path, (off_t)SYM_PERFMAP_MAX_BYTES + 1), 0); /* sparse: no disk taken */
    assert_true(sym_perfmap_open(path, geteuid(), geteuid(), "u", &fd, why, sizeof why) < 0);
    assert_non_null(strstr(why, "more than the 64 MiB read"));
    unlink(path);
    rmdir(dir);
}

/* A name that is not the file written there: another name of a file (a
 * hard link, where fs.protected_hardlinks=0 lets anyone link root's
 * files), or a file mounted over it (a process's own mount namespace:
 * root's /etc/shadow, owned by root and so trusted, was read as a map). */
static void other_files_refused(void **state)
{
    (void)state;
    char dir[] = "/tmp/ltr-perfmap-XXXXXX", path[128], other[128], why[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/perf-1.map", dir);
    snprintf(other, sizeof other, "%s/elsewhere", dir);
    FILE *f = fopen(other, "w");
    assert_non_null(f);
    fputs("1000 10 f\n", f);
    fclose(f);
    int fd;
    assert_int_equal(link(other, path), 0);
    assert_true(sym_perfmap_open(path, geteuid(), geteuid(), "u", &fd, why, sizeof why) < 0);
    assert_non_null(strstr(why, "hard links"));
    unlink(path);
    assert_int_equal(sym_perfmap_open(other, geteuid(), geteuid(), "u", &fd, why, sizeof why), 0);
    close(fd);
    f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    pid_t child = fork();
    if (child == 0) { /* a mount namespace of its own, as any user may have with a user namespace */
        if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
            mount(other, path, NULL, MS_BIND, NULL) != 0)
            _exit(77);
        int rc = sym_perfmap_open(path, geteuid(), geteuid(), "u", &fd, why, sizeof why);
        _exit(rc < 0 && strstr(why, "mounted over") ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    if (WEXITSTATUS(status) == 77)
        printf("skipped the mount: no mount namespace here (not root)\n");
    else
        assert_int_equal(WEXITSTATUS(status), 0);
    unlink(path);
    unlink(other);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(last_entry_wins),
        cmocka_unit_test(junk_skipped),
        cmocka_unit_test(entries_bounded),
        cmocka_unit_test(untrusted_refused),
        cmocka_unit_test(other_files_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
