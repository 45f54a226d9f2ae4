/* Test build only (tests/cli/meson.build: simlsh-dedup-faults, never
 * installed): simlsh-dedup linked with lib/file.c compiled with its fault
 * hook (lib/file.h, SIMLSH_FILE_FAULTS), the same hook tests/test-save-fault.c
 * drives, set here from the environment so the fault suite of
 * tests/cli/test-dedup-store.py can fail the tool's own saves:
 *
 *   SIMLSH_FAULT_AT=K         the K-th hooked system call of the saves
 *                             (open, tmpfile, write, chmod, fsync, close,
 *                             link, rename, dirsync) fails
 *   SIMLSH_FAULT_ERRNO=E      with errno E (default ENOSPC)
 *   SIMLSH_FAULT_NO_TMPFILE=1 O_TMPFILE "is not supported" (EOPNOTSUPP), so
 *                             the named temporary file path is taken
 *   SIMLSH_FAULT_DELAY_US=N   sleep N microseconds before each call, so a
 *                             save lasts long enough to be killed inside
 *   SIMLSH_FAULT_TRACE=1      write "op: OP" on standard error before each
 *                             call (unbuffered), so a test sees the save begin
 *
 * When it injects the fault it says so on standard error ("fault: OP"),
 * so the suite knows when K is past the last call. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "file.h"

static long fault_at, fault_count, delay_us;
static int fault_errno = ENOSPC, no_tmpfile, trace;

static int hook(const char *op)
{
    if (trace)
        fprintf(stderr, "op: %s\n", op);
    if (delay_us > 0) {
        struct timespec ts = {delay_us / 1000000, (delay_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    if (no_tmpfile && strcmp(op, "tmpfile") == 0)
        return EOPNOTSUPP;
    if (++fault_count == fault_at) {
        fprintf(stderr, "fault: %s\n", op);
        return fault_errno;
    }
    return 0;
}

__attribute__((constructor)) static void fault_setup(void)
{
    const char *s = getenv("SIMLSH_FAULT_AT");
    fault_at = s ? strtol(s, NULL, 10) : 0;
    if ((s = getenv("SIMLSH_FAULT_ERRNO")) != NULL)
        fault_errno = (int)strtol(s, NULL, 10);
    no_tmpfile = getenv("SIMLSH_FAULT_NO_TMPFILE") != NULL;
    trace = getenv("SIMLSH_FAULT_TRACE") != NULL;
    if ((s = getenv("SIMLSH_FAULT_DELAY_US")) != NULL)
        delay_us = strtol(s, NULL, 10);
    simlsh__file_fault = hook;
}
