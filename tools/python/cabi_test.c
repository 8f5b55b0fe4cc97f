/* The C ABI from plain C (swiftbert.h): every function once, the errors it promises, and four
 * threads embedding at once. Built and run by tools/python/cabi_test.sh; exits non-zero on the
 * first failure, naming it. Argument: a weights folder holding all-MiniLM-L6-v2 and splade-tiny. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swiftbert.h"

static int failures = 0;
#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "cabi_test: FAIL %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, " (last error: %s)\n", swiftbert_last_error()); failures++; } } while (0)
#define EXPECT(call, status) do { int32_t got_ = (call); CHECK(got_ == (status), "%s gave %d, expected %d", #call, got_, (status)); } while (0)

static const char *texts[] = {"SwiftBERT embeds text.", "A man is eating food.", "", "Ünïcödé and emoji 🙂"};
static size_t lengths[4];
static swiftbert_model minilm;
static float serial[4 * 384];

static void *embed_repeatedly(void *unused) {
    (void)unused;
    float out[4 * 384];
    for (int i = 0; i < 25; i++) {
        if (swiftbert_embed(minilm, texts, lengths, 4, -1, 32, NULL, NULL, 0, out, 4 * 384) != SWIFTBERT_OK ||
            memcmp(out, serial, sizeof out) != 0) {
            return (void *)1;
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: cabi_test WEIGHTS_DIR\n"); return 2; }
    char path[4096];
    for (int i = 0; i < 4; i++) lengths[i] = strlen(texts[i]);

    CHECK(swiftbert_abi_version() == SWIFTBERT_ABI_VERSION, "ABI version %d", swiftbert_abi_version());
    CHECK(strlen(swiftbert_version()) > 0, "empty version");
    CHECK(strcmp(swiftbert_last_error(), "") == 0, "an error before any call");

    /* Loading: bad arguments, unknown names, then the real models. */
    swiftbert_model model = 0;
    EXPECT(swiftbert_load(NULL, NULL, 0, &model), SWIFTBERT_INVALID_ARGUMENT);
    CHECK(strlen(swiftbert_last_error()) > 0, "no message for a failed load");
    EXPECT(swiftbert_load("no-such-model-xyz", NULL, 0, &model), SWIFTBERT_NOT_FOUND);
    snprintf(path, sizeof path, "%s/all-MiniLM-L6-v2", argv[1]);
    EXPECT(swiftbert_load(path, "fp64", 0, &model), SWIFTBERT_INVALID_ARGUMENT);
    EXPECT(swiftbert_load(path, "fp32", -1, &model), SWIFTBERT_INVALID_ARGUMENT);
    EXPECT(swiftbert_load(path, "fp32", 0, NULL), SWIFTBERT_INVALID_ARGUMENT);
    EXPECT(swiftbert_load(path, NULL, 2, &minilm), SWIFTBERT_OK);
    CHECK(strcmp(swiftbert_last_error(), "") == 0, "a success leaves the last error set");

    size_t dimension = 0;
    EXPECT(swiftbert_dimension(minilm, &dimension), SWIFTBERT_OK);
    CHECK(dimension == 384, "dimension %zu", dimension);
    EXPECT(swiftbert_dimension(minilm, NULL), SWIFTBERT_INVALID_ARGUMENT);

    /* Dense: normalised vectors, and the buffer and text checks. */
    EXPECT(swiftbert_embed(minilm, texts, lengths, 4, -1, 32, NULL, NULL, 0, serial, 4 * 384), SWIFTBERT_OK);
    for (int row = 0; row < 4; row++) {
        double norm = 0;
        for (int i = 0; i < 384; i++) norm += serial[row * 384 + i] * serial[row * 384 + i];
        CHECK(fabs(sqrt(norm) - 1) < 1e-4, "row %d has norm %f", row, sqrt(norm));
    }
    float small[384];
    EXPECT(swiftbert_embed(minilm, texts, lengths, 4, -1, 32, NULL, NULL, 0, small, 384), SWIFTBERT_BUFFER_TOO_SMALL);
    EXPECT(swiftbert_embed(minilm, texts, lengths, 1, -1, 32, NULL, NULL, 0, NULL, 384), SWIFTBERT_INVALID_ARGUMENT);
    EXPECT(swiftbert_embed(minilm, NULL, NULL, 1, -1, 32, NULL, NULL, 0, small, 384), SWIFTBERT_INVALID_ARGUMENT);
    EXPECT(swiftbert_embed(minilm, texts, lengths, 0, -1, 32, NULL, NULL, 0, NULL, 0), SWIFTBERT_OK);
    EXPECT(swiftbert_embed(minilm, texts, lengths, 1, 2, 32, NULL, NULL, 0, small, 384), SWIFTBERT_INVALID_ARGUMENT);
    EXPECT(swiftbert_embed(minilm, texts, lengths, 1, -1, -5, NULL, NULL, 0, small, 384), SWIFTBERT_INVALID_ARGUMENT);
    EXPECT(swiftbert_embed(minilm, texts, lengths, 1, -1, 32, "no-such-prompt", NULL, 0, small, 384), SWIFTBERT_INVALID_INPUT);
    const char *surrogate[] = {"a\xed\xa0\x80z"};  /* a lone surrogate, as Python's surrogatepass writes it */
    size_t surrogate_length[] = {5};
    EXPECT(swiftbert_embed(minilm, surrogate, surrogate_length, 1, -1, 32, NULL, NULL, 0, small, 384), SWIFTBERT_INVALID_ARGUMENT);
    const char *with_nul[] = {"a\0b"};
    size_t with_nul_length[] = {3};
    EXPECT(swiftbert_embed(minilm, with_nul, with_nul_length, 1, -1, 32, NULL, NULL, 0, small, 384), SWIFTBERT_OK);

    /* Heads the model lacks: the engine's typed error (invalid input, naming the head), not a crash. */
    swiftbert_result result = 0;
    EXPECT(swiftbert_embed_sparse(minilm, texts, lengths, 1, 32, 0, &result), SWIFTBERT_INVALID_INPUT);
    CHECK(strstr(swiftbert_last_error(), "sparse head") != NULL, "message: %s", swiftbert_last_error());
    EXPECT(swiftbert_classify(minilm, texts, lengths, 1, 0, 32, &result), SWIFTBERT_INVALID_INPUT);
    EXPECT(swiftbert_fill_mask(minilm, "a [MASK] b", 10, 3, &result), SWIFTBERT_INVALID_INPUT);
    EXPECT(swiftbert_embed_multi_vector(minilm, texts, lengths, 1, 32, 0, &result), SWIFTBERT_INVALID_INPUT);
    EXPECT(swiftbert_embed_outputs(minilm, texts, lengths, 1, SWIFTBERT_OUTPUT_DENSE | SWIFTBERT_OUTPUT_SPARSE, -1, 32, 0, &result),
           SWIFTBERT_INVALID_INPUT);
    EXPECT(swiftbert_embed_outputs(minilm, texts, lengths, 1, 0, -1, 32, 0, &result), SWIFTBERT_INVALID_ARGUMENT);
    EXPECT(swiftbert_embed_outputs(minilm, texts, lengths, 1, 8, -1, 32, 0, &result), SWIFTBERT_INVALID_ARGUMENT);
    /* The dense output alone: the floats of swiftbert_embed, and dimension in the JSON. */
    EXPECT(swiftbert_embed_outputs(minilm, texts, lengths, 1, SWIFTBERT_OUTPUT_DENSE, -1, 32, 0, &result), SWIFTBERT_OK);
    {
        const float *floats = NULL;
        size_t float_count = 0;
        float alone[384];
        EXPECT(swiftbert_result_floats(result, &floats, &float_count), SWIFTBERT_OK);
        EXPECT(swiftbert_embed(minilm, texts, lengths, 1, -1, 32, NULL, NULL, 0, alone, 384), SWIFTBERT_OK);
        CHECK(float_count == 384 && memcmp(floats, alone, sizeof alone) == 0, "dense output: %zu floats", float_count);
        EXPECT(swiftbert_result_free(result), SWIFTBERT_OK);
    }
    float score;
    EXPECT(swiftbert_rerank(minilm, "q", 1, texts, lengths, 1, 32, &score, 1), SWIFTBERT_INVALID_INPUT);

    /* Token embeddings: (tokens x 384) per text, the JSON's counts summing to the floats. */
    EXPECT(swiftbert_embed_tokens(minilm, texts, lengths, 2, 0, 32, NULL, NULL, 0, &result), SWIFTBERT_OK);
    {
        const float *token_floats = NULL;
        size_t token_count = 0, meta_length = 0;
        const char *meta = NULL;
        EXPECT(swiftbert_result_floats(result, &token_floats, &token_count), SWIFTBERT_OK);
        EXPECT(swiftbert_result_json(result, &meta, &meta_length), SWIFTBERT_OK);
        int dimension_seen = 0, first = 0, second = 0;
        CHECK(meta && sscanf(meta, "{\"dimension\":%d,\"tokens\":[%d,%d]}", &dimension_seen, &first, &second) == 3,
              "token JSON: %s", meta ? meta : "(null)");
        CHECK(dimension_seen == 384 && first >= 2 && second >= 2 && token_count == (size_t)(first + second) * 384,
              "token embeddings: %zu floats for %d + %d tokens of %d", token_count, first, second, dimension_seen);
        EXPECT(swiftbert_result_free(result), SWIFTBERT_OK);
    }
    EXPECT(swiftbert_embed_tokens(minilm, texts, lengths, 1, 2, 32, NULL, NULL, 0, &result), SWIFTBERT_INVALID_ARGUMENT);
    EXPECT(swiftbert_embed_tokens(minilm, texts, lengths, 1, 0, 32, "no-such-prompt", NULL, 0, &result), SWIFTBERT_INVALID_INPUT);

    /* Results: JSON, and closed result handles. */
    EXPECT(swiftbert_tokenize(minilm, texts[0], lengths[0], 0, &result), SWIFTBERT_OK);
    const char *json = NULL;
    size_t json_length = 0;
    EXPECT(swiftbert_result_json(result, &json, &json_length), SWIFTBERT_OK);
    CHECK(json && strstr(json, "\"tokens\"") && json_length == strlen(json), "tokenize JSON: %s", json ? json : "(null)");
    const float *floats = NULL;
    size_t float_count = 99;
    EXPECT(swiftbert_result_floats(result, &floats, &float_count), SWIFTBERT_OK);
    CHECK(float_count == 0, "tokenize has %zu floats", float_count);
    EXPECT(swiftbert_result_free(result), SWIFTBERT_OK);
    EXPECT(swiftbert_result_free(result), SWIFTBERT_CLOSED_HANDLE);
    EXPECT(swiftbert_result_json(result, &json, &json_length), SWIFTBERT_CLOSED_HANDLE);
    EXPECT(swiftbert_models(&result), SWIFTBERT_OK);
    EXPECT(swiftbert_result_json(result, &json, &json_length), SWIFTBERT_OK);
    CHECK(strstr(json, "all-MiniLM-L6-v2") != NULL, "models JSON lacks all-MiniLM-L6-v2: %s", json);
    EXPECT(swiftbert_result_free(result), SWIFTBERT_OK);
    EXPECT(swiftbert_pull("no-such-model-xyz", 0, NULL, NULL, &result), SWIFTBERT_PULL_FAILED);

    /* Four threads on one model give the serial vectors. */
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) pthread_create(&threads[i], NULL, embed_repeatedly, NULL);
    for (int i = 0; i < 4; i++) {
        void *status = NULL;
        pthread_join(threads[i], &status);
        CHECK(status == NULL, "thread %d gave other vectors or failed", i);
    }

    /* SPLADE: sparse vectors and fill-mask. */
    swiftbert_model splade = 0;
    snprintf(path, sizeof path, "%s/splade-tiny", argv[1]);
    EXPECT(swiftbert_load(path, "fp32", 0, &splade), SWIFTBERT_OK);
    EXPECT(swiftbert_embed_sparse(splade, texts, lengths, 2, 32, 0, &result), SWIFTBERT_OK);
    const int32_t *ints = NULL;
    size_t int_count = 0;
    EXPECT(swiftbert_result_ints(result, &ints, &int_count), SWIFTBERT_OK);
    EXPECT(swiftbert_result_floats(result, &floats, &float_count), SWIFTBERT_OK);
    CHECK(int_count > 0 && int_count == float_count, "sparse: %zu ids, %zu weights", int_count, float_count);
    EXPECT(swiftbert_result_free(result), SWIFTBERT_OK);
    const char *masked = "The capital of France is [MASK].";
    EXPECT(swiftbert_fill_mask(splade, masked, strlen(masked), 3, &result), SWIFTBERT_OK);
    EXPECT(swiftbert_result_json(result, &json, &json_length), SWIFTBERT_OK);
    CHECK(strstr(json, "\"candidates\"") != NULL && strstr(json, "\"probability\"") != NULL, "fill-mask JSON: %s", json);
    EXPECT(swiftbert_result_free(result), SWIFTBERT_OK);
    EXPECT(swiftbert_fill_mask(splade, "no mask here", 12, 3, &result), SWIFTBERT_INVALID_INPUT);
    EXPECT(swiftbert_free(splade), SWIFTBERT_OK);

    /* Embedding quantisation: signs packed 8 to a byte, first dimension in the top bit; int8 and
     * uint8 in 255 steps between two calibration rows (the minima and the maxima). */
    const float vectors[2 * 9] = {1, -1, 0, 2, -3, 4, 0.5f, -0.5f, 7,   -1, 1, 1, -1, 0, 0, 0, 1, -2};
    uint8_t packed[4] = {0};
    EXPECT(swiftbert_quantize_embeddings("ubinary", vectors, 2, 9, NULL, 0, packed, 4), SWIFTBERT_OK);
    CHECK(packed[0] == 0x96 && packed[1] == 0x80 && packed[2] == 0x61 && packed[3] == 0x00,
          "ubinary bytes %02x %02x %02x %02x", packed[0], packed[1], packed[2], packed[3]);
    EXPECT(swiftbert_quantize_embeddings("binary", vectors, 2, 9, NULL, 0, packed, 4), SWIFTBERT_OK);
    CHECK(packed[0] == 0x16 && packed[2] == 0xE1, "binary bytes %02x %02x", packed[0], packed[2]);
    const float range[2 * 2] = {-1, 0, 1, 255};
    const float values[2] = {0, 300};
    uint8_t buckets[2] = {0};
    EXPECT(swiftbert_quantize_embeddings("uint8", values, 1, 2, range, 2, buckets, 2), SWIFTBERT_OK);
    CHECK(buckets[0] == 127 && buckets[1] == 255, "uint8 buckets %u %u", buckets[0], buckets[1]);
    EXPECT(swiftbert_quantize_embeddings("int8", values, 1, 2, range, 2, buckets, 2), SWIFTBERT_OK);
    CHECK((int8_t)buckets[0] == -1 && (int8_t)buckets[1] == 127, "int8 buckets %d %d", (int8_t)buckets[0], (int8_t)buckets[1]);
    EXPECT(swiftbert_quantize_embeddings("int8", values, 1, 2, NULL, 0, buckets, 2), SWIFTBERT_INVALID_INPUT);
    CHECK(strstr(swiftbert_last_error(), "calibration") != NULL, "message: %s", swiftbert_last_error());
    EXPECT(swiftbert_quantize_embeddings("int4", vectors, 2, 9, NULL, 0, packed, 4), SWIFTBERT_INVALID_ARGUMENT);
    EXPECT(swiftbert_quantize_embeddings("float32", vectors, 2, 9, NULL, 0, packed, 4), SWIFTBERT_INVALID_ARGUMENT);
    EXPECT(swiftbert_quantize_embeddings("ubinary", vectors, 2, 9, NULL, 0, packed, 3), SWIFTBERT_BUFFER_TOO_SMALL);
    EXPECT(swiftbert_quantize_embeddings("ubinary", NULL, 2, 9, NULL, 0, packed, 4), SWIFTBERT_INVALID_ARGUMENT);
    EXPECT(swiftbert_quantize_embeddings("ubinary", vectors, 2, 0, NULL, 0, packed, 4), SWIFTBERT_INVALID_ARGUMENT);
    EXPECT(swiftbert_quantize_embeddings("ubinary", vectors, 0, 9, NULL, 0, NULL, 0), SWIFTBERT_OK);

    /* Closed model handles. */
    EXPECT(swiftbert_free(minilm), SWIFTBERT_OK);
    EXPECT(swiftbert_free(minilm), SWIFTBERT_CLOSED_HANDLE);
    EXPECT(swiftbert_embed(minilm, texts, lengths, 1, -1, 32, NULL, NULL, 0, small, 384), SWIFTBERT_CLOSED_HANDLE);
    EXPECT(swiftbert_dimension(0, &dimension), SWIFTBERT_CLOSED_HANDLE);

    if (failures) { fprintf(stderr, "cabi_test: %d failures\n", failures); return 1; }
    printf("cabi_test: all checks passed\n");
    return 0;
}
