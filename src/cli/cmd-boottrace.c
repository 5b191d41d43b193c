/*
 * cli/cmd-boottrace.c — `ltr boottrace` (WPR's -boottrace): a session that
 * starts at every boot, through a systemd unit (recorder/boottrace.h), and
 * `ltr boottrace --disable`, which takes it away again.
 */
#include "byname/byname.h"
#include "cli/cli.h"
#include "cli/session.h"
#include "prim/prim.h"
#include "profiles/profiles.h"
#include "recorder/boottrace.h"
#include "recorder/heaprun.h"
#include "recorder/recorder.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] = "ltr boottrace PROFILE... (--filemode -o FILE | --memory [-o FILE])\n"
                            "                     [--instance NAME] [--force] [--buffer-size KB]\n"
                            "                     [--buffers N|N%] [--max-file-size MB] [--provider SPEC]...\n"
                            "                     [--name NAME]...\n"
                            "       ltr boottrace --disable";

static void help(void)
{
    printf("usage: %s\n\n"
           "Sets up a session that starts at every boot, early (before sysinit.target,\n"
           "once the local filesystems are mounted), with the profiles and options given,\n"
           "as 'ltr start' takes them. It writes the systemd unit\n"
           "/etc/systemd/system/" LTR_BOOT_UNIT " (running 'ltr start') and enables\n"
           "it: with 'systemctl enable' when systemd runs this machine; when it does not\n"
           "(a container), by making the link systemctl would make,\n"
           "/etc/systemd/system/" LTR_BOOT_WANTS "/" LTR_BOOT_UNIT ",\n"
           "and saying so. Nothing starts now: the next boot starts the session.\n"
           "Needs root. This ltr, its heap agent and a profile's .wprp file must be\n"
           "root's alone (only root can change them, nor the directories on their way):\n"
           "root runs and reads them at every boot.\n\n"
           "The trace is written as usual: 'sudo ltr stop FILE' ends the boot's session\n"
           "(its control socket is in " LTR_BOOT_RUNTIME_DIR ", where root's commands look without a\n"
           "login session of root's own; with one, 'sudo LTR_RUNTIME_DIR=" LTR_BOOT_RUNTIME_DIR " ltr stop\n"
           "FILE'). The services that start after it are heap-traced by name: their\n"
           "names given with --name, and 'ltr heaptracingconfig NAME enable' for each\n"
           "(the agent is then in every new process of that name).\n\n"
           "  --filemode         write the trace as it goes, into FILE (-o, required);\n"
           "                     'ltr stop FILE' ends it there\n"
           "  --memory           a flight recorder: 'ltr stop FILE' or 'ltr save FILE'\n"
           "                     writes what it holds\n"
           "  -o, --output FILE  file mode: where the trace grows from boot on; memory\n"
           "                     mode: where the trace is written at shutdown, replacing\n"
           "                     that of an earlier boot, if the session still runs then.\n"
           "                     In file mode a session still running at shutdown is\n"
           "                     stopped into FILE too\n"
           "  --force            file mode: each boot replaces the FILE of the one before\n"
           "                     (without it, a boot that finds FILE records nothing and\n"
           "                     'systemctl status " LTR_BOOT_UNIT "' says why)\n"
           "  --instance NAME    the session's name (default: ltr)\n"
           "  --buffer-size KB, --buffers N|N%%, --max-file-size MB, --provider SPEC,\n"
           "  --name NAME        as for 'ltr start'\n"
           "  --disable          remove the unit and its link (and the directories it\n"
           "                     made, if empty): nothing else. A session started at this\n"
           "                     boot goes on until 'ltr stop' or 'ltr cancel'\n\n"
           "exit status: 0 set up (or removed, or nothing to remove), 1 not done (not\n"
           "root, a profile with errors, a unit or link of that name that ltr did not\n"
           "write, a file that could not be written, systemctl failed), 2 bad usage.\n",
           usage);
}

typedef struct boot_opts {
    const char *output, *instance;
    bool filemode, memory, force, disable;
    const char *args[64]; /* for `ltr start` */
    size_t nargs;
    char *profile_files[32]; /* a profile of a .wprp file: "REALPATH!Name" (malloc'd), else NULL */
} boot_opts;

static int add(boot_opts *o, const char *a, const char *b)
{
    if (o->nargs + 2 > sizeof o->args / sizeof o->args[0])
        return cli_fail("boottrace", "too many options"), 2;
    o->args[o->nargs++] = a;
    if (b)
        o->args[o->nargs++] = b;
    return -1;
}

/* Checks one option as `ltr start` will at boot, and keeps it for it. */
static int take(int c, boot_opts *o)
{
    uint64_t v;
    ltr_error err;
    switch (c) {
    case 'f': o->filemode = true; return -1;
    case 'm': o->memory = true; return -1;
    case 'o': o->output = optarg; return -1;
    case 'F': o->force = true; return -1;
    case 'D': o->disable = true; return -1;
    case 'n':
        if (ltr_session_name_check(optarg, &err))
            return cli_fail("boottrace", "%s", err.msg), 2;
        o->instance = optarg;
        return -1;
    case 's':
        if (cli_parse_u64("boottrace", "--buffer-size (KB)", optarg, LTR_BUFFER_KB_MIN, LTR_BUFFER_KB_MAX, &v))
            return 2;
        return add(o, "--buffer-size", optarg);
    case 'b': {
        uint32_t n;
        if (cli_parse_buffers("boottrace", optarg, LTR_BUFFER_KB_DEFAULT, &n))
            return 2;
        return add(o, "--buffers", optarg);
    }
    case 'M':
        if (cli_parse_u64("boottrace", "--max-file-size (MB)", optarg, 1, UINT64_MAX >> 20, &v))
            return 2;
        return add(o, "--max-file-size", optarg);
    case 'p': {
        ltr_provider_spec spec;
        if (ltr_provider_spec_parse(optarg, &spec, &err))
            return cli_fail("boottrace", "%s", err.msg), 2;
        return add(o, "--provider", optarg);
    }
    case 'N':
        if (ltr_byname_check(optarg, &err))
            return cli_fail("boottrace", "--name: %s", err.msg), 2;
        return add(o, "--name", optarg);
    case 'P': /* ltr start's option, which a user may bring here: said why not, not "unrecognized" */
        return cli_fail("boottrace", "--pid has no meaning at boot: no process of the next boot runs yet; "
                                     "--name NAME heap-traces the processes of a name"), 2;
    case 'h': help(); return 0;
    default: return cli_usage_error("boottrace", usage);
    }
}

/* The profiles resolve here as they will at boot: errors now, not then. */
static int check_profiles(char **specs, int n, bool filemode)
{
    ltr_profile_request req = {.specs = (const char *const *)specs, .nspecs = (size_t)n, .filemode = filemode};
    ltr_plan *plan = NULL;
    int rc = ltr_profiles_resolve(&req, &plan);
    if (!plan)
        return cli_fail("boottrace", "out of memory reading the profiles");
    for (size_t i = 0; rc && i < plan->diags.n; i++) {
        char line[2048];
        ltr_diag_format(&plan->diags.v[i], line, sizeof line);
        cli_say("boottrace", "%s", line); /* names from a .wprp file: shown without control characters */
    }
    ltr_plan_free(plan);
    return rc ? cli_fail("boottrace", "the profiles have errors: nothing was set up") : 0;
}

/* `ltr start -o` at boot would fail in a directory that is not there. */
static int output_dir_missing(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    *(slash == dir ? slash + 1 : slash) = 0;
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    return cli_fail("boottrace", "the directory of %s is not there: the session could not write its trace "
                    "at boot; make it first", path);
}

/* The unit runs this ltr as root at every boot: a binary that another user
 * could replace (theirs, in a directory of theirs, or where others may
 * write) would run their code as root from the next boot on, for good (a
 * user's build tree, run once with sudo). So the file and every directory
 * on its way must be root's alone, by the rule `ltr heaptracingconfig`
 * applies to what it copies (prim's ltr_open_roots_alone). agent: path is
 * the heap agent, which the unit's session loads into the services. */
static int roots_alone(const char *path, bool agent)
{
    ltr_error err;
    int fd = ltr_open_roots_alone(path, &err);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    return cli_fail("boottrace", "the unit would %s %s %s at every boot, and whoever can change it with it: %s "
                    "(or run an ltr installed as root where only root can write, e.g. cmake --install BUILD "
                    "--prefix /opt/ltr)", agent ? "load" : "run", path,
                    agent ? "into the services it traces, root's among them," : "as root", err.msg);
}

/* A profile of a .wprp file is read by root at every boot too, and what it
 * says is the boot session's: its buffers (up to all of the memory, in a
 * flight recorder that fills them), the services it heap-traces. So the
 * file must be root's alone, as the binary is; and it is named in the unit
 * by its real path, since the unit runs in "/" (a relative name given here
 * was looked for there at boot). *file: "REAL!Name", or NULL for a
 * built-in profile. 0, or 1 said. */
static int profile_file(const char *spec, char **file)
{
    const char *bang = strrchr(spec, '!');
    *file = NULL;
    if (!bang)
        return 0;
    char given[PATH_MAX], real[PATH_MAX];
    snprintf(given, sizeof given, "%.*s", (int)(bang - spec), spec);
    if (!realpath(given, real))
        return cli_fail("boottrace", "%s: %s", given, strerror(errno));
    ltr_error err;
    int fd = ltr_open_roots_alone(real, &err);
    if (fd < 0)
        return cli_fail("boottrace", "the unit would read the profile %s as root at every boot, and whoever can "
                        "change it would choose what the boot session records and the memory it takes: %s "
                        "(copy it where only root can write, under /etc say)", real, err.msg);
    close(fd);
    if (asprintf(file, "%s%s", real, bang) < 0) {
        *file = NULL;
        return cli_fail("boottrace", "out of memory");
    }
    return 0;
}

static int need_root(void)
{
    if (geteuid() == 0)
        return 0;
    return cli_fail("boottrace", "needs root: it writes /%s/%s and enables it for every boot "
                    "(run it with sudo)", LTR_BOOT_UNIT_DIR, LTR_BOOT_UNIT);
}

static int disable(void)
{
    if (need_root())
        return 1;
    ltr_error err;
    ltr_boottrace_done done;
    bool sd = ltr_systemd_running();
    if (sd && ltr_boottrace_installed("/") == 1 && ltr_systemctl(&err, "disable", LTR_BOOT_UNIT, NULL) != 0)
        return cli_fail("boottrace", "%s", err.msg);
    int rc = ltr_boottrace_remove("/", &done, &err);
    if (done.link_removed)
        printf("removed %s\n", done.link);
    if (done.unit_removed)
        printf("removed %s\n", done.unit);
    if (rc)
        return cli_fail("boottrace", "%s", err.msg);
    if (sd && done.found && ltr_systemctl(&err, "daemon-reload", NULL, NULL) != 0)
        cli_warn("boottrace", "%s", err.msg);
    if (!done.found)
        printf("no boot trace was set up: nothing to remove\n");
    else
        printf("the boot trace is disabled: no session starts at the next boot\n");
    return 0;
}

/* The services a boot trace is for start after it: with the by-name
 * setting off for a --name, they start without the agent, and the session
 * records nothing of them (as 'ltr start' says of it). */
static void warn_names_off(const boot_opts *o)
{
    for (size_t i = 0; i + 1 < o->nargs; i++) {
        static ltr_heap_name_reach found;
        if (strcmp(o->args[i], "--name") || ltr_heap_name_reach_of(o->args[i + 1], &found) || found.configured)
            continue;
        cli_warn("boottrace", "--name %s: new processes of this name do not start with the heap agent, so the "
                 "boot session records none of them: 'ltr heaptracingconfig %s enable' (as root) makes them",
                 o->args[i + 1], o->args[i + 1]);
    }
}

static int enable(boot_opts *o, char **profiles, int nprofiles)
{
    if (need_root() || check_profiles(profiles, nprofiles, o->filemode))
        return 1;
    char out[4096], self[4096];
    ltr_error err;
    if (o->output && cli_absolute_path("boottrace", o->output, out, sizeof out))
        return 2;
    if (o->output && output_dir_missing(out))
        return 1;
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return cli_fail("boottrace", "cannot tell where this ltr is (/proc/self/exe)");
    self[n] = 0;
    /* and the heap agent it will load into the services at boot: the one
     * beside it, by the path checked, which the unit names (LTR_HEAP_AGENT):
     * the name beside it may lead through a symlink in a directory others
     * can write, which the check, made on where it leads, does not see;
     * both said at once, so that one round of fixes does for both */
    char agent[4096], real[PATH_MAX];
    ltr_error ignored;
    unsetenv("LTR_HEAP_AGENT");
    int refused = roots_alone(self, false);
    bool found = ltr_heap_agent_path(agent, sizeof agent, &ignored) == 0;
    bool have_agent = found && realpath(agent, real);
    if (have_agent)
        refused |= roots_alone(real, true);
    else /* a unit naming none would have the session look beside ltr at boot, by a name not checked: a
          * lib that leads, through a symlink, where another user may put an agent of theirs later */
        refused |= cli_fail("boottrace", "the heap agent beside this ltr cannot be checked (%s%s%s): the session "
                            "at boot would load whatever is there by then into the services it traces (install "
                            "ltr whole, e.g. cmake --install BUILD --prefix /opt/ltr)",
                            found ? agent : ignored.msg, found ? ": " : "", found ? strerror(errno) : "");
    for (int i = 0; i < nprofiles; i++)
        refused |= profile_file(profiles[i], &o->profile_files[i]);
    if (refused)
        return 1;
    const char *start[1 + 32 + 6 + sizeof o->args / sizeof o->args[0]]; /* start, profiles, options */
    size_t k = 0;
    start[k++] = "start";
    for (int i = 0; i < nprofiles; i++)
        start[k++] = o->profile_files[i] ? o->profile_files[i] : profiles[i];
    start[k++] = "--instance";
    start[k++] = o->instance;
    if (o->filemode) {
        start[k++] = "--filemode";
        start[k++] = "-o";
        start[k++] = out;
        if (o->force)
            start[k++] = "--force";
    }
    for (size_t i = 0; i < o->nargs; i++)
        start[k++] = o->args[i];
    ltr_boottrace bt = {.ltr = self, .agent = have_agent ? real : NULL, .instance = o->instance, .output = o->output ? out : NULL,
                        .filemode = o->filemode, .start_args = start, .nargs = k};
    ltr_bytes unit = {0};
    int rc = ltr_boottrace_unit(&bt, &unit, &err);
    bool sd = ltr_systemd_running();
    ltr_boottrace_done done;
    if (!rc)
        rc = ltr_boottrace_install("/", &unit, !sd, &done, &err);
    ltr_bytes_free(&unit);
    if (!rc && sd)
        rc = ltr_systemctl(&err, "daemon-reload", NULL, NULL) || ltr_systemctl(&err, "enable", LTR_BOOT_UNIT, NULL);
    if (rc)
        return cli_fail("boottrace", "%s", err.msg);
    printf("%s %s\n", done.replaced ? "replaced" : "wrote", done.unit);
    if (sd)
        printf("enabled it with 'systemctl enable'\n");
    else
        printf("systemd does not run this machine now (a container?): enabled it by hand with the link %s, "
               "which systemd follows at boot\n", done.link);
    printf("at each boot, session '%s' starts (%s); 'sudo ltr stop FILE' ends it and writes its trace; "
           "'ltr boottrace --disable' removes the boot trace\n",
           o->instance, o->filemode ? "file mode" : "memory mode");
    warn_names_off(o);
    return 0;
}

int cmd_boottrace(int argc, char **argv)
{
    static const struct option opts[] = {
        {"filemode", no_argument, 0, 'f'},  {"memory", no_argument, 0, 'm'},
        {"output", required_argument, 0, 'o'}, {"force", no_argument, 0, 'F'},
        {"instance", required_argument, 0, 'n'}, {"buffer-size", required_argument, 0, 's'},
        {"buffers", required_argument, 0, 'b'}, {"max-file-size", required_argument, 0, 'M'},
        {"provider", required_argument, 0, 'p'}, {"disable", no_argument, 0, 'D'},
        {"name", required_argument, 0, 'N'},     {"pid", required_argument, 0, 'P'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    boot_opts o = {.instance = LTR_DEFAULT_SESSION};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        int rc = take(c, &o);
        if (rc >= 0)
            return rc;
    }
    int nprofiles = argc - optind;
    if (o.disable) {
        if (nprofiles || o.filemode || o.memory || o.output || o.force || o.nargs ||
            strcmp(o.instance, LTR_DEFAULT_SESSION))
            return cli_fail("boottrace", "--disable takes nothing else"), cli_usage_error("boottrace", usage);
        return disable();
    }
    if (nprofiles > 32)
        return cli_fail("boottrace", "at most 32 profiles"), 2;
    if (o.filemode == o.memory)
        return cli_fail("boottrace", "say --filemode or --memory"), cli_usage_error("boottrace", usage);
    if (!nprofiles)
        return cli_fail("boottrace", "name at least one PROFILE ('ltr profiles' lists them)"),
               cli_usage_error("boottrace", usage);
    if (o.filemode && !o.output)
        return cli_fail("boottrace", "--filemode needs -o FILE: where the trace grows from boot on"),
               cli_usage_error("boottrace", usage);
    if (o.force && !o.filemode)
        return cli_fail("boottrace", "--force is for --filemode"), cli_usage_error("boottrace", usage);
    int rc = enable(&o, argv + optind, nprofiles);
    for (int i = 0; i < nprofiles; i++)
        free(o.profile_files[i]);
    return rc;
}
