/* textfile.c: the one bounded small-file reader of tunerd (textfile.h). */
#include "textfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

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

long vt__read_regular(const char *path, char *buf, size_t cap)
{
    struct stat st;
    ssize_t n;
    int fd;

    if (cap == 0) {
        errno = EINVAL;
        return -1;
    }
    buf[0] = '\0';
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return (long)n;
}
