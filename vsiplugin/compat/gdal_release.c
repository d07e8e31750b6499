/* gdal_release.c: the table of GDAL releases' rules and the running one
 * (gdal_release.h). */
#include "compat/gdal_release.h"

#include <stdatomic.h>
#include <stdlib.h>

#include <gdal.h>

#define NO_CREDS_36_BEFORE                                                   \
    "AWS_SECRET_ACCESS_KEY and AWS_NO_SIGN_REQUEST configuration options "    \
    "not defined, and "
#define NO_CREDS_36_AFTER " not filled"
#define NO_CREDS_313_BEFORE                                                  \
    "No valid AWS credentials found. For authenticated requests, you need "   \
    "to set AWS_SECRET_ACCESS_KEY, AWS_ACCESS_KEY_ID or other configuration " \
    "options, or create a "
#define NO_CREDS_313_AFTER                                                   \
    " file. Consult https://gdal.org/en/stable/user/virtual_file_systems."    \
    "html#vsis3-aws-s3-files for more details. For unauthenticated requests " \
    "on public resources, set the AWS_NO_SIGN_REQUEST configuration option "  \
    "to YES."

#define AZ_NO_CREDS_36                                                       \
    "Missing AZURE_STORAGE_ACCOUNT+(AZURE_STORAGE_ACCESS_KEY or "             \
    "AZURE_STORAGE_SAS_TOKEN or AZURE_NO_SIGN_REQUEST) or "                   \
    "AZURE_STORAGE_CONNECTION_STRING configuration options or Azure CLI "     \
    "configuration file"
#define AZ_NO_CREDS_313                                                      \
    "InvalidCredentials: No valid Azure credentials found. For "              \
    "authenticated requests, you need to set AZURE_STORAGE_ACCOUNT, "         \
    "AZURE_STORAGE_ACCESS_KEY, AZURE_STORAGE_SAS_TOKEN, "                     \
    "AZURE_STORAGE_CONNECTION_STRING, or other configuration options. "       \
    "Consult https://gdal.org/en/stable/user/virtual_file_systems.html"       \
    "#vsiaz-microsoft-azure-blob-files for more details. For "                \
    "unauthenticated requests on public resources, set the "                  \
    "AZURE_NO_SIGN_REQUEST configuration option to YES."

/* One row per release that changed a rule, oldest first, each complete. A
 * release between two rows (3.8, 3.12) has the rules of the row below it. */
static const vt_gdal_release releases[] = {
    {.from = 3060000, .name = "3.6",
     .no_creds_before = NO_CREDS_36_BEFORE,
     .no_creds_after = NO_CREDS_36_AFTER,
     .az_no_creds = AZ_NO_CREDS_36},
    {.from = 3070000, .name = "3.7",
     .ca_first_wins_by_path = 1,
     .http_opts_by_path = 1,
     .no_creds_before = NO_CREDS_36_BEFORE,
     .no_creds_after = NO_CREDS_36_AFTER,
     .az_no_creds = AZ_NO_CREDS_36},
    {.from = 3100000, .name = "3.10",
     .ca_first_wins_by_path = 1,
     .http_opts_by_path = 1,
     .known_failure_says_status = 1,
     .no_creds_before = NO_CREDS_36_BEFORE,
     .no_creds_after = NO_CREDS_36_AFTER,
     .az_no_creds = AZ_NO_CREDS_36},
    {.from = 3110000, .name = "3.11",
     .ca_first_wins_by_path = 1,
     .http_opts_by_path = 1,
     .known_failure_says_status = 1,
     .open_listing_one_page = 1,
     .no_creds_before = NO_CREDS_36_BEFORE,
     .no_creds_after = NO_CREDS_36_AFTER,
     .az_no_creds = AZ_NO_CREDS_36},
    {.from = 3130000, .name = "3.13",
     .ca_first_wins_by_path = 1,
     .http_opts_by_path = 1,
     .known_failure_says_status = 1,
     .open_listing_one_page = 1,
     .network_failure_asked_again = 1,
     .read_of_missing_says = 1,
     .no_creds_before = NO_CREDS_313_BEFORE,
     .no_creds_after = NO_CREDS_313_AFTER,
     .az_ms_version_always = 1,
     .az_no_creds = AZ_NO_CREDS_313,
     .az_error_words = 1},
};

#define N_RELEASES (sizeof(releases) / sizeof(*releases))

static _Atomic int g_running;                        /* 0: not asked yet */
static const vt_gdal_release *_Atomic g_chosen;      /* NULL: not chosen */

const vt_gdal_release *vt__gdal_release_for(int version_num)
{
    const vt_gdal_release *r = &releases[0];

    for (size_t i = 1; i < N_RELEASES; i++)
        if (version_num >= releases[i].from)
            r = &releases[i];
    return r;
}

int vt__gdal_release_running(void)
{
    int v = atomic_load(&g_running);

    if (!v) { /* two threads may both ask: the same answer */
        v = atoi(GDALVersionInfo("VERSION_NUM"));
        atomic_store(&g_running, v);
    }
    return v;
}

const vt_gdal_release *vt__gdal_release(void)
{
    const vt_gdal_release *r = atomic_load(&g_chosen);

    if (!r) {
        r = vt__gdal_release_for(vt__gdal_release_running());
        atomic_store(&g_chosen, r);
    }
    return r;
}

void vt__gdal_release_set(int version_num)
{
    atomic_store(&g_chosen, version_num ? vt__gdal_release_for(version_num)
                                        : vt__gdal_release_for(
                                              vt__gdal_release_running()));
}
