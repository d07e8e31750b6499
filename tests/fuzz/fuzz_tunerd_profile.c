/* fuzz_tunerd_profile.c: libFuzzer target for tunerd's platform profile
 * files (tunerd/platform.c vt_platform_parse: profiles/NAME.profile, or any
 * directory --profiles / TUNERD_PROFILES_DIR names). The text sits in a
 * buffer of exactly its length (ASan sees any read past it). Accepted:
 * strings that fit their fields; refused: one "<profile>:line: message"
 * line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vt_platform p;
    char err[512];
    int rc = vt_platform_parse(NULL, (const char *)data, size, &p, err,
                               sizeof(err)); /* NULL: any name */

    if (memchr(err, '\0', sizeof(err)) == NULL)
        abort();
    if (rc != 0 && (rc != -1 || strncmp(err, "<profile>:", 10) != 0 ||
                    strchr(err, '\n')))
        abort();
    if (rc == 0 && (memchr(p.name, '\0', sizeof(p.name)) == NULL ||
                    memchr(p.note, '\0', sizeof(p.note)) == NULL ||
                    p.n_env < 0 || p.n_env > VT_PLATFORM_MAX_ENV))
        abort();
    return 0;
}
