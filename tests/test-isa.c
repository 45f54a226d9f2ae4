/* Every SIMD path the CPU offers gives the scalar path's bits exactly:
 * signatures from text (window hashing + OPH / classic kernels) and from raw
 * features, for num_perm values that do and do not fill whole vectors. And
 * AUTO dispatches to the best ISA the host has. */
#include "cpu.h"
#include "signature.h"
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
        CHECK(k->murmur3_windows != NULL && k->oph_values != NULL && k->classic_update != NULL);
    }
}

int main(void)
{
    test_dispatch();
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
