/* fuzz_options.c: libFuzzer target for the numeric option parsers
 * (config.c): vt__parse_num and vt__parse_size on any bytes, and every row
 * of the option table read with the input as its value: never a crash, a
 * parsed number always finite, every option's value within its row's range
 * (NaN, infinities, overflow and garbage give the default); every boolean
 * and enum row read with vt__opt_choice, its answer one of its values. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_error.h>

#include "base/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    char *s = malloc(size + 1);
    double d;
    uint64_t n;

    if (!s)
        return 0;
    if (!quiet) {
        CPLSetErrorHandler(CPLQuietErrorHandler);
        quiet = 1;
    }
    memcpy(s, data, size);
    s[size] = '\0';
    if (vt__parse_num(s, &d) == 0 && !isfinite(d))
        abort();
    (void)vt__parse_size(s, &n);
    for (int id = 0; id < VT_OPT_COUNT; id++) {
        const struct vt_opt_def *o = &vt__opts[id];
        double v;

        if (o->kind == VT_OPT_STRING)
            continue; /* read by name, as given */
        CPLSetConfigOption(o->name, s);
        if (o->kind == VT_OPT_BOOL || o->kind == VT_OPT_ENUM) {
            int c = vt__opt_choice("b/k", id, NULL), n = 2;
            if (o->kind == VT_OPT_ENUM)
                for (n = 0; o->values[n]; n++)
                    ;
            if (c < 0 || c >= n)
                abort();
        } else {
            v = o->kind == VT_OPT_SIZE ? (double)vt__opt_size("b/k", id)
                                       : vt__opt_num("b/k", id);
            if (!(v >= o->min && v <= o->max))
                abort();
        }
        CPLSetConfigOption(o->name, NULL);
    }
    free(s);
    return 0;
}
