/*
 * tests/programs/fileio.c — a program whose file activity is known
 * (docs/system-provider.md, FileIO): it opens PATH N times (creating and
 * truncating it the first time, appending after), writes M bytes at each
 * open in writes of at most 1000 bytes (write, pwrite and writev in turn),
 * reads the file back once whole with read, fails to open PATH.missing once
 * (errno ENOENT, as the program sees it), and prints what it did. The test compares that with ltr analyze --files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static void write_all(int fd, size_t m, int how)
{
    static char buf[1000];
    memset(buf, 'x', sizeof buf);
    off_t at = lseek(fd, 0, SEEK_END);
    for (size_t done = 0; done < m;) {
        size_t n = m - done < sizeof buf ? m - done : sizeof buf;
        ssize_t w;
        if (how == 1) {
            w = pwrite(fd, buf, n, at + (off_t)done);
        } else if (how == 2) {
            struct iovec v[2] = {{buf, n / 2}, {buf, n - n / 2}};
            w = writev(fd, v, 2);
        } else {
            w = write(fd, buf, n);
        }
        if (w <= 0)
            exit(1);
        done += (size_t)w;
    }
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    const char *path = argv[1];
    int n = atoi(argv[2]);
    size_t m = strtoul(argv[3], NULL, 10);
    for (int i = 0; i < n; i++) {
        int fd = open(path, O_WRONLY | O_CREAT | (i ? O_APPEND : O_TRUNC) | O_CLOEXEC, 0600);
        if (fd < 0)
            return 1;
        write_all(fd, m, i % 3);
        close(fd);
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char buf[4096];
    size_t total = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0)
        total += (size_t)r;
    close(fd);
    char missing[4200];
    snprintf(missing, sizeof missing, "%s.missing", path);
    errno = 0;
    if (open(missing, O_RDONLY) >= 0)
        return 1;
    int e = errno; /* the traced program's errno, as the kernel set it */
    printf("opened %d wrote %zu read %zu errno %d\n", n + 1, (size_t)n * m, total, e);
    return 0;
}
