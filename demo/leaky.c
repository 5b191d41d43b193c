/*
 * demo/leaky.c — the demo's patient: a small "request server" with four
 * known leaks, each the kind heap analysts meet, next to plenty of memory
 * that is used and freed properly. `scripts/demo.sh` records it with
 * `ltr record` and `ltr analyze` names the leaks, biggest first:
 *
 *   - remember_session():  64 sessions x 1000 bytes, in a worker thread
 *   - grow_history():      a log grown with realloc to 24000 bytes, never freed
 *   - plugin_cache_add():  40 x 256 bytes, in the dlopen'd libleaky-plugin.so
 *   - Cache::insert():     16 x 384 bytes with operator new[], in C++ (cache.cpp)
 *
 * and churns through temporary buffers (parse_request), which the analysis
 * lists as temporary allocations. tests/e2e/test_analyze.c checks these exact figures.
 */
#include <dlfcn.h>
#include <unistd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cache_fill(int n); /* cache.cpp */

#define SESSIONS 64
#define SESSION_BYTES 1000
#define HISTORY_STEP 1000
#define HISTORY_STEPS 24
#define PLUGIN_ENTRIES 40
#define REQUESTS 2000

__attribute__((noinline)) static void *remember_session(int id)
{
    char *s = malloc(SESSION_BYTES); /* leak: nobody ever forgets a session */
    if (s)
        snprintf(s, SESSION_BYTES, "session %d", id);
    return s;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < SESSIONS; i++) {
        volatile void *p = remember_session(i);
        (void)p;
    }
    return NULL;
}

static char *history;

__attribute__((noinline)) static void grow_history(int step)
{
    char *h = realloc(history, (size_t)(step + 1) * HISTORY_STEP); /* leak: the history only grows */
    if (!h)
        return;
    memset(h + (size_t)step * HISTORY_STEP, 'x', HISTORY_STEP);
    history = h;
}

__attribute__((noinline)) static size_t parse_request(int i)
{
    char *buf = malloc(128 + (size_t)(i % 64)); /* temporary: freed right away */
    if (!buf)
        return 0;
    size_t n = (size_t)snprintf(buf, 128, "GET /item/%d", i);
    free(buf);
    return n;
}

__attribute__((noinline)) static void serve_requests(void)
{
    size_t total = 0;
    void *keep[16] = {0};
    for (int i = 0; i < REQUESTS; i++) {
        total += parse_request(i);
        free(keep[i % 16]); /* a reply lives a little, then goes: no leak */
        keep[i % 16] = calloc(1, 512);
    }
    for (int i = 0; i < 16; i++)
        free(keep[i]);
    if (total == 0)
        puts("no requests");
}

static int use_plugin(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/libleaky-plugin.so", dir);
    void *h = dlopen(path, RTLD_NOW);
    void (*add)(int) = h ? (void (*)(int))dlsym(h, "plugin_cache_add") : NULL;
    if (!add) {
        fprintf(stderr, "leaky: cannot load %s: %s\n", path, dlerror());
        return -1;
    }
    for (int i = 0; i < PLUGIN_ENTRIES; i++)
        add(i);
    return 0; /* the plugin stays loaded: its leak stays attributable */
}

static void exe_dir(char *dir, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", dir, cap - 1);
    dir[n > 0 ? n : 0] = 0;
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
}

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    for (int i = 0; i < HISTORY_STEPS; i++)
        grow_history(i);
    serve_requests();
    char dir[4096];
    exe_dir(dir, sizeof dir);
    if (use_plugin(dir) < 0)
        return 1;
    cache_fill(16);
    printf("leaky: served %d requests, %d sessions open\n", REQUESTS, SESSIONS);
    return 0;
}
