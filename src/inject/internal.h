/*
 * inject/internal.h — what the injector knows of its target before touching
 * it (target.c: /proc facts, the mappings of libc and ld.so, symbol addresses
 * read from the ELF files through /proc/PID) and shares with inject.c.
 */
#ifndef LTR_INJECT_INTERNAL_H
#define LTR_INJECT_INTERNAL_H

#include <ltr/common.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* An address range [lo, hi). */
typedef struct inj_range {
    uint64_t lo, hi;
} inj_range;

#define INJ_MAX_RANGES 64
#define INJ_MAX_DANGER 32

/* The target as read from /proc, before any ptrace. */
typedef struct inj_target {
    pid_t pid;
    char state;          /* /proc/PID/stat's */
    uid_t uid, euid;     /* real and effective */
    pid_t tracer;        /* TracerPid */
    uint64_t sig_ignored; /* SigIgn */
    int kthread;          /* Kthread, where the kernel shows it: a kernel thread, no program */
    char name[16];        /* Name: the kernel's, for the messages */
    char exe[4096];
    /* code where a stopped thread may hold a lock the loader or malloc takes:
     * libc, ld.so, libpthread, libdl (executable mappings) */
    inj_range libcode[INJ_MAX_RANGES];
    unsigned nlibcode;
    /* code whose presence in a stack (a return address) means the thread is
     * inside a function that holds such a lock while it calls back: fork
     * (atfork handlers) and the signal trampoline (a handler may have
     * interrupted malloc) */
    inj_range danger[INJ_MAX_DANGER];
    unsigned ndanger;
    /* the signal trampoline alone: what counts for a thread blocked in a
     * waiting system call (stale return addresses of fork, say, are common
     * in the stacks of shells that wait, and such a thread is in none) */
    inj_range restorer[8];
    unsigned nrestorer;
    inj_range ldso;      /* first executable mapping of ld.so (for the PC test) */
    /* ld.so's _rtld_global, where its locks are (empty: not found, no
     * check): a lock another thread holds would make our dlopen wait */
    inj_range rtld_global;
    uint64_t dlopen_addr, dlerror_addr;
    bool dlopen_private; /* __libc_dlopen_mode (glibc < 2.34 without libdl): no dlerror */
    char libc_path[4096];
} inj_target;

/* Reads pid's facts (/proc/PID/status); with full, checks them and reads its
 * maps and libc's symbols too, refusing as ltr_inject_check says. */
int inj_target_read(pid_t pid, inj_target *t, bool full, ltr_error *err);

/* The mapping [lo, hi) of pid that holds addr, with its name; 0 or -errno. */
int inj_mapping_of(pid_t pid, uint64_t addr, inj_range *out, char *name, size_t size);

/* Explains a refused PTRACE_SEIZE (EPERM): Yama, another user, no
 * CAP_SYS_PTRACE, a process that is not dumpable, a tracer already. */
int inj_explain_eperm(const inj_target *t, ltr_error *err);

static inline bool inj_in(const inj_range *r, unsigned n, uint64_t a)
{
    for (unsigned i = 0; i < n; i++)
        if (a >= r[i].lo && a < r[i].hi)
            return true;
    return false;
}

#endif
