/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the export files share: export.c (the split and a guest's share), export-libvirt.c (the
 * guest's elements), export-xml.c (the scan of a domain document) and export-domain.c (the
 * domain's parts found and merged). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "macro.h"

/* ---- export.c ---- */

/* The largest contiguous run of set bits in m: libvirt makes a <cachetune> of one such run. */
unsigned export_largest_run(uint64_t m);
/* Whether a vCPU of r runs on a CPU of cache c. */
bool export_cache_used(const Host *h, const ExportCacheFree *c, const ExportReservation *r);

/* ---- export-xml.c ---- */

typedef struct XmlElement {
        const char *name;
        size_t len;
        size_t start, content, close, end; /* '<' of the start tag, after its '>', '<' of the end tag
                                            * (content for an empty element), after the end tag's '>' */
        size_t depth;                      /* 0: the root */
        size_t parent;                     /* index of the parent in XmlScan.elems; SIZE_MAX: the root */
        const char *attrs;                 /* the start tag's attributes */
        size_t attrs_len;
} XmlElement;

typedef struct XmlScan {
        const char *text;
        size_t size, pos;
        XmlElement *elems; /* in document order */
        size_t n_elems;
        char *error;
        size_t stack[256], depth; /* the open elements (indexes of elems) */
        bool root_done;
} XmlScan;

typedef struct XmlAttr {
        const char *name;
        size_t name_len;
        const char *value;
        size_t value_len;
        const char *start, *end; /* the attribute as written, name to closing quote */
} XmlAttr;

/* The whole document: every element's span checked against its end tag. -EINVAL with x->error
 * ("line 3: <cputune> (line 2) closed by </domain>"). */
int xml_scan(XmlScan *x);
int xml_fail(XmlScan *x, size_t at, const char *fmt, ...) _printf_(3, 4);
unsigned xml_line_of(const char *text, size_t pos);
bool xml_is(const XmlElement *e, const char *name);
/* The attributes of a start tag one by one (*pos 0 first); false after the last. */
bool xml_attr_next(const XmlElement *e, size_t *pos, XmlAttr *ret);
/* An attribute's value (NULL: absent), whether it is `value`, or it as a number (false: absent or
 * not one). */
char *xml_attr(const XmlElement *e, const char *name);
bool xml_attr_is(const XmlElement *e, const char *name, const char *value);
bool xml_attr_uint(const XmlElement *e, const char *name, unsigned *ret);
/* The start tag's attributes but those named (a NULL-terminated list), as written: " a='1' b=\"2\"". */
char *xml_attrs_without(const XmlElement *e, const char * const *names);
/* The element as written, start tag to end tag. */
char *xml_text(const XmlScan *x, const XmlElement *e);
/* The text of an element as a number ("  4 "); false when it is none. */
bool xml_content_uint(const char *text, const XmlElement *e, unsigned *ret);
/* The start of the line of pos when only blanks precede it there, else pos. */
size_t xml_line_start(const char *text, size_t pos);
/* After the newline that ends the line of pos when only blanks follow it there, else pos. */
size_t xml_line_end(const char *text, size_t size, size_t pos);
