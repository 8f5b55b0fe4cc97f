import Foundation

/// A pipeline over a model with a task head (`TextClassifier`, `TokenClassifier`): made from a
/// loaded model and its tokenizer, or from a converted folder.
public protocol TaskPipeline {
    init(model: BertModel, tokenizer: BertTokenizer) throws
}

extension TaskPipeline {
    /// Loads the converted model in `folder` and its tokenizer.
    public init(folder: URL, threads: Int? = nil, precision: Precision = .fp32) throws {
        try self.init(model: BertModel(folder: folder, threads: threads, precision: precision),
                      tokenizer: BertTokenizer.load(folder: folder))
    }
}

extension BertModel {
    /// The labels of the task head `kind`, or an error saying which checkpoint to use instead.
    func taskLabels(_ kind: TaskHead, name: String, savedFrom architecture: String) throws -> [String] {
        guard config.head == kind, let labels = config.labels else {
            throw BertError.invalidInput(reason: "\(folder.lastPathComponent) has no \(name) head; use a checkpoint saved from a \(architecture) model (bert convert keeps its classifier)")
        }
        return labels
    }
}
