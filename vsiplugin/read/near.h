/* near.h: how far an object's first GET reaches, learned per directory
 * (near.c says why). */
#ifndef VT_NEAR_H
#define VT_NEAR_H

#include <stddef.h>
#include <stdint.h>

/* Bytes the first GET of an object whose table id is id should ask for:
 * header (VSITUNE_HEADER_SIZE), or more when the objects opened last in the
 * same directory (id up to its last '/') went on to read data ending past it
 * but within max (VSITUNE_FIRST_READ_MAX); never more than max, never less
 * than header. Thread-safe; takes the module's lock, no I/O. */
uint64_t vt__near_first_read(const char *id, uint64_t header, uint64_t max);

/* An object of id's directory read, for the first time past its header
 * size, ranges reaching [start, end). bs: the cache block size (what is
 * learned is rounded up to it). A read starting at or past max, or ending
 * past it, is far: it lowers what the directory's next opens ask. Call once
 * per object (vt__near_once). Thread-safe; takes the module's lock. */
void vt__near_note(const char *id, uint64_t start, uint64_t end,
                   uint64_t max, size_t bs);

/* 1 for the first caller on *flag (an object's), 0 for every later one.
 * Lock-free. */
int vt__near_once(int *flag);

#endif
