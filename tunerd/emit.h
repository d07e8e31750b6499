/* emit.h: render a profile in the format a deployment tool takes.
 *
 * env (KEY=value lines, docker --env-file), shell (export KEY='v'), dotenv
 * (KEY="v"), json (everything, with the ledger), lambda-json ({"Variables":
 * ...} for `aws lambda update-function-configuration --environment`),
 * terraform (a locals block), dockerfile (ENV lines), k8s-yaml (a container
 * env: list). Every writer quotes for its own grammar; the integration tests
 * parse each one with a real parser or a strict grammar. */
#ifndef VT_TUNERD_EMIT_H
#define VT_TUNERD_EMIT_H

#include <stdio.h>

#include "envblock.h"
#include "platform.h"
#include "sizing.h"

typedef enum vt_format {
    VT_FMT_ENV = 0,
    VT_FMT_SHELL,
    VT_FMT_DOTENV,
    VT_FMT_JSON,
    VT_FMT_LAMBDA_JSON,
    VT_FMT_TERRAFORM,
    VT_FMT_DOCKERFILE,
    VT_FMT_K8S_YAML,
    VT_FMT_COUNT
} vt_format;

/* Everything a writer may show. All pointers borrowed for the call. */
typedef struct vt_emit_ctx {
    const vt_platform *plat;
    const vt_sizing_in *in;
    const vt_sizing *s;
    const vt_envblock *env;
    const char *memory_source; /* where --memory came from ("--memory", "detected: ...") */
} vt_emit_ctx;

/* Parses a format name; returns 0 and sets *out, or -1. */
int vt_format_parse(const char *name, vt_format *out);

/* "env, shell, dotenv, json, lambda-json, terraform, dockerfile, k8s-yaml" */
const char *vt_format_list(void);

/* Writes the profile to f. Returns 0, or -1 on a write error (errno set). */
int vt_emit(FILE *f, vt_format fmt, const vt_emit_ctx *ctx);

/* Writes s as a JSON string (RFC 8259 escapes, quotes included); shared by
 * every JSON writer of tunerd. */
void vt__json_str(FILE *f, const char *s);

#endif
