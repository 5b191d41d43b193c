/*
 * symbols/dwarf.c — ELF files through libdwfl: one Dwfl per file, the file
 * reported at its own virtual addresses, so a module loaded by many processes
 * at different places is opened once. Separate debug info is found by the
 * standard elfutils lookup (build-id under each debug directory, then
 * .gnu_debuglink), which is why a debug_path is passed in, through
 * debuginfo.c's callback (a debug file found by name opened only if it is
 * a regular file; no debuginfod client loaded when it has nothing to ask).
 * Which function
 * and inlined calls hold an address, and their names, is funcs.c's part.
 */
#include "symbols/dwarf.h"
#include "prim/prim.h"
#include "elfdebug/debuginfo.h"
#include "symbols/funcs.h"
#include "symbols/symbols.h"
#include "symbols/symtab.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <libelf.h>
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct sym_elf {
    Dwfl *dwfl;
    Dwfl_Module *mod;
    Dwarf_Addr bias; /* dwfl address - ELF virtual address */
    Dwfl_Callbacks cb;
    sym_funcs *funcs; /* functions by address, per compile unit */
    sym_symtab *symtab; /* function symbols by address: made at the first need */
};

#define MAX_CHAIN 256 /* inlining depth followed */

static void hex(const uint8_t *p, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 3 <= cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%02x", p[i]);
    if (n == 0 && cap)
        snprintf(out, cap, "none");
}

static char *build_id_problem(Dwfl_Module *mod, const uint8_t *want, size_t want_len)
{
    const unsigned char *bits;
    GElf_Addr at;
    int n = dwfl_module_build_id(mod, &bits, &at);
    if (want_len == 0 || (n == (int)want_len && !memcmp(bits, want, want_len)))
        return NULL;
    char a[130], b[130], *msg = NULL;
    hex(want, want_len, a, sizeof a);
    hex(n > 0 ? bits : NULL, n > 0 ? (size_t)n : 0, b, sizeof b);
    if (asprintf(&msg, "build-id differs: recorded %s, the file here has %s", a, b) < 0)
        msg = NULL;
    return msg;
}

static char *strerr_problem(const char *what)
{
    char *msg = NULL;
    if (asprintf(&msg, "%s", what) < 0)
        msg = NULL;
    return msg;
}

sym_elf *sym_elf_open(const char *path, const uint8_t *build_id, size_t build_id_len,
                      char **debug_path, char **problem)
{
    *problem = NULL;
    if (path[0] != '/') /* [vdso] and the like: nothing on disk to read */
        return NULL;
    /* The path comes from the trace (a traced program's mappings, and the
     * program may have put a symlink to a device at its name since): a
     * regular file only, never opened otherwise (ltr_open_regular: a
     * device's open would act, a FIFO's block); libdwfl reads the fd checked. */
    int fd = ltr_open_regular(path);
    if (fd < 0) {
        *problem = strerr_problem(fd == -EINVAL ? "not a regular file here" : "the file is not readable here");
        return NULL;
    }
    sym_elf *e = calloc(1, sizeof *e);
    if (!e) {
        close(fd);
        return NULL;
    }
    e->cb.find_elf = dwfl_build_id_find_elf;
    e->cb.find_debuginfo = dbg_find_debuginfo;
    e->cb.section_address = dwfl_offline_section_address;
    e->cb.debuginfo_path = debug_path;
    e->dwfl = dwfl_begin(&e->cb);
    e->funcs = sym_funcs_new();
    if (e->dwfl && e->funcs) /* on success fd is libdwfl's, closed by dwfl_end; not on failure */
        e->mod = dwfl_report_elf(e->dwfl, path, path, fd, 0, false);
    if (!e->mod)
        close(fd);
    if (!e->mod) {
        *problem = strerr_problem("not an ELF file libdw can read");
        sym_elf_close(e);
        return NULL;
    }
    dwfl_report_end(e->dwfl, NULL, NULL);
    void **userdata;
    dwfl_module_info(e->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
    *userdata = debug_path; /* dbg_find_debuginfo's debug path */
    if ((*problem = build_id_problem(e->mod, build_id, build_id_len))) {
        sym_elf_close(e);
        return NULL;
    }
    Dwarf_Addr low = 0;
    dwfl_module_info(e->mod, NULL, &low, NULL, NULL, NULL, NULL, NULL);
    GElf_Addr bias = 0;
    if (dwfl_module_getelf(e->mod, &bias))
        e->bias = bias;
    return e;
}

int sym_elf_debuglink_here(const char *path, const char *debug_path)
{
    int fd = ltr_open_regular(path); /* from the trace: never a device's open */
    if (fd < 0)
        return 0;
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Word crc;
    const char *link = elf ? dwelf_elf_gnu_debuglink(elf, &crc) : NULL;
    int found = elf && dbg_file_by_name_here(path, link, debug_path) == DBG_HERE;
    if (elf)
        elf_end(elf);
    close(fd);
    return found;
}

void sym_elf_close(sym_elf *e)
{
    if (!e)
        return;
    if (e->dwfl)
        dwfl_end(e->dwfl);
    sym_funcs_free(e->funcs);
    sym_symtab_free(e->symtab);
    free(e);
}

void sym_elf_warm(sym_elf *e)
{
    Dwarf_Addr bias, low = 0, cubias;
    dwfl_module_getdwarf(e->mod, &bias);
    dwfl_module_getsymtab(e->mod);
    dwfl_module_info(e->mod, NULL, &low, NULL, NULL, NULL, NULL, NULL);
    dwfl_module_addrdie(e->mod, low, &cubias); /* indexes the compile units by address */
    if (!e->symtab)
        e->symtab = sym_symtab_new(e->mod);
}

int sym_elf_has_symbols(sym_elf *e)
{
    Dwarf_Addr bias;
    if (dwfl_module_getdwarf(e->mod, &bias))
        return 1;
    /* a .symtab (here or in a debug file) has local symbols, at least the
     * STT_FILE ones; .dynsym has only its null entry before the globals */
    return dwfl_module_getsymtab(e->mod) > 0 && dwfl_module_getsymtab_first_global(e->mod) > 1;
}

/* Where an inlined call was made from: file and line in its caller. The
 * file number refers to the line table of the call's own unit. */
static void call_site(Dwarf_Die *inl, sym_level *caller)
{
    Dwarf_Attribute attr;
    Dwarf_Word fileidx = 0, line = 0;
    Dwarf_Files *files;
    Dwarf_Die cu;
    size_t nfiles;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &fileidx) == 0 &&
        dwarf_diecu(inl, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 &&
        fileidx < nfiles) {
        const char *f = dwarf_filesrc(files, fileidx, NULL, NULL);
        caller->file = f ? strdup(f) : NULL;
    }
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &line) == 0)
        caller->line = (unsigned)line;
}

static void line_of(sym_elf *e, Dwarf_Addr addr, sym_level *lv)
{
    Dwfl_Line *l = dwfl_module_getsrc(e->mod, addr);
    int line = 0;
    const char *file = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
    lv->file = file ? strdup(file) : NULL;
    lv->line = line > 0 ? (unsigned)line : 0;
}

/* The function at addr and the inlined calls inside it, innermost first:
 * the innermost has the line of addr, each other one the line of the call
 * it made. With more levels than cap the innermost ones are left out (the
 * function and the calls nearest it say more about who allocates), and the
 * innermost kept one has the line of its call. */
static size_t inline_chain(sym_elf *e, Dwarf_Addr addr, sym_level *out, size_t cap)
{
    Dwarf_Addr cubias;
    Dwarf_Die *cu = dwfl_module_addrdie(e->mod, addr, &cubias);
    Dwarf_Die chain[MAX_CHAIN];
    size_t n = cu ? sym_funcs_chain(e->funcs, cu, addr - cubias, chain, MAX_CHAIN) : 0;
    size_t k = 0;
    for (size_t i = n > cap ? cap : n; i-- > 0; k++) {
        out[k].function = sym_die_name(&chain[i]);
        if (i + 1 == n)
            line_of(e, addr, &out[k]);
        else
            call_site(&chain[i + 1], &out[k]);
    }
    return k;
}

size_t sym_elf_resolve(sym_elf *e, uint64_t vaddr, sym_level *out, size_t cap)
{
    if (cap == 0)
        return 0;
    memset(out, 0, cap * sizeof *out);
    Dwarf_Addr addr = vaddr + e->bias;
    size_t k = inline_chain(e, addr, out, cap);
    if (k > 0 && out[k - 1].function)
        return k;
    if (k == 0) /* no DWARF: symbol table and whatever line info there is */
        line_of(e, addr, &out[k++]);
    if (!e->symtab)
        e->symtab = sym_symtab_new(e->mod);
    const char *name = sym_symtab_find(e->symtab, addr);
    if (name) {
        char *d = ltr_demangle(name);
        out[k - 1].function = d ? d : strdup(name);
    }
    return out[k - 1].function || out[k - 1].file ? k : (free(out[k - 1].file), k - 1);
}
