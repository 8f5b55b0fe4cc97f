// The names of the BERT-only days, kept for one version so that code written against SwiftBERT
// 1.x still builds (with a warning that names the new one). They go in the next major version.

@available(*, deprecated, renamed: "Tokenizer")
public typealias BertTokenizer = Tokenizer

@available(*, deprecated, renamed: "SwiftBERTError")
public typealias BertError = SwiftBERTError

extension SwiftBERTError {
    /// Matching on `.notABertCheckpoint` needs the new case name; building one works as before.
    @available(*, deprecated, renamed: "unsupportedCheckpoint")
    public static func notABertCheckpoint(path: String, reason: String) -> SwiftBERTError {
        .unsupportedCheckpoint(path: path, reason: reason)
    }
}
