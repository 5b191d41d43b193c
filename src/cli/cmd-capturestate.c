/*
 * cli/cmd-capturestate.c — `ltr capturestate` (WPR's -capturestateondemand):
 * a session's providers write the state they hold now, so that a trace
 * saved later names the processes, threads and modules whose first events
 * a flight recorder has overwritten.
 */
#include "cli/cli.h"
#include "cli/session.h"
#include "recorder/recorder.h"

#include <stdio.h>

static const char usage[] = "ltr capturestate [--instance NAME]";

int cmd_capturestate(int argc, char **argv)
{
    const char *instance = LTR_DEFAULT_SESSION;
    int first;
    int rc = cli_session_args("capturestate", argc, argv, usage,
                              "Has a session's providers write the state they hold now into it, so that a\n"
                              "trace saved later ('ltr save', 'ltr stop') names every process, thread and\n"
                              "module even where the events that said so first were overwritten (memory\n"
                              "mode) long ago:\n\n"
                              "  the system provider (Ltr.System: profiles general, memory...) writes a\n"
                              "  ProcessStart of each process it follows (system-wide as root), and for\n"
                              "  each target a ThreadStart of every thread with its name and a ModuleLoad\n"
                              "  of every module, all with rundown=true, and its memory counters;\n\n"
                              "  every thread of every process writing into the session (heap agents,\n"
                              "  providers) gets a THREAD record with its name now, read from /proc;\n\n"
                              "  the heap agents' modules and stack table, and every provider's event\n"
                              "  layouts and processes, are metadata that the session keeps (no event\n"
                              "  overwrites it; a memory-mode session lets go of a process that ended\n"
                              "  once none of its events is held): every trace it writes holds them\n"
                              "  already, and there is nothing more to write (docs/heap-events.md).\n\n"
                              "  --instance NAME   the session (default: ltr)\n"
                              "\nexit status: 0 the state was written, 1 it was not (no such session, the\n"
                              "system provider did not answer in time), 2 bad usage or a bad session name.\n",
                              &instance, &first, 0, 0);
    if (rc >= 0)
        return rc;
    ltr_capture_result res;
    ltr_error err;
    if (ltr_session_name_check(instance, &err))
        return cli_fail("capturestate", "%s", err.msg), 2;
    if (ltr_client_capture_state(instance, &res, &err))
        return cli_fail("capturestate", "%s", err.msg);
    if (res.system)
        printf("session '%s': the system provider wrote the state of %llu process(es), %llu thread(s) and "
               "%llu module(s)\n", instance, (unsigned long long)res.processes, (unsigned long long)res.threads,
               (unsigned long long)res.modules);
    else
        printf("session '%s' does not record the system provider (Ltr.System): it holds no process, "
               "thread or module events to write again\n", instance);
    printf("session '%s': named %llu thread(s) of the %llu process(es) writing into it; their modules, "
           "stacks and layouts (%llu bytes of metadata read) are kept: every trace it writes holds them\n",
           instance, (unsigned long long)res.named_threads, (unsigned long long)res.producers,
           (unsigned long long)res.metadata_bytes);
    return 0;
}
