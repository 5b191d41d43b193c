/*
 * tests/util/roots_alone.c — see roots_alone.h: the table of cases and the
 * tree they start from.
 */
#include "util/roots_alone.h"
#include "util/private_etc.h"
#include "util/testutil.h"

#include <stdio.h>
#include <string.h>

/* An ACL entry that lets nobody (65534) write t/lib: the group bits then
 * show the ACL's mask, rwx, while the group is still root's. */
#define ACL_FOR_NOBODY                                                                                            \
    "command -v python3 >/dev/null || exit 77; python3 -c 'import os, struct; "                                 \
    "os.setxattr(\"t/lib\", \"system.posix_acl_access\", struct.pack(\"<I\", 2) + b\"\".join("                  \
    "struct.pack(\"<HHI\", *e) for e in [(1, 7, 4294967295), (2, 7, 65534), (4, 5, 4294967295), "                \
    "(16, 7, 4294967295), (32, 5, 4294967295)]))' 2>/dev/null || exit 77; test $(stat -c %a t/lib) = 775"

const roots_alone_case roots_alone_cases[] = {
    {"root's alone", "true", NULL},
    {"a directory on the way writable by group root (gid 0)", "chmod 0775 t/lib",
     "@/t/lib may be written by the members of group root, not by root alone"},
    {"the agent writable by group root (gid 0)", "chmod 0664 t/lib/libltr-heap.so",
     "@/t/lib/libltr-heap.so may be written by the members of group root, not by root alone"},
    {"a directory writable by another group", "chgrp nogroup t && chmod 0775 t",
     "@/t may be written by the members of group nogroup, not by root alone"},
    {"a directory every user may write", "chmod 0777 t/lib",
     "@/t/lib may be written by the members of group root and every user"},
    {"a directory of another user's", "chown nobody t", "@/t belongs to nobody, not root"},
    {"the agent another user's", "chown nobody t/lib/libltr-heap.so",
     "@/t/lib/libltr-heap.so belongs to nobody, not root"},
    {"a sticky directory every user may write on the way, like /tmp", "chmod 1777 .",
     "@ is a directory every user may write (sticky, mode 1777, like /tmp)"},
    {"an ACL that lets another user write (the group bits show its mask)", ACL_FOR_NOBODY,
     "@/t/lib may be written by the members of group root, not by root alone"},
    {"Debian's /usr/local with /etc/staff-group-for-usr-local: writable by group staff",
     "getent group staff >/dev/null || exit 77; chgrp staff t && chmod 2775 t && "
     "touch /etc/staff-group-for-usr-local",
     "@/t may be written by the members of group staff, not by root alone, who could replace what is there; "
     "to leave it to root alone: chmod go-w @/t; rm /etc/staff-group-for-usr-local"},
};
const size_t roots_alone_ncases = sizeof roots_alone_cases / sizeof roots_alone_cases[0];

int roots_alone_tree(bool real, const char *setup)
{
    char fill[4200];
    const char *ltr = real ? tu_private_ltr() : NULL;
    if (real && !ltr)
        return -1;
    if (real) /* INSTALL/bin/ltr -> INSTALL */
        snprintf(fill, sizeof fill, "cp %.*s/bin/ltr t/bin/ && cp -P %.*s/lib/*.so* t/lib/",
                 (int)(strlen(ltr) - strlen("/bin/ltr")), ltr, (int)(strlen(ltr) - strlen("/bin/ltr")), ltr);
    else
        snprintf(fill, sizeof fill, "printf ltr > t/bin/ltr && printf agent > t/lib/libltr-heap.so && "
                                    "printf shim > t/lib/libltr-byname.so");
    tu_result r = tu_run("rm -rf " ROOTS_ALONE_BASE " /etc/staff-group-for-usr-local && mkdir -m 0755 "
                         ROOTS_ALONE_BASE " && cd " ROOTS_ALONE_BASE " && umask 022 && mkdir -p t/bin t/lib && "
                         "%s && chmod -R go-w t && chmod 0755 t/bin/ltr && { %s; }", fill, setup);
    int status = r.status;
    if (status && status != 77)
        fprintf(stderr, "roots_alone_tree: '%s' failed (%d): %s%s", setup, status, r.out, r.err);
    tu_free(&r);
    return status && status != 77 ? -1 : status;
}

void roots_alone_refusal(const roots_alone_case *c, char *out, size_t size)
{
    size_t k = 0;
    for (const char *p = c->refusal; p && *p && k + 1 < size; p++) {
        if (*p != '@') {
            out[k++] = *p;
            continue;
        }
        int n = snprintf(out + k, size - k, "%s", ROOTS_ALONE_BASE);
        k += n > 0 && (size_t)n < size - k ? (size_t)n : 0;
    }
    out[k] = 0;
}

int roots_alone_run_cases(const roots_alone_case *own, size_t nown, const char *args, const char *context,
                          void (*after)(const roots_alone_case *c), char *msg, size_t size)
{
    for (size_t i = 0; i < roots_alone_ncases + nown; i++) {
        const roots_alone_case *c = i < roots_alone_ncases ? &roots_alone_cases[i] : &own[i - roots_alone_ncases];
        int made = roots_alone_tree(true, c->setup);
        if (made == 77) {
            printf("case '%s' skipped: it cannot be made here\n", c->what);
            continue;
        }
        if (made) {
            snprintf(msg, size, "%s: the tree could not be made", c->what);
            return -1;
        }
        tu_result r = tu_run(ROOTS_ALONE_BASE "/t/bin/ltr %s", args);
        char want[1024];
        roots_alone_refusal(c, want, sizeof want);
        bool ok = c->refusal ? r.status == 1 && strstr(r.err, context) && strstr(r.err, want) : r.status == 0;
        if (!ok)
            snprintf(msg, size, "%s: status %d, wanted %s%s:\n%s%s", c->what, r.status,
                     c->refusal ? "1 and a refusal with " : "0", c->refusal ? want : "", r.out, r.err);
        tu_free(&r);
        if (!ok)
            return -1;
        after(c);
    }
    tu_result r = tu_run("rm -rf " ROOTS_ALONE_BASE " /etc/staff-group-for-usr-local");
    tu_free(&r);
    return 0;
}
