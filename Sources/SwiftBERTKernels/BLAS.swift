import COpenBLAS

// OpenBLAS sgemm: the FP32 Linear layers of portable builds and the masked-LM decoder (one
// thread per call: the engine splits work across its own threads). Attention runs in Swift
// (Kernels/Attention/).

/// C[m×n] = alpha · A[m×k] · B[n×k]ᵀ.
@inline(__always)
func matmulTransposedB(_ a: UnsafePointer<Float>, lda: Int, _ b: UnsafePointer<Float>, ldb: Int,
                       _ c: UnsafeMutablePointer<Float>, ldc: Int, m: Int, n: Int, k: Int, alpha: Float = 1) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(m), Int32(n), Int32(k),
                alpha, a, Int32(lda), b, Int32(ldb), 0, c, Int32(ldc))
}

/// Keeps OpenBLAS on the calling thread: the engine splits work across its own threads, and
/// OpenBLAS's threading would fight it.
public func useSingleThreadedBLAS() { openblas_set_num_threads(1) }

/// C[m×n] = alpha · op(A) · op(B) in float64, row-major (op transposes when asked): the
/// classifier trainer's objective, which works in double as scikit-learn's does.
public func matmulDouble(_ a: UnsafePointer<Double>, transposeA: Bool = false, lda: Int,
                  _ b: UnsafePointer<Double>, transposeB: Bool = false, ldb: Int,
                  _ c: UnsafeMutablePointer<Double>, ldc: Int, m: Int, n: Int, k: Int, alpha: Double = 1) {
    cblas_dgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans, transposeB ? CblasTrans : CblasNoTrans,
                Int32(m), Int32(n), Int32(k), alpha, a, Int32(lda), b, Int32(ldb), 0, c, Int32(ldc))
}
