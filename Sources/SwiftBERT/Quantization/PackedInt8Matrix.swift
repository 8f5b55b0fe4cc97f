import Foundation

/// The packed INT8 weight layout, shared by the packer and the kernels.
///
/// Output channels are cut into panels of 64 (four 16-lane vectors); inside a panel the
/// input dimension is cut into groups of 4 ("K-quads"). One K-quad of one panel is 256
/// bytes: for each of the 64 channels, its 4 consecutive weights. So one 64-byte load gives
/// 16 channels × 4 k as 16 Int32 lanes, the operand layout of VNNI dot products, and the
/// whole panel is read front to back by the micro-kernel. N and K are padded with zero
/// weights up to whole panels and quads, which makes edge tiles exact with no branches.
///
///     byte offset of W[n, k] = panel(n) · panelStride + (k / 4) · 256 + (n % 64) · 4 + k % 4
enum Int8PanelLayout {
    /// Output channels per panel: four vectors of 16 Int32 lanes.
    static let panelWidth = 64
    /// Input features packed into one 32-bit lane.
    static let kGroup = 4
    /// Bytes of one K-quad of one panel.
    static let quadBytes = panelWidth * kGroup

    static func kQuads(cols: Int) -> Int { (cols + kGroup - 1) / kGroup }
    static func paddedCols(_ cols: Int) -> Int { kQuads(cols: cols) * kGroup }
    static func panels(rows: Int) -> Int { (rows + panelWidth - 1) / panelWidth }
    static func panelStride(cols: Int) -> Int { kQuads(cols: cols) * quadBytes }
    static func byteCount(rows: Int, cols: Int) -> Int { panels(rows: rows) * panelStride(cols: cols) }

    static func offset(row n: Int, col k: Int, cols: Int) -> Int {
        (n / panelWidth) * panelStride(cols: cols) + (k / kGroup) * quadBytes + (n % panelWidth) * kGroup + k % kGroup
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

    /// round(v · reciprocal) for |v · reciprocal| ≤ 127.
    @inline(__always)
    static func quantize(_ v: Float, reciprocal: Float) -> Int32 {
        Int32((v * reciprocal).rounded(.toNearestOrEven))
    }
}

/// A Linear layer's weights W[N out, K in] quantised to INT8 per output channel and packed
/// for the INT8 micro-kernels (see `Int8PanelLayout`).
///
/// It either owns its packed bytes or wraps bytes owned by someone else (typically a
/// memory-mapped model file, which must then stay mapped while this value is used).
public struct PackedInt8Matrix: @unchecked Sendable {
    /// N: output channels.
    public let rows: Int
    /// K: input features.
    public let cols: Int
    /// Per output channel: W[n, :] ≈ q[n, :] · scales[n].
    public let scales: [Float]
    /// The packed bytes, `Int8PanelLayout.byteCount(rows:cols:)` of them.
    public let packed: UnsafeRawBufferPointer

    /// `scales` padded with zeros to whole panels, so kernels never test the column count.
    let paddedScales: [Float]
    /// 128 · Σₖ q[n, k] per channel (zero-padded to whole panels). The kernel feeds activations
    /// as unsigned bytes q + 128, so the accumulator holds Σ q·w + 128·Σ w; this removes the
    /// second term exactly.
    let shiftCorrections: [Int32]
    /// Keeps owned bytes alive; nil when wrapping caller-owned memory.
    private let owner: PackedBytes?

    var kQuads: Int { Int8PanelLayout.kQuads(cols: cols) }
    var panelStride: Int { Int8PanelLayout.panelStride(cols: cols) }

    /// Per-channel symmetric quantisation of row-major float weights; the offline first step.
    public static func quantize(weights: UnsafePointer<Float>, rows: Int, cols: Int) -> (int8: [Int8], scales: [Float]) {
        var int8 = [Int8](repeating: 0, count: rows * cols)
        var scales = [Float](repeating: 0, count: rows)
        int8.withUnsafeMutableBufferPointer { q in
            for n in 0..<rows {
                let row = weights + n * cols
                let maxAbs = SymmetricInt8.maxAbs(row, count: cols)
                let reciprocal = SymmetricInt8.reciprocalScale(maxAbs: maxAbs)
                scales[n] = maxAbs / 127
                for k in 0..<cols {
                    q[n * cols + k] = Int8(truncatingIfNeeded: SymmetricInt8.quantize(row[k], reciprocal: reciprocal))
                }
            }
        }
        return (int8, scales)
    }

    /// Reorders row-major INT8 weights [rows, cols] into the packed panel layout; a pure
    /// function, so packing can be done once offline and the result stored in a file.
    public static func packedLayout(int8 rowMajor: UnsafePointer<Int8>, rows: Int, cols: Int) -> [Int8] {
        var packed = [Int8](repeating: 0, count: Int8PanelLayout.byteCount(rows: rows, cols: cols))
        for n in 0..<rows {
            for k in 0..<cols {
                packed[Int8PanelLayout.offset(row: n, col: k, cols: cols)] = rowMajor[n * cols + k]
            }
        }
        return packed
    }

    /// Wraps packed bytes (for example a slice of a memory-mapped file) without copying them.
    /// The bytes must outlive this value. `source` names the file or tensor in error messages.
    public init(rows: Int, cols: Int, packed: UnsafeRawBufferPointer, scales: UnsafeBufferPointer<Float>,
                source: String = "packed INT8 weights") throws {
        guard rows > 0, cols > 0 else {
            throw BertError.invalidWeights(path: source, reason: "INT8 matrix shape [\(rows), \(cols)] is empty or negative")
        }
        let expected = Int8PanelLayout.byteCount(rows: rows, cols: cols)
        guard packed.count == expected, let base = packed.baseAddress else {
            throw BertError.invalidWeights(
                path: source,
                reason: "packed INT8 matrix [\(rows), \(cols)] needs \(expected) bytes, found \(packed.count); re-run the quantizer")
        }
        guard scales.count == rows else {
            throw BertError.invalidWeights(path: source, reason: "expected \(rows) INT8 scales, found \(scales.count)")
        }
        if let bad = scales.firstIndex(where: { !($0.isFinite && $0 >= 0) }) {
            throw BertError.invalidWeights(path: source, reason: "INT8 scale of output channel \(bad) is \(scales[bad]); scales must be finite and ≥ 0")
        }
        self.init(rows: rows, cols: cols, packed: UnsafeRawBufferPointer(start: base, count: expected),
                  scales: Array(scales), owner: nil)
    }

    /// Quantises and packs float weights [rows, cols] (row-major, PyTorch Linear layout),
    /// owning the packed bytes.
    public init(weights: UnsafePointer<Float>, rows: Int, cols: Int) {
        precondition(rows > 0 && cols > 0, "PackedInt8Matrix needs a non-empty shape")
        let (int8, scales) = Self.quantize(weights: weights, rows: rows, cols: cols)
        let bytes = int8.withUnsafeBufferPointer { Self.packedLayout(int8: $0.baseAddress!, rows: rows, cols: cols) }
        let owner = PackedBytes(bytes)
        self.init(rows: rows, cols: cols, packed: UnsafeRawBufferPointer(owner.bytes), scales: scales, owner: owner)
    }

    private init(rows: Int, cols: Int, packed: UnsafeRawBufferPointer, scales: [Float], owner: PackedBytes?) {
        self.rows = rows
        self.cols = cols
        self.scales = scales
        self.packed = packed
        self.owner = owner
        let padded = Int8PanelLayout.panels(rows: rows) * Int8PanelLayout.panelWidth
        paddedScales = scales + [Float](repeating: 0, count: padded - rows)
        shiftCorrections = Self.shiftCorrections(packed: packed, paddedRows: padded, cols: cols)
    }

    /// 128 · Σₖ q[n, k] for every (padded) channel, read from the packed bytes.
    private static func shiftCorrections(packed: UnsafeRawBufferPointer, paddedRows: Int, cols: Int) -> [Int32] {
        let width = Int8PanelLayout.panelWidth, group = Int8PanelLayout.kGroup
        let quads = Int8PanelLayout.kQuads(cols: cols), stride = Int8PanelLayout.panelStride(cols: cols)
        var sums = [Int32](repeating: 0, count: paddedRows)
        for panel in 0..<(paddedRows / width) {
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

/// Owned, 64-byte aligned packed weights.
private final class PackedBytes {
    let bytes: UnsafeMutableRawBufferPointer

    init(_ source: [Int8]) {
        bytes = .allocate(byteCount: max(source.count, 1), alignment: 64)
        source.withUnsafeBytes { bytes.copyMemory(from: $0) }
    }

    deinit { bytes.deallocate() }
}
