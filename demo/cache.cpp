/*
 * demo/cache.cpp — the C++ part of the demo: Cache::insert keeps 384-byte
 * buffers from operator new[] that nothing deletes (16 of them), so the
 * report shows a demangled C++ function.
 */
#include <cstring>
#include <vector>

namespace demo {

class Cache {
public:
    __attribute__((noinline)) void insert(int key)
    {
        char *v = new char[384];
        std::memset(v, key, 384);
        entries_.push_back(v); /* the vector's own buffer is freed; the entries are not */
    }
    ~Cache() { entries_.clear(); }

private:
    std::vector<char *> entries_;
};

} // namespace demo

extern "C" void cache_fill(int n)
{
    demo::Cache c;
    for (int i = 0; i < n; i++)
        c.insert(i);
}
