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
/* The shim reads no names file larger than this (16,640 bytes). */
#define LTR_BYNAME_FILE_MAX (LTR_BYNAME_MAX_NAMES * (LTR_BYNAME_NAME_MAX + 1) + 256)

/* Checks NAME: an executable's file name, 1..255 bytes of UTF-8 text that
 * ltr prints as it is (no control character, C1 and bidirectional ones
 * included: ltr_text_shown_as_is), no space, no '/', not "." nor "..", not
 * starting with '#', not "ltr" (its recorder would trace itself).
 * Returns 0 or -EINVAL with err naming what is wrong and the fix. */
int ltr_byname_check(const char *name, ltr_error *err);

/* What is wrong with the n bytes at s as a NAME (the rule above), the
 * first fault found; LTR_BYNAME_OK if nothing. No allocation, no system
 * call: the shim refuses an executable's name with a fault, so that no
 * line the CLI reads as no name matches a process. */
enum {
    LTR_BYNAME_OK,
    LTR_BYNAME_EMPTY,
    LTR_BYNAME_TOO_LONG,
    LTR_BYNAME_BLANK,    /* a space, or a control character of ASCII */
    LTR_BYNAME_NOT_TEXT, /* not UTF-8, or a control character beyond ASCII */
    LTR_BYNAME_PATH,
    LTR_BYNAME_NOT_FILE, /* ".", "..", or '#' first */
    LTR_BYNAME_LTR,
};
int ltr_byname_fault(const char *s, size_t n);

/* The names file, as the shim and ltr both read it (match.c). A line
 * (without its newline) is taken without the blanks around it (spaces,
 * tabs, a carriage return: what an editor leaves); what is left is an
 * entry unless it is empty or starts with '#' (a comment). Only the first
 * LTR_BYNAME_MAX_NAMES entries are read: an entry that is a NAME
 * (ltr_byname_fault) enables it, one that is not matches no process. The
 * file is read only if it is a regular file of root's that no one else can
 * write, of at most LTR_BYNAME_FILE_MAX bytes: otherwise no name is enabled.
 * Returns whether the line is an entry, and the entry in *name, *n. */
bool ltr_byname_entry(const char *line, size_t len, const char **name, size_t *n);

/* A scan of the names file for one executable's name. */
typedef struct ltr_byname_want {
    const char *exe;
    size_t n;
    unsigned entries; /* read so far */
    bool found, over; /* over: found, or nothing more can be */
} ltr_byname_want;
void ltr_byname_want_init(ltr_byname_want *w, const char *exe);
/* A line for the scan (arg: the ltr_byname_want); cut: the start of a
 * line longer than LTR_BYNAME_PIECE. Returns whether the scan is over. */
bool ltr_byname_want_line(const char *line, size_t len, bool cut, void *arg);

/* Does the names file's text (len bytes, not NUL-terminated) enable exe?
 * No allocation, no system call. */
bool ltr_byname_match(const char *text, size_t len, const char *exe);

/* Reads the size bytes of fd (at most) a piece at a time into buf, of
 * LTR_BYNAME_PIECE bytes (the shim's is on the stack of every process:
 * 20.7 KB of it made processes die under `ulimit -s 24`), and calls each for
 * every line, without its newline, until it returns true; a line longer
 * than a piece (no name is) is passed once, its first piece, with cut set.
 * Returns true if each did, false at the end or on a read error. */
#define LTR_BYNAME_PIECE (LTR_BYNAME_NAME_MAX + 1 + 512)
typedef bool ltr_byname_line_fn(const char *line, size_t len, bool cut, void *arg);
bool ltr_byname_lines(int fd, size_t size, char *buf, ltr_byname_line_fn *each, void *arg);

/* The setting as ltr_byname_read finds it: the names it enables, and what
 * else a hand edit may have put in the names file, for the listing to say. */
typedef struct ltr_byname_stray {
    char text[LTR_BYNAME_NAME_MAX + 1]; /* the entry, its first bytes (raw: show it with ltr_shown_text) */
    size_t len;                          /* its length (it may be longer than text) */
    int fault;                           /* why it is no name (ltr_byname_fault) */
} ltr_byname_stray;

typedef struct ltr_byname_list {
    char names[LTR_BYNAME_MAX_NAMES][LTR_BYNAME_NAME_MAX + 1];
    unsigned n;               /* the names of the entries, each once */
    ltr_byname_stray strays[LTR_BYNAME_MAX_NAMES];
    unsigned n_strays;        /* entries that are no name: they match no process */
    unsigned twice;           /* entries that repeat a name */
    bool more;                /* entries after the last one read: they match nothing */
    bool present;             /* there is a names file */
    char inert[160];          /* why no name is enabled though listed (the file too large, not
                               * root's alone), or empty */
} ltr_byname_list;

/* Whether l enables name: listed, and the shim reads the file. */
bool ltr_byname_listed(const ltr_byname_list *l, const char *name);
/* Says what a stray entry is and why it matches no process, in out. */
void ltr_byname_stray_text(const ltr_byname_stray *s, char *out, size_t size);

/* The setting now: its names (none when it is off) and what else the names
 * file holds. 0, or -errno (the file cannot be read: not a regular file). */
int ltr_byname_read(ltr_byname_list *out, ltr_error *err);

/* Adds name to the setting (root only). The first name installs a copy of
 * the shim and of the agent (from shim_src, agent_src) in /etc/ltr and adds
 * the shim's line to /etc/ld.so.preload; enabling again refreshes the copies.
 * The names file is written anew, its names only (what matched nothing goes,
 * and a file the shim did not read is read again). Atomic writes, under a
 * lock of /etc. Returns 0, 1 if the name was already enabled and nothing
 * else changed (the copies refreshed), or -errno with err saying why. was
 * (or NULL) gets the setting as it was, for saying what changed. */
int ltr_byname_enable(const char *name, const char *shim_src, const char *agent_src, ltr_byname_list *was,
                      ltr_error *err);
/* Removes name, writing the names file anew as enable does; when no name is
 * left (lines that match nothing may be), restores /etc/ld.so.preload as it
 * was before (byte for byte, or no file) and removes everything of the
 * setting. Returns 0, or -ENOENT (name not listed: nothing changed) or
 * -errno; was as for enable. */
int ltr_byname_disable(const char *name, ltr_byname_list *was, ltr_error *err);
/* Removes the whole setting, whatever the names file holds (the way out of
 * one ltr cannot read). Returns 1, 0 if there was nothing of it, or -errno. */
int ltr_byname_disable_all(ltr_error *err);

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
