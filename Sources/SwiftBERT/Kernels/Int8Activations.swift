/// The activations of one INT8 Linear call, quantised per row (per token): owned by the
/// forward pass's scratch and reused by every layer. It only allocates when a call needs more
/// room than any before it. Once `quantize` has run, threads may read it at once (the INT8
/// kernel on disjoint column ranges).
final class Int8Activations: @unchecked Sendable {
    /// Rows (m) and features (k) of the activations last quantised into it.
    private(set) var m = 0
    private(set) var k = 0
    /// Row stride of `quantized`: k padded to whole quads.
    private(set) var stride = 0
    /// Activations as unsigned bytes q + 128, q = round(x · 127 / max|row|); padding is 128 (q = 0).
    private(set) var quantized: UnsafeMutablePointer<UInt8>
    /// Per row: x ≈ q · rowScales[row].
    private(set) var rowScales: UnsafeMutablePointer<Float>
    private var byteCapacity: Int
    private var rowCapacity: Int

    /// Optionally sized up front for the largest call (m × k activations).
    init(m: Int = 0, k: Int = 0) {
        byteCapacity = max(1, m * Int8PanelLayout.paddedK(k))
        rowCapacity = max(1, m)
        quantized = .allocate(capacity: byteCapacity)
        rowScales = .allocate(capacity: rowCapacity)
    }

    deinit {
        quantized.deallocate()
        rowScales.deallocate()
    }

    /// Quantises x [m × k] per row (rows split across `threads`), once per Linear call; the
    /// result serves every column block.
    func quantize(_ x: UnsafePointer<Float>, m: Int, k: Int, threads: Int = 1) {
        precondition(m >= 0 && k > 0, "INT8 activations need m ≥ 0 and k > 0")
        let stride = Int8PanelLayout.paddedK(k)
        if m * stride > byteCapacity {
            quantized.deallocate()
            byteCapacity = m * stride
            quantized = .allocate(capacity: byteCapacity)
        }
        if m > rowCapacity {
            rowScales.deallocate()
            rowCapacity = m
            rowScales = .allocate(capacity: rowCapacity)
        }
        (self.m, self.k, self.stride) = (m, k, stride)
        let (quantized, rowScales) = (quantized, rowScales)
        parallelRows(m, columns: k, threads: threads) { rows in
            for row in rows {
                let input = x + row &* k
                let output = quantized + row &* stride
                let maxAbs = SymmetricInt8.maxAbs(input, count: k)
                let reciprocal = SymmetricInt8.reciprocalScale(maxAbs: maxAbs)
                rowScales[row] = maxAbs / 127
                for i in 0..<k {
                    output[i] = UInt8(truncatingIfNeeded: SymmetricInt8.quantize(input[i], reciprocal: reciprocal) &+ 128)
                }
                for i in k..<stride { output[i] = 128 }
            }
        }
    }
}
