/* fuzz_tunerd_args.c: libFuzzer target for tunerd's command line parser
 * (tunerd/cli.c vt_cli_parse). The input is the argument list, NUL
 * separated, after argv[0]; each argument sits in a buffer of exactly its
 * length plus the NUL (ASan sees any read past it). The parser either
 * accepts (a known command, exec's command inside argv) or refuses with a
 * message; it never writes into argv. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_ARGS 40

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const commands[] = {"profile", "detect", "exec",
                                           "check-profiles", "watch", "stats"};
    char *argv[MAX_ARGS + 2], *copy[MAX_ARGS + 2], err[256];
    const char *in = (const char *)data;
    size_t at = 0, i;
    int argc = 1, rc, known = 0;
    vt_cli_opts o;

    argv[0] = strdup("tunerd");
    copy[0] = strdup("tunerd");
    while (at <= size && argc <= MAX_ARGS) {
        const char *z = memchr(in + at, '\0', size - at);
        size_t n = z ? (size_t)(z - (in + at)) : size - at;
        argv[argc] = malloc(n + 1);
        if (!argv[argc])
            abort();
        memcpy(argv[argc], in + at, n);
        argv[argc][n] = '\0';
        copy[argc] = strdup(argv[argc]);
        argc++;
        at += n + 1;
    }
    argv[argc] = copy[argc] = NULL;

    rc = vt_cli_parse(argc, argv, &o, err, sizeof(err));
    if (rc != VT_EXIT_OK && rc != VT_EXIT_USAGE)
        abort();
    /* (A message may hold a newline: it quotes the bad argument as given.) */
    if (memchr(err, '\0', sizeof(err)) == NULL)
        abort();
    if (rc == VT_EXIT_USAGE && err[0] == '\0')
        abort();
    if (rc == VT_EXIT_OK && !o.help && !o.version) {
        for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
            known |= o.command && strcmp(o.command, commands[i]) == 0;
        if (!known)
            abort();
        if (!strcmp(o.command, "exec") &&
            (!o.cmd || o.cmd <= argv || o.cmd >= argv + argc || !o.cmd[0]))
            abort();
    }
    for (i = 0; i < (size_t)argc; i++) {
        if (strcmp(argv[i], copy[i]) != 0)
            abort();
        free(argv[i]);
        free(copy[i]);
    }
    return 0;
}
