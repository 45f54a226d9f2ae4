/* The deduplication engine (layer 5): the bucket star of simlsh_dedup_*
 * (dedup.c) and the exact comparison of texts it asks for (exact.c).
 * Private to lib/dedup/. */
#ifndef SIMLSH_DEDUP_DEDUP_H
#define SIMLSH_DEDUP_DEDUP_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "index/mates.h"
#include "params.h"
#include "simlsh.h"

#define DX_NONE 0xFFFFFFFFu

/* A centre's shingle set as a hash table (open addressing on the hashes'
 * top bits; 0 marks an empty entry, and the hash 0 is kept aside in
 * zero), with its text kept to recognise identical copies. A centre whose
 * pairs all have estimates well below the threshold first gets a table of
 * its sample only (the distinct hashes of level 2 or more, see exact.c;
 * full clear), made whole only if a pair passes the sample test. */
#define DX_LEVELS 16

typedef struct {
    uint64_t *tab;
    uint32_t *cnt; /* how often each entry's hash occurs in the text */
    size_t cap;    /* a power of 2, or 0 */
    unsigned shift;
    size_t n;      /* distinct hashes (of the sample, until full) */
    int zero;      /* the hash 0 is in the set */
    uint32_t zcnt; /* ... that often */
    /* distinct hashes (not 0) by level: min(trailing zero bits, 15); the
     * hashes of level s or more are the set's 2^-s sample (exact.c) */
    uint32_t level[DX_LEVELS];
    char *text;
    size_t len;
    int ready;   /* built from a text */
    int missing; /* its text cannot be had */
    int full;    /* tab holds the whole set, not its sample */
    int want;    /* during a run: a pair needs the whole set (2: listed) */
    int old;     /* during a run: built before it (its bytes counted already) */
} dx_set;

/* A pair of the current batch: a centre, a document it may claim, the
 * values their signatures share, and the verdict. */
typedef struct {
    uint32_t centre, mate, eq;
    int8_t verdict;  /* -1 undecided, 0 below, 1 claims */
    uint8_t planned; /* decided from kept samples before any text (samples.c) */
    double score;
} dx_pair;

/* ---- the sample test (exact.c on texts, samples.c on kept samples) ---- */

/* A hash's sample level (h != 0): its trailing zero bits, at most
 * DX_LEVELS - 1. The hashes of level s or more are a 2^-s sample of a set
 * that depends on nothing but the hashes, the same for every text. */
static inline unsigned simlsh__dx_level(uint64_t h)
{
    h |= (uint64_t)1 << (DX_LEVELS - 1);
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_ctzll(h);
#else
    unsigned l = 0;
    while ((h >> l & 1) == 0)
        l++;
    return l;
#endif
}

/* The sample test: levels below DX_SAMPLE_MIN_LEVEL would cost nearly what
 * the whole comparison does; the first level taken has at least
 * DX_SAMPLE_FIRST of the centre's hashes; a pair is rejected when the
 * chance of its sample at or above t is under e^-DX_SAMPLE_DOUBT. */
#define DX_SAMPLE_MIN_LEVEL 2
#define DX_SAMPLE_FIRST 64
#define DX_SAMPLE_DOUBT 16.0

/* The test at one level: inter shared hashes among the u sampled hashes of
 * the union; 1 when a pair at J >= t shows so few with a chance under
 * e^-DX_SAMPLE_DOUBT (Chernoff). Both callers decide a pair alike. */
static inline int simlsh__dx_sample_rejects(size_t inter, size_t u, double t)
{
    double uu = (double)u, a = (double)inter / uu;
    if (!(a < t))
        return 0;
    double kl = t >= 1 ? INFINITY : (1 - a) * log((1 - a) / (1 - t));
    if (a > 0)
        kl += a * log(a / t);
    return uu * kl > DX_SAMPLE_DOUBT;
}

/* A text's sample as kept between batches: its distinct hashes of level
 * `level` or more, ascending (exact.c makes it, samples.c keeps it). */
typedef struct {
    uint64_t *v;
    size_t cap; /* v's allocated values */
    uint32_t n;
    uint8_t level;
} dx_kept;

/* Workers' buffers kept between batches (exact.c). */
typedef struct dx_scratch dx_scratch;
void simlsh__dx_scratch_free(const simlsh_allocator *al, dx_scratch *sc);

/* Bytes a set holds (its table and kept text). */
size_t simlsh__dx_set_bytes(const dx_set *s);
void simlsh__dx_set_free(const simlsh_allocator *al, dx_set *s);

/* Texts of one call: centres[] and mates[] index texts[]; each mate has the
 * pairs pair_of[first[m] .. first[m + 1]) (indices into pairs). set_of[]
 * gives each pair's centre set. Centres' sets are built, then every mate
 * whose centres are all ready or missing decides its pairs; the verdicts
 * go to the pairs. done_mate[m] is set for the mates decided. */
typedef struct {
    const struct simlsh_params *params;
    double threshold;
    uint32_t num_perm;
    int diff_ok; /* the params allow deciding a near-copy from its edits */
    /* a pair with fewer equal values (a doubtful one) is put to the sample
     * test first (simlsh__dx_sample_eq()); 0: none is */
    double sample_eq;
    const void *const *texts;
    const size_t *lens;
    const size_t *centres; /* indices into texts */
    dx_set **centre_sets;  /* where each centre's set goes */
    size_t ncentres;
    const size_t *mates; /* indices into texts */
    const size_t *first; /* nmates + 1 */
    const uint32_t *pair_of;
    size_t nmates;
    dx_pair *pairs;
    dx_set *const *set_of; /* per pair: its centre's set */
    uint8_t *mate_missing; /* out: the mate's text failed (EUTF8) */
    uint8_t *mate_done;    /* out: every pair of the mate decided */
    uint8_t *mate_pending; /* simlsh__dx_run's own: a pair waits for a whole set */
    /* per text: 1 when its sample is to be kept (keep_sample[]), and where
     * it goes (kept[], its v allocated with al); NULL: none is */
    const uint8_t *keep_sample;
    dx_kept *kept;
    uint32_t nthreads;
    const simlsh_allocator *al;
    dx_scratch **scratch; /* the engine's, created on first use */
    /* counters, added to */
    uint64_t exact, identical, estimated, edits, sampled;
    /* bytes that sets built before this run grew by (made whole), to be
     * counted whether the run succeeds or not */
    uint64_t grown;
} dx_job;

/* May near-copies be decided from the bytes where they differ (exact.c)?
 * For byte and code point units with at most ASCII lower-casing and
 * whitespace collapsing: normalisation that looks at nothing but a
 * character and whether the one before was whitespace. */
int simlsh__dx_diff_ok(const struct simlsh_params *p);

/* Run a job: 0, or SIMLSH_ENOMEM (then no set of this job's centres was
 * kept and no verdict written; sets of earlier jobs may have been made
 * whole, as job->grown says). */
int simlsh__dx_run(dx_job *job);

/* ---- the engine's state (dedup.c, texts.c, groups.c) ---- */

#define NSTATS 14

typedef struct dx_idslot {
    uint64_t id;
    uint32_t slot;
} idslot;

/* A text handed over for a candidate whose centre's text is not in yet. */
typedef struct {
    char *text;
    size_t len;
} dx_held;

struct simlsh_dedup {
    uint32_t tag; /* SIMLSH__TAG_DEDUP */
    simlsh_allocator al;
    struct simlsh_params params; /* the index's: shingling for exact mode */
    const void *ix;              /* only compared, never read through */
    uint64_t gen;
    size_t nslots, slot_cap; /* slot_cap: the per-slot arrays' length */
    uint32_t num_perm;
    int mode;
    double threshold, prefilter;
    uint32_t nthreads;
    uint64_t memory, keep_below;
    uint64_t giant;          /* lists of more members are judged; 0: none */
    double giant_cost;       /* what the unlike lists that stay may cost */
    int cluster;             /* SIMLSH_DEDUP_STAR or SIMLSH_DEDUP_COMPONENTS */
    int link_kept;           /* components: pairs of two kept documents link */
    simlsh__uf_node *parent; /* components: union-find over slots */
    int started, finished;
    uint8_t *skip; /* per list of the index: 1 = unlike, not a bucket here;
                      2 = components: settled, every member in one */
    size_t nskip;
    /* before the start: the caller's priority and sizes, by id */
    uint64_t *order_ids;
    size_t norder;
    uint64_t *size_ids, *size_bytes;
    size_t nsizes;
    /* per slot */
    uint64_t *ids;
    uint32_t *rank;  /* DX_NONE: free slot */
    uint32_t *order; /* rank -> slot */
    size_t nlive;
    uint32_t *cent; /* centre's slot, or DX_NONE while unplaced */
    double *score;
    uint8_t *closed; /* not a candidate: placed, or kept (keep_below) */
    uint32_t *seen, stamp;
    uint8_t *low;        /* the values' low bytes (simlsh__ix_low_bytes), or NULL */
    size_t nlow;         /* its bytes */
    int low_tried;       /* low was due once (built, or no memory for it) */
    double low_after;    /* looks (STAT_VISITS) past which low is due */
    uint64_t walked;     /* centres whose candidates were asked for */
    uint32_t *pend;      /* == win: a candidate of the batch */
    uint32_t *got;       /* == win: its text (or its absence) is in */
    uint32_t *wpos;      /* in the batch: index of a candidate */
    uint32_t *cpos;      /* in the batch: index of a centre */
    uint32_t *best;      /* a candidate's most equal values with a centre of the batch */
    uint32_t need_claim; /* equal values of an estimate at the threshold */
    uint64_t *weight;
    size_t cur;   /* ranks below are placed for good */
    uint32_t win; /* batch number */
    /* the batch */
    uint32_t *wc; /* centres, in rank order */
    dx_set *wset; /* their sets */
    size_t nwc, cap_wc;
    size_t nahead;  /* centres of the batch taken ahead of their turn */
    dx_pair *pairs; /* by centre */
    size_t *cfirst; /* nwc + 1: each centre's pairs */
    size_t npairs, cap_pairs;
    uint32_t *wm; /* candidates */
    size_t nwm, cap_wm;
    size_t *mfirst;  /* nwm + 1: each candidate's pairs in mpair */
    uint32_t *mpair; /* npairs */
    uint8_t *mdone, *mmissing;
    dx_held *held;
    struct dx_idslot *bidx; /* the batch's documents by id */
    size_t nbidx, cap_bidx;
    size_t need_left;
    int open; /* a batch was handed out and is not resolved */
    /* the carry: a centre whose candidates span several batches */
    uint32_t carry;
    simlsh__matevec cands;
    size_t carry_at;
    dx_set carry_set;
    uint64_t set_bytes;
    dx_scratch *scratch;    /* exact.c's workers' buffers */
    struct dx_ahead *ahead; /* ahead.c's lists, or NULL */
    /* samples kept between batches (samples.c): per slot, scnt values
     * (0: none) at soff (chunk << 32 | value), sw 32-bit words a value,
     * complete from level slvl up */
    uint64_t sample_memory; /* bytes of chunks at most */
    uint64_t sample_bytes;  /* ... held */
    uint32_t **chunk;
    size_t nchunks, chunk_cap, cused; /* cused: values used in the last chunk */
    unsigned sw;
    uint64_t *soff;
    uint32_t *scnt;
    uint8_t *slvl;
    uint64_t st[NSTATS];
};

/* The equal values under which exact mode puts a pair to the sample test
 * (exact.c): an estimate 2 standard deviations below the threshold, where
 * pairs are mostly far enough below it for a sample to tell. Nearer it, a
 * sample rarely rejects, and testing one costs more than it saves (man
 * pages: 62,000 of 80,000 sampled pairs were near it). None without the
 * prefilter: every pair compared whole. */
static inline double simlsh__dx_sample_eq(const simlsh_dedup *d)
{
    double t = d->threshold, np = (double)d->num_perm;
    return d->prefilter > 0 ? (t - 2 * sqrt(t * (1 - t) / np)) * np : 0;
}

/* Is slot s a centre of the batch? (A centre may be a candidate of the
 * batch too: form_batch() in dedup.c.) */
static inline int simlsh__dx_is_centre(const simlsh_dedup *d, uint32_t s)
{
    return d->cpos[s] < d->nwc && d->wc[d->cpos[s]] == s;
}

/* Is slot s a candidate of the batch? */
static inline int simlsh__dx_is_mate(const simlsh_dedup *d, uint32_t s)
{
    return d->pend[s] == d->win;
}

/* Centres a batch takes ahead of their turn, at most: each that a centre
 * before it then claims had its pairs compared for nothing, so a batch
 * risks that for a bounded number (64 to 1024 gave the same batches on a
 * shared template of 60,000 documents, 25 to 37 of them against 382). */
#define DX_AHEAD_MAX 256
/* Star groups: may candidate x of the batch be taken as a centre ahead of
 * its turn (form_batch() in dedup.c)? Only when no centre of the batch is
 * likely to claim it, with every estimate under the threshold (need_claim
 * equal values). A batch then holds a run of documents whose pairs are
 * near it but below (pages sharing much of a template): each text is read
 * and shingled once for the run, not once for each of its centres, and the
 * batches are large enough for the threads. When a centre before it does
 * claim it, resolve_batch() drops its pairs, which leaves the groups as
 * they would be at its turn. */
static inline int simlsh__dx_ahead_of_turn(const simlsh_dedup *d, uint32_t x)
{
    return d->cluster == SIMLSH_DEDUP_STAR && d->best[x] < d->need_claim &&
           d->nahead < DX_AHEAD_MAX;
}

/* ---- samples kept between batches (samples.c) ---- */

/* Keep k as slot s's sample while sample_memory allows (nothing when it
 * does not, or on ENOMEM: the samples only save work). */
void simlsh__dx_sample_store(simlsh_dedup *d, uint32_t s, const dx_kept *k);
/* Does slot s have a kept sample? */
int simlsh__dx_sample_has(const simlsh_dedup *d, uint32_t s);
/* Is there room for more samples? */
int simlsh__dx_sample_room(const simlsh_dedup *d);
/* The batch just formed: its doubtful pairs that the kept samples reject
 * decided, and the texts that no undecided pair needs any more taken off
 * the list. */
void simlsh__dx_sample_plan(simlsh_dedup *d);
void simlsh__dx_samples_free(simlsh_dedup *d);
/* The sample test of exact.c's sample_below() on the kept samples of a
 * centre (a[0 .. na), complete from level la up) and a mate (b, lb): the
 * distinct hashes, ascending, sw 32-bit words each (low word first).
 * 1: rejected, as sample_below() would on their texts; 0: not rejected,
 * and it would not either; -1: the samples cannot tell (they lack a level
 * it would look at). */
int simlsh__dx_kept_test(const uint32_t *a, size_t na, unsigned la, const uint32_t *b, size_t nb,
                         unsigned lb, unsigned sw, double t);

/* ---- candidates worked out ahead on threads (ahead.c) ---- */

/* x's candidates into d->cands, as simlsh__ix_mates() finds them now
 * (star groups: no parent), its looks counted; made with those of the
 * next unplaced documents. 0, or SIMLSH_ENOMEM (then no state changed
 * but the lists made ahead). */
int simlsh__dx_ahead_candidates(simlsh_dedup *d, const simlsh_index *ix, uint32_t x, uint32_t need);
void simlsh__dx_ahead_free(simlsh_dedup *d);
/* Forget the lists made ahead (closed[] was undone). */
void simlsh__dx_ahead_drop(simlsh_dedup *d);

#endif
