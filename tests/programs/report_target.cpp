/*
 * tests/programs/report_target.cpp — a C++ service for the text report's
 * rules (tests/e2e/test_report_text.c): at its start it allocates one table
 * of 3.3 MiB at once (load_table), then a thread named "grower" leaks 16 KiB
 * every 10 ms through std::vector into a std::map for 200 rounds (3.1 MiB:
 * grow_cache, a steady leak), through allocator frames that C++ inlines and
 * a template whose name is long (Deep<...>::make). Prints "done" and exits.
 * Built -O2 without frame pointers, like a distributed binary.
 * With "gap" (tests/e2e/test_report.c, the timeline's steps): 1 MiB, idle
 * 600 ms, 8 MiB, 700 ms more, and exits holding both (the window then ends
 * past the grid's 64 cells, which cover the heap events).
 */
#include <map>
#include <pthread.h>
#include <string>
#include <time.h>
#include <utility>
#include <vector>

static auto *cache = new std::map<int, std::vector<char>>; /* never destroyed: a leak */
static char *table;

template <typename K, typename V, int N> struct Deep {
    __attribute__((noinline)) static void make(std::map<K, V> &m, int k)
    {
        m[k] = V(16384, static_cast<char>(N)); /* allocates through std::allocator */
    }
};

__attribute__((noinline)) static void grow_cache(int k)
{
    Deep<int, std::vector<char>, 3>::make(*cache, k);
}

__attribute__((noinline)) static void load_table()
{
    table = new char[3300 * 1024];
    for (int i = 0; i < 3300 * 1024; i += 4096)
        table[i] = 1;
}

static void *grower(void *)
{
    for (int k = 0; k < 200; k++) {
        grow_cache(k);
        struct timespec ts = {0, 10000000}; /* 2 s in all: the leak spreads over most of any window */
        nanosleep(&ts, nullptr);
    }
    return nullptr;
}

static char *volatile held[2]; /* volatile: the compiler keeps both allocations */

static int gap()
{
    struct timespec idle = {0, 600000000}, tail = {0, 700000000};
    held[0] = new char[1 << 20];
    nanosleep(&idle, nullptr);
    held[1] = new char[8 << 20];
    nanosleep(&tail, nullptr);
    return held[0] && held[1] ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && std::string(argv[1]) == "gap")
        return gap();
    load_table();
    pthread_t t;
    pthread_create(&t, nullptr, grower, nullptr);
    pthread_setname_np(t, "grower");
    pthread_join(t, nullptr);
    std::string done("done");
    __builtin_printf("%s %zu\n", done.c_str(), cache->size());
    return table[0] == 1 ? 0 : 1;
}
