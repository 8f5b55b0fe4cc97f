import Glibc  // here alone: Elementwise.swift's `exp` must stay the kernels' own

/// PyTorch's gelu(approximate="tanh"): x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³))).
@inline(__always)
public func tanhGELU(_ x: Float) -> Float {
    let inner: Float = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1 + Glibc.tanh(inner))
}
