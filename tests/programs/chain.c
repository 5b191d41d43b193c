/*
 * tests/programs/chain.c — libheapchain.so, a known call chain in a shared
 * library built without frame pointers: chain_outer -> chain_middle ->
 * chain_inner -> malloc(CHAIN_SIZE). The stack test checks these frames, in
 * this order. Each call is followed by work so that none is a tail call.
 */
#include <stdlib.h>

#define CHAIN_SIZE 12345

volatile int chain_sink;

__attribute__((noinline)) void *chain_inner(int k)
{
    void *p = malloc(CHAIN_SIZE + (size_t)k * 0);
    chain_sink += k;
    return p;
}

__attribute__((noinline)) void *chain_middle(int k)
{
    void *p = chain_inner(k + 1);
    chain_sink += k;
    return p;
}

__attribute__((noinline)) void *chain_outer(int k)
{
    void *p = chain_middle(k + 1);
    chain_sink += k;
    return p;
}
