/*
 * simlsh-bench-e2e: end-to-end benchmark of simlsh-dedup.
 *
 * Writes a seeded corpus of English-like 2 KiB documents with planted
 * near-duplicates (JSONL or one document per line) to a temporary directory,
 * runs simlsh-dedup on it with each thread count, and prints ONE JSON object:
 * per run the seconds, MB/s, documents/s, peak RSS and page faults of the
 * child (wait4), the recall and precision of the planted pairs (from
 * --output pairs), and from the tool's --stats the wall and CPU seconds of
 * each phase, the CPU seconds of each thread and the busiest thread's share
 * of the process's CPU (what bounds the speed-up on more cores).
 *
 * Usage: simlsh-bench-e2e --dedup PATH [--mb N] [--format lines|jsonl]
 *                         [--threads 1,2] [--seed S] [--dup-rate F] [--keep]
 *                         [--verify none|estimate|exact[,...]] [--cold]
 *                         [--repeat R]
 *
 * Each --verify mode (default: the tool's) runs with each thread count.
 * --repeat R runs every one of those R times, in turn (a round of each, then
 * the next round), and reports each one's median run with all its times:
 * on a noisy machine, the ratio of medians of alternating runs is what
 * tells two settings apart (seconds_over_first: this run's median over the
 * first thread count's in the same mode; over_first_verify: over the
 * first mode's with the same threads).
 *
 * The corpus is read once before the timed runs, so they find it in the
 * page cache (a cold disk measures the disk); --cold instead drops it from
 * the cache (posix_fadvise) before each run.
 *
 * --mb is MiB of document text (default 1024); lines is the default format
 * because it measures simlsh-dedup and the library, while JSONL adds the
 * parsing of records.
 *
 * The target (docs/DESIGN.md section 6): 1 GiB in <= 10 s with 2 threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DOC_BYTES 2048
#define MAX_RUNS 8
#define MAX_MODES 3
#define MAX_REPEAT 25

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "simlsh-bench-e2e: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* splitmix64: each document's text comes from its own seed, so a planted
 * copy regenerates its original instead of keeping the corpus in memory. */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* Vocabulary: common English words first (frequent under the Zipf-like
 * draw below), then syllable-built words for a long tail. */
static const char *const common[] = {
    "the",     "of",       "and",       "to",      "a",      "in",      "is",        "it",
    "that",    "was",      "for",       "on",      "are",    "with",    "as",        "be",
    "at",      "by",       "this",      "have",    "from",   "or",      "one",       "had",
    "not",     "but",      "what",      "all",     "were",   "when",    "we",        "there",
    "can",     "an",       "your",      "which",   "their",  "said",    "if",        "do",
    "will",    "each",     "about",     "how",     "up",     "out",     "them",      "then",
    "she",     "many",     "some",      "so",      "these",  "would",   "other",     "into",
    "has",     "more",     "her",       "two",     "like",   "him",     "see",       "time",
    "could",   "no",       "make",      "than",    "first",  "been",    "its",       "who",
    "now",     "people",   "my",        "made",    "over",   "did",     "down",      "only",
    "way",     "find",     "use",       "may",     "water",  "long",    "little",    "very",
    "after",   "words",    "called",    "just",    "where",  "most",    "know",      "through",
    "back",    "much",     "before",    "line",    "right",  "too",     "means",     "old",
    "any",     "same",     "tell",      "boy",     "follow", "came",    "want",      "show",
    "also",    "around",   "form",      "three",   "small",  "set",     "put",       "end",
    "does",    "another",  "well",      "large",   "must",   "big",     "even",      "such",
    "because", "turn",     "here",      "why",     "ask",    "went",    "men",       "read",
    "need",    "land",     "different", "home",    "us",     "move",    "try",       "kind",
    "hand",    "picture",  "again",     "change",  "off",    "play",    "spell",     "air",
    "away",    "animal",   "house",     "point",   "page",   "letter",  "mother",    "answer",
    "found",   "study",    "still",     "learn",   "should", "world",   "high",      "every",
    "near",    "add",      "food",      "between", "own",    "below",   "country",   "plant",
    "last",    "school",   "father",    "keep",    "tree",   "never",   "start",     "city",
    "earth",   "eye",      "light",     "thought", "head",   "under",   "story",     "saw",
    "left",    "few",      "while",     "along",   "might",  "close",   "something", "seem",
    "next",    "hard",     "open",      "example", "begin",  "life",    "always",    "those",
    "both",    "paper",    "together",  "got",     "group",  "often",   "run",       "important",
    "until",   "children", "side",      "feet",    "car",    "mile",    "night",     "walk",
    "white",   "sea",      "began",     "grow",    "took",   "river",   "four",      "carry",
    "state",   "once",     "book",      "hear",    "stop",   "without", "second",
};
#define NCOMMON (sizeof common / sizeof common[0])
#define NVOCAB 20000
static char vocab[NVOCAB][16];
static size_t vocab_len[NVOCAB];

static void build_vocab(uint64_t seed)
{
    static const char *const syl[] = {"ka", "ro",   "mi", "ten",  "sa",  "lo",  "ver", "an",
                                      "di", "mor",  "pe", "stra", "ul",  "gen", "to",  "bi",
                                      "ne", "chal", "ri", "fo",   "qua", "el",  "dun", "os"};
    uint64_t s = seed ^ 0x5EED;
    for (size_t i = 0; i < NVOCAB; i++) {
        if (i < NCOMMON) {
            snprintf(vocab[i], sizeof vocab[i], "%s", common[i]);
        } else {
            size_t n = 0, parts = 2 + mix(&s) % 3;
            for (size_t p = 0; p < parts && n < 12; p++) {
                const char *y = syl[mix(&s) % (sizeof syl / sizeof syl[0])];
                size_t l = strlen(y);
                if (n + l >= sizeof vocab[i])
                    break;
                memcpy(vocab[i] + n, y, l);
                n += l;
            }
            vocab[i][n] = '\0';
        }
        vocab_len[i] = strlen(vocab[i]);
    }
}

/* Roughly Zipfian: the product of two uniforms favours small ranks. */
static size_t draw_word(uint64_t *s)
{
    uint64_t r = mix(s);
    double u = (double)(r >> 11) * (1.0 / 9007199254740992.0);
    double v = (double)(mix(s) >> 11) * (1.0 / 9007199254740992.0);
    return (size_t)(u * u * v * NVOCAB) % NVOCAB;
}

/* A document of about DOC_BYTES bytes: sentences of 6-20 words. */
static size_t gen_doc(char *out, uint64_t seed)
{
    uint64_t s = seed;
    size_t n = 0, in_sentence = 0, sentence_len = 6 + mix(&s) % 15;
    while (n < DOC_BYTES - 24) {
        size_t w = draw_word(&s);
        if (n)
            out[n++] = ' ';
        memcpy(out + n, vocab[w], vocab_len[w]);
        if (in_sentence == 0 && out[n] >= 'a' && out[n] <= 'z')
            out[n] = (char)(out[n] - 32);
        n += vocab_len[w];
        if (++in_sentence == sentence_len) {
            out[n++] = '.';
            in_sentence = 0;
            sentence_len = 6 + mix(&s) % 15;
        }
    }
    out[n++] = '.';
    return n;
}

/* A near copy: replace a few words (about 1%), keeping the rest. The true
 * Jaccard to the original stays around 0.95 for char 5-shingles, and two
 * copies of one original stay above 0.9: every planted pair is above the
 * default threshold of 0.8. */
static size_t mutate(char *out, const char *in, size_t len, uint64_t seed)
{
    uint64_t s = seed;
    size_t words = 1;
    for (size_t i = 0; i < len; i++)
        words += in[i] == ' ';
    size_t changes = 2 + mix(&s) % 3;
    size_t pick[8];
    for (size_t c = 0; c < changes; c++)
        pick[c] = 1 + mix(&s) % (words - 1);
    size_t n = 0, word = 0;
    for (size_t i = 0; i < len;) {
        int change = 0;
        for (size_t c = 0; c < changes; c++)
            change |= pick[c] == word;
        size_t e = i;
        while (e < len && in[e] != ' ')
            e++;
        if (change) {
            size_t w = NCOMMON + mix(&s) % (NVOCAB - NCOMMON);
            memcpy(out + n, vocab[w], vocab_len[w]);
            n += vocab_len[w];
        } else {
            memcpy(out + n, in + i, e - i);
            n += e - i;
        }
        if (e < len)
            out[n++] = ' ';
        i = e + 1;
        word++;
    }
    return n;
}

struct corpus {
    size_t ndocs;
    uint32_t *group; /* planted group: the original's index, or the doc itself */
    uint64_t planted_pairs;
    uint64_t file_bytes, text_bytes;
};

static void make_corpus(struct corpus *c, const char *path, int jsonl, uint64_t mb, uint64_t seed,
                        double dup_rate)
{
    c->ndocs = (size_t)(mb * 1048576u / DOC_BYTES);
    c->group = calloc(c->ndocs ? c->ndocs : 1, sizeof *c->group);
    uint32_t *size = calloc(c->ndocs ? c->ndocs : 1, sizeof *size);
    if (!c->group || !size)
        die("calloc");
    FILE *f = fopen(path, "w");
    if (!f)
        die(path);
    static char fbuf[1 << 20];
    setvbuf(f, fbuf, _IOFBF, sizeof fbuf);
    char orig[DOC_BYTES + 64], doc[DOC_BYTES * 2];
    uint64_t s = seed;
    for (size_t i = 0; i < c->ndocs; i++) {
        size_t len;
        double u = (double)(mix(&s) >> 11) * (1.0 / 9007199254740992.0);
        if (i > 0 && u < dup_rate) {
            /* copy a recent original (not a copy), as crawls repeat pages */
            size_t back = 1 + mix(&s) % (i < 5000 ? i : 5000);
            size_t src = c->group[i - back];
            len = gen_doc(orig, seed * 1000003u + src);
            len = mutate(doc, orig, len, mix(&s));
            c->group[i] = (uint32_t)src;
        } else {
            len = gen_doc(doc, seed * 1000003u + i);
            c->group[i] = (uint32_t)i;
        }
        size[c->group[i]]++;
        int w;
        if (jsonl)
            w = fprintf(f, "{\"id\":%zu,\"text\":\"%.*s\"}\n", i, (int)len, doc);
        else
            w = fprintf(f, "%.*s\n", (int)len, doc);
        if (w < 0)
            die(path);
        c->file_bytes += (uint64_t)w;
        c->text_bytes += len;
    }
    /* Flush now: writeback of a freshly written gigabyte would otherwise
     * run during, and slow down, the timed runs. */
    if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0)
        die(path);
    c->planted_pairs = 0;
    for (size_t i = 0; i < c->ndocs; i++)
        c->planted_pairs += (uint64_t)size[i] * (size[i] - 1) / 2;
    free(size);
}

struct result {
    int threads;
    const char *verify;
    double seconds, peak_rss_mb, recall, precision;
    uint64_t found_pairs, true_pairs;
    long minflt, majflt;
    char *phases, *thread_cpu, *read_phase; /* JSON objects from --stats */
    double busiest_share;                   /* busiest thread / process CPU */
    int status;
};

/* The whole file, NUL-terminated (NULL if unreadable). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *s = malloc(cap);
    while (s && (got = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n < 2) {
            char *t = realloc(s, cap *= 2);
            if (!t)
                free(s);
            s = t;
        }
    }
    fclose(f);
    if (s)
        s[n] = '\0';
    return s;
}

/* A copy of the JSON object that follows "key": in s (no string in the
 * stats file holds a brace), or NULL. */
static char *json_object_text(const char *s, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":{", key);
    const char *p = s ? strstr(s, pat) : NULL;
    if (!p)
        return NULL;
    p += strlen(pat) - 1;
    int depth = 0;
    const char *e = p;
    for (; *e; e++) {
        if (*e == '{')
            depth++;
        else if (*e == '}' && --depth == 0)
            break;
    }
    if (!*e)
        return NULL;
    char *out = malloc((size_t)(e - p) + 2);
    if (out) {
        memcpy(out, p, (size_t)(e - p) + 1);
        out[e - p + 1] = '\0';
    }
    return out;
}

static double json_number(const char *s, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = s ? strstr(s, pat) : NULL;
    return p ? strtod(p + strlen(pat), NULL) : 0;
}

/* The busiest thread's CPU over the process's: main, then "workers":[...]. */
static double busiest_share(const char *tc)
{
    double process = json_number(tc, "process"), top = json_number(tc, "main");
    const char *w = tc ? strstr(tc, "\"workers\":[") : NULL;
    if (w) {
        char *p = (char *)w + 11;
        while (*p && *p != ']') {
            double v = strtod(p, &p);
            if (v > top)
                top = v;
            if (*p == ',')
                p++;
            else
                break;
        }
    }
    return process > 0 ? top / process : 0;
}

/* Read the corpus once, so that the timed runs find it in the page cache,
 * or (cold) drop it from the cache. */
static void prepare_cache(const char *path, int cold)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        die(path);
    if (cold) {
        if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
            fprintf(stderr, "simlsh-bench-e2e: cannot drop %s from the page cache\n", path);
    } else {
        static char buf[1 << 20];
        ssize_t got;
        while ((got = read(fd, buf, sizeof buf)) > 0) {
        }
        if (got < 0)
            die(path);
    }
    close(fd);
}

static void run_dedup(struct result *res, const char *dedup, const char *corpus, int jsonl,
                      const char *out, const char *stats, const char *verify)
{
    char jarg[16];
    snprintf(jarg, sizeof jarg, "%d", res->threads);
    const char *argv[16] = {dedup,     jsonl ? "--jsonl" : "--lines",
                            corpus,    "-j",
                            jarg,      "--output",
                            "pairs",   "--quiet",
                            "-o",      out,
                            "--stats", stats};
    if (verify) {
        argv[12] = "--verify";
        argv[13] = verify;
    }
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        execv(dedup, (char *const *)argv);
        fprintf(stderr, "simlsh-bench-e2e: %s: %s\n", dedup, strerror(errno));
        _exit(127);
    }
    int st;
    struct rusage ru;
    while (wait4(pid, &st, 0, &ru) < 0) {
        if (errno != EINTR)
            die("wait4");
    }
    res->seconds = now() - t0;
    res->peak_rss_mb = (double)ru.ru_maxrss / 1024.0; /* KiB on Linux */
    res->minflt = ru.ru_minflt;
    res->majflt = ru.ru_majflt;
    res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    char *s = slurp(stats);
    res->phases = json_object_text(s, "phases");
    res->thread_cpu = json_object_text(s, "thread_cpu_seconds");
    res->read_phase = json_object_text(s, "read_phase");
    res->busiest_share = busiest_share(res->thread_cpu);
    free(s);
}

/* Pairs output with line-number or integer ids: "a<TAB>b<TAB>similarity". */
static void score(struct result *res, const struct corpus *c, const char *out, int jsonl)
{
    FILE *f = fopen(out, "r");
    if (!f)
        die(out);
    char line[256];
    uint64_t found = 0, good = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long a, b;
        if (sscanf(line, "%llu\t%llu", &a, &b) != 2)
            continue;
        if (!jsonl) { /* line numbers are 1-based */
            a--;
            b--;
        }
        found++;
        if (a < c->ndocs && b < c->ndocs && c->group[a] == c->group[b])
            good++;
    }
    fclose(f);
    res->found_pairs = found;
    res->true_pairs = good;
    res->recall = c->planted_pairs ? (double)good / (double)c->planted_pairs : 1.0;
    res->precision = found ? (double)good / (double)found : 1.0;
}

static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int x = fgetc(fa), y = fgetc(fb);
        if (x != y)
            same = 0;
        if (x == EOF || y == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

static void usage(void)
{
    fprintf(stderr, "usage: simlsh-bench-e2e --dedup PATH [--mb N] [--format lines|jsonl]\n"
                    "       [--threads 1,2] [--seed S] [--dup-rate F] [--tmpdir DIR] [--keep]\n"
                    "       [--verify none|estimate|exact[,...]] [--cold] [--repeat R]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *dedup = NULL, *tmpdir = getenv("TMPDIR");
    const char *modes[MAX_MODES] = {NULL};
    int nmodes = 1, repeat = 1;
    uint64_t mb = 1024, seed = 42;
    int jsonl = 0, keep = 0, cold = 0, threads[MAX_RUNS] = {1, 2}, nthreads = 2;
    double dup_rate = 0.1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--keep")) {
            keep = 1;
            continue;
        }
        if (!strcmp(a, "--cold")) {
            cold = 1;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--dedup"))
            dedup = v;
        else if (!strcmp(a, "--mb"))
            mb = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--dup-rate"))
            dup_rate = strtod(v, NULL);
        else if (!strcmp(a, "--tmpdir"))
            tmpdir = v;
        else if (!strcmp(a, "--verify")) {
            static const char *const known[] = {"none", "estimate", "exact"};
            nmodes = 0;
            for (const char *p = v; *p;) {
                size_t l = strcspn(p, ",");
                int k = 0;
                while (k < 3 && (strlen(known[k]) != l || strncmp(p, known[k], l)))
                    k++;
                if (k == 3 || nmodes == MAX_MODES)
                    usage();
                modes[nmodes++] = known[k];
                p += l + (p[l] == ',');
            }
            if (nmodes == 0)
                usage();
        } else if (!strcmp(a, "--repeat"))
            repeat = atoi(v);
        else if (!strcmp(a, "--format") && (!strcmp(v, "jsonl") || !strcmp(v, "lines")))
            jsonl = !strcmp(v, "jsonl");
        else if (!strcmp(a, "--threads")) {
            nthreads = 0;
            for (char *p = (char *)v; *p && nthreads < MAX_RUNS;) {
                threads[nthreads++] = (int)strtol(p, &p, 10);
                if (*p == ',')
                    p++;
                else if (*p)
                    usage();
            }
        } else
            usage();
    }
    int nruns = nthreads * nmodes;
    if (!dedup || mb == 0 || mb > 1u << 20 || nthreads == 0 || dup_rate < 0 || dup_rate > 0.9 ||
        repeat < 1 || repeat > MAX_REPEAT || nruns > MAX_RUNS)
        usage();

    char dir[4096];
    snprintf(dir, sizeof dir, "%s/simlsh-e2e-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir))
        die("mkdtemp");
    char corpus_path[4200], out[MAX_RUNS][4200], stats[MAX_RUNS][4200];
    snprintf(corpus_path, sizeof corpus_path, "%s/corpus.%s", dir, jsonl ? "jsonl" : "txt");

    build_vocab(seed);
    struct corpus c;
    memset(&c, 0, sizeof c);
    double t0 = now();
    make_corpus(&c, corpus_path, jsonl, mb, seed, dup_rate);
    double gen_s = now() - t0;

    /* runs r = mode * nthreads + thread index, each repeated in rounds */
    static struct result all[MAX_RUNS][MAX_REPEAT];
    struct result res[MAX_RUNS];
    int identical = 1;
    for (int r = 0; r < nruns; r++) {
        snprintf(out[r], sizeof out[r], "%s/pairs-%d.tsv", dir, r);
        snprintf(stats[r], sizeof stats[r], "%s/stats-%d.json", dir, r);
    }
    for (int k = 0; k < repeat; k++) {
        for (int r = 0; r < nruns; r++) {
            struct result *x = &all[r][k];
            memset(x, 0, sizeof *x);
            x->threads = threads[r % nthreads];
            x->verify = modes[r / nthreads];
            prepare_cache(corpus_path, cold);
            run_dedup(x, dedup, corpus_path, jsonl, out[r], stats[r], x->verify);
            if (x->status == 0)
                score(x, &c, out[r], jsonl);
            /* the same output for every thread count of a mode */
            int first = r - r % nthreads;
            if (r != first)
                identical &= x->status == 0 && same_file(out[first], out[r]);
        }
    }
    /* each run's median: the result reported */
    for (int r = 0; r < nruns; r++) {
        int order[MAX_REPEAT];
        for (int k = 0; k < repeat; k++)
            order[k] = k;
        for (int i = 1; i < repeat; i++) /* insertion sort by seconds */
            for (int j = i; j > 0 && all[r][order[j]].seconds < all[r][order[j - 1]].seconds; j--) {
                int t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        int med = order[(repeat - 1) / 2];
        res[r] = all[r][med];
        if (repeat % 2 == 0) /* the mean of the middle two */
            res[r].seconds = (all[r][med].seconds + all[r][order[repeat / 2]].seconds) / 2;
        for (int k = 0; k < repeat; k++)
            if (k != med) {
                free(all[r][k].phases);
                free(all[r][k].thread_cpu);
                free(all[r][k].read_phase);
            }
    }

    printf("{\"benchmark\":\"e2e\",\"dedup\":\"%s\",\"format\":\"%s\",\"mb\":%" PRIu64
           ",\"documents\":%zu,\"text_bytes\":%" PRIu64 ",\"file_bytes\":%" PRIu64
           ",\"doc_bytes\":%d,\"seed\":%" PRIu64 ",\"dup_rate\":%.3f,\"planted_pairs\":%" PRIu64
           ",\"generate_seconds\":%.2f,\"cache\":\"%s\",\"repeat\":%d,\"runs\":[",
           dedup, jsonl ? "jsonl" : "lines", mb, c.ndocs, c.text_bytes, c.file_bytes, DOC_BYTES,
           seed, dup_rate, c.planted_pairs, gen_s, cold ? "cold" : "warm", repeat);
    for (int r = 0; r < nruns; r++) {
        const struct result *x = &res[r];
        printf("%s{\"verify\":\"%s\",\"threads\":%d,\"seconds_all\":[", r ? "," : "",
               x->verify ? x->verify : "default", x->threads);
        for (int k = 0; k < repeat; k++)
            printf("%s%.3f", k ? "," : "", all[r][k].seconds);
        printf("],\"seconds_over_first\":%.3f,\"over_first_verify\":%.3f",
               x->seconds / res[r - r % nthreads].seconds, x->seconds / res[r % nthreads].seconds);
        printf(",\"exit\":%d,\"seconds\":%.3f,\"mb_per_s\":%.1f,"
               "\"docs_per_s\":%.0f,\"peak_rss_mb\":%.1f,\"minor_faults\":%ld,"
               "\"major_faults\":%ld,\"found_pairs\":%" PRIu64 ",\"true_pairs\":%" PRIu64
               ",\"recall\":%.4f,\"precision\":%.4f",
               x->status, x->seconds, (double)c.file_bytes / 1e6 / x->seconds,
               (double)c.ndocs / x->seconds, x->peak_rss_mb, x->minflt, x->majflt, x->found_pairs,
               x->true_pairs, x->recall, x->precision);
        printf(",\"busiest_thread_share\":%.4f,\"phases\":%s,\"thread_cpu_seconds\":%s,"
               "\"read_phase\":%s}",
               x->busiest_share, x->phases ? x->phases : "null",
               x->thread_cpu ? x->thread_cpu : "null", x->read_phase ? x->read_phase : "null");
    }
    printf("],\"identical_output\":%s,\"target_seconds_2_threads\":10}\n",
           identical ? "true" : "false");

    if (!keep) {
        for (int r = 0; r < nruns; r++) {
            unlink(out[r]);
            unlink(stats[r]);
        }
        unlink(corpus_path);
        rmdir(dir);
    } else {
        fprintf(stderr, "simlsh-bench-e2e: kept %s\n", dir);
    }
    free(c.group);
    for (int r = 0; r < nruns; r++) {
        free(res[r].phases);
        free(res[r].thread_cpu);
        free(res[r].read_phase);
    }
    for (int r = 0; r < nruns; r++)
        for (int k = 0; k < repeat; k++)
            if (all[r][k].status != 0)
                return 1;
    return identical ? 0 : 1;
}
