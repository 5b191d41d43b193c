/*
 * tests/programs/flush_target.c — the program `ltr flush` is tested on
 * (tests/e2e/test_flush.c): known blocks before and after a point the test
 * chooses. Run as `flush_target DIR`: it writes its pid to DIR/pid,
 * allocates 37 blocks of 1111 bytes in flush_before, writes DIR/ready, waits
 * for DIR/go, allocates 19 blocks of 2222 bytes in flush_after, writes
 * DIR/done and waits for DIR/exit. It frees nothing and allocates nothing
 * else after its start (files are made with open/close, never stdio).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char path[4096];

static const char *at(const char *dir, const char *name)
{
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static void wait_for(const char *dir, const char *name)
{
    struct timespec nap = {0, 5 * 1000 * 1000};
    while (access(at(dir, name), F_OK) != 0)
        nanosleep(&nap, NULL);
}

static void say(const char *dir, const char *name, const char *text)
{
    int fd = open(at(dir, name), O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (fd < 0 || write(fd, text, strlen(text)) < 0)
        exit(1);
    close(fd);
}

static void *volatile keep[64];

__attribute__((noinline)) void flush_before(int i) { keep[i] = malloc(1111); }
__attribute__((noinline)) void flush_after(int i) { keep[i] = malloc(2222); }

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    const char *dir = argv[1];
    char pid[32];
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    say(dir, "pid", pid);
    for (int i = 0; i < 37; i++)
        flush_before(i);
    say(dir, "ready", "");
    wait_for(dir, "go");
    for (int i = 0; i < 19; i++)
        flush_after(37 + i);
    say(dir, "done", "");
    wait_for(dir, "exit");
    return 0;
}
