/*
 * tests/programs/target_cxx.cpp — every form of C++ operator new and delete,
 * each with its own size, for the exact-count test (test_heap.c).
 */
#include <cstdlib>
#include <new>

int main()
{
    const std::align_val_t al{64};
    for (int i = 0; i < 3; i++) {
        ::operator delete(::operator new(1101));                            // 10, 21
        ::operator delete[](::operator new[](1201));                        // 11, 22
        ::operator delete(::operator new(1301, std::nothrow), std::nothrow);       // 12, 29
        ::operator delete[](::operator new[](1401, std::nothrow), std::nothrow);   // 13, 30
        ::operator delete(::operator new(1501, al), al);                    // 14, 25
        ::operator delete[](::operator new[](1601, al), al);                // 15, 26
        ::operator delete(::operator new(1701, al, std::nothrow), al, std::nothrow);     // 16, 31
        ::operator delete[](::operator new[](1801, al, std::nothrow), al, std::nothrow); // 17, 32
        ::operator delete(::operator new(1901), 1901);                      // 10, 23
        ::operator delete[](::operator new[](1911), 1911);                  // 11, 24
        ::operator delete(::operator new(1921, al), 1921, al);              // 14, 27
        ::operator delete[](::operator new[](1931, al), 1931, al);          // 15, 28
    }
    int *x = new int[10];
    delete[] x;
    return 0;
}
