/* shmfit.h: how big a shared-cache segment may be on a given /dev/shm.
 *
 * Pure arithmetic, shared by the plugin (shmseg.c sizes the segment it
 * creates) and tunerd (`tunerd detect` shows what the plugin would use).
 * Containers often mount a 64 MB /dev/shm, and other programs use it too
 * (Python's multiprocessing, PyTorch): the segment takes at most half of
 * the file system and nine tenths of what is free. */
#ifndef VT_SHMFIT_H
#define VT_SHMFIT_H

#include <stddef.h>
#include <stdint.h>

/* Smallest segment worth sharing; below it the per-process cache is used. */
#define VT_SHM_MIN_SIZE (8u << 20)

/* The segment size to use for `asked` bytes on a file system of `total`
 * bytes with `avail` free: at most half of it and nine tenths of what is
 * free, whole blocks; 0 when that is below VT_SHM_MIN_SIZE. why says so
 * ("asked 256 MiB, /dev/shm has 64 MiB (64 MiB free): fitted to 32 MiB").
 * dir names the file system in that text. */
uint64_t vt__shm_fit(uint64_t asked, uint64_t total, uint64_t avail,
                     uint64_t block_size, const char *dir, char *why,
                     size_t whylen);

#endif
