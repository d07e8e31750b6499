/* s3list.h: S3 ListObjects answers, parsed (pure, no I/O).
 *
 * vsitune lists only to answer GDAL's sibling question for files that may
 * have sidecars (listing.c): one page of the keys that start with a file's
 * stem. This module turns that XML page into entries. Safe on any bytes. */
#ifndef VT_S3LIST_H
#define VT_S3LIST_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct vt_list_entry {
    char *name;         /* the key's last component ("x.tif.ovr"); for a
                           common prefix the folder name without its '/' */
    uint64_t size;      /* 0 for a folder */
    long long mtime;    /* LastModified as Unix time (0: absent/unparsable) */
    char *etag;         /* with its quotes, or NULL */
    int is_dir;         /* from <CommonPrefixes> */
} vt_list_entry;

typedef struct vt_list_page {
    vt_list_entry *e;   /* malloc'd array of n entries, in answer order */
    size_t n;
    int truncated;      /* <IsTruncated>true</IsTruncated>: more keys exist */
    int marker;         /* the directory's own key ("dir/") was listed: an
                           empty folder made by mkdir */
} vt_list_page;

/* Parse a ListObjects (v1 or v2) answer. dir is the listed "directory"
 * ("dir/sub/" or "" for the bucket root): only keys directly in it are kept
 * (a key "dir/sub/" itself, the folder marker, is skipped). On success
 * *out owns its entries (vt__list_page_clear). VT_EPROTO when body is not a
 * ListBucketResult. */
vt_err vt__s3_parse_list(const char *body, size_t len, const char *dir,
                         vt_list_page *out);
void vt__list_page_clear(vt_list_page *p);

#endif
