/* swiftbert.h: the C ABI of libswiftbert.so, the SwiftBERT engine in-process (issue 46).
 *
 * Rules every function keeps:
 *  - It returns a status (SWIFTBERT_OK or an error code below) and never aborts the process on
 *    bad input: null pointers, invalid UTF-8, closed handles and too-small buffers are errors.
 *    swiftbert_last_error() then gives the engine's message, for the calling thread.
 *  - Handles (models and results) are numbers, not pointers: a freed or unknown handle gives
 *    SWIFTBERT_CLOSED_HANDLE, never a crash. 0 is never a valid handle.
 *  - Every function may be called from many threads at once, on one handle or on several.
 *  - Texts are UTF-8 with explicit byte lengths (they may hold NUL bytes). A length of
 *    SIZE_MAX is not allowed; give the length.
 *  - Dense outputs go to buffers the caller allocates (`capacity` in elements). Outputs of a
 *    size known only after the run (sparse, multi-vector, JSON) come back as a result handle:
 *    read it with swiftbert_result_json / _floats / _ints, then swiftbert_result_free it.
 */
#ifndef SWIFTBERT_H
#define SWIFTBERT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SWIFTBERT_ABI_VERSION 3

typedef uint64_t swiftbert_model;
typedef uint64_t swiftbert_result;

enum swiftbert_status {
    SWIFTBERT_OK = 0,
    SWIFTBERT_INVALID_ARGUMENT = 1,  /* a null pointer, invalid UTF-8, an unknown precision, a bad count */
    SWIFTBERT_NOT_FOUND = 2,         /* no such model folder or name */
    SWIFTBERT_INVALID_MODEL = 3,     /* the folder's weights, config or tokenizer cannot be used */
    SWIFTBERT_INVALID_INPUT = 4,     /* the engine refused the request: no mask to fill, an unknown prompt name,
                                        a head the checkpoint lacks (the message names the heads it has) */
    SWIFTBERT_UNSUPPORTED = 5,       /* the checkpoint's architecture or format is not supported */
    SWIFTBERT_BUFFER_TOO_SMALL = 6,  /* `capacity` is less than the output needs */
    SWIFTBERT_CLOSED_HANDLE = 7,     /* the handle was freed, or never existed */
    SWIFTBERT_PULL_FAILED = 8,       /* `swiftbert_pull`: unknown model, offline, checksum, download */
    SWIFTBERT_OUTPUT_FAILED = 9,     /* a file could not be written */
    SWIFTBERT_INTERNAL = 99          /* any other error; the message says what */
};

/* SWIFTBERT_ABI_VERSION of the library (check it against the header's). */
int32_t swiftbert_abi_version(void);
/* The engine's version, e.g. "0.3.0"; static storage. */
const char *swiftbert_version(void);
/* The message of the calling thread's last failed call ("" when none); valid until that
 * thread's next call into the library. */
const char *swiftbert_last_error(void);

/* Loads a converted model by name (SWIFTBERT_HOME/weights, ./weights, the XDG cache, as `bert`
 * finds it) or by folder path. precision: "fp32", "bf16", "int8", "int8-attention",
 * "int8-weights", "int8-static"; NULL is fp32. threads: worker threads, 0 for one per core. */
int32_t swiftbert_load(const char *name_or_path, const char *precision, int32_t threads, swiftbert_model *model);
/* Frees a model; later calls with the handle give SWIFTBERT_CLOSED_HANDLE. Calls running on it
 * finish first (they hold their own reference). */
int32_t swiftbert_free(swiftbert_model model);
/* The sentence vector's length (after the model's Dense layers). */
int32_t swiftbert_dimension(swiftbert_model model, size_t *dimension);
/* JSON: {"name","folder","precision","dimension","max_length","heads":[...],"labels":[...],"prompts":{...},
 * "default_prompt_name","role_prompts":{"query","document","classification","clustering"}}: role_prompts
 * names the prompt a text in each role takes (null: none, not the default prompt), as `bert embed
 * --query` and the server's input_type choose it. */
int32_t swiftbert_model_info(swiftbert_model model, swiftbert_result *result);

/* Sentence vectors, `count` texts into out[count * dimension] (row-major float32).
 * normalize: -1 as the model says (its Normalize module), 0 no, 1 yes. batch_size: texts per
 * forward pass (0: 32). prompt_name, prompt: NULL for none (the model's default prompt applies
 * when both are NULL; prompt "" means no prompt at all). max_length: tokens per text, 0 for the
 * model's limit. The results equal `bert embed` given the same texts in groups of batch_size. */
int32_t swiftbert_embed(swiftbert_model model, const char *const *texts, const size_t *lengths, size_t count,
                        int32_t normalize, int32_t batch_size, const char *prompt_name, const char *prompt,
                        int32_t max_length, float *out, size_t capacity);
/* Every token's last hidden state (sentence-transformers' output_value="token_embeddings", TEI's
 * /embed_all): the result's floats are every text's (tokens x hidden) matrix one after another,
 * the prompt's and the special tokens included, no padding; its JSON
 * {"dimension":hidden,"tokens":[t0, t1, ...]}. normalize: 0 as they are, 1 each token's vector
 * L2-normalised. The other arguments as swiftbert_embed's. */
int32_t swiftbert_embed_tokens(swiftbert_model model, const char *const *texts, const size_t *lengths, size_t count,
                               int32_t normalize, int32_t batch_size, const char *prompt_name, const char *prompt,
                               int32_t max_length, swiftbert_result *result);
/* Sparse lexical vectors (SPLADE, BGE-M3). The result's ints are every text's vocabulary ids one
 * text after another, its floats the weights, its JSON {"counts":[n0, n1, ...]}. */
int32_t swiftbert_embed_sparse(swiftbert_model model, const char *const *texts, const size_t *lengths, size_t count,
                               int32_t batch_size, int32_t max_length, swiftbert_result *result);
/* ColBERT vectors (BGE-M3): the result's floats are every text's (tokens x dimension) matrix one
 * after another, its JSON {"dimension":d,"tokens":[t0, t1, ...]}. */
int32_t swiftbert_embed_multi_vector(swiftbert_model model, const char *const *texts, const size_t *lengths, size_t count,
                                     int32_t batch_size, int32_t max_length, swiftbert_result *result);

/* Dense, sparse and multi-vector outputs (BGE-M3's three; any that the model has) from one forward
 * pass. `outputs` sums SWIFTBERT_OUTPUT_DENSE (1), _SPARSE (2) and _MULTI_VECTOR (4); `normalize`
 * is for the dense vectors (-1: the model's). The result's floats are, in order, the dense rows
 * (count x dimension), the sparse weights (text after text) and the multi-vector matrices (text
 * after text); its ints the sparse vocabulary ids; its JSON {"dimension":d (0 without dense),
 * "sparse_counts":[...], "multi_vector_dimension":m, "tokens":[...]} (the last three only for
 * the outputs asked). */
#define SWIFTBERT_OUTPUT_DENSE 1
#define SWIFTBERT_OUTPUT_SPARSE 2
#define SWIFTBERT_OUTPUT_MULTI_VECTOR 4
int32_t swiftbert_embed_outputs(swiftbert_model model, const char *const *texts, const size_t *lengths, size_t count,
                                int32_t outputs, int32_t normalize, int32_t batch_size, int32_t max_length,
                                swiftbert_result *result);

/* Cross-encoder relevance of each document to the query (sigmoid of the logit, as `bert rerank`),
 * into scores[count]. */
int32_t swiftbert_rerank(swiftbert_model model, const char *query, size_t query_length,
                         const char *const *documents, const size_t *lengths, size_t count,
                         int32_t batch_size, float *scores, size_t capacity);
/* Raw logits of a sequence-classification head, for texts (and, when `pairs` is not NULL, the
 * second text of each pair): out[count * labels]. */
int32_t swiftbert_logits(swiftbert_model model, const char *const *texts, const size_t *lengths,
                         const char *const *pairs, const size_t *pair_lengths, size_t count,
                         int32_t batch_size, float *out, size_t capacity);
/* Labels with scores, best first, top_k per text (0: all): JSON [[{"label","score"}...]...]. */
int32_t swiftbert_classify(swiftbert_model model, const char *const *texts, const size_t *lengths, size_t count,
                           int32_t top_k, int32_t batch_size, swiftbert_result *result);
/* Entities per text: JSON [[{"label","score","word","start","end"}...]...]; offsets in code
 * points. aggregation: "none", "simple", "first", "average", "max" (NULL: simple). */
int32_t swiftbert_token_classify(swiftbert_model model, const char *const *texts, const size_t *lengths, size_t count,
                                 const char *aggregation, int32_t batch_size, swiftbert_result *result);
/* The top_k candidates for each [MASK]: JSON [{"position","candidates":[{"token","id","probability"}]}]. */
int32_t swiftbert_fill_mask(swiftbert_model model, const char *text, size_t length, int32_t top_k,
                            swiftbert_result *result);
/* The model's tokenizer: JSON {"ids":[...],"tokens":[...],"offsets":[[start,end]...],"truncated":bool}.
 * max_length 0: the model's limit. */
int32_t swiftbert_tokenize(swiftbert_model model, const char *text, size_t length, int32_t max_length,
                           swiftbert_result *result);

/* Vectors stored as sentence-transformers' quantize_embeddings stores them (the engine's own
 * quantiser, as `bert embed --embedding-type` and the server's Cohere route use): type "int8",
 * "uint8", "binary" or "ubinary"; vectors[rows * dimension] into output[rows * width] bytes, where
 * width is dimension for int8 and uint8 and (dimension + 7) / 8 for the binary types (an int8
 * value as its bit pattern). int8 and uint8 cut each dimension into 255 steps between its minimum
 * and maximum over calibration[calibration_rows * dimension]: embeddings of texts like the ones to
 * be stored, or two rows, the minima and the maxima. The binary types ignore it (NULL, 0). */
int32_t swiftbert_quantize_embeddings(const char *type, const float *vectors, size_t rows, size_t dimension,
                                      const float *calibration, size_t calibration_rows,
                                      uint8_t *output, size_t capacity);

/* Progress of a pull: bytes downloaded so far and in all. */
typedef void (*swiftbert_progress)(int64_t done, int64_t total, void *context);
/* `bert pull NAME`: download, check, convert, quantise into SWIFTBERT_HOME/weights or the XDG
 * cache. JSON {"name","folder","fetched","seconds"}. progress may be NULL; it is called on the
 * calling thread. */
int32_t swiftbert_pull(const char *name, int32_t force, swiftbert_progress progress, void *context,
                       swiftbert_result *result);
/* JSON {"installed":[{"name","folder"}...],"catalogue":[{"name","about","bytes","pulled"}...]}. */
int32_t swiftbert_models(swiftbert_result *result);

/* A result's parts; the pointers stay valid until swiftbert_result_free. A part the result does
 * not have reads as empty (length 0). The JSON text ends with a NUL byte. */
int32_t swiftbert_result_json(swiftbert_result result, const char **text, size_t *length);
int32_t swiftbert_result_floats(swiftbert_result result, const float **values, size_t *count);
int32_t swiftbert_result_ints(swiftbert_result result, const int32_t **values, size_t *count);
int32_t swiftbert_result_free(swiftbert_result result);

#ifdef __cplusplus
}
#endif
#endif
