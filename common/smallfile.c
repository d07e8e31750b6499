/* smallfile.c: the one bounded reader of a small file whose path comes
 * from outside (smallfile.h); the plugin reads its cgroup's files with it,
 * tunerd a counters file's oom_file. */
#include "smallfile.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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
