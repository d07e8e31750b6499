/* stats.h: vsitune's counters as one JSON document.
 *
 * Read live through the VSITUNE driver's metadata item "STATS"
 * (gdal.GetDriverByName("VSITUNE").GetMetadataItem("STATS")), and written at
 * exit to the file named by VSITUNE_STATS_FILE when it is set (tunerd and the
 * benchmarks read it). */
#ifndef VT_STATS_H
#define VT_STATS_H

#include <stddef.h>

/* Write the JSON document into buf (always NUL-terminated). Returns the
 * length it needed (like snprintf). Thread-safe. */
size_t vt__stats_json(char *buf, size_t len);

/* Arrange for the exit dump (idempotent). */
void vt__stats_install_exit_dump(void);

#endif
