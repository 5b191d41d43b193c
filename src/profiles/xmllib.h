/*
 * profiles/xmllib.h — libxml2 loaded when a profile is first read, not at
 * ltr's start-up (profiles/lazylib.h has why and the figures): every libxml2
 * function or global the profile code uses goes through a pointer. Included
 * after libxml2's headers; a use of one not listed here fails at link time,
 * since libxml2 is not linked.
 */
#ifndef LTR_PROFILES_XMLLIB_H
#define LTR_PROFILES_XMLLIB_H

#include "profiles/lazylib.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlwriter.h>

extern ltr_lazylib ltr_libxml2;

#define LTR_XML(name) LTR_LAZY_FN(ltr_libxml2, name)
#define xmlBufferContent LTR_XML(xmlBufferContent)
#define xmlBufferCreate LTR_XML(xmlBufferCreate)
#define xmlBufferFree LTR_XML(xmlBufferFree)
#define xmlCtxtGetLastError LTR_XML(xmlCtxtGetLastError)
#define xmlCtxtReadMemory LTR_XML(xmlCtxtReadMemory)
#define xmlDocGetRootElement LTR_XML(xmlDocGetRootElement)
#define xmlFreeDoc LTR_XML(xmlFreeDoc)
#define xmlFreeParserCtxt LTR_XML(xmlFreeParserCtxt)
#define xmlFreeTextWriter LTR_XML(xmlFreeTextWriter)
#define xmlGetLineNo LTR_XML(xmlGetLineNo)
#define xmlGetProp LTR_XML(xmlGetProp)
#define xmlNewParserCtxt LTR_XML(xmlNewParserCtxt)
#define xmlNewTextWriterMemory LTR_XML(xmlNewTextWriterMemory)
#define xmlNodeGetContent LTR_XML(xmlNodeGetContent)
#define xmlSetStructuredErrorFunc LTR_XML(xmlSetStructuredErrorFunc)
#define xmlStopParser LTR_XML(xmlStopParser)
#define xmlTextWriterEndDocument LTR_XML(xmlTextWriterEndDocument)
#define xmlTextWriterEndElement LTR_XML(xmlTextWriterEndElement)
#define xmlTextWriterSetIndent LTR_XML(xmlTextWriterSetIndent)
#define xmlTextWriterSetIndentString LTR_XML(xmlTextWriterSetIndentString)
#define xmlTextWriterStartDocument LTR_XML(xmlTextWriterStartDocument)
#define xmlTextWriterStartElement LTR_XML(xmlTextWriterStartElement)
#define xmlTextWriterWriteAttribute LTR_XML(xmlTextWriterWriteAttribute)
#define xmlTextWriterWriteComment LTR_XML(xmlTextWriterWriteComment)

/* libxml2's globals: variables, or (per-thread, LIBXML_THREAD_ENABLED)
 * macros over a function that gives the thread's variable */
#ifdef xmlFree
#undef xmlFree
#define xmlFree (*LTR_XML(__xmlFree)())
#else
#define xmlFree LTR_XML(xmlFree)
#endif
#ifdef xmlStructuredError
#undef xmlStructuredError
#define xmlStructuredError (*LTR_XML(__xmlStructuredError)())
#else
#define xmlStructuredError LTR_XML(xmlStructuredError)
#endif
#ifdef xmlStructuredErrorContext
#undef xmlStructuredErrorContext
#define xmlStructuredErrorContext (*LTR_XML(__xmlStructuredErrorContext)())
#else
#define xmlStructuredErrorContext LTR_XML(xmlStructuredErrorContext)
#endif

#endif
