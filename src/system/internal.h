/*
 * system/internal.h — what the files of src/system share: the thread's
 * state and its write helper. Not for other parts.
 */
#ifndef LTR_SYSTEM_INTERNAL_H
#define LTR_SYSTEM_INTERNAL_H

#include "system/system.h"

#include <elfutils/libdwfl.h>
#include <ltr/provider.h>

#include <stddef.h>
#include <stdint.h>

/* The provider Ltr.System (sampler.c). */
extern ltr_provider sys_provider;

/* Writes an event (if the session wants it) and counts it. */
void sys_write(ltr_system *s, ltr_event_desc *d, const ltr_value *v, size_t n);
/* Whether the session asked for this part (LTR_SYSKW_*). */
bool sys_wants(const ltr_system *s, uint64_t keyword);
/* The current targets' pids, at most cap; returns how many. */
size_t sys_targets(ltr_system *s, uint32_t *pids, size_t cap);
/* A target is gone: no longer one. */
void sys_drop_target(ltr_system *s, uint32_t pid);

/* Processes, threads and modules (procs.c). procs: the ProcessThread part;
 * loader: the Loader part; targets_only: no process but the targets and
 * their children, even with the connector. NULL when memory runs out. */
typedef struct sys_procs sys_procs;
sys_procs *sys_procs_new(ltr_system *s, bool procs, bool loader, bool targets_only);
/* The process connector's socket to poll, -1 without one (polling /proc). */
int sys_procs_fd(const sys_procs *ps);
/* Reads what the connector has to say. */
void sys_procs_read(sys_procs *ps);
/* Follows the targets: new ones, gone ones, threads and modules by /proc. */
void sys_procs_tick(sys_procs *ps);
/* Writes the state of what it follows now, as rundown events: every
 * process (system-wide with the connector, unless targets_only; else the
 * targets), and each
 * target's threads with their names and its modules; counted in out. */
void sys_procs_capture(sys_procs *ps, ltr_system_capture *out);
/* overruns: connector messages the kernel dropped; connector: whether it was used. */
void sys_procs_free(sys_procs *ps, uint64_t *overruns, bool *connector);

/* CPU samples (cpu.c). NULL when perf_event_open is not permitted (why
 * says so, for one warning) or memory runs out. */
typedef struct sys_cpu sys_cpu;
sys_cpu *sys_cpu_new(ltr_system *s, char *why, size_t why_size);
/* Its per-CPU descriptors to poll (at most cap); returns how many. */
size_t sys_cpu_fds(const sys_cpu *c, int *fds, size_t cap);
/* Unwinds and writes the samples of targets the rings hold. */
void sys_cpu_read(sys_cpu *c);
void sys_cpu_free(sys_cpu *c);
/* How libdw finds a target's module files and their debug files: never by
 * opening what is not a regular file (a target chooses its paths). */
extern const Dwfl_Callbacks sys_proc_dwfl_callbacks;
/* What each module of a Dwfl made by sys_proc_dwfl_report carries as its
 * user data: first the debug path dbg_find_debuginfo reads there (the one
 * the callbacks name), then the pid whose /proc/PID/map_files open a
 * module named "... (deleted)". */
typedef struct sys_mod_data {
    char *debuginfo_path;
    uint32_t pid;
} sys_mod_data;
/* A Dwfl with sys_proc_dwfl_callbacks and pid's modules reported (from
 * /proc/PID/maps), each module's user data mods, which must outlive it.
 * NULL if the process cannot be read. */
Dwfl *sys_proc_dwfl_report(uint32_t pid, sys_mod_data *mods);
/* The module of d that holds pc, with its start in *start; NULL when none
 * does. dwfl_addrmodule alone is not enough on a Dwfl made from
 * /proc/PID/maps: it answers the highest module (ld.so, usually) for every
 * address above it (the stack, a return address of 0 - 1, and, after an
 * exec, every library of the new image mapped above the old ld.so), which
 * named those frames "ld-linux-x86-64.so.2+0x9869df095d" and kept the stale
 * modules from being read again. */
Dwfl_Module *sys_addr_module(Dwfl *d, uint64_t pc, uint64_t *start);
/* pc as an ELF virtual address of its module m (start: sys_addr_module's),
 * what addr2line -e and the heap's frames (module+0xOFFSET) take: pc less
 * the load bias. Not pc - start: a program built without -pie starts at
 * its first segment's address (0x400000), and python3's CPU samples said
 * python3.11+0x165996 where its heap frames said 0x565997 (a return
 * address; a sample names the call, a byte before). When the ELF
 * cannot be read, pc - start (right where the first segment is at 0). */
uint64_t sys_elf_vaddr(Dwfl_Module *m, uint64_t pc, uint64_t start);

#endif
