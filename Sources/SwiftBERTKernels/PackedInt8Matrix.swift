import Foundation

/// The packed INT8 weight layout, shared by the packer and the kernels.
///
/// Output channels are cut into panels of 64 (four 16-lane vectors); inside a panel the
/// input dimension is cut into groups of 4 ("K-quads"). One K-quad of one panel is 256
/// bytes: for each of the 64 channels, its 4 consecutive weights. So one 64-byte load gives
/// 16 channels × 4 k as 16 Int32 lanes, the operand layout of VNNI dot products, and the
/// whole panel is read front to back by the micro-kernel. n and k are padded with zero
/// weights up to whole panels and quads, which makes edge tiles exact with no branches.
///
///     byte offset of W[c, i] = (c / 64) · panelStride + (i / 4) · 256 + (c % 64) · 4 + i % 4
public enum Int8PanelLayout {
    /// Input features packed into one 32-bit lane.
    public static let kGroup = 4
    /// Bytes of one K-quad of one panel.
    static let quadBytes = panelWidth * kGroup

    static func kQuads(k: Int) -> Int { (k + kGroup - 1) / kGroup }
    static func paddedK(_ k: Int) -> Int { kQuads(k: k) * kGroup }
    static func panels(n: Int) -> Int { (n + panelWidth - 1) / panelWidth }
    static func panelStride(k: Int) -> Int { kQuads(k: k) * quadBytes }
    static func byteCount(n: Int, k: Int) -> Int { panels(n: n) * panelStride(k: k) }

    static func offset(channel c: Int, input i: Int, k: Int) -> Int {
        (c / panelWidth) * panelStride(k: k) + (i / kGroup) * quadBytes + (c % panelWidth) * kGroup + i % kGroup
    }
}

/// Symmetric INT8 quantisation of a row: scale = max|v| / 127, q = round(v · 127 / max|v|).
/// Multiplying by the reciprocal (rather than dividing by the scale) lets the loop vectorise;
/// ties round to even, like torch.round. An all-zero row gets scale 0 and q = 0.
enum SymmetricInt8 {
    /// max|v| over the row, on the bit patterns: for non-negative floats the integer order
    /// is the float order, and an integer max loop vectorises where a Float max does not.
    /// A NaN anywhere gives NaN (its pattern is above +inf's).
    @inline(__always)
    static func maxAbs(_ v: UnsafePointer<Float>, count: Int) -> Float {
        v.withMemoryRebound(to: UInt32.self, capacity: count) { bits in
            var largest: UInt32 = 0
            for i in 0..<count { largest = max(largest, bits[i] & 0x7FFF_FFFF) }
            return Float(bitPattern: largest)
        }
    }

    /// The factor that maps max|v| to 127; 0 for a zero row or a row with NaN or infinity
    /// (whose quantised values are then all 0 and whose scale, NaN or inf, poisons the output).
    @inline(__always)
    static func reciprocalScale(maxAbs: Float) -> Float {
        maxAbs > 0 && maxAbs.isFinite ? 127 / maxAbs : 0
    }

    /// round(v · reciprocal) for |v · reciprocal| ≤ 127, ties to even. Adding 1.5 · 2^23 rounds
    /// to an integer in the low mantissa bits (the float add rounds ties to even): the same
    /// result as Int32(x.rounded(.toNearestOrEven)), without that conversion's trap, which
    /// kept the quantising loop from vectorising under -O.
    @inline(__always)
    static func quantize(_ v: Float, reciprocal: Float) -> Int32 {
        Int32(bitPattern: (v * reciprocal + 12_582_912).bitPattern) &- 0x4B40_0000
    }

    /// x[0 ..< count] as bytes round(x · reciprocal) + offset, 16 lanes at a time, then `offset`
    /// up to a whole quad (the INT8 kernels' padding); returns the sum of the rounded values,
    /// offset left out (INT8 attention's keys need it; where it is unused it is not computed).
    @inline(__always) @discardableResult
    static func quantize(_ x: UnsafePointer<Float>, count: Int, reciprocal: Float, offset: Int32,
                         into out: UnsafeMutableRawPointer) -> Int32 {
        let factor = SIMD16<Float>(repeating: reciprocal)
        var sums = SIMD16<Int32>(), i = 0
        while i &+ 16 <= count {
            let q = quantize(UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self), reciprocal: factor)
            sums &+= q
            out.storeBytes(of: truncatedToBytes(q &+ offset), toByteOffset: i, as: SIMD16<UInt8>.self)
            i &+= 16
        }
        var sum = sums.wrappedSum()
        while i < count {
            let q = quantize(x[i], reciprocal: reciprocal)
            sum &+= q
            out.storeBytes(of: UInt8(truncatingIfNeeded: q &+ offset), toByteOffset: i, as: UInt8.self)
            i &+= 1
        }
        while i % 4 != 0 { out.storeBytes(of: UInt8(truncatingIfNeeded: offset), toByteOffset: i, as: UInt8.self); i &+= 1 }
        return sum
    }

    /// `quantize` on 16 lanes: the same operations, so the same integers.
    @inline(__always)
    static func quantize(_ v: SIMD16<Float>, reciprocal: SIMD16<Float>) -> SIMD16<Int32> {
        rounded(v * reciprocal)
    }

    /// Each lane rounded to the nearest integer, ties to even, for |v| < 2^22: the rounding of
    /// `quantize`, for values already scaled.
    @inline(__always)
    static func rounded(_ v: SIMD16<Float>) -> SIMD16<Int32> {
        unsafeBitCast(v + 12_582_912, to: SIMD16<Int32>.self) &- 0x4B40_0000
    }
}

/// A Linear layer's weights W [n out × k in] quantised to INT8 per output channel and packed
/// for the INT8 micro-kernels (see `Int8PanelLayout`).
///
/// It either owns its packed bytes or wraps bytes owned by someone else (typically a
/// memory-mapped model file, which must then stay mapped while this value is used).
public struct PackedInt8Matrix: @unchecked Sendable {
    /// Output channels.
    public let n: Int
    /// Input features.
    public let k: Int
    /// Per output channel: W[c, :] ≈ q[c, :] · scales[c].
    let scales: [Float]
    /// The packed bytes, `Int8PanelLayout.byteCount(n:k:)` of them.
    let packed: UnsafeRawBufferPointer

    /// `scales` padded with zeros to whole panels, so kernels never test the column count.
    let paddedScales: [Float]
    /// 128 · Σₖ q[n, k] per channel (zero-padded to whole panels). The kernel feeds activations
    /// as unsigned bytes q + 128, so the accumulator holds Σ q·w + 128·Σ w; this removes the
    /// second term exactly.
    let shiftCorrections: [Int32]
    /// Keeps owned bytes alive; nil when wrapping caller-owned memory.
    private let owner: PackedBytes?

    var kQuads: Int { Int8PanelLayout.kQuads(k: k) }
    var panelStride: Int { Int8PanelLayout.panelStride(k: k) }

    /// Per-channel symmetric quantisation of row-major float weights; the offline first step.
    public static func quantize(weights: UnsafePointer<Float>, n: Int, k: Int) -> (int8: [Int8], scales: [Float]) {
        var int8 = [Int8](repeating: 0, count: n * k)
        var scales = [Float](repeating: 0, count: n)
        int8.withUnsafeMutableBufferPointer { q in
            for c in 0..<n {
                let row = weights + c * k
                let maxAbs = SymmetricInt8.maxAbs(row, count: k)
                let reciprocal = SymmetricInt8.reciprocalScale(maxAbs: maxAbs)
                scales[c] = maxAbs / 127
                for i in 0..<k {
                    q[c * k + i] = Int8(truncatingIfNeeded: SymmetricInt8.quantize(row[i], reciprocal: reciprocal))
                }
            }
        }
        return (int8, scales)
    }

    /// Reorders row-major INT8 weights [n × k] into the packed panel layout; a pure function,
    /// so packing can be done once offline and the result stored in a file.
    public static func packedLayout(int8 rowMajor: UnsafePointer<Int8>, n: Int, k: Int) -> [Int8] {
        var packed = [Int8](repeating: 0, count: Int8PanelLayout.byteCount(n: n, k: k))
        for c in 0..<n {
            for i in 0..<k {
                packed[Int8PanelLayout.offset(channel: c, input: i, k: k)] = rowMajor[c * k + i]
            }
        }
        return packed
    }

    /// Wraps packed bytes (for example a slice of a memory-mapped file) without copying them.
    /// The bytes must outlive this value.
    public init(n: Int, k: Int, packed: UnsafeRawBufferPointer, scales: UnsafeBufferPointer<Float>) throws(InvalidPackedMatrix) {
        guard n > 0, k > 0 else {
            throw InvalidPackedMatrix(reason: "INT8 matrix shape [\(n), \(k)] is empty or negative")
        }
        let expected = Int8PanelLayout.byteCount(n: n, k: k)
        guard packed.count == expected, let base = packed.baseAddress else {
            throw InvalidPackedMatrix(reason: "packed INT8 matrix [\(n), \(k)] needs \(expected) bytes, found \(packed.count); re-run the quantizer")
        }
        guard scales.count == n else {
            throw InvalidPackedMatrix(reason: "expected \(n) INT8 scales, found \(scales.count)")
        }
        if let bad = scales.firstIndex(where: { !($0.isFinite && $0 >= 0) }) {
            throw InvalidPackedMatrix(reason: "INT8 scale of output channel \(bad) is \(scales[bad]); scales must be finite and ≥ 0")
        }
        self.init(n: n, k: k, packed: UnsafeRawBufferPointer(start: base, count: expected),
                  scales: Array(scales), owner: nil)
    }

    /// Quantises and packs float weights [n × k] (row-major, PyTorch Linear layout), owning
    /// the packed bytes.
    public init(weights: UnsafePointer<Float>, n: Int, k: Int) {
        precondition(n > 0 && k > 0, "PackedInt8Matrix needs a non-empty shape")
        let (int8, scales) = Self.quantize(weights: weights, n: n, k: k)
        let bytes = int8.withUnsafeBufferPointer { Self.packedLayout(int8: $0.baseAddress!, n: n, k: k) }
        let owner = PackedBytes(bytes)
        self.init(n: n, k: k, packed: UnsafeRawBufferPointer(owner.bytes), scales: scales, owner: owner)
    }

    private init(n: Int, k: Int, packed: UnsafeRawBufferPointer, scales: [Float], owner: PackedBytes?) {
        self.n = n
        self.k = k
        self.scales = scales
        self.packed = packed
        self.owner = owner
        let padded = Int8PanelLayout.panels(n: n) * panelWidth
        paddedScales = scales + [Float](repeating: 0, count: padded - n)
        shiftCorrections = Self.shiftCorrections(packed: packed, paddedN: padded, k: k)
    }

    /// 128 · Σᵢ q[c, i] for every (padded) channel, read from the packed bytes.
    private static func shiftCorrections(packed: UnsafeRawBufferPointer, paddedN: Int, k: Int) -> [Int32] {
        let width = panelWidth, group = Int8PanelLayout.kGroup
        let quads = Int8PanelLayout.kQuads(k: k), stride = Int8PanelLayout.panelStride(k: k)
        var sums = [Int32](repeating: 0, count: paddedN)
        for panel in 0..<(paddedN / width) {
            for quad in 0..<quads {
                let base = panel * stride + quad * Int8PanelLayout.quadBytes
                for lane in 0..<width {
                    var sum: Int32 = 0
                    for t in 0..<group { sum &+= Int32(Int8(bitPattern: packed[base + lane * group + t])) }
                    sums[panel * width + lane] &+= sum
                }
            }
        }
        return sums.map { $0 &* 128 }
    }
}

extension PackedInt8Matrix {
    /// Row c (an embedding lookup), dequantised straight from the packed layout.
    public func row(_ c: Int, into out: UnsafeMutablePointer<Float>) {
        // The channel's inputs lie in quads of 4 bytes, one quad per K-quad of its panel (a
        // plain loop: the general offset's divisions made the INT8 embeddings 3x FP32's).
        let channel = packed.baseAddress!.assumingMemoryBound(to: Int8.self) + Int8PanelLayout.offset(channel: c, input: 0, k: k)
        let scale = scales[c]
        for i in 0..<k { out[i] = Float(channel[(i &>> 2) &* Int8PanelLayout.quadBytes &+ (i & 3)]) * scale }
    }
}

/// Packed INT8 bytes or scales that do not fit the matrix's shape (a damaged or foreign file).
public struct InvalidPackedMatrix: Error, Sendable {
    public let reason: String
}

/// Owned, 64-byte aligned packed weights.
private final class PackedBytes {
    let bytes: UnsafeMutableRawBufferPointer

    init(_ source: [Int8]) {
        bytes = .allocate(byteCount: max(source.count, 1), alignment: 64)
        source.withUnsafeBytes { bytes.copyMemory(from: $0) }
    }

    deinit { bytes.deallocate() }
}
