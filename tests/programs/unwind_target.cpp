// tests/programs/unwind_target.cpp — call sites for comparing the agent's fast
// unwinder with libunwind (test_unwind.c runs each mode under
// LTR_HEAP_UNWIND=check, where the agent unwinds every stack both ways).
// Built like a distributed binary: -O2, without frame pointers, so frames
// are found only through the CFI. Modes:
//   c       a C-style chain here and one through libheapchain.so
//   cxx     inlined templates, libstdc++ containers, allocations while an
//           exception propagates (destructors, catch handlers, the throw)
//   deep    recursion deeper than the stack depth (stacks are cut)
//   signal  a handler that allocates (signal frames: the fallback)
//   threads the above on several threads at once
#include <csignal>
#include <cstdlib>
#include <map>
#include <memory>
#include <pthread.h>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" void *chain_outer(int k);

static void *volatile keep;
static volatile int sink;

extern "C" __attribute__((noinline)) void c_inner(int k)
{
    keep = malloc(4100 + (size_t)(k & 1));
    free(keep);
    sink += k;
}

extern "C" __attribute__((noinline)) void c_outer(int k)
{
    char buf[3000]; // a large frame: CFA offset above 2 KiB
    buf[k % sizeof buf] = (char)k;
    c_inner(k + buf[0]);
    sink += buf[k % sizeof buf];
}

static void mode_c()
{
    for (int i = 0; i < 20; i++) {
        c_outer(i);
        free(chain_outer(i));
    }
}

struct guard {
    std::string *s;
    explicit guard(int k) : s(new std::string(200 + (size_t)k, 'g')) {}
    ~guard() { delete s; keep = malloc(4200); free(keep); } // runs during unwinding
};

template <int N> struct level {
    static inline void run(int k)
    {
        std::vector<int> v((size_t)(N * 10 + k));
        sink += v[0];
        level<N - 1>::run(k + 1);
    }
};
template <> struct level<0> {
    static __attribute__((noinline)) void run(int k)
    {
        guard g(k);
        std::map<int, std::string> m;
        m[k] = std::string(300, 'm');
        if (k & 1)
            throw std::runtime_error(std::string(400, 'e')); // __cxa_allocate_exception
        sink += (int)m.size();
    }
};

__attribute__((noinline)) static void cxx_throwing(int k)
{
    level<6>::run(k);
}

static void mode_cxx()
{
    for (int i = 0; i < 20; i++) {
        try {
            cxx_throwing(i);
        } catch (const std::exception &e) {
            std::unique_ptr<char[]> p(new char[4300]); // in a catch handler
            sink += e.what()[0] + p[0] * 0;
        }
    }
}

extern "C" __attribute__((noinline)) void deep(int n)
{
    if (n == 0) {
        keep = malloc(4400);
        free(keep);
    } else {
        deep(n - 1);
    }
    sink += n;
}

static void mode_deep()
{
    for (int i = 0; i < 5; i++)
        deep(100 + i);
}

extern "C" void on_signal(int)
{
    keep = malloc(4500);
    free(keep);
}

static void mode_signal()
{
    std::signal(SIGUSR1, on_signal);
    for (int i = 0; i < 10; i++)
        std::raise(SIGUSR1);
}

static void *worker(void *)
{
    mode_c();
    mode_cxx();
    mode_deep();
    return nullptr;
}

static void mode_threads()
{
    pthread_t th[3];
    for (auto &t : th)
        pthread_create(&t, nullptr, worker, nullptr);
    for (auto &t : th)
        pthread_join(t, nullptr);
}

int main(int argc, char **argv)
{
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "c")
        mode_c();
    else if (mode == "cxx")
        mode_cxx();
    else if (mode == "deep")
        mode_deep();
    else if (mode == "signal")
        mode_signal();
    else if (mode == "threads")
        mode_threads();
    else
        return 2;
    return 0;
}
