/*
 * demo/plugin.c — libleaky-plugin.so, loaded by leaky with dlopen: a cache
 * that keeps every entry (40 x 256 bytes leaked), so the analysis has to
 * symbolize a frame in a library that was not there when the program started.
 */
#include <stdlib.h>
#include <string.h>

void plugin_cache_add(int key);

char *plugin_entries[64]; /* kept, never freed: the leak (global, so the compiler keeps it) */

__attribute__((noinline)) void plugin_cache_add(int key)
{
    char *e = malloc(256);
    if (e)
        memset(e, key, 256);
    plugin_entries[key & 63] = e;
}
