/*
 * tests/util/roots_alone.h — the cases of the one rule for what root
 * runs at every boot or copies into every process (prim's
 * ltr_open_roots_alone): the same table for the rule itself
 * (tests/prim/test_files.c) and for both commands that apply it,
 * `ltr boottrace` and `ltr heaptracingconfig` (tests/e2e), so that they
 * cannot disagree again (heaptracingconfig once refused a file writable by
 * root's group that boottrace took, and boottrace took a tree under /tmp).
 *
 * Each case starts from a tree of root's alone, BASE/t/bin/ltr and
 * BASE/t/lib/ with libltr-heap.so and libltr-byname.so (directories 0755,
 * files 0644 or 0755), BASE itself 0755 in a directory of root's alone (the
 * tests' private /etc), and runs its setup in BASE as root.
 */
#ifndef LTR_TEST_ROOTS_ALONE_H
#define LTR_TEST_ROOTS_ALONE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct roots_alone_case {
    const char *what;
    const char *setup;   /* shell commands in BASE; exit status 77: cannot be made here, skipped */
    const char *refusal; /* a part of the refusal, '@' standing for BASE; NULL: accepted */
} roots_alone_case;

extern const roots_alone_case roots_alone_cases[];
extern const size_t roots_alone_ncases;

/* Where the tests make the tree: in the private /etc (private_etc.h),
 * root's alone up to it. */
#define ROOTS_ALONE_BASE "/etc/roots-alone"

/* Makes ROOTS_ALONE_BASE afresh (0755) with t/bin/ltr and t/lib/: a copy
 * of the private install's (tu_private_ltr) when real, else small plain
 * files (the agent's text "agent"); removes /etc/staff-group-for-usr-local;
 * then runs setup there. Returns setup's exit status (77: the case cannot
 * be made here), or -1 when the tree could not be made. */
int roots_alone_tree(bool real, const char *setup);
/* The case's refusal with ROOTS_ALONE_BASE in place of '@', in out. */
void roots_alone_refusal(const roots_alone_case *c, char *out, size_t size);
/* The command tests: every case of the table, then the command's own
 * (own, nown), each on a tree made anew from the private install
 * (roots_alone_tree), running `ROOTS_ALONE_BASE/t/bin/ltr ARGS` as root,
 * which must end with exit status 1 and say context and the case's
 * refusal, or 0 for a case the rule accepts; then after(c), the test's
 * own check (nothing written; an accepted case undone). A case that cannot
 * be made here is skipped, said on stdout. Returns 0, or -1 with what
 * went wrong in msg. */
int roots_alone_run_cases(const roots_alone_case *own, size_t nown, const char *args, const char *context,
                          void (*after)(const roots_alone_case *c), char *msg, size_t size);

#endif
