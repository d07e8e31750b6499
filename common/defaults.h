/* defaults.h: the defaults and ranges of the options both programs read,
 * in one place: the plugin reads them (base/config.h, options.c's table)
 * and tunerd plans with them (`tunerd detect` shows what the shared cache
 * would get, a kept VSITUNE_CACHE_SIZE is read within the plugin's range),
 * so the two never disagree. docs/configuration.md documents them (test_options holds
 * it to options.c's table, which takes its numbers from here). Pure. */
#ifndef VT_DEFAULTS_H
#define VT_DEFAULTS_H

#include <stdint.h>

#define VT_DEFAULT_CACHE_SIZE (32u * 1024 * 1024)  /* VSITUNE_CACHE_SIZE: a
                                         process's memory at most stock GDAL's where
                                         several workers fill their caches (issue 22,
                                         bench scenario 11: 64 MiB took 1.02x stock's
                                         PSS there; docs/configuration.md); tunerd's
                                         profiles give up to 64 MiB */
#define VT_MAX_CACHE_SIZE ((uint64_t)1 << 40)      /* its range's top, 1 TiB */
#define VT_DEFAULT_BLOCK_SIZE (16u * 1024)         /* VSITUNE_BLOCK_SIZE: GDAL's
                                         chunk size; a tile costs the blocks it
                                         touches (64 KiB: 1.17x stock's bytes on
                                         34 KB tiles, issue 22) */
#define VT_DEFAULT_HEADER_SIZE (64u * 1024)        /* VSITUNE_HEADER_SIZE */
#define VT_DEFAULT_MERGE_GAP (64u * 1024)          /* VSITUNE_MERGE_GAP */
#define VT_DEFAULT_MAX_REQUEST (16u * 1024 * 1024) /* VSITUNE_MAX_REQUEST_SIZE */
#define VT_DEFAULT_READAHEAD_MAX (8u * 1024 * 1024)  /* VSITUNE_READAHEAD_MAX */
#define VT_DEFAULT_FIRST_READ_MAX (256u * 1024)     /* VSITUNE_FIRST_READ_MAX */
#define VT_DEFAULT_META_TTL 300                    /* VSITUNE_METADATA_TTL, s */
#define VT_DEFAULT_NEGATIVE_TTL 30                 /* VSITUNE_NEGATIVE_TTL, s */
#define VT_DEFAULT_SHARED_CACHE 0     /* VSITUNE_SHARED_CACHE: tunerd turns it
                                         on for plans of several processes
                                         (it sizes it to the host's tier) */
#define VT_DEFAULT_SHARED_CACHE_SIZE (192u * 1024 * 1024) /* VSITUNE_SHARED_CACHE_SIZE:
                                         the host's segment for a tile service of 4 workers
                                         at most stock GDAL's memory (PSS of all workers),
                                         no slower than per-process caches (issue 22;
                                         docs/configuration.md) */
#define VT_MAX_SHARED_CACHE_SIZE ((uint64_t)1 << 44)      /* its range's top */
#define VT_DEFAULT_SHARED_WAIT 10                  /* VSITUNE_SHARED_CACHE_WAIT, s */
#define VT_DEFAULT_SHARED_META_TTL 30              /* VSITUNE_SHARED_METADATA_TTL, s */
#define VT_DEFAULT_SHM_DIR "/dev/shm"              /* VSITUNE_SHM_DIR */
#define VT_DEFAULT_SHM_POOL "default"              /* VSITUNE_SHARED_CACHE_NAME */
/* Which of GDAL's prefixes vsitune takes over unless told (the plugin's
 * option table; `tunerd profile` names them): 1 YES, 0 NO. */
#define VT_DEFAULT_TAKEOVER 1                      /* VSITUNE_TAKEOVER: /vsis3/ */
#define VT_DEFAULT_TAKEOVER_GS 1                   /* VSITUNE_TAKEOVER_GS: /vsigs/ */
#define VT_DEFAULT_TAKEOVER_AZ 1                   /* VSITUNE_TAKEOVER_AZ: /vsiaz/ */
#define VT_DEFAULT_TAKEOVER_CURL 1                 /* VSITUNE_TAKEOVER_CURL: /vsicurl/ */

#endif
