// tests/build/headers.cpp — headers.c as C++: the public headers included
// together in a C++ program (the C-only uses of the macros are left out).
#include "headers.c"
