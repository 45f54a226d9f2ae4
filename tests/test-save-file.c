/* simlsh_index_save_file_v2 / load_file_v2 against the file system:
 * symlinks followed or refused, special files refused (a FIFO never
 * blocks), the errno of a failing call, permission bits, temporary files
 * of dead writers removed and those of live ones left alone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "index-common.h"
#include "testutil.h"

static char dir[] = "/tmp/simlsh-test-save-XXXXXX";

static const char *at(const char *name)
{
    static char buf[8][1200];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static simlsh_index *mk_index(size_t n, uint64_t stream)
{
    simlsh_params *p = mk_params(NULL, 32, 8, 4, 1);
    simlsh_index *ix = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    for (size_t i = 0; i < n; i++) {
        simlsh_signature *s = mk_sig(p, stream + i, 0, 30);
        CHECK_OK(simlsh_index_insert(ix, i, s));
        simlsh_signature_free(s);
    }
    simlsh_params_free(p);
    return ix;
}

static size_t count_of(const char *path)
{
    simlsh_index *ld = NULL;
    size_t n = (size_t)-1;
    if (simlsh_index_load_file(&ld, path, NULL) == 0)
        simlsh_index_count(&n, ld);
    simlsh_index_free(ld);
    return n;
}

/* Files in dir other than the ones the test made. */
static int entries(void)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d != NULL)
        closedir(d);
    return n;
}

static void test_symlinks(simlsh_index *a, simlsh_index *b)
{
    int e = -1;
    CHECK_OK(simlsh_index_save_file_v2(&e, a, at("real.idx"), 0));
    CHECK(e == 0);
    CHECK(symlink("real.idx", at("link.idx")) == 0);
    /* Followed: the file it names is replaced, the link stays a link. */
    CHECK_OK(simlsh_index_save_file_v2(&e, b, at("link.idx"), 0));
    struct stat st;
    CHECK(lstat(at("link.idx"), &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(count_of(at("real.idx")) == 7);
    CHECK(count_of(at("link.idx")) == 7);
    /* Refused with NOFOLLOW, for saves and loads, nothing changed. */
    CHECK_RC(simlsh_index_save_file_v2(&e, a, at("link.idx"), SIMLSH_FILE_NOFOLLOW), SIMLSH_EINVAL);
    CHECK(e == 0);
    CHECK(count_of(at("real.idx")) == 7);
    simlsh_index *ld = (simlsh_index *)1;
    CHECK_RC(simlsh_index_load_file_v2(&ld, &e, at("link.idx"), SIMLSH_FILE_NOFOLLOW, NULL),
             SIMLSH_EINVAL);
    CHECK(ld == NULL);
    CHECK_OK(simlsh_index_load_file_v2(&ld, &e, at("real.idx"), SIMLSH_FILE_NOFOLLOW, NULL));
    simlsh_index_free(ld);
    /* A chain through a subdirectory, with a relative target: the file
     * replaced is the one at the end, in its own directory. */
    CHECK(mkdir(at("sub"), 0777) == 0);
    CHECK(symlink("../link.idx", at("sub/l2")) == 0);
    CHECK_OK(simlsh_index_save_file_v2(&e, a, at("sub/l2"), 0));
    CHECK(count_of(at("real.idx")) == 3);
    CHECK(lstat(at("sub/l2"), &st) == 0 && S_ISLNK(st.st_mode));
    /* A dangling link creates the file it names. */
    CHECK(symlink("new.idx", at("dangling")) == 0);
    CHECK_OK(simlsh_index_save_file_v2(&e, a, at("dangling"), 0));
    CHECK(count_of(at("new.idx")) == 3);
    /* A loop is the kernel's ELOOP. */
    CHECK(symlink("loop2", at("loop1")) == 0);
    CHECK(symlink("loop1", at("loop2")) == 0);
    CHECK_RC(simlsh_index_save_file_v2(&e, a, at("loop1"), 0), SIMLSH_EIO);
    CHECK(e == ELOOP);
    CHECK_RC(simlsh_index_load_file_v2(&ld, &e, at("loop1"), 0, NULL), SIMLSH_EIO);
    CHECK(e == ELOOP);
    /* A link to a directory is refused as the directory is. */
    CHECK(symlink("sub", at("dirlink")) == 0);
    CHECK_RC(simlsh_index_save_file_v2(&e, a, at("dirlink"), 0), SIMLSH_EINVAL);
    struct stat sub;
    CHECK(lstat(at("sub"), &sub) == 0 && S_ISDIR(sub.st_mode));
    const char *made[] = {"sub/l2", "dangling", "new.idx", "loop1", "loop2", "dirlink", "link.idx"};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++)
        unlink(at(made[i]));
    rmdir(at("sub"));
}

static void test_special(simlsh_index *a)
{
    int e = -1;
    simlsh_index *ld = NULL;
    /* A directory, a FIFO, /dev/null: never replaced, never read. */
    CHECK(mkdir(at("d"), 0777) == 0);
    CHECK_RC(simlsh_index_save_file_v2(&e, a, at("d"), 0), SIMLSH_EINVAL);
    CHECK(e == 0);
    CHECK_RC(simlsh_index_load_file_v2(&ld, &e, at("d"), 0, NULL), SIMLSH_EINVAL);
    rmdir(at("d"));
    CHECK(mkfifo(at("fifo"), 0666) == 0);
    /* Opened non-blocking and refused by type: no writer ever comes, so a
     * blocking open or read would hang here (the alarm ends the test). */
    alarm(20);
    CHECK_RC(simlsh_index_load_file_v2(&ld, &e, at("fifo"), 0, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_load_file(&ld, at("fifo"), NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save_file_v2(&e, a, at("fifo"), 0), SIMLSH_EINVAL);
    alarm(0);
    struct stat st;
    CHECK(lstat(at("fifo"), &st) == 0 && S_ISFIFO(st.st_mode));
    unlink(at("fifo"));
    CHECK_RC(simlsh_index_save_file_v2(&e, a, "/dev/null", 0), SIMLSH_EINVAL);
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    CHECK_RC(simlsh_index_load_file_v2(&ld, &e, "/dev/zero", 0, NULL), SIMLSH_EINVAL);
    CHECK(symlink("/dev/zero", at("zero")) == 0);
    CHECK_RC(simlsh_index_load_file_v2(&ld, &e, at("zero"), 0, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save_file_v2(&e, a, at("zero"), 0), SIMLSH_EINVAL);
    unlink(at("zero"));
    CHECK(ld == NULL);
    /* No file name. */
    CHECK_RC(simlsh_index_save_file_v2(&e, a, at(""), 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save_file_v2(&e, a, at("nothere/"), 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save_file_v2(&e, a, "", 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save_file_v2(&e, a, at("x"), 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save_file_v2(&e, NULL, at("x"), 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save_file_v2(&e, a, NULL, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_load_file_v2(&ld, &e, at("x"), 2, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_load_file_v2(NULL, &e, at("x"), 0, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_load_file_v2(&ld, &e, NULL, 0, NULL), SIMLSH_EINVAL);
    CHECK(entries() == 1); /* real.idx */
}

static void test_errno(simlsh_index *a)
{
    int e = -1;
    simlsh_index *ld = NULL;
    CHECK_RC(simlsh_index_save_file_v2(&e, a, at("no/such/dir.idx"), 0), SIMLSH_EIO);
    CHECK(e == ENOENT);
    CHECK_RC(simlsh_index_load_file_v2(&ld, &e, at("missing.idx"), 0, NULL), SIMLSH_EIO);
    CHECK(e == ENOENT);
    CHECK_RC(simlsh_index_save_file_v2(NULL, a, at("no/such/dir.idx"), 0), SIMLSH_EIO);
    /* A read-only directory (root ignores permission bits: skipped). */
    CHECK(mkdir(at("ro"), 0555) == 0);
    if (geteuid() != 0) {
        CHECK_RC(simlsh_index_save_file_v2(&e, a, at("ro/x.idx"), 0), SIMLSH_EIO);
        CHECK(e == EACCES);
    }
    rmdir(at("ro"));
    /* The longest file name: the temporary name is cut to fit. */
    char longname[256];
    memset(longname, 'n', 255);
    longname[255] = '\0';
    CHECK_OK(simlsh_index_save_file_v2(&e, a, at(longname), 0));
    CHECK_OK(simlsh_index_save_file_v2(&e, a, at(longname), 0));
    CHECK(count_of(at(longname)) == 3);
    CHECK(entries() == 2);
    unlink(at(longname));
    /* An empty file is corrupt, not an I/O error. */
    int fd = open(at("empty"), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    CHECK(fd >= 0);
    close(fd);
    CHECK_RC(simlsh_index_load_file_v2(&ld, &e, at("empty"), 0, NULL), SIMLSH_ECORRUPT);
    CHECK(e == 0);
    unlink(at("empty"));
}

static void test_modes(simlsh_index *a)
{
    int e;
    mode_t old = umask(022);
    CHECK_OK(simlsh_index_save_file_v2(&e, a, at("m.idx"), 0));
    struct stat st;
    CHECK(stat(at("m.idx"), &st) == 0 && (st.st_mode & 07777) == 0644);
    /* A replaced file keeps its bits: a private index stays private. */
    CHECK(chmod(at("m.idx"), 0600) == 0);
    CHECK_OK(simlsh_index_save_file_v2(&e, a, at("m.idx"), 0));
    CHECK(stat(at("m.idx"), &st) == 0 && (st.st_mode & 07777) == 0600);
    /* Root re-saving another user's index leaves it theirs. */
    if (geteuid() == 0) {
        CHECK(chown(at("m.idx"), 65534, 65534) == 0);
        CHECK_OK(simlsh_index_save_file_v2(&e, a, at("m.idx"), 0));
        CHECK(stat(at("m.idx"), &st) == 0 && st.st_uid == 65534 && st.st_gid == 65534);
        CHECK((st.st_mode & 07777) == 0600);
        CHECK(chown(at("m.idx"), 0, 0) == 0);
    }
    /* A hard link keeps the old bytes (rename makes a new file). */
    CHECK(link(at("m.idx"), at("hard.idx")) == 0);
    simlsh_index *b = mk_index(4, 50);
    CHECK_OK(simlsh_index_save_file_v2(&e, b, at("m.idx"), 0));
    CHECK(count_of(at("m.idx")) == 4 && count_of(at("hard.idx")) == 3);
    simlsh_index_free(b);
    umask(old);
    unlink(at("m.idx"));
    unlink(at("hard.idx"));
}

static void touch(const char *name)
{
    int fd = open(at(name), O_WRONLY | O_CREAT | O_EXCL, 0666);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
}

/* Temporary names of dead writers go, those of live ones and anything
 * else stay. */
static void test_stale(simlsh_index *a)
{
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    CHECK(dead > 0);
    waitpid(dead, NULL, 0);
    long d = (long)dead;
    char gone[2][128], kept[7][128];
    snprintf(gone[0], 128, ".s.idx.simlsh-tmp.%ld.0123456789abcdef", d);
    snprintf(gone[1], 128, ".s.idx.simlsh-tmp.%ld.ffffffffffffffff", d);
    snprintf(kept[0], 128, ".s.idx.simlsh-tmp.1.0123456789abcdef");       /* init: alive */
    snprintf(kept[1], 128, ".s.idx.simlsh-tmp.x%ld.0123456789abcdef", d); /* not a pid */
    snprintf(kept[2], 128, ".t.idx.simlsh-tmp.%ld.0123456789abcdef", d);  /* another file */
    snprintf(kept[3], 128, ".s.idx.simlsh-tmp.%ld.0123456789abcdeg", d);  /* not hex */
    snprintf(kept[4], 128, "s.idx.simlsh-tmp.%ld.0123456789abcdef", d);   /* no dot */
    snprintf(kept[5], 128, ".s.idx.simlsh-tmp.%ld.0123456789abcdef0", d); /* too long */
    snprintf(kept[6], 128, ".s.idx.simlsh-tmp.%ld.0123456789ABCDEF", d);  /* upper case */
    for (int i = 0; i < 2; i++)
        touch(gone[i]);
    for (int i = 0; i < 7; i++)
        touch(kept[i]);
    int e;
    CHECK_OK(simlsh_index_save_file_v2(&e, a, at("s.idx"), 0));
    struct stat st;
    for (int i = 0; i < 2; i++)
        CHECK(lstat(at(gone[i]), &st) != 0 && errno == ENOENT);
    for (int i = 0; i < 7; i++) {
        CHECK(lstat(at(kept[i]), &st) == 0);
        unlink(at(kept[i]));
    }
    unlink(at("s.idx"));
    CHECK(entries() == 1);
}

/* Threads of one process saving to one path (same pid in the temporary
 * names): every save succeeds and the file is always one of them. */
typedef struct {
    simlsh_index *ix;
    const char *path; /* at() is not for threads */
    int failures;
} saver;

static void *save_loop(void *arg)
{
    saver *s = arg;
    for (int i = 0; i < 20; i++)
        s->failures += simlsh_index_save_file(s->ix, s->path) != 0;
    return NULL;
}

static void test_threads(simlsh_index *a, simlsh_index *b)
{
    char path[1200];
    snprintf(path, sizeof path, "%s", at("t.idx"));
    saver s[2] = {{a, path, 0}, {b, path, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, save_loop, &s[i]) == 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK(s[0].failures == 0 && s[1].failures == 0);
    size_t n = count_of(at("t.idx"));
    CHECK(n == 3 || n == 7);
    CHECK(entries() == 2);
    unlink(at("t.idx"));
}

/* Every allocation of a save through two symlinks and of a load fails in
 * turn: ENOMEM, nothing leaked, the old file byte-identical and alone. */
static void test_oom(void)
{
    CHECK(symlink("l2", at("l1")) == 0);
    CHECK(symlink("o.idx", at("l2")) == 0);
    simlsh_index *old = mk_index(2, 300);
    CHECK_OK(simlsh_index_save_file(old, at("o.idx")));
    simlsh_index_free(old);
    struct stat st0, st;
    CHECK(stat(at("o.idx"), &st0) == 0);
    int points = 0, bad = 0, leaks = 0;
    for (long fail_at = 1; fail_at < 1000; fail_at++) {
        tu_alloc_state as = {0};
        simlsh_allocator al = tu_allocator(&as);
        simlsh_params *p = mk_params(&al, 32, 8, 4, 1);
        simlsh_index *ix = NULL, *ld = NULL;
        CHECK_OK(simlsh_index_new(&ix, p));
        simlsh_signature *s = mk_sig(p, 9, 0, 30);
        CHECK_OK(simlsh_index_insert(ix, 1, s));
        CHECK_OK(simlsh_index_set_userdata(ix, "n", 1));
        as.fail_at = as.count + fail_at;
        int e = -1;
        int saved = simlsh_index_save_file_v2(&e, ix, at("l1"), 0), rc = saved;
        /* A failed save leaves the old file (same inode: never renamed
         * over), a successful one the new file, and nothing beside it. */
        CHECK(stat(at("o.idx"), &st) == 0);
        if ((saved == 0) != (st.st_ino != st0.st_ino) || entries() != 4)
            bad++;
        if (saved == 0) {
            rc = simlsh_index_load_file_v2(&ld, &e, at("l1"), 0, &al);
            st0 = st; /* the next old file */
        }
        int done = rc == 0 && as.count < as.fail_at;
        if (rc != 0 && (rc != SIMLSH_ENOMEM || e != 0 || ld != NULL))
            bad++;
        simlsh_index_free(ld);
        simlsh_index_free(ix);
        simlsh_signature_free(s);
        simlsh_params_free(p);
        if (as.live != 0)
            leaks++;
        if (done)
            break;
        points++;
    }
    printf("file oom: %d failure points, %d wrong, %d leaking\n", points, bad, leaks);
    CHECK(points >= 4);
    CHECK(bad == 0 && leaks == 0);
    unlink(at("l1"));
    unlink(at("l2"));
    unlink(at("o.idx"));
}

int main(void)
{
    signal(SIGALRM, SIG_DFL);
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    simlsh_index *a = mk_index(3, 1), *b = mk_index(7, 100);
    test_symlinks(a, b);
    test_special(a);
    test_errno(a);
    test_modes(a);
    test_stale(a);
    test_threads(a, b);
    test_oom();
    simlsh_index_free(a);
    simlsh_index_free(b);
    unlink(at("real.idx"));
    CHECK(rmdir(dir) == 0);
    return tu_finish("test-save-file");
}
