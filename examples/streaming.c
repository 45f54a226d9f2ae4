/*
 * Streaming: sign a large document fed in chunks, as it arrives from a file
 * or a socket, without holding it in memory. The signature does not depend
 * on where the chunks split the text, even inside a UTF-8 sequence or a
 * shingle, so this example checks it against signing the text in one call.
 *
 * Usage: streaming [FILE]   (without FILE, an 8 MB generated text)
 */
#include <simlsh.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                   \
    do {                                                              \
        int rc_ = (call);                                             \
        if (rc_ != 0) {                                               \
            fprintf(stderr, "%s: %s\n", #call, simlsh_strerror(rc_)); \
            exit(1);                                                  \
        }                                                             \
    } while (0)

/* Multi-byte UTF-8 on purpose, so chunk boundaries fall inside sequences. */
static const char *const words[] = {"the",    "river", "café",     "naïve",   "über", "東京",
                                    "signal", "ünd",   "ångström", "shingle", "data", "ok"};

static char *generate(size_t size)
{
    char *text = malloc(size);
    if (!text)
        return NULL;
    uint64_t x = 0x9E3779B97F4A7C15u; /* xorshift: same text on every run */
    size_t n = 0;
    while (n < size) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const char *w = words[x % (sizeof words / sizeof words[0])];
        size_t len = strlen(w);
        if (n + len + 1 > size)
            break;
        memcpy(text + n, w, len);
        n += len;
        text[n++] = (x >> 32) % 9 ? ' ' : '\n';
    }
    memset(text + n, ' ', size - n);
    return text;
}

/* A file is the real use: read fixed-size chunks, feed each one. */
static int sign_file(const char *path, simlsh_signature *sig)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    static char buf[1 << 16];
    size_t n, total = 0;
    CHECK(simlsh_signature_begin(sig));
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        CHECK(simlsh_signature_feed(sig, buf, n));
        total += n;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: read error\n", path);
        CHECK(simlsh_signature_abort(sig)); /* back to the state before begin */
        return 1;
    }
    CHECK(simlsh_signature_end(sig));
    printf("%s: %zu bytes streamed in 64 KiB chunks\n", path, total);
    return 0;
}

int main(int argc, char **argv)
{
    simlsh_params *params;
    simlsh_signature *whole, *chunked;
    CHECK(simlsh_params_new(&params, NULL));
    CHECK(simlsh_signature_new(&whole, params));
    CHECK(simlsh_signature_new(&chunked, params));

    if (argc > 1) {
        int rc = sign_file(argv[1], chunked);
        simlsh_signature_free(whole);
        simlsh_signature_free(chunked);
        simlsh_params_free(params);
        return rc;
    }

    size_t size = 8u << 20;
    char *text = generate(size);
    if (!text) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    CHECK(simlsh_signature_add_text(whole, text, size));

    /* Chunks of 1 byte to 64 KiB, sizes from a fixed sequence. */
    size_t off = 0, chunks = 0;
    uint32_t x = 12345;
    CHECK(simlsh_signature_begin(chunked));
    while (off < size) {
        x = x * 1103515245u + 12345u;
        size_t len = 1 + (x >> 8) % 65536;
        if (len > size - off)
            len = size - off;
        CHECK(simlsh_signature_feed(chunked, text + off, len));
        off += len;
        chunks++;
    }
    CHECK(simlsh_signature_end(chunked));

    size_t np = 0;
    CHECK(simlsh_signature_values(NULL, 0, &np, whole));
    uint32_t *a = malloc(np * sizeof *a), *b = malloc(np * sizeof *b);
    if (!a || !b) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    CHECK(simlsh_signature_values(a, np, &np, whole));
    CHECK(simlsh_signature_values(b, np, &np, chunked));
    int same = memcmp(a, b, np * sizeof *a) == 0;
    printf("%zu bytes in %zu chunks: signature %s the one-shot signature\n", size, chunks,
           same ? "identical to" : "DIFFERS from");

    free(a);
    free(b);
    free(text);
    simlsh_signature_free(whole);
    simlsh_signature_free(chunked);
    simlsh_params_free(params);
    return same ? 0 : 1;
}
