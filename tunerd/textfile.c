/* textfile.c: tunerd's bounded reader of the small text files it names
 * itself (textfile.h); a file named by outside data goes through
 * common/smallfile.c, which the plugin uses too. */
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
