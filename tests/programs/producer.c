/*
 * tests/programs/producer.c — a test program that writes events through the
 * public provider API, for the session tests: several threads, a count of
 * events each, and what it emitted printed at the end so that tests can check
 * trace + lost = emitted.
 *
 *   producer [--name PROVIDER] [--threads T] [--events N] [--size BYTES]
 *            [--wait-enabled SECONDS] [--level L] [--keywords K]
 *            [--wait-disabled SECONDS] [--random] [--pace-us US]
 *            [--ready-file PATH --go-file PATH] [--stop-file PATH]
 *            [--event-name NAME]
 *
 * With --ready-file, the main thread writes one event once the provider is
 * enabled (the process attaches at its first), then creates that file, and
 * the threads write nothing before --go-file exists: a test may act on the
 * recorder in between (stop it, say), at a known point, whatever the
 * machine's speed.
 *
 * With --stop-file, each thread ends early once PATH exists, after 10 000
 * more events: a test that damages the session while the producer writes
 * makes it write through all the damage and past it, for as long as that
 * takes on this machine, not a count of events sized for a slow one
 * (test_shm_fuzz's fields seeds: 6 million, 1.5 s of CPU each under ASan).
 */
#include <ltr/provider.h>

#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static ltr_provider prov = {.state = &ltr_never_enabled};
static const ltr_field_desc fields[] = {
    {"thread", LTR_TYPE_U32}, {"seq", LTR_TYPE_UVAR}, {"text", LTR_TYPE_STRING}, {"blob", LTR_TYPE_BLOB}};
static ltr_event_desc ev = {.provider = &prov, .id = 7, .name = "Tick", .fields = fields,
                            .field_count = 4};

static long nevents = 1000;
static size_t blob_size = 8;
static int random_blobs; /* incompressible payloads, to fill files */
static long reallocs;
static long pace_us; /* a pause after every 100 events: a steady stream for seconds */
static const char *stop_file;
static _Atomic unsigned long long written, lost, skipped;

/* One event, counted. */
static void emit(unsigned id, long i, const char *blob)
{
    ltr_write_result res;
    const ltr_value v[] = {LTR_U32(id), LTR_UVAR(i), LTR_STR("tick"), LTR_BLOB(blob, blob_size)};
    ltr_event_write_values(&ev, v, 4, &res);
    written += res.sessions_written;
    lost += res.sessions_lost;
    if (!res.sessions_written && !res.sessions_lost)
        skipped++;
}

static void *worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    char *blob = calloc(1, blob_size + 1);
    uint64_t x = 0x9e3779b97f4a7c15ull * (id + 1);
    long end = nevents;
    for (long i = 0; i < end; i++) {
        if (stop_file && end == nevents && i % 1000 == 0 && access(stop_file, F_OK) == 0 && i + 10000 < end)
            end = i + 10000;
        for (size_t k = 0; random_blobs && k < blob_size; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            blob[k] = (char)x;
        }
        emit(id, i, blob);
        if (pace_us && i % 100 == 99)
            usleep((useconds_t)pace_us);
    }
    for (long i = 0; i < reallocs; i++) {
        char *more = realloc(blob, blob_size + 2 + (size_t)i % 64);
        if (more)
            blob = more;
    }
    free(blob);
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Attaches (a process attaches at its first event, which is counted with
 * the others: the main thread's, numbered as a thread past the workers),
 * says so (ready), then waits up to secs for go to exist; 0 when it does. */
static int ready_then_go(const char *ready, const char *go, double secs, unsigned first_id)
{
    char *blob = calloc(1, blob_size + 1);
    emit(first_id, 0, blob);
    free(blob);
    FILE *f = fopen(ready, "w");
    if (!f || fclose(f) != 0) {
        fprintf(stderr, "producer: cannot create %s\n", ready);
        return 1;
    }
    for (double t = 0; t < secs && access(go, F_OK) != 0; t += 0.01)
        sleep_ms(10);
    if (access(go, F_OK) != 0) {
        fprintf(stderr, "producer: %s did not appear in %.0f s\n", go, secs);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"name", required_argument, 0, 'n'},  {"threads", required_argument, 0, 't'},
        {"events", required_argument, 0, 'e'}, {"size", required_argument, 0, 's'},
        {"wait-enabled", required_argument, 0, 'w'}, {"level", required_argument, 0, 'l'},
        {"keywords", required_argument, 0, 'k'}, {"wait-disabled", required_argument, 0, 'd'},
        {"random", no_argument, 0, 'r'}, {"reallocs", required_argument, 0, 'a'},
        {"pace-us", required_argument, 0, 'p'}, {"ready-file", required_argument, 0, 'R'},
        {"go-file", required_argument, 0, 'G'}, {"stop-file", required_argument, 0, 'S'},
        {"event-name", required_argument, 0, 'E'}, {0, 0, 0, 0}};
    const char *name = "Test.Producer", *ready = NULL, *go = NULL;
    int threads = 1, c;
    double wait_enabled = 0, wait_disabled = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'n': name = optarg; break;
        case 't': threads = atoi(optarg); break;
        case 'e': nevents = atol(optarg); break;
        case 's': blob_size = (size_t)atol(optarg); break;
        case 'w': wait_enabled = atof(optarg); break;
        case 'd': wait_disabled = atof(optarg); break;
        case 'l': ev.level = (uint8_t)atoi(optarg); break;
        case 'k': ev.keywords = strtoull(optarg, NULL, 0); break;
        case 'r': random_blobs = 1; break;
        case 'a': reallocs = atol(optarg); break;
        case 'p': pace_us = atol(optarg); break;
        case 'R': ready = optarg; break;
        case 'G': go = optarg; break;
        case 'S': stop_file = optarg; break;
        case 'E': ev.name = optarg; break; /* a name of the program's choosing (test_providers) */
        default: return 2;
        }
    }
    if (!ready != !go) {
        fprintf(stderr, "producer: --ready-file and --go-file go together\n");
        return 2;
    }
    prov.name = name;
    if (ltr_provider_register(&prov) != 0) {
        fprintf(stderr, "producer: cannot register provider %s\n", name);
        return 1;
    }
    for (double t = 0; t < wait_enabled && !ltr_event_enabled(&ev); t += 0.01)
        sleep_ms(10);
    if (wait_enabled && !ltr_event_enabled(&ev)) {
        fprintf(stderr, "producer: provider %s was not enabled in time\n", name);
        return 3;
    }
    pthread_t tids[256];
    if (threads > 256)
        threads = 256;
    if (ready && go && ready_then_go(ready, go, 60, (unsigned)threads) != 0)
        return 4;
    for (int i = 0; i < threads; i++)
        pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)i);
    for (int i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    for (double t = 0; t < wait_disabled && ltr_event_enabled(&ev); t += 0.01)
        sleep_ms(10);
    printf("written=%llu lost=%llu skipped=%llu enabled=%d\n", written, lost, skipped,
           ltr_event_enabled(&ev));
    ltr_provider_unregister(&prov);
    return 0;
}
