/*
 * examples/hello-provider.c — the smallest program that writes events with
 * ltr's provider API: one provider, one event with typed fields. Run it while
 * a session enables "Example.Hello" and the events land in that session.
 */
#include <ltr/provider.h>

#include <stdio.h>
#include <unistd.h>

LTR_PROVIDER_DEFINE(hello_provider, "Example.Hello");
static const ltr_field_desc request_fields[] = {
    {"request", LTR_TYPE_U32}, {"bytes", LTR_TYPE_U64}, {"path", LTR_TYPE_STRING}};
LTR_EVENT_DEFINE(ev_request, hello_provider, 1, LTR_LEVEL_INFO, 0x1, "Request", request_fields);

int main(void)
{
    if (ltr_provider_register(&hello_provider) != 0)
        fprintf(stderr, "hello-provider: tracing is off (no runtime directory)\n");
    static const char *paths[] = {"/index.html", "/style.css", "/logo.png"};
    for (unsigned i = 0; i < 9; i++) {
        LTR_WRITE(&ev_request, LTR_U32(i), LTR_U64(1000 + 100 * i), LTR_STR(paths[i % 3]));
        usleep(1000);
    }
    ltr_provider_unregister(&hello_provider);
    return 0;
}
