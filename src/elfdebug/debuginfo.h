/*
 * elfdebug/debuginfo.h — the find_debuginfo callback ltr gives libdwfl:
 * elfutils' standard lookup of a separate debug file, its lookups by
 * build-id and by name opening regular files only, and without loading the
 * debuginfod client when debuginfod is not configured (debuginfo.c).
 */
#ifndef LTR_ELFDEBUG_DEBUGINFO_H
#define LTR_ELFDEBUG_DEBUGINFO_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>

/* DEBUGINFOD_URLS is set and not empty: what libdebuginfod needs before it
 * asks a server or reads its cache (0.188's debuginfod_query_server). */
bool dbg_debuginfod_configured(void);

/* A file is there that the lookup by name (dbg_find_debuginfo's steps (2)
 * and (3)) may take for file_name's debug file: a regular file named
 * debuglink (or, NULL, FILE.debug and FILE) in the places debug_path names
 * (':'-separated: "" the file's directory, a relative entry under it, an
 * absolute one with the file's directory or a tail of it under it), for
 * file_name and for its real path. stat() only, nothing opened; a
 * superset: the lookup may still reject it (CRC, build-id). */
enum { DBG_NONE = 0, DBG_HERE = 1 };
int dbg_file_by_name_here(const char *file_name, const char *debuglink, const char *debug_path);

/* A Dwfl_Callbacks.find_debuginfo: the file dwfl_standard_find_debuginfo
 * finds (build-id under the debug directories, .gnu_debuglink and the
 * file's own name in the usual places, with libdwfl's checks, debuginfod
 * when DEBUGINFOD_URLS is set), but every file it opens opened only if it
 * is a regular file (ltr_open_regular): a name a traced program, or another
 * user who writes a --debug-dir, can change is never a FIFO's blocking open
 * nor a device's open. With
 * DEBUGINFOD_URLS unset or empty no debuginfod client is loaded.
 * The module's user data (dwfl_module_info) must be NULL or point to a
 * char * holding what the Dwfl's debuginfo_path holds (that char ** itself,
 * or a struct that begins with such a char *): libdwfl does not tell a
 * callback the Dwfl's. */
int dbg_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                       const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                       char **debuginfo_file_name);

#endif
