/* fuzz_aws_profile.c: libFuzzer target for the AWS profile provider as it
 * runs (creds_profile.c): the profile name, ~/.aws/credentials and
 * ~/.aws/config come from the input, "NAME\0CREDENTIALS\0CONFIG" (missing
 * parts: AWS_PROFILE unset, file absent), the files through memfds that
 * AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE name. Checks the
 * provider's contract: found (1) means both keys, -1 an error message, no
 * keys otherwise; source keys only for a role with a source_profile; and
 * everything is freed (ASan's leak check). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cpl_conv.h>

#include "creds.h"
#include "creds_int.h"

static int fd_creds = -1, fd_config = -1;

/* Replace the memfd's content; returns its /proc path in buf. */
static const char *put(int fd, const char *data, size_t len, char *buf,
                       size_t buflen)
{
    if (ftruncate(fd, 0) != 0 || (len && pwrite(fd, data, len, 0) != (ssize_t)len))
        abort();
    snprintf(buf, buflen, "/proc/self/fd/%d", fd);
    return buf;
}

/* The next part of data[0, size) from *at up to a NUL or the end; NULL
 * when none is left (*at past the end). */
static const char *part(const char *data, size_t size, size_t *at, size_t *len)
{
    const char *s, *z;
    if (*at > size)
        return NULL;
    s = data + *at;
    z = memchr(s, '\0', size - *at);
    *len = z ? (size_t)(z - s) : size - *at;
    *at += *len + 1;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data, *name, *ctext, *ftext;
    size_t at = 0, nlen = 0, clen = 0, flen = 0;
    char cpath[64], fpath[64], pname[128], notes[512], err[512], *region;
    struct vt_profile_hint hint;
    vt_creds out;
    int rc;

    if (fd_creds < 0) {
        fd_creds = memfd_create("credentials", 0);
        fd_config = memfd_create("config", 0);
        if (fd_creds < 0 || fd_config < 0)
            abort();
    }
    name = part(in, size, &at, &nlen);
    ctext = part(in, size, &at, &clen);
    ftext = part(in, size, &at, &flen);
    if (name && nlen > 0 && nlen < sizeof(pname)) {
        memcpy(pname, name, nlen);
        pname[nlen] = '\0';
        CPLSetConfigOption("AWS_PROFILE", pname);
    } else {
        CPLSetConfigOption("AWS_PROFILE", NULL);
    }
    CPLSetConfigOption("AWS_SHARED_CREDENTIALS_FILE",
                       ctext ? put(fd_creds, ctext, clen, cpath, sizeof(cpath))
                             : "/nonexistent/credentials");
    CPLSetConfigOption("AWS_CONFIG_FILE",
                       ftext ? put(fd_config, ftext, flen, fpath, sizeof(fpath))
                             : "/nonexistent/config");

    memset(&hint, 0, sizeof(hint));
    memset(&out, 0, sizeof(out));
    notes[0] = err[0] = '\0';
    rc = vt__creds_from_profile(&out, &hint, notes, sizeof(notes), err,
                                sizeof(err));
    if (rc == 1 && (!out.access_key || !*out.access_key || !out.secret_key ||
                    !*out.secret_key))
        abort();
    if (rc == -1 && err[0] == '\0')
        abort();
    if (rc != 1 && out.access_key)
        abort();
    if (hint.source.access_key && (!hint.role_arn || !hint.source_profile))
        abort();
    vt__creds_clear(&out);
    vt__profile_hint_clear(&hint);

    vt__creds_profile_region_reset(); /* the answer is cached per path */
    region = vt__creds_profile_region();
    if (region && (!*region || strlen(region) > size))
        abort();
    free(region);
    return 0;
}
