/*
 * recorder/boottrace.h — `ltr boottrace` (WPR's -boottrace): a session that
 * starts at every boot, as a systemd unit that runs `ltr start` early, and
 * is ended by `ltr stop FILE` as usual. This part writes and removes the
 * unit and the link that enables it, under a root directory (the machine's
 * "/", or a scratch directory in the tests), and asks a running systemd to
 * enable or disable it. docs/boottrace.md tells what is written and why.
 */
#ifndef LTR_RECORDER_BOOTTRACE_H
#define LTR_RECORDER_BOOTTRACE_H

#include <ltr/common.h>

#include "base/records.h"

#include <stdbool.h>
#include <stddef.h>

#define LTR_BOOT_UNIT "ltr-boottrace.service"
#define LTR_BOOT_UNIT_DIR "etc/systemd/system"     /* under the root */
#define LTR_BOOT_WANTS "sysinit.target.wants"      /* in LTR_BOOT_UNIT_DIR */
/* Where the boot session's control socket is: the runtime directory root
 * uses without a login session of its own (a root login's /run/user/0 comes
 * later and goes at logout). */
#define LTR_BOOT_RUNTIME_DIR "/run/ltr"

/* What the unit runs. */
typedef struct ltr_boottrace {
    const char *ltr;                /* absolute path of the ltr to run at boot */
    const char *agent;              /* the heap agent it loads (LTR_HEAP_AGENT), or NULL */
    const char *instance;           /* the session's name */
    const char *output;             /* absolute, or NULL (memory mode only) */
    bool filemode;
    const char *const *start_args;  /* `ltr start`'s arguments, all of them */
    size_t nargs;
} ltr_boottrace;

/* The unit's text: ExecStart runs `ltr start` with start_args (and
 * LTR_HEAP_AGENT=agent in its environment when agent is given); ExecStop
 * (at shutdown, if the session still runs) `ltr stop OUTPUT`, replacing
 * OUTPUT in memory mode. Returns 0, or -errno with err naming an argument
 * a unit cannot carry (a control character, a lone ';'). */
int ltr_boottrace_unit(const ltr_boottrace *bt, ltr_bytes *out, ltr_error *err);

/* What install and remove did, for the command to say. */
typedef struct ltr_boottrace_done {
    char unit[4200], link[4300];    /* their paths */
    bool replaced;                  /* install: an earlier unit of ours was there */
    bool linked;                    /* install: the wants link was made here */
    bool unit_removed, link_removed, dirs_removed;
    bool found;                     /* remove: anything of ours was there */
} ltr_boottrace_done;

/* Writes the unit under root atomically (a temporary renamed over it,
 * mode 0644, synced), and with link the sysinit.target.wants link to it, as
 * `systemctl enable` makes it (without link, the caller has systemctl do
 * it). Directories it has to make are named in the unit, so that removing
 * takes them away again. Refuses (EEXIST) a unit or link of that name that
 * is not ours: a file without our first line, a symlink. Returns 0 or
 * -errno with err saying why. */
int ltr_boottrace_install(const char *root, const ltr_bytes *unit, bool link, ltr_boottrace_done *done,
                          ltr_error *err);
/* Removes what install wrote: the link if it points to our unit, the unit
 * if it is ours, the directories it made if they are empty; nothing else.
 * Nothing there is not an error (done->found false). */
int ltr_boottrace_remove(const char *root, ltr_boottrace_done *done, ltr_error *err);

/* Whether the unit under root is ours: 1, 0 when there is none, -EEXIST
 * when something else has its name (then systemctl must not be asked to
 * disable it). */
int ltr_boottrace_installed(const char *root);

/* Whether systemd runs this machine (it made /run/systemd/system). */
bool ltr_systemd_running(void);
/* Runs `systemctl ARGS...` (NULL-terminated) and waits; 0, or -errno with
 * err holding what it said. */
int ltr_systemctl(ltr_error *err, const char *arg, ...);

#endif
