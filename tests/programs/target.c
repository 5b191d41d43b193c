/*
 * tests/programs/target.c — the program the heap tests trace (built without
 * frame pointers and without sanitizers, like a distributed binary). Each
 * mode does a known set of allocations with sizes the tests look for; see
 * test_heap.c for what each is expected to produce.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void *chain_outer(int k);
void mode_tree(void); /* tree.c */
void mode_reuse(void); /* reuse.c */
void mode_phases(unsigned same); /* reuse.c */
void mode_guesses(unsigned n); /* reuse.c */
int mode_dlmany(int n); /* dlmany.c */

static void *keep[64];

static void mode_counts(void)
{
    for (int i = 0; i < 3; i++) {
        free(malloc(1001));
        free(calloc(3, 667));
        void *p = NULL;
        if (posix_memalign(&p, 64, 3001) == 0)
            free(p);
        free(aligned_alloc(64, 4032));
        free(memalign(32, 5001));
        free(valloc(6001));
        free(pvalloc(7001));
    }
    void *r = realloc(NULL, 8001);          /* Alloc, function realloc */
    r = realloc(r, 800001);                 /* Realloc (moves: mmap threshold) */
    r = realloc(r, 8002);                   /* Realloc */
    void *z = realloc(r, 0);                /* Free, function realloc */
    free(z);
    void *a = reallocarray(NULL, 2, 4501);  /* Alloc 9002, function reallocarray */
    a = reallocarray(a, 4, 4501);           /* Realloc 18004 */
    free(a);
    free(NULL);
}

/* Exported (-rdynamic) so that dladdr1 finds its size. */
__attribute__((noinline)) void mode_chain(void)
{
    void *fns[] = {dlsym(RTLD_DEFAULT, "chain_inner"), dlsym(RTLD_DEFAULT, "chain_middle"),
                   dlsym(RTLD_DEFAULT, "chain_outer"), (void *)mode_chain};
    const char *names[] = {"chain_inner", "chain_middle", "chain_outer", "mode_chain"};
    for (int i = 0; i < 4; i++) {
        Dl_info info;
        const ElfW(Sym) *sym = NULL;
        if (dladdr1(fns[i], &info, (void **)&sym, RTLD_DL_SYMENT) && sym)
            printf("%s %p %lu\n", names[i], fns[i], (unsigned long)sym->st_size);
    }
    fflush(stdout);
    keep[0] = chain_outer(1);
    keep[1] = malloc(1); /* no tail call: mode_chain stays on the stack */
}

static void *worker(void *arg)
{
    long t = (long)arg;
    char name[16];
    snprintf(name, sizeof name, "worker-%ld", t);
    pthread_setname_np(pthread_self(), name);
    for (int i = 0; i < 1000; i++)
        free(malloc(2001 + (size_t)t));
    return NULL;
}

/* A thread that has written its record, then is renamed by main: its next
 * allocation must carry the new name (the agent's cross-thread renames). */
static int rename_pipes[2][2];
static void *renamed_worker(void *arg)
{
    (void)arg;
    char c;
    keep[40] = malloc(2101); /* its first event: its THREAD record, the old name */
    if (write(rename_pipes[0][1], "x", 1) != 1 || read(rename_pipes[1][0], &c, 1) != 1)
        return NULL;
    keep[41] = malloc(2102); /* after main renamed it */
    return NULL;
}

static void mode_renamed(void)
{
    pthread_t t;
    char c;
    if (pipe(rename_pipes[0]) || pipe(rename_pipes[1]) || pthread_create(&t, NULL, renamed_worker, NULL))
        exit(1);
    if (read(rename_pipes[0][0], &c, 1) != 1)
        exit(1);
    pthread_setname_np(t, "renamed-late");
    if (write(rename_pipes[1][1], "x", 1) != 1)
        exit(1);
    pthread_join(t, NULL);
}

static void mode_threads(void)
{
    pthread_t th[4];
    for (long t = 0; t < 4; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
}

/* A thread per request: n threads one after the other, each making
 * `events` heap events (malloc/free pairs) and ending; then one allocation
 * of main's, the newest event. Memory mode held a buffer per thread
 * (docs/design.md, "Buffers: the defaults and why"). */
static unsigned short_events;
static void *short_worker(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i + 1 < short_events; i += 2)
        free(malloc(3001 + (i & 7)));
    return NULL;
}

static int mode_short_threads(unsigned n, unsigned events)
{
    short_events = events;
    for (unsigned i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, short_worker, NULL))
            return 4;
        pthread_join(t, NULL);
    }
    keep[0] = malloc(3999);
    return 0;
}

/* Two threads taking turns, `events` heap events a turn, `turns` turns in
 * all: each fills a buffer over several turns, so their buffers alternate in
 * the ring, as two busy threads' do (a save's merge of each thread's). */
static pthread_barrier_t turn_barrier;
static unsigned turn_count, turn_events;
static void *turn_worker(void *arg)
{
    unsigned me = (unsigned)(uintptr_t)arg;
    for (unsigned t = 0; t < turn_count; t++) {
        for (unsigned i = 0; t % 2 == me && i + 1 < turn_events; i += 2)
            free(malloc(2001 + me * 100 + (i & 7)));
        pthread_barrier_wait(&turn_barrier);
    }
    return NULL;
}

static int mode_alternate(unsigned turns, unsigned events)
{
    pthread_t t[2];
    turn_count = turns;
    turn_events = events;
    pthread_barrier_init(&turn_barrier, NULL, 2);
    for (uintptr_t i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, turn_worker, (void *)i))
            return 4;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return 0;
}

/* glibc's pthread_getattr_np allocates while it holds the lock of the
 * thread asked about: as the first thing a thread does (Rust's runtime does
 * it at start), it must not leave the agent waiting on that lock. */
static void *asks_own_stack(void *arg)
{
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return NULL;
    pthread_attr_destroy(&a);
    keep[(long)arg] = malloc(3700 + (size_t)(long)arg);
    return NULL;
}

/* Threads with small stacks, most of it in use when they allocate: glibc
 * takes the agent's TLS from each thread's stack, and the hooks run on it. */
__attribute__((noinline)) static void small_stack_depth(int kb, int i)
{
    volatile char pad[1024];
    memset((char *)pad, i, sizeof pad);
    if (kb > 1)
        small_stack_depth(kb - 1, i);
    else
        keep[i] = malloc(3750 + (size_t)i);
    __asm__ volatile("" ::: "memory");
}

static void *small_stack_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 32; i++)
        small_stack_depth(20, i);
    return NULL;
}

static int mode_small_stacks(void)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 32 << 10);
    pthread_t t;
    int rc = pthread_create(&t, &a, small_stack_worker, NULL);
    if (rc)
        return fprintf(stderr, "target: pthread_create with a 32 KB stack: %s\n", strerror(rc)), 4;
    pthread_join(t, NULL);
    return 0;
}

/* A pool of 100 threads, each allocating in bursts and sleeping between
 * them while it still holds its buffer: 80000 events, 1.2 MB. */
static void *pool_worker(void *arg)
{
    (void)arg;
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 20; i++)
            free(malloc(3870 + (size_t)(i & 7)));
        usleep(2000);
    }
    return NULL;
}

static int mode_pool(void)
{
    pthread_t t[100];
    for (int i = 0; i < 100; i++)
        if (pthread_create(&t[i], NULL, pool_worker, NULL))
            return 4;
    for (int i = 0; i < 100; i++)
        pthread_join(t[i], NULL);
    return 0;
}

/* Threads one after another whose last heap event comes after every key
 * destructor ran: glibc frees the buffer of strerror's message for an
 * unknown error ("Unknown error 12345", 20 bytes) in __libc_thread_freeres.
 * Prints how many kB more the process has mapped after the last 2000
 * threads than after the first 200: nothing of the agent's may stay behind
 * a thread that is gone. */
static long vm_size_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmSize:", 7))
            kb = atol(line + 7);
    if (f)
        fclose(f);
    return kb;
}

static void *strerror_worker(void *arg)
{
    (void)arg;
    return strerror(12345);
}

static int strerror_threads(int n)
{
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, strerror_worker, NULL))
            return 4;
        pthread_join(t, NULL);
    }
    return 0;
}

static int mode_exit_frees(void)
{
    if (strerror_threads(200))
        return 4;
    long before = vm_size_kb();
    if (strerror_threads(2000))
        return 4;
    printf("exitfrees grew %ld kB\n", vm_size_kb() - before);
    return 0;
}

/* A thread whose own key's destructor (a key made after the agent's, so it
 * runs after the agent's in each round) frees a list of 200 nodes at its
 * exit, as a per-thread cache does: the agent's blocks are then already
 * given back for that round. */
#define KEYFREES_NODES 200
static pthread_key_t cache_key;

static void free_cache(void *head)
{
    for (void **n = head; n;) {
        void **next = *n;
        free(n);
        n = next;
    }
}

static void *cache_worker(void *arg)
{
    (void)arg;
    void **head = NULL;
    for (int i = 0; i < KEYFREES_NODES; i++) {
        void **n = malloc(32);
        if (!n)
            break;
        *n = head;
        head = n;
    }
    pthread_setspecific(cache_key, head);
    return NULL;
}

static int mode_key_frees(void)
{
    pthread_t t;
    if (pthread_key_create(&cache_key, free_cache) || pthread_create(&t, NULL, cache_worker, NULL))
        return 4;
    pthread_join(t, NULL);
    return 0;
}

/* More threads than ltr record's default ring gives threads buffers of
 * their own (448 of 512, ring.h): 600 threads all alive at once (a
 * barrier), each allocating 40 blocks of 5000 + its number % 8 bytes before
 * and 40 after the barrier, freeing all but the last of each 40: 96 000
 * events, about 1.3 MB, so that the ring holds all of them even if the
 * recorder never ran. Each thread leaks 2 blocks. */
#define CROWD 600
static pthread_barrier_t crowd_barrier;

static void crowd_round(size_t size)
{
    void *last = NULL;
    for (int i = 0; i < 40; i++) {
        free(last);
        last = malloc(size);
    }
}

static void *crowd_worker(void *arg)
{
    size_t size = 5000 + (uintptr_t)arg % 8;
    crowd_round(size);
    pthread_barrier_wait(&crowd_barrier);
    crowd_round(size);
    return NULL;
}

static int mode_crowd(void)
{
    static pthread_t t[CROWD];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_barrier_init(&crowd_barrier, NULL, CROWD);
    for (uintptr_t i = 0; i < CROWD; i++)
        if (pthread_create(&t[i], &attr, crowd_worker, (void *)i))
            return 4;
    for (int i = 0; i < CROWD; i++)
        pthread_join(t[i], NULL);
    return 0;
}

static void mode_getattr(void)
{
    alarm(60); /* a deadlock fails the test instead of hanging it */
    asks_own_stack((void *)1);
    pthread_t th;
    pthread_create(&th, NULL, asks_own_stack, (void *)2);
    pthread_join(th, NULL);
}

static void at_exit_noop(void) {}

/* glibc's atexit allocates the next block of exit functions (after the 32 of
 * the static one) while it holds the exit-functions lock: as the process's
 * first traced allocation, the agent's first event then runs inside that
 * lock (node's 33rd static constructor did this). */
static void mode_atexit(void)
{
    alarm(60); /* a deadlock fails the test instead of hanging it */
    for (int i = 0; i < 40; i++)
        atexit(at_exit_noop);
    keep[0] = malloc(3750);
}

/* Waits (up to 20 s) for a file to exist. */
static bool wait_for(const char *file)
{
    for (int i = 0; i < 2000 && access(file, F_OK) != 0; i++)
        usleep(10000);
    return access(file, F_OK) == 0;
}

static const char *gate_file;

/* Runs holding the loader's write lock, as glibc's dlclose does while it
 * frees the link maps it unloads: this thread's first event comes while the
 * other threads' first events (started by the same gate) look at the
 * loader's list. */
static int hold_loader(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (!wait_for(gate_file))
        exit(3);
    usleep(200000); /* the others are in their first event by now */
    free(malloc(3760));
    return 1;
}

static void *loader_holder(void *arg)
{
    dl_iterate_phdr(hold_loader, NULL);
    return NULL;
}

static void *gated_allocator(void *arg)
{
    if (!wait_for(gate_file))
        exit(3);
    for (int i = 0; i < 100; i++)
        free(malloc(3761));
    return NULL;
}

/* Started dormant; the test starts a session, then creates the file. */
static void mode_loader_lock(const char *file)
{
    alarm(60); /* a deadlock fails the test instead of hanging it */
    gate_file = file;
    pthread_t th[3];
    pthread_create(&th[0], NULL, loader_holder, NULL);
    for (int t = 1; t < 3; t++)
        pthread_create(&th[t], NULL, gated_allocator, NULL);
    for (int t = 0; t < 3; t++)
        pthread_join(th[t], NULL);
}

/* A handler that siglongjmps out of whatever it interrupted, sent while the
 * victim thread's first event waits inside the agent (for the loader's
 * lock, held by the sender). The agent holds the signal until it is done;
 * before, the jump left its guard up and the thread untraced. */
static sigjmp_buf victim_jb;
static pthread_t victim;

static void jump_out(int sig)
{
    siglongjmp(victim_jb, 1);
}

static int hold_loader_and_signal(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (!wait_for(gate_file))
        exit(3);
    usleep(200000); /* the victim waits inside the agent by now */
    pthread_kill(victim, SIGUSR1);
    usleep(100000);
    return 1;
}

static void *signal_sender(void *arg)
{
    dl_iterate_phdr(hold_loader_and_signal, NULL);
    return NULL;
}

static void *jump_victim(void *arg)
{
    if (!wait_for(gate_file))
        exit(3);
    if (sigsetjmp(victim_jb, 1) == 0) {
        keep[0] = malloc(3770);
        pause(); /* the signal comes once the agent is done, if not before */
    }
    for (int i = 0; i < 10; i++)
        keep[1 + i] = malloc(3771);
    return NULL;
}

/* Started dormant, like mode_loader_lock. */
static void mode_longjmp(const char *file)
{
    alarm(60); /* a deadlock fails the test instead of hanging it */
    gate_file = file;
    signal(SIGUSR1, jump_out);
    pthread_t sender;
    pthread_create(&victim, NULL, jump_victim, NULL);
    pthread_create(&sender, NULL, signal_sender, NULL);
    pthread_join(sender, NULL);
    pthread_join(victim, NULL);
    keep[20] = malloc(3772);
}

static void mode_fork(void)
{
    keep[0] = malloc(3100);
    pid_t c = fork();
    if (c == 0) {
        for (int i = 0; i < 5; i++)
            keep[i + 1] = malloc(3200);
        _exit(0);
    }
    waitpid(c, NULL, 0);
    keep[1] = malloc(3300);
}

static void mode_exec(const char *self)
{
    keep[0] = malloc(3400);
    execl(self, self, "exec2", (char *)NULL);
}

static void mode_dlopen(const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", lib, dlerror());
        exit(1);
    }
    void *(*f)(void) = (void *(*)(void))dlsym(h, "dl_alloc");
    free(f());
    dlclose(h);
    keep[0] = malloc(3601); /* after the unload */
}

/* "dlgated LIB G1 DONE G2": attached, waits for the file G1, loads LIB and
 * allocates 3 611 bytes through it, creates DONE, waits for G2 and
 * allocates 3 612 bytes through it: a test stops the recorder and fills the
 * session's metadata region before G1, so that LIB's load record finds no
 * room, and lets the recorder read the region before G2. */
static int mode_dlgated(const char *lib, const char *g1, const char *done, const char *g2)
{
    free(malloc(3610));
    if (!wait_for(g1))
        return 3;
    void *h = dlopen(lib, RTLD_NOW);
    void *(*f)(size_t) = h ? (void *(*)(size_t))dlsym(h, "dl_alloc_n") : NULL;
    if (!f)
        return fprintf(stderr, "dlopen %s: %s\n", lib, dlerror()), 1;
    free(f(3611));
    int fd = open(done, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return 4;
    close(fd);
    if (!wait_for(g2))
        return 3;
    free(f(3612));
    return 0;
}

/* malloc(size) called from a page of code without unwind information, as
 * a JIT's: push rbp; mov rbp,rsp; mov rax,rdi; mov rdi,rsi; call rax; pop
 * rbp; ret (a frame chain, which libunwind follows validating memory). */
static void *jit_alloc(size_t size)
{
    static const unsigned char code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x48,
                                         0x89, 0xf7, 0xff, 0xd0, 0x5d, 0xc3};
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return NULL;
    memcpy(page, code, sizeof code);
    void *(*call)(void *(*)(size_t), size_t) = (void *(*)(void *(*)(size_t), size_t))page;
    void *p = call(malloc, size);
    munmap(page, 4096);
    return p;
}

/* A daemon's close-all after its first allocations (the agent attached):
 * every fd from 3 up closed, 64 files of its own opened (they take the
 * agent's numbers), then 1 000 allocations of 3 601 bytes through the
 * library LIB and their frees; then a copy of it, LIB2, loaded (elsewhere:
 * LIB is still there), LIB unloaded, and 100 allocations of 3 602 bytes
 * through the copy (the agent's unwinder looks at its modules again); then
 * an allocation of 3 603 bytes from code of its own without unwind
 * information (a JIT's), which the agent's unwinder leaves to libunwind,
 * which validates memory there through a pipe it opened at its start (a
 * number the program now uses). Says "files ok" if its files kept their
 * bytes and their offsets, stayed open and are still the same files. */
static int mode_closeall(const char *lib, const char *lib2, const char *dir)
{
    void *h = dlopen(lib, RTLD_NOW);
    void *(*f)(size_t) = h ? (void *(*)(size_t))dlsym(h, "dl_alloc_n") : NULL;
    if (!f)
        return fprintf(stderr, "dlopen %s: %s\n", lib, dlerror()), 1;
    free(f(3600));
    closefrom(3); /* every one, the agent's high ones too (ltr_fd_floor) */
    enum { FILES = 64 };
    int fds[FILES];
    ino_t ino[FILES];
    char data[4096];
    memset(data, 'D', sizeof data);
    for (int i = 0; i < FILES; i++) {
        char name[600];
        struct stat st;
        snprintf(name, sizeof name, "%s/closeall.%d", dir, i);
        fds[i] = open(name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fds[i] < 0 || write(fds[i], data, sizeof data) != (ssize_t)sizeof data || fstat(fds[i], &st) != 0)
            return 3;
        ino[i] = st.st_ino;
    }
    for (int i = 0; i < 1000; i++)
        free(f(3601));
    void *h2 = dlopen(lib2, RTLD_NOW); /* before the unload: not in its place */
    f = h2 ? (void *(*)(size_t))dlsym(h2, "dl_alloc_n") : NULL;
    if (!f)
        return fprintf(stderr, "dlopen %s: %s\n", lib2, dlerror()), 1;
    dlclose(h);
    for (int i = 0; i < 100; i++)
        free(f(3602));
    free(jit_alloc(3603));
    for (int i = 0; i < FILES; i++) {
        struct stat st;
        if (fstat(fds[i], &st) != 0 || st.st_ino != ino[i] || st.st_size != (off_t)sizeof data ||
            lseek(fds[i], 0, SEEK_CUR) != (off_t)sizeof data)
            return printf("file %d changed\n", i), 4;
    }
    printf("files ok\n");
    return 0;
}

/* What a program sees of its fd table under the agent: allocations first
 * (the agent attaches, its unwinder reads the modules' CFI, libunwind starts
 * for a stack from code without unwind information), then its first
 * open(), which says "first open N", and every fd below 1024 but 0, 1 and
 * 2, "fd N -> TARGET", then "dup2 ok" if dup2 onto 3 to 9 (a program's
 * fixed numbers) leaves the allocations after it recorded (the test counts
 * them: 50 of 3 611 bytes). */
static int mode_fds(void)
{
    for (int i = 0; i < 10; i++)
        free(malloc(3610));
    free(jit_alloc(3610));
    int first = open("/dev/null", O_RDONLY | O_CLOEXEC);
    printf("first open %d\n", first);
    if (first >= 0)
        close(first);
    char path[64], target[512];
    for (int fd = 3; fd < 1024; fd++) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n >= 0)
            printf("fd %d -> %.*s\n", fd, (int)n, target);
    }
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 3; fd <= 9; fd++)
        if (null >= 0 && fd != null && dup2(null, fd) < 0)
            return 2;
    for (int i = 0; i < 50; i++)
        free(malloc(3611));
    printf("dup2 ok\n");
    fflush(stdout);
    return 0;
}

static volatile int handled;

static void on_signal(int sig)
{
    free(malloc(3700));
    handled++;
}

/* A handler that allocates, run while other threads allocate through the
 * agent. (An asynchronous signal that interrupts glibc's malloc and then
 * calls malloc breaks glibc whatever the agent does, so the signals here are
 * raised synchronously; one that interrupts the agent's own code finds the
 * reentrancy guard up and passes through untraced.) */
static void mode_signal(void)
{
    signal(SIGUSR1, on_signal);
    pthread_t th[2];
    for (long t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, worker, (void *)(t + 10));
    for (int i = 0; i < 10; i++)
        raise(SIGUSR1);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
}

static void mode_kill(void)
{
    for (int i = 0; i < 100; i++)
        keep[i & 63] = malloc(3800);
    kill(getpid(), SIGKILL);
}

/* 200 001 events quickly ("manygate FILE": a pair of events, then these once
 * FILE exists, so that a test can stop the recorder of an attached process;
 * "manyhold FILE": these, then it runs on until FILE exists). */
static void mode_many(void)
{
    for (int i = 0; i < 100000; i++)
        free(malloc(3900 + (size_t)(i & 15)));
    keep[0] = malloc(3999); /* the newest event */
}

/* Output that depends on the allocator's behaviour, for the dormant test. */
static void mode_dormant(void)
{
    unsigned long sum = 0;
    for (int i = 1; i < 2000; i++) {
        unsigned char *p = malloc((size_t)i);
        memset(p, i & 0xff, (size_t)i);
        p = realloc(p, (size_t)i * 2);
        for (int j = 0; j < i; j++)
            sum += p[j];
        free(p);
    }
    printf("sum %lu\n", sum);
}

/* Waits (up to 20 s) for a file to exist, then does the counts: lets a test
 * start a session for this pid before it allocates. */
static int mode_gate(const char *file)
{
    if (!wait_for(file))
        return 3;
    mode_counts();
    return 0;
}

/* The counts before and after the gate: a process whose first events find
 * its session's recorder stopped, and whose later ones find it running. */
/* "overwritten": the main thread allocates a 512-byte block; a second thread
 * frees it, then churns 40-byte blocks long enough for a flight recorder of
 * a few buffers to overwrite the buffer that holds the free, then allocates
 * 512 bytes, which its tcache gives at the same address. The main thread's
 * buffer, half-filled, is kept: the trace has the block allocated twice and
 * the free between them overwritten. Prints "same" if the address came back. */
static void *first_block;

static void *overwrite_the_free(void *unused)
{
    (void)unused;
    free(first_block);
    for (int i = 0; i < 200000; i++)
        free(malloc(40));
    return malloc(512);
}

static void mode_overwritten(void)
{
    first_block = malloc(512);
    pthread_t t;
    void *again = NULL;
    if (pthread_create(&t, NULL, overwrite_the_free, NULL) == 0)
        pthread_join(t, &again);
    printf("%s\n", again == first_block ? "same" : "other");
}

/* Blocks of 4 GiB and more among small ones (address space, never
 * touched), the last one kept: sizes a column's 32-bit values cannot hold
 * (test_columns.c). Prints how many of them were had. */
/* Blocks allocated and kept, 20 000 in a row, of sizes that differ from
 * one to the next: windows of the analyzer's fast path whose records are
 * all of one table entry (blocks.c, IOTA), as perl's leak has. */
static void mode_kept(void)
{
    static void *kept[20000];
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
        kept[i] = malloc(16 + i % 97 * 8);
    printf("%p\n", kept[19999]);
}

static void mode_bigsizes(void)
{
    int had = 0;
    for (size_t i = 0; i < 100000; i++) { /* buffers full as it runs: a block written at the end stays in rows */
        void *p = malloc(16 + i % 64), *big = i % 10000 == 5000 ? malloc(((size_t)4 << 30) + i) : NULL;
        had += big != NULL;
        if (i != 95000)
            free(big);
        if (i % 2)
            free(p);
    }
    printf("%d\n", had);
}

/* The layout of a thread's arena as the thread sees it: the offsets from its
 * first block of blocks taken after its (and the process's) first free and
 * first realloc, whose events' layouts the agent describes from this thread.
 * test_heap.c's test_arena_as_without_agent runs it plain and recorded: a
 * block the agent took from this arena and gave back (its record buffer,
 * 256 bytes) stayed in the thread's cache and moved every later block by its
 * 272 bytes: "464 32 576" recorded, "192 32 304" plain. */
static void *arena_walk(void *unused)
{
    (void)unused;
    char *first = malloc(24), *grown = malloc(100);
    free(malloc(40));
    void *after_free = malloc(100);
    grown = realloc(grown, 5000);
    void *after_realloc = malloc(100);
    printf("%td %td %td\n", (char *)after_free - first, (char *)after_realloc - first, grown - first);
    free(after_realloc);
    free(after_free);
    free(grown);
    free(first);
    return NULL;
}

static void mode_arena(void)
{
    void *kept = malloc(100); /* the session's start, in the main thread */
    pthread_t th;
    pthread_create(&th, NULL, arena_walk, NULL);
    pthread_join(th, NULL);
    free(kept);
}

static int mode_counts_gate(const char *file)
{
    mode_counts();
    return mode_gate(file);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "counts";
    if (!strcmp(mode, "counts"))
        mode_counts();
    else if (!strcmp(mode, "overwritten"))
        mode_overwritten();
    else if (!strcmp(mode, "chain"))
        mode_chain();
    else if (!strcmp(mode, "kept"))
        mode_kept();
    else if (!strcmp(mode, "bigsizes"))
        mode_bigsizes();
    else if (!strcmp(mode, "renamed"))
        mode_renamed();
    else if (!strcmp(mode, "threads"))
        mode_threads();
    else if (!strcmp(mode, "fork"))
        mode_fork();
    else if (!strcmp(mode, "getattr"))
        mode_getattr();
    else if (!strcmp(mode, "arena"))
        mode_arena();
    else if (!strcmp(mode, "smallstack"))
        return mode_small_stacks();
    else if (!strcmp(mode, "pool"))
        return mode_pool();
    else if (!strcmp(mode, "exitfrees"))
        return mode_exit_frees();
    else if (!strcmp(mode, "keyfrees"))
        return mode_key_frees();
    else if (!strcmp(mode, "crowd"))
        return mode_crowd();
    else if (!strcmp(mode, "shortthreads") && argc > 3)
        return mode_short_threads((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
    else if (!strcmp(mode, "alternate") && argc > 3)
        return mode_alternate((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
    else if (!strcmp(mode, "atexit"))
        mode_atexit();
    else if (!strcmp(mode, "exec"))
        mode_exec(argv[0]);
    else if (!strcmp(mode, "exec2"))
        keep[0] = malloc(3500);
    else if (!strcmp(mode, "dlopen") && argc > 2)
        mode_dlopen(argv[2]);
    else if (!strcmp(mode, "dlmany") && argc > 2)
        return mode_dlmany(atoi(argv[2]));
    else if (!strcmp(mode, "signal"))
        mode_signal();
    else if (!strcmp(mode, "kill"))
        mode_kill();
    else if (!strcmp(mode, "many"))
        mode_many();
    else if (!strcmp(mode, "gatehold") && argc > 3) {
        if (!wait_for(argv[2])) /* "gatehold G1 G2": the counts between two gates */
            return 3;
        mode_counts();
        if (!wait_for(argv[3]))
            return 3;
    } else if (!strcmp(mode, "manyhold") && argc > 2) {
        mode_many();
        if (!wait_for(argv[2]))
            return 3;
    } else if (!strcmp(mode, "manygate") && argc > 2) {
        free(malloc(3998));
        if (!wait_for(argv[2]))
            return 3;
        mode_many();
    }
    else if (!strcmp(mode, "dormant"))
        mode_dormant();
    else if (!strcmp(mode, "tree"))
        mode_tree();
    else if (!strcmp(mode, "reuse"))
        mode_reuse();
    else if (!strcmp(mode, "phases") && argc > 2)
        mode_phases((unsigned)atoi(argv[2]));
    else if (!strcmp(mode, "guesses") && argc > 2)
        mode_guesses((unsigned)atoi(argv[2]));
    else if (!strcmp(mode, "loaderlock") && argc > 2)
        mode_loader_lock(argv[2]);
    else if (!strcmp(mode, "longjmp") && argc > 2)
        mode_longjmp(argv[2]);
    else if (!strcmp(mode, "dlgated") && argc > 5)
        return mode_dlgated(argv[2], argv[3], argv[4], argv[5]);
    else if (!strcmp(mode, "fds"))
        return mode_fds();
    else if (!strcmp(mode, "closeall") && argc > 4)
        return mode_closeall(argv[2], argv[3], argv[4]);
    else if (!strcmp(mode, "countsgate") && argc > 2)
        return mode_counts_gate(argv[2]);
    else if (!strcmp(mode, "gate") && argc > 2)
        return mode_gate(argv[2]);
    else
        return fprintf(stderr, "target: unknown mode %s\n", mode), 2;
    return 0;
}
