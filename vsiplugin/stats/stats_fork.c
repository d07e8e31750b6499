/* stats_fork.c: a fork() child without exec, told from /proc (stats_fork.h).
 *
 * The kernel keeps the auxiliary vector execve() handed to a program in its
 * memory descriptor; fork() copies the descriptor, so a child that did not
 * exec shows its parent's vector byte for byte, and an exec'd one shows the
 * vector of its own exec. With address-space randomisation (the default on
 * Linux) two execs of even the same program get different AT_PHDR (a PIE's
 * base), AT_BASE (ld.so), AT_SYSINFO_EHDR (vDSO) and AT_RANDOM (the stack),
 * so equality is a fork. Without randomisation it is not proof, and the
 * answer is "no": the counters file then says what it said before (not a
 * fork child), never a fork the process did not make. */
#include "stats/stats_fork.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <unistd.h>

/* An auxiliary vector is a few hundred bytes (about 20 pairs of 8 bytes on
 * x86-64); more than this is not one. */
#define AUXV_MAX 4096

/* Reads the whole file into buf; its length, or -1 (unreadable, too long). */
static long read_whole(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    size_t got = 0;
    ssize_t n;

    if (fd < 0)
        return -1;
    while (got < cap && (n = read(fd, buf + got, cap - got)) > 0)
        got += (size_t)n;
    if (got == cap || n < 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return (long)got;
}

int vt__stats_fork_same_image(const char *self_auxv, const char *parent_auxv,
                              const char *randomize_file)
{
    char a[AUXV_MAX], b[AUXV_MAX], r[16];
    long na, nb;

    if (randomize_file) {
        long nr = read_whole(randomize_file, r, sizeof r);
        if (nr <= 0 || r[0] == '0')
            return 0; /* off, or unknown: no proof either way */
    }
    na = read_whole(self_auxv, a, sizeof a);
    nb = read_whole(parent_auxv, b, sizeof b);
    return na > 0 && na == nb && memcmp(a, b, (size_t)na) == 0;
}

int vt__stats_fork_child(void)
{
    char parent[64];
    int p = personality(0xffffffff); /* query only */

    if (p != -1 && (p & ADDR_NO_RANDOMIZE))
        return 0; /* setarch -R: every exec of a program looks alike */
    snprintf(parent, sizeof parent, "/proc/%ld/auxv", (long)getppid());
    return vt__stats_fork_same_image("/proc/self/auxv", parent,
                                     "/proc/sys/kernel/randomize_va_space");
}
