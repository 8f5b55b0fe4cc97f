import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTCommandLine

/// The short fuzzing run of the test suite. libFuzzer builds take minutes (tools/fuzz/run.sh), so
/// the suite instead replays what the recorded long runs learned (tools/fuzz/corpus: the
/// minimised corpus, every input that reached new code, plus the hand-written seeds) through the
/// same entry points as tools/fuzz/Fuzz*.swift, and then mutates those inputs for a few seconds
/// with a fixed random seed (bit flips, byte changes, cuts, splices, interesting integers).
/// Nothing may trap; under tools/sanitize.sh, nothing may read out of bounds either.
final class HostileFuzzCorpusTests: XCTestCase {
    static let fuzzFolder = repositoryRoot.appendingPathComponent("tools/fuzz")

    func inputs(_ target: String) throws -> [[UInt8]] {
        var all: [[UInt8]] = []
        for folder in ["seeds", "corpus"] {
            let url = Self.fuzzFolder.appendingPathComponent("\(folder)/\(target)")
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted() {
                all.append(Array(try Data(contentsOf: url.appendingPathComponent(name))))
            }
        }
        XCTAssertFalse(all.isEmpty, "tools/fuzz has no inputs for \(target)")
        return all
    }

    // MARK: - The entry points (as tools/fuzz/Fuzz*.swift)

    func safetensors(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { image in
            guard let header = try? SafeTensorsFile.parseHeader(image, path: "fuzz") else { return }
            for info in header.tensors.values {
                XCTAssertLessThanOrEqual(header.dataStart + info.range.upperBound, image.count)
                XCTAssertEqual(info.range.count, info.count * info.dtype.byteSize)
            }
            guard let file = try? SafeTensorsFile(image: image, path: "fuzz") else { return XCTFail("parse and init disagree") }
            for (name, info) in file.tensors where [.f32, .f16, .bf16].contains(info.dtype) {
                XCTAssertEqual((try? file.floatArray(name))?.count, info.count)
            }
            _ = file.firstNonFiniteValue()
        }
    }

    func torch(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { image in
            guard let parsed = try? TorchCheckpoint.parse(image, path: "fuzz") else { return }
            for info in parsed.tensors.values {
                XCTAssertLessThanOrEqual(info.range.upperBound, image.count)
                XCTAssertEqual(info.range.count, info.count * info.dtype.byteSize)
            }
            guard let checkpoint = try? TorchCheckpoint(image: image, path: "fuzz") else { return XCTFail("parse and init disagree") }
            for name in checkpoint.names where checkpoint.dtype(name)?.floatKind != nil {
                XCTAssertEqual((try? checkpoint.floatArray(name))?.count, checkpoint.shape(name)?.reduce(1, *))
            }
        }
    }

    let probes = ["Hello, world! [MASK] is [CLS] here.", "naïve café 東京 🙂 \u{0}\u{7}", "##ing un##able"]

    func loaders(_ bytes: [UInt8]) {
        guard let selector = bytes.first else { return }
        let body = Data(bytes.dropFirst())
        switch selector % 4 {
        case 0: _ = try? ModelConfig.decode(body, path: "config.json")
        case 1: _ = try? Converter.readConfig(body, path: "config.json", folder: "checkpoint")
        case 2:
            guard let configuration = try? TokenizerConfiguration(tokenizerJSON: body, path: "tokenizer.json"),
                  let tokenizer = try? Tokenizer(configuration: configuration, path: "tokenizer.json") else { return }
            exercise(tokenizer)
        default:
            guard let configuration = try? TokenizerConfiguration(vocabTXT: body, path: "vocab.txt", lowercase: selector & 4 == 0),
                  let tokenizer = try? Tokenizer(configuration: configuration, path: "vocab.txt") else { return }
            exercise(tokenizer)
        }
    }

    func exercise(_ tokenizer: Tokenizer) {
        for text in probes {
            for maxLength in [nil, 2, 5] as [Int?] {
                let encoding = tokenizer.encode(text, pair: "second text", maxLength: maxLength)
                XCTAssertEqual(encoding.ids.count, encoding.offsets.count)
                if let maxLength, maxLength >= 3 { XCTAssertLessThanOrEqual(encoding.count, maxLength) }
                _ = tokenizer.decode(encoding.ids)
            }
        }
        _ = tokenizer.encodeBatch(probes, maxLength: 16)
        for id: Int32 in [-1, 0, tokenizer.padId, Int32(clamping: tokenizer.vocabularySize), .max] { _ = tokenizer.decode([id]) }
    }

    lazy var tokenizers: [Tokenizer] = {
        ["all-MiniLM-L6-v2", "splade-tiny"].compactMap { try? Tokenizer.load(folder: convertedModel($0)) }
    }()

    func tokenize(_ bytes: [UInt8]) {
        guard let control = bytes.first, !tokenizers.isEmpty else { return }
        let body = bytes.dropFirst()
        if control & 0xC0 == 0xC0 { return }  // the line reader's inputs: IO tests cover the reader
        let tokenizer = tokenizers[Int(control) % tokenizers.count]
        let split = body.firstIndex(of: 0xFF)
        let first = String(decoding: body[..<(split ?? body.endIndex)], as: UTF8.self)
        let pair = split.map { String(decoding: body[($0 + 1)...], as: UTF8.self) }
        let maxLength: Int? = control & 0x10 == 0 ? nil : Int(control >> 5) * 3
        let encoding = tokenizer.encode(first, pair: pair, maxLength: maxLength, addSpecialTokens: control & 0x08 == 0)
        let scalars = max(first.unicodeScalars.count, pair?.unicodeScalars.count ?? 0)
        XCTAssertTrue(encoding.offsets.allSatisfy { $0.lowerBound >= 0 && $0.upperBound <= scalars })
        if let maxLength, maxLength >= 3, control & 0x08 == 0 { XCTAssertLessThanOrEqual(encoding.count, maxLength) }
        _ = tokenizer.decode(encoding.ids)
    }

    // MARK: - Replay and mutation

    /// A tiny deterministic generator (SplitMix64): the same mutations on every run.
    typealias Random = TokenizerTestRandom

    static let interesting: [[UInt8]] = ["0", "-1", "1e309", "2147483648", "18446744073709551616", "null", "[", "{", "\"", "\\u0000", "F32", "##"].map { Array($0.utf8) }

    func mutate(_ input: [UInt8], with other: [UInt8], _ random: inout Random) -> [UInt8] {
        var bytes = input
        for _ in 0...random.below(3) {
            switch random.below(7) {
            case 0 where !bytes.isEmpty: bytes[random.below(bytes.count)] ^= UInt8(1 << random.below(8))
            case 1 where !bytes.isEmpty: bytes[random.below(bytes.count)] = UInt8(truncatingIfNeeded: random.next())
            case 2 where !bytes.isEmpty: bytes.removeLast(random.below(bytes.count))
            case 3 where !bytes.isEmpty:
                let start = random.below(bytes.count)
                bytes.removeSubrange(start..<min(bytes.count, start + random.below(16) + 1))
            case 4:
                bytes.insert(contentsOf: Self.interesting[random.below(Self.interesting.count)], at: random.below(bytes.count + 1))
            case 5 where !other.isEmpty:
                let start = random.below(other.count)
                bytes.insert(contentsOf: other[start..<min(other.count, start + random.below(64) + 1)], at: random.below(bytes.count + 1))
            default:
                // A little-endian integer at the start: the safetensors header length.
                if bytes.count >= 8 {
                    let value = [0, 1, 7, 8, UInt64.max, UInt64(bytes.count), UInt64(bytes.count - 8), 1 << 63][random.below(8)]
                    withUnsafeBytes(of: value.littleEndian) { bytes.replaceSubrange(0..<8, with: $0) }
                }
            }
        }
        return bytes
    }

    func fuzz(_ target: String, seconds: Double, _ body: ([UInt8]) -> Void) throws {
        let corpus = try inputs(target)
        for input in corpus { body(input) }
        var random = Random(seed: 0x5EED_0000 &+ UInt64(target.utf8.count))
        let deadline = Date().addingTimeInterval(seconds)
        var executions = corpus.count
        while Date() < deadline {
            for _ in 0..<16 {
                let input = corpus[random.below(corpus.count)], other = corpus[random.below(corpus.count)]
                body(mutate(input, with: other, &random))
                executions += 1
            }
        }
        print("\(target): \(corpus.count) corpus inputs replayed, \(executions - corpus.count) mutations in \(seconds) s")
    }

    func testSafeTensorsParserOnTheCorpusAndMutations() throws { try fuzz("safetensors", seconds: 2, safetensors) }
    func testLoadersOnTheCorpusAndMutations() throws { try fuzz("loaders", seconds: 3, loaders) }
    func testTokenizerOnTheCorpusAndMutations() throws { try fuzz("tokenizer", seconds: 2, tokenize) }
    func testTorchCheckpointReaderOnTheCorpusAndMutations() throws { try fuzz("torch", seconds: 2, torch) }
}
