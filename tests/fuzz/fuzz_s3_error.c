/* fuzz_s3_error.c: libFuzzer target for the S3/STS XML scanner (xmlscan.c)
 * on error bodies: the input is not NUL-terminated (ASan sees any read past
 * it), values are bounded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmlscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const tags[] = {"Code", "Message", "Region", "Endpoint",
                                       "ActualObjectSize", "AccessKeyId"};
    for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
        char *v = vt__xml_tag((const char *)data, size, tags[i]);
        if (v && strlen(v) > VT_XML_MAX_VALUE)
            abort();
        free(v);
    }
    return 0;
}
