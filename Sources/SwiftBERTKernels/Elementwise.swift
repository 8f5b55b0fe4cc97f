// The elementwise kernels of the forward pass. Each is a plain loop over raw pointers
// that LLVM vectorises for the host ISA; libm's scalar erf/exp would not vectorise and
// would cost milliseconds per pass. Index arithmetic wraps (&+, &*) and float-to-integer
// conversions go through bits: the library is built with -O (no -Ounchecked, which a
// versioned dependency cannot set), and an overflow check or a conversion trap in a loop
// keeps LLVM from vectorising it.

/// out = LayerNorm(x + residual) row by row, with the two-pass mean/variance PyTorch uses; with a
/// residual, x keeps the sum (the residual stream). `out` nil: in place, out = x. Out of place, a
/// pre-norm layer writes its normalised copy in the same pass instead of copying [T × H] on one
/// thread first. Three passes over a row on 16-lane vectors (x + residual with its sum; x − mean
/// into out with its squares; the scale), in the order of the five passes they replace (which LLVM
/// ran on 8-lane vectors), so the floats are the same. The loads and stores are explicit vectors,
/// so out = x takes no overlap check (which made a scalar loop take LLVM's scalar fallback).
public func addLayerNorm(_ x: UnsafeMutablePointer<Float>, residual: UnsafePointer<Float>?,
                         into out: UnsafeMutablePointer<Float>? = nil, rows: Int, cols: Int,
                         gamma: UnsafePointer<Float>, beta: UnsafePointer<Float>, eps: Float) {
    let invN = 1 / Float(cols), wide = cols & ~15
    @inline(__always) func vector(_ p: UnsafePointer<Float>, _ c: Int) -> SIMD16<Float> {
        UnsafeRawPointer(p + c).loadUnaligned(as: SIMD16<Float>.self)
    }
    @inline(__always) func store(_ v: SIMD16<Float>, _ p: UnsafeMutablePointer<Float>, _ c: Int) {
        UnsafeMutableRawPointer(p + c).storeBytes(of: v, as: SIMD16<Float>.self)
    }
    let out = out ?? x
    for r in 0..<rows {
        let row = x + r &* cols, normed = out + r &* cols
        var lanes = SIMD16<Float>()
        if let residual {
            let res = residual + r &* cols
            for c in stride(from: 0, to: wide, by: 16) {
                let v = vector(row, c) + vector(res, c)
                store(v, row, c)
                lanes += v
            }
            for c in wide..<cols { row[c] += res[c] }
        } else {
            for c in stride(from: 0, to: wide, by: 16) { lanes += vector(row, c) }
        }
        var total = lanes.sum()  // as `sum`, so the same floats as before (INT8 amplifies a last-bit change)
        for c in wide..<cols { total += row[c] }
        let mean = total * invN
        lanes = SIMD16()
        for c in stride(from: 0, to: wide, by: 16) {
            let v = vector(row, c) - mean
            store(v, normed, c)
            lanes += v * v
        }
        var squares = lanes.sum()
        for c in wide..<cols {
            normed[c] = row[c] - mean
            squares += normed[c] * normed[c]
        }
        let invStd = 1 / (squares * invN + eps).squareRoot()
        for c in stride(from: 0, to: wide, by: 16) { store(vector(normed, c) * invStd * vector(gamma, c) + vector(beta, c), normed, c) }
        for c in wide..<cols { normed[c] = normed[c] * invStd * gamma[c] + beta[c] }
    }
}

// Float reductions: LLVM may not reorder a scalar `sum += x` loop (no fast-math in Swift), so a
// plain loop runs one add at a time. Sixteen lanes of partial sums make it vector code.

@inline(__always)
func sum(_ x: UnsafePointer<Float>, count: Int) -> Float {
    var acc = SIMD16<Float>()
    var i = 0
    while i &+ 16 <= count { acc += UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self); i &+= 16 }
    var total = acc.sum()
    while i < count { total += x[i]; i &+= 1 }
    return total
}

@inline(__always)
func sumOfSquares(_ x: UnsafePointer<Float>, count: Int) -> Float {
    var acc = SIMD16<Float>()
    var i = 0
    while i &+ 16 <= count { let v = UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self); acc += v * v; i &+= 16 }
    var total = acc.sum()
    while i < count { total += x[i] * x[i]; i &+= 1 }
    return total
}

// The standard library's pointwiseMax honours NaN ordering lane by lane and compiles to scalar
// code (it made softmax 4x slower); a compare and blend is one instruction.
@inline(__always) func lanewiseMax(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float> {
    a.replacing(with: b, where: a .< b)
}

@inline(__always) func lanewiseMin(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float> {
    a.replacing(with: b, where: b .< a)
}

@inline(__always)
func maximum(_ x: UnsafePointer<Float>, count: Int) -> Float {
    var acc = SIMD16<Float>(repeating: -.infinity)
    var i = 0
    while i &+ 16 <= count { acc = lanewiseMax(acc, UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self)); i &+= 16 }
    var best = acc.max()
    while i < count { best = max(best, x[i]); i &+= 1 }
    return best
}

/// Exact GELU, x·Φ(x) = x/2·(1 + erf(x/√2)), as BERT's "gelu" (not the tanh approximation).
/// 16 lanes written out: left to LLVM, the loop ran on 8-lane vectors, and the division's
/// throughput then bounded it (MiniLM's feed-forward in + GELU stage, INT8, 1x128).
public func gelu(_ x: UnsafeMutablePointer<Float>, count: Int) {
    var i = 0
    while i &+ 16 <= count {
        let lanes = UnsafeMutableRawPointer(x + i)
        let v = lanes.loadUnaligned(as: SIMD16<Float>.self)
        lanes.storeBytes(of: 0.5 * v * (1 + erf(v * 0.70710678118654752)), as: SIMD16<Float>.self)
        i &+= 16
    }
    while i < count {
        let v = x[i]
        x[i] = 0.5 * v * (1 + erf(v * 0.70710678118654752))
        i &+= 1
    }
}

/// erf for float32 to within a few ulp: a rational minimax fit on [-4, 4] (outside, erf is ±1 in
/// float32). Branch-free, so loops over it vectorise; the Horner steps are fused multiply-adds in
/// the native build (Swift does not contract `p * x2 + c`: two instructions and two roundings
/// each): MiniLM's "feed-forward in + GELU" stage at 1x512 went from 15.5 to 15.0 ms.
@inline(__always)
func erf(_ a: Float) -> Float {
    let x = min(max(a, -4), 4)
    let x2 = x * x
    var p: Float = -2.72614225801306e-10
    p = Float(2.77068142495902e-08).plusProduct(p, x2)
    p = Float(-2.10102402082508e-06).plusProduct(p, x2)
    p = Float(-5.69250639462346e-05).plusProduct(p, x2)
    p = Float(-7.34990630326855e-04).plusProduct(p, x2)
    p = Float(-2.95459980854025e-03).plusProduct(p, x2)
    p = Float(-1.60960333262415e-02).plusProduct(p, x2)
    var q: Float = -1.45660718464996e-05
    q = Float(-2.13374055278905e-04).plusProduct(q, x2)
    q = Float(-1.68282697438203e-03).plusProduct(q, x2)
    q = Float(-7.37332916720468e-03).plusProduct(q, x2)
    q = Float(-1.42647390514189e-02).plusProduct(q, x2)
    return x * p / q
}

/// `erf` on 16 lanes, the same operations in the same order.
@inline(__always)
func erf(_ a: SIMD16<Float>) -> SIMD16<Float> {
    let x = lanewiseMin(lanewiseMax(a, SIMD16(repeating: -4)), SIMD16(repeating: 4))
    let x2 = x * x
    @inline(__always) func step(_ c: Float, _ p: SIMD16<Float>) -> SIMD16<Float> {
        var next = SIMD16<Float>(repeating: c)
        next.accumulateProduct(p, x2)
        return next
    }
    var p = SIMD16<Float>(repeating: -2.72614225801306e-10)
    p = step(2.77068142495902e-08, p)
    p = step(-2.10102402082508e-06, p)
    p = step(-5.69250639462346e-05, p)
    p = step(-7.34990630326855e-04, p)
    p = step(-2.95459980854025e-03, p)
    p = step(-1.60960333262415e-02, p)
    var q = SIMD16<Float>(repeating: -1.45660718464996e-05)
    q = step(-2.13374055278905e-04, q)
    q = step(-1.68282697438203e-03, q)
    q = step(-7.37332916720468e-03, q)
    q = step(-1.42647390514189e-02, q)
    return x * p / q
}

/// e^x for float32 to about 1 ulp (Cephes' expf): 2^n · poly(r) with r = x − n·ln2.
@inline(__always)
func exp(_ a: Float) -> Float {
    let x = min(max(a, -87.3), 88.7)
    let n = (x * 1.44269504088896341).rounded(.toNearestOrEven)
    let r = x - n * 0.693359375 + n * 2.12194440e-4
    var p: Float = 1.9875691500e-4
    p = p * r + 1.3981999507e-3
    p = p * r + 8.3334519073e-3
    p = p * r + 4.1665795894e-2
    p = p * r + 1.6666665459e-1
    p = p * r + 5.0000001201e-1
    let y = p * r * r + r + 1
    // 2^n from n + 127 as the exponent field. n + 127 is an integer in 1...255, and adding
    // 1.5 · 2^23 puts it in the low mantissa bits (no Int32(Float) conversion, which traps).
    let biased = (n + 127 + 12_582_912).bitPattern &- 0x4B40_0000
    return y * Float(bitPattern: biased << 23)
}

/// Row-wise softmax in place.
public func softmaxRows(_ x: UnsafeMutablePointer<Float>, rows: Int, cols: Int, stride: Int) {
    for r in 0..<rows {
        let row = x + r &* stride
        let maxValue = maximum(row, count: cols)
        for c in 0..<cols { row[c] = exp(row[c] - maxValue) }   // no reduction here: vectorises
        let inv = 1 / sum(row, count: cols)
        for c in 0..<cols { row[c] *= inv }
    }
}

/// ReLU in place (MobileBERT's hidden_act).
public func relu(_ x: UnsafeMutablePointer<Float>, count: Int) {
    for i in 0..<count { x[i] = x[i] > 0 ? x[i] : 0 }
}

/// PyTorch's gelu(approximate="tanh"): x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³))), computed as
/// x · σ(2u) = x / (1 + e^(−2u)) with u the tanh's argument, the same function (1 + tanh(u) =
/// 2σ(2u)) through the kernels' own `exp`, so the loop vectorises: libm's scalar tanhf was a call
/// per element, and Gemma's feed-forward stage ran at 120 GFLOP/s against 200 for the matrix
/// product after it. σ's form keeps its relative accuracy where 1 + tanh(u) would cancel.
@inline(__always)
public func tanhGELU(_ x: Float) -> Float {
    let u: Float = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return x / (1 + exp(-2 * u))
}

/// The activation of a gated feed-forward network's gate (its hidden_act).
public enum GatedActivation: Sendable {
    /// SiLU, x · σ(x): SwiGLU (NomicBERT, Qwen3).
    case silu
    /// The exact (erf) GELU: GeGLU (GTE, ModernBERT).
    case gelu
    /// PyTorch's gelu(approximate="tanh"): Gemma's "gelu_pytorch_tanh".
    case tanhGELU
}

/// A gated feed-forward's activation (GLU): each row of `both` holds the gate's `width` columns,
/// then the up projection's; y = act(gate) · up per column, into the rows of `gated` [· × width].
public func gatedActivation(_ both: UnsafeMutablePointer<Float>, rows: Range<Int>, width f: Int, activation: GatedActivation,
                            into gated: UnsafeMutablePointer<Float>) {
    for r in rows {
        let (g, u, y) = (both + r * 2 * f, both + r * 2 * f + f, gated + r * f)
        switch activation {
        case .silu:
            for c in 0..<f { let v = g[c]; y[c] = v / (1 + exp(-v)) * u[c] }
        case .gelu:
            gelu(g, count: f)  // in place on the gate
            for c in 0..<f { y[c] = g[c] * u[c] }
        case .tanhGELU:
            for c in 0..<f { y[c] = tanhGELU(g[c]) * u[c] }
        }
    }
}
