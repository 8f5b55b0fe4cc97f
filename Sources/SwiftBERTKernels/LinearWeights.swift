import COpenBLAS

/// A weight matrix W [n × k] (PyTorch's [out, in]) in the layout one kernel reads: what a
/// Linear layer multiplies by. A new precision or instruction set is a new conforming type,
/// not a new case in the model's code.
public protocol LinearWeights: Sendable {
    /// Output channels.
    var n: Int { get }
    /// Input features.
    var k: Int { get }
    /// The form of the activations the kernel reads; the caller prepares them once per call,
    /// for every block of columns.
    var activations: LinearActivations { get }
    /// Blocks of columns given to threads start on multiples of this (a kernel's panel is
    /// never split between two threads).
    var columnAlignment: Int { get }
    /// Row c as k floats (an embedding lookup).
    func row(_ c: Int, into out: UnsafeMutablePointer<Float>)
    /// y[rows, columns] = x[rows] · Wᵀ[:, columns] + bias[columns], x [m × k], y [m × n]
    /// row-major. `finished` gets each block of y (its rows and columns) once it is complete.
    /// Disjoint blocks may run on different threads with the same input.
    func multiply(_ x: LinearInput, bias: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>,
                  rows: Range<Int>, columns: Range<Int>, finished: FinishedBlock?)
}

extension LinearWeights {
    /// The micro-kernels' packed matrices: a panel of `panelWidth` channels.
    public var columnAlignment: Int { panelWidth }
}

/// The activations a Linear layer's kernel reads.
public enum LinearActivations: Sendable {
    /// The float rows as they are.
    case float
    /// INT8 rows quantised once per call (`Int8Activations`); without them, INT8 weights run
    /// weight-only on the float rows.
    case int8
    /// BF16 rows rounded once per call (`BF16Activations`).
    case bf16
}

/// One Linear call's activations, in each form a kernel may read.
public struct LinearInput {
    public let floats: UnsafePointer<Float>
    public let int8: Int8Activations?
    public let bf16: BF16Activations?

    public init(floats: UnsafePointer<Float>, int8: Int8Activations? = nil, bf16: BF16Activations? = nil) {
        (self.floats, self.int8, self.bf16) = (floats, int8, bf16)
    }
}

/// float32 weights as the file maps them, multiplied by OpenBLAS's sgemm: portable builds'
/// Linear layers, and the embedding tables of every build.
public struct MappedFloatMatrix: LinearWeights, @unchecked Sendable {
    public let n: Int
    public let k: Int
    public let pointer: UnsafePointer<Float>
    public var activations: LinearActivations { .float }
    /// Blocks of whole 16-float vectors (sgemm has no panels).
    public var columnAlignment: Int { 16 }

    public init(_ pointer: UnsafePointer<Float>, n: Int, k: Int) {
        (self.pointer, self.n, self.k) = (pointer, n, k)
    }

    public func row(_ c: Int, into out: UnsafeMutablePointer<Float>) {
        out.update(from: pointer + c * k, count: k)
    }

    public func multiply(_ x: LinearInput, bias: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>,
                         rows: Range<Int>, columns: Range<Int>, finished: FinishedBlock?) {
        // sgemm takes the block's rows as a matrix of their own.
        let (m, x, yRows) = (rows.count, x.floats + rows.lowerBound * k, y + rows.lowerBound * n)
        matmulTransposedB(x, lda: k, pointer + columns.lowerBound * k, ldb: k, yRows + columns.lowerBound, ldc: n,
                          m: m, n: columns.count, k: k)
        for r in 0..<m {
            let row = yRows + r * n + columns.lowerBound
            let b = bias + columns.lowerBound
            for c in 0..<columns.count { row[c] += b[c] }
        }
        finished?(rows, columns)
    }

    /// These weights as this build's FP32 kernel reads them: repacked once for the micro-kernel
    /// in native builds; as mapped in portable ones (no FMA known at compile time), where
    /// OpenBLAS picks its kernels for the CPU at run time. `repacked` runs when a copy was made.
    public func forFP32Kernel(repacked: () -> Void = {}) -> any LinearWeights {
        #if SWIFTBERT_NATIVE_ISA
        defer { repacked() }
        return PackedFloatMatrix(pointer, n: n, k: k)
        #else
        return self
        #endif
    }
}

extension PackedFloatMatrix: LinearWeights {
    public var activations: LinearActivations { .float }

    public func multiply(_ x: LinearInput, bias: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>,
                         rows: Range<Int>, columns: Range<Int>, finished: FinishedBlock?) {
        multiply(x.floats, m: rows.upperBound, bias: bias, into: y, rows: rows, columns: columns, finished: finished)
    }
}

extension PackedInt8Matrix: LinearWeights {
    public var activations: LinearActivations { .int8 }

    public func multiply(_ x: LinearInput, bias: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>,
                         rows: Range<Int>, columns: Range<Int>, finished: FinishedBlock?) {
        if let activations = x.int8 {
            multiply(activations, bias: bias, into: y, rows: rows, columns: columns, finished: finished)
        } else {
            multiply(x.floats, m: rows.upperBound, bias: bias, into: y, rows: rows, columns: columns, finished: finished)
        }
    }
}

extension PackedBF16Matrix: LinearWeights {
    public var activations: LinearActivations { .bf16 }

    public func multiply(_ x: LinearInput, bias: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>,
                         rows: Range<Int>, columns: Range<Int>, finished: FinishedBlock?) {
        guard let activations = x.bf16 else { preconditionFailure("BF16 weights need BF16 activations") }
        multiply(activations, bias: bias, into: y, rows: rows, columns: columns, finished: finished)
    }
}
