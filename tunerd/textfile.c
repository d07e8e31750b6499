/* textfile.c: the one bounded small-file reader of tunerd (textfile.h). */
#include "textfile.h"

#include <errno.h>
#include <stdio.h>

long vt__read_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t n;
    long rc = -1;

    if (cap == 0) {
        errno = EINVAL;
        goto out;
    }
    buf[0] = '\0';
    if (!f)
        goto out;
    n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    if (ferror(f)) {
        errno = EIO;
        goto out;
    }
    rc = (long)n;
out:
    if (f)
        fclose(f);
    return rc;
}
