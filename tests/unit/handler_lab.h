/* handler_lab.h: the set-up test_handler.c and test_handler_io.c share on top
 * of http_lab.h: the loopback S3 started with the test's handler, GDAL's own
 * /vsis3/ code replaced by the test's fake (stock.h) and vsitune's VSI
 * callbacks installed on /vsitune/ over the S3 backend, as takeover.cpp
 * installs them. Header-only; not a test itself. Include after http_lab.h. */
#ifndef VT_HANDLER_LAB_H
#define VT_HANDLER_LAB_H

#include <cpl_vsi.h>

#include "gdal/handler.h"
#include "gdal/stock.h"

/* A cmocka group setup's body: 0, or -1 when the lab cannot listen or the
 * handler cannot be installed. stock lives as long as the test. */
static inline int handler_lab_setup(lab_handler handle, const vt_stock_callbacks *stock)
{
    VSIFilesystemPluginCallbacksStruct *cb;
    int rc;

    if (lab_start(handle))
        return -1;
    lab_as_s3();
    vt__stock_set_callbacks(stock);
    cb = VSIAllocFilesystemPluginCallbacksStruct();
    if (!cb)
        return -1;
    vt__handler_fill_callbacks(cb, &vt__backend_s3, NULL);
    rc = VSIInstallPluginHandler("/vsitune/", cb) != 0 ? -1 : 0;
    VSIFreeFilesystemPluginCallbacksStruct(cb);
    return rc;
}

#endif
