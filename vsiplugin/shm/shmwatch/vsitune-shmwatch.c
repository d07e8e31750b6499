/* vsitune-shmwatch: removes a shared-cache segment's name once the last
 * process attached to it is gone, however it went (exit, _exit, SIGKILL).
 *
 * Why a process: every attached process read-locks byte 0 of the segment
 * (an OFD lock, dropped by the kernel when the process dies), and the last
 * one to exit() removes the name itself; but fork()ed multiprocessing
 * workers leave with _exit() and run no exit handler, and a SIGKILL runs
 * nothing. This helper, started by the process that creates the segment
 * (shmseg.c), asks for a write lock on byte 0 and sleeps until the kernel
 * grants it, which is the moment no process is attached any more; then it
 * removes the name if it still names the same file, and exits. It holds an
 * exclusive lock on byte VT_SHM_LOCK_WATCHER while it waits, so there is one
 * watcher per segment. It maps nothing and links only libc (and shmofd.c,
 * the lock bytes' one home, which the plugin compiles too).
 *
 * usage: vsitune-shmwatch PATH DEV INO   (exit 0; 1 when not needed) */
#define _GNU_SOURCE 1 /* F_OFD_SETLK */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/shmofd.h" /* the lock bytes and calls, as the plugin's */

int main(int argc, char **argv)
{
    struct stat st, now;
    int fd, i;
    pid_t pid;

    if (argc != 4)
        return 2;
    /* Nobody's child: the spawner reaps our first process at once. */
    pid = fork();
    if (pid != 0)
        return pid < 0 ? 1 : 0;
    setsid();
    for (i = 3; i < 1024; i++)
        close(i);
    fd = open(argv[1], O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != geteuid() ||
        (unsigned long long)st.st_dev != strtoull(argv[2], NULL, 10) ||
        (unsigned long long)st.st_ino != strtoull(argv[3], NULL, 10))
        return 1;
    if (vt__shm_ofd(fd, F_OFD_SETLK, F_WRLCK, VT_SHM_LOCK_WATCHER) != 0)
        return 1; /* another watcher has it */
    if (vt__shm_ofd(fd, F_OFD_SETLKW, F_WRLCK, VT_SHM_LOCK_ATTACHED) != 0)
        return 1;
    if (stat(argv[1], &now) == 0 && now.st_dev == st.st_dev &&
        now.st_ino == st.st_ino)
        unlink(argv[1]);
    return 0;
}
