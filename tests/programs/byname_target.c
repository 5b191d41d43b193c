/*
 * tests/programs/byname_target.c — a program started by a plain exec (no ltr,
 * no LD_PRELOAD) under the by-name setting: it says whether the heap agent
 * is in it, waits for DIR/go (a session enables its name meanwhile), then
 * makes known allocations, each exactly: 10 malloc of 4321 bytes and 7
 * calloc of 4322 bytes in all, freed again.
 * With UID RUNDIR, as root: first forks two workers that become user UID
 * once DIR/go is there (as a service's workers drop root), then make 5
 * malloc of 4323 bytes (the first, with LTR_RUNTIME_DIR=RUNDIR, where
 * UID's sessions are) or of 4324 (the second, its environment as it was).
 * Usage: byname-target DIR [UID RUNDIR]
 */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

static int has_agent(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4608];
    int yes = 0;
    while (f && fgets(line, sizeof line, f))
        yes |= strstr(line, "/libltr-heap.so") != NULL;
    if (f)
        fclose(f);
    return yes;
}

static void wait_for(const char *go)
{
    /* select, not nanosleep: a nanosleep the injector interrupts resumes as
     * restart_syscall, which i12-inject's injector does not yet count as a
     * safe place to call from (its retries then never find one). */
    for (int i = 0; access(go, F_OK) != 0; i++) {
        if (i > 12000) /* two minutes: the test is gone */
            exit(3);
        struct timeval tick = {0, 10 * 1000};
        select(0, NULL, NULL, NULL, &tick);
    }
}

/* A worker that becomes user uid (and, if rundir, looks for that user's
 * sessions there), then allocates 5 blocks of size. */
static pid_t worker(const char *go, uid_t uid, const char *rundir, size_t size)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    wait_for(go);
    if (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0 ||
        (rundir && setenv("LTR_RUNTIME_DIR", rundir, 1) != 0))
        _exit(4);
    void *volatile keep[5];
    for (int i = 0; i < 5; i++)
        keep[i] = malloc(size);
    for (int i = 0; i < 5; i++)
        free(keep[i]);
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 4)
        return 2;
    /* static: a buffer on main's stack keeps stale words of the loader's
     * start-up, which the injector takes for a loader frame (a false alarm
     * it retries for ever) */
    static char go[4200];
    snprintf(go, sizeof go, "%s/go", argv[1]);
    printf("pid %d agent %d\n", (int)getpid(), has_agent());
    fflush(stdout);
    pid_t workers[2] = {0, 0};
    if (argc == 4) {
        workers[0] = worker(go, (uid_t)atoi(argv[2]), argv[3], 4323);
        workers[1] = worker(go, (uid_t)atoi(argv[2]), NULL, 4324);
    }
    wait_for(go);
    void *volatile keep[17];
    for (int i = 0; i < 10; i++)
        keep[i] = malloc(4321);
    for (int i = 10; i < 17; i++)
        keep[i] = calloc(1, 4322);
    for (int i = 0; i < 17; i++)
        free(keep[i]);
    for (int i = 0; i < 2; i++) {
        int status = 0;
        if (workers[i] > 0 && (waitpid(workers[i], &status, 0) != workers[i] || status != 0))
            printf("worker %d: status %d\n", i, status);
    }
    printf("done\n");
    return 0;
}
