/*
 * symbols/dwarf.h — one ELF file opened with elfutils libdw, for symbols.c:
 * checks its build-id against the recorded one and resolves ELF virtual
 * addresses to function, file, line and inlined calls.
 */
#ifndef LTR_SYMBOLS_DWARF_H
#define LTR_SYMBOLS_DWARF_H

#include <stddef.h>
#include <stdint.h>

typedef struct sym_elf sym_elf;

/* One level of a resolved address: strings malloc'd, owned by the caller. */
typedef struct sym_level {
    char *function, *file;
    unsigned line;
} sym_level;

/* Opens path; *problem gets a malloc'd reason when the file cannot be used
 * (missing, not ELF, build-id differs) and NULL is returned. */
sym_elf *sym_elf_open(const char *path, const uint8_t *build_id, size_t build_id_len,
                      char **debug_path, char **problem);
void sym_elf_close(sym_elf *e);
/* Does now what the first lookups would: finds and reads the debug info
 * (inflating compressed sections), the symbol table and the index of compile
 * units by address. Lookups give the same results with or without it. */
void sym_elf_warm(sym_elf *e);
/* 0 when the file has no DWARF (its own or a separate debug file's) and no
 * full symbol table (.symtab; .dynsym names only exported functions): most
 * of its frames cannot be named. */
int sym_elf_has_symbols(sym_elf *e);
/* 1 when a debug file dbg_find_debuginfo may find by name for the ELF file
 * at path (its .gnu_debuglink, or FILE.debug without one) is where it looks
 * with debug_path (dbg_file_by_name_here: a regular file there, by stat()):
 * read with libelf alone, without libdwfl's start. */
int sym_elf_debuglink_here(const char *path, const char *debug_path);
/* Resolves the instruction at ELF virtual address vaddr into at most cap
 * levels, innermost inlined call first; returns how many (0 if nothing known). */
size_t sym_elf_resolve(sym_elf *e, uint64_t vaddr, sym_level *out, size_t cap);

#endif
