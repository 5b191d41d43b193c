/*
 * profiles/builtin.c — finding ltr's built-in profiles: $LTR_PROFILE_DIR,
 * else share/ltr/profiles beside the installed binary (found through
 * /proc/self/exe, so a relocated install works), else the source tree, which
 * is what a binary run from the build directory needs.
 */
#include "profiles/profiles.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* <prefix>/share/ltr/profiles when this binary is <prefix>/bin/ltr. */
static bool installed_dir(char *out, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return false;
    *slash = 0;
    int w = snprintf(out, size, "%s/../%s/profiles", exe, LTR_DATADIR_REL);
    return w > 0 && (size_t)w < size && is_dir(out);
}

const char *ltr_profiles_builtin_dir(void)
{
    static char dir[PATH_MAX];
    const char *env = getenv("LTR_PROFILE_DIR");
    if (env && *env)
        return env;
    if (installed_dir(dir, sizeof dir))
        return dir;
    return LTR_SOURCE_PROFILES;
}
