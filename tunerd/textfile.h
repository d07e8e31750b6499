/* textfile.h: read a small text file (a /proc or /sys entry, a profile)
 * into a caller's buffer. Shared by detect.c and watch.c so there is one
 * bounded reader, not one per module. */
#ifndef VT_TUNERD_TEXTFILE_H
#define VT_TUNERD_TEXTFILE_H

#include <stddef.h>

/* Reads at most cap-1 bytes of path into buf and NUL-terminates it.
 * Returns the number of bytes read, or -1 (errno set) when the file cannot
 * be opened or read. No allocation. */
long vt__read_text(const char *path, char *buf, size_t cap);

/* For a path named by data tunerd did not write (a counters file's
 * oom_file): vt__read_regular, common/'s reader, which never blocks. */
#include "smallfile.h"

#endif
