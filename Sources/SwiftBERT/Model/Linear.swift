import SwiftBERTKernels

// The two parameterised building blocks every module is made of. Each loads itself by its
// checkpoint name; weights are pointers into the memory-mapped file, except FP32 Linear
// weights, which are repacked once for the micro-kernel.

/// Loads a weight matrix W [n × k] in the precision its file holds: `NAME.weight` (float32,
/// from the converter) as mapped, or `NAME.weight_packed` + `NAME.weight_scale` (INT8, from the
/// quantizer) wrapped in place.
func loadWeightMatrix(_ file: SafeTensorsFile, _ name: String, n: Int, k: Int) throws -> any LinearWeights {
    guard file.tensors[name + ".weight_packed"] != nil else {
        return MappedFloatMatrix(try file.floats(name + ".weight", shape: [n, k]).baseAddress!, n: n, k: k)
    }
    let packed = try file.bytes(name + ".weight_packed", dtype: .i8)
    let scales = try file.floats(name + ".weight_scale", shape: [n])
    do throws(InvalidPackedMatrix) {
        return try PackedInt8Matrix(n: n, k: k, packed: packed, scales: scales)
    } catch {
        throw SwiftBERTError.invalidWeights(path: "\(file.path): \(name)", reason: error.reason)
    }
}

/// FP32 weights as the Linear kernels read them: rounded to BF16 when the model runs in
/// `.bf16`, else in the build's FP32 layout (`MappedFloatMatrix.forFP32Kernel`); other
/// precisions as they are. `repacked` runs when a copy was made.
func forLinearKernels(_ weights: any LinearWeights, precision: Precision, repacked: () -> Void = {}) -> any LinearWeights {
    guard let mapped = weights as? MappedFloatMatrix else { return weights }
    if precision == .bf16 {
        defer { repacked() }
        return PackedBF16Matrix(mapped.pointer, n: mapped.n, k: mapped.k)
    }
    return mapped.forFP32Kernel(repacked: repacked)
}

/// y = x·Wᵀ + b with W stored [n, k] (PyTorch's [out, in]).
/// Read-only after load (its weights are memory-mapped or repacked once), so any thread may run it.
struct Linear: @unchecked Sendable {
    /// The checkpoint name ("encoder.layer.0.intermediate.dense"): what calibration records under.
    let name: String
    let weight: any LinearWeights
    let bias: UnsafePointer<Float>
    /// Input features.
    let k: Int
    /// Output features.
    let n: Int
    /// The calibrated input quantisation (`int8-static` files); nil: per-row scales at run time.
    let staticInput: StaticInt8Input?

    /// Loads `name.weight` (or its INT8 form, whatever `precision` says) and `name.bias`; `.bf16`
    /// rounds FP32 weights to BF16, any other precision keeps the file's. An INT8 matrix with
    /// `name.input_multipliers`, `.input_zero_point` and `.input_step` (`Quantizer.calibrate`)
    /// quantises its input with them under `.int8Static`.
    init(_ file: SafeTensorsFile, _ name: String, k: Int, n: Int, precision: Precision = .fp32) throws {
        weight = forLinearKernels(try loadWeightMatrix(file, name, n: n, k: k), precision: precision) {
            file.releasePages(of: name + ".weight")  // the mapped original is not read again
        }
        bias = try file.floats(name + ".bias", shape: [n]).baseAddress!
        (self.name, self.k, self.n) = (name, k, n)
        if precision == .int8Static, let packed = weight as? PackedInt8Matrix, file.tensors[name + StaticInt8Input.multipliersSuffix] != nil {
            let multipliers = try file.floats(name + StaticInt8Input.multipliersSuffix, shape: [k])
            let zeroPoint = try file.floats(name + StaticInt8Input.zeroPointSuffix, shape: [1])[0]
            let step = try file.floats(name + StaticInt8Input.stepSuffix, shape: [1])[0]
            guard (0...255).contains(zeroPoint), zeroPoint.rounded() == zeroPoint, step > 0, step.isFinite else {
                throw SwiftBERTError.invalidWeights(path: file.path, reason: "\(name): input zero point \(zeroPoint) or step \(step) is out of range; calibrate again (bert quantize --calibrate)")
            }
            staticInput = StaticInt8Input(k: k, multipliers: multipliers.baseAddress!, zeroPoint: Int32(zeroPoint), step: step, weights: packed)
        } else {
            staticInput = nil
        }
    }

    init(weight: any LinearWeights, bias: UnsafePointer<Float>, k: Int, n: Int, name: String = "") {
        (self.name, self.weight, self.bias, self.k, self.n, self.staticInput) = (name, weight, bias, k, n, nil)
    }

    /// y[m × n] = x[m × k]·Wᵀ + b: the engine's one GEMM path. INT8 activations are quantised
    /// (BF16 ones rounded) once, then the output is split across the context's threads: by
    /// columns on panel bounds, or, for a long batch (`rowSplitMinimum` rows a thread), by rows.
    /// `epilogue` runs on each block of y (its rows and columns) as soon as the block is
    /// complete, while it is in cache: a row tile across a block of panels, or a panel down
    /// every row (`panelGEMM`). As a pass over each thread's part, GELU re-read MiniLM's FF-in
    /// output from memory at b32x128.
    func callAsFunction(_ x: UnsafePointer<Float>, m: Int, into y: UnsafeMutablePointer<Float>, _ context: ForwardContext,
                        then epilogue: ((_ y: UnsafeMutablePointer<Float>, _ rows: Range<Int>, _ columns: Range<Int>) -> Void)? = nil) {
        context.activationRanges?.record(name, x, m: m, k: k)
        let activations = weight.activations == .int8 ? context.int8Activations : nil
        if let activations {
            if let staticInput {
                activations.quantize(x, m: m, k: k, with: staticInput, threads: context.threads)
            } else {
                activations.quantize(x, m: m, k: k, threads: context.threads)
            }
        }
        let bf16Activations = weight.activations == .bf16 ? context.bf16Activations : nil
        bf16Activations?.round(x, m: m, k: k, threads: context.threads)
        // Split by columns, each thread reads every row of the activations once per block of
        // weights it holds; for a long batch that traffic, not the weights, is what two threads
        // share, so they split the rows instead and each reads its own half.
        let parts: [(rows: Range<Int>, columns: Range<Int>)]
        if context.threads > 1 && m >= Self.rowSplitMinimum * context.threads {
            parts = splitRange(m, parts: context.threads, align: 8).map { ($0, 0..<n) }
        } else {
            // With threads, 4 parts each, claimed in turn: a thread that starts late holds up one part.
            let count = context.threads > 1 ? 4 * context.threads : 1
            parts = splitRange(n, parts: count, align: weight.columnAlignment).map { (0..<m, $0) }
        }
        let input = LinearInput(floats: x, int8: activations, bf16: bf16Activations)
        parallelFor(parts.count, threads: context.threads, work: m * n * k) { part, _ in
            let (rows, columns) = parts[part]
            weight.multiply(input, bias: bias, into: y, rows: rows, columns: columns,
                            finished: epilogue.map { epilogue in { epilogue(y, $0, $1) } })
        }
    }

    /// Rows per thread from which a call splits its rows rather than its columns (b32x128 is
    /// 2,048 a thread at 2 threads; b1x512 256).
    static let rowSplitMinimum = 512
}

/// LayerNorm over the last dimension, with an optional residual added first.
struct LayerNorm {
    let gamma: UnsafePointer<Float>
    let beta: UnsafePointer<Float>
    let size: Int
    let eps: Float

    init(_ file: SafeTensorsFile, _ name: String, size: Int, eps: Float) throws {
        gamma = try file.floats(name + ".weight", shape: [size]).baseAddress!
        beta = try file.floats(name + ".bias", shape: [size]).baseAddress!
        self.size = size
        self.eps = eps
    }

    /// x[m × size] = LayerNorm(x + residual), rows split across `threads`. With `out`, the
    /// normalised rows go there and x keeps x + residual (a pre-norm layer's residual stream).
    func callAsFunction(_ x: UnsafeMutablePointer<Float>, residual: UnsafePointer<Float>?, into out: UnsafeMutablePointer<Float>? = nil,
                        m: Int, threads: Int = 1) {
        let (size, gamma, beta, eps) = (size, gamma, beta, eps)
        parallelRows(m, columns: size, threads: threads) { rows in
            let first = rows.lowerBound * size
            addLayerNorm(x + first, residual: residual.map { $0 + first }, into: out.map { $0 + first }, rows: rows.count,
                         cols: size, gamma: gamma, beta: beta, eps: eps)
        }
    }
}

/// A Linear layer y = x·Wᵀ + b built from float weights in memory, in one of the engine's
/// precisions, run by the engine's own kernels and threading: exactly what each projection
/// of the encoder runs. For benchmarks and for programs that build their own layers. Not
/// `Sendable`: it serves one caller at a time (it keeps its activation buffers between calls).
public final class LinearLayer {
    /// Output features.
    public let n: Int
    /// Input features.
    public let k: Int
    public let precision: Precision
    private let linear: Linear
    private let ownedBias: UnsafeMutablePointer<Float>
    private let ownedWeights: UnsafeMutablePointer<Float>?
    private var contexts: [Int: ForwardContext] = [:]

    /// W is [n × k] row-major (PyTorch's [out, in]); both arrays are copied or repacked.
    public init(weights: [Float], bias: [Float], n: Int, k: Int, precision: Precision) throws {
        guard n > 0, k > 0, weights.count == n * k, bias.count == n else {
            throw SwiftBERTError.invalidInput(reason: "a Linear layer [\(n) × \(k)] needs \(n * k) weights and \(n) biases, got \(weights.count) and \(bias.count)")
        }
        (self.n, self.k, self.precision) = (n, k, precision)
        ownedBias = .allocate(capacity: n)
        ownedBias.initialize(from: bias, count: n)
        let weight: any LinearWeights
        switch precision {
        case .fp32:
            let copy = UnsafeMutablePointer<Float>.allocate(capacity: n * k)
            copy.initialize(from: weights, count: n * k)
            weight = MappedFloatMatrix(copy, n: n, k: k).forFP32Kernel()
            ownedWeights = copy
        case .int8Static:
            throw SwiftBERTError.invalidInput(reason: "int8-static needs activation ranges calibrated on a model (bert quantize --calibrate); a LinearLayer takes fp32, bf16, int8, int8-attention or int8-weights")
        case .int8, .int8Attention, .int8Weights:
            weight = weights.withUnsafeBufferPointer { PackedInt8Matrix(weights: $0.baseAddress!, n: n, k: k) }
            ownedWeights = nil
        case .bf16:
            weight = weights.withUnsafeBufferPointer { PackedBF16Matrix($0.baseAddress!, n: n, k: k) }
            ownedWeights = nil
        }
        linear = Linear(weight: weight, bias: ownedBias, k: k, n: n)
    }

    deinit {
        ownedBias.deallocate()
        ownedWeights?.deallocate()
    }

    /// y[m × n] = x[m × k]·Wᵀ + b on `threads` threads.
    public func callAsFunction(_ x: UnsafePointer<Float>, m: Int, into y: UnsafeMutablePointer<Float>, threads: Int) {
        let threads = max(1, threads)
        let context = contexts[threads] ?? ForwardContext(sequences: PackedSequences(lengths: [m]), threads: threads,
                                                         quantizesActivations: precision.quantizesActivations)
        contexts[threads] = context
        linear(x, m: m, into: y, context)
    }
}
