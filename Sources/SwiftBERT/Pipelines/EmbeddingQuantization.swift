/// How sentence vectors are stored: sentence-transformers' `quantize_embeddings` precisions, for
/// smaller indexes and faster search. This is the storage of the vectors a model gave, not the
/// engine's own precision (`Precision`), and the same arithmetic as sentence-transformers', so the
/// same bytes for the same floats (`EmbeddingQuantizationTests` checks a recording of it):
/// - `binary` / `ubinary`: a bit per dimension, 1 where the value is above 0, 8 to a byte, the
///   first dimension in the top bit (numpy's `packbits`); `binary` shifts each byte by −128.
/// - `uint8` / `int8`: each dimension cut into 255 equal steps between its minimum and maximum
///   over a calibration set (`EmbeddingRanges`); `int8` shifts by −128.
public enum EmbeddingType: String, CaseIterable, Sendable {
    case float32, int8, uint8, binary, ubinary

    /// Values per vector of `dimension` floats: a byte per 8 dimensions when packed.
    public func width(dimension: Int) -> Int {
        switch self {
        case .float32, .int8, .uint8: return dimension
        case .binary, .ubinary: return (dimension + 7) / 8
        }
    }

    /// int8 and uint8 need each dimension's range.
    public var needsRanges: Bool { self == .int8 || self == .uint8 }

    /// Whether the quantised values are signed bytes (numpy int8) rather than unsigned (uint8).
    public var isSigned: Bool { self == .int8 || self == .binary }
}

/// Each dimension's minimum and maximum over a calibration set: what int8 and uint8 cut into
/// 255 steps. Take them from embeddings of texts like the ones to be stored (a few hundred or
/// more); a set of two rows, the minima and the maxima, gives those ranges themselves.
public struct EmbeddingRanges: Sendable, Equatable {
    public let minima: [Float]
    public let maxima: [Float]

    public init(calibration rows: [[Float]]) throws {
        guard let first = rows.first, !first.isEmpty else {
            throw SwiftBERTError.invalidInput(reason: "the calibration set holds no embeddings; give embeddings of texts like the ones to be stored")
        }
        var minima = first, maxima = first
        for (index, row) in rows.enumerated() {
            guard row.count == first.count else {
                throw SwiftBERTError.invalidInput(reason: "calibration embedding \(index) has \(row.count) values, the first \(first.count)")
            }
            for (d, value) in row.enumerated() {
                guard value.isFinite else {
                    throw SwiftBERTError.invalidInput(reason: "calibration embedding \(index) holds \(value) at dimension \(d); the set must be finite numbers")
                }
                minima[d] = min(minima[d], value)
                maxima[d] = max(maxima[d], value)
            }
        }
        (self.minima, self.maxima) = (minima, maxima)
    }

    public var dimension: Int { minima.count }
}

/// Quantises vectors to one `EmbeddingType`: built once, with its ranges checked, then applied
/// to every vector of a stream.
public struct EmbeddingQuantizer: Sendable {
    public let type: EmbeddingType
    public let dimension: Int
    private let starts: [Float]
    private let steps: [Float]

    /// `ranges` are needed for int8 and uint8, and must be of `dimension`; the others ignore them.
    public init(_ type: EmbeddingType, dimension: Int, ranges: EmbeddingRanges? = nil) throws {
        (self.type, self.dimension) = (type, dimension)
        guard type.needsRanges else { (starts, steps) = ([], []); return }
        guard let ranges else {
            throw SwiftBERTError.invalidInput(reason: "\(type.rawValue) cuts each dimension into 255 steps between its minimum and maximum, which need a calibration set: embeddings of texts like the ones to be stored")
        }
        guard ranges.dimension == dimension else {
            throw SwiftBERTError.invalidInput(reason: "the calibration embeddings have \(ranges.dimension) dimensions and the model's \(dimension); calibrate with embeddings of this model")
        }
        starts = ranges.minima
        // numpy's float32 arithmetic, step for step: (max − min) / 255, and 1 where that is 0.
        steps = zip(ranges.minima, ranges.maxima).map { minimum, maximum in
            let step = (maximum - minimum) / 255
            return step == 0 ? 1 : step
        }
    }

    /// `vector`'s quantised values as bytes (an int8 value as its bit pattern), `type.width`
    /// of them; float32 gives its four little-endian bytes per value.
    public func bytes(_ vector: [Float]) throws -> [UInt8] {
        guard vector.count == dimension else {
            throw SwiftBERTError.invalidInput(reason: "a vector of \(vector.count) values given to a quantizer of \(dimension)")
        }
        switch type {
        case .float32:
            return vector.withUnsafeBytes { Array($0) }
        case .binary, .ubinary:
            var packed = Self.packedSigns(vector)
            if type == .binary { for i in packed.indices { packed[i] &+= 0x80 } }  // −128 on the int8 value
            return packed
        case .int8, .uint8:
            var buckets = [UInt8](repeating: 0, count: dimension)
            for d in 0..<dimension {
                // floor((x − min) / step) clipped to 0…255; NaN (no model gives it) to 0, not a trap.
                let bucket = ((vector[d] - starts[d]) / steps[d]).rounded(.down)
                buckets[d] = bucket.isNaN ? 0 : UInt8(min(max(bucket, 0), 255))
            }
            if type == .int8 { for d in buckets.indices { buckets[d] &-= 128 } }
            return buckets
        }
    }

    /// The signs of `vector`, 8 to a byte, the first in the top bit, the last byte padded with
    /// zeros: ubinary's bytes (numpy's `packbits(vector > 0)`).
    public static func packedSigns(_ vector: [Float]) -> [UInt8] {
        var packed = [UInt8](repeating: 0, count: (vector.count + 7) / 8)
        for (i, x) in vector.enumerated() where x > 0 { packed[i / 8] |= 0x80 >> UInt8(i % 8) }
        return packed
    }

    /// `vector`'s quantised values as integers (int8 −128…127, uint8 0…255), for JSON and text.
    public func values(_ vector: [Float]) throws -> [Int] {
        guard type != .float32 else {
            throw SwiftBERTError.invalidInput(reason: "float32 vectors have no integer values; write the floats themselves")
        }
        return try bytes(vector).map { type.isSigned ? Int(Int8(bitPattern: $0)) : Int($0) }
    }
}
