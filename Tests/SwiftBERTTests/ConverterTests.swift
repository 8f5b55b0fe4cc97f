import Foundation
import XCTest
@testable import SwiftBERT

/// The offline converter on the real checkpoints' variations and on folders that are not BERT.
final class ConverterTests: XCTestCase {
    var scratch: URL!

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-convert-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: scratch) }

    func huggingFaceFolder(_ name: String) throws -> URL {
        let url = repositoryRoot.appendingPathComponent("weights/.cache/hf/\(name)")
        guard FileManager.default.fileExists(atPath: url.path) else {
            XCTFail("weights/.cache/hf/\(name) is missing: run `make setup`")
            throw SwiftBERTError.fileNotFound(path: url.path, hint: "")
        }
        return url
    }

    /// splade-tiny: `bert.` prefix, LayerNorm gamma/beta, a decoder tied to the word embeddings.
    func testSpladeVariationsAreNormalised() throws {
        let report = try Converter.convert(huggingFaceFolder: huggingFaceFolder("splade-tiny"), to: scratch)
        XCTAssertTrue(report.config.heads.hasMaskedLMHead)
        XCTAssertFalse(report.config.heads.hasUntiedDecoder, "a tied decoder is stored once")
        let file = try SafeTensorsFile(path: scratch.appendingPathComponent("model.safetensors").path)
        XCTAssertNotNil(file.tensors["embeddings.LayerNorm.weight"])
        XCTAssertNotNil(file.tensors["encoder.layer.1.attention.self.qkv.weight"])
        XCTAssertNil(file.tensors["cls.predictions.decoder.weight"])
        XCTAssertFalse(file.tensors.keys.contains { $0.hasPrefix("bert.") || $0.hasSuffix("gamma") })
        XCTAssertTrue(FileManager.default.fileExists(atPath: scratch.appendingPathComponent("tokenizer.json").path))
    }

    /// all-MiniLM-L6-v2: sentence-transformers' pooling files, an int64 position_ids; the pooler
    /// is kept (for train-classifier's features); the fused QKV rows are Q, K and V in that order.
    func testMiniLMSentenceTransformersSettingsAndFusedQKV() throws {
        let source = try huggingFaceFolder("all-MiniLM-L6-v2")
        let report = try Converter.convert(huggingFaceFolder: source, to: scratch)
        XCTAssertEqual(report.config.heads.sentence.pooling, .mean)
        XCTAssertEqual(report.config.encoder.maxSequenceLength, 256)
        XCTAssertEqual(Set(report.droppedTensors), ["embeddings.position_ids"])
        XCTAssertEqual(report.config.heads.hasPooler, true)
        XCTAssertEqual(report.config.heads.sentence.normalize, true)  // its 2_Normalize module
        let original = try SafeTensorsFile(path: source.appendingPathComponent("model.safetensors").path)
        let converted = try SafeTensorsFile(path: scratch.appendingPathComponent("model.safetensors").path)
        let qkv = try converted.floats("encoder.layer.3.attention.self.qkv.weight")
        let h = 384 * 384
        for (i, part) in ["query", "key", "value"].enumerated() {
            XCTAssertEqual(Array(qkv[i * h..<(i + 1) * h]), try original.floatArray("encoder.layer.3.attention.self.\(part).weight"), part)
        }
    }

    func testFolderThatIsNotBertIsRefusedWithTheReason() throws {
        let fm = FileManager.default
        XCTAssertThrowsError(try Converter.convert(huggingFaceFolder: scratch, to: scratch.appendingPathComponent("out"))) { error in
            XCTAssertTrue("\(error)".contains("config.json"), "\(error)")
        }
        try #"{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}"#.write(
            to: scratch.appendingPathComponent("config.json"), atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try Converter.convert(huggingFaceFolder: scratch, to: scratch.appendingPathComponent("out"))) { error in
            XCTAssertTrue("\(error)".contains("gpt2"), "\(error)")
        }
        XCTAssertThrowsError(try Converter.convert(huggingFaceFolder: scratch.appendingPathComponent("absent"), to: scratch))
        XCTAssertFalse(fm.fileExists(atPath: scratch.appendingPathComponent("out/model.safetensors").path))
    }

    func testMissingTensorIsNamed() throws {
        let source = try huggingFaceFolder("splade-tiny")
        let broken = scratch.appendingPathComponent("broken")
        try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
        for name in ["config.json", "tokenizer.json"] {
            try FileManager.default.copyItem(at: source.appendingPathComponent(name), to: broken.appendingPathComponent(name))
        }
        // The checkpoint without one tensor.
        let file = try SafeTensorsFile(path: source.appendingPathComponent("model.safetensors").path)
        let entries = try file.tensors.keys.filter { $0 != "bert.encoder.layer.1.output.dense.weight" }.map { name in
            SafeTensorsWriter.Entry(name: name, dtype: .f32, shape: file.tensors[name]!.shape, data: Data(try file.bytes(name, dtype: .f32)))
        }
        try SafeTensorsWriter.write(entries, to: broken.appendingPathComponent("model.safetensors").path)
        XCTAssertThrowsError(try Converter.convert(huggingFaceFolder: broken, to: scratch.appendingPathComponent("out"))) { error in
            XCTAssertTrue("\(error)".contains("encoder.layer.1.output.dense.weight"), "\(error)")
        }
    }
}

/// The files SwiftBERT writes are safetensors as the official reader wants them: tensors back to
/// back (it refuses gaps), each on a multiple of its element size so floats map in place.
/// tools/check_safetensors.py reads a converted file with Python's safetensors.
final class SafeTensorsLayoutTests: XCTestCase {
    /// Every tensor of `file` laid end to end from the data section's start to the file's end,
    /// each starting on a multiple of its element size (the data section itself 64-byte aligned).
    func assertContiguousAndAligned(_ file: SafeTensorsFile, file source: StaticString = #filePath, line: UInt = #line) throws {
        let ranges = file.tensors.sorted { ($0.value.range.lowerBound, $0.value.range.upperBound) < ($1.value.range.lowerBound, $1.value.range.upperBound) }
        var end = 0
        for (name, info) in ranges {
            XCTAssertEqual(info.range.lowerBound, end, "gap or overlap before \(name)", file: source, line: line)
            XCTAssertEqual(info.range.lowerBound % info.dtype.byteSize, 0, "\(name) is not aligned to its \(info.dtype.rawValue) elements", file: source, line: line)
            end = info.range.upperBound
        }
        XCTAssertEqual(end, file.fileSize - file.dataStart, "the data section ends with the last tensor", file: source, line: line)
        XCTAssertEqual(file.dataStart % 64, 0, "the header is padded to 64 bytes", file: source, line: line)
    }

    func testWriterLeavesNoGapsAndAlignsEachTensorToItsElementSize() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-layout-\(UUID().uuidString).safetensors").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Odd sizes of every width, names in an order that would interleave them.
        let entries = [
            SafeTensorsWriter.Entry(name: "a.int8", dtype: .i8, shape: [3, 5], data: Data((0..<15).map { UInt8($0) })),
            SafeTensorsWriter.Entry(name: "b.floats", shape: [7], floats: (0..<7).map { Float($0) / 3 }),
            SafeTensorsWriter.Entry(name: "c.half", dtype: .f16, shape: [3], data: Data(repeating: 0x3c, count: 6)),
            SafeTensorsWriter.Entry(name: "d.floats", shape: [1, 3], floats: [1, -2, 3.5]),
            SafeTensorsWriter.Entry(name: "e.long", dtype: .i64, shape: [1], data: Data(repeating: 1, count: 8)),
            SafeTensorsWriter.Entry(name: "f.empty", shape: [0], floats: []),
        ]
        try SafeTensorsWriter.write(entries, metadata: ["format": "pt"], to: path)
        let file = try SafeTensorsFile(path: path)
        try assertContiguousAndAligned(file)
        XCTAssertEqual(file.tensors.count, entries.count)
        // Read in place, zero-copy, with the loader's alignment check.
        XCTAssertEqual(Array(try file.floats("b.floats")), (0..<7).map { Float($0) / 3 })
        XCTAssertEqual(Array(try file.floats("d.floats", shape: [1, 3])), [1, -2, 3.5])
        XCTAssertEqual(Array(try file.bytes("a.int8", dtype: .i8)), (0..<15).map { UInt8($0) })
        XCTAssertEqual(file.metadata["format"], "pt")
    }

    /// `bert convert` and `bert quantize` output: a classifier (a 3-label bias of 12 bytes once
    /// left a gap) and its INT8 file (I8 matrices and F32 scales mixed).
    func testConvertedAndQuantizedFilesAreContiguous() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-layout-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        _ = try Converter.convert(huggingFaceFolder: repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/heads/bert-classifier"), to: scratch)
        try assertContiguousAndAligned(SafeTensorsFile(path: scratch.appendingPathComponent(WeightFiles.fp32).path))
        _ = try Quantizer.quantize(folder: scratch)
        try assertContiguousAndAligned(SafeTensorsFile(path: scratch.appendingPathComponent(Precision.int8.fileName).path))
        XCTAssertNoThrow(try BertModel(folder: scratch, threads: 1, precision: .int8))
    }

    /// Files written before the writer closed its gaps (each tensor on a 64-byte boundary) still load.
    func testFilesWithGapsFromEarlierVersionsStillLoad() throws {
        let values: [Float] = [1, 2, 3]
        var data = Data(values.withUnsafeBytes { Data($0) })
        data.append(Data(count: 64 - data.count))
        data.append(values.reversed().withUnsafeBytes { Data($0) })
        let header = ["a": ["dtype": "F32", "shape": [3], "data_offsets": [0, 12]],
                      "b": ["dtype": "F32", "shape": [3], "data_offsets": [64, 76]]]
        var json = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        json.append(contentsOf: [UInt8](repeating: 0x20, count: (64 - (8 + json.count) % 64) % 64))
        var image = Data()
        withUnsafeBytes(of: UInt64(json.count).littleEndian) { image.append(contentsOf: $0) }
        image += json + data
        let file = try image.withUnsafeBytes { try SafeTensorsFile(image: $0, path: "old.safetensors") }
        XCTAssertEqual(Array(try file.floats("a")), values)
        XCTAssertEqual(Array(try file.floats("b")), values.reversed())
    }
}
