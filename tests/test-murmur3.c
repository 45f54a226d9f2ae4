/*
 * MurmurHash3: our x86_32 and x64_128 against published vectors, the
 * SMHasher verification values, alignment independence, every window path
 * against the scalar hash, and simlsh_hash_bytes().
 */
#include "cpu.h"
#include "le.h"
#include "murmur3.h"
#include "params.h"
#include "testutil.h"

/* ---- published vectors ---------------------------------------------------- */

struct vec32 {
    const char *data;
    size_t len;
    uint32_t seed;
    uint32_t want;
};

#define S(s) s, sizeof(s) - 1

static const struct vec32 vectors32[] = {
    /* Ian Boyd's answer to "MurmurHash3 test vectors",
     * https://stackoverflow.com/questions/14747343 (derived from SMHasher):
     * empty input with the seeds that expose signed seed handling, byte
     * order and every tail length. */
    {S(""), 0, 0x00000000u},
    {S(""), 1, 0x514E28B7u},
    {S(""), 0xffffffffu, 0x81F16F39u},
    {S("\xff\xff\xff\xff"), 0, 0x76293B50u},
    {S("\x21\x43\x65\x87"), 0, 0xF55B516Bu},
    {S("\x21\x43\x65\x87"), 0x5082EDEEu, 0x2362F9DEu},
    {S("\x21\x43\x65"), 0, 0x7E4A8634u},
    {S("\x21\x43"), 0, 0xA0F7B07Au},
    {S("\x21"), 0, 0x72661CF4u},
    {S("\x00\x00\x00\x00"), 0, 0x2362F9DEu},
    {S("\x00\x00\x00"), 0, 0x85F0B427u},
    {S("\x00\x00"), 0, 0x30F4C306u},
    {S("\x00"), 0, 0x514E28B7u},
    /* Same answer, string vectors. */
    {S("aaaa"), 0x9747b28cu, 0x5A97808Au},
    {S("aaa"), 0x9747b28cu, 0x283E0130u},
    {S("aa"), 0x9747b28cu, 0x5D211726u},
    {S("a"), 0x9747b28cu, 0x7FA09EA6u},
    {S("abcd"), 0x9747b28cu, 0xF0478627u},
    {S("abc"), 0x9747b28cu, 0xC84A62DDu},
    {S("ab"), 0x9747b28cu, 0x74875592u},
    {S("Hello, world!"), 0x9747b28cu, 0x24884CBAu},
    {S("\xcf\x80\xcf\x80\xcf\x80\xcf\x80\xcf\x80\xcf\x80\xcf\x80\xcf\x80"), 0x9747b28cu,
     0xD58063C1u}, /* "ππππππππ" in UTF-8 */
    {S("abc"), 0, 0xB3DD93FAu},
    {S("The quick brown fox jumps over the lazy dog"), 0x9747b28cu, 0x2FA826CDu},
    /* git, t/t0095-bloom.sh (Bloom filters use MurmurHash3 x86_32, seed 0). */
    {S("Hello world!"), 0, 0x627b0c2cu},
    {S("The quick brown fox jumps over the lazy dog"), 0, 0x2e4ff723u},
    /* Seed-0 values that many independent ports' test suites repeat; they
     * also agree with Appleby's code as packaged in Debian's libmurmurhash. */
    {S("a"), 0, 0x3c2569b2u},
    {S("Hello, world!"), 0, 0xc0363e43u},
    /* spaolacci/murmur3 (Go), murmur_test.go, h32 column. */
    {S("hello"), 0x00, 0x248bfa47u},
    {S("hello, world"), 0x00, 0x149bbb7fu},
    {S("19 Jan 2038 at 3:14:07 AM"), 0x00, 0xe31e8a70u},
    {S("The quick brown fox jumps over the lazy dog."), 0x00, 0xd5c48bfcu},
    {S("hello"), 0x01, 0xbb4abcadu},
    {S("hello, world"), 0x01, 0x6f5cb2e9u},
    {S("19 Jan 2038 at 3:14:07 AM"), 0x01, 0xf50e1f30u},
    {S("The quick brown fox jumps over the lazy dog."), 0x01, 0x846f6a36u},
    {S(""), 0x2a, 0x087fcd5cu},
    {S("hello"), 0x2a, 0xe2dbd2e1u},
    {S("hello, world"), 0x2a, 0x7ec7c6c2u},
    {S("19 Jan 2038 at 3:14:07 AM"), 0x2a, 0x58f745f6u},
    {S("The quick brown fox jumps over the lazy dog."), 0x2a, 0xc02d1434u},
    /* mmh3 (Python) README: hash('foo') = -156908512, hash('foo', 42) =
     * -1322301282, as signed 32-bit values. */
    {S("foo"), 0, 0xf6a5c420u},
    {S("foo"), 42, 0xb12f489eu},
};

struct vec128 {
    const char *data;
    size_t len;
    uint32_t seed;
    uint64_t h1, h2;
};

static const struct vec128 vectors128[] = {
    /* spaolacci/murmur3 (Go), murmur_test.go: Sum128 = (h1, h2) of x64_128. */
    {S(""), 0x00, 0x0000000000000000ull, 0x0000000000000000ull},
    {S("hello"), 0x00, 0xcbd8a7b341bd9b02ull, 0x5b1e906a48ae1d19ull},
    {S("hello, world"), 0x00, 0x342fac623a5ebc8eull, 0x4cdcbc079642414dull},
    {S("19 Jan 2038 at 3:14:07 AM"), 0x00, 0xb89e5988b737affcull, 0x664fc2950231b2cbull},
    {S("The quick brown fox jumps over the lazy dog."), 0x00, 0xcd99481f9ee902c9ull,
     0x695da1a38987b6e7ull},
    {S(""), 0x01, 0x4610abe56eff5cb5ull, 0x51622daa78f83583ull},
    {S("hello"), 0x01, 0xa78ddff5adae8d10ull, 0x128900ef20900135ull},
    {S("hello, world"), 0x01, 0x8b95f808840725c6ull, 0x1597ed5422bd493bull},
    {S("19 Jan 2038 at 3:14:07 AM"), 0x01, 0x2a929de9c8f97b2full, 0x56a41d99af43a2dbull},
    {S("The quick brown fox jumps over the lazy dog."), 0x01, 0xfb3325171f9744daull,
     0xaaf8b92a5f722952ull},
    {S(""), 0x2a, 0xf02aa77dfa1b8523ull, 0xd1016610da11cbb9ull},
    {S("hello"), 0x2a, 0xc4b8b3c960af6f08ull, 0x2334b875b0efbc7aull},
    {S("hello, world"), 0x2a, 0xb91864d797caa956ull, 0xd5d139a55afe6150ull},
    {S("19 Jan 2038 at 3:14:07 AM"), 0x2a, 0xfd8f19ebdc8c6b6aull, 0xd30fdc310fa08ff9ull},
    {S("The quick brown fox jumps over the lazy dog."), 0x2a, 0x74f33c659cda5af7ull,
     0x4ec7a891caf316f0ull},
    /* Guava, Murmur3_128HashFunctionTest.testKnownValues (seed, h1, h2). */
    {S("hell"), 0, 0x629942693e10f867ull, 0x92db0b82baeb5347ull},
    {S("hello"), 1, 0xa78ddff5adae8d10ull, 0x128900ef20900135ull},
    {S("hello "), 2, 0x8a486b23f422e826ull, 0xf962a2c58947765full},
    {S("hello w"), 3, 0x2ea59f466f6bed8cull, 0xc610990acc428a17ull},
    {S("hello wo"), 4, 0x79f6305a386c572cull, 0x46305aed3483b94eull},
    {S("hello wor"), 5, 0xc2219d213ec1f1b5ull, 0xa1d8e2e0a52785bdull},
    {S("The quick brown fox jumps over the lazy dog"), 0, 0xe34bbc7bbc071b6cull,
     0x7a433ca9c49a9347ull},
    {S("The quick brown fox jumps over the lazy cog"), 0, 0x658ca970ff85269aull,
     0x43fee3eaa68e5c3eull},
    /* mmh3 (Python) README: hash64('foo', signed=False). */
    {S("foo"), 0, 16316970633193145697ull, 9128664383759220103ull},
};

static void test_published(void)
{
    for (size_t i = 0; i < sizeof vectors32 / sizeof vectors32[0]; i++) {
        const struct vec32 *v = &vectors32[i];
        uint32_t got = simlsh__murmur3_32(v->data, v->len, v->seed);
        CHECK(got == v->want);
        if (got != v->want)
            fprintf(stderr,
                    "  x86_32 vector %zu (len %zu, seed 0x%08" PRIx32 "): got 0x%08" PRIx32
                    ", want 0x%08" PRIx32 "\n",
                    i, v->len, v->seed, got, v->want);
    }
    for (size_t i = 0; i < sizeof vectors128 / sizeof vectors128[0]; i++) {
        const struct vec128 *v = &vectors128[i];
        uint64_t got[2];
        simlsh__murmur3_128(v->data, v->len, v->seed, got);
        CHECK(got[0] == v->h1 && got[1] == v->h2);
        if (got[0] != v->h1 || got[1] != v->h2)
            fprintf(stderr,
                    "  x64_128 vector %zu (len %zu, seed %" PRIu32 "): got %016" PRIx64
                    "%016" PRIx64 ", want %016" PRIx64 "%016" PRIx64 "\n",
                    i, v->len, v->seed, got[0], got[1], v->h1, v->h2);
    }
    /* A 256-byte run exercises many whole blocks (same answer as above). */
    uint8_t a256[256];
    memset(a256, 'a', sizeof a256);
    CHECK(simlsh__murmur3_32(a256, sizeof a256, 0x9747b28cu) == 0x37405BDCu);
}

/* SMHasher's VerificationTest: hash keys {0}, {0,1}, ... {0..254} with seed
 * 256 - len, hash the concatenated results with seed 0, and compare the first
 * four bytes (little-endian) with the value SMHasher publishes per hash. */
static void test_smhasher_verification(void)
{
    uint8_t key[256];
    uint8_t hashes32[256 * 4];
    uint8_t hashes128[256 * 16];
    for (int i = 0; i < 256; i++) {
        key[i] = (uint8_t)i;
        uint32_t seed = (uint32_t)(256 - i);
        simlsh__wr32(hashes32 + 4 * i, simlsh__murmur3_32(key, (size_t)i, seed));
        uint64_t h[2];
        simlsh__murmur3_128(key, (size_t)i, seed, h);
        simlsh__wr64(hashes128 + 16 * i, h[0]);
        simlsh__wr64(hashes128 + 16 * i + 8, h[1]);
    }
    uint8_t final[16];
    simlsh__wr32(final, simlsh__murmur3_32(hashes32, sizeof hashes32, 0));
    CHECK(simlsh__rd32(final) == 0xB0F57EE3u);

    uint64_t h[2];
    simlsh__murmur3_128(hashes128, sizeof hashes128, 0, h);
    simlsh__wr64(final, h[0]);
    simlsh__wr64(final + 8, h[1]);
    CHECK(simlsh__rd32(final) == 0x6384BA69u);
}

/* Inputs are read byte-wise, so no length or alignment may change a value. */
static void test_alignment(void)
{
    tu_rng rng = {0x5eed0001u};
    uint8_t src[64];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)tu_next(&rng);
    uint8_t storage[64 + 16];
    for (size_t len = 0; len <= 64; len++) {
        uint32_t seed = (uint32_t)tu_next(&rng);
        uint32_t want32 = simlsh__murmur3_32(src, len, seed);
        uint64_t want128[2];
        simlsh__murmur3_128(src, len, seed, want128);
        for (size_t a = 0; a < 8; a++) {
            memset(storage, 0xA5, sizeof storage);
            memcpy(storage + a, src, len);
            CHECK(simlsh__murmur3_32(storage + a, len, seed) == want32);
            uint64_t got[2];
            simlsh__murmur3_128(storage + a, len, seed, got);
            CHECK(got[0] == want128[0] && got[1] == want128[1]);
            /* Bytes after the input must not matter either. */
            memset(storage + a + len, 0x5A, sizeof storage - a - len);
            CHECK(simlsh__murmur3_32(storage + a, len, seed) == want32);
        }
    }
}

/* ---- window hashing ------------------------------------------------------- */

static const char *isa_name(int isa)
{
    switch (isa) {
    case SIMLSH_ISA_SCALAR:
        return "scalar";
    case SIMLSH_ISA_AVX2:
        return "avx2";
    case SIMLSH_ISA_AVX512:
        return "avx512";
    default:
        return "?";
    }
}

#define SENTINEL 0xDEADBEEFu

/* Hash every window of a buffer allocated to exactly n + k + SIMLSH__PAD
 * bytes past an offset (so a sanitizer catches any read beyond the
 * contract) and compare each with the one-shot hash. Returns mismatches. */
static int check_windows(tu_rng *rng, int isa, size_t n, size_t k, size_t offset, int text)
{
    size_t total = offset + n + k + SIMLSH__PAD;
    uint8_t *base = malloc(total);
    uint32_t *out = malloc((n + 8) * sizeof *out);
    if (base == NULL || out == NULL) {
        free(base);
        free(out);
        CHECK(0 && "out of memory");
        return 1;
    }
    for (size_t i = 0; i < total; i++)
        base[i] = text ? (uint8_t) "abcdefgh ijk"[tu_below(rng, 12)] : (uint8_t)tu_next(rng);
    const uint8_t *buf = base + offset;
    for (size_t i = 0; i < n + 8; i++)
        out[i] = SENTINEL;
    uint32_t seed = (uint32_t)tu_next(rng);
    simlsh__murmur3_32_windows(out, buf, n, k, seed, isa);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t want = simlsh__murmur3_32(buf + i, k, seed);
        if (out[i] != want) {
            if (bad == 0)
                fprintf(stderr,
                        "  %s n=%zu k=%zu offset=%zu: window %zu got 0x%08" PRIx32
                        " want 0x%08" PRIx32 "\n",
                        isa_name(isa), n, k, offset, i, out[i], want);
            bad++;
        }
    }
    for (size_t i = n; i < n + 8; i++) {
        if (out[i] != SENTINEL) {
            fprintf(stderr, "  %s n=%zu k=%zu: wrote past out[n] at %zu\n", isa_name(isa), n, k, i);
            bad++;
            break;
        }
    }
    free(base);
    free(out);
    return bad;
}

static void test_windows(void)
{
    static const int isas[] = {SIMLSH_ISA_SCALAR, SIMLSH_ISA_AVX2, SIMLSH_ISA_AVX512};
    for (size_t t = 0; t < sizeof isas / sizeof isas[0]; t++) {
        int isa = isas[t];
        if (!simlsh_isa_supported(isa)) {
            printf("murmur3: %s not supported here, skipped\n", isa_name(isa));
            continue;
        }
        tu_rng rng = {0x3172a5u + (uint64_t)t};
        int bad = 0;
        for (size_t k = 1; k <= SIMLSH__MAX_K; k++)
            for (size_t n = 0; n <= 200; n++)
                bad += check_windows(&rng, isa, n, k, n % 8, 0);
        /* Long runs over text-like bytes, at sizes around the vector widths. */
        static const size_t big[] = {255, 256, 257, 1000, 2047, 2048, 2049, 4099};
        static const size_t ks[] = {1, 3, 4, 5, 7, 8, 9, 16, 17, 31, 64};
        for (size_t b = 0; b < sizeof big / sizeof big[0]; b++)
            for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++)
                bad += check_windows(&rng, isa, big[b], ks[j], b % 8, 1);
        CHECK(bad == 0);
        printf("murmur3: windows %s: %d mismatches\n", isa_name(isa), bad);
    }

    /* Every ISA gives the same bits as every other on the same input. */
    tu_rng rng = {0xc0ffeeu};
    size_t n = 333, k = 5;
    uint8_t *buf = malloc(n + k + SIMLSH__PAD);
    uint32_t *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
    if (buf && ref && got) {
        for (size_t i = 0; i < n + k + SIMLSH__PAD; i++)
            buf[i] = (uint8_t)tu_next(&rng);
        simlsh__murmur3_32_windows(ref, buf, n, k, 7, SIMLSH_ISA_SCALAR);
        for (size_t t = 0; t < sizeof isas / sizeof isas[0]; t++) {
            if (!simlsh_isa_supported(isas[t]))
                continue;
            simlsh__murmur3_32_windows(got, buf, n, k, 7, isas[t]);
            CHECK(memcmp(ref, got, n * sizeof *got) == 0);
        }
        /* A published value through the window path: window 0 of the fox. */
        static const char fox[] = "The quick brown fox jumps over the lazy dog";
        uint8_t padded[sizeof fox + SIMLSH__PAD];
        memset(padded, 0, sizeof padded);
        memcpy(padded, fox, sizeof fox - 1);
        for (size_t t = 0; t < sizeof isas / sizeof isas[0]; t++) {
            if (!simlsh_isa_supported(isas[t]))
                continue;
            uint32_t h = 0;
            simlsh__murmur3_32_windows(&h, padded, 1, sizeof fox - 1, 0, isas[t]);
            CHECK(h == 0x2e4ff723u);
        }
    } else {
        CHECK(0 && "out of memory");
    }
    free(buf);
    free(ref);
    free(got);
}

/* ---- simlsh_hash_bytes ---------------------------------------------------- */

static void test_hash_bytes(void)
{
    simlsh_params *p32 = NULL, *p64 = NULL;
    CHECK_OK(simlsh_params_new(&p32, NULL));
    CHECK_OK(simlsh_params_new(&p64, NULL));
    if (p32 == NULL || p64 == NULL) {
        simlsh_params_free(p32);
        simlsh_params_free(p64);
        return;
    }
    CHECK_OK(simlsh_params_set_int(p64, SIMLSH_PARAM_HASH_BITS, 64));

    /* Default seed 0: published values come straight through. */
    static const char fox[] = "The quick brown fox jumps over the lazy dog";
    uint64_t out = 0;
    CHECK_OK(simlsh_hash_bytes(&out, p32, fox, sizeof fox - 1));
    CHECK(out == 0x2e4ff723u);
    CHECK_OK(simlsh_hash_bytes(&out, p64, fox, sizeof fox - 1));
    CHECK(out == 0xe34bbc7bbc071b6cull);

    tu_rng rng = {0xb17e5u};
    static const int64_t seeds[] = {0, 1, 42, 0x9747b28c, 0xffffffff};
    uint8_t data[100];
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        uint32_t seed = (uint32_t)seeds[s];
        CHECK_OK(simlsh_params_set_int(p32, SIMLSH_PARAM_SEED, seeds[s]));
        CHECK_OK(simlsh_params_set_int(p64, SIMLSH_PARAM_SEED, seeds[s]));
        for (size_t len = 0; len <= sizeof data; len++) {
            for (size_t i = 0; i < len; i++)
                data[i] = (uint8_t)tu_next(&rng);
            uint64_t h[2];
            simlsh__murmur3_128(data, len, seed, h);
            CHECK_OK(simlsh_hash_bytes(&out, p32, data, len));
            CHECK(out == (uint64_t)simlsh__murmur3_32(data, len, seed));
            CHECK_OK(simlsh_hash_bytes(&out, p64, data, len));
            CHECK(out == h[0]);
        }
        /* NULL data is fine when there is nothing to read. */
        out = 12345;
        CHECK_OK(simlsh_hash_bytes(&out, p32, NULL, 0));
        CHECK(out == (uint64_t)simlsh__murmur3_32("", 0, seed));
        uint64_t e[2];
        simlsh__murmur3_128("", 0, seed, e);
        CHECK_OK(simlsh_hash_bytes(&out, p64, NULL, 0));
        CHECK(out == e[0]);
    }

    /* Errors leave the output alone. */
    out = 777;
    CHECK_RC(simlsh_hash_bytes(NULL, p32, "x", 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_hash_bytes(&out, NULL, "x", 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_hash_bytes(&out, NULL, NULL, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_hash_bytes(&out, p32, NULL, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_hash_bytes(&out, p64, NULL, 5), SIMLSH_EINVAL);
    CHECK(out == 777);

    simlsh_params_free(p32);
    simlsh_params_free(p64);
}

int main(void)
{
    test_published();
    test_smhasher_verification();
    test_alignment();
    test_windows();
    test_hash_bytes();
    return tu_finish("murmur3");
}
