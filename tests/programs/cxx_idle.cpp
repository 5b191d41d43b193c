/*
 * tests/programs/cxx_idle.cpp — a C++ program that allocates nothing itself:
 * its only allocation is libstdc++'s exception pool, made by that library's
 * constructor before the heap agent's own runs, so the agent never sees it.
 * ltr record's "no heap events" warning must not say it never called malloc
 * (test_heap.c).
 */
int main()
{
    return 0;
}
