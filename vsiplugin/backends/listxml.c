/* listxml.c: see listxml.h. */
#include "backends/listxml.h"

#include "backends/s3/s3list.h"

vt_err vt__listxml_parse(const char *body, size_t len, const char *dir,
                         vt_list_page *out)
{
    return vt__s3_parse_list(body, len, dir, out);
}
