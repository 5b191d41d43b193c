/*
 * cli/cmd-status.c — `ltr status`: each running session's mode, age,
 * buffers, and events recorded and lost per collector.
 */
#include "cli/cli.h"
#include "cli/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] = "ltr status [--instance NAME]";

static void print_session(const ltr_kvlist *kv)
{
    char name[64], mode[16], text[4200], key[64];
    ltr_kvlist_get(kv, "name", name, sizeof name);
    ltr_kvlist_get(kv, "mode", mode, sizeof mode);
    printf("session '%s': %s mode, running %.1f s, recorder pid %llu, %llu processes attached\n",
           name, mode, (double)cli_kv_u64(kv, "uptime_ns") / 1e9, cli_kv_u64(kv, "pid"), cli_kv_u64(kv, "processes"));
    if (ltr_kvlist_get(kv, "profiles", text, sizeof text) && text[0])
        printf("  profiles: %s\n", text);
    if (!strcmp(mode, "file") && ltr_kvlist_get(kv, "output", text, sizeof text)) {
        printf("  trace: %s, %.1f MB", text, (double)cli_kv_u64(kv, "file_size") / 1048576.0);
        if (cli_kv_u64(kv, "max_file_size"))
            printf(" of at most %.1f MB", (double)cli_kv_u64(kv, "max_file_size") / 1048576.0);
        printf("\n");
    }
    printf("  %-12s %8s %10s %8s %16s %12s %12s\n", "collector", "buffers", "size", "free",
           "events recorded", "events lost", "overwritten");
    for (unsigned long long c = 0; c < cli_kv_u64(kv, "collectors"); c++) {
        char cname[64];
#define COL(field) (snprintf(key, sizeof key, "collector.%llu." field, c), cli_kv_u64(kv, key))
        snprintf(key, sizeof key, "collector.%llu.name", c);
        ltr_kvlist_get(kv, key, cname, sizeof cname);
        printf("  %-12s %8llu %7llu KB %8llu %16llu %12llu %12llu\n", cname, COL("buffers"),
               COL("buffer_size") / 1024, COL("buffers_free"), COL("events_recorded"),
               COL("events_lost"), COL("events_overwritten"));
#undef COL
    }
}

static int status_of(const char *session)
{
    ltr_kvlist kv;
    int rc = cli_session_request("status", session, "status", NULL, NULL, &kv);
    if (!rc)
        print_session(&kv);
    ltr_kvlist_free(&kv);
    return rc;
}

int cmd_status(int argc, char **argv)
{
    const char *instance = NULL;
    int first;
    int rc = cli_session_args("status", argc, argv, usage,
                              "Shows every running session (or one): its mode, how long it has run, its\n"
                              "buffers, and the events recorded, lost and overwritten per collector.\n"
                              "\nexit status: 0 done (also when no session is running), 1 a session\n"
                              "could not be asked, 2 bad usage.\n",
                              &instance, &first, 0, 0);
    if (rc >= 0)
        return rc;
    if (instance)
        return status_of(instance);
    char names[64][64];
    ltr_error err;
    int n = ltr_client_sessions(names, 64, &err);
    if (n < 0)
        return cli_fail("status", "%s", err.msg);
    if (n == 0)
        printf("no session is running\n");
    rc = 0;
    for (int i = 0; i < n; i++)
        rc |= status_of(names[i]);
    return rc;
}
