/*
 * tests/programs/snap_target.c — the program heap snapshots are tested on
 * (tests/e2e/test_snapshot.c). It waits for the file DIR/go (the test enables
 * snapshots first: the agent's table starts at an allocation after that),
 * then, by mode:
 *   count  allocates known blocks from three stacks (count_small: 100 of 64
 *          bytes, count_medium: 37 of 1000, count_large: 5 of 100000), writes
 *          DIR/ready, and waits for DIR/exit without allocating;
 *   trend  for SECS seconds: leak_site leaks 256 bytes every 50 ms (5 KB/s),
 *          cache_site fills a 2 MB cache of 1 KB entries over about 2.5 s
 *          and then replaces entries (constant), churn_a/churn_b allocate
 *          and free several MB a second in bursts holding a random amount;
 *   shrink allocates 2 MB in 1 KB blocks from shrink_site at once, then
 *          frees them evenly over SECS seconds (a stack that falls);
 *   sessions for SECS seconds, 1000 ticks a second in one thread: the
 *          oldest of 2000 sessions (session_site) expires, a request's
 *          buffer (request_site, one bin with a session) is allocated and
 *          freed, 1 in 20 leaked, and a new session is made;
 *   turnover for SECS seconds, 6000 ticks a second in one thread: the
 *          oldest of 2000 cache entries of 600..2100 bytes (cache_entry)
 *          is freed and a new one made, so the cache turns over in a third
 *          of a second; a request's buffer (request_site) is allocated and
 *          freed, 1 in 200 leaked; leak_site leaks 256 bytes every 50 ms;
 *          table_site builds 400 blocks of 1000 bytes at the start, never
 *          freed (docs/analysis.md, "Ranking": one label of each kind);
 *   big    allocates N blocks of 32 bytes, writes DIR/ready, waits for exit;
 *   stacks allocates a block from each of 2^D distinct stacks, the same way;
 *   forked forks a child that writes its pid to DIR/child and does count.
 * Files are made with open/close, never stdio: no allocation of its own
 * after go but those listed.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;

static int exists(const char *name)
{
    char p[4096];
    strcpy(p, dir);
    strcat(p, "/");
    strcat(p, name);
    return access(p, F_OK) == 0;
}

static void touch(const char *name)
{
    char p[4096];
    strcpy(p, dir);
    strcat(p, "/");
    strcat(p, name);
    close(open(p, O_CREAT | O_WRONLY, 0600));
}

static void nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Until go: an allocation now and then, so the agent looks at its setting. */
static void wait_go(void)
{
    while (!exists("go")) {
        free(malloc(16));
        nap(5);
    }
}

static void *volatile sink;

__attribute__((noinline)) void *count_small(void) { return malloc(64); }
__attribute__((noinline)) void *count_medium(void) { return malloc(1000); }
__attribute__((noinline)) void *count_large(void) { return malloc(100000); }

static void count(void)
{
    static void *keep[142];
    int k = 0;
    for (int i = 0; i < 100; i++)
        keep[k++] = count_small();
    for (int i = 0; i < 37; i++)
        keep[k++] = count_medium();
    for (int i = 0; i < 5; i++)
        keep[k++] = count_large();
    sink = keep;
    touch("ready");
    while (!exists("exit"))
        nap(10);
}

__attribute__((noinline)) void *leak_site(void) { return malloc(256); }
__attribute__((noinline)) void *cache_site(void) { return malloc(1024); }
__attribute__((noinline)) void *churn_a(size_t n) { return malloc(n); }
__attribute__((noinline)) void *churn_b(size_t n) { return malloc(n); }

#define CACHE 2048
#define CHURN 512

/* The cache: filled up to `want` entries, else one replaced a step. It
 * fills over its first 2.5 s by the clock, not by the steps: on a loaded
 * machine fewer steps filled it later, past the half of the run where
 * --trend looks for a plateau (CI saw a verdict other than plateau once);
 * so each step fills all it is behind (at most 40 a step lagged on a
 * starved CPU as well). Built without optimization so that filling and replacing
 * are one call of cache_site, one stack (an optimizer would make two
 * copies of the loop). */
__attribute__((noinline, optimize("O0"))) static void cache_step(void **cache, size_t *filled, size_t want)
{
    for (int k = 0; *filled < want || k == 0; k++) {
        size_t i = *filled < want ? (*filled)++ : (size_t)rand() % (*filled ? *filled : 1);
        free(cache[i]);
        cache[i] = cache_site();
    }
}

/* The churn's level, in blocks held between bursts, rises and falls by the
 * clock (a triangle wave): the snapshots, a second apart, see it go up and
 * down whatever the load. A level drawn at random each step made eleven
 * independent points, and eleven such points look like a leak (most pairs
 * rising) in about one run of fifty: CI saw churn_b called a leak,
 * 0 B -> 580 KiB, at session 33's stop. Periods of 3.7 s and 2.9 s are no
 * multiple of the snapshots' second. */
static size_t churn_level(double t, double period)
{
    double x = t / period - (double)(long long)(t / period);
    return (size_t)((x < 0.5 ? 2 * x : 2 - 2 * x) * (CHURN / 4));
}

/* A burst: up to CHURN/2 blocks of 1..16 KB more than the level, held for a
 * moment, then let go down to the level. */
static void churn_step(void **held, size_t *n, size_t level, void *(*site)(size_t))
{
    size_t burst = level + (size_t)rand() % (CHURN / 2);
    while (*n < burst)
        held[(*n)++] = site(1024 + (size_t)rand() % 16384);
    while (*n > level)
        free(held[--*n]);
}

static void trend(double secs)
{
    static void *cache[CACHE], *churn[2][CHURN];
    void **leaks = NULL;
    size_t nleaks = 0, filled = 0, nchurn[2] = {0, 0};
    srand(1);
    double t0 = now(), next_leak = t0;
    while (now() - t0 < secs) {
        /* a few KB a second, never freed: every leak due by the clock,
         * however few steps a loaded machine gives (one a step leaked at
         * the steps' rate: 33 KiB of 50 in 10 s, the later half slower
         * than the whole, a "plateau") */
        while (now() >= next_leak) {
            void **l = realloc(leaks, (nleaks + 1) * sizeof *l);
            if (l) {
                leaks = l;
                leaks[nleaks++] = leak_site();
            }
            next_leak += 0.05;
        }
        double fill = (now() - t0) / 2.5;
        cache_step(cache, &filled, fill >= 1 ? CACHE : (size_t)(CACHE * fill));
        churn_step(churn[0], &nchurn[0], churn_level(now() - t0, 3.7), churn_a);
        churn_step(churn[1], &nchurn[1], churn_level(now() - t0 + 1, 2.9), churn_b);
        nap(20);
    }
    sink = leaks;
}

/* 2^depth distinct stacks: the path of calls spells the bits of i. */
__attribute__((noinline)) void *path_a(unsigned i, int depth);
__attribute__((noinline)) void *path_b(unsigned i, int depth);
void *path_a(unsigned i, int depth)
{
    void *p = !depth ? malloc(48) : (i & 1) ? path_b(i >> 1, depth - 1) : path_a(i >> 1, depth - 1);
    sink = p; /* no tail call: each level stays a frame */
    return p;
}
void *path_b(unsigned i, int depth)
{
    void *p = !depth ? malloc(48) : (i & 1) ? path_b(i >> 1, depth - 1) : path_a(i >> 1, depth - 1);
    sink = p;
    return p;
}

static void stacks(int depth)
{
    unsigned n = 1u << depth;
    void **keep = malloc(n * sizeof *keep);
    for (unsigned i = 0; keep && i < n; i++)
        keep[i] = path_a(i, depth);
    sink = keep;
    touch("ready");
    while (!exists("exit"))
        nap(10);
}

__attribute__((noinline)) void *shrink_site(void) { return malloc(1024); }

static void shrink(double secs)
{
    static void *held[2048];
    for (int i = 0; i < 2048; i++)
        held[i] = shrink_site();
    double t0 = now();
    for (int i = 2047; i >= 0; i--) {
        while (now() - t0 < secs * (2048 - i) / 2048)
            nap(5);
        free(held[i]);
    }
}

static void big(long n)
{
    void **keep = malloc((size_t)n * sizeof *keep);
    for (long i = 0; keep && i < n; i++)
        keep[i] = malloc(32);
    sink = keep;
    touch("ready");
    while (!exists("exit"))
        nap(10);
}

__attribute__((noinline)) void *session_site(void) { return malloc(240); }
__attribute__((noinline)) void *request_site(void) { return malloc(248); }

/* One thread, 1000 ticks a second: the oldest of 2000 sessions expires, a
 * request's buffer is allocated (1 in 20 leaked, request_site), a new
 * session is made (session_site). Sizes of one bin: the request's buffer
 * takes the expired session's address (glibc's free list). */
static void sessions(double secs)
{
    static void *held[2000];
    static void *leaked[20000];
    unsigned nleaked = 0;
    double t0 = now();
    for (unsigned tick = 0; now() - t0 < secs && nleaked < 20000; tick++) {
        free(held[tick % 2000]);
        void *r = request_site();
        if (tick % 20 == 0)
            leaked[nleaked++] = r;
        else
            free(r);
        held[tick % 2000] = session_site();
        while (now() - t0 < tick / 1000.0)
            nap(1);
    }
    sink = leaked;
}

__attribute__((noinline)) void *cache_entry(size_t n) { return malloc(n); }
__attribute__((noinline)) void *table_site(void) { return malloc(1000); }

static void turnover(double secs)
{
    static void *cache[2000], *table[400], *leaked[20000];
    unsigned nleaked = 0;
    for (int i = 0; i < 400; i++)
        table[i] = table_site();
    double t0 = now(), next_leak = t0;
    for (unsigned tick = 0; now() - t0 < secs && nleaked < 20000; tick++) {
        free(cache[tick % 2000]);
        cache[tick % 2000] = cache_entry(600 + (tick * 7919u) % 1500);
        void *r = request_site();
        if (tick % 200 == 0)
            leaked[nleaked++] = r;
        else
            free(r);
        if (now() >= next_leak && nleaked < 20000) {
            leaked[nleaked++] = leak_site();
            next_leak += 0.05;
        }
        while (now() - t0 < tick / 6000.0)
            nap(1);
    }
    sink = table;
    sink = leaked;
}

/* DIR/NAME holds this process's pid, whole when it appears. */
static int write_pid(const char *name)
{
    char p[4096], num[32];
    int len = snprintf(num, sizeof num, "%d\n", (int)getpid());
    snprintf(p, sizeof p, "%s/%s.tmp", dir, name);
    int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (fd < 0 || write(fd, num, (size_t)len) != len)
        return -1;
    close(fd);
    char final[4096];
    snprintf(final, sizeof final, "%s/%s", dir, name);
    return rename(p, final);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    dir = argv[2];
    if (write_pid("pid") != 0)
        return 3;
    wait_go();
    if (!strcmp(argv[1], "count"))
        count();
    else if (!strcmp(argv[1], "forked")) { /* count in a fork child (DIR/child: its pid) */
        pid_t c = fork();
        if (c < 0)
            return 3;
        if (c == 0) {
            if (write_pid("child") != 0)
                _exit(3);
            count();
            _exit(0);
        }
        int st;
        waitpid(c, &st, 0);
    }
    else if (!strcmp(argv[1], "trend"))
        trend(argc > 3 ? atof(argv[3]) : 10);
    else if (!strcmp(argv[1], "sessions"))
        sessions(argc > 3 ? atof(argv[3]) : 6);
    else if (!strcmp(argv[1], "turnover"))
        turnover(argc > 3 ? atof(argv[3]) : 6);
    else if (!strcmp(argv[1], "shrink"))
        shrink(argc > 3 ? atof(argv[3]) : 4);
    else if (!strcmp(argv[1], "stacks"))
        stacks(argc > 3 ? atoi(argv[3]) : 14);
    else if (!strcmp(argv[1], "big"))
        big(argc > 3 ? atol(argv[3]) : 1000000);
    else
        return 2;
    touch("done");
    return 0;
}
