/* emit.c: the eight output formats of `tunerd profile` (see emit.h).
 *
 * Quoting rules, one per grammar:
 *  shell      single quotes; ' becomes '\''
 *  dotenv     double quotes; \ " $ ` escaped with a backslash (bash-safe)
 *  json       RFC 8259 string escapes
 *  terraform  HCL string; \ and " escaped, ${ and %{ doubled to $${ %%{
 *  dockerfile ENV k="v"; \ " $ escaped with a backslash
 *  k8s-yaml   YAML double-quoted scalar; \ and " escaped
 *  env        raw (docker --env-file takes the rest of the line verbatim)
 * Values never contain newlines (profiles are line based, the rest are
 * numbers), but every writer still escapes control characters it can. */
#include "emit.h"

#include <string.h>

#include "defaults.h" /* which prefixes the plugin takes over unless told */

static const char *const fmt_names[VT_FMT_COUNT] = {
    "env", "shell", "dotenv", "json", "lambda-json", "terraform", "dockerfile",
    "k8s-yaml"
};

int vt_format_parse(const char *name, vt_format *out)
{
    for (int i = 0; i < VT_FMT_COUNT; i++)
        if (strcmp(name, fmt_names[i]) == 0) {
            *out = (vt_format)i;
            return 0;
        }
    return -1;
}

const char *vt_format_list(void)
{
    return "env, shell, dotenv, json, lambda-json, terraform, dockerfile, k8s-yaml";
}

void vt__json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Backslash-escapes every char in `special` inside double quotes. */
static void put_dq(FILE *f, const char *s, const char *special)
{
    fputc('"', f);
    for (; *s; s++) {
        if (strchr(special, *s))
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void put_hcl_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((*s == '$' || *s == '%') && s[1] == '{')
            fprintf(f, "%c%c", *s, *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void put_sq(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    }
    fputc('\'', f);
}

/* The reads the plan's vsitune settings apply to: GDAL's prefixes vsitune
 * serves, the option that decides it (NULL: no such option in this build,
 * the prefix stays GDAL's) and whether it does by default. */
static const struct backend_row {
    const char *prefix, *backend, *knob;
    int on;
} backends[] = {
    {"/vsis3/", "s3", "VSITUNE_TAKEOVER", VT_DEFAULT_TAKEOVER},
    {"/vsigs/", "gs", "VSITUNE_TAKEOVER_GS", VT_DEFAULT_TAKEOVER_GS},
    {"/vsiaz/", "az", "VSITUNE_TAKEOVER_AZ", VT_DEFAULT_TAKEOVER_AZ},
    {"/vsicurl/", "curl", "VSITUNE_TAKEOVER_CURL", VT_DEFAULT_TAKEOVER_CURL},
};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

/* The comment line naming them: "# vsitune reads /vsis3/ (...), ...". */
static void backends_line(FILE *f, const char *lead, const vt_emit_ctx *c)
{
    const char *sep = "";

    if (!c->in->plugin) {
        fprintf(f, "%s no vsitune: GDAL's own handlers read /vsis3/, /vsigs/, /vsiaz/, "
                "/vsicurl/; GDAL_CACHEMAX applies to every read\n", lead);
        return;
    }
    fprintf(f, "%s vsitune's cache and connection pool apply to the reads it serves: ", lead);
    for (size_t i = 0; i < N_BACKENDS; i++) {
        const struct backend_row *b = &backends[i];
        if (!b->knob)
            continue;
        fprintf(f, "%s%s (%s by default; %s=%s: %s)", sep, b->prefix, b->on ? "on" : "off",
                b->knob, b->on ? "NO" : "YES", b->on ? "off" : "on");
        sep = ", ";
    }
    int gdal_only = 0;                /* prefixes this build cannot serve */
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (!backends[i].knob)
            fprintf(f, "%s%s", gdal_only++ ? " " : "; ", backends[i].prefix);
    fprintf(f, "%s; GDAL_CACHEMAX applies to every read\n", gdal_only ? " stays GDAL's" : "");
}

/* One-line summary used as a comment header. */
static void summary(FILE *f, const char *lead, const vt_emit_ctx *c)
{
    fprintf(f, "%s tunerd %s: %s %ld MiB, %.2f vCPU, %s: %d %s x %d thread(s), "
            "GDAL_CACHEMAX=%ld MiB each\n", lead, VT_VERSION, c->plat->name,
            c->in->memory_mb, c->s->vcpu, vt_workload_name(c->in->workload),
            c->s->processes, c->s->processes == 1 ? "process" : "processes",
            c->s->threads, c->s->cachemax_mb);
    backends_line(f, lead, c);
}

static void emit_json(FILE *f, const vt_emit_ctx *c)
{
    const vt_sizing *s = c->s;
    const vt_platform *p = c->plat;

    fputs("{\n  \"tunerd_version\": ", f);
    vt__json_str(f, VT_VERSION);
    fputs(",\n  \"platform\": ", f);
    vt__json_str(f, p->name);
    fputs(",\n  \"platform_title\": ", f);
    vt__json_str(f, p->title);
    fprintf(f, ",\n  \"memory_mb\": %ld,\n  \"memory_source\": ", c->in->memory_mb);
    vt__json_str(f, c->memory_source ? c->memory_source : "--memory");
    fprintf(f, ",\n  \"vcpu\": %.2f,\n  \"vcpu_source\": ", s->vcpu);
    vt__json_str(f, s->vcpu_source);
    fprintf(f, ",\n  \"workload\": \"%s\",\n  \"plugin\": %s,\n",
            vt_workload_name(c->in->workload), c->in->plugin ? "true" : "false");
    fprintf(f, "  \"workers\": %d,\n  \"threads_per_worker\": %d,\n"
               "  \"worker_kind\": \"%s\",\n  \"start_method\": \"%s\",\n"
               "  \"ipc\": \"%s\",\n  \"max_workers\": %d,\n  \"gdal_cachemax_mb\": %ld,\n"
               "  \"range_cache_mb\": %ld,\n  \"shared_cache_mb\": %ld,\n"
               "  \"gdal_num_threads\": %d,\n  \"minimal\": %s,\n",
            s->processes, s->threads, s->kind, s->start_method, s->ipc, s->max_workers,
            s->cachemax_mb, s->range_cache_mb, s->shared_cache_mb, s->gdal_num_threads,
            s->minimal ? "true" : "false");
    fprintf(f, "  \"ledger\": {\n    \"memory_mb\": %ld,\n    \"rows\": [\n",
            c->in->memory_mb);
    for (int i = 0; i < s->n_rows; i++) {
        fputs("      {\"item\": ", f);
        vt__json_str(f, s->rows[i].item);
        fprintf(f, ", \"each_mb\": %ld, \"count\": %d, \"total_mb\": %ld}%s\n",
                s->rows[i].each_mb, s->rows[i].count, s->rows[i].total_mb,
                i + 1 < s->n_rows ? "," : "");
    }
    fprintf(f, "    ],\n    \"total_mb\": %ld,\n    \"free_mb\": %ld,\n    \"fits\": %s\n"
               "  },\n", s->total_mb, s->free_mb, s->free_mb >= 0 ? "true" : "false");
    fputs("  \"platform_limits\": {\"tmp_dir\": ", f);
    vt__json_str(f, p->tmp_dir);
    fprintf(f, ", \"tmp_size_mb\": %ld, \"time_limit_s\": %ld, "
               "\"memory_min_mb\": %ld, \"memory_max_mb\": %ld},\n",
            p->tmp_size_mb, p->time_limit_s, p->memory_min_mb, p->memory_max_mb);
    fputs("  \"not_set\": {\"VSI_CACHE\": \"on GDAL 3.6.2 VSI_CACHE=TRUE adds a range "
          "GET to every open (measured); set it only where you measured it pays\"},\n", f);
    fputs("  \"backends\": [", f);
    for (size_t i = 0; c->in->plugin && i < N_BACKENDS; i++) {
        const struct backend_row *b = &backends[i];
        fprintf(f, "%s\n    {\"prefix\": \"%s\", \"backend\": \"%s\", \"knob\": ", i ? "," : "",
                b->prefix, b->backend);
        if (b->knob)
            vt__json_str(f, b->knob);
        else
            fputs("null", f);
        fprintf(f, ", \"on_by_default\": %s}", b->on ? "true" : "false");
    }
    fputs(c->in->plugin ? "\n  ],\n" : "],\n", f);
    fputs("  \"note\": ", f);
    vt__json_str(f, p->note);
    fputs(",\n  \"env\": {\n", f);
    for (int i = 0; i < c->env->n; i++) {
        fputs("    ", f);
        vt__json_str(f, c->env->vars[i].name);
        fputs(": ", f);
        vt__json_str(f, c->env->vars[i].value);
        fputs(i + 1 < c->env->n ? ",\n" : "\n", f);
    }
    fputs("  }\n}\n", f);
}

int vt_emit(FILE *f, vt_format fmt, const vt_emit_ctx *c)
{
    const vt_envblock *e = c->env;

    switch (fmt) {
    case VT_FMT_ENV:
        for (int i = 0; i < e->n; i++)
            fprintf(f, "%s=%s\n", e->vars[i].name, e->vars[i].value);
        break;
    case VT_FMT_SHELL:
        summary(f, "#", c);
        for (int i = 0; i < e->n; i++) {
            fprintf(f, "export %s=", e->vars[i].name);
            put_sq(f, e->vars[i].value);
            fputc('\n', f);
        }
        break;
    case VT_FMT_DOTENV:
        summary(f, "#", c);
        for (int i = 0; i < e->n; i++) {
            fprintf(f, "%s=", e->vars[i].name);
            put_dq(f, e->vars[i].value, "\\\"$`");
            fputc('\n', f);
        }
        break;
    case VT_FMT_JSON:
        emit_json(f, c);
        break;
    case VT_FMT_LAMBDA_JSON:
        fputs("{\n  \"Variables\": {\n", f);
        for (int i = 0; i < e->n; i++) {
            fputs("    ", f);
            vt__json_str(f, e->vars[i].name);
            fputs(": ", f);
            vt__json_str(f, e->vars[i].value);
            fputs(i + 1 < e->n ? ",\n" : "\n", f);
        }
        fputs("  }\n}\n", f);
        break;
    case VT_FMT_TERRAFORM:
        summary(f, "#", c);
        fputs("locals {\n  vsitune_env = {\n", f);
        for (int i = 0; i < e->n; i++) {
            fprintf(f, "    %s = ", e->vars[i].name);
            put_hcl_str(f, e->vars[i].value);
            fputc('\n', f);
        }
        fputs("  }\n}\n", f);
        break;
    case VT_FMT_DOCKERFILE:
        summary(f, "#", c);
        for (int i = 0; i < e->n; i++) {
            fprintf(f, "ENV %s=", e->vars[i].name);
            put_dq(f, e->vars[i].value, "\\\"$");
            fputc('\n', f);
        }
        break;
    case VT_FMT_K8S_YAML:
        summary(f, "#", c);
        fputs("env:\n", f);
        for (int i = 0; i < e->n; i++) {
            fprintf(f, "  - name: %s\n    value: ", e->vars[i].name);
            put_dq(f, e->vars[i].value, "\\\"");
            fputc('\n', f);
        }
        break;
    default:
        return -1;
    }
    if (fflush(f) != 0 || ferror(f))
        return -1;
    return 0;
}
