/*
 * profiles/xmlsafe.h — reading a .wprp file with libxml2 as untrusted input:
 * size-capped, no network, no DTD, no entities, bounded nesting.
 */
#ifndef LTR_PROFILES_XMLSAFE_H
#define LTR_PROFILES_XMLSAFE_H

#include "profiles/diag.h"
#include "profiles/xmllib.h"

/* Larger files are refused before any parsing (real profiles are < 100 KiB). */
#define WPRP_MAX_FILE_BYTES (4u << 20)
/* Deeper element nesting is refused (the schema nests 6 levels). */
#define WPRP_MAX_DEPTH 24

/* Reads and parses path; on success returns a document whose root is
 * <WindowsPerformanceRecorder>. On failure adds an error naming the file and
 * the reason, and returns NULL. */
xmlDocPtr wprp_xml_read(const char *path, ltr_diag_list *diags);

#endif
