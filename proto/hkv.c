/* hkv.c - names for the project's status codes. */
#include "hkv.h"

const char *hkv_strstatus(int status)
{
    switch (status) {
    case HKV_OK: return "ok";
    case HKV_EAGAIN: return "need more data";
    case HKV_EPROTO: return "protocol error";
    case HKV_ENOMEM: return "out of memory";
    case HKV_EFULL: return "limit reached";
    case HKV_EINVAL: return "invalid argument";
    case HKV_EIO: return "I/O error";
    case HKV_ENOENT: return "not found";
    case HKV_ESTALE: return "stale stamp";
    case HKV_ETIMEDOUT: return "timed out";
    case HKV_EMOVED: return "moved";
    case HKV_ETOOBIG: return "too big";
    case HKV_ECORRUPT: return "corrupt";
    case HKV_EEXIST: return "exists";
    case HKV_ERESEND: return "not applied yet, resend";
    }
    return "unknown status";
}
