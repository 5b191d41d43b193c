/*
 * agent/lookup.c — dlsym of a program the agent came into late (redirect.c
 * points the modules' slots of it here): a lookup made after the attach
 * gets the agent's hook where a preloaded agent's would have, so that
 * malloc called through such a pointer (Python's ctypes,
 * ctypes.CDLL(None).malloc) is traced.
 *
 * Preloaded, the agent comes right after the program in the global scope
 * (ltr record puts it first in LD_PRELOAD). glibc's dlsym searches:
 *   - RTLD_DEFAULT: the caller's scopes, the global one first (a library
 *     dlopen'ed with RTLD_DEEPBIND: its own dependencies first);
 *   - the handle of dlopen(NULL) (the main program's link map): the global
 *     scope, whoever calls;
 *   - any other handle: that module and its dependencies only, never the
 *     global scope: so libc's handle finds libc's malloc, preloaded too;
 *   - RTLD_NEXT: the modules after the caller's; after the program's, that
 *     is the preloaded agent.
 * dlvsym never finds a hook, preloaded either: it wants the version asked
 * for, and the agent's definitions have none. It is left alone.
 *
 * So a lookup is answered with the hook when it would return the definition
 * the process is bound to (the one the hook calls: the same allocator, so a
 * block from either path may go to the other's free) and it is one of
 * these: the program's handle; RTLD_DEFAULT when no module of the main
 * namespace defines the name otherwise (then any scope finds that one, a
 * RTLD_DEEPBIND library's too: the agent cannot see from outside which
 * library was loaded so); RTLD_NEXT from the main program when it has no
 * symbol of that name. The caller must be in the main namespace (another
 * has its own libc), or in no module (glibc takes the main program's scope).
 *
 * Every other lookup goes to libc's dlsym as it was made: the stub jumps
 * there with the caller's return address still on top of the stack, since
 * glibc takes RTLD_DEFAULT's and RTLD_NEXT's scope, and a new dependency,
 * from the module the return address is in. A wrapper calling it would look
 * up from the agent's scope instead: a symbol of a RTLD_LOCAL library's own
 * dependency not found, RTLD_NEXT from the agent's place.
 */
#include "agent/agent.h"
#include "agent/redirect.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>

void *(*lookup_real_dlsym)(void *, const char *);

/* The hook, in *out, when the lookup would find what the process is bound
 * to where a preloaded agent's would find the hook; false: libc's dlsym is
 * to make it. */
bool lookup_answer(void *handle, const char *name, const void *caller, void **out);

bool lookup_answer(void *handle, const char *name, const void *caller, void **out)
{
    void *ours, *real, *program = _r_debug.r_map;
    if (!name || !program || (handle != RTLD_DEFAULT && handle != RTLD_NEXT && handle != program) ||
        !redirect_hook_of(name, &ours, &real))
        return false;
    int e = errno;
    agent_busy++;
    redirect_scope s;
    bool answered = false;
    if (redirect_scope_of(name, real, caller, &s) && !s.caller_elsewhere &&
        (handle == program || (handle == RTLD_DEFAULT && !s.other) ||
         (handle == RTLD_NEXT && s.caller_is_program && !s.program_has)) &&
        lookup_real_dlsym(program, name) == real) { /* the global scope: what each of those searches here */
        *out = ours;
        answered = true;
    }
    agent_leave();
    errno = e;
    return answered;
}

/* lookup_dlsym(handle, name): lookup_answer(handle, name, return address,
 * &slot); the slot's value if answered, else a jump to libc's with the
 * arguments and the stack as they came. 40 bytes: the two arguments, the
 * slot, the stack 16-byte aligned at the call. */
__asm__(".text\n"
        ".globl lookup_dlsym\n.hidden lookup_dlsym\n.type lookup_dlsym, @function\n"
        "lookup_dlsym:\n"
        ".cfi_startproc\n"
        "push %rdi\n.cfi_adjust_cfa_offset 8\n"
        "push %rsi\n.cfi_adjust_cfa_offset 8\n"
        "sub $24, %rsp\n.cfi_adjust_cfa_offset 24\n"
        "mov 40(%rsp), %rdx\n"
        "mov %rsp, %rcx\n"
        "call lookup_answer\n"
        "test %al, %al\n"
        "jz 1f\n"
        "mov (%rsp), %rax\n"
        "add $40, %rsp\n.cfi_remember_state\n.cfi_adjust_cfa_offset -40\n"
        "ret\n"
        "1:\n.cfi_restore_state\n"
        "add $24, %rsp\n.cfi_adjust_cfa_offset -24\n"
        "pop %rsi\n.cfi_adjust_cfa_offset -8\n"
        "pop %rdi\n.cfi_adjust_cfa_offset -8\n"
        "jmp *lookup_real_dlsym(%rip)\n"
        ".cfi_endproc\n"
        ".size lookup_dlsym, .-lookup_dlsym\n");
