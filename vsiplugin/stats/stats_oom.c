/* stats_oom.c: the cgroup oom_kill count (stats_oom.h).
 *
 * Plain file reads (common/smallfile.c), no allocation. The file is found
 * from /proc/self/cgroup: "N:...memory...:/path" (v1) names the memory group under
 * /sys/fs/cgroup/memory, "0::/path" (v2) under /sys/fs/cgroup. A v1 memory
 * line wins (a hybrid host keeps its limits there). Inside a container the
 * mount may show only the container's own group while /proc/self/cgroup still
 * names the host's path: then the mount's top-level file is the group's. */
#include "stats/stats_oom.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smallfile.h" /* vt__read_regular: shared with tunerd */

int vt__stats_oom_parse(const char *text, uint64_t *kills)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        char *end;
        unsigned long long v;
        if (strncmp(p, "oom_kill ", 9) != 0)
            continue;
        v = strtoull(p + 9, &end, 10);
        if (end == p + 9 || (*end != '\n' && *end != '\0'))
            return -1;
        *kills = (uint64_t)v;
        return 0;
    }
    return -1;
}

/* Only characters a JSON string and a Prometheus label take as they are. */
static int plain(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == '"' || *s == '\\' || (unsigned char)*s >= 0x7f)
            return 0;
    return 1;
}

static int try_file(const char *path, char *file, size_t cap)
{
    char text[1024];
    uint64_t k;

    if (vt__read_regular(path, text, sizeof(text)) < 0 || vt__stats_oom_parse(text, &k) != 0 ||
        strlen(path) >= cap || !plain(path))
        return -1;
    snprintf(file, cap, "%s", path);
    return 0;
}

int vt__stats_oom_find(const char *sys_root, const char *cgroup_text, char *file,
                       size_t cap)
{
    char v1[1024] = "", v2[1024] = "", path[2048];
    int have_v1 = 0, have_v2 = 0;
    const char *p = cgroup_text;

    while (p && *p) {
        const char *nl = strchr(p, '\n'), *c1 = strchr(p, ':'), *c2;
        size_t linelen = nl ? (size_t)(nl - p) : strlen(p);
        if (c1 && (size_t)(c1 - p) < linelen && (c2 = memchr(c1 + 1, ':', linelen -
                                                            (size_t)(c1 + 1 - p)))) {
            size_t clen = (size_t)(c2 - c1 - 1), plen = linelen - (size_t)(c2 + 1 - p);
            int is_mem = 0;
            for (const char *c = c1 + 1; c < c2;) {
                const char *comma = memchr(c, ',', (size_t)(c2 - c));
                size_t l = comma ? (size_t)(comma - c) : (size_t)(c2 - c);
                is_mem |= l == 6 && strncmp(c, "memory", 6) == 0;
                c = comma ? comma + 1 : c2;
            }
            if (plen < sizeof(v1) && is_mem) {
                memcpy(v1, c2 + 1, plen);
                v1[plen] = '\0';
                have_v1 = 1;
            } else if (plen < sizeof(v2) && clen == 0) {
                memcpy(v2, c2 + 1, plen);
                v2[plen] = '\0';
                have_v2 = 1;
            }
        }
        p = nl ? nl + 1 : NULL;
    }
    if (have_v1) {
        const char *rel = strcmp(v1, "/") == 0 ? "" : v1;
        if (snprintf(path, sizeof(path), "%s/fs/cgroup/memory%s/memory.oom_control", sys_root,
                     rel) < (int)sizeof(path) && try_file(path, file, cap) == 0)
            return 0;
        snprintf(path, sizeof(path), "%s/fs/cgroup/memory/memory.oom_control", sys_root);
        if (try_file(path, file, cap) == 0)
            return 0;
    }
    if (have_v2) {
        const char *rel = strcmp(v2, "/") == 0 ? "" : v2;
        if (snprintf(path, sizeof(path), "%s/fs/cgroup%s/memory.events", sys_root, rel) <
                (int)sizeof(path) && try_file(path, file, cap) == 0)
            return 0;
        snprintf(path, sizeof(path), "%s/fs/cgroup/memory.events", sys_root);
        if (try_file(path, file, cap) == 0)
            return 0;
    }
    return -1;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t found_for;  /* the pid the file was found for (a fork child looks again) */
static char found[512];  /* "" when there is none */

int vt__stats_oom_read(char *file, size_t cap, uint64_t *kills)
{
    char text[1024], path[sizeof(found)];
    pid_t me = getpid();

    pthread_mutex_lock(&mu);
    if (found_for != me) {
        char cg[4096];
        found[0] = '\0';
        if (vt__read_regular("/proc/self/cgroup", cg, sizeof(cg)) > 0)
            (void)vt__stats_oom_find("/sys", cg, found, sizeof(found));
        found_for = me;
    }
    snprintf(path, sizeof(path), "%s", found);
    pthread_mutex_unlock(&mu);
    if (!path[0] || strlen(path) >= cap || vt__read_regular(path, text, sizeof(text)) < 0 ||
        vt__stats_oom_parse(text, kills) != 0)
        return -1;
    snprintf(file, cap, "%s", path);
    return 0;
}
