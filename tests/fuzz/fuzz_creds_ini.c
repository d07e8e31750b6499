/* fuzz_creds_ini.c: libFuzzer target for the INI parser of the AWS shared
 * credentials and config files (creds_parse.c vt__ini_get,
 * vt__ini_section). The input is the file, in a buffer of exactly its
 * length (ASan sees any read past it); a first line "#=NAME" picks one more
 * section to look up, so the fuzzer can reach matches of its own. A value is
 * a NUL-terminated copy of part of the text: never longer than it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/creds_parse.h"

static void check(char *v, size_t size)
{
    if (v && strlen(v) > size)
        abort();
    free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const sections[] = {"default", "profile default",
                                           "profile a b", "sso-session x", ""};
    static const char *const keys[] = {"aws_access_key_id",
                                       "aws_secret_access_key",
                                       "aws_session_token", "role_arn",
                                       "source_profile", "region", ""};
    const char *text = (const char *)data;
    char name[64];
    size_t i, j, n = 0, off, len;

    name[0] = '\0';
    if (size > 2 && text[0] == '#' && text[1] == '=') {
        while (n + 2 < size && n < sizeof(name) - 1 && text[n + 2] != '\n')
            n++;
        memcpy(name, text + 2, n);
        name[n] = '\0';
    }
    for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
        (void)vt__ini_section(text, size, sections[i], name, &off, &len);
        if (off + len > size)
            abort();
        for (j = 0; j < sizeof(keys) / sizeof(keys[0]); j++)
            check(vt__ini_get(text, size, sections[i], keys[j]), size);
    }
    if (n) {
        (void)vt__ini_section(text, size, name, NULL, &off, &len);
        if (off + len > size)
            abort();
        for (j = 0; j < sizeof(keys) / sizeof(keys[0]); j++)
            check(vt__ini_get(text, size, name, keys[j]), size);
    }
    return 0;
}
