/// The activations of one INT8 Linear call, quantised per row (per token): owned by the
/// forward pass's scratch and reused by every layer. It only allocates when a call needs more
/// room than any before it. Once `quantize` has run, threads may read it at once (the INT8
/// kernel on disjoint column ranges).
public final class Int8Activations: @unchecked Sendable {
    /// Rows (m) and features (k) of the activations last quantised into it.
    private(set) var m = 0
    private(set) var k = 0
    /// Row stride of `quantized`: k padded to whole quads.
    private(set) var stride = 0
    /// Activations as unsigned bytes q + 128, q = round(x · 127 / max|row|); padding is 128 (q = 0).
    private(set) var quantized: UnsafeMutablePointer<UInt8>
    /// Per row: x ≈ q · rowScales[row].
    private(set) var rowScales: UnsafeMutablePointer<Float>
    /// The calibrated quantisation these activations were made with, or nil (per row, symmetric).
    private(set) var staticInput: StaticInt8Input?
    private var byteCapacity: Int
    private var rowCapacity: Int
    /// The tile backend the Linear layers run on, or nil for the vector kernels.
    public let tiles: TileBackend?

    /// Optionally sized up front for the largest call (m × k activations).
    public init(m: Int = 0, k: Int = 0, tiles: TileBackend? = TileBackend.preferred) {
        self.tiles = tiles
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
    public func quantize(_ x: UnsafePointer<Float>, m: Int, k: Int, threads: Int = 1) {
        reserve(m: m, k: k)
        staticInput = nil
        let (quantized, rowScales, stride) = (quantized, rowScales, stride)
        parallelRows(m, columns: k, threads: threads) { rows in
            for row in rows {
                let input = x + row &* k
                let output = quantized + row &* stride
                let maxAbs = SymmetricInt8.maxAbs(input, count: k)
                let reciprocal = SymmetricInt8.reciprocalScale(maxAbs: maxAbs)
                rowScales[row] = maxAbs / 127
                // Padded with the zero byte (128) to a whole quad: the row's stride.
                SymmetricInt8.quantize(input, count: k, reciprocal: reciprocal, offset: 128, into: UnsafeMutableRawPointer(output))
            }
        }
    }

    /// Quantises x [m × k] with a Linear layer's calibrated scale and zero point: one pass, no
    /// per-row maximum.
    public func quantize(_ x: UnsafePointer<Float>, m: Int, k: Int, with input: StaticInt8Input, threads: Int = 1) {
        precondition(input.k == k, "the calibration is for \(input.k) features, the activations have \(k)")
        reserve(m: m, k: k)
        staticInput = input
        let (quantized, rowScales, stride) = (quantized, rowScales, stride)
        parallelRows(m, columns: k, threads: threads) { rows in
            for row in rows {
                input.quantize(x + row &* k, into: quantized + row &* stride, stride: stride)
                rowScales[row] = input.step
            }
        }
    }

    /// Room for m × k activations, and the shape they will have.
    private func reserve(m: Int, k: Int) {
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
    }
}

/// A Linear layer's calibrated input quantisation (`bert quantize --calibrate`, docs/int8.md):
/// u = clamp(round(x[c] · multipliers[c]) + zeroPoint, 0, 255), so that
/// x[c] / smoothing[c] ≈ (u − zeroPoint) · step. The multipliers hold 1 / (smoothing[c] · step);
/// the weights were multiplied by the smoothing (SmoothQuant) before they were quantised, which
/// moves the outlier channels' range into the weights and lets one range serve every channel.
public final class StaticInt8Input: @unchecked Sendable {
    /// The tensors beside `NAME.weight_packed` that hold it.
    public static let multipliersSuffix = ".input_multipliers", zeroPointSuffix = ".input_zero_point", stepSuffix = ".input_step"
    let k: Int
    /// [k] (mapped from the weights file).
    let multipliers: UnsafePointer<Float>
    let zeroPoint: Int32
    let step: Float
    /// zeroPoint · Σᵢ q[c, i] per (padded) output channel: what the kernel's unsigned inputs add.
    let corrections: UnsafeMutablePointer<Int32>

    /// The quantised values' bounds before the zero point is added: −zeroPoint and 255 − zeroPoint.
    private let lowest: Float, highest: Float

    public init(k: Int, multipliers: UnsafePointer<Float>, zeroPoint: Int32, step: Float, weights: PackedInt8Matrix) {
        precondition((0...255).contains(zeroPoint), "a zero point is a byte")
        (self.k, self.multipliers, self.zeroPoint, self.step) = (k, multipliers, zeroPoint, step)
        (lowest, highest) = (Float(-zeroPoint), Float(255 - zeroPoint))
        let shifted = weights.shiftCorrections  // 128 · Σ q
        corrections = .allocate(capacity: shifted.count)
        for (c, correction) in shifted.enumerated() { corrections[c] = correction / 128 &* zeroPoint }
    }

    deinit { corrections.deallocate() }

    /// One row: k values into `stride` bytes (the padding holds the zero point). On 16-lane
    /// vectors (left to LLVM, 8-lane ones, each clamp a compare and a blend), then one by one.
    @inline(__always)
    func quantize(_ x: UnsafePointer<Float>, into output: UnsafeMutablePointer<UInt8>, stride: Int) {
        let (multipliers, zeroPoint, lowest, highest) = (multipliers, zeroPoint, lowest, highest)
        let (low, high, zero) = (SIMD16<Float>(repeating: lowest), SIMD16<Float>(repeating: highest), SIMD16<Int32>(repeating: zeroPoint))
        var i = 0
        while i &+ 16 <= k {
            let scaled = UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self)
                * UnsafeRawPointer(multipliers + i).loadUnaligned(as: SIMD16<Float>.self)
            let v = lanewiseMin(lanewiseMax(scaled, low), high)
            let q = SymmetricInt8.rounded(v)
            UnsafeMutableRawPointer(output + i).storeBytes(of: truncatedToBytes(q &+ zero), as: SIMD16<UInt8>.self)
            i &+= 16
        }
        for i in i..<k {
            // Clamped to the bytes' range before rounding (the rounding trick needs |v| < 2^22),
            // so the integer needs no clamp after it. (A NaN would give some byte, not NaN; the
            // encoder's activations are finite, its weights checked so at load.)
            let v = min(max(x[i] * multipliers[i], lowest), highest)
            output[i] = UInt8(truncatingIfNeeded: SymmetricInt8.quantize(v, reciprocal: 1) &+ zeroPoint)
        }
        for i in k..<stride { output[i] = UInt8(truncatingIfNeeded: zeroPoint) }
    }
}
