/*
 * Our MurmurHash3 against an independent build of Austin Appleby's reference
 * code (Debian's libmurmurhash), on random inputs and seeds, including the
 * window path of every ISA this CPU runs. Skips (77) without the library.
 */
#if defined(HAVE_LIBMURMURHASH) && HAVE_LIBMURMURHASH

#include <murmurhash.h>

#include "cpu.h"
#include "murmur3.h"
#include "params.h"
#include "testutil.h"

#define ROUNDS 10000
#define MAX_LEN 300

static void test_random_inputs(void)
{
    tu_rng rng = {0x4d75726du};
    uint8_t storage[MAX_LEN + 8];
    int bad32 = 0, bad128 = 0;
    for (int round = 0; round < ROUNDS; round++) {
        size_t len = (size_t)tu_below(&rng, MAX_LEN + 1);
        /* Random offsets keep the reference's unaligned block reads honest. */
        uint8_t *data = storage + tu_below(&rng, 8);
        for (size_t i = 0; i < len; i++)
            data[i] = (uint8_t)tu_next(&rng);
        uint32_t seed = (uint32_t)tu_next(&rng);
        if (round % 16 == 0)
            seed = round % 32 == 0 ? 0 : 0xffffffffu;

        uint32_t ref32[1];
        lmmh_x86_32(data, (unsigned)len, seed, ref32);
        if (simlsh__murmur3_32(data, len, seed) != ref32[0] && bad32++ == 0)
            fprintf(stderr, "x86_32 differs: len %zu seed 0x%08" PRIx32 "\n", len, seed);

        uint64_t ref128[2], got128[2];
        lmmh_x64_128(data, (unsigned)len, seed, ref128);
        simlsh__murmur3_128(data, len, seed, got128);
        if ((got128[0] != ref128[0] || got128[1] != ref128[1]) && bad128++ == 0)
            fprintf(stderr, "x64_128 differs: len %zu seed 0x%08" PRIx32 "\n", len, seed);
    }
    CHECK(bad32 == 0);
    CHECK(bad128 == 0);
}

static void test_windows_vs_reference(void)
{
    static const int isas[] = {SIMLSH_ISA_SCALAR, SIMLSH_ISA_AVX2, SIMLSH_ISA_AVX512};
    tu_rng rng = {0x77696e64u};
    enum {
        N = 500
    };
    uint8_t buf[N + SIMLSH__MAX_K + SIMLSH__PAD];
    uint32_t out[N];
    for (size_t t = 0; t < sizeof isas / sizeof isas[0]; t++) {
        if (!simlsh_isa_supported(isas[t]))
            continue;
        int bad = 0;
        for (size_t k = 1; k <= SIMLSH__MAX_K; k++) {
            size_t n = (size_t)tu_below(&rng, N + 1);
            for (size_t i = 0; i < sizeof buf; i++)
                buf[i] = (uint8_t)tu_next(&rng);
            uint32_t seed = (uint32_t)tu_next(&rng);
            simlsh__murmur3_32_windows(out, buf, n, k, seed, isas[t]);
            for (size_t i = 0; i < n; i++) {
                uint32_t ref[1];
                lmmh_x86_32(buf + i, (unsigned)k, seed, ref);
                if (out[i] != ref[0] && bad++ == 0)
                    fprintf(stderr, "windows (isa %d) differ: k %zu n %zu window %zu\n", isas[t], k,
                            n, i);
            }
        }
        CHECK(bad == 0);
    }
}

int main(void)
{
    test_random_inputs();
    test_windows_vs_reference();
    return tu_finish("murmur3-ref");
}

#else

int main(void)
{
    /* Built without libmurmurhash: nothing to compare against. */
    return 77;
}

#endif
