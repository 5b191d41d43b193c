/*
 * agent/sysev.c — the agent's writer of Ltr.System events (sysev.h): the
 * provider registered in the traced process, and the loop over the sessions
 * that enable it, which the heap events' writer (emit.c) runs for Ltr.Heap.
 * Sessions, their preparation (modules, thread names) and stacks are those of
 * emit.c and stacks.c: one stack trie per process serves both providers.
 */
#include "agent/perthread.h"
#include "agent/sysev.h"
#include "event/event.h"
#include "base/system_events.h"

#include <errno.h>

ltr_provider agent_sys_provider = {.name = LTR_SYSTEM_PROVIDER, .state = &ltr_never_enabled};
const uint32_t *volatile agent_sys_state = &ltr_never_enabled;

void sysev_init(void)
{
    if (ltr_provider_register(&agent_sys_provider) == 0)
        __atomic_store_n(&agent_sys_state, agent_sys_provider.state, __ATOMIC_RELEASE);
}

bool sysev_kw_wanted(uint64_t kw)
{
    const ltr_reg_provider *slot = agent_sys_provider.internal;
    uint32_t mask = __atomic_load_n(agent_sys_provider.state, __ATOMIC_RELAXED);
    for (unsigned s = 0; slot && s < LTR_MAX_SESSIONS && (mask >> s); s++)
        if ((mask & (1u << s)) && ltr_reg_wants(slot, s, LTR_LEVEL_INFO, kw))
            return true;
    return false;
}

void sysev_emit(ltr_event_desc *d, uint64_t kw, const void *frame, bool with_stack, sysev_encode_fn enc,
                const void *ctx)
{
    int saved = errno;
    agent_busy++;
    const ltr_reg_provider *slot = agent_sys_provider.internal;
    uint32_t mask = __atomic_load_n(agent_sys_provider.state, __ATOMIC_RELAXED);
    uint64_t ts = emit_timestamp();
    agent_event_ts = ts;
    stack_ref st = {0};
    uint8_t payload[SYSEV_PAYLOAD_MAX];
    uint32_t n = 0;
    ltr_attach *a;
    unsigned c;
    for (unsigned s = 0; (a = emit_next_session(slot, mask, LTR_LEVEL_INFO, kw, &s, &c)); s++) {
        if (!n) {
            if (with_stack)
                st = stacks_capture(frame);
            n = enc(ctx, st.id, payload);
        }
        if (st.id)
            stacks_publish(st, s, a);
        emit_put(a, s, c, d, ts, payload, n);
    }
    agent_event_ts = 0;
    agent_blocks_settle();
    agent_leave();
    errno = saved;
}
