// bench/real/compile.cpp — the input of compile.sh: GCC's C++ compiler
// (cc1plus) compiling this file is the workload, a real program with deep
// recursive stacks and millions of allocations.
#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

template <int N> struct Sum {
    static int value() { return Sum<N - 1>::value() + N; }
};
template <> struct Sum<0> {
    static int value() { return 0; }
};

int main()
{
    std::map<std::string, std::vector<int>> m;
    std::regex r("a+b*");
    std::ostringstream os;
    os << Sum<300>::value();
    std::unordered_map<int, std::function<int(int)>> fs;
    for (int i = 0; i < 10; i++)
        fs[i] = [i](int x) { return x + i; };
    std::cout << os.str() << m.size() << fs.size() << std::regex_match("aab", r) << "\n";
}
