/*
 * tests/programs/registry_leaver.c — a root process with the heap agent
 * preloaded (so the agent mapped root's registry) that becomes user 65534,
 * as a service's worker does, and then acts as code run in that worker
 * would: writes every page where the registry was mapped (found in
 * /proc/self/maps before the change) and looks for an fd of the registry.
 * The worker is a forked child, as a service's are (a child attaches
 * anew); the parent, still root, then reads the file. It tells what it
 * saw; tests/e2e/test_registry_leave.c judges it.
 * Usage: registry-leaver MODE REGISTRY [AGENT]
 *   AGENT: dlopen'ed first, as the by-name shim loads it (it comes late:
 *   the program's calls reach its hooks through redirected GOT slots).
 *   MODE setuid, setreuid, setresuid: the call, which must behave as
 *   without ltr (0, errno untouched; a later setuid(0) fails with EPERM);
 *   seteuid: seteuid(65534), which keeps the way back (saved uid 0);
 *   raw: setresuid by syscall(2), which the agent replaces too;
 *   inline: setresuid by a `syscall` instruction of the program's own (as
 *   Go's RawSyscall makes it), which no hook sees, then allocations for up
 *   to 5 s until the registry is no longer mapped (the agent looks at the
 *   uids every 10 ms of a recording thread's events).
 *   A MODE prefixed "attached-": the worker allocates first, as root (a
 *   session enables the heap: it attaches, mapping the session's memory);
 *   "retired-": the parent allocates (attaches), runs $LEAVER_BETWEEN (a
 *   shell command: the session stopped and another started, which the
 *   parent's next allocation attaches to, keeping the first one's memory
 *   as retired) and allocates again, before it forks the worker;
 *   "forked-": the parent allocates (attaches), and the worker maps memory
 *   of its own where the parent's session was (unmapped in the child)
 *   before its call, and says whether the agent left it as it was.
 * Prints "calls ok|bad", "mapped N" (the worker's mappings of the file
 * after), "fds N" (its fds open on the file after), "sessions N" (its
 * mappings of a session's memory after), "own intact|zeroed|none" (the
 * forked- worker's memory), "wrote N" (bytes written),
 * "worker exit N", "file same|changed" (read through an fd opened before,
 * as root, once the worker has exited).
 */
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#define NOBODY 65534

typedef struct range {
    uintptr_t lo, hi;
} range;

/* The mappings of path (by its name in /proc/self/maps), up to max. */
static int mappings_of(const char *path, range *out, int max)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4608];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char *name = strchr(line, '/');
        if (!name || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
            continue;
        name[strcspn(name, "\n")] = 0;
        if (!strcmp(name, path) && n < max)
            out[n++] = (range){lo, hi};
    }
    if (f)
        fclose(f);
    return n;
}

/* How many of this process's mappings are of a session's memory (its
 * memfd); the first in *first. */
static int session_mappings(range *first)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4608];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (!strstr(line, "/memfd:ltr-session") || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
            continue;
        if (!n++ && first)
            *first = (range){lo, hi};
    }
    if (f)
        fclose(f);
    return n;
}

/* The forked- worker's memory where its parent's session was: mapped and
 * filled before its call; after it, whether it is still what was put there. */
static const char *own_memory(const range *was, bool check)
{
    size_t n = was->hi - was->lo;
    if (!n)
        return "none";
    if (!check) {
        void *p = mmap((void *)was->lo, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                       -1, 0);
        if (p != (void *)was->lo)
            exit(8);
        memset(p, 0x5a, n);
        return "";
    }
    for (size_t i = 0; i < n; i++)
        if (((const unsigned char *)was->lo)[i] != 0x5a)
            return "zeroed";
    return "intact";
}

/* setresuid by a system call instruction of our own: no function of libc's. */
static long inline_setresuid(long r, long e, long s)
{
#if defined(__x86_64__)
    long rc;
    register long r10 __asm__("r10") = 0;
    __asm__ volatile("syscall" : "=a"(rc) : "0"((long)SYS_setresuid), "D"(r), "S"(e), "d"(s), "r"(r10)
                     : "rcx", "r11", "memory");
    return rc;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = SYS_setresuid;
    register long x0 __asm__("x0") = r;
    register long x1 __asm__("x1") = e;
    register long x2 __asm__("x2") = s;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    return x0;
#else
    return syscall(SYS_setresuid, r, e, s);
#endif
}

/* How many of this process's fds are open on the file st describes. */
static int fds_on(const struct stat *file)
{
    int n = 0;
    for (int fd = 0; fd < 4096; fd++) {
        struct stat st;
        if (fstat(fd, &st) == 0 && st.st_dev == file->st_dev && st.st_ino == file->st_ino)
            n++;
    }
    return n;
}

static char *contents(int fd, size_t size)
{
    char *buf = calloc(1, size);
    if (!buf || pread(fd, buf, size, 0) != (ssize_t)size)
        exit(5);
    return buf;
}

/* The call of mode; 1 when it and a later setuid(0) behaved as without ltr. */
static int become_nobody(const char *mode)
{
    if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0)
        exit(4);
    errno = 4242;
    int rc = !strcmp(mode, "setuid")      ? setuid(NOBODY)
             : !strcmp(mode, "setreuid")  ? setreuid(NOBODY, NOBODY)
             : !strcmp(mode, "setresuid") ? setresuid(NOBODY, NOBODY, NOBODY)
             : !strcmp(mode, "seteuid")   ? seteuid(NOBODY)
             : !strcmp(mode, "raw")       ? (int)syscall(SYS_setresuid, NOBODY, NOBODY, NOBODY)
             : !strcmp(mode, "inline")    ? (int)inline_setresuid(NOBODY, NOBODY, NOBODY)
                                          : -2;
    if (rc != 0 || errno != 4242)
        return 0;
    if (!strcmp(mode, "seteuid")) /* the way back is kept: taken, and left again */
        return seteuid(0) == 0 && seteuid(NOBODY) == 0;
    errno = 0;
    return setuid(0) == -1 && errno == EPERM;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4)
        return 2;
    const char *mode = argv[1], *path = argv[2];
    bool attached = !strncmp(mode, "attached-", 9), retired = !strncmp(mode, "retired-", 8);
    bool forked = !strncmp(mode, "forked-", 7);
    mode += attached ? 9 : retired ? 8 : forked ? 7 : 0;
    if (argc == 4 && !dlopen(argv[3], RTLD_NOW | RTLD_GLOBAL)) {
        printf("cannot load %s: %s\n", argv[3], dlerror());
        return 3;
    }
    struct stat file;
    range r[8];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int n = mappings_of(path, r, 8);
    if (fd < 0 || fstat(fd, &file) != 0 || n == 0) {
        printf("the registry %s is not mapped (%d) or cannot be read\n", path, n);
        return 3;
    }
    if (retired) {
        free(malloc(4325));
        const char *between = getenv("LEAVER_BETWEEN");
        if (!between || system(between) != 0)
            return 7;
        free(malloc(4325));
    }
    range parents = {0, 0};
    if (forked) {
        free(malloc(4325));
        session_mappings(&parents);
    }
    char *before = contents(fd, (size_t)file.st_size); /* as the worker starts */
    fflush(stdout);
    pid_t worker = fork();
    if (worker == 0) {
        if (attached)
            free(malloc(4325));
        if (forked)
            own_memory(&parents, false);
        int ok = become_nobody(mode);
        free(malloc(4325)); /* a session that enables the heap: the agent tries to attach */
        range now[8];
        for (int i = 0; !strcmp(mode, "inline") && i < 5000 && mappings_of(path, now, 8); i++) {
            for (int k = 0; k < 100; k++)
                free(malloc(64));
            usleep(1000);
        }
        int mapped = mappings_of(path, now, 8), fds = fds_on(&file) - 1; /* ours aside */
        int sessions = session_mappings(NULL);
        const char *own = own_memory(&parents, true);
        size_t wrote = 0;
        for (int i = 0; i < n; i++) { /* a hostile worker: every provider on, every session renamed */
            memset((void *)r[i].lo, 0x2f, r[i].hi - r[i].lo);
            wrote += r[i].hi - r[i].lo;
        }
        printf("calls %s\nmapped %d\nfds %d\nsessions %d\nown %s\nwrote %zu\n", ok ? "ok" : "bad", mapped, fds,
               sessions, own, wrote);
        exit(0); /* the agent's exit reads what was written: it must not crash */
    }
    int st;
    if (worker < 0 || waitpid(worker, &st, 0) != worker)
        return 6;
    char *after = contents(fd, (size_t)file.st_size);
    printf("worker exit %d\nfile %s\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
           memcmp(before, after, (size_t)file.st_size) ? "changed" : "same");
    return 0;
}
