/* Run-time version, from meson.project_version() via simlsh_config.h. */
#include "simlsh.h"
#include "simlsh_config.h"

unsigned int simlsh_version_number(void)
{
    return SIMLSH_PROJECT_MAJOR * 10000u + SIMLSH_PROJECT_MINOR * 100u + SIMLSH_PROJECT_PATCH;
}

const char *simlsh_version_string(void)
{
    return SIMLSH_VERSION_STRING;
}

int simlsh_has_unicode(void)
{
    return SIMLSH_HAVE_UTF8PROC;
}
