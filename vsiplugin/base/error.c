/* error.c: text for vt_err values (see error.h). */
#include "base/error.h"

const char *vt_strerror(vt_err err)
{
    switch (err) {
    case VT_OK: return "success";
    case VT_ENOMEM: return "out of memory";
    case VT_EINVAL: return "invalid argument";
    case VT_ENOTFOUND: return "not found";
    case VT_EACCESS: return "access denied";
    case VT_ECHANGED: return "object changed while being read";
    case VT_ETRANSIENT: return "transient server error, retries exhausted";
    case VT_EPROTO: return "malformed or truncated response";
    case VT_EHTTP: return "unexpected HTTP status";
    case VT_ECREDS: return "no usable AWS credentials";
    case VT_ESHUTDOWN: return "I/O engine is shut down";
    case VT_ETIMEDOUT: return "timed out, retries exhausted";
    case VT_ERANGE: return "range not satisfiable";
    case VT_ENETWORK: return "network error";
    case VT_EREDIRECT: return "bucket is in another region";
    case VT_EAGAIN: return "fetch it again";
    }
    return "unknown error";
}

int vt__err_is_transient(vt_err err)
{
    return err == VT_ETRANSIENT || err == VT_ETIMEDOUT || err == VT_ENETWORK ||
           err == VT_EPROTO;
}
