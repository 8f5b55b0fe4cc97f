import Foundation

/// Every failure SwiftBERT reports. Each message says what went wrong and what to do (the
/// command line maps each kind to a sysexits(3) status: SwiftBERTCommandLine's `exitStatus`).
public enum SwiftBERTError: Error, Equatable, CustomStringConvertible {
    /// A file or folder the caller named does not exist.
    case fileNotFound(path: String, hint: String)
    /// A weights file is not valid safetensors, or does not match the model's config.
    case invalidWeights(path: String, reason: String)
    /// config.json is missing a field, or holds a value the engine cannot run.
    case invalidConfig(path: String, reason: String)
    /// vocab.txt / tokenizer.json cannot be used.
    case invalidTokenizer(path: String, reason: String)
    /// A checkpoint of an architecture or layout SwiftBERT does not run (`ModelFamilies` lists those it does).
    case unsupportedCheckpoint(path: String, reason: String)
    /// Input text or token ids the engine cannot process.
    case invalidInput(reason: String)
    /// Writing an output failed (disk full, closed pipe, permissions).
    case outputFailed(path: String, reason: String)

    public var description: String {
        switch self {
        case let .fileNotFound(path, hint): return "\(path): not found. \(hint)"
        case let .invalidWeights(path, reason): return "\(path): invalid weights: \(reason)"
        case let .invalidConfig(path, reason): return "\(path): invalid config: \(reason)"
        case let .invalidTokenizer(path, reason): return "\(path): unusable tokenizer: \(reason)"
        case let .unsupportedCheckpoint(path, reason): return "\(path): unsupported checkpoint: \(reason)"
        case let .invalidInput(reason): return "invalid input: \(reason)"
        case let .outputFailed(path, reason): return "\(path): cannot write output: \(reason)"
        }
    }
}

extension SwiftBERTError {
    /// Runs `work`, which writes at `path`: whatever it throws (Foundation's errors for a full
    /// disk, a permission, a missing folder) becomes `outputFailed` naming that path, with
    /// `advice` after the reason.
    package static func writing<T>(_ path: String, advice: String = "", _ work: () throws -> T) throws -> T {
        do { return try work() } catch { throw outputFailed(path: path, reason: error.localizedDescription + advice) }
    }
}
