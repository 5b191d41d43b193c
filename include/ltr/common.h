/*
 * ltr/common.h — definitions shared by every public ltr header: the error
 * record that API calls fill in, GUIDs, and the export macro.
 */
#ifndef LTR_COMMON_H
#define LTR_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LTR_API __attribute__((visibility("default")))

/* Filled in by a call that fails: an errno-style code and a message that names
 * what was wrong (a file, an option, an offset). */
typedef struct ltr_error {
    int code;        /* positive errno value, or 0 */
    char msg[512];
} ltr_error;

/* A GUID, bytes in the order of its text form (RFC 4122). */
typedef struct ltr_guid {
    uint8_t b[16];
} ltr_guid;

/* Prints "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into out (at least 37 bytes). */
LTR_API void ltr_guid_format(const ltr_guid *g, char out[37]);
/* Parses the text form, with or without braces. Returns 0, or -1 if malformed. */
LTR_API int ltr_guid_parse(const char *text, ltr_guid *out);
/* The GUID that ETW TraceLogging / EventSource derive from a provider name:
 * SHA-1 over a fixed namespace and the upper-cased UTF-16BE name, version 5. */
LTR_API void ltr_guid_from_name(const char *name, ltr_guid *out);

/* Event levels, as in ETW. */
enum {
    LTR_LEVEL_CRITICAL = 1,
    LTR_LEVEL_ERROR = 2,
    LTR_LEVEL_WARNING = 3,
    LTR_LEVEL_INFO = 4,
    LTR_LEVEL_VERBOSE = 5,
};

/* Field types of event layouts; the numbers are those of the trace format. */
typedef enum ltr_type {
    LTR_TYPE_U8 = 1,
    LTR_TYPE_U16 = 2,
    LTR_TYPE_U32 = 3,
    LTR_TYPE_U64 = 4,
    LTR_TYPE_I8 = 5,
    LTR_TYPE_I16 = 6,
    LTR_TYPE_I32 = 7,
    LTR_TYPE_I64 = 8,
    LTR_TYPE_F64 = 9,
    LTR_TYPE_STRING = 10,
    LTR_TYPE_BLOB = 11,
    LTR_TYPE_POINTER = 12,
    LTR_TYPE_BOOL = 13,
} ltr_type;

/* Variable-length integers (LEB128, docs/trace-format.md): small values take
 * fewer bytes; a reader hands them out as u64, i64 and pointer. They are
 * outside the enum so that switches over the first thirteen, written before
 * these existed, keep compiling with -Wswitch. */
#define LTR_TYPE_UVAR ((ltr_type)14) /* unsigned LEB128 */
#define LTR_TYPE_IVAR ((ltr_type)15) /* zigzag, then unsigned LEB128 */
#define LTR_TYPE_PVAR ((ltr_type)16) /* an address as unsigned LEB128 */
/* Written only by the trace writer (format version 4), never by producers: an
 * address later events of the process may refer to, and an address told as
 * such a reference (docs/trace-format.md, "Address references"). A reader
 * hands both out as pointer. */
#define LTR_TYPE_PNEW ((ltr_type)17)
#define LTR_TYPE_PREF ((ltr_type)18)

/* Largest event payload a producer may write. */
#define LTR_MAX_EVENT_PAYLOAD 65536u

#ifdef __cplusplus
}
#endif
#endif
