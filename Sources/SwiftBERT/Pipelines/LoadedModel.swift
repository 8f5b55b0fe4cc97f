import Foundation

/// A converted model folder, loaded once: its encoder (whatever the architecture) and its
/// tokenizer. Every pipeline, the `bert` command and the server start from one; which heads it
/// can run is `heads`, from the weights its checkpoint has.
public struct LoadedModel: Sendable {
    public let encoder: any EncoderModel
    public let tokenizer: Tokenizer

    public init(encoder: any EncoderModel, tokenizer: Tokenizer) {
        (self.encoder, self.tokenizer) = (encoder, tokenizer)
    }

    public var config: ModelConfig { encoder.config }
    public var folder: URL { encoder.folder }
    public var heads: [HeadKind] { encoder.heads }
}

/// The one loader: the encoder `folder`'s config names (`loadEncoder`), memory-mapped in
/// `precision`, and its tokenizer. `threads` nil: one per core.
public func loadModel(folder: URL, threads: Int? = nil, precision: Precision = .fp32) throws -> LoadedModel {
    let encoder = try loadEncoder(folder: folder, threads: threads, precision: precision)
    return LoadedModel(encoder: encoder, tokenizer: try Tokenizer.load(folder: folder))
}

/// A pipeline over an encoder and its tokenizer (`SentenceEmbedder`, `FillMask`,
/// `TextClassifier`, `TokenClassifier`, `SparseEmbedder`): made from a loaded model, or from a
/// converted folder through `loadModel`.
public protocol ModelPipeline {
    /// Throws when the checkpoint has no weights for the pipeline's head, saying which to use.
    init(model: any EncoderModel, tokenizer: Tokenizer) throws
}

extension ModelPipeline {
    public init(_ model: LoadedModel) throws {
        try self.init(model: model.encoder, tokenizer: model.tokenizer)
    }

    /// Loads the converted model in `folder` (`loadModel`).
    public init(folder: URL, threads: Int? = nil, precision: Precision = .fp32) throws {
        try self.init(loadModel(folder: folder, threads: threads, precision: precision))
    }
}
