import XCTest
@testable import SwiftBERT

/// Embedding quantisation gives sentence-transformers' `quantize_embeddings` bytes for the same
/// floats: a recording of that function (tools/fixtures/make_quantization_fixture.py) on the 24
/// MiniLM vectors sentence-transformers made (Fixtures/reference), every precision, with ranges
/// from the vectors themselves, from calibration vectors, given (and clipping), one vector, and
/// multi-vector matrices sharing one calibration. The Python package's test_quantization.py
/// checks its numpy version against the same recording.
final class EmbeddingQuantizationTests: XCTestCase {
    struct Recording: Decodable {
        struct Array: Decodable { let hex: String; let dtype: String; let shape: [Int] }
        enum Output: Decodable {
            case one(Array), many([Array])
            init(from decoder: Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let many = try? container.decode([Array].self) { self = .many(many) } else { self = .one(try container.decode(Array.self)) }
            }
        }
        struct Case: Decodable {
            let precision: String
            let what: String
            let output: Output
            let calibration_rows: Int?
            let ranges: [[Float]]?
            let row: Int?
            let split: Int?
        }
        let cases: [Case]
    }

    func bytes(_ hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    func testSentenceTransformersBytesForEveryPrecision() throws {
        let folder = Bundle.module.url(forResource: "Fixtures/reference", withExtension: nil)!
        let recording = try JSONDecoder().decode(Recording.self, from: Data(contentsOf: folder.appendingPathComponent("quantization.json")))
        let reference = try Reference("all-MiniLM-L6-v2")
        let vectors = try (0..<24).map { try reference.tensor("sentence_embedding.\($0)") }
        XCTAssertEqual(Set(recording.cases.map(\.precision)), ["int8", "uint8", "binary", "ubinary"])
        for recorded in recording.cases {
            let type = try XCTUnwrap(EmbeddingType(rawValue: recorded.precision))
            var quantized = vectors
            var calibration = vectors
            if let rows = recorded.calibration_rows { (calibration, quantized) = (Array(vectors[..<rows]), Array(vectors[rows...])) }
            if let ranges = recorded.ranges { calibration = ranges }  // minima and maxima: their own range
            if let row = recorded.row { quantized = [vectors[row]] }
            let quantizer = try EmbeddingQuantizer(type, dimension: 384, ranges: type.needsRanges ? EmbeddingRanges(calibration: calibration) : nil)
            let ours = try quantized.flatMap { try quantizer.bytes($0) }
            let expected: [UInt8]
            switch recorded.output {
            case let .one(array):
                XCTAssertEqual(array.dtype, type.isSigned ? "int8" : "uint8", recorded.what)
                XCTAssertEqual(array.shape.last, type.width(dimension: 384), recorded.what)
                expected = bytes(array.hex)
            case let .many(arrays):
                XCTAssertEqual(arrays.map { $0.shape[0] }, [recorded.split!, 24 - recorded.split!], recorded.what)
                expected = arrays.flatMap { bytes($0.hex) }
            }
            XCTAssertEqual(ours, expected, "\(recorded.precision): \(recorded.what)")
        }
    }

    func testValuesAndTheEdges() throws {
        let binary = try EmbeddingQuantizer(.binary, dimension: 10)
        // Bits 1 0 1 0 0 0 0 1 | 1 0 (padded with zeros): 0xA1, 0x80; binary shifts by −128.
        let vector: [Float] = [0.5, -1, 2, 0, -0, -3, -4, 1e-30, 7, .nan]
        XCTAssertEqual(try EmbeddingQuantizer(.ubinary, dimension: 10).values(vector), [0xA1, 0x80])
        XCTAssertEqual(try binary.values(vector), [0xA1 - 128, 0])
        let ranges = try EmbeddingRanges(calibration: [[0, 1, 5], [255, 1, -5]])
        XCTAssertEqual(ranges.minima, [0, 1, -5])
        let uint8 = try EmbeddingQuantizer(.uint8, dimension: 3, ranges: ranges)
        XCTAssertEqual(try uint8.values([254.5, 9, 0]), [254, 8, 127], "floor; a constant dimension steps by 1")
        XCTAssertEqual(try uint8.values([1e9, -1e9, .nan]), [255, 0, 0], "clipped; NaN to 0, not a trap")
        XCTAssertEqual(try EmbeddingQuantizer(.int8, dimension: 3, ranges: ranges).values([0, 1, 6]), [-128, -128, 127], "6 past the maximum: clipped")
        XCTAssertThrowsError(try EmbeddingQuantizer(.int8, dimension: 3)) { error in
            XCTAssertTrue("\(error)".contains("calibration set"), "\(error)")
        }
        XCTAssertThrowsError(try EmbeddingQuantizer(.int8, dimension: 4, ranges: ranges)) { error in
            XCTAssertTrue("\(error)".contains("3 dimensions and the model's 4"), "\(error)")
        }
        XCTAssertThrowsError(try EmbeddingRanges(calibration: [[1, 2], [1]]))
        XCTAssertThrowsError(try EmbeddingRanges(calibration: [[1, .infinity]]))
        XCTAssertThrowsError(try EmbeddingRanges(calibration: []))
        XCTAssertThrowsError(try binary.bytes([1, 2]))
    }
}
