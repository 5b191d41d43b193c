/*
 * tests/programs/byname_target.c — a program started by a plain exec (no ltr,
 * no LD_PRELOAD) under the by-name setting: it says whether the heap agent
 * is in it, waits for DIR/go (a session enables its name meanwhile), then
 * makes known allocations, each exactly: 10 malloc of 4321 bytes and 7
 * calloc of 4322 bytes in all, freed again.
 * Usage: byname-target DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
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

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    /* static: a buffer on main's stack keeps stale words of the loader's
     * start-up, which the injector takes for a loader frame (a false alarm
     * it retries for ever) */
    static char go[4200];
    snprintf(go, sizeof go, "%s/go", argv[1]);
    printf("pid %d agent %d\n", (int)getpid(), has_agent());
    fflush(stdout);
    /* select, not nanosleep: a nanosleep the injector interrupts resumes as
     * restart_syscall, which i12-inject's injector does not yet count as a
     * safe place to call from (its retries then never find one). */
    for (int i = 0; access(go, F_OK) != 0; i++) {
        if (i > 12000) /* two minutes: the test is gone */
            return 3;
        struct timeval tick = {0, 10 * 1000};
        select(0, NULL, NULL, NULL, &tick);
    }
    void *volatile keep[17];
    for (int i = 0; i < 10; i++)
        keep[i] = malloc(4321);
    for (int i = 10; i < 17; i++)
        keep[i] = calloc(1, 4322);
    for (int i = 0; i < 17; i++)
        free(keep[i]);
    printf("done\n");
    return 0;
}
