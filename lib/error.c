/* Error names and messages, generated from the header's X-macro list. */
#include "simlsh.h"

const char *simlsh_strerror(int err)
{
    switch (err) {
    case SIMLSH_OK:
        return "success";
#define X(name, value, msg) \
    case value:             \
        return msg;
        SIMLSH_ERRNO_MAP(X)
#undef X
    default:
        return "unknown error";
    }
}

const char *simlsh_error_name(int err)
{
    switch (err) {
    case SIMLSH_OK:
        return "OK";
#define X(name, value, msg) \
    case value:             \
        return #name;
        SIMLSH_ERRNO_MAP(X)
#undef X
    default:
        return "UNKNOWN";
    }
}
