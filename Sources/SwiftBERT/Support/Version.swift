/// SwiftBERT's version: what `bert --version`, the server's /info and its OpenAPI document give.
/// Raised with each release tag (semantic versioning: the public API's breaking changes raise
/// the major part).
public let swiftBERTVersion = "0.3.0"
