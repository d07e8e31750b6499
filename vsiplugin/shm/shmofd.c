/* shmofd.c: OFD locks on single bytes of the segment's file (see shmofd.h):
 * compiled by the plugin and by the watcher program, which links only libc. */
#include "shm/shmofd.h"

#include <fcntl.h>
#include <string.h>

/* fl describes one byte of the file, locked as type. */
static void one_byte(struct flock *fl, short type, off_t byte)
{
    memset(fl, 0, sizeof *fl);
    fl->l_type = type;
    fl->l_whence = SEEK_SET;
    fl->l_start = byte;
    fl->l_len = 1;
}

int vt__shm_ofd(int fd, int cmd, short type, off_t byte)
{
    struct flock fl;
    one_byte(&fl, type, byte);
    return fcntl(fd, cmd, &fl);
}

/* 1 when some other open file description holds a lock on byte. */
int vt__shm_ofd_held(int fd, off_t byte)
{
    struct flock fl;
    one_byte(&fl, F_WRLCK, byte);
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0)
        return 1; /* cannot tell: assume alive (waits stay bounded) */
    return fl.l_type != F_UNLCK;
}
