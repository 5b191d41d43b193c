/*
 * tests/programs/tree.c — heap-target's "tree" mode: 16 threads (more than the
 * machine's CPUs) each allocate once through every path of a binary tree of
 * 16 levels of distinct functions, so the agent's frame trie gets ~2^17
 * nodes (its prefix table must grow several times while threads race to add
 * the same prefixes). The size of each allocation names its path, so a test
 * can check every frame of every stack (test_heap.c, test_stacks_of_many_threads).
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define TREE_DEPTH 16
#define TREE_THREADS 16
#define TREE_SIZE_BASE 100000u

typedef void *(*tree_fn)(unsigned path);
extern tree_fn tree_fns[TREE_DEPTH][2];
volatile int tree_sink;

/* Level L, variant V: taken when bit L of the path is V. Work after the call
 * keeps it from being a tail call, and the distinct constant keeps GCC from
 * folding the two variants into one function. Exported for dladdr1. */
#define TREE_FN(L, V)                                                                  \
    __attribute__((noinline)) void *tree_##L##_##V(unsigned path)                     \
    {                                                                                  \
        void *p = L + 1 < TREE_DEPTH ? tree_fns[(L + 1) % TREE_DEPTH][(path >> (L + 1)) & 1](path) \
                                     : malloc(TREE_SIZE_BASE + path);                  \
        tree_sink = L * 2 + V;                                                         \
        return p;                                                                      \
    }
#define TREE_LEVEL(L) TREE_FN(L, 0) TREE_FN(L, 1)
TREE_LEVEL(0) TREE_LEVEL(1) TREE_LEVEL(2) TREE_LEVEL(3) TREE_LEVEL(4) TREE_LEVEL(5) TREE_LEVEL(6)
TREE_LEVEL(7) TREE_LEVEL(8) TREE_LEVEL(9) TREE_LEVEL(10) TREE_LEVEL(11) TREE_LEVEL(12) TREE_LEVEL(13) TREE_LEVEL(14) TREE_LEVEL(15)

#define TREE_ROW(L) {tree_##L##_0, tree_##L##_1}
tree_fn tree_fns[TREE_DEPTH][2] = {TREE_ROW(0), TREE_ROW(1), TREE_ROW(2), TREE_ROW(3), TREE_ROW(4),
                                   TREE_ROW(5), TREE_ROW(6), TREE_ROW(7), TREE_ROW(8), TREE_ROW(9),
                                   TREE_ROW(10), TREE_ROW(11), TREE_ROW(12), TREE_ROW(13), TREE_ROW(14), TREE_ROW(15)};

/* Each thread walks all paths, starting at its own offset, so threads both
 * share prefixes and add them at the same time. */
__attribute__((noinline)) void *tree_worker(void *arg)
{
    unsigned start = (unsigned)(long)arg * 2048u, n = 1u << TREE_DEPTH;
    for (unsigned i = 0; i < n; i++) {
        unsigned path = (start + i) % n;
        free(tree_fns[0][path & 1](path));
    }
    return NULL;
}

/* Prints "L V start size" per tree function, then runs the threads. */
void mode_tree(void)
{
    for (int l = 0; l < TREE_DEPTH; l++)
        for (int v = 0; v < 2; v++) {
            Dl_info info;
            const ElfW(Sym) *sym = NULL;
            if (dladdr1((void *)tree_fns[l][v], &info, (void **)&sym, RTLD_DL_SYMENT) && sym)
                printf("%d %d %p %lu\n", l, v, (void *)tree_fns[l][v], (unsigned long)sym->st_size);
        }
    fflush(stdout);
    pthread_t th[TREE_THREADS];
    for (long t = 0; t < TREE_THREADS; t++)
        pthread_create(&th[t], NULL, tree_worker, (void *)t);
    for (int t = 0; t < TREE_THREADS; t++)
        pthread_join(th[t], NULL);
}
