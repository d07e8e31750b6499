/* wholenum.h: the strict whole-number syntax of tunerd's option values,
 * profile fields and kept variables, one parser for cli.c, platform.c and
 * kept.c so the three never disagree on what a number is. Pure: no I/O. */
#ifndef VT_TUNERD_WHOLENUM_H
#define VT_TUNERD_WHOLENUM_H

/* A whole decimal number: digits only, an optional leading '-', nothing
 * before or after (no blanks, no '+'). 0 with *out set when it is one and
 * lies in [lo, hi]; -1 when s is not such a number; -2 when it is one but
 * outside [lo, hi] (or outside a long). s is not NULL. */
int vt__parse_whole(const char *s, long lo, long hi, long *out);

#endif
