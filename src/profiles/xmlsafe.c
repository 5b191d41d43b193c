/*
 * profiles/xmlsafe.c — the only place that hands profile bytes to libxml2.
 *
 * Profiles come from users, from the web, from colleagues: they are parsed as
 * untrusted input. The file size is checked before reading; the parser runs
 * with XML_PARSE_NONET and without XML_PARSE_NOENT / DTD loading; a DOCTYPE is
 * refused the moment the parser sees it (a SAX hook stops the parse before its
 * internal subset, so no entity is ever declared, let alone expanded); and the
 * element tree's depth is bounded after parsing.
 */
#include "profiles/xmlsafe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* libxml2's soname since 2.0 */
ltr_lazylib ltr_libxml2 = {"libxml2.so.2", "to read recording profiles", NULL};

/* Reads the whole file, refusing what is not a regular file or is too big. */
static char *read_capped(const char *path, size_t *len, ltr_diag_list *diags)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ltr_diag_add(diags, LTR_DIAG_ERROR, path, 0, NULL, "cannot open: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ltr_diag_add(diags, LTR_DIAG_ERROR, path, 0, NULL, "not a regular file");
        close(fd);
        return NULL;
    }
    if ((unsigned long long)st.st_size > WPRP_MAX_FILE_BYTES) {
        ltr_diag_add(diags, LTR_DIAG_ERROR, path, 0, NULL,
                     "file is %lld bytes; profiles larger than %u bytes are refused",
                     (long long)st.st_size, WPRP_MAX_FILE_BYTES);
        close(fd);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (buf && got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf || got != (size_t)st.st_size) {
        ltr_diag_add(diags, LTR_DIAG_ERROR, path, 0, NULL, "cannot read the file");
        free(buf);
        return NULL;
    }
    *len = got;
    return buf;
}

/* SAX hook: any DOCTYPE stops the parse before its declarations are read. */
static void refuse_doctype(void *ctx, const xmlChar *name, const xmlChar *ext,
                           const xmlChar *sys)
{
    xmlParserCtxtPtr ctxt = ctx;
    ctxt->_private = (void *)1;
    xmlStopParser(ctxt);
}

static void refuse_entity(void *ctx, const xmlChar *name, int type, const xmlChar *pub,
                          const xmlChar *sys, xmlChar *content)
{
    refuse_doctype(ctx, NULL, NULL, NULL);
}

static int max_depth(xmlNodePtr n, int depth)
{
    int deepest = depth;
    for (xmlNodePtr c = n->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        int d = max_depth(c, depth + 1);
        if (d > deepest)
            deepest = d;
        if (deepest > WPRP_MAX_DEPTH)
            break; /* enough to refuse; do not walk a hostile tree further */
    }
    return deepest;
}

static void copy_message(char *out, size_t size, const char *msg)
{
    snprintf(out, size, "%s", msg);
    size_t n = strlen(out);
    while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
        out[--n] = 0;
}

/* libxml2 reports bytes that do not convert from the declared encoding
 * outside the parser context, on stderr by default ("encoding error : ...",
 * found by fuzzing): caught here while a profile is parsed, kept for the
 * diagnostic, never printed. */
static void catch_error(void *ctx, xmlErrorPtr e)
{
    char *first = ctx;
    if (!first[0] && e && e->message && (e->domain == XML_FROM_I18N || e->domain == XML_FROM_IO))
        copy_message(first, 160, e->message);
}

static void parse_error(xmlParserCtxtPtr ctxt, const char *path, const char *encoding_error,
                        ltr_diag_list *diags)
{
    const xmlError *e = xmlCtxtGetLastError(ctxt);
    char msg[256] = "the parser gave no reason";
    int line = 0;
    if (e && e->message) {
        copy_message(msg, sizeof msg, e->message);
        line = e->line;
    }
    if (encoding_error[0])
        ltr_diag_add(diags, LTR_DIAG_ERROR, path, line, NULL,
                     "not a well-formed XML file: its bytes are not in the encoding it declares (%s)",
                     encoding_error);
    else
        ltr_diag_add(diags, LTR_DIAG_ERROR, path, line, NULL, "not a well-formed XML file: %s", msg);
}

/* Structure checks on a parsed document: DOCTYPE, root element, depth. */
static int check_doc(xmlParserCtxtPtr ctxt, xmlDocPtr doc, const char *path, ltr_diag_list *diags)
{
    if (ctxt->_private || doc->intSubset || doc->extSubset) {
        ltr_diag_add(diags, LTR_DIAG_ERROR, path, 0, NULL,
                     "DOCTYPE declarations are refused: a profile needs no DTD, and entities "
                     "could expand without bound or read other files");
        return -1;
    }
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (!root) {
        ltr_diag_add(diags, LTR_DIAG_ERROR, path, 0, NULL, "not a profile: no root element");
        return -1;
    }
    if (strcmp((const char *)root->name, "WindowsPerformanceRecorder") != 0) {
        ltr_diag_add(diags, LTR_DIAG_ERROR, path, xmlGetLineNo(root), NULL,
                     "not a WPR profile: the root element is <%s>, expected "
                     "<WindowsPerformanceRecorder>",
                     (const char *)root->name);
        return -1;
    }
    if (max_depth(root, 1) > WPRP_MAX_DEPTH) {
        ltr_diag_add(diags, LTR_DIAG_ERROR, path, 0, NULL,
                     "elements are nested more than %d deep; the profile schema needs far fewer",
                     WPRP_MAX_DEPTH);
        return -1;
    }
    return 0;
}

xmlDocPtr wprp_xml_read(const char *path, ltr_diag_list *diags)
{
    size_t len = 0;
    char *buf = read_capped(path, &len, diags);
    if (!buf)
        return NULL;
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt) {
        free(buf);
        ltr_diag_add(diags, LTR_DIAG_ERROR, path, 0, NULL, "cannot create an XML parser");
        return NULL;
    }
    ctxt->sax->internalSubset = refuse_doctype;
    ctxt->sax->externalSubset = refuse_doctype;
    ctxt->sax->entityDecl = refuse_entity;
    ctxt->_private = NULL;
    int opts = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES;
    char encoding_error[160] = "";
    xmlStructuredErrorFunc saved = xmlStructuredError;
    void *saved_ctx = xmlStructuredErrorContext;
    xmlSetStructuredErrorFunc(encoding_error, catch_error);
    xmlDocPtr doc = xmlCtxtReadMemory(ctxt, buf, (int)len, path, NULL, opts);
    xmlSetStructuredErrorFunc(saved_ctx, saved);
    free(buf);
    if (!doc && ctxt->_private) {
        ltr_diag_add(diags, LTR_DIAG_ERROR, path, 0, NULL,
                     "DOCTYPE declarations are refused: a profile needs no DTD, and entities "
                     "could expand without bound or read other files");
    } else if (!doc) {
        parse_error(ctxt, path, encoding_error, diags);
    } else if (check_doc(ctxt, doc, path, diags) != 0) {
        xmlFreeDoc(doc);
        doc = NULL;
    }
    xmlFreeParserCtxt(ctxt);
    return doc;
}
