import Foundation
import SwiftBERTKernels

/// The gated feed-forward network: down(act(gate(x)) ⊙ up(x)), with gate and up in one Linear
/// (`gate_up`: the activated rows first). SwiGLU (NomicBERT and Qwen3: act = SiLU) or GeGLU (GTE
/// and ModernBERT: exact GELU; Gemma: tanh GELU), by the config's hidden_act.
struct GatedFeedForward {
    let gateUp: Linear
    let down: Linear
    let activation: GatedActivation
    let width: Int

    init(_ scope: WeightScope, _ config: EncoderConfig) throws {
        let (h, f) = (config.hiddenSize, config.intermediateSize)
        gateUp = try scope[TensorNames.gateUp].linear(k: h, n: 2 * f)
        down = try scope[TensorNames.down].linear(k: f, n: h)
        activation = switch config.hiddenAct {
        case "silu": .silu
        case "gelu_pytorch_tanh": .tanhGELU
        default: .gelu  // EncoderConfig.validate admits no other
        }
        width = f
    }

    /// out[T × H] = FFN(x).
    /// Over the first `rows` rows (nil: every token's).
    func callAsFunction(_ x: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, _ context: ForwardContext, rows: Int? = nil) {
        let m = rows ?? context.sequences.tokenCount, f = width
        let both = context.wide, gated = context.gated!
        context.measure(.feedForwardIn) {
            gateUp(x, m: m, into: both, context)
            let activation = activation
            parallelRows(m, columns: 2 * f, threads: context.threads) { rows in
                gatedActivation(both, rows: rows, width: f, activation: activation, into: gated)
            }
        }
        context.measure(.feedForwardOut) { down(gated, m: m, into: out, context) }
    }
}

/// x += y over [rows × cols], rows split across threads: the residual sum of pre-norm layers.
func addResidual(_ x: UnsafeMutablePointer<Float>, _ y: UnsafePointer<Float>, rows: Int, cols: Int, threads: Int) {
    parallelRows(rows, columns: cols, threads: threads) { range in
        let (a, b) = (x + range.lowerBound * cols, y + range.lowerBound * cols)
        for i in 0..<range.count * cols { a[i] += b[i] }
    }
}
