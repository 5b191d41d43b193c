/*
 * watch/archivelib.h — libarchive loaded when a support bundle is first
 * written, not at ltr's start-up (profiles/lazylib.h has why and the figures):
 * each libarchive function bundle.c calls goes through a pointer. Included
 * after libarchive's headers; a use of one not listed here fails at link
 * time, since libarchive is not linked.
 */
#ifndef LTR_WATCH_ARCHIVELIB_H
#define LTR_WATCH_ARCHIVELIB_H

#include "profiles/lazylib.h"

#include <archive.h>
#include <archive_entry.h>

extern ltr_lazylib ltr_libarchive;

#define LTR_ARCHIVE(name) LTR_LAZY_FN(ltr_libarchive, name)
#define archive_entry_free LTR_ARCHIVE(archive_entry_free)
#define archive_entry_new LTR_ARCHIVE(archive_entry_new)
#define archive_entry_set_filetype LTR_ARCHIVE(archive_entry_set_filetype)
#define archive_entry_set_mtime LTR_ARCHIVE(archive_entry_set_mtime)
#define archive_entry_set_pathname LTR_ARCHIVE(archive_entry_set_pathname)
#define archive_entry_set_perm LTR_ARCHIVE(archive_entry_set_perm)
#define archive_entry_set_size LTR_ARCHIVE(archive_entry_set_size)
#define archive_errno LTR_ARCHIVE(archive_errno)
#define archive_error_string LTR_ARCHIVE(archive_error_string)
#define archive_write_add_filter_zstd LTR_ARCHIVE(archive_write_add_filter_zstd)
#define archive_write_close LTR_ARCHIVE(archive_write_close)
#define archive_write_data LTR_ARCHIVE(archive_write_data)
#define archive_write_free LTR_ARCHIVE(archive_write_free)
#define archive_write_header LTR_ARCHIVE(archive_write_header)
#define archive_write_new LTR_ARCHIVE(archive_write_new)
#define archive_write_open_fd LTR_ARCHIVE(archive_write_open_fd)
#define archive_write_set_format_pax_restricted LTR_ARCHIVE(archive_write_set_format_pax_restricted)

#endif
