import Foundation
import XCTest
@testable import SwiftBERT

/// Shared pieces of the tokenizer tests: the model folders, the loaded tokenizers and the
/// fixtures written by tools/fixtures/make_tokenizer_fixtures.py.
enum TokenizerFixtures {
    /// The repository root: the first folder above this file that holds Package.swift.
    static let repositoryRoot: URL = {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" {
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) { return folder }
            folder.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    }()

    /// weights/.cache/hf/<name>; fails the test (not a skip) when the models were not fetched.
    static func modelFolder(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        let folder = repositoryRoot.appendingPathComponent("weights/.cache/hf/\(name)")
        guard FileManager.default.fileExists(atPath: folder.path) else {
            XCTFail("\(folder.path) is missing: run `make setup` (bert pull --all --keep-source)", file: file, line: line)
            throw SwiftBERTError.fileNotFound(path: folder.path, hint: "run `make setup`")
        }
        return folder
    }

    nonisolated(unsafe) private static let cache = NSCache<NSString, Tokenizer>()

    /// "all-MiniLM-L6-v2", "splade-tiny" (their tokenizer.json) or "all-MiniLM-L6-v2/vocab.txt".
    static func tokenizer(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> Tokenizer {
        if let cached = cache.object(forKey: name as NSString) { return cached }
        let tokenizer: Tokenizer
        if name.hasSuffix("/vocab.txt") {
            let folder = try modelFolder(String(name.dropLast("/vocab.txt".count)), file: file, line: line)
            tokenizer = try Tokenizer(vocabTXT: folder.appendingPathComponent("vocab.txt"))
        } else {
            tokenizer = try Tokenizer(tokenizerJSON: modelFolder(name, file: file, line: line)
                .appendingPathComponent("tokenizer.json"))
        }
        cache.setObject(tokenizer, forKey: name as NSString)
        return tokenizer
    }

    static func url(_ file: String) -> URL {
        Bundle.module.url(forResource: "Fixtures/tokenizer", withExtension: nil)!.appendingPathComponent(file)
    }

    /// A JSON-lines fixture: one Decodable record per line; `skip` drops records such as the header.
    static func records<T: Decodable>(_ file: String, as type: T.Type, skip: (String) -> Bool = { _ in false }) throws -> [T] {
        let text = try String(contentsOf: url(file), encoding: .utf8)
        let decoder = JSONDecoder()
        return try text.split(separator: "\n").filter { !skip(String($0)) }.map {
            try decoder.decode(T.self, from: Data($0.utf8))
        }
    }
}

/// One line of corpus.jsonl.
struct CorpusRecord: Decodable {
    struct Expected: Decodable {
        let ids: [Int32]
        let offsets: [Int]
    }
    let source: String
    let text: String
    let ids: [Int32]
    let offsets: [Int]
    let splade: Expected?
    let decoded: String?
    let decoded_with_specials: String?
}

/// HF's flat [start, end, start, end, ...] offsets as ranges.
func offsetRanges(_ flat: [Int]) -> [Range<Int>] {
    stride(from: 0, to: flat.count - 1, by: 2).map { flat[$0]..<max(flat[$0], flat[$0 + 1]) }
}

/// A line for a failure message: escaped, cut to a readable length.
func describeLine(_ text: String, limit: Int = 160) -> String {
    let escaped = text.unicodeScalars.map { scalar -> String in
        scalar.isASCII && scalar.value >= 0x20 && scalar.value != 0x7F || scalar.properties.isAlphabetic
            ? String(scalar) : "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
    }.joined()
    return escaped.count > limit ? String(escaped.prefix(limit)) + "… (\(text.unicodeScalars.count) scalars)" : escaped
}
