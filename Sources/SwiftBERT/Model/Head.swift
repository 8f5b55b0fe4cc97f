import Foundation

/// A head: what turns an encoder's last hidden states into a task's output. Every head has the
/// same calling convention, so a pipeline, the `bert` command and the server run any of them
/// over any `EncoderModel` the same way: one forward pass, then the head over the packed batch.
public protocol Head: Sendable {
    /// What the head gives for one sequence.
    associatedtype Output: Sendable
    /// One output per sequence of `encoded`, in order.
    func callAsFunction(_ encoded: EncoderOutput, _ batch: HeadBatch) throws -> [Output]
    /// The rows of each sequence it reads: what the encoder's last layer must compute.
    func rowsRead(_ batch: HeadBatch) -> HeadRows
}

extension Head {
    public func rowsRead(_ batch: HeadBatch) -> HeadRows { .all }
}

/// What a head is told about the batch besides its hidden states.
public struct HeadBatch: Sendable {
    /// Threads the head's own matrix products may use.
    public var threads: Int
    /// Tokens at the start of every sequence that belong to a prompt, [CLS] included (0: none):
    /// sentence pooling leaves them out when the model says `include_prompt` false.
    public var promptLength: Int

    public init(threads: Int, promptLength: Int = 0) {
        self.threads = max(1, threads)
        self.promptLength = promptLength
    }
}

/// Which heads a checkpoint has weights for (sentence pooling and token vectors need none).
public enum HeadKind: String, Sendable, CaseIterable {
    /// sentence-transformers' Pooling, Dense and Normalize: one vector per text.
    case sentenceEmbedding = "embed"
    /// The masked-LM head: vocabulary logits at each mask.
    case maskedLM = "fill"
    /// Lexical weights, one sparse vector per text: SPLADE's max over tokens of
    /// log(1 + relu(masked-LM logits)), or BGE-M3's sparse_linear (`SparseHead`).
    case sparseEmbedding = "embed_sparse"
    /// BGE-M3's ColBERT vectors, one per token after [CLS] (`MultiVectorHead`).
    case multiVector = "embed_multi_vector"
    /// Sequence classification (a cross-encoder is one with a single label).
    case sequenceClassification = "predict"
    /// One label set per token (NER).
    case tokenClassification = "ner"
    /// Every token's last hidden state.
    case tokenEmbeddings = "embed_all"
}

extension EncoderModel {
    /// The heads this checkpoint can run, in `HeadKind` order.
    public var heads: [HeadKind] {
        HeadKind.allCases.filter { kind in
            switch kind {
            case .sentenceEmbedding, .tokenEmbeddings: return true
            case .maskedLM: return config.heads.hasMaskedLMHead
            case .sparseEmbedding: return config.heads.hasMaskedLMHead || config.heads.hasLexicalWeights == true
            case .multiVector: return config.heads.colbertDimension != nil
            case .sequenceClassification: return config.heads.task?.kind == .sequenceClassification && config.heads.task?.labels != nil
            case .tokenClassification: return config.heads.task?.kind == .tokenClassification && config.heads.task?.labels != nil
            }
        }
    }

    /// A head this checkpoint has no weights for: what it has, and which checkpoint to use.
    func missingHead(_ kind: HeadKind, _ remedy: String) -> SwiftBERTError {
        .invalidInput(reason: "\(folder.lastPathComponent) has no \(kind.description) head (it has: \(heads.map(\.description).joined(separator: ", "))); \(remedy)")
    }
}

extension HeadKind: CustomStringConvertible {
    public var description: String {
        switch self {
        case .sentenceEmbedding: return "sentence-embedding"
        case .maskedLM: return "masked-LM"
        case .sparseEmbedding: return "sparse"
        case .multiVector: return "multi-vector"
        case .sequenceClassification: return "sequence-classification"
        case .tokenClassification: return "token-classification"
        case .tokenEmbeddings: return "token-embedding"
        }
    }
}

// MARK: - Heads over the masked-LM logits

/// The masked-LM head at every mask token of each sequence: (position, vocabulary logits) pairs.
public struct MaskedLMHead: Head {
    public struct Mask: Sendable {
        /// Index of the mask in the token sequence ([CLS] is 0).
        public let position: Int
        public let logits: [Float]
    }

    let encoder: any EncoderModel
    let maskId: Int32

    public init(_ encoder: any EncoderModel, maskId: Int32) throws {
        guard encoder.config.heads.hasMaskedLMHead else {
            throw encoder.missingHead(.maskedLM, "use a *ForMaskedLM checkpoint such as splade-tiny")
        }
        (self.encoder, self.maskId) = (encoder, maskId)
    }

    public func rowsRead(_ batch: HeadBatch) -> HeadRows { .token(maskId) }

    public func callAsFunction(_ encoded: EncoderOutput, _ batch: HeadBatch) throws -> [[Mask]] {
        let positions = (0..<encoded.count).flatMap { s in
            encoded.tokenIds(s).indices.filter { encoded.ids[$0] == maskId }.map { (sequence: s, position: $0 - encoded.starts[s]) }
        }
        var logits = try encoder.maskedLMLogits(encoded, at: positions)[...]
        var masks = [[Mask]](repeating: [], count: encoded.count)
        for p in positions {
            masks[p.sequence].append(Mask(position: p.position, logits: logits.removeFirst()))
        }
        return masks
    }
}

/// A sparse vector over the vocabulary: the ids with a non-zero weight, ascending, and their weights.
public struct SparseVector: Sendable, Equatable {
    public let indices: [Int32]
    public let values: [Float]
}

/// SPLADE pooling: for every vocabulary entry, the maximum over the sequence's tokens of
/// log(1 + relu(masked-LM logit)), as SPLADE computes it (every token, [CLS] and [SEP] too).
public struct SpladeHead: Head {
    let encoder: any EncoderModel
    /// Tokens whose logits are computed at once: bounds memory at rows × vocabulary floats.
    static let rowsPerPass = 64

    public init(_ encoder: any EncoderModel) throws {
        guard encoder.config.heads.hasMaskedLMHead else {
            throw encoder.missingHead(.sparseEmbedding, "sparse output needs a *ForMaskedLM SPLADE checkpoint such as splade-tiny, or BGE-M3 converted with its sparse_linear.pt")
        }
        self.encoder = encoder
    }

    public func callAsFunction(_ encoded: EncoderOutput, _ batch: HeadBatch) throws -> [SparseVector] {
        let v = encoder.config.encoder.vocabSize, h = encoded.hiddenSize
        return try (0..<encoded.count).map { s in
            var weights = [Float](repeating: 0, count: v)
            let n = encoded.lengths[s]
            for first in stride(from: 0, to: n, by: Self.rowsPerPass) {
                let m = min(Self.rowsPerPass, n - first)
                let rows = Array(UnsafeBufferPointer(start: encoded.storage + (encoded.starts[s] + first) * h, count: m * h))
                let logits = try encoder.maskedLMLogits(hiddenRows: rows, count: m)
                for t in 0..<m {
                    for i in 0..<v where logits[t * v + i] > weights[i] { weights[i] = logits[t * v + i] }
                }
            }
            // max and log1p∘relu commute (both non-decreasing): take the maximum logit first.
            var indices: [Int32] = [], values: [Float] = []
            for i in 0..<v where weights[i] > 0 {
                indices.append(Int32(i))
                values.append(Foundation.log1p(weights[i]))
            }
            return SparseVector(indices: indices, values: values)
        }
    }
}

/// Every token's last hidden state, L2-normalised when asked (TEI's /embed_all).
public struct TokenEmbeddingsHead: Head {
    public var normalize: Bool

    public init(normalize: Bool = false) { self.normalize = normalize }

    public func callAsFunction(_ encoded: EncoderOutput, _ batch: HeadBatch) throws -> [[[Float]]] {
        let h = encoded.hiddenSize
        return (0..<encoded.count).map { s in
            let states = encoded.hiddenStates(s)
            return (0..<encoded.lengths[s]).map { t in
                var v = Array(states[t * h..<(t + 1) * h])
                if normalize { l2Normalize(&v) }
                return v
            }
        }
    }
}
