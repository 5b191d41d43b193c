/*
 * tests/util/private_etc.c — see private_etc.h.
 */
#include "util/private_etc.h"
#include "util/testutil.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[64];

static void remove_scratch(void)
{
    char cmd[128];
    if (!scratch[0])
        return;
    umount2("/etc", MNT_DETACH);
    snprintf(cmd, sizeof cmd, "rm -rf %s", scratch);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", scratch);
}

static int mount_overlay(void)
{
    char up[128], work[128], opts[512];
    snprintf(up, sizeof up, "%s/upper", scratch);
    snprintf(work, sizeof work, "%s/work", scratch);
    if ((mkdir(up, 0755) != 0 && errno != EEXIST) || (mkdir(work, 0755) != 0 && errno != EEXIST))
        return -1;
    snprintf(opts, sizeof opts, "lowerdir=/etc,upperdir=%s,workdir=%s", up, work);
    if (mount("overlay", "/etc", "overlay", 0, opts) != 0) {
        fprintf(stderr, "skipped: cannot mount an overlay over /etc: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

int tu_private_etc(void)
{
    /* Root: mounting needs it, and the setting is root's to change. */
    if (geteuid() != 0) {
        fprintf(stderr, "skipped: not root (the by-name setting is changed in a private /etc, "
                        "which needs a mount namespace)\n");
        return -1;
    }
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        fprintf(stderr, "skipped: no private mount namespace: %s\n", strerror(errno));
        return -1;
    }
    snprintf(scratch, sizeof scratch, "/tmp/ltr-etc-XXXXXX");
    if (!mkdtemp(scratch))
        return -1;
    atexit(remove_scratch);
    const char *asan = getenv("ASAN_OPTIONS");
    char opts[1024];
    snprintf(opts, sizeof opts, "%s%sverify_asan_link_order=0", asan ? asan : "", asan && *asan ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    return mount_overlay();
}

int tu_private_etc_reset(void)
{
    char cmd[160];
    if (umount2("/etc", MNT_DETACH) != 0)
        return -1;
    snprintf(cmd, sizeof cmd, "rm -rf %s/upper %s/work", scratch, scratch);
    if (system(cmd) != 0)
        return -1;
    return mount_overlay();
}

const char *tu_private_ltr(void)
{
    static const char ltr[] = TU_PRIVATE_INSTALL "/bin/ltr";
    if (access(ltr, X_OK) == 0)
        return ltr;
    char build[4096];
    snprintf(build, sizeof build, "%s", tu_ltr()); /* build/bin/ltr -> build */
    for (int i = 0; i < 2 && strrchr(build, '/'); i++)
        *strrchr(build, '/') = 0;
    tu_result r = tu_run("set -e; umask 022; mkdir -p %s/bin %s/lib; cp %s/bin/ltr %s/bin/; "
                         "cp -P %s/lib/*.so* %s/lib/; chmod -R go-w %s", TU_PRIVATE_INSTALL, TU_PRIVATE_INSTALL,
                         build, TU_PRIVATE_INSTALL, build, TU_PRIVATE_INSTALL, TU_PRIVATE_INSTALL);
    int ok = r.status == 0;
    if (!ok)
        fprintf(stderr, "could not copy ltr into %s: %s", TU_PRIVATE_INSTALL, r.err);
    tu_free(&r);
    return ok ? ltr : NULL;
}
