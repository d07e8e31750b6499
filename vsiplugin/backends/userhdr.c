/* userhdr.c: see userhdr.h. */
#include "backends/userhdr.h"

#include "backends/s3/s3_int.h"

char **vt__user_headers(const char *path)
{
    return vt__s3_user_headers(path);
}

void vt__user_headers_free(char **h)
{
    vt__s3_headers_free(h);
}
