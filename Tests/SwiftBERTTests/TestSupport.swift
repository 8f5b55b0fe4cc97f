import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTKernels

/// The repository root, found from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A converted model made by the set-up command; a clear failure when it is missing.
func convertedModel(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> URL {
    let url = repositoryRoot.appendingPathComponent("weights/\(name)")
    guard FileManager.default.fileExists(atPath: url.appendingPathComponent("model.safetensors").path) else {
        XCTFail("weights/\(name) is missing: run `make setup` (tools/setup.sh) first", file: file, line: line)
        throw SwiftBERTError.fileNotFound(path: url.path, hint: "run make setup")
    }
    // The real folder: a test that copies it and damages the copy (ServerTests truncates one)
    // would otherwise copy a symbolic link (a worktree's weights/NAME) and damage the original.
    return url.resolvingSymlinksInPath()
}

/// A folder `folder` of symlinks to every file of `source` but those `excluded`: the same
/// checkpoint with, say, its model.safetensors hidden so that pytorch_model.bin is read, or with
/// a config of the test's own.
func linkedFolder(_ source: URL, excluding excluded: Set<String>, at folder: URL) throws -> URL {
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    for entry in try FileManager.default.contentsOfDirectory(atPath: source.path) where !excluded.contains(entry) {
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent(entry),
                                                   withDestinationURL: source.appendingPathComponent(entry).resolvingSymlinksInPath())
    }
    return folder
}

/// Loaded models are shared across tests: loading is cheap, but there is no need to repeat it.
nonisolated(unsafe) private let modelCache = NSCache<NSString, BertModel>()
func loadModel(_ name: String, threads: Int = 2) throws -> BertModel {
    let key = "\(name)/\(threads)" as NSString
    if let model = modelCache.object(forKey: key) { return model }
    let model = try BertModel(folder: convertedModel(name), threads: threads)
    modelCache.setObject(model, forKey: key)
    return model
}

/// Fixtures written by tools/fixtures/make_reference_fixtures.py from PyTorch + transformers.
struct Reference {
    struct FillMask: Decodable {
        let text: String
        let input_ids: [Int32]
        let mask_positions: [Int]
        let top_ids: [[Int32]]
        let top_probabilities: [[Float]]
    }
    struct Pair: Decodable {
        let sentences: [String]
        let input_ids: [[Int32]]
        let cosine: Float
    }
    struct Meta: Decodable {
        let sentences: [String]
        let input_ids: [[Int32]]
        let fill_mask: [FillMask]?
        let pair: Pair?
    }
    let meta: Meta
    let tensors: SafeTensorsFile

    init(_ model: String) throws {
        let folder = Bundle.module.url(forResource: "Fixtures/reference", withExtension: nil)!
        meta = try JSONDecoder().decode(Meta.self, from: Data(contentsOf: folder.appendingPathComponent("\(model).json")))
        tensors = try SafeTensorsFile(path: folder.appendingPathComponent("\(model).safetensors").path)
    }

    func tensor(_ name: String) throws -> [Float] { Array(try tensors.floats(name)) }
}

/// Largest absolute elementwise difference.
func maxAbsDifference(_ a: [Float], _ b: [Float]) -> Float {
    precondition(a.count == b.count, "sizes differ: \(a.count) vs \(b.count)")
    return zip(a, b).reduce(0) { max($0, abs($1.0 - $1.1)) }
}

func cosine(_ a: [Float], _ b: [Float]) -> Float {
    var dot: Float = 0, na: Float = 0, nb: Float = 0
    for (x, y) in zip(a, b) { dot += x * y; na += x * x; nb += y * y }
    return dot / (na.squareRoot() * nb.squareRoot())
}

/// What the forward pass runs for one Linear layer: `weight` (with `bias`) applied to x [m × k]
/// on `threads` threads, INT8 activations quantised when asked.
func linear(_ x: [Float], m: Int, weight: any LinearWeights, bias: [Float], threads: Int, quantizesActivations: Bool) -> [Float] {
    let n = bias.count, k = x.count / max(m, 1)
    var y = [Float](repeating: .nan, count: m * n)
    bias.withUnsafeBufferPointer { b in
        let layer = Linear(weight: weight, bias: b.baseAddress!, k: k, n: n)
        let context = ForwardContext(sequences: PackedSequences(lengths: [m]), threads: threads,
                                     quantizesActivations: quantizesActivations)
        layer(x, m: m, into: &y, context)
    }
    return y
}

/// Deterministic uniform floats in [-scale, scale].
struct TestRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }

    mutating func floats(_ count: Int, scale: Float) -> [Float] {
        (0..<count).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return (Float(state >> 40) / Float(1 << 24) * 2 - 1) * scale
        }
    }
}

/// `folder` (a converted model) with its INT8 file, which `bert quantize`'s code writes on first use.
func quantizedOnce(_ folder: URL) throws -> URL {
    if !FileManager.default.fileExists(atPath: folder.appendingPathComponent(Quantizer.fileName).path) {
        try Quantizer.quantize(folder: folder)
    }
    return folder
}

/// Fixture checkpoints converted with `bert convert`'s code (and quantized, when asked), once
/// per test run and folder, into a temporary folder of this process.
final class ConvertedFixtures: @unchecked Sendable {
    private let fixtures: URL
    private let label: String
    private let quantizes: Bool
    private let lock = NSLock()
    private var folders: [String: URL] = [:]

    init(_ fixtures: URL, label: String, quantizes: Bool = false) {
        (self.fixtures, self.label, self.quantizes) = (fixtures, label, quantizes)
    }

    func folder(_ name: String) throws -> URL {
        lock.lock(); defer { lock.unlock() }
        if let url = folders[name] { return url }
        let destination = FileManager.default.temporaryDirectory
            .appendingPathComponent("swiftbert-\(label)-\(ProcessInfo.processInfo.processIdentifier)/\(name)")
        try? FileManager.default.removeItem(at: destination)
        try Converter.convert(huggingFaceFolder: fixtures.appendingPathComponent(name), to: destination)
        if quantizes { try Quantizer.quantize(folder: destination) }
        folders[name] = destination
        return destination
    }
}

/// A batch of `sequences` repeated past three chunks (`PackedSequences.encoderChunks`, one
/// thread): every encoder runs it chunk by chunk, and each sequence must still get what it
/// gets alone (first, middle and last), within 1e-5.
func checkLongBatchEqualsEachSequenceAlone(_ encoder: any EncoderModel, _ sequences: [[Int32]], _ label: String,
                                           file: StaticString = #filePath, line: UInt = #line) throws {
    var batch: [[Int32]] = []
    while batch.reduce(0, { $0 + $1.count }) < 3 * PackedSequences.chunkTokensPerThread { batch += sequences }
    XCTAssertGreaterThan(PackedSequences(lengths: batch.map(\.count)).encoderChunks(threads: encoder.threads).count, 2, label,
                         file: file, line: line)
    let output = try encoder.encode(batch)
    for i in [0, batch.count / 2, batch.count - 1] {
        let alone = try encoder.encode([batch[i]])
        XCTAssertLessThanOrEqual(maxAbsDifference(alone.hiddenStates(0), output.hiddenStates(i)), 1e-5, "\(label) sequence \(i)",
                                 file: file, line: line)
    }
}

/// Each change to `source`'s config.json (label, fields to merge, what the error must mention),
/// converted beside the source's weights and tokenizer files, is refused at conversion with an
/// error that names it.
func checkConfigChangesAreRefused(_ source: URL, label prefix: String, _ cases: [(String, [String: Any], String)],
                                  file: StaticString = #filePath, line: UInt = #line) throws {
    let base = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: source.appendingPathComponent("config.json"))) as? [String: Any])
    for (label, change, mention) in cases {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-\(prefix)-bad-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for name in ["model.safetensors", "tokenizer.json", "tokenizer_config.json"] {
            try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent(name), withDestinationURL: source.appendingPathComponent(name))
        }
        try JSONSerialization.data(withJSONObject: base.merging(change) { $1 }).write(to: folder.appendingPathComponent("config.json"))
        XCTAssertThrowsError(try Converter.convert(huggingFaceFolder: folder, to: folder.appendingPathComponent("out")), label, file: file, line: line) { error in
            XCTAssertTrue("\(error)".contains(mention), "\(label): \(error)", file: file, line: line)
        }
    }
}

/// The worst difference between `got` ([rows × hiddenSize] floats) and a fixture's float16 rows,
/// in units of the fixture's rounding: half an ulp of float16's 11 bits, plus 1e-4 for float32's
/// own rounding near zero. 1 or less: equal to what the fixture can say.
func worstErrorInHalfRoundings(_ got: [Float], _ rows: [[Float]], hiddenSize h: Int) -> Float {
    var worst: Float = 0
    for (t, row) in rows.enumerated() {
        for c in 0..<min(h, row.count) {
            let expected = row[c], error = abs(got[t * h + c] - expected)
            worst = max(worst, error / (abs(expected) * 0x1p-11 + 1e-4))
        }
    }
    return worst
}
