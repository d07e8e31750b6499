/* size_forms.h: size values, good and bad, that the plugin (test_config.c:
 * VSITUNE_CACHE_SIZE read through options.c's row) and tunerd
 * (test_tunerd_sizing.c: a kept VSITUNE_CACHE_SIZE, vt_kept_bytes) must
 * read alike: taken (ok, with value) or refused (the plugin then warns and
 * uses its default; tunerd ignores the kept value). Both use
 * common/sizeparse.c within common/defaults.h's range; the list is what
 * that gives, written out so that either side drifting fails. "" is left
 * out: it is "unset" for the plugin. */
#ifndef VT_TEST_SIZE_FORMS_H
#define VT_TEST_SIZE_FORMS_H

#include <stdint.h>

static const struct size_form {
    const char *text;
    int ok;
    uint64_t value;
} size_forms[] = {
    {"0", 1, 0},
    {"1", 1, 1},
    {"65536", 1, 65536},
    {" 64M ", 0, 0},
    {"64M", 1, 64u << 20},
    {"64m", 1, 64u << 20},
    {"64MB", 1, 64u << 20},
    {"64mb", 1, 64u << 20},
    {"64K", 1, 64u << 10},
    {"64KB", 1, 64u << 10},
    {"1G", 1, 1u << 30},
    {"1GB", 1, 1u << 30},
    {"1024G", 1, (uint64_t)1 << 40},
    {"1025G", 0, 0},
    {"1099511627776", 1, (uint64_t)1 << 40},
    {"1099511627777", 0, 0},
    {"64 M", 1, 64u << 20},
    {"64MiB", 0, 0},
    {"64KiB", 0, 0},
    {"1GiB", 0, 0},
    {"1T", 0, 0},
    {"1TB", 0, 0},
    {"1TiB", 0, 0},
    {"64%", 0, 0},
    {"64M B", 0, 0},
    {"64B", 0, 0},
    {"-1", 0, 0},
    {"+1", 0, 0},
    {"1.5M", 0, 0},
    {"0x10", 0, 0},
    {" ", 0, 0},
    {"M", 0, 0},
    {"64MM", 0, 0},
    {"nan", 0, 0},
    {"inf", 0, 0},
    {"18446744073709551615", 0, 0},
    {"18446744073709551616", 0, 0},
    {"17179869184G", 0, 0},
    {"99999999999999999999", 0, 0},
    {"16777216M", 0, 0},
    {"4294967296K", 0, 0},
    {"\t8K\n", 0, 0},
};
#define N_SIZE_FORMS (sizeof size_forms / sizeof size_forms[0])

#endif
