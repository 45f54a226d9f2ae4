/* Every SIMD path the CPU offers gives the scalar path's bits exactly:
 * signatures from text (window hashing + OPH / classic kernels) and from raw
 * features, for num_perm values that do and do not fill whole vectors, and
 * the pair sweep's sketch pass (POPCNT or portable). And AUTO dispatches to
 * the best ISA the host has, while an index made with ISA scalar sweeps with
 * the portable sketch pass. */
#include "cpu.h"
#include "index/internal.h"
#include "signature.h"
#include "sketch.h"
#include "testutil.h"

static simlsh_params *mk(int scheme, int np, int isa, int k, int bits)
{
    simlsh_params *p;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, scheme));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, np));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ISA, isa));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_K, k));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_HASH_BITS, bits));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SEED, 424242));
    return p;
}

/* What the host can run, asked here rather than through lib/cpu.c. */
static int host_has(int isa)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (isa == SIMLSH_ISA_AVX2)
        return __builtin_cpu_supports("avx2");
    if (isa == SIMLSH_ISA_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
    return isa == SIMLSH_ISA_SCALAR;
}

static const char *isa_name(int isa)
{
    static const char *const names[] = {"auto", "scalar", "avx2", "avx512"};
    return isa >= 0 && isa <= SIMLSH_ISA_AVX512 ? names[isa] : "?";
}

/* AUTO takes the best row the host supports, both in the table and in an
 * object created with the default params; an ISA the host lacks is
 * reported as skipped and falls back to that best row. */
static void test_dispatch(void)
{
    const int isas[] = {SIMLSH_ISA_SCALAR, SIMLSH_ISA_AVX2, SIMLSH_ISA_AVX512};
    int best = SIMLSH_ISA_SCALAR;
    for (int i = 0; i < 3; i++)
        if (host_has(isas[i]))
            best = isas[i];
    printf("host best isa: %s\n", isa_name(best));
    CHECK(simlsh__kernels_for(SIMLSH_ISA_AUTO)->isa == best);

    simlsh_params *p;
    simlsh_signature *sig;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_signature_new(&sig, p));
    CHECK(sig->kern->isa == best);
    simlsh_signature_free(sig);
    simlsh_params_free(p);

    for (int i = 0; i < 3; i++) {
        const struct simlsh__kernels *k = simlsh__kernels_for(isas[i]);
        if (!host_has(isas[i])) {
            printf("SKIP: dispatch to %s: not available on this host\n", isa_name(isas[i]));
            CHECK(simlsh_isa_supported(isas[i]) == 0);
            CHECK(k->isa == best);
            continue;
        }
        printf("dispatch to %s: checked\n", isa_name(isas[i]));
        CHECK(simlsh_isa_supported(isas[i]) == 1);
        CHECK(k->isa == isas[i]);
        CHECK(k->murmur3_windows != NULL && k->oph_values != NULL && k->classic_update != NULL &&
              k->sketch_pass != NULL);
    }
    /* The scalar row never takes an instruction the host may lack. */
    CHECK(simlsh__kernels_for(SIMLSH_ISA_SCALAR)->sketch_pass == simlsh__sketch_pass_scalar);
}

/* The sketch pass of every row the host runs against a field-by-field
 * count: sketches of 1 to 6 words, blocks of 0 to 90, every kind of need. */
static void test_sketch_pass(void)
{
    const int isas[] = {SIMLSH_ISA_SCALAR, SIMLSH_ISA_AVX2, SIMLSH_ISA_AVX512};
    tu_rng r = {4242};
    uint64_t su[6], sv[90 * 6];
    uint32_t out[90], want[90];
    int checked = 0;
    for (int rep = 0; rep < 300; rep++) {
        uint32_t words = 1 + (uint32_t)tu_below(&r, 6), nv = (uint32_t)tu_below(&r, 91);
        uint32_t need = (uint32_t)tu_below(&r, 32 * words + 2);
        for (uint32_t w = 0; w < words; w++)
            su[w] = tu_next(&r);
        /* mostly near copies of su, so that counts land on both sides of need */
        for (uint32_t i = 0; i < nv * words; i++)
            sv[i] = tu_below(&r, 3) ? su[i % words] ^ (tu_next(&r) & tu_next(&r) & tu_next(&r))
                                    : tu_next(&r);
        uint32_t nw = 0;
        for (uint32_t v = 0; v < nv; v++) {
            uint32_t c = 0;
            for (uint32_t f = 0; f < 32 * words; f++)
                c += ((su[f / 32] >> (2 * (f % 32))) & 3) ==
                     ((sv[(size_t)v * words + f / 32] >> (2 * (f % 32))) & 3);
            if (c >= need)
                want[nw++] = v;
        }
        for (int i = 0; i < 3; i++) {
            if (!simlsh_isa_supported(isas[i]))
                continue;
            uint32_t n = simlsh__kernels_for(isas[i])->sketch_pass(su, sv, nv, words, need, out);
            CHECK(n == nw && memcmp(out, want, n * sizeof *out) == 0);
            checked++;
        }
    }
    printf("sketch pass: %d blocks checked\n", checked);
}

/* Pairs of an index whose large buckets go through the sketch pass (lists,
 * a threshold, stored signatures): the index takes its params' row, and
 * every row gives the same rows and scores. */
static simlsh_results *isa_pairs(int isa, size_t *pairs)
{
    simlsh_params *p = mk(0, 128, isa, 5, 32);
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, 32));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, 4));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_STORE_SIGNATURES, 1));
    simlsh_index *ix;
    simlsh_signature *sig;
    simlsh_results *res;
    CHECK_OK(simlsh_index_new(&ix, p));
    CHECK_OK(simlsh_signature_new(&sig, p));
    CHECK_OK(simlsh_results_new(&res, NULL));
    CHECK(ix->kern == simlsh__kernels_for(isa));
    /* 4 families of 30 documents: each a base of 200 features with a share
     * replaced, so buckets pass INLINE_MAX and pairs fall either side of 0.6 */
    tu_rng r = {99};
    uint64_t feats[200];
    for (uint64_t d = 0; d < 120; d++) {
        for (int i = 0; i < 200; i++)
            feats[i] = (d % 4) << 32 | (uint64_t)i;
        int swap = (int)tu_below(&r, 120);
        for (int i = 0; i < swap; i++)
            feats[tu_below(&r, 200)] = tu_next(&r);
        CHECK_OK(simlsh_signature_clear(sig));
        CHECK_OK(simlsh_signature_add_features(sig, feats, 200));
        CHECK_OK(simlsh_index_insert(ix, 1000 + d, sig));
    }
    CHECK_OK(simlsh_index_pairs_v2(res, ix, SIMLSH_QUERY_VERIFY, 0, 0.6, 2));
    *pairs = simlsh_results_count(res);
    simlsh_signature_free(sig);
    simlsh_index_free(ix);
    simlsh_params_free(p);
    return res;
}

static void test_pairs_rows(void)
{
    size_t n0, n;
    simlsh_results *ref = isa_pairs(SIMLSH_ISA_SCALAR, &n0);
    CHECK(n0 > 100);
    const int isas[] = {SIMLSH_ISA_AUTO, SIMLSH_ISA_AVX2, SIMLSH_ISA_AVX512};
    for (int i = 0; i < 3; i++) {
        if (!simlsh_isa_supported(isas[i]))
            continue; /* (a row this CPU cannot run: refused, test_dispatch() checks that) */
        simlsh_results *res = isa_pairs(isas[i], &n);
        CHECK(n == n0);
        if (n == n0)
            CHECK(memcmp(simlsh_results_a(res), simlsh_results_a(ref), n * 8) == 0 &&
                  memcmp(simlsh_results_b(res), simlsh_results_b(ref), n * 8) == 0 &&
                  memcmp(simlsh_results_scores(res), simlsh_results_scores(ref), n * 8) == 0);
        simlsh_results_free(res);
    }
    printf("pairs: %zu rows, the same from every row of the table\n", n0);
    simlsh_results_free(ref);
}

int main(void)
{
    test_dispatch();
    test_sketch_pass();
    test_pairs_rows();
    const int isas[] = {SIMLSH_ISA_AVX2, SIMLSH_ISA_AVX512};
    const int nps[] = {1, 7, 33, 100, 128, 1024};
    const int ks[] = {1, 3, 4, 5, 8, 13, 64};
    tu_rng r = {77};
    int compared = 0, differ = 0;
    uint8_t text[5000];
    uint64_t feats[700];
    for (int ii = 0; ii < 2; ii++) {
        if (!simlsh_isa_supported(isas[ii])) {
            printf("isa %d not available here: skipped\n", isas[ii]);
            continue;
        }
        for (int scheme = 0; scheme <= 1; scheme++)
            for (int ni = 0; ni < 6; ni++)
                for (int ki = 0; ki < 7; ki++) {
                    int bits = ki % 3 == 2 ? 64 : 32;
                    simlsh_params *ps = mk(scheme, nps[ni], SIMLSH_ISA_SCALAR, ks[ki], bits);
                    simlsh_params *pv = mk(scheme, nps[ni], isas[ii], ks[ki], bits);
                    simlsh_signature *a, *b;
                    CHECK_OK(simlsh_signature_new(&a, ps));
                    CHECK_OK(simlsh_signature_new(&b, pv));
                    for (int rep = 0; rep < 4; rep++) {
                        size_t n = tu_below(&r, sizeof text);
                        for (size_t i = 0; i < n; i++) /* mostly ASCII, some high bytes */
                            text[i] = (uint8_t)(tu_below(&r, 20) ? 32 + tu_below(&r, 95)
                                                                 : tu_below(&r, 256));
                        size_t nf = tu_below(&r, 700);
                        for (size_t i = 0; i < nf; i++)
                            feats[i] = tu_next(&r) >> tu_below(&r, 64);
                        CHECK_OK(simlsh_signature_clear(a));
                        CHECK_OK(simlsh_signature_clear(b));
                        CHECK_OK(simlsh_signature_add_text(a, text, n));
                        CHECK_OK(simlsh_signature_add_text(b, text, n));
                        CHECK_OK(simlsh_signature_add_features(a, feats, nf));
                        CHECK_OK(simlsh_signature_add_features(b, feats, nf));
                        uint32_t va[1024], vb[1024];
                        size_t na, nb;
                        CHECK_OK(simlsh_signature_values(va, 1024, &na, a));
                        CHECK_OK(simlsh_signature_values(vb, 1024, &nb, b));
                        compared++;
                        if (na != nb || memcmp(va, vb, na * 4) != 0) {
                            differ++;
                            fprintf(stderr, "isa %d scheme %d np %d k %d differs\n", isas[ii],
                                    scheme, nps[ni], ks[ki]);
                        }
                    }
                    simlsh_signature_free(a);
                    simlsh_signature_free(b);
                    simlsh_params_free(ps);
                    simlsh_params_free(pv);
                }
    }
    printf("compared %d signatures, %d differ\n", compared, differ);
    CHECK(differ == 0);
    if (compared == 0) {
        printf("no SIMD path on this CPU\n");
        return tu_failures ? 1 : 77;
    }
    return tu_finish("isa");
}
