/*
 * recorder/config.c — checking a session's configuration, parsing provider
 * specifications and naming a file-mode session's trace, before anything is
 * launched.
 */
#include "byname/byname.h"
#include "event/registry.h"
#include "recorder/recorder.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ltr_session_name_check(const char *name, ltr_error *err)
{
    size_t n = strlen(name);
    if (n == 0 || n >= LTR_SESSION_NAME_MAX)
        return ltr_fail(err, EINVAL, "session name '%s' must be 1 to %d characters", name,
                        LTR_SESSION_NAME_MAX - 1);
    if (!ltr_session_name_ok(name))
        return ltr_fail(err, EINVAL,
                        "session name '%s' may hold only letters, digits, '_', '.' and '-'", name);
    return 0;
}

static int parse_u64(const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!*text || *text == '-')
        return -1;
    unsigned long long v = strtoull(text, &end, 0);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int ltr_provider_spec_parse(const char *text, ltr_provider_spec *out, ltr_error *err)
{
    memset(out, 0, sizeof *out);
    char buf[512];
    if (snprintf(buf, sizeof buf, "%s", text) >= (int)sizeof buf)
        return ltr_fail(err, EINVAL, "provider '%.40s...' is too long", text);
    char *kw = strchr(buf, ':');
    char *lv = kw ? strchr(kw + 1, ':') : NULL;
    if (kw)
        *kw++ = 0;
    if (lv)
        *lv++ = 0;
    if (!buf[0])
        return ltr_fail(err, EINVAL, "provider '%s': the name or GUID is missing", text);
    size_t len = strlen(buf);
    if (len >= sizeof out->name)
        return ltr_fail(err, EINVAL, "provider '%s': the name is longer than %zu characters", text,
                        sizeof out->name - 1);
    if (ltr_guid_parse(buf, &out->guid) != 0)
        ltr_guid_from_name(buf, &out->guid);
    memcpy(out->name, buf, len + 1); /* fits: checked above */
    uint64_t v;
    if (kw && *kw) {
        if (parse_u64(kw, &v))
            return ltr_fail(err, EINVAL, "provider '%s': keywords '%s' are not a number (use hex, "
                                         "like 0x10)", text, kw);
        out->any = v;
    }
    out->level = LTR_LEVEL_VERBOSE;
    if (lv && *lv) {
        if (parse_u64(lv, &v) || v > 5)
            return ltr_fail(err, EINVAL, "provider '%s': level '%s' is not valid: expected 0 to 5 "
                                         "(1 critical ... 5 verbose, 0 all)", text, lv);
        out->level = (uint8_t)v;
    }
    return 0;
}

int ltr_session_config_check(const ltr_session_config *cfg, ltr_error *err)
{
    int rc = ltr_session_name_check(cfg->name, err);
    if (rc)
        return rc;
    if (cfg->ncollectors == 0 || cfg->ncollectors > LTR_MAX_COLLECTORS)
        return ltr_fail(err, EINVAL, "a session needs 1 to %d collectors", LTR_MAX_COLLECTORS);
    for (unsigned c = 0; c < cfg->ncollectors; c++) {
        const ltr_collector_spec *cs = &cfg->collectors[c];
        if (cs->buffer_kb < LTR_BUFFER_KB_MIN || cs->buffer_kb > LTR_BUFFER_KB_MAX)
            return ltr_fail(err, ERANGE, "buffer size %u KB is out of range: allowed %u to %u KB",
                            cs->buffer_kb, LTR_BUFFER_KB_MIN, LTR_BUFFER_KB_MAX);
        if (cs->buffers < LTR_BUFFERS_MIN || cs->buffers > LTR_BUFFERS_MAX)
            return ltr_fail(err, ERANGE, "buffer count %u is out of range: allowed %u to %u",
                            cs->buffers, LTR_BUFFERS_MIN, LTR_BUFFERS_MAX);
        uint64_t bytes = (uint64_t)cs->buffer_kb * 1024 * cs->buffers;
        uint64_t ram = ltr_total_ram();
        if (ram && bytes > ram / 2)
            return ltr_fail(err, ERANGE, "%u buffers of %u KB (%llu MB) are more than half of the "
                                         "memory (%llu MB)", cs->buffers, cs->buffer_kb,
                            (unsigned long long)(bytes >> 20), (unsigned long long)(ram >> 20));
    }
    if (cfg->mode == LTR_MODE_FILE && !cfg->output[0])
        return ltr_fail(err, EINVAL, "file mode needs an output file");
    if (cfg->nnames > LTR_MAX_SESSION_NAMES)
        return ltr_fail(err, E2BIG, "at most %d names per session", LTR_MAX_SESSION_NAMES);
    for (unsigned i = 0; i < cfg->nnames; i++)
        if ((rc = ltr_byname_check(cfg->names[i], err)) != 0)
            return rc;
    return 0;
}

int ltr_session_default_output(ltr_session_config *cfg, ltr_error *err)
{
    const char *tmp = getenv("TMPDIR"), *dir = tmp && *tmp ? tmp : "/tmp";
    char out[sizeof cfg->output];
    int n = snprintf(out, sizeof out, "%s/ltr-%s-XXXXXX.ltr.part", dir, cfg->name);
    if (n < 0 || (size_t)n >= sizeof out) /* a cut template would lose its XXXXXX */
        return ltr_fail(err, ENAMETOOLONG, "TMPDIR is too long (%zu characters) for the path of the "
                        "session's trace: set a shorter TMPDIR or give -o FILE", strlen(dir));
    memcpy(cfg->output, out, (size_t)n + 1);
    cfg->output_temp = true;
    return 0;
}
