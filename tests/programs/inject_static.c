/* tests/programs/inject_static.c — a statically linked program the injector
 * must refuse: it reads stdin to its end and exits 0. */
#include <unistd.h>

int main(void)
{
    char buf[64];
    while (read(0, buf, sizeof buf) > 0)
        ;
    return 0;
}
