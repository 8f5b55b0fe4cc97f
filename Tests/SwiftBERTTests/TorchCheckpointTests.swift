import Foundation
import XCTest
@testable import SwiftBERT

/// The reader of torch.save checkpoints (TorchCheckpoint): real files written by torch
/// (tools/fixtures/make_torch_fixtures.py) read and converted exactly as their safetensors twins,
/// and hostile archives and pickles refused with a typed error, never a trap.
final class TorchCheckpointTests: XCTestCase {
    static let fixtures = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/torch")
    var scratch: URL!

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-torch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    // MARK: - Real torch.save files

    func linkedFolder(_ source: URL, excluding excluded: Set<String>, name: String) throws -> URL {
        try SwiftBERTTests.linkedFolder(source, excluding: excluded, at: scratch.appendingPathComponent(name))
    }

    /// Every tensor of two converted models, compared bit for bit.
    func assertSameTensors(_ a: URL, _ b: URL, _ label: String) throws {
        let first = try SafeTensorsFile(path: a.appendingPathComponent("model.safetensors").path)
        let second = try SafeTensorsFile(path: b.appendingPathComponent("model.safetensors").path)
        XCTAssertEqual(Set(first.tensors.keys), Set(second.tensors.keys), label)
        XCTAssertGreaterThan(first.tensors.count, 3, label)
        for (name, info) in first.tensors {
            guard let other = second.tensors[name] else { continue }
            XCTAssertEqual(info.shape, other.shape, "\(label): \(name)")
            XCTAssertEqual(info.dtype, other.dtype, "\(label): \(name)")
            let left = try first.bytes(name, dtype: info.dtype), right = try second.bytes(name, dtype: other.dtype)
            XCTAssertTrue(left.elementsEqual(right), "\(label): tensor \(name) differs")
        }
        XCTAssertEqual(try Data(contentsOf: a.appendingPathComponent("config.json")),
                       try Data(contentsOf: b.appendingPathComponent("config.json")), label)
    }

    func testEachPyTorchTwinConvertsBitForBitAsItsSafetensorsTwin() throws {
        for architecture in ["bert", "distilbert", "roberta", "mobilebert", "mpnet", "modernbert"] {
            let source = Self.fixtures.appendingPathComponent(architecture)
            // With both files present safetensors is read; without it, pytorch_model.bin.
            let fromSafetensors = scratch.appendingPathComponent("\(architecture)-st")
            try Converter.convert(huggingFaceFolder: source, to: fromSafetensors)
            let torchOnly = try linkedFolder(source, excluding: ["model.safetensors"], name: "\(architecture)-bin-source")
            let fromTorch = scratch.appendingPathComponent("\(architecture)-bin")
            try Converter.convert(huggingFaceFolder: torchOnly, to: fromTorch)
            try assertSameTensors(fromSafetensors, fromTorch, architecture)
        }
    }

    func testShardedPyTorchCheckpointConverts() throws {
        // pytorch_model.bin.index.json naming one shard that holds every tensor.
        let source = Self.fixtures.appendingPathComponent("bert")
        let folder = try linkedFolder(source, excluding: ["model.safetensors", "pytorch_model.bin"], name: "sharded")
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("pytorch_model-00001-of-00001.bin"),
                                                   withDestinationURL: source.appendingPathComponent("pytorch_model.bin"))
        let checkpoint = try TorchCheckpoint(path: source.appendingPathComponent("pytorch_model.bin").path)
        let map = Dictionary(uniqueKeysWithValues: checkpoint.names.map { ($0, "pytorch_model-00001-of-00001.bin") })
        try JSONSerialization.data(withJSONObject: ["weight_map": map]).write(to: folder.appendingPathComponent("pytorch_model.bin.index.json"))
        let fromShards = scratch.appendingPathComponent("sharded-out"), fromSafetensors = scratch.appendingPathComponent("single-out")
        try Converter.convert(huggingFaceFolder: folder, to: fromShards)
        try Converter.convert(huggingFaceFolder: source, to: fromSafetensors)
        try assertSameTensors(fromSafetensors, fromShards, "sharded")

        // A shard that is not a .bin file in the folder is refused.
        try JSONSerialization.data(withJSONObject: ["weight_map": ["a": "../pytorch_model.bin"]]).write(to: folder.appendingPathComponent("pytorch_model.bin.index.json"))
        XCTAssertThrowsError(try Converter.convert(huggingFaceFolder: folder, to: scratch.appendingPathComponent("refused")))
    }

    func testSentenceTransformersDenseModuleFromPyTorch() throws {
        // heads/st-cls, its Dense module saved as pytorch_model.bin as older sentence-transformers did.
        let fromSafetensors = scratch.appendingPathComponent("st-safetensors"), fromTorch = scratch.appendingPathComponent("st-torch")
        try Converter.convert(huggingFaceFolder: HeadFixtureTests.fixtures.appendingPathComponent("st-cls"), to: fromSafetensors)
        try Converter.convert(huggingFaceFolder: Self.fixtures.appendingPathComponent("st-dense"), to: fromTorch)
        let converted = try SafeTensorsFile(path: fromTorch.appendingPathComponent("model.safetensors").path)
        XCTAssertTrue(converted.tensors.keys.contains { $0.hasPrefix(TensorNames.sentenceDense(0)) })
        try assertSameTensors(fromSafetensors, fromTorch, "st-dense")
    }

    struct Expected: Decodable {
        let shape: [Int]
        let values: [Float]
    }

    func testHandBuiltFilesReadWithTheirNamesShapesAndValues() throws {
        let expected = try JSONDecoder().decode([String: [String: Expected]].self,
                                                from: Data(contentsOf: Self.fixtures.appendingPathComponent("values.json")))
        let namesInOrder = ["sparse_linear.pt": ["weight", "bias"], "colbert_linear.pt": ["weight", "bias"],
                            "storages.pt": ["matrix", "shared", "view_at_offset", "half", "bfloat", "double", "long", "parameter", "scalar", "empty"],
                            "wrapped.pt": ["weight"]]
        XCTAssertEqual(Set(expected.keys), Set(namesInOrder.keys))
        for (file, tensors) in expected {
            let checkpoint = try TorchCheckpoint(path: Self.fixtures.appendingPathComponent(file).path)
            XCTAssertEqual(checkpoint.names, namesInOrder[file], file)
            for (name, want) in tensors {
                XCTAssertEqual(checkpoint.shape(name), want.shape, "\(file): \(name)")
                if name == "long" {
                    // Integer tensors have names and shapes but are not floats.
                    XCTAssertThrowsError(try checkpoint.floatArray(name))
                    continue
                }
                // float16, bfloat16 and float64 widen (or round) exactly as torch's .float() does.
                XCTAssertEqual(try checkpoint.floatArray(name), want.values, "\(file): \(name)")
            }
        }
        // BGE-M3's heads: sparse [1, h] and [1]; ColBERT [h, h] and [h].
        let sparse = try TorchCheckpoint(path: Self.fixtures.appendingPathComponent("sparse_linear.pt").path)
        XCTAssertEqual(sparse.shape("weight"), [1, 16])
        XCTAssertEqual(sparse.shape("bias"), [1])
        let colbert = try TorchCheckpoint(path: Self.fixtures.appendingPathComponent("colbert_linear.pt").path)
        XCTAssertEqual(colbert.shape("weight"), [16, 16])
        XCTAssertEqual(colbert.shape("bias"), [16])
        XCTAssertNil(colbert.shape("missing"))
    }

    func testSharedStorageAndViewsAreReadInPlace() throws {
        let checkpoint = try TorchCheckpoint(path: Self.fixtures.appendingPathComponent("storages.pt").path)
        let shared = try checkpoint.floatArray("shared")
        XCTAssertEqual(try checkpoint.floatArray("matrix"), Array(shared[0..<12]))
        XCTAssertEqual(try checkpoint.floatArray("view_at_offset"), Array(shared[14..<20]))
    }

    func testTheSameBytesReadFromAnImage() throws {
        let data = try Data(contentsOf: Self.fixtures.appendingPathComponent("colbert_linear.pt"))
        let fromFile = try TorchCheckpoint(path: Self.fixtures.appendingPathComponent("colbert_linear.pt").path)
        let fromImage = try data.withUnsafeBytes { try TorchCheckpoint(image: $0, path: "image") }
        XCTAssertEqual(try fromImage.floatArray("weight"), try fromFile.floatArray("weight"))
    }

    // MARK: - Hand-made archives and pickles

    /// A zip of stored members, as torch.save writes it (zip64 records and extra fields if asked),
    /// or with one member marked compressed.
    static func zip(_ members: [(String, [UInt8])], zip64: Bool = false, compressed: String? = nil) -> [UInt8] {
        func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        var out: [UInt8] = [], directory: [UInt8] = []
        for (name, data) in members {
            let offset = out.count
            let method: UInt16 = name == compressed ? 8 : 0
            out += le(UInt32(0x0403_4b50)) + le(UInt16(20)) + le(UInt16(0)) + le(method) + le(UInt32(0)) + le(UInt32(0))
            out += le(UInt32(data.count)) + le(UInt32(data.count)) + le(UInt16(name.utf8.count)) + le(UInt16(0)) + Array(name.utf8) + data
            let extra: [UInt8] = zip64 ? le(UInt16(1)) + le(UInt16(24)) + le(UInt64(data.count)) + le(UInt64(data.count)) + le(UInt64(offset)) : []
            let saturated = { (value: Int) -> UInt32 in zip64 ? .max : UInt32(value) }
            directory += le(UInt32(0x0201_4b50)) + le(UInt16(45)) + le(UInt16(45)) + le(UInt16(0)) + le(method) + le(UInt32(0)) + le(UInt32(0))
            directory += le(saturated(data.count)) + le(saturated(data.count)) + le(UInt16(name.utf8.count)) + le(UInt16(extra.count))
            directory += le(UInt16(0)) + le(UInt16(0)) + le(UInt16(0)) + le(UInt32(0)) + le(saturated(offset)) + Array(name.utf8) + extra
        }
        let directoryOffset = out.count
        out += directory
        if zip64 {
            let record = out.count
            out += le(UInt32(0x0606_4b50)) + le(UInt64(44)) + le(UInt16(45)) + le(UInt16(45)) + le(UInt32(0)) + le(UInt32(0))
            out += le(UInt64(members.count)) + le(UInt64(members.count)) + le(UInt64(directory.count)) + le(UInt64(directoryOffset))
            out += le(UInt32(0x0706_4b50)) + le(UInt32(0)) + le(UInt64(record)) + le(UInt32(1))
        }
        out += le(UInt32(0x0605_4b50)) + le(UInt16(0)) + le(UInt16(0))
        out += zip64 ? le(UInt16.max) + le(UInt16.max) + le(UInt32.max) + le(UInt32.max)
                     : le(UInt16(members.count)) + le(UInt16(members.count)) + le(UInt32(directory.count)) + le(UInt32(directoryOffset))
        out += le(UInt16(0))
        return out
    }

    /// Pickle building blocks.
    static func text(_ string: String) -> [UInt8] {
        [0x58] + withUnsafeBytes(of: UInt32(string.utf8.count).littleEndian) { Array($0) } + Array(string.utf8)
    }
    static func int(_ value: Int) -> [UInt8] {  // LONG1 of 8 bytes: any Int
        [0x8A, 8] + withUnsafeBytes(of: Int64(value).littleEndian) { Array($0) }
    }
    static func global(_ module: String, _ name: String) -> [UInt8] { [0x63] + Array("\(module)\n\(name)\n".utf8) }
    static func tuple(_ items: [[UInt8]]) -> [UInt8] { [0x28] + items.flatMap { $0 } + [0x74] }

    /// The pickle of one tensor as torch writes it, every part replaceable.
    static func tensor(storageClass: String = "FloatStorage", key: String = "0", elements: Int = 6, offset: Int = 0,
                       shape: [Int] = [2, 3], stride: [Int] = [3, 1], rebuild: (String, String) = ("torch._utils", "_rebuild_tensor_v2")) -> [UInt8] {
        let persistentID = tuple([text("storage"), global("torch", storageClass), text(key), text("cpu"), int(elements)]) + [0x51]
        let arguments = tuple([persistentID, int(offset), tuple(shape.map(int)), tuple(stride.map(int)), [0x89], [0x7D]])
        return global(rebuild.0, rebuild.1) + arguments + [0x52]
    }

    /// The pickle of {"w": tensor}.
    static func statePickle(storageClass: String = "FloatStorage", key: String = "0", elements: Int = 6, offset: Int = 0,
                            shape: [Int] = [2, 3], stride: [Int] = [3, 1], rebuild: (String, String) = ("torch._utils", "_rebuild_tensor_v2")) -> [UInt8] {
        [0x80, 2, 0x7D] + text("w")
            + tensor(storageClass: storageClass, key: key, elements: elements, offset: offset, shape: shape, stride: stride, rebuild: rebuild)
            + [0x73, 0x2E]
    }

    static let sixFloats: [UInt8] = (0..<6).flatMap { withUnsafeBytes(of: Float($0).bitPattern.littleEndian) { Array($0) } }

    static func checkpoint(_ pickle: [UInt8], storages: [(String, [UInt8])] = [("0", sixFloats)], zip64: Bool = false, compressed: String? = nil) -> [UInt8] {
        zip([("archive/data.pkl", pickle), ("archive/byteorder", Array("little".utf8))] + storages.map { ("archive/data/\($0.0)", $0.1) },
            zip64: zip64, compressed: compressed)
    }

    func read(_ bytes: [UInt8]) throws -> TorchCheckpoint {
        try bytes.withUnsafeBytes { try TorchCheckpoint(image: $0, path: "hostile.pt") }
    }

    /// Refused with `invalidWeights` whose reason contains `words`.
    func assertRefused(_ bytes: [UInt8], _ words: String, _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try read(bytes), label, file: file, line: line) { error in
            guard case let .invalidWeights(_, reason)? = error as? SwiftBERTError else {
                return XCTFail("\(label): \(error) is not invalidWeights", file: file, line: line)
            }
            XCTAssertTrue(reason.contains(words), "\(label): '\(reason)' does not say '\(words)'", file: file, line: line)
        }
    }

    func testHandMadeCheckpointReadsPlainAndZip64() throws {
        for zip64 in [false, true] {
            let checkpoint = try read(Self.checkpoint(Self.statePickle(), zip64: zip64))
            XCTAssertEqual(checkpoint.names, ["w"])
            XCTAssertEqual(checkpoint.shape("w"), [2, 3])
            XCTAssertEqual(try checkpoint.floatArray("w"), [0, 1, 2, 3, 4, 5])
        }
        // A view at an offset of a larger storage, and a size-1 dimension with any stride.
        let view = try read(Self.checkpoint(Self.statePickle(offset: 2, shape: [1, 4], stride: [99, 1])))
        XCTAssertEqual(try view.floatArray("w"), [2, 3, 4, 5])
    }

    func testDisallowedGlobalsAndCallsAreRefused() {
        let system = [0x80, 2] + Self.global("os", "system") + Self.tuple([Self.text("echo hi")]) + [0x52, 0x2E]
        assertRefused(Self.checkpoint(system), "'os.system'", "GLOBAL os.system")
        let eval = [0x80, 4] + Self.text("builtins") + Self.text("eval") + [0x93] + Self.tuple([Self.text("1")]) + [0x52, 0x2E]
        assertRefused(Self.checkpoint(eval), "'builtins.eval'", "STACK_GLOBAL builtins.eval")
        assertRefused(Self.checkpoint(Self.statePickle(rebuild: ("torch", "load"))), "'torch.load'", "torch.load as the rebuilder")
        assertRefused(Self.checkpoint(Self.statePickle(storageClass: "Float8Storage")), "'torch.Float8Storage'", "an unknown storage class")
        // REDUCE on something that is not an accepted callable: a string, and a storage class.
        let onString = [0x80, 2] + Self.text("os.system") + Self.tuple([]) + [0x52, 0x2E]
        assertRefused(Self.checkpoint(onString), "calls a string", "REDUCE on a string")
        let onStorage = [0x80, 2] + Self.global("torch", "FloatStorage") + Self.tuple([]) + [0x52, 0x2E]
        assertRefused(Self.checkpoint(onStorage), "storage class", "REDUCE on a storage class")
        // A persistent id of another shape.
        let persistent = [0x80, 2, 0x7D] + Self.text("w") + Self.tuple([Self.text("module"), Self.text("x")]) + [0x51, 0x73, 0x2E]
        assertRefused(Self.checkpoint(persistent), "persistent id", "a persistent id that is not a storage")
        // Something other than a state dict, and non-tensor values in it.
        assertRefused(Self.checkpoint([0x80, 2, 0x5D, 0x2E]), "not a state dict", "a list")
        assertRefused(Self.checkpoint([0x80, 2, 0x7D] + Self.text("w") + Self.int(3) + [0x73, 0x2E]), "not a tensor", "an int value")
    }

    func testUnknownOpcodesAndDamagedPicklesAreRefused() {
        assertRefused(Self.checkpoint([0x80, 2, 0xFF, 0x2E]), "opcode 0xff", "an unknown opcode")
        assertRefused(Self.checkpoint([0x80, 2, 0x69] + Array("os\nsystem\n".utf8) + [0x2E]), "opcode 0x69", "INST")
        assertRefused(Self.checkpoint([0x80, 9, 0x2E]), "protocol 9", "protocol 9")
        let good = Self.statePickle()
        XCTAssertNoThrow(try read(Self.checkpoint(good)))
        for length in 0..<good.count {
            XCTAssertThrowsError(try read(Self.checkpoint(Array(good[..<length]))), "pickle cut at \(length)")
        }
        // BINUNICODE8 claiming 2^63 bytes.
        assertRefused(Self.checkpoint([0x80, 4, 0x8D] + Array(repeating: 0xFF, count: 7) + [0x7F, 0x2E]), "past its end", "a huge string length")
    }

    func testStoragesThatDoNotHoldTheTensorAreRefused() {
        assertRefused(Self.checkpoint(Self.statePickle(key: "7")), "which the zip does not hold", "a storage key with no member")
        assertRefused(Self.checkpoint(Self.statePickle(), storages: [("0", Array(Self.sixFloats.prefix(20)))]), "holds 20 bytes", "a truncated storage")
        assertRefused(Self.checkpoint(Self.statePickle(offset: 1)), "reads elements 1..<7", "a tensor reaching past its storage")
        assertRefused(Self.checkpoint(Self.statePickle(shape: [3, 2], stride: [1, 3])), "not contiguous", "transposed strides")
        assertRefused(Self.checkpoint(Self.statePickle(elements: .max)), "storage '0' of", "a storage size that overflows in bytes")
        assertRefused(Self.checkpoint(Self.statePickle(offset: .max)), "reads elements", "an offset that overflows")
        assertRefused(Self.checkpoint(Self.statePickle(shape: [Int.max / 2, 4], stride: [4, 1])), "overflows", "a shape whose count overflows")
        assertRefused(Self.checkpoint(Self.statePickle(shape: [-1, 3])), "negative", "a negative dimension")
        assertRefused(Self.checkpoint(Self.statePickle(shape: [2, 3], stride: [Int.max, 1])), "not contiguous", "a huge stride")
        // One storage read as floats by one tensor and as integers by another.
        let two = [0x80, 2, 0x7D, 0x28] + Self.text("a") + Self.tensor() + Self.text("b") + Self.tensor(storageClass: "IntStorage") + [0x75, 0x2E]
        assertRefused(Self.checkpoint(two), "another tensor as", "one storage, two element types")
    }

    func testDamagedArchivesAreRefused() throws {
        let good = Self.checkpoint(Self.statePickle())
        for length in 0..<good.count {
            XCTAssertThrowsError(try read(Array(good[..<length])), "archive cut at \(length)") { error in
                XCTAssertNotNil(error as? SwiftBERTError)
            }
        }
        // The real file from torch, cut at every length: always an error, never a trap.
        let real = Array(try Data(contentsOf: Self.fixtures.appendingPathComponent("sparse_linear.pt")))
        for length in stride(from: 0, to: real.count, by: 7) { XCTAssertThrowsError(try read(Array(real[..<length]))) }
        assertRefused(Self.checkpoint(Self.statePickle(), compressed: "archive/data/0"), "compressed (method 8)", "a compressed member")
        assertRefused([0x80, 0x02, 0x8A, 0x0A, 0x6C, 0xFC, 0x9C, 0x46, 0xF9, 0x20, 0x6A, 0xA8, 0x50, 0x19] + Array(repeating: 0, count: 20),
                      "legacy (torch < 1.6)", "a legacy checkpoint")
        assertRefused(Array(repeating: 0x41, count: 64), "not a zip-format torch checkpoint", "not a zip")
        assertRefused(Self.zip([("a/b", [1])]), "0 data.pkl members", "a zip without data.pkl")
        var bigEndian = Self.zip([("archive/data.pkl", Self.statePickle()), ("archive/byteorder", Array("big".utf8)), ("archive/data/0", Self.sixFloats)])
        assertRefused(bigEndian, "big-endian", "big-endian storages")
        // A central directory claiming 65535 members.
        bigEndian = good
        let end = bigEndian.count - 22
        bigEndian[end + 10] = 0xFF; bigEndian[end + 11] = 0xFF
        assertRefused(bigEndian, "more than its central directory holds", "a member count past the directory")
    }

    func testNestingBombsAndHugeMemoIndicesAreRefused() {
        // 10 000 MARKs, then lists and tuples nested far deeper than a state dict.
        assertRefused(Self.checkpoint([0x80, 2] + Array(repeating: 0x28, count: 10_000) + [0x2E]), "MARKs", "a MARK bomb")
        let lists: [UInt8] = [0x80, 2] + Array(repeating: 0x5D, count: 100_000) + Array(repeating: 0x61, count: 99_999) + [0x2E]
        assertRefused(Self.checkpoint(lists), "nests containers", "nested lists")
        let tuples: [UInt8] = [0x80, 2, 0x29] + Array(repeating: 0x85, count: 100_000) + [0x2E]
        assertRefused(Self.checkpoint(tuples), "nests containers", "nested tuples")
        // A list put inside itself, and a container changed after being put in another.
        assertRefused(Self.checkpoint([0x80, 2, 0x5D, 0x71, 0, 0x68, 0, 0x61, 0x2E]), "inside itself", "a list holding itself")
        let changed: [UInt8] = [0x80, 2, 0x5D, 0x71, 0, 0x5D, 0x68, 0, 0x61, 0x30, 0x68, 0, 0x4B, 1, 0x61, 0x2E]
        assertRefused(Self.checkpoint(changed), "after putting it inside another", "a sealed list changed")
        // LONG_BINPUT at 2^32 - 1 costs nothing; LONG_BINGET of an index never stored is refused.
        let memo: [UInt8] = [0x80, 2, 0x7D, 0x72, 0xFF, 0xFF, 0xFF, 0xFF, 0x6A, 0xFE, 0xFF, 0xFF, 0xFF, 0x2E]
        assertRefused(Self.checkpoint(memo), "memo entry 4294967294", "a huge memo index")
        // A million MEMOIZEs of one value run into the memo's bound.
        assertRefused(Self.checkpoint([0x80, 4, 0x7D] + Array(repeating: 0x94, count: (1 << 20) + 1) + [0x2E]), "memoizes more than", "a memo bomb")
    }
}
