/*
 * tests/build/headers.c — every public header in one file, compiled as C99
 * with -pedantic -Werror and (headers.cpp) as C++ with -pedantic -Werror
 * (tests/build/CMakeLists.txt): a program can include all of them together,
 * in either language, without a warning. In C the provider macros are used
 * too, so that what they expand to is held to C99 as well.
 */
#include <ltr/common.h>
#include <ltr/provider.h>
#include <ltr/trace.h>

int ltr_headers_use(const ltr_provider *p, const ltr_trace_provider *tp, const ltr_trace_value *v);

int ltr_headers_use(const ltr_provider *p, const ltr_trace_provider *tp, const ltr_trace_value *v)
{
    return (int)ltr_provider_enabled(p) + tp->named + (int)v->type;
}

#ifndef __cplusplus
LTR_PROVIDER_DEFINE(headers_provider, "Ltr.Headers");
static const ltr_field_desc headers_fields[] = {{"n", LTR_TYPE_U64}, {"s", LTR_TYPE_STRING}};
LTR_EVENT_DEFINE(headers_event, headers_provider, 1, LTR_LEVEL_INFO, 0x1, "Headers", headers_fields);

void ltr_headers_write(unsigned long n);

void ltr_headers_write(unsigned long n)
{
    LTR_WRITE(&headers_event, LTR_U64(n), LTR_STR("text"));
}
#endif

int main(void)
{
    return 0;
}
