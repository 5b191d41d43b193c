/*
 * byname/byname.h — heap tracing by executable name for new processes
 * (`ltr heaptracingconfig NAME enable|disable`, WPR's -heaptracingconfig):
 * a persistent, system-wide setting kept under /etc/ltr, and a tiny shim
 * listed in /etc/ld.so.preload that loads the heap agent, dormant, into the
 * new processes of the configured names only (shim.c). Also what a session
 * needs to find processes by name: the executable name of a pid, and the
 * running pids of a name. docs/heap-tracing.md ("By name") tells the
 * mechanism and its trade-offs.
 */
#ifndef LTR_BYNAME_H
#define LTR_BYNAME_H

#include <ltr/common.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Fixed paths: the shim reads them in every process and takes nothing from
 * the environment. Tests change them by mounting over /etc in a private
 * mount namespace, never by a variable. */
#define LTR_BYNAME_PRELOAD "/etc/ld.so.preload"
#define LTR_BYNAME_DIR "/etc/ltr"
#define LTR_BYNAME_NAMES LTR_BYNAME_DIR "/heaptracing.names"
#define LTR_BYNAME_STATE LTR_BYNAME_DIR "/heaptracing.state"
#define LTR_BYNAME_SHIM LTR_BYNAME_DIR "/libltr-byname.so"
#define LTR_BYNAME_AGENT LTR_BYNAME_DIR "/libltr-heap.so"
#define LTR_BYNAME_SHIM_FILE "libltr-byname.so"

#define LTR_BYNAME_MAX_NAMES 64
#define LTR_BYNAME_NAME_MAX 255
/* The shim reads at most this much of the names file. */
#define LTR_BYNAME_FILE_MAX (LTR_BYNAME_MAX_NAMES * (LTR_BYNAME_NAME_MAX + 1) + 256)

/* Checks NAME: an executable's file name, 1..255 bytes of printable
 * characters, no '/', no space, not "." nor "..", not starting with '#',
 * not "ltr" (its recorder would trace itself).
 * Returns 0 or -EINVAL with err naming what is wrong and the fix. */
int ltr_byname_check(const char *name, ltr_error *err);

/* Does the names file's text (len bytes, not NUL-terminated) list exe? One
 * name a line, '#' lines ignored. No allocation, no system call: the shim
 * calls it in every process. */
bool ltr_byname_match(const char *text, size_t len, const char *exe);

typedef struct ltr_byname_list {
    char names[LTR_BYNAME_MAX_NAMES][LTR_BYNAME_NAME_MAX + 1];
    unsigned n;
} ltr_byname_list;

/* The names configured now (none when the setting is off). 0 or -errno. */
int ltr_byname_read(ltr_byname_list *out, ltr_error *err);

/* Adds name to the setting (root only). The first name installs a copy of
 * the shim and of the agent (from shim_src, agent_src) in /etc/ltr and adds
 * the shim's line to /etc/ld.so.preload; enabling again refreshes the copies.
 * Atomic writes, under a lock of /etc. Returns 0, 1 if the name was already
 * there (the copies refreshed), or -errno with err saying why. */
int ltr_byname_enable(const char *name, const char *shim_src, const char *agent_src, ltr_error *err);
/* Removes name; the last one restores /etc/ld.so.preload as it was before
 * (byte for byte, or no file) and removes everything of the setting.
 * Returns 0, or -ENOENT (name not enabled: nothing changed) or -errno. */
int ltr_byname_disable(const char *name, ltr_error *err);

/* The file name of pid's executable as the kernel knows it (the last part
 * of /proc/PID/exe, symbolic links resolved). 0 or -errno. */
int ltr_exe_name(pid_t pid, char *out, size_t size);
/* The running processes whose executable is name and whose effective user is
 * owner (LTR_ANY_OWNER: any), the first max of them (not this process).
 * Returns how many there are, or -errno. A session takes only processes of
 * its own user (their agent reports to that user's sessions), and another
 * user can name a program of theirs like a service: an attacker review's
 * decoy kept root's `ltr watch --name` on it for good. */
#define LTR_ANY_OWNER ((uid_t)-1)
int ltr_pids_named(const char *name, uid_t owner, uint32_t *pids, unsigned max);
/* When no process of owner runs the executable name but one of another
 * user does (a service under systemd's User=): the sentence naming it, its
 * user and what reaches it, in out, and true; false when there is none.
 * For saying why a --name finds nothing: it found nothing of its own user
 * and said only "no process named NAME runs", while one ran. */
bool ltr_name_run_by_other(const char *name, uid_t owner, char *out, size_t size);
/* A running process of owner (LTR_ANY_OWNER: any) that the kernel calls
 * name (its comm: the name it was started by, a link's for python3 ->
 * python3.11) but whose executable is not name, with that executable's
 * name in exe; 0 if none. For saying why a --name finds nothing, never
 * for choosing a process (a process sets its comm itself). */
uint32_t ltr_pid_called(const char *name, uid_t owner, char *exe, size_t size);
/* Whether the setting set gives the agent to new processes that the kernel
 * calls comm (a name `ltr snapshotconfig --name` takes): a listed name that
 * is comm, or that begins with it where comm is as long as the kernel keeps
 * (15 characters: a longer executable's name is cut), or link_exe, the
 * executable of a running process called comm (python3 -> python3.11; NULL
 * if none). snapshotconfig warned that such processes carry no agent when
 * the setting listed their full executable name. */
bool ltr_byname_reaches_comm(const ltr_byname_list *set, const char *comm, const char *link_exe);
/* The same with the setting as it is now and this user's running processes. */
bool ltr_byname_reaches_comm_now(const char *comm);

#endif
