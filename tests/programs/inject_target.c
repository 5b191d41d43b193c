/*
 * tests/programs/inject_target.c — programs the injector is tried on; each checks
 * its own results and exits 0 only if every call it made did what it would
 * have done without ltr (no EINTR it did not ask for, right sums):
 *   read      blocked in read() on stdin (a pipe) until a line comes
 *   epoll     blocked in epoll_wait() on stdin (Linux gives EINTR on a stop)
 *   epoll-thread  the same, beside a thread that allocates every 10 ms
 *   sleep     in nanosleep() for 2 s, then reads stdin
 *   longsleep in nanosleep() for 6 s, then reads stdin (the test stops and
 *             continues it first: the sleep goes on in restart_syscall)
 *   trampoline-word  reads stdin with the address of libc's signal
 *             trampoline in a local variable, as a stale word that glibc's
 *             sigaction left on the stack would be (no signal frame)
 *   inhandler a SIGUSR1 handler (installed with sigaction) reads stdin: a
 *             real signal frame on the stack
 *   cond      main waits on a condition variable; a thread reads stdin and signals
 *   busy      4 threads allocate, free and check checksums until stdin ends
 *   segvmask  main blocks SIGSEGV and reads stdin; a thread sleeps in read too
 *   exec-read blocks SIGSEGV (no moment is safe) and reads stdin; at a line it
 *             unblocks it and runs execve of itself in mode read
 *   loaderlock  a thread with SIGSEGV blocked dlopens $INJECT_HOLD_LIB (the
 *             probe, whose constructor, with $INJECT_PROBE_HOLD, sleeps
 *             inside the loader's lock); once it is in, main reads stdin
 *   libc      2 threads inside libc (memset) all the time; exits after 0.3 s
 *   libc-long the same for 30 s, SIGSEGV blocked in both threads: an attach
 *             finds no safe moment in its time (in libc alone, a rare one
 *             came: the vDSO's clock_gettime, the loop between memsets;
 *             test_attach's test_start_interrupted_while_attaching then
 *             attached in 31 ms, not in 3 s, and its signal came after)
 *   exit-when-held  main in memset all the time; a thread, in memset too
 *             between looks at main's /proc stat, exits the process
 *             (exit_group) once main is in a tracing stop: the thread the
 *             injector holds stopped is killed under it
 *   attach    4 threads churn (checked) until a line comes; then each makes
 *             500 blocks of 4243 bytes in attach_alloc_site, kept; "done"
 *   fdchurn   2 threads open and close files until a line comes; then main
 *             makes 100 blocks of 4244 bytes from a page of code without
 *             unwind information (a JIT's: "site" is the page), freed; "done"
 *   cycles    4 threads churn (checked, each resting 1 ms each 16 rounds) until
 *             end of input; each line makes
 *             main allocate and free 100 blocks of 31337 bytes in
 *             cycle_alloc_site, then print "did"
 *   maplib F  maps file F (a crafted "libc.so.6") below the C library, then
 *             reads stdin
 *   dlsym     at a first line, leaks 100 blocks through each of six malloc
 *             pointers, in dlsym_alloc_site, of sizes 100001.. by kind:
 *             dlsym(RTLD_DEFAULT), of dlopen(NULL)'s handle, dlvsym
 *             (RTLD_DEFAULT, GLIBC_2.2.5), dlsym(RTLD_NEXT) from the program,
 *             all looked up then; libc's handle; one looked up at start.
 *             Checks that other lookups did not change (strlen, RTLD_NEXT
 *             of its library's chain_outer, libc's malloc, a missing name's
 *             dlerror); "done". At a second line, the same pointers allocate
 *             100 more each (sizes 100101..), and every block is freed, the
 *             first ones through a free looked up at the first line; "did"
 *   dlsym-many  loads 800 copies of libheapchain.so (RTLD_LOCAL, from
 *             $TMPDIR); at each line prints "cost NS": the best of 5
 *             rounds of 100 dlsym(RTLD_DEFAULT, "malloc"), in ns per call
 *             (a late agent looks at every module for each such lookup;
 *             bench/attach/dlsym-many.sh)
 *   dlopen-many [N [LIB]]  copies libheapchain.so (or LIB, a build of chain.c)
 *             N times (800) into $TMPDIR; at
 *             each line dlopens every copy (RTLD_NOW | RTLD_LOCAL), calls its
 *             chain_inner once (one block of 12345 bytes through each
 *             copy's own malloc slot, freed), closes them all, checks that each
 *             was unloaded and prints "cost MEAN LAST CALL CALL_LAST
 *             CLOSE MS": ns per dlopen over all N and over the last tenth,
 *             where the most are loaded (a late agent sweeps the modules
 *             after each dlopen), ns per call of chain_inner with its free
 *             (the first heap event after the dlopen: the agent looks for
 *             new modules there) likewise, ns per dlclose (the agent looks
 *             for unloaded ones), and the whole round in ms
 *             (bench/attach/dlopen-many.sh, test_e2e_attach)
 *   atfork    registers a fork handler that allocates (before the attach,
 *             so that a late agent's own handler runs before it); at a
 *             line forks 3 times (each child allocates a block of 4321
 *             bytes and exits) and prints "forked"; ends at the next line
 *   atfork-lock  the same, 50 forks, but the fork handler takes a mutex that
 *             another thread holds around its own mallocs, as a library
 *             making its state fork-safe does
 * It prints "ready" once it is in place.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void ready(void)
{
    printf("ready\n");
    fflush(stdout);
}

static int fail(const char *what)
{
    fprintf(stderr, "target: %s: %s\n", what, strerror(errno));
    return 3;
}

static int read_line(void)
{
    char buf[64];
    ssize_t n = read(0, buf, sizeof buf);
    if (n < 0)
        return fail("read");
    return n > 0 ? 0 : (errno = 0, fail("read got end of file"));
}

static volatile int handler_result = 3;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int signalled;

static void *cond_helper(void *arg)
{
    (void)arg;
    int rc = read_line();
    pthread_mutex_lock(&mu);
    signalled = rc == 0 ? 1 : 2;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static atomic_int stop_busy;
static atomic_long busy_errors, busy_rounds;
/* cycles: each churning thread rests this long after each 16 of its rounds.
 * Without rest, 4 threads on 2 CPUs wrote every cycle's trace full for the
 * test to read twice, and took both CPUs from the tests beside it:
 * test_e2e_attach 42 s plain and 200 s under ASan (session 30's CI), 65 s
 * of CPU at load 14. The rest once counted the rounds of all four threads
 * (each rested once in 256 of its own); per thread and after 16,
 * test_fifty_cycles took 16.9 s of CPU instead of 27.8 (cgroup cpuacct,
 * three alternating runs each, load 16-22), and a thread is still in
 * malloc, realloc or free at many moments of each start and stop. */
static useconds_t busy_rest_us;

static void *busy(void *arg)
{
    unsigned seed = (unsigned)(long)arg;
    unsigned long mine = 0; /* this thread's rounds */
    while (!atomic_load(&stop_busy)) {
        size_t n = 16 + rand_r(&seed) % 4000;
        unsigned char *p = malloc(n);
        if (!p) {
            atomic_fetch_add(&busy_errors, 1);
            continue;
        }
        unsigned sum = 0, check = 0;
        for (size_t i = 0; i < n; i++)
            p[i] = (unsigned char)(i * 7 + seed), sum += p[i];
        p = realloc(p, n * 2);
        for (size_t i = 0; i < n; i++)
            check += p[i];
        if (sum != check)
            atomic_fetch_add(&busy_errors, 1);
        free(p);
        atomic_fetch_add(&busy_rounds, 1);
        if (++mine % 16 == 0 && busy_rest_us)
            usleep(busy_rest_us);
    }
    return NULL;
}

static void *in_libc(void *arg)
{
    static char big[1 << 22];
    for (;;)
        memset(big, (int)(long)arg, sizeof big);
    return NULL;
}

/* Exits the process once the main thread (arg: its /proc stat, open) is
 * in a tracing stop; between looks, in libc's memset, no safe moment. */
static void *exit_when_main_held(void *arg)
{
    static char buf[1 << 16];
    int fd = (int)(long)arg;
    for (;;) {
        memset(buf, 3, sizeof buf);
        char st[512];
        ssize_t n = pread(fd, st, sizeof st - 1, 0);
        st[n > 0 ? n : 0] = 0;
        const char *p = strrchr(st, ')');
        if (p && p[1] == ' ' && p[2] == 't')
            _exit(0);
    }
}

/* The allocation sites the end-to-end tests look for in the stacks. */
__attribute__((noinline)) void *attach_alloc_site(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" ::"r"(p) : "memory");
    return p;
}

__attribute__((noinline)) void *cycle_alloc_site(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" ::"r"(p) : "memory");
    return p;
}

static atomic_int gate;
static void *kept[4][500];

static void *attach_worker(void *arg)
{
    long k = (long)arg;
    unsigned seed = (unsigned)k;
    while (!atomic_load(&gate)) { /* churn, checked, as a service would */
        size_t n = 16 + rand_r(&seed) % 4000;
        unsigned char *p = malloc(n);
        memset(p, (int)k, n);
        if (p[n - 1] != (unsigned char)k)
            atomic_fetch_add(&busy_errors, 1);
        free(p);
    }
    for (int i = 0; i < 500; i++)
        kept[k][i] = attach_alloc_site(4243);
    return NULL;
}

static int mode_attach(void)
{
    pthread_t th[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, attach_worker, (void *)i);
    printf("site %p\n", (void *)attach_alloc_site);
    ready();
    if (read_line() != 0)
        return 3;
    atomic_store(&gate, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    printf("done\n");
    fflush(stdout);
    char buf[64];
    while (read(0, buf, sizeof buf) > 0)
        ;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 500; i++)
            free(kept[k][i]);
    return atomic_load(&busy_errors) ? 3 : 0;
}

static atomic_int fd_gate;
static void *fd_churner(void *arg)
{
    (void)arg;
    while (!atomic_load(&fd_gate)) { /* as a server accepting connections would */
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            close(fd);
    }
    return NULL;
}

static void *fd_gate_opener(void *arg)
{
    (void)arg;
    atomic_store(&fd_gate, read_line() == 0 ? 1 : 2);
    return NULL;
}

/* Files opened and closed on other threads while the agent arrives (main
 * allocating and sleeping 10 ms at a time meanwhile: an attach then met
 * the churn about 1 time in 2, beside 1 in 3 with 4 threads and main
 * blocked in read, 0 in 5 with main sleeping 1 ms at a time), then
 * allocations whose stacks the agent's unwinder leaves to libunwind: push
 * rbp; mov rbp,rsp; mov rax,rdi; mov rdi,rsi; call rax; pop rbp; ret. */
static int mode_fdchurn(void)
{
    static const unsigned char code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x48,
                                         0x89, 0xf7, 0xff, 0xd0, 0x5d, 0xc3};
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return fail("mmap");
    memcpy(page, code, sizeof code);
    void *(*call)(void *(*)(size_t), size_t) = (void *(*)(void *(*)(size_t), size_t))page;
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, i ? fd_churner : fd_gate_opener, NULL);
    printf("site %p\n", page);
    ready();
    while (!atomic_load(&fd_gate)) {
        free(call(malloc, 4245));
        usleep(10000);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    if (atomic_load(&fd_gate) != 1)
        return 3;
    for (int i = 0; i < 100; i++)
        free(call(malloc, 4244));
    printf("done\n");
    fflush(stdout);
    char buf[64];
    while (read(0, buf, sizeof buf) > 0)
        ;
    return 0;
}

static int mode_cycles(void)
{
    pthread_t th[4];
    busy_rest_us = 1000;
    for (long i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, busy, (void *)(i + 1));
    printf("site %p\n", (void *)cycle_alloc_site);
    ready();
    char line[64];
    FILE *in = fdopen(0, "r");
    while (fgets(line, sizeof line, in)) {
        void *p[100];
        for (int i = 0; i < 100; i++)
            if (!(p[i] = cycle_alloc_site(31337)))
                return 3;
        for (int i = 0; i < 100; i++)
            free(p[i]);
        printf("did\n");
        fflush(stdout);
    }
    atomic_store(&stop_busy, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    return atomic_load(&busy_errors) || !atomic_load(&busy_rounds) ? 3 : 0;
}

/* dlsym: malloc through pointers from lookups (tests/e2e/test_attach.c) */
typedef void *(*alloc_fn)(size_t);
void *chain_outer(int k); /* libheapchain.so's: a library of the program, in no scope of the agent's */

__attribute__((noinline)) void *dlsym_alloc_site(alloc_fn m, size_t n)
{
    void *p = m(n);
    __asm__ volatile("" ::"r"(p) : "memory");
    return p;
}

enum { DLSYM_KINDS = 6, DLSYM_BLOCKS = 100 };

/* One line of stdin, byte by byte: both may come in one write (preloaded,
 * from a pipe filled at once). */
static int read_one_line(void)
{
    char c;
    ssize_t n;
    while ((n = read(0, &c, 1)) == 1 && c != '\n')
        ;
    return n == 1 ? 0 : n == 0 ? (errno = 0, fail("read got end of file")) : fail("read");
}

/* 100 blocks of size through m, written and read back */
static int leak_through(alloc_fn m, size_t size, void **blocks)
{
    for (int i = 0; i < DLSYM_BLOCKS; i++) {
        unsigned char *p = m ? dlsym_alloc_site(m, size) : NULL;
        if (!p)
            return fail("malloc through a looked-up pointer");
        memset(p, i, size);
        if (p[size - 1] != (unsigned char)i)
            return fail("a block's bytes");
        blocks[i] = p;
    }
    return 0;
}

static int mode_dlsym(void)
{
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD), *program = dlopen(NULL, RTLD_NOW);
    alloc_fn early = (alloc_fn)dlsym(RTLD_DEFAULT, "malloc");
    void *libc_malloc = libc ? dlsym(libc, "malloc") : NULL, *strlen_was = dlsym(RTLD_DEFAULT, "strlen");
    if (!program || !early || !libc_malloc || dlsym(RTLD_NEXT, "chain_outer") != (void *)chain_outer)
        return fail("lookups at start");
    printf("pid %d\nsite %p\n", (int)getpid(), (void *)dlsym_alloc_site);
    ready();
    if (read_one_line() != 0)
        return 3;
    alloc_fn m[DLSYM_KINDS] = {
        (alloc_fn)dlsym(RTLD_DEFAULT, "malloc"), (alloc_fn)dlsym(program, "malloc"),
        (alloc_fn)dlvsym(RTLD_DEFAULT, "malloc", "GLIBC_2.2.5"), (alloc_fn)dlsym(RTLD_NEXT, "malloc"),
        (alloc_fn)dlsym(libc, "malloc"), early,
    };
    void (*free_fn)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "free");
    static void *looked_up[2][DLSYM_KINDS][DLSYM_BLOCKS];
    for (int k = 0; k < DLSYM_KINDS; k++)
        if (leak_through(m[k], 100001 + (size_t)k, looked_up[0][k]))
            return 3;
    if (!free_fn || dlsym(libc, "malloc") != libc_malloc || dlsym(RTLD_DEFAULT, "strlen") != strlen_was ||
        dlsym(RTLD_NEXT, "chain_outer") != (void *)chain_outer)
        return errno = 0, fail("a lookup changed by the attach");
    dlerror();
    if (dlsym(RTLD_DEFAULT, "ltr_no_such_symbol") || !dlerror())
        return errno = 0, fail("a missing name's lookup");
    printf("done\n");
    fflush(stdout);
    if (read_one_line() != 0)
        return 3;
    for (int k = 0; k < DLSYM_KINDS; k++)
        if (leak_through(m[k], 100101 + (size_t)k, looked_up[1][k]))
            return 3;
    for (int k = 0; k < DLSYM_KINDS; k++)
        for (int i = 0; i < DLSYM_BLOCKS; i++) {
            free_fn(looked_up[0][k][i]);
            free(looked_up[1][k][i]);
        }
    printf("did\n");
    fflush(stdout);
    return 0;
}

/* dlsym-many: N modules, so that a lookup's cost per module shows */
static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t n;
    int rc = in && out ? 0 : -1;
    while (!rc && (n = fread(buf, 1, sizeof buf, in)) > 0)
        rc = fwrite(buf, 1, n, out) == n ? 0 : -1;
    if (out && fclose(out) != 0)
        rc = -1;
    if (in)
        fclose(in);
    return rc;
}

static long long ns_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000ll + t.tv_nsec;
}

static int mode_dlsym_many(int n)
{
    Dl_info di;
    const char *tmp = getenv("TMPDIR");
    if (!dladdr((void *)chain_outer, &di) || !di.dli_fname || !tmp)
        return errno = 0, fail("libheapchain's path, TMPDIR");
    for (int i = 0; i < n; i++) {
        char to[4096];
        snprintf(to, sizeof to, "%s/many-%d.so", tmp, i);
        if (copy_file(di.dli_fname, to) != 0 || !dlopen(to, RTLD_NOW | RTLD_LOCAL))
            return fail("a copy of libheapchain");
    }
    ready();
    while (read_one_line() == 0) {
        long long best = -1;
        for (int round = 0; round < 5; round++) {
            long long t0 = ns_now();
            for (int i = 0; i < 100; i++)
                if (!dlsym(RTLD_DEFAULT, "malloc"))
                    return errno = 0, fail("dlsym(RTLD_DEFAULT, malloc)");
            long long per = (ns_now() - t0) / 100;
            best = best < 0 || per < best ? per : best;
        }
        printf("cost %lld\n", best);
        fflush(stdout);
    }
    return 0;
}

/* dlopen-many: what a dlopen costs, and which copies' allocations are seen */
static int dlopen_round(int n, char (*paths)[256], void **h)
{
    long long opening = 0, open_last = 0, call = 0, call_last = 0, t_round = ns_now();
    int tenth = n / 10 ? n / 10 : 1;
    for (int i = 0; i < n; i++) {
        long long t0 = ns_now();
        h[i] = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        long long t1 = ns_now();
        /* chain_inner: its malloc is the copy's own slot (chain_outer's call
         * of chain_middle binds to the program's libheapchain.so) */
        void *(*inner)(int) = h[i] ? (void *(*)(int))dlsym(h[i], "chain_inner") : NULL;
        if (!inner)
            return errno = 0, fail(dlerror());
        long long t2 = ns_now();
        free(inner(i)); /* a new stack: a traced event looks for new modules here */
        long long t3 = ns_now();
        opening += t1 - t0;
        open_last += i >= n - tenth ? t1 - t0 : 0;
        call += t3 - t2;
        call_last += i >= n - tenth ? t3 - t2 : 0;
    }
    long long t_close = ns_now();
    for (int i = n - 1; i >= 0; i--)
        if (dlclose(h[i]) != 0)
            return errno = 0, fail(dlerror());
    long long closing = ns_now() - t_close;
    long long whole = ns_now() - t_round;
    for (int i = 0; i < n; i++) /* unloaded: the next round loads each anew */
        if (dlopen(paths[i], RTLD_NOW | RTLD_NOLOAD))
            return errno = 0, fail("a copy still loaded after dlclose");
    printf("cost %lld %lld %lld %lld %lld %lld\n", opening / n, open_last / tenth, call / n, call_last / tenth,
           closing / n, whole / 1000000);
    fflush(stdout);
    return 0;
}

static int mode_dlopen_many(int n, const char *lib)
{
    Dl_info di;
    const char *tmp = getenv("TMPDIR");
    char (*paths)[256] = n > 0 ? calloc((size_t)n, sizeof *paths) : NULL;
    void **h = n > 0 ? calloc((size_t)n, sizeof *h) : NULL;
    if (!lib && dladdr((void *)chain_outer, &di))
        lib = di.dli_fname;
    if (!paths || !h || !lib || !tmp)
        return errno = 0, fail("N, libheapchain's path, TMPDIR");
    for (int i = 0; i < n; i++)
        if (snprintf(paths[i], sizeof paths[i], "%s/dl-%d.so", tmp, i) >= (int)sizeof paths[i] ||
            copy_file(lib, paths[i]) != 0)
            return fail("a copy of libheapchain");
    ready();
    int rc = 0;
    while (!rc && read_one_line() == 0)
        rc = dlopen_round(n, paths, h);
    return rc;
}

#define CHILD_BLOCK 4321 /* what each forked child allocates (and frees) before it exits */

/* atfork: a program's fork handler that allocates, as libraries' do */
static void *volatile atfork_block;
static void atfork_prepare(void)
{
    atfork_block = malloc(100);
    free(atfork_block);
}

/* atfork-lock: a library's state under a mutex, kept across forks */
static pthread_mutex_t atfork_mutex = PTHREAD_MUTEX_INITIALIZER;
static void atfork_lock(void) { pthread_mutex_lock(&atfork_mutex); }
static void atfork_unlock(void) { pthread_mutex_unlock(&atfork_mutex); }
static void *atfork_worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&atfork_mutex);
        atfork_block = malloc(64);
        free(atfork_block);
        pthread_mutex_unlock(&atfork_mutex);
    }
    return NULL;
}

static int mode_atfork(bool with_lock)
{
    pthread_t th;
    if (with_lock ? pthread_atfork(atfork_lock, atfork_unlock, atfork_unlock) != 0 ||
                        pthread_create(&th, NULL, atfork_worker, NULL) != 0
                  : pthread_atfork(atfork_prepare, NULL, NULL) != 0)
        return fail("pthread_atfork");
    ready();
    if (read_one_line() != 0)
        return 3;
    for (int i = 0; i < (with_lock ? 50 : 3); i++) {
        pid_t c = fork();
        if (c < 0)
            return fail("fork");
        if (c == 0) { /* a child forked after the attach: traced as its parent is */
            atfork_block = malloc(CHILD_BLOCK);
            free(atfork_block);
            _exit(0);
        }
        if (waitpid(c, NULL, 0) != c)
            return fail("waitpid");
    }
    printf("forked\n");
    fflush(stdout);
    return read_one_line();
}

static void *load_held(void *lib)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGSEGV);
    pthread_sigmask(SIG_BLOCK, &s, NULL); /* not a thread the attach may choose */
    return dlopen(lib, RTLD_NOW);
}

/* Main blocks in read while another thread holds the loader's lock. */
static int mode_loaderlock(const char *lib)
{
    int held[2];
    char fd[16], b;
    if (pipe(held) != 0)
        return fail("pipe");
    snprintf(fd, sizeof fd, "%d", held[1]);
    setenv("INJECT_PROBE_HOLD_FD", fd, 1);
    pthread_t th;
    if (pthread_create(&th, NULL, load_held, (void *)lib) != 0 || read(held[0], &b, 1) != 1)
        return fail("loaderlock");
    ready();
    int rc = read_line();
    void *handle;
    pthread_join(th, &handle);
    return handle ? rc : fail("dlopen");
}

static void on_usr1(int sig)
{
    (void)sig;
    ready();
    handler_result = read_line();
}

/* Blocks in read with the trampoline's address among its locals, followed
 * by zeros as in a stale kernel_sigaction with an empty mask. */
__attribute__((noinline)) static int read_beside(void *word)
{
    void *volatile slots[40];
    for (int i = 0; i < 40; i++)
        slots[i] = i == 3 ? word : NULL;
    ready();
    int rc = read_line();
    return slots[3] == word ? rc : 3;
}

/* epoll-thread's thread: allocates every 10 ms, for ever (volatile: the pair is kept). */
static void *allocate_often(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
        void *volatile p = malloc(31337);
        free(p);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "read";
    if (!strcmp(mode, "read")) {
        ready();
        return read_line();
    }
    if (!strcmp(mode, "epoll")) {
        int ep = epoll_create1(0);
        struct epoll_event ev = {.events = EPOLLIN}, got;
        if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev) != 0)
            return fail("epoll setup");
        ready();
        int n = epoll_wait(ep, &got, 1, -1);
        if (n != 1)
            return fail("epoll_wait");
        return read_line();
    }
    if (!strcmp(mode, "epoll-thread")) { /* as epoll, beside a thread the injector takes instead */
        pthread_t th;
        int ep = epoll_create1(0);
        struct epoll_event ev = {.events = EPOLLIN}, got;
        if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev) != 0 || pthread_create(&th, NULL, allocate_often, NULL))
            return fail("epoll-thread setup");
        ready();
        if (epoll_wait(ep, &got, 1, -1) != 1)
            return fail("epoll_wait");
        return read_line();
    }
    if (!strcmp(mode, "sleep")) {
        struct timespec ts = {2, 0};
        ready();
        if (nanosleep(&ts, NULL) != 0)
            return fail("nanosleep");
        return read_line();
    }
    if (!strcmp(mode, "longsleep")) {
        struct timespec ts = {6, 0};
        ready();
        if (nanosleep(&ts, NULL) != 0)
            return fail("nanosleep");
        return read_line();
    }
    if (!strcmp(mode, "trampoline-word") || !strcmp(mode, "inhandler")) {
        struct sigaction sa = {.sa_handler = on_usr1}, old;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGUSR1, &sa, NULL) != 0 || sigaction(SIGUSR1, NULL, &old) != 0 || !old.sa_restorer)
            return fail("sigaction");
        if (!strcmp(mode, "trampoline-word"))
            return read_beside((void *)old.sa_restorer);
        raise(SIGUSR1);
        return handler_result;
    }
    if (!strcmp(mode, "cond")) {
        pthread_t th;
        pthread_create(&th, NULL, cond_helper, NULL);
        ready();
        pthread_mutex_lock(&mu);
        while (!signalled)
            if (pthread_cond_wait(&cv, &mu) != 0)
                return fail("pthread_cond_wait");
        pthread_mutex_unlock(&mu);
        pthread_join(th, NULL);
        return signalled == 1 ? 0 : 3;
    }
    if (!strcmp(mode, "busy")) {
        pthread_t th[4];
        for (long i = 0; i < 4; i++)
            pthread_create(&th[i], NULL, busy, (void *)(i + 1));
        ready();
        char buf[64];
        while (read(0, buf, sizeof buf) > 0) /* one line per round of the test; ends at EOF */
            ;
        atomic_store(&stop_busy, 1);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
        printf("rounds %ld errors %ld\n", atomic_load(&busy_rounds), atomic_load(&busy_errors));
        return atomic_load(&busy_errors) || !atomic_load(&busy_rounds) ? 3 : 0;
    }
    if (!strcmp(mode, "segvmask")) {
        pthread_t th;
        pthread_create(&th, NULL, cond_helper, NULL); /* SIGSEGV unblocked there */
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGSEGV);
        pthread_sigmask(SIG_BLOCK, &s, NULL);
        ready();
        pthread_join(th, NULL);
        return signalled == 1 ? 0 : 3;
    }
    if (!strcmp(mode, "exec-read")) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGSEGV);
        sigprocmask(SIG_BLOCK, &s, NULL);
        ready();
        if (read_line() != 0)
            return 3;
        sigprocmask(SIG_UNBLOCK, &s, NULL);
        execl("/proc/self/exe", argv[0], "read", (char *)NULL);
        return fail("execl");
    }
    if (!strcmp(mode, "maplib") && argc > 2) { /* a file mapped below the C library, as a libc */
        int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
        if (fd < 0 || mmap((void *)0x10000000, 16384, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED_NOREPLACE,
                           fd, 0) == MAP_FAILED)
            return fail("maplib");
        ready();
        return read_line();
    }
    if (!strcmp(mode, "loaderlock") && getenv("INJECT_HOLD_LIB"))
        return mode_loaderlock(getenv("INJECT_HOLD_LIB"));
    if (!strcmp(mode, "attach"))
        return mode_attach();
    if (!strcmp(mode, "fdchurn"))
        return mode_fdchurn();
    if (!strcmp(mode, "cycles"))
        return mode_cycles();
    if (!strcmp(mode, "dlsym"))
        return mode_dlsym();
    if (!strcmp(mode, "dlsym-many"))
        return mode_dlsym_many(800);
    if (!strcmp(mode, "dlopen-many"))
        return mode_dlopen_many(argc > 2 ? atoi(argv[2]) : 800, argc > 3 ? argv[3] : NULL);
    if (!strcmp(mode, "atfork"))
        return mode_atfork(false);
    if (!strcmp(mode, "atfork-lock"))
        return mode_atfork(true);
    if (!strcmp(mode, "exit-when-held")) {
        static char buf[1 << 16];
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)getpid());
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        pthread_t th;
        if (fd < 0 || pthread_create(&th, NULL, exit_when_main_held, (void *)(long)fd))
            return fail("exit-when-held");
        ready();
        for (;;)
            memset(buf, 4, sizeof buf);
    }
    if (!strcmp(mode, "libc") || !strcmp(mode, "libc-long")) {
        if (strcmp(mode, "libc")) { /* no moment at all, in both threads (the thread inherits the mask) */
            sigset_t segv;
            sigemptyset(&segv);
            sigaddset(&segv, SIGSEGV);
            pthread_sigmask(SIG_BLOCK, &segv, NULL);
        }
        pthread_t th;
        pthread_create(&th, NULL, in_libc, (void *)1L);
        ready();
        static char big[1 << 22];
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long end = now.tv_sec * 1000000000ll + now.tv_nsec + (strcmp(mode, "libc") ? 30000 : 300) * 1000000ll;
        do {
            memset(big, 2, sizeof big);
            clock_gettime(CLOCK_MONOTONIC, &now);
        } while (now.tv_sec * 1000000000ll + now.tv_nsec < end);
        _exit(0);
    }
    return 2;
}
