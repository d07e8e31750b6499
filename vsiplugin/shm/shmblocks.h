/* shmblocks.h: the blocks part of the shared segment as shmcache.c works
 * on it: the hash index of descriptors, the free lists of descriptors and
 * data slots, the slot owners and the LIRS glue, for shmcache.c only (and
 * the blocks part's initialisation and repair, declared in shmcache.h).
 *
 * Every function here runs with the blocks lock (hdr->blocks_mu) held,
 * except vt__shmb_desc_check and vt__shmb_slot_data (pure) and the checks
 * vt__shmb_slot_of / vt__shmb_owned_by, which any thread may call. Every
 * index read from the segment is checked (shm_int.h); a bad one turns the
 * segment off for this process (vt__shm_off) and the call answers NIL (-1)
 * or 0. */
#ifndef VT_SHMBLOCKS_H
#define VT_SHMBLOCKS_H

#include <stdint.h>

#include "cache/lirs.h"
#include "shm/shmseg.h"

/* The data of slot `slot` (checked by the caller: vt__shmb_slot_of). */
unsigned char *vt__shmb_slot_data(vt_shm *s, int32_t slot);

/* A data slot index read from the segment, checked: slot or NIL. */
int32_t vt__shmb_slot_of(vt_shm *s, int32_t v);

/* LIRS runs on a copy of the segment's list heads (lirs_in), written back
 * after (lirs_out, which turns the segment off when LIRS found a bad link). */
vt_lirs *vt__shmb_lirs_in(vt_shm *s, vt_lirs *l);
void vt__shmb_lirs_out(vt_shm *s, vt_lirs *l);

/* The descriptor named digest + index, or NIL. */
int32_t vt__shmb_find(vt_shm *s, const uint8_t *digest, uint64_t index);

/* Descriptor i (named) joins its hash chain. */
void vt__shmb_hash_insert(vt_shm *s, int32_t i);

/* Descriptor i (no data, out of LIRS) becomes FREE. */
void vt__shmb_desc_free(vt_shm *s, int32_t i);

/* LIRS's "let go of this ghost" callback (ctx: the vt_shm). */
void vt__shmb_gone(void *ctx, int32_t i);

/* A LIRS node in no list. */
void vt__shmb_lirs_node_clear(vt_lirs_node *n);

/* 1 when slot (checked) is held by descriptor i (NIL: by none), else 0 and
 * the segment is off. */
int vt__shmb_owned_by(vt_shm *s, int32_t slot, int32_t i);

/* Slot `slot` (checked) joins the free list. */
void vt__shmb_data_push(vt_shm *s, int32_t slot);

/* A data slot for a new fill (a free one, a fresh one, else the LIRS
 * victim's; an LIR block's only when lir_too), or NIL. */
int32_t vt__shmb_data_alloc(vt_shm *s, int lir_too);

/* A free descriptor, or NIL. */
int32_t vt__shmb_desc_alloc(vt_shm *s);

/* The check word of a READY descriptor (pure). */
uint32_t vt__shmb_desc_check(int32_t slot, uint32_t len, const uint8_t *digest,
                             uint64_t index);

#endif
