/* stats.h: vsitune's counters as one JSON document.
 *
 * Three ways out:
 * - live, in the process: the VSITUNE driver's metadata item "STATS"
 *   (gdal.GetDriverByName("VSITUNE").GetMetadataItem("STATS"));
 * - published for other processes: with VSITUNE_STATS_DIR set, the file
 *   <dir>/vsitune-<pid>.json is rewritten (atomically, by rename) at most once
 *   a second while the process reads, and at exit; `tunerd stats` and
 *   `tunerd watch` read it. A process killed by the OOM killer leaves its
 *   last counters behind, which is the point; the exit dump's document
 *   says "exited": true, so a reader can tell a clean exit from a kill;
 * - at exit, to the file named by VSITUNE_STATS_FILE. */
#ifndef VT_STATS_H
#define VT_STATS_H

#include <stddef.h>

/* Write the JSON document into buf (always NUL-terminated). Returns the
 * length it needed (like snprintf). Thread-safe. */
size_t vt__stats_json(char *buf, size_t len);

/* Arrange for the exit dump (idempotent). */
void vt__stats_install_exit_dump(void);

/* Publish to VSITUNE_STATS_DIR if it is set and the last publication is at
 * least a second old. Cheap when unset. Any thread; never blocks on a lock
 * held across I/O. */
void vt__stats_tick(void);

#endif
