/*
 * tests/programs/state_target.c — the heap program `ltr capturestate` is
 * tested on (tests/e2e/test_capturestate.c): a stack first used long before
 * the end of a flight recording. Run as `state_target DIR N`: it allocates a
 * block in keep_site (its stack's nodes go into the session's metadata
 * then), then N blocks of 48 bytes in churn_site, each freed at once (the
 * events that overwrite a small ring many times over), then a second block
 * in keep_site from the same call, whose event reuses the stack of the
 * first: no new stack record comes with it; renames its thread
 * "renamed-main" with prctl (which the agent does not see); writes DIR/done
 * and waits for DIR/exit. Files are made with open/close, never stdio.
 */
#include <fcntl.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *volatile keep[2];
static void *volatile sink;
static volatile int rounds = 2; /* not unrolled into two call sites */

__attribute__((noinline)) void keep_site(int i) { keep[i] = malloc(7777); }
__attribute__((noinline)) void churn_site(void)
{
    sink = malloc(48);
    free(sink);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    char path[4096];
    long n = atol(argv[2]);
    for (int round = 0; round < rounds; round++) { /* one call site: the same stack twice */
        keep_site(round);
        for (long i = 0; round == 0 && i < n; i++)
            churn_site();
    }
    prctl(PR_SET_NAME, "renamed-main"); /* not through pthread_setname_np: the agent does not see it */
    snprintf(path, sizeof path, "%s/done", argv[1]);
    close(open(path, O_CREAT | O_WRONLY, 0600));
    snprintf(path, sizeof path, "%s/exit", argv[1]);
    struct timespec nap = {0, 5 * 1000 * 1000};
    while (access(path, F_OK) != 0)
        nanosleep(&nap, NULL);
    return 0;
}
