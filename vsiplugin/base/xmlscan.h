/* xmlscan.h: pull one element's text out of a small XML answer.
 *
 * S3 error bodies (<Code>, <Message>, <Region>, <Endpoint>) and STS answers
 * (<AccessKeyId>, ...) are flat enough that a bounded scan beats an XML
 * library. Pure, no I/O, safe on any bytes (fuzz-friendly): input need not be
 * NUL-terminated, output is capped at VT_XML_MAX_VALUE bytes. */
#ifndef VT_XMLSCAN_H
#define VT_XMLSCAN_H

#include <stddef.h>

#define VT_XML_MAX_VALUE 8192

/* Text of the first <tag>...</tag> (attributes on the start tag allowed) in
 * body[0..len), with the five predefined entities and numeric character
 * references decoded. malloc'd (caller frees); NULL when absent, unclosed,
 * longer than VT_XML_MAX_VALUE or on OOM. */
char *vt__xml_tag(const char *body, size_t len, const char *tag);

/* The next <tag>...</tag> element at or after body (no attributes on the
 * start tag, no nesting of the same tag): returns a pointer to its inner
 * text and sets *inner_len, and *next to just past its end tag; NULL when
 * there is none (or it is unclosed). For repeated elements of a list
 * answer (<Contents>, <CommonPrefixes>). */
const char *vt__xml_next(const char *body, size_t len, const char *tag,
                         size_t *inner_len, const char **next);

#endif
