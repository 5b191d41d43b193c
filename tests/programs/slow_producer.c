/*
 * tests/programs/slow_producer.c — writes a few events of provider Test.Slow
 * from one thread, 1.2 s apart, once a session enables it: the recorder's
 * partial flushes (every second in file mode) then write that thread's buffer
 * in pieces, which tests/e2e/test_partial_flushes.c checks decode with
 * exact timestamps.
 * Usage: slow_producer COUNT
 */
#include <ltr/provider.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

LTR_PROVIDER_DEFINE(slow, "Test.Slow");
static const ltr_field_desc fields[] = {{"i", LTR_TYPE_UVAR}, {"neg", LTR_TYPE_IVAR}, {"at", LTR_TYPE_PVAR}};
LTR_EVENT_DEFINE(tick, slow, 1, LTR_LEVEL_INFO, 0, "Tick", fields);

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 3;
    if (ltr_provider_register(&slow) != 0)
        return 1;
    for (int i = 0; i < 500 && !ltr_event_enabled(&tick); i++)
        usleep(10000);
    for (int i = 0; i < count; i++) {
        if (i)
            usleep(1200000);
        const ltr_value v[] = {{.type = LTR_TYPE_UVAR, .v.u = (uint64_t)i * 1000},
                               {.type = LTR_TYPE_IVAR, .v.i = -i},
                               {.type = LTR_TYPE_PVAR, .v.u = 0x7f0000000000ull + (uint64_t)i}};
        if (ltr_event_write_values(&tick, v, 3, NULL) != 0)
            return 2;
    }
    return 0;
}
