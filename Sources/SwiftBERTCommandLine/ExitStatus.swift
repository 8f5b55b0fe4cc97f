// The command line's exit statuses: sysexits(3), kept out of the engine.
import SwiftBERT

extension SwiftBERTError {
    /// sysexits(3) status for command-line tools.
    package var exitStatus: Int32 {
        switch self {
        case .fileNotFound: return 66          // EX_NOINPUT
        case .invalidInput: return 65          // EX_DATAERR
        case .invalidWeights, .invalidConfig, .invalidTokenizer, .unsupportedCheckpoint: return 65
        case .outputFailed: return 74          // EX_IOERR
        }
    }
}
