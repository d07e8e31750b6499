/* platform.h: a deployment platform as data (profiles/<name>.profile).
 *
 * Each platform (AWS Lambda, Cloud Run, Azure Functions, Kubernetes, a bare
 * host) differs only in numbers: how vCPU follows from memory, the memory
 * range it sells, where /tmp is, the time limit. Keeping them in small text
 * files means adding a platform is a data change, and tunerd validates those
 * files, reporting problems as "file:line: message". The file format is
 * documented in profiles/README.md and docs/tuning.md. */
#ifndef VT_TUNERD_PLATFORM_H
#define VT_TUNERD_PLATFORM_H

#include <stddef.h>

#define VT_PLATFORM_NAME_MAX 32
#define VT_PLATFORM_TEXT_MAX 256
#define VT_PLATFORM_MAX_ENV 8
#define VT_PLATFORM_MAX_DETECT 4
#define VT_PLATFORM_MAX_CPUS_ALLOWED 16

/* How a platform's vCPU count is decided. */
typedef enum vt_cpu_rule {
    VT_CPU_PER_MEMORY = 0, /* vcpu = memory_mb / mb_per_vcpu (Lambda) */
    VT_CPU_FIXED = 1,      /* vcpu = the profile's `vcpu` (Azure Consumption) */
    VT_CPU_GIVEN = 2       /* --cpus, else detected (Cloud Run, k8s, host) */
} vt_cpu_rule;

typedef struct vt_platform_env {
    char name[64];
    char value[VT_PLATFORM_TEXT_MAX];
} vt_platform_env;

/* One parsed profile. Plain data, no pointers: copy it freely. */
typedef struct vt_platform {
    char name[VT_PLATFORM_NAME_MAX];    /* equals the file's stem */
    char title[VT_PLATFORM_TEXT_MAX];
    char detect_env[VT_PLATFORM_MAX_DETECT][64]; /* any set -> this platform */
    int n_detect_env;
    char memory_env[64];                /* env var holding the tier in MB, or "" */
    long memory_min_mb;
    long memory_max_mb;
    vt_cpu_rule cpu_rule;
    long mb_per_vcpu;                   /* VT_CPU_PER_MEMORY */
    double vcpu;                        /* VT_CPU_FIXED */
    double max_vcpu;                    /* 0 = no cap */
    long max_mb_per_vcpu;               /* 0 = no rule (Cloud Run: 4096) */
    int cpus_allowed[VT_PLATFORM_MAX_CPUS_ALLOWED]; /* empty = any */
    int n_cpus_allowed;
    char tmp_dir[VT_PLATFORM_TEXT_MAX];
    long tmp_size_mb;                   /* 0 = unknown / disk */
    long time_limit_s;                  /* 0 = none */
    char plugin_dir[VT_PLATFORM_TEXT_MAX]; /* "" = tunerd's compiled-in dir */
    char stats_dir[VT_PLATFORM_TEXT_MAX];  /* VSITUNE_STATS_DIR; "" = not emitted */
    char start_method[16];              /* fork | forkserver | spawn */
    int shared_memory;                  /* 1 (default): /dev/shm is there, so the
                                           plugin's worker processes share one
                                           range cache; 0: none (Lambda) */
    vt_platform_env env[VT_PLATFORM_MAX_ENV]; /* extra variables to emit */
    int n_env;
    char note[VT_PLATFORM_TEXT_MAX];
} vt_platform;

/* Parses a profile from memory. `path` is only used in messages and to check
 * that `name` matches the file's stem (pass NULL to skip that check).
 * Returns 0 on success; on failure returns -1 and writes one line
 * "path:line: message" into err (always NUL-terminated). `out` is always
 * initialised. No allocation. */
int vt_platform_parse(const char *path, const char *text, size_t len,
                      vt_platform *out, char *err, size_t errlen);

/* Reads and parses <dir>/<name>.profile. Same contract as
 * vt_platform_parse; a missing file is an error naming the path. */
int vt_platform_load(const char *dir, const char *name, vt_platform *out,
                     char *err, size_t errlen);

/* The platforms shipped with tunerd, in detection order; NULL-terminated.
 * Any other <name>.profile in the profiles directory is a platform too
 * (tried after these, by name): a new profile file alone adds a platform. */
extern const char *const vt_platform_names[];

/* 1 when name can be a platform (a profile's stem): 1..31 bytes of
 * lower-case letters, digits, '-' and '_', starting with a letter. */
int vt_platform_name_ok(const char *name);

/* The platforms of dir in detection order: the shipped ones that have a
 * file, then the others sorted by name. Fills at most cap names; returns how
 * many, or -1 when dir cannot be listed. */
#define VT_PLATFORM_MAX_FILES 64
int vt_platform_list(const char *dir, char names[][VT_PLATFORM_NAME_MAX], int cap);

/* Chooses the profiles directory: `explicit_dir` when non-NULL, else
 * $TUNERD_PROFILES_DIR, else <dir of exe>/../share/vsitune/profiles, else the
 * compiled-in install dir, else the compiled-in source dir. The first that
 * holds host.profile wins; the result is copied into buf. Returns 0, or -1
 * with err set when none exists. */
int vt_platform_find_dir(const char *explicit_dir, char *buf, size_t buflen,
                         char *err, size_t errlen);

#endif
