/*
 * profiles/catalog.h — the elements of loaded .wprp files, as written, and
 * their resolved form once Base= inheritance has been applied.
 *
 * The WPR schema is regular: an element has an Id, maybe a Base, attributes,
 * single-value children (<BufferSize Value="1024"/>), and lists
 * (<Keywords Operation="Add"><Keyword Value="Loader"/></Keywords>). A profile
 * adds collector references, each with its own lists of provider ids. So one
 * generic node type holds every element; meaning is given to the values only
 * when a plan is built (plan.c), which keeps inheritance a single algorithm.
 */
#ifndef LTR_PROFILES_CATALOG_H
#define LTR_PROFILES_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

#include "profiles/diag.h"

typedef enum wprp_kind {
    WPRP_SYSTEM_COLLECTOR,
    WPRP_EVENT_COLLECTOR,
    WPRP_HEAP_COLLECTOR,
    WPRP_SYSTEM_PROVIDER,
    WPRP_EVENT_PROVIDER,
    WPRP_HEAP_PROVIDER,
    WPRP_HARDWARE_COUNTER,
    WPRP_PROFILE,
    WPRP_KIND_COUNT
} wprp_kind;

/* Kinds that may inherit from one another: the three collectors, the three
 * providers (and hardware counters), profiles. */
typedef enum wprp_family { WPRP_FAMILY_COLLECTOR, WPRP_FAMILY_PROVIDER, WPRP_FAMILY_PROFILE } wprp_family;

typedef enum wprp_op { WPRP_OP_SET, WPRP_OP_ADD, WPRP_OP_REMOVE } wprp_op;

typedef struct wprp_attr {
    char *key;   /* "Name", "Level", "BufferSize", "Buffers.PercentageOfTotalMemory" */
    char *value;
    int line;
} wprp_attr;

typedef struct wprp_item {
    char *elem;  /* element name: Keyword, CustomKeyword, EventProviderId... */
    char *value;
    int line;
} wprp_item;

typedef struct wprp_list {
    char *key;   /* container element: Keywords, Stacks, HeapProcessIds, Providers */
    wprp_op op;
    wprp_item *items;
    size_t n;
    int line;
} wprp_list;

typedef struct wprp_node wprp_node;
struct wprp_node {
    wprp_kind kind;
    char *id;
    char *base;          /* NULL or "" when none */
    const char *file;    /* owned by the catalog */
    int line;
    bool builtin;        /* came from the built-in profile directory */
    wprp_attr *attrs;
    size_t nattrs;
    wprp_list *lists;
    size_t nlists;
    /* Profiles only: <Collectors>, each reference a node whose id is the
     * collector id and whose "Providers" list holds provider ids. */
    bool has_refs;
    wprp_op refs_op;
    wprp_node *refs;
    size_t nrefs;
    /* Inheritance state (inherit.c). */
    int state;           /* 0 not resolved, 1 resolving, 2 resolved, 3 failed */
    wprp_node *resolved; /* the flattened copy once state == 2 */
};

typedef struct wprp_catalog {
    char **files;        /* every file loaded, in load order */
    size_t nfiles;
    wprp_node **nodes;   /* in load order; a later node shadows an earlier one */
    size_t n, cap;
    ltr_diag_list *diags;
    /* Ids of the file being loaded that a built-in profile defines too:
     * said in one warning once the file is read (wprp_catalog_load), not
     * one each (an exported built-in profile shadows every id). */
    size_t nshadowed;
    int shadowed_line;
    char shadowed_ids[160];
} wprp_catalog;

const char *wprp_kind_name(wprp_kind k);
wprp_family wprp_kind_family(wprp_kind k);

void wprp_catalog_init(wprp_catalog *c, ltr_diag_list *diags);
/* The one warning for the ids of file that built-in profiles define too. */
void wprp_catalog_tell_shadowed(wprp_catalog *c, const char *file);
void wprp_catalog_free(wprp_catalog *c);

/* Loads one file (safe XML reading, schema checks). Returns 0, or -1 if the
 * file was refused; diagnostics go to the catalog's list either way. A file
 * already loaded (same real path) is not loaded twice. *file_out, if given,
 * receives the catalog's copy of the file name. */
int wprp_catalog_load(wprp_catalog *c, const char *path, bool builtin, const char **file_out);
/* Loads every *.wprp of a directory, in name order. */
int wprp_catalog_load_dir(wprp_catalog *c, const char *dir);

/* Adds a node the parser built, taking ownership; reports duplicate ids. */
void wprp_catalog_add(wprp_catalog *c, wprp_node *n);

/* The node of that kind and id that `from` (the element or reference that
 * names it, or NULL) sees: one in from's own file if there is one, else the
 * latest loaded; an element whose Base is its own id sees the definition it
 * shadows. Ids are compared exactly first, then ignoring case (WPR's names
 * are not case sensitive on its command line: Base="HeapSnapshot..." finds
 * ltr's heapsnapshot). */
wprp_node *wprp_catalog_find(const wprp_catalog *c, wprp_kind kind, const char *id,
                             const wprp_node *from);

/* Node helpers, shared by the parser, inheritance and the plan. */
const wprp_attr *wprp_node_attr(const wprp_node *n, const char *key);
const char *wprp_node_value(const wprp_node *n, const char *key);
const wprp_list *wprp_node_list(const wprp_node *n, const char *key);
void wprp_node_set_attr(wprp_node *n, const char *key, const char *value, int line);
wprp_list *wprp_node_add_list(wprp_node *n, const char *key, wprp_op op, int line);
void wprp_list_add(wprp_list *l, const char *elem, const char *value, int line);
wprp_node *wprp_node_clone(const wprp_node *n);
void wprp_node_free(wprp_node *n);  /* frees what it owns, not n itself */

/* Parses "Set", "Add", "Remove" (the default, when text is NULL, is Set). */
int wprp_parse_op(const char *text, wprp_op *out);

#endif
