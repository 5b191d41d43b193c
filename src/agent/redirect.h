/*
 * agent/redirect.h — how the agent came into the process, and, when it came
 * late (dlopen'ed into a running process by `ltr`'s injector or by the
 * ld.so.preload shim), the redirection of the functions it replaces in every
 * loaded module (redirect.c) and of the program's later lookups of them by
 * dlsym (lookup.c; docs/heap-tracing.md, "Attaching late").
 */
#ifndef LTR_AGENT_REDIRECT_H
#define LTR_AGENT_REDIRECT_H

#include <stdbool.h>

enum agent_arrival {
    AGENT_PRELOADED, /* interposes by symbol: nothing to redirect */
    AGENT_LATE,      /* dlopen'ed: relocation entries are rewritten */
    AGENT_DUPLICATE, /* another copy of the agent is in the process: this one stays inert */
};

/* How this copy arrived; decided once, from the constructor (before that:
 * AGENT_PRELOADED, whose hooks may run before any constructor). */
enum agent_arrival redirect_arrival(void);
/* Decides it. Call from the constructor, before the real functions are resolved. */
enum agent_arrival redirect_decide(void);
/* AGENT_LATE, dlopen'ed by ltr's injector (an attach), not by the by-name shim. */
bool redirect_injected(void);

/* The definition the hook for name calls: the next one after the agent when
 * preloaded, the one the process binds to (dlsym RTLD_DEFAULT) when late. */
void *agent_next_sym(const char *name);

/* AGENT_LATE: points the relocation entries of the replaced functions in
 * every loaded module of the main namespace (but the agent, ld.so, the vDSO)
 * at the agent. From the constructor, last; again after each dlopen. */
void redirect_all(void);

/* AGENT_LATE: the agent's definition of name and the one the process is
 * bound to (which the hook calls), both known; false for a name the agent
 * does not redirect. */
bool redirect_hook_of(const char *name, void **ours, void **real);

/* What the modules of the main namespace tell of a lookup of name made by
 * the code at caller (lookup.c). */
typedef struct redirect_scope {
    bool caller_elsewhere;  /* in a module of another namespace (or one unreadable) */
    bool caller_is_program; /* in the main program */
    bool program_has;       /* the main program has a symbol of that name */
    bool other;             /* some module (the agent aside) has one at another address than
                             * real, or a module's symbols cannot be read */
} redirect_scope;
/* Fills s; false if the loader's list cannot be read now (a fork under way). */
bool redirect_scope_of(const char *name, void *real, const void *caller, redirect_scope *s);

/* lookup.c: the agent's dlsym, and libc's, to which it passes every
 * lookup it does not answer itself. */
void *lookup_dlsym(void *handle, const char *name);
extern void *(*lookup_real_dlsym)(void *, const char *);

#endif
