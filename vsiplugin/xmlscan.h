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

#endif
