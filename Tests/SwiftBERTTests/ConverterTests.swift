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
            throw BertError.fileNotFound(path: url.path, hint: "")
        }
        return url
    }

    /// splade-tiny: `bert.` prefix, LayerNorm gamma/beta, a decoder tied to the word embeddings.
    func testSpladeVariationsAreNormalised() throws {
        let report = try Converter.convert(huggingFaceFolder: huggingFaceFolder("splade-tiny"), to: scratch)
        XCTAssertTrue(report.config.hasMaskedLMHead)
        XCTAssertFalse(report.config.hasUntiedDecoder, "a tied decoder is stored once")
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
        XCTAssertEqual(report.config.pooling, .mean)
        XCTAssertEqual(report.config.maxSequenceLength, 256)
        XCTAssertEqual(Set(report.droppedTensors), ["embeddings.position_ids"])
        XCTAssertEqual(report.config.hasPooler, true)
        XCTAssertEqual(report.config.normalize, true)  // its 2_Normalize module
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
