/*
 * tests/fuzz/replay.c — runs saved inputs through a fuzz target without
 * libFuzzer, so the normal and the ASan builds (gcc) check every seed and
 * every regression input on each test run. Arguments are files or
 * directories (every regular file in them, in name order). Each input is
 * named before it runs, so a crash points at its file.
 */
#include "fuzz_input.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 65536;
            uint8_t *nb = realloc(buf, cap);
            if (!nb)
                abort();
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: read error\n", path);
        free(buf);
        return -1;
    }
    fprintf(stderr, "replay %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int no_dots(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

/* Returns the number of inputs run, or -1. */
static long replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return replay_file(path) == 0 ? 1 : -1;
    struct dirent **ents = NULL;
    int n = scandir(path, &ents, no_dots, by_name);
    if (n < 0) {
        perror(path);
        return -1;
    }
    long count = 0;
    for (int i = 0; i < n; i++) {
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, ents[i]->d_name);
        long r = count >= 0 ? replay_path(sub) : 0;
        count = r < 0 ? -1 : count + r;
        free(ents[i]);
    }
    free(ents);
    return count;
}

int main(int argc, char **argv)
{
    long total = 0;
    for (int i = 1; i < argc; i++) {
        long n = replay_path(argv[i]);
        if (n < 0)
            return 1;
        total += n;
    }
    if (total == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    fprintf(stderr, "replay: %ld inputs, all handled\n", total);
    return 0;
}
