/*
 * recorder/providers.c — `ltr providers`: reading the registry's provider
 * slots (providers.h), and asking a recorder for a provider's layouts.
 */
#include "recorder/providers.h"
#include "recorder/client.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ltr_providers_list(ltr_provider_info *out, int max, ltr_error *err)
{
    ltr_registry *reg = ltr_registry_get(err);
    if (!reg)
        return -err->code;
    ltr_registry_lock();
    ltr_client_reap(reg); /* a killed recorder's session enables nothing */
    int n = 0;
    for (unsigned i = 0; i < LTR_MAX_PROVIDERS && n < max; i++) {
        const ltr_reg_provider *p = &reg->providers[i];
        if (!atomic_load(&p->used))
            continue;
        ltr_provider_info *o = &out[n++];
        memset(o, 0, sizeof *o);
        o->guid = p->guid;
        /* named by traced programs: shown as a trace's names are, without a
         * control character (C0 alone let a C1 CSI reach the terminal) */
        size_t len = strnlen(p->name, sizeof p->name - 1);
        o->name[ltr_shown_text(p->name, len, o->name, false)] = 0;
        uint32_t bits = atomic_load(&p->sessions);
        for (unsigned s = 0; s < LTR_MAX_SESSIONS; s++) {
            char name[LTR_SESSION_NAME_MAX];
            if (!(bits & (1u << s)) || !atomic_load(&reg->sessions[s].incarnation) ||
                !ltr_reg_session_name(&reg->sessions[s], name))
                continue;
            ltr_provider_enable *e = &o->enabled[o->nenabled++];
            snprintf(e->session, sizeof e->session, "%s", name);
            e->level = atomic_load(&p->per[s].level);
            e->any = atomic_load(&p->per[s].any);
            e->all = atomic_load(&p->per[s].all);
        }
    }
    ltr_registry_unlock();
    return n;
}

const ltr_provider_info *ltr_providers_find(const ltr_provider_info *v, int n, const char *name_or_guid)
{
    ltr_guid g;
    bool is_guid = ltr_guid_parse(name_or_guid, &g) == 0;
    /* the names are kept as shown: the name as listed finds its provider, and so does the name itself */
    char shown[sizeof v->name];
    size_t len = strnlen(name_or_guid, sizeof shown - 1);
    shown[ltr_shown_text(name_or_guid, len, shown, false)] = 0;
    for (int i = 0; i < n; i++)
        if (is_guid ? !memcmp(&v[i].guid, &g, sizeof g) : !strcasecmp(v[i].name, shown))
            return &v[i];
    return NULL;
}

int ltr_client_layouts(const char *session, const ltr_guid *g, char **text, ltr_error *err)
{
    char guid[37];
    ltr_guid_format(g, guid);
    ltr_kvlist resp;
    int rc = ltr_client_op(session, "layouts", NULL, guid, false, &resp, err);
    if (rc)
        return rc;
    enum { MAX = 1 << 20 };
    *text = malloc(MAX);
    if (!*text)
        rc = ltr_fail(err, ENOMEM, "out of memory");
    else if (!ltr_kvlist_get(&resp, "layouts", *text, MAX))
        (*text)[0] = 0;
    ltr_kvlist_free(&resp);
    return rc;
}
