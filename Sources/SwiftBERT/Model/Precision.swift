import Foundation
import SwiftBERTKernels

/// Numeric format of the encoder's Linear layers.
public enum Precision: String, CaseIterable, Sendable {
    /// float32 weights, repacked at load for the Swift FP32 micro-kernel: exact
    /// against PyTorch. Attention runs the fused Swift kernel; the masked-LM decoder OpenBLAS sgemm.
    case fp32
    /// int8 weights (per output channel) and activations (per token), integer GEMM in Swift.
    case int8
    /// `int8`, and attention's two products in integers too (vpdpbusd; SwiftBERTKernels/Attention/),
    /// its softmax in FP32: faster at long sequences, a little further from FP32 (docs/int8.md).
    case int8Attention = "int8-attention"
    /// int8 weights, float32 activations: the same file and speed as `int8`, closer to FP32
    /// (see docs/int8.md), so the one to pick for masked-LM suggestions.
    case int8Weights = "int8-weights"
    /// the float32 file's encoder Linear weights rounded to BF16 at load, activations rounded
    /// to BF16 once per Linear, FP32 accumulation; LayerNorm, softmax and heads in FP32
    /// (see docs/bf16.md).
    case bf16
    /// `int8-attention` with each Linear layer's input quantised by a range calibrated offline
    /// (`bert quantize --calibrate FILE`, SmoothQuant's per-channel smoothing folded into the
    /// weights, an asymmetric per-tensor scale and zero point), not by a per-row maximum at run
    /// time; its own file, model.int8-static.safetensors (docs/int8.md).
    case int8Static = "int8-static"

    /// The weights file of this precision inside a converted model folder.
    public var fileName: String {
        switch self {
        case .fp32, .bf16: WeightFiles.fp32
        case .int8, .int8Attention, .int8Weights: WeightFiles.int8
        case .int8Static: WeightFiles.int8Static
        }
    }
    /// Whether activations are quantised before each Linear layer.
    package var quantizesActivations: Bool { self == .int8 || self == .int8Attention || self == .int8Static }
    /// The arithmetic of attention's products.
    var attention: AttentionPrecision {
        switch self {
        case .int8Attention, .int8Static: .int8
        case .bf16: .bf16
        case .fp32, .int8, .int8Weights: .fp32
        }
    }
}
