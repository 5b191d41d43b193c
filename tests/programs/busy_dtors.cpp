/*
 * tests/programs/busy_dtors.cpp — CPU time in two functions whose names read
 * the same once demangled: Foo's destructor spins M million times (default
 * 300, about 0.3 s of CPU) once called as the complete object destructor
 * (_ZN3FooD1Ev, an explicit p->~Foo()) and once as the deleting one
 * (_ZN3FooD0Ev, delete p, with D1 inlined), both from main, after "ready"
 * on stdout and a byte on stdin: two stacks of the samples, one folded line
 * (tests/e2e/test_system_cli.c).
 */
#include <cstdio>
#include <cstdlib>
#include <new>
#include <unistd.h>

static long spins = 300000000;

struct Foo {
    virtual ~Foo();
};

volatile long sink;

/* A loop and nothing else, so small that the compiler copies it into D0
 * (which then calls no D1 of its own: the two stacks end alike). */
Foo::~Foo()
{
    for (long i = 0; i < spins; i++)
        sink = sink + i;
}

int main(int argc, char **argv)
{
    spins = (argc > 1 ? atol(argv[1]) : 300) * 1000000L;
    printf("ready\n");
    fflush(stdout);
    char c;
    if (read(0, &c, 1) < 0)
        return 1;
    Foo *volatile p = new Foo; /* volatile: the calls stay virtual, not inlined into main */
    p->~Foo();
    ::operator delete(p);
    p = new Foo;
    delete p;
    return 0;
}
