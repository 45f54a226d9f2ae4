/* The fault suite of issue 18: saves that fail, are killed or race, and
 * files that are corrupted never cost the old index.
 *
 *  1. ENOSPC at the k-th fallible system call of a save, for every k,
 *     with O_TMPFILE and with named temporary files: the old file stays
 *     byte-identical (the new one complete when only the final directory
 *     sync fails), the call reports SIMLSH_EIO with errno ENOSPC, no
 *     temporary file is left, and the file loads and answers as before.
 *  2. 30 saves of a big index killed (SIGKILL) at random moments: the
 *     file is the old or the new index, complete, and loads and answers
 *     as that one; no temporary file remains once the next save ran.
 *  3. 25 pairs of concurrent saves to one path: both succeed and the file
 *     is one of the two, complete.
 *  4. 600 random corruptions (bit flips, truncations) of a saved file,
 *     checked as they are and resealed (length and checksum rewritten).
 *  5. A real full disk: a small tmpfs in a mount namespace of a child
 *     (skipped where the system allows none), the kernel's own ENOSPC.
 *
 * This binary compiles lib/file.c itself with SIMLSH_FILE_FAULTS (see
 * file.h): the fault hook exists only here, never in the library. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* unshare */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#if defined(__linux__)
#include <sched.h>
#include <sys/mount.h>
#endif

#include "file.h"
#include "index-common.h"
#include "testutil.h"

static char dir[] = "/tmp/simlsh-test-fault-XXXXXX";
static char path[256];

/* ---- the fault hook ------------------------------------------------------------ */

static long fault_at, fault_count;
static int no_tmpfile;
static char fault_op[16];

static int hook(const char *op)
{
    /* A file system without O_TMPFILE: the named path, not a fault. */
    if (no_tmpfile && strcmp(op, "tmpfile") == 0)
        return EOPNOTSUPP;
    if (++fault_count == fault_at) {
        snprintf(fault_op, sizeof fault_op, "%s", op);
        return ENOSPC;
    }
    return 0;
}

/* ---- two versions of an index, and what they answer ------------------------------ */

#define NQ 24

typedef struct {
    simlsh_index *ix;
    uint8_t *bytes;
    size_t n;
    size_t answers[NQ];
    uint64_t first[NQ];
} version;

static simlsh_signature *queries[NQ];
static simlsh_params *params;

static void answer(const simlsh_index *ix, size_t *counts, uint64_t *first)
{
    uint64_t ids[256];
    for (int q = 0; q < NQ; q++) {
        size_t c = 0;
        int rc = simlsh_index_query_ids(ids, 256, &c, ix, queries[q], SIMLSH_QUERY_VERIFY);
        CHECK(rc == 0 || rc == SIMLSH_EBUFSIZE);
        counts[q] = c;
        first[q] = c > 0 ? ids[0] : UINT64_MAX;
    }
}

/* n documents of stream s, with the names of the ids as user data. */
static void make_version(version *v, size_t n, uint64_t s)
{
    CHECK_OK(simlsh_index_new(&v->ix, params));
    CHECK_OK(simlsh_index_reserve(v->ix, n));
    size_t cap = n * 24 + 1, len = 0;
    char *names = malloc(cap);
    for (size_t i = 0; i < n; i++) {
        simlsh_signature *sig = mk_sig(params, s * 1000003 + i / 2, i % 2, 24 + i % 2);
        CHECK_OK(simlsh_index_insert(v->ix, s << 32 | i, sig));
        simlsh_signature_free(sig);
        len +=
            (size_t)snprintf(names + len, cap - len, "doc-%llu-%zu", (unsigned long long)s, i) + 1;
    }
    CHECK_OK(simlsh_index_set_userdata(v->ix, names, len));
    free(names);
    CHECK_OK(simlsh_index_save(NULL, 0, &v->n, v->ix));
    v->bytes = malloc(v->n);
    CHECK_OK(simlsh_index_save(v->bytes, v->n, &v->n, v->ix));
    answer(v->ix, v->answers, v->first);
}

static void free_version(version *v)
{
    simlsh_index_free(v->ix);
    free(v->bytes);
}

static void make_queries(uint64_t s1, uint64_t s2)
{
    for (int q = 0; q < NQ; q++) {
        uint64_t s = q % 2 ? s1 : s2;
        queries[q] = mk_sig(params, s * 1000003 + (uint64_t)q * 7, 0, 24);
    }
}

/* ---- checks of the directory ------------------------------------------------------ */

static uint8_t *read_path(size_t *n)
{
    uint8_t *buf = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 0;
    for (;;) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            buf = realloc(buf, cap);
        }
        size_t got = fread(buf + *n, 1, cap - *n, f);
        if (got == 0)
            break;
        *n += got;
    }
    fclose(f);
    return buf;
}

/* Directory entries besides the index itself: temporary files. */
static int leftovers(void)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
             strcmp(e->d_name, "idx") != 0;
    if (d != NULL)
        closedir(d);
    return n;
}

/* Which version the file holds, byte for byte (0: neither), after
 * checking that it loads and answers as that version does. */
static int holds(const version *a, const version *b)
{
    size_t n;
    uint8_t *buf = read_path(&n);
    int which = 0;
    if (buf != NULL && n == a->n && memcmp(buf, a->bytes, n) == 0)
        which = 1;
    else if (buf != NULL && n == b->n && memcmp(buf, b->bytes, n) == 0)
        which = 2;
    free(buf);
    if (which == 0)
        return 0;
    const version *v = which == 1 ? a : b;
    simlsh_index *ld = NULL;
    if (simlsh_index_load_file(&ld, path, NULL) != 0)
        return 0;
    size_t counts[NQ];
    uint64_t first[NQ];
    answer(ld, counts, first);
    const void *ud, *ud2;
    size_t ul, ul2;
    simlsh_index_userdata(&ud, &ul, ld);
    simlsh_index_userdata(&ud2, &ul2, v->ix);
    int same = memcmp(counts, v->answers, sizeof counts) == 0 &&
               memcmp(first, v->first, sizeof first) == 0 && ul == ul2 && memcmp(ud, ud2, ul) == 0;
    simlsh_index_free(ld);
    return same ? which : 0;
}

static void put(const version *v)
{
    fault_at = 0;
    CHECK_OK(simlsh_index_save_file(v->ix, path));
}

/* ---- 1. ENOSPC at every point ---------------------------------------------------- */

static void test_enospc(const version *old, const version *new, int named, int *points, int *lost)
{
    no_tmpfile = named;
    for (long k = 1;; k++) {
        put(old);
        fault_at = k;
        fault_count = 0;
        fault_op[0] = '\0';
        int e = -1;
        int rc = simlsh_index_save_file_v2(&e, new->ix, path, 0);
        long calls = fault_count;
        fault_at = 0;
        if (calls < k) { /* ran out of points: the save went through */
            CHECK_OK(rc);
            CHECK(holds(old, new) == 2);
            break;
        }
        (*points)++;
        int want = strcmp(fault_op, "dirsync") == 0 ? 2 : 1;
        int got = holds(old, new);
        int left = leftovers();
        int ok = rc == SIMLSH_EIO && e == ENOSPC && got == want && left == 0;
        if (!ok) {
            (*lost)++;
            fprintf(stderr, "%s: ENOSPC at call %ld (%s): rc %d errno %d, file %d, %d left\n",
                    named ? "named" : "tmpfile", k, fault_op, rc, e, got, left);
        }
    }
    no_tmpfile = 0;
}

/* ---- 2. kills ------------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void test_kills(const version *old, const version *new, int trials, int *bad,
                       int *left_tmpfile, int *left_named, int *got_old)
{
    double t0 = now();
    put(new);
    put(old);
    double cycle = now() - t0; /* one save of each */
    printf("kills: one save of each index takes %.0f ms\n", cycle * 1e3);
    tu_rng rng = {0x5eed1e55};
    for (int t = 0; t < trials; t++) {
        int named = t % 2;
        put(old);
        pid_t parent = getpid(), pid = fork();
        if (pid == 0) {
            /* Bounded, and gone with the parent: never a stray writer. */
            no_tmpfile = named;
            for (int i = 0; i < 100 && getppid() == parent; i++) {
                simlsh_index_save_file(new->ix, path);
                simlsh_index_save_file(old->ix, path);
            }
            _exit(0);
        }
        CHECK(pid > 0);
        nap(tu_unit(&rng) * 1.5 * cycle);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        int left = leftovers();
        if (named)
            *left_named += left > 0;
        else
            *left_tmpfile += left > 0;
        int got = holds(old, new);
        *got_old += got == 1;
        /* The next save removes what the dead writer left. */
        put(got == 2 ? new : old);
        if (got == 0 || leftovers() != 0) {
            (*bad)++;
            fprintf(stderr, "kill %d (%s): file %d, %d temporary files, %d after a save\n", t,
                    named ? "named" : "tmpfile", got, left, leftovers());
        }
    }
}

/* ---- 3. concurrent saves -------------------------------------------------------- */

static void test_concurrent(const version *a, const version *b, int trials, int *bad, int *won_a)
{
    for (int t = 0; t < trials; t++) {
        put(a);
        int go[2];
        CHECK(pipe(go) == 0);
        pid_t pid[2];
        for (int i = 0; i < 2; i++) {
            pid[i] = fork();
            if (pid[i] == 0) {
                char c;
                close(go[1]);
                no_tmpfile = t % 3 == 2; /* every third pair: named files */
                if (read(go[0], &c, 1) != 0)
                    _exit(3);
                _exit(simlsh_index_save_file((i ? b : a)->ix, path) == 0 ? 0 : 1);
            }
        }
        close(go[0]);
        close(go[1]); /* both start now */
        int ok = 1;
        for (int i = 0; i < 2; i++) {
            int st = 0;
            waitpid(pid[i], &st, 0);
            ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
        }
        int got = holds(a, b);
        *won_a += got == 1;
        if (!ok || got == 0 || leftovers() != 0) {
            (*bad)++;
            fprintf(stderr, "race %d: exits ok %d, file %d, %d left\n", t, ok, got, leftovers());
        }
    }
}

/* ---- 4. corruptions ------------------------------------------------------------- */

/* Where accepted resealed bytes differ from the original first: ids,
 * user data, signature values past the bands, or elsewhere. */
static int in_ids, in_userdata, in_unused, in_other;

static void where(const version *v, const uint8_t *buf, size_t n)
{
    size_t i = 0;
    while (i < n && i < v->n && buf[i] == v->bytes[i])
        i++;
    const uint8_t *pl = v->bytes + SIMLSH__HEADER_SIZE + SIMLSH__CONTRACT_SIZE;
    size_t b = simlsh__rd32(pl), r = simlsh__rd32(pl + 4), rec = simlsh__rd32(pl + 12);
    size_t start = (size_t)(pl - v->bytes) + 24, end = start + simlsh__rd64(pl + 16) * rec;
    if (i >= start && i < end && (i - start) % rec < 8)
        in_ids++;
    else if (i >= start && i < end && (i - start) % rec >= 8 + 4 * b + 4 * b * r)
        in_unused++;
    else if (i >= end + 8 && i < v->n - SIMLSH__TRAILER_SIZE)
        in_userdata++;
    else
        in_other++;
}

static void test_corrupt(const version *v, int trials, int *accepted, int *resealed_ok,
                         int *resealed_bad)
{
    tu_rng rng = {0xc0bb1e};
    uint8_t *buf = malloc(v->n);
    for (int t = 0; t < trials; t++) {
        memcpy(buf, v->bytes, v->n);
        size_t n = v->n;
        if (t % 3 == 0) {
            n = (size_t)tu_below(&rng, v->n); /* a truncation */
        } else {
            int flips = 1 + (int)tu_below(&rng, 4);
            for (int f = 0; f < flips; f++)
                buf[tu_below(&rng, v->n)] ^= (uint8_t)(1u << tu_below(&rng, 8));
            if (memcmp(buf, v->bytes, n) == 0) /* flips that cancelled out */
                buf[tu_below(&rng, v->n)] ^= 0x10;
        }
        for (int sealed = 0; sealed < 2; sealed++) {
            if (sealed) {
                if (n < SIMLSH__FRAME_OVERHEAD)
                    continue;
                simlsh__wr64(buf + 8, n - SIMLSH__FRAME_OVERHEAD);
                simlsh__frame_write_tail(buf, n);
            }
            /* A new file each time: ext4 flushes a truncated one on close. */
            unlink(path);
            FILE *f = fopen(path, "wb");
            CHECK(f != NULL && fwrite(buf, 1, n, f) == n);
            fclose(f);
            simlsh_index *ld = NULL;
            int rc = simlsh_index_load_file(&ld, path, NULL);
            if (rc == 0 && !sealed) {
                (*accepted)++;
            } else if (rc == 0) {
                /* Bytes that pass every check are a valid index (a flip
                 * in an id, the user data or unused values): it must then
                 * be exactly that file, saving back to the same bytes. */
                size_t m = 0;
                simlsh_index_save(NULL, 0, &m, ld);
                uint8_t *back = malloc(m);
                simlsh_index_save(back, m, &m, ld);
                if (m == n && memcmp(back, buf, n) == 0)
                    (*resealed_ok)++;
                else
                    (*resealed_bad)++;
                where(v, buf, n);
                free(back);
            } else if (rc != SIMLSH_ECORRUPT) {
                (*accepted)++;
                fprintf(stderr, "corruption %d: %s\n", t, simlsh_error_name(rc));
            }
            CHECK(rc == 0 || ld == NULL);
            simlsh_index_free(ld);
        }
    }
    free(buf);
}

/* ---- 5. a real full disk ---------------------------------------------------------- */

#if defined(__linux__) && defined(CLONE_NEWNS)
static int write_text(const char *file, const char *text)
{
    int fd = open(file, O_WRONLY);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A mount namespace of our own: directly as root, else inside a user
 * namespace mapping our ids. 0, or -1 when the system allows neither. */
static int own_mounts(void)
{
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWNS) == 0)
        return 0;
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
        return -1;
    char map[64];
    (void)write_text("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "%lu %lu 1", (unsigned long)uid, (unsigned long)uid);
    if (write_text("/proc/self/uid_map", map) != 0)
        return -1;
    snprintf(map, sizeof map, "%lu %lu 1", (unsigned long)gid, (unsigned long)gid);
    return write_text("/proc/self/gid_map", map);
}
#endif

/* In a child: a tmpfs over dir with room for the old index and half the
 * new one. Each save of the new index must fail with ENOSPC from the
 * kernel, keep the old file, leave no file and give all space back; once
 * the old file is gone the new one fits. Exit 0 passed, 1 failed, 77
 * skipped. */
static int full_disk(const version *old, const version *new)
{
#if defined(__linux__) && defined(CLONE_NEWNS)
    if (own_mounts() != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return 77;
    char opt[64];
    snprintf(opt, sizeof opt, "size=%zu", old->n + new->n / 2);
    if (mount("tmpfs", dir, "tmpfs", 0, opt) != 0)
        return 77;
    put(old);
    struct statvfs before, after;
    CHECK(statvfs(dir, &before) == 0);
    for (int named = 0; named < 2; named++) {
        no_tmpfile = named;
        int e = 0;
        CHECK_RC(simlsh_index_save_file_v2(&e, new->ix, path, 0), SIMLSH_EIO);
        CHECK(e == ENOSPC);
        CHECK(holds(old, new) == 1);
        CHECK(leftovers() == 0);
        CHECK(statvfs(dir, &after) == 0 && after.f_bfree == before.f_bfree);
    }
    no_tmpfile = 0;
    unlink(path);
    CHECK_OK(simlsh_index_save_file(new->ix, path));
    CHECK(holds(old, new) == 2);
    return tu_failures == 0 ? 0 : 1;
#else
    (void)old;
    (void)new;
    return 77;
#endif
}

static void test_full_disk(const version *old, const version *new)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(full_disk(old, new));
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    int code = WEXITSTATUS(st);
    if (code == 77)
        printf("full disk: skipped (no mount namespace allowed here)\n");
    else
        printf("full disk: %s: a %zu-byte tmpfs refused the new index with ENOSPC, with "
               "O_TMPFILE and named files, the old one intact, nothing left\n",
               code == 0 ? "passed" : "FAILED", old->n + new->n / 2);
    CHECK(code == 0 || code == 77);
}

int main(void)
{
    simlsh__file_fault = hook;
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof path, "%s/idx", dir);
    params = mk_params(NULL, 64, 16, 4, 1);
    CHECK_OK(simlsh_params_set_double(params, SIMLSH_PARAM_THRESHOLD, 0.5));
    make_queries(1, 2);

    double t0 = now();
    version small_old, small_new;
    make_version(&small_old, 200, 1);
    make_version(&small_new, 230, 2);
    int points = 0, lost = 0;
    test_enospc(&small_old, &small_new, 0, &points, &lost);
    int points_tmp = points;
    test_enospc(&small_old, &small_new, 1, &points, &lost);
    printf("ENOSPC: %d of %d injected points (%d with O_TMPFILE, %d with named files) lost "
           "or changed the old index or left a file (%.1f s)\n",
           lost, points, points_tmp, points - points_tmp, now() - t0);
    CHECK(points_tmp > 20 && points - points_tmp > 20);
    CHECK(lost == 0);

    test_full_disk(&small_old, &small_new);

    t0 = now();
    int bad = 0, acc = 0, rok = 0, rbad = 0;
    test_corrupt(&small_old, 600, &acc, &rok, &rbad);
    printf("corruptions: %d of 600 accepted as they are; resealed: %d accepted, all %s "
           "(%d not; first change in an id %d, the user data %d, values past the bands %d, "
           "elsewhere %d), the rest refused (%.1f s)\n",
           acc, rok + rbad, "self-consistent files that save back byte-identical", rbad, in_ids,
           in_userdata, in_unused, in_other, now() - t0);
    CHECK(acc == 0);
    CHECK(rbad == 0);
    free_version(&small_old);
    free_version(&small_new);

    t0 = now();
    version mid_a, mid_b;
    make_version(&mid_a, 6000, 3);
    make_version(&mid_b, 6500, 4);
    int won_a = 0;
    test_concurrent(&mid_a, &mid_b, 25, &bad, &won_a);
    printf("concurrent saves: %d of 25 left an unloadable or mixed file or a temporary "
           "file (first index won %d, second %d; %.1f s)\n",
           bad, won_a, 25 - won_a - bad, now() - t0);
    CHECK(bad == 0);
    free_version(&mid_a);
    free_version(&mid_b);

    t0 = now();
    version big_old, big_new;
    make_version(&big_old, 25000, 5);
    make_version(&big_new, 26000, 6);
    bad = 0;
    int left_tmp = 0, left_named = 0, got_old = 0;
    test_kills(&big_old, &big_new, 30, &bad, &left_tmp, &left_named, &got_old);
    printf("kills: %d of 30 lost the index or left a temporary file after the next save "
           "(old index found %d times, new %d; temporary files right after the kill: "
           "%d of 15 with O_TMPFILE, %d of 15 named; %.1f s)\n",
           bad, got_old, 30 - got_old - bad, left_tmp, left_named, now() - t0);
    CHECK(bad == 0);
    free_version(&big_old);
    free_version(&big_new);

    for (int q = 0; q < NQ; q++)
        simlsh_signature_free(queries[q]);
    simlsh_params_free(params);
    unlink(path);
    CHECK(rmdir(dir) == 0);
    return tu_finish("test-save-fault");
}
